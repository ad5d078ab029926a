package main

// Tests of the operator CLI against the real binary: every `oja admin`
// subcommand against a running server (spec §11), a backup served as a
// data dir of its own, and the offline `oja wal` tools' arguments and
// refusals (spec §12).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// adminCLI runs `oja admin --addr … --token … args…` against srv.
func adminCLI(t *testing.T, srv *ojaServer, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	full := append([]string{"admin", "--addr", srv.adminURL(), "--token", crashAdminToken}, args...)
	return runOja(t, srv.bin, childEnv(), full...)
}

// adminOK runs an admin command that must succeed and decodes its JSON.
func adminOK(t *testing.T, srv *ojaServer, into any, args ...string) {
	t.Helper()
	out, errOut, code := adminCLI(t, srv, args...)
	if code != 0 {
		t.Fatalf("oja admin %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	if into != nil {
		decodeJSON(t, []byte(out), into)
	}
}

// adminFails runs an admin command that must fail with the given error code
// (printed on stderr) and a non-zero exit.
func adminFails(t *testing.T, srv *ojaServer, wantCode string, args ...string) {
	t.Helper()
	out, errOut, code := adminCLI(t, srv, args...)
	if code == 0 {
		t.Fatalf("oja admin %s: exit 0, want a failure\n%s", strings.Join(args, " "), out)
	}
	if !strings.Contains(errOut, wantCode) {
		t.Errorf("oja admin %s: stderr lacks %q:\n%s", strings.Join(args, " "), wantCode, errOut)
	}
	if out != "" {
		t.Errorf("oja admin %s: a failure printed on stdout: %s", strings.Join(args, " "), out)
	}
}

func wantDecimal(t *testing.T, what string, m map[string]any, key, want string) {
	t.Helper()
	got, err := dec(m, key)
	if err != nil || !got.Equal(decimal.RequireFromString(want)) {
		t.Errorf("%s: %s = %v (%v), want %s", what, key, m[key], err, want)
	}
}

func TestAdminCLI(t *testing.T) {
	t.Parallel()
	srv := newOjaServer(t)
	srv.start()
	client := newHTTPClient()
	defer client.CloseIdleConnections()

	// Clients and keys.
	var cl map[string]any
	adminOK(t, srv, &cl, "clients", "create", "Acme", "Remit", "Ltd")
	clientID := str(cl, "clientId")
	if clientID == "" || str(cl, "name") != "Acme Remit Ltd" {
		t.Fatalf("clients create: %v", cl)
	}
	var live, sandbox map[string]any
	adminOK(t, srv, &live, "keys", "create", clientID, "--mode", "live")
	adminOK(t, srv, &sandbox, "keys", "create", clientID, "--mode", "sandbox")
	if !strings.HasPrefix(str(live, "key"), "oja_live_") || str(live, "mode") != "live" || str(live, "clientId") != clientID || str(live, "keyId") == "" {
		t.Fatalf("keys create --mode live: %v", live)
	}
	if !strings.HasPrefix(str(sandbox, "key"), "oja_sandbox_") || str(sandbox, "mode") != "sandbox" {
		t.Fatalf("keys create --mode sandbox: %v", sandbox)
	}
	liveKey := str(live, "key")
	var clientPage map[string]any
	adminOK(t, srv, &clientPage, "clients", "list", "--limit", "1")
	if data, _ := clientPage["data"].([]any); len(data) != 1 || str(data[0].(map[string]any), "clientId") != clientID {
		t.Fatalf("clients list --limit 1: %v", clientPage)
	}
	var detail map[string]any
	adminOK(t, srv, &detail, "clients", "get", clientID)
	if keys, _ := detail["keys"].([]any); len(keys) != 2 || strings.Contains(fmt.Sprint(detail), liveKey) {
		t.Fatalf("clients get: %v", detail)
	}
	// Named operators: a viewer reads with its own token but cannot act;
	// the audit trail names who made each write.
	var viewer map[string]any
	adminOK(t, srv, &viewer, "operators", "create", "Ada Eze", "--role", "viewer")
	if !strings.HasPrefix(str(viewer, "token"), "oja_op_") || str(viewer, "role") != "viewer" {
		t.Fatalf("operators create: %v", viewer)
	}
	asViewer := func(args ...string) (string, string, int) {
		return runOja(t, srv.bin, childEnv(), append([]string{"admin", "--addr", srv.adminURL(), "--token", str(viewer, "token")}, args...)...)
	}
	if out, errOut, code := asViewer("clients", "get", clientID); code != 0 || !strings.Contains(out, clientID) {
		t.Fatalf("a viewer's read: exit %d %s %s", code, out, errOut)
	}
	if _, errOut, code := asViewer("clients", "create", "Not Allowed"); code == 0 || !strings.Contains(errOut, "FORBIDDEN") {
		t.Fatalf("a viewer's write: exit %d %s", code, errOut)
	}
	var trail map[string]any
	adminOK(t, srv, &trail, "audit", "--limit", "2")
	if data, _ := trail["data"].([]any); len(data) != 2 || str(data[0].(map[string]any), "action") != "POST /admin/v1/operators" ||
		str(data[0].(map[string]any), "operator") != "root" || trail["hasMore"] != true {
		t.Fatalf("audit --limit 2: %v", trail)
	}
	adminOK(t, srv, nil, "operators", "revoke", str(viewer, "operatorId"))
	if _, errOut, code := asViewer("pools", "list"); code == 0 || !strings.Contains(errOut, "UNAUTHORIZED") {
		t.Fatalf("a revoked operator's read: exit %d %s", code, errOut)
	}
	adminFails(t, srv, "CONFLICT", "operators", "create", "root", "--role", "viewer")
	adminFails(t, srv, "VALIDATION_ERROR", "operators", "create", "r\u043e\u043et", "--role", "viewer")

	adminFails(t, srv, "QUOTE_NOT_FOUND", "quotes", "get", "6f1c1f43-0000-4000-8000-000000000000")
	adminFails(t, srv, "QUOTE_NOT_FOUND", "quotes", "cancel", "6f1c1f43-0000-4000-8000-000000000000")
	adminFails(t, srv, "VALIDATION_ERROR", "keys", "create", clientID, "--mode", "staging")
	adminFails(t, srv, "NOT_FOUND", "keys", "create", "6f1c1f43-0000-4000-8000-000000000000", "--mode", "live")

	// Pools: create, deposit, withdraw, rate, status, list.
	var pool map[string]any
	adminOK(t, srv, &pool, "pools", "create", "--mode", "live", "--name", "CLI Desk", "--source", "NGN",
		"--destination", "USDT", "--rate", "0.000625", "--owner", clientID)
	poolID := str(pool, "poolId")
	if poolID == "" || str(pool, "mode") != "live" || str(pool, "name") != "CLI Desk" || str(pool, "source") != "NGN" ||
		str(pool, "destination") != "USDT" || str(pool, "status") != "active" || str(pool, "ownerClientId") != clientID ||
		str(pool, "poolAccountId") == "" || str(pool, "proceedsAccountId") == "" {
		t.Fatalf("pools create: %v", pool)
	}
	wantDecimal(t, "pools create", pool, "rate", "0.000625")
	wantDecimal(t, "pools create", pool, "balance", "0")
	adminFails(t, srv, "INVALID_CURRENCY_PAIR", "pools", "create", "--mode", "live", "--name", "Bad", "--source", "GHS",
		"--destination", "NGN", "--rate", "0.5")

	adminOK(t, srv, &pool, "pools", "deposit", poolID, "1000.123456")
	wantDecimal(t, "pools deposit", pool, "balance", "1000.123456")
	wantDecimal(t, "pools deposit", pool, "available", "1000.123456")
	adminFails(t, srv, "VALIDATION_ERROR", "pools", "deposit", poolID, "1.1234567") // USDT has 6 places
	adminOK(t, srv, &pool, "pools", "withdraw", poolID, "0.123456")
	wantDecimal(t, "pools withdraw", pool, "balance", "1000")
	adminFails(t, srv, "INSUFFICIENT_FUNDS", "pools", "withdraw", poolID, "1000.000001")
	adminOK(t, srv, &pool, "pools", "rate", poolID, "0.00063")
	wantDecimal(t, "pools rate", pool, "rate", "0.00063")
	adminOK(t, srv, &pool, "pools", "status", poolID, "suspended")
	if str(pool, "status") != "suspended" {
		t.Errorf("pools status suspended: %v", pool)
	}
	adminFails(t, srv, "VALIDATION_ERROR", "pools", "status", poolID, "paused")
	adminOK(t, srv, &pool, "pools", "status", poolID, "active")
	if str(pool, "status") != "active" {
		t.Errorf("pools status active: %v", pool)
	}
	var listed []map[string]any
	adminOK(t, srv, &listed, "pools", "list", "--mode", "live")
	if len(listed) != 1 || str(listed[0], "poolId") != poolID || str(listed[0], "status") != "active" {
		t.Fatalf("pools list --mode live: %v", listed)
	}
	wantDecimal(t, "pools list", listed[0], "balance", "1000")
	wantDecimal(t, "pools list", listed[0], "rate", "0.00063")
	adminOK(t, srv, &listed, "pools", "list", "--mode", "sandbox")
	if len(listed) != 0 {
		t.Errorf("pools list --mode sandbox: %v, want none", listed)
	}
	adminOK(t, srv, &listed, "pools", "list")
	if len(listed) != 0 {
		t.Errorf("pools list (sandbox, the default mode): %v, want none", listed)
	}
	adminOK(t, srv, &listed, "pools", "list", "--mode", "all")
	if len(listed) != 1 {
		t.Errorf("pools list --mode all: %v", listed)
	}

	// The owner sees its wallets and its pool's accounts (spec §10).
	var accounts []map[string]any
	decodeJSON(t, mustDo(t, client, 200, "GET", srv.publicURL()+"/api/v1/partners/balances", liveKey, nil, "x-service-source", "cli-test").body, &accounts)
	wallets := map[string]string{}
	var sawPool bool
	for _, a := range accounts {
		switch str(a, "accountId") {
		case str(pool, "poolAccountId"):
			sawPool = true
			wantDecimal(t, "owner's pool account", a, "balance", "1000")
		case str(pool, "proceedsAccountId"):
		default:
			wallets[str(a, "currency")] = str(a, "accountId")
		}
	}
	if len(wallets) != 3 || !sawPool {
		t.Errorf("balances of the pool owner: %v", accounts)
	}

	// Accounts and the ledger.
	var bal map[string]any
	adminOK(t, srv, &bal, "accounts", "deposit", wallets["NGN"], "250.75", "--reference", "NIP-CLI-1")
	if str(bal, "accountId") != wallets["NGN"] || str(bal, "currency") != "NGN" {
		t.Errorf("accounts deposit: %v", bal)
	}
	wantDecimal(t, "accounts deposit", bal, "balance", "250.75")
	wantDecimal(t, "accounts deposit", bal, "availableBalance", "250.75")
	adminOK(t, srv, &bal, "accounts", "deposit", wallets["NGN"], "250.75", "--reference", " nip-cli-1 ") // the same prefund again
	if bal["repeated"] != true {
		t.Errorf("accounts deposit again: %v", bal)
	}
	wantDecimal(t, "accounts deposit again", bal, "balance", "250.75")
	adminFails(t, srv, "VALIDATION_ERROR", "accounts", "deposit", wallets["NGN"], "0.001", "--reference", "NIP-CLI-2") // NGN has 2 places
	adminFails(t, srv, "ACCOUNT_NOT_FOUND", "accounts", "deposit", str(pool, "poolAccountId"), "1", "--reference", "NIP-CLI-3")
	// Funds first from the command line: a credit line, a payout, the
	// statement, a bank receipt and the operator's completion.
	var line map[string]any
	adminOK(t, srv, &line, "clients", "credit", clientID, "--currency", "NGN", "--limit", "0")
	if str(line, "mode") != "sandbox" || str(line, "accountId") == wallets["NGN"] {
		t.Errorf("clients credit (sandbox by default): %v", line)
	}
	adminOK(t, srv, &line, "clients", "credit", clientID, "--mode", "live", "--currency", "NGN", "--limit", "1000")
	wantDecimal(t, "clients credit", line, "limit", "1000")
	if str(line, "mode") != "live" || str(line, "accountId") != wallets["NGN"] {
		t.Errorf("clients credit --mode live: %v", line)
	}
	adminFails(t, srv, "INSUFFICIENT_FUNDS", "accounts", "withdraw", wallets["NGN"], "250.76", "--reference", "PAYOUT-CLI-1")
	adminOK(t, srv, &bal, "accounts", "withdraw", wallets["NGN"], "0.75", "--reference", "PAYOUT-CLI-2")
	wantDecimal(t, "accounts withdraw", bal, "balance", "250")
	var page map[string]any
	adminOK(t, srv, &page, "accounts", "transactions", wallets["NGN"], "--limit", "1")
	if rows, _ := page["data"].([]any); len(rows) != 1 || str(rows[0].(map[string]any), "type") != "withdrawal" || page["hasMore"] != true {
		t.Errorf("accounts transactions --limit 1: %v", page)
	}
	adminFails(t, srv, "NOT_FOUND", "payins", "bank", "OJA-NOSUCH", "--amount", "1", "--bank-transaction-id", "NIP-1")
	adminFails(t, srv, "QUOTE_NOT_FOUND", "quotes", "complete", "6f1c1f43-0000-4000-8000-000000000000")
	for _, mode := range []string{"live", "sandbox"} {
		var report map[string]any
		adminOK(t, srv, &report, "ledger", "check", "--mode", mode)
		if report["ok"] != true {
			t.Errorf("ledger check --mode %s: %v", mode, report)
		}
	}
	var report map[string]any
	adminOK(t, srv, &report, "ledger", "check") // default mode: live
	cur, _ := report["currencies"].(map[string]any)
	for _, c := range []string{"NGN", "GHS", "USDT"} {
		line, _ := cur[c].(map[string]any)
		wantDecimal(t, "ledger check "+c, line, "sum", "0")
	}

	// Revocation works from the next request on.
	mustDo(t, client, 200, "GET", srv.publicURL()+"/api/v1/partners/balances", liveKey, nil, "x-service-source", "cli-test")
	out, errOut, code := adminCLI(t, srv, "keys", "revoke", str(live, "keyId"))
	if code != 0 {
		t.Fatalf("keys revoke: exit %d\n%s%s", code, out, errOut)
	}
	res := mustDo(t, client, 401, "GET", srv.publicURL()+"/api/v1/partners/balances", liveKey, nil, "x-service-source", "cli-test")
	if res.header.Get("WWW-Authenticate") == "" {
		t.Errorf("401 without WWW-Authenticate")
	}

	// Credentials and addresses from the environment; a wrong token fails.
	out, errOut, code = runOja(t, srv.bin, childEnv("OJA_ADMIN_ADDR="+srv.admin, "OJA_ADMIN_TOKEN="+crashAdminToken),
		"admin", "pools", "list", "--mode", "live")
	if code != 0 || !strings.Contains(out, poolID) {
		t.Errorf("admin with OJA_ADMIN_ADDR/OJA_ADMIN_TOKEN: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = runOja(t, srv.bin, childEnv(), "admin", "--addr", srv.adminURL(), "--token", "oja_admin_wrong", "pools", "list")
	if code == 0 || !strings.Contains(errOut, "UNAUTHORIZED") {
		t.Errorf("admin with a wrong token: exit %d\n%s", code, errOut)
	}
	_, _, code = adminCLI(t, srv, "pools", "explode")
	if code == 0 {
		t.Errorf("admin with an unknown command exited 0")
	}

	// A backup is a data dir of its own: it verifies offline and serves.
	backupDir := filepath.Join(t.TempDir(), "backup")
	var b map[string]any
	adminOK(t, srv, &b, "backup", backupDir)
	if str(b, "dir") != backupDir {
		t.Errorf("backup: %v, want dir %s", b, backupDir)
	}
	adminFails(t, srv, "VALIDATION_ERROR", "backup", backupDir) // already holds a store
	// Never inside the live data dir (a probe sent {"dir":"<data>/store"}
	// wrote into the live store), also through a symbolic link; an OS
	// failure is answered by its kind, without the OS's text.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(srv.data, link); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(srv.data, "store"), srv.data, filepath.Join(srv.data, "new", "dir"),
		filepath.Join(link, "copy"), srv.data + "/../" + filepath.Base(srv.data) + "/x"} {
		_, errOut, _ := adminCLI(t, srv, "backup", dir)
		if !strings.Contains(errOut, "VALIDATION_ERROR") || !strings.Contains(errOut, "outside the server's data directory") {
			t.Errorf("backup into %s: %s", dir, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(srv.data, "new")); err == nil {
		t.Error("a refused backup created a directory inside the data dir")
	}
	_, errOut, _ = adminCLI(t, srv, "backup", "/proc/self/oja-backup/x")
	if !strings.Contains(errOut, "VALIDATION_ERROR") || strings.Contains(errOut, "/proc") || strings.Contains(errOut, "mkdir") {
		t.Errorf("backup into /proc: %s, want a VALIDATION_ERROR without the OS's text", errOut)
	}
	out, errOut, code = runOja(t, srv.bin, childEnv(), "wal", "verify", "--data", backupDir)
	if code != 0 || !strings.Contains(out, "\nOK\n") {
		t.Fatalf("wal verify of the backup: exit %d\n%s%s", code, out, errOut)
	}

	// Serve the backup with no OJA_ADMIN_TOKEN: a token is generated into
	// <data>/admin.token (0600), and `oja admin --data` finds it there.
	bs := newOjaServer(t)
	bs.data, bs.env = backupDir, childEnv()
	bs.start()
	info, err := os.Stat(filepath.Join(backupDir, "admin.token"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("admin.token: %v mode %v, want 0600", err, info)
	}
	out, errOut, code = runOja(t, bs.bin, childEnv(), "admin", "--addr", bs.admin, "--data", backupDir, "pools", "list", "--mode", "live")
	if code != 0 {
		t.Fatalf("admin --data on the backup: exit %d\n%s%s", code, out, errOut)
	}
	decodeJSON(t, []byte(out), &listed)
	if len(listed) != 1 || str(listed[0], "poolId") != poolID {
		t.Fatalf("backup serves pools %v", listed)
	}
	wantDecimal(t, "backup pool", listed[0], "balance", "1000")
	wantDecimal(t, "backup pool", listed[0], "rate", "0.00063")
	// The revoked key stays revoked in the copy; the sandbox key works.
	mustDo(t, client, 401, "GET", bs.publicURL()+"/api/v1/partners/balances", liveKey, nil, "x-service-source", "cli-test")
	mustDo(t, client, 200, "GET", bs.publicURL()+"/api/v1/partners/balances", str(sandbox, "key"), nil, "x-service-source", "cli-test")
	bs.stop()
	srv.stop()
}

func TestWalCLI(t *testing.T) {
	t.Parallel()
	srv := newOjaServer(t, "--demo")
	srv.start()
	client := newHTTPClient()
	defer client.CloseIdleConnections()
	key, err := os.ReadFile(filepath.Join(srv.data, "demo.key"))
	if err != nil {
		t.Fatal(err)
	}
	demoKey := strings.TrimSpace(string(key))
	env := childEnv()

	// The tools refuse a running server's data dir.
	for _, sub := range []string{"verify", "stats"} {
		out, errOut, code := runOja(t, srv.bin, env, "wal", sub, "--data", srv.data)
		if code == 0 {
			t.Errorf("wal %s on a running server's data dir: exit 0\n%s", sub, out)
		} else if !strings.Contains(errOut, "in use") {
			t.Logf("wal %s refused with: %s", sub, errOut)
		}
	}

	// Two quotes: one completed, one left pending; then a mark in time.
	create := func(body string) string {
		res := mustDo(t, client, 200, "POST", srv.publicURL()+"/api/v1/partners/marketplace/intent", demoKey, []byte(body))
		var q map[string]any
		decodeJSON(t, res.body, &q)
		return str(q, "quoteId")
	}
	first := create(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1600,"rate":0.0001,"amountDirection":"source"}`)
	var q map[string]any
	decodeJSON(t, mustDo(t, client, 200, "GET", srv.publicURL()+quotePath+first, demoKey, nil).body, &q)
	ar, _ := q["allocationResult"].(map[string]any)
	allocs, _ := ar["allocations"].([]any)
	acct := str(allocs[0].(map[string]any), "poolAccountId")
	mustDo(t, client, 200, "PUT", srv.publicURL()+quotePath+first+"/accept", demoKey, fmt.Appendf(nil, `{"accountId":%q}`, acct))
	mustDo(t, client, 200, "PUT", srv.publicURL()+quotePath+first+"/complete", demoKey, nil)
	time.Sleep(20 * time.Millisecond)
	mark := time.Now().UTC()
	time.Sleep(20 * time.Millisecond)
	create(`{"sourceCurrency":"GHS","destinationCurrency":"USDT","amount":15,"rate":0.01,"amountDirection":"source"}`)
	srv.stop()

	out, errOut, code := runOja(t, srv.bin, env, "wal", "verify", "--data", srv.data)
	if code != 0 || !strings.HasSuffix(out, "\nOK\n") {
		t.Fatalf("wal verify: exit %d\n%s%s", code, out, errOut)
	}
	var last int
	for _, line := range strings.Split(out, "\n") {
		if _, err := fmt.Sscanf(line, "records 1..%d verified", &last); err == nil {
			break
		}
	}
	out, errOut, code = runOja(t, srv.bin, env, "wal", "stats", "--data", srv.data)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("records     %d\n", last)) {
		t.Errorf("wal stats: exit %d, want %d records\n%s%s", code, last, out, errOut)
	}
	counts := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		var name string
		var n int
		if _, err := fmt.Sscanf(line, "  %s %d", &name, &n); err == nil {
			counts[name] = n
		}
	}
	for name, want := range map[string]int{"ClientCreated": 1, "KeyCreated": 1, "PoolCreated": len(demoPools),
		"PoolDeposited": len(demoPools), "QuoteCreated": 2, "QuoteAccepted": 1, "QuoteCompletedFunded": 1} {
		if counts[name] != want {
			t.Errorf("wal stats: %s = %d, want %d\n%s", name, counts[name], want, out)
		}
	}

	// dump: text lines "seq at type {json}", --from and --limit.
	out, errOut, code = runOja(t, srv.bin, env, "wal", "dump", "--data", srv.data, "--from", "2", "--limit", "2")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("wal dump --from 2 --limit 2: exit %d, %d lines\n%s%s", code, len(lines), out, errOut)
	}
	for i, line := range lines {
		f := strings.SplitN(line, " ", 4)
		if len(f) != 4 || f[0] != fmt.Sprint(i+2) || !json.Valid([]byte(f[3])) {
			t.Errorf("wal dump line %q: want \"%d <at> <type> {json}\"", line, i+2)
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, f[1]); err != nil {
			t.Errorf("wal dump line %q: %v", line, err)
		}
	}
	if !strings.Contains(lines[0], " KeyCreated ") {
		t.Errorf("wal dump: record 2 of a --demo dir should create the demo key: %s", lines[0])
	}
	out, _, _ = runOja(t, srv.bin, env, "wal", "dump", "--data", srv.data, "--json")
	if n := strings.Count(out, "\n"); n != last {
		t.Errorf("wal dump --json: %d lines, want %d", n, last)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &rec); err != nil || len(rec) != 4 || rec["seq"] == nil || rec["type"] == nil || rec["at"] == nil || rec["event"] == nil {
			t.Errorf("wal dump --json line %q: want exactly seq, type, at, event (%v)", line, err)
			break
		}
	}

	// replay by sequence and by time.
	out, errOut, code = runOja(t, srv.bin, env, "wal", "replay", "--data", srv.data, "--until", fmt.Sprint(last))
	if code != 0 || !strings.Contains(out, "quotes: pending=1 awaiting_payment=0 completed=1 cancelled=0 expired=0") {
		t.Errorf("wal replay --until %d: exit %d\n%s%s", last, code, out, errOut)
	}
	out, errOut, code = runOja(t, srv.bin, env, "wal", "replay", "--data", srv.data, "--until", mark.Format(time.RFC3339Nano))
	if code != 0 || !strings.Contains(out, "quotes: pending=0 awaiting_payment=0 completed=1 cancelled=0 expired=0") {
		t.Errorf("wal replay --until %s: exit %d\n%s%s", mark.Format(time.RFC3339Nano), code, out, errOut)
	}
	out, errOut, code = runOja(t, srv.bin, env, "wal", "replay", "--data", srv.data, "--until", fmt.Sprint(2+2*len(demoPools)))
	if code != 0 || !strings.Contains(out, "quotes: pending=0 awaiting_payment=0 completed=0 cancelled=0 expired=0") ||
		strings.Count(out, `"ok":true`) != 2 {
		t.Errorf("wal replay at the end of the demo seeding: exit %d\n%s%s", code, out, errOut)
	}

	// Before the first record there is no state to show: refused, naming it.
	for _, until := range []string{"0", "2000-01-01T00:00:00Z"} {
		_, errOut, code := runOja(t, srv.bin, env, "wal", "replay", "--data", srv.data, "--until", until)
		if code == 0 || !strings.Contains(errOut, "before the log's first record (seq 1, ") {
			t.Errorf("wal replay --until %s: exit %d, stderr %q", until, code, errOut)
		}
	}

	// Bad arguments.
	for _, args := range [][]string{
		{"wal", "replay", "--data", srv.data},
		{"wal", "replay", "--data", srv.data, "--until", "yesterday"},
		{"wal", "stats", "--data", filepath.Join(t.TempDir(), "nothing")},
		{"wal", "explode", "--data", srv.data},
		{"wal"},
	} {
		if _, _, code := runOja(t, srv.bin, env, args...); code == 0 {
			t.Errorf("oja %s: exit 0, want a failure", strings.Join(args, " "))
		}
	}
	if _, _, code := runOja(t, srv.bin, env, "wal", "explode", "--data", srv.data); code != 2 {
		t.Errorf("oja wal explode: exit %d, want 2 (usage)", code)
	}

	// The data dir still serves after the offline tools, with both quotes.
	srv.start()
	res := mustDo(t, client, 200, "GET", srv.publicURL()+quotePath+first, demoKey, nil)
	decodeJSON(t, res.body, &q)
	if str(q, "status") != "completed" {
		t.Errorf("after the wal tools, quote %s is %s", first, str(q, "status"))
	}
	srv.stop()
}
