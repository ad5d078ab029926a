package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Issue 10's measurement over the real binary: 300 acknowledged quotes,
// SIGTERM, 64 bytes flipped at a third of the WAL. `oja serve` used to
// answer /readyz and serve 98 of them; now it exits non-zero before
// serving with one line naming the file, the offset and the last intact
// record, and `oja wal verify` fails saying the same.
func TestDamagedLogRefusedByServeAndVerify(t *testing.T) {
	t.Parallel()
	srv := newOjaServer(t, "--demo")
	srv.start()
	raw, err := os.ReadFile(filepath.Join(srv.data, "demo.key"))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(raw))
	client := newHTTPClient()
	defer client.CloseIdleConnections()
	body := []byte(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1000,"rate":0.0006,"amountDirection":"source"}`)
	for i := range 300 {
		res, err := do(client, "POST", srv.publicURL()+"/api/v1/partners/marketplace/intent", key, body,
			"Idempotency-Key", fmt.Sprintf("integrity-%d", i))
		if err != nil || res.status != 200 {
			t.Fatalf("create %d: %v %d %s", i, err, res.status, res.body)
		}
	}
	srv.stop()

	wals, _ := filepath.Glob(filepath.Join(storeDir(srv.data), "*.log"))
	slices.Sort(wals)
	if len(wals) == 0 {
		t.Fatal("no WAL file")
	}
	path := wals[len(wals)-1]
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := len(b) / 3
	for i := range 64 {
		b[off+i] ^= 0x5a
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	wantDamage := func(what, out string, code int) {
		t.Helper()
		if code == 0 {
			t.Fatalf("%s: exit 0 on a damaged log\n%s", what, out)
		}
		if !strings.Contains(out, filepath.Base(path)) || !strings.Contains(out, "at byte") ||
			!strings.Contains(out, "not a torn tail") || !strings.Contains(out, "last intact record") {
			t.Errorf("%s: the refusal does not name the file, offset and last intact record:\n%s", what, out)
		}
	}
	out, errOut, code := runOja(t, srv.bin, childEnv("OJA_ADMIN_TOKEN="+crashAdminToken), srv.args()...)
	wantDamage("oja serve", out+errOut, code)
	t.Logf("oja serve, exit %d: %s", code, strings.TrimSpace(errOut))
	if strings.Contains(out+errOut, `"ready"`) || strings.Contains(out+errOut, "listening; recovering") && code == 0 {
		t.Errorf("oja serve got ready on a damaged log:\n%s", out+errOut)
	}
	out, errOut, code = runOja(t, srv.bin, childEnv(), "wal", "verify", "--data", srv.data)
	wantDamage("oja wal verify", out+errOut, code)
	t.Logf("oja wal verify, exit %d: %s%s", code, out, strings.TrimSpace(errOut))
}
