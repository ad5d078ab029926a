package gateway_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
	"github.com/oja-exchange/oja/wal"
)

var poolKeys = []string{
	"poolId", "mode", "name", "source", "destination", "rate", "rateSetAt", "status",
	"poolAccountId", "proceedsAccountId", "balance", "available", "tradesCount", "completionRate",
}

// wantPool checks the Pool JSON shape (spec §11) and returns it.
func wantPool(t testing.TB, p map[string]any, owned bool) map[string]any {
	t.Helper()
	keys := poolKeys
	if owned {
		keys = append(keys[:len(keys):len(keys)], "ownerClientId")
	}
	wantKeys(t, "pool", p, keys...)
	wantUUID(t, p, "poolId")
	wantUUID(t, p, "poolAccountId")
	wantUUID(t, p, "proceedsAccountId")
	wantTimestamp(t, p, "rateSetAt")
	return p
}

func TestAdminAuth(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	cases := []struct {
		name    string
		headers []string
	}{
		{"no Authorization", nil},
		{"wrong token", []string{"Authorization", "Bearer " + gatewaytest.AdminToken + "x"}},
		{"token prefix", []string{"Authorization", "Bearer " + gatewaytest.AdminToken[:10]}},
		{"Basic scheme", []string{"Authorization", "Basic " + gatewaytest.AdminToken}},
		{"a partner key", []string{"Authorization", "Bearer " + partner.SandboxKey}},
	}
	routes := []struct {
		method, path string
		body         any
	}{
		{"GET", "/admin/v1/pools", nil},
		{"POST", "/admin/v1/clients", map[string]any{"name": "intruder"}},
		{"GET", "/admin/v1/ledger/check?mode=sandbox", nil},
		{"POST", "/admin/v1/backup", map[string]any{"dir": filepath.Join(t.TempDir(), "stolen")}},
		{"DELETE", "/admin/v1/keys/" + randomUUID, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, route := range routes {
				r := do(t, route.method, s.Admin+route.path, "", route.body, tc.headers...)
				wantError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
				if m := object(t, r)["message"]; !strings.Contains(fmt.Sprint(m), "admin token") {
					t.Errorf("%s %s: 401 message %q does not name the admin token", route.method, route.path, m)
				}
				if got := r.header.Get("WWW-Authenticate"); got != "Bearer" {
					t.Errorf("%s %s: WWW-Authenticate %q, want Bearer", route.method, route.path, got)
				}
			}
		})
	}
	// Nothing was created by the refused calls.
	for _, c := range s.Sys.Clients() {
		if c.Name == "intruder" {
			t.Errorf("an unauthorized POST /admin/v1/clients created a client")
		}
	}
}

func TestAdminClientsAndKeys(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	client := wantCreated(t, admin(t, s, http.MethodPost, "/admin/v1/clients", map[string]any{"name": "acme"}))
	wantKeys(t, "client", client, "clientId", "name")
	clientID := wantUUID(t, client, "clientId")
	if got := client["name"]; got != "acme" {
		t.Errorf("name: got %v, want acme", got)
	}

	t.Run("client validation", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			body any
			want string
		}{
			{"missing name", map[string]any{}, "name"},
			{"empty name", map[string]any{"name": ""}, "name"},
			{"blank name", map[string]any{"name": "   "}, "name"},
			{"name a number", map[string]any{"name": n("5")}, "name"},
			{"name too long", map[string]any{"name": strings.Repeat("n", 201)}, "name"},
			{"unknown member", map[string]any{"name": "x", "tier": "gold"}, "tier"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				details := wantError(t, admin(t, s, http.MethodPost, "/admin/v1/clients", tc.body),
					http.StatusBadRequest, "VALIDATION_ERROR")
				wantDetailsNames(t, details, tc.want)
			})
		}
	})

	keys := map[string]map[string]any{}
	for _, mode := range []string{"sandbox", "live"} {
		t.Run("key "+mode, func(t *testing.T) {
			k := wantCreated(t, admin(t, s, http.MethodPost, "/admin/v1/clients/"+clientID+"/keys",
				map[string]any{"mode": mode}))
			wantKeys(t, "key", k, "keyId", "key", "mode", "clientId")
			wantUUID(t, k, "keyId")
			if k["mode"] != mode || k["clientId"] != clientID {
				t.Errorf("key: got mode %v client %v, want %s %s", k["mode"], k["clientId"], mode, clientID)
			}
			secret := getString(t, k, "key")
			if !regexp.MustCompile(`^oja_` + mode + `_[0-9A-Za-z]{32,}$`).MatchString(secret) {
				t.Errorf("key: got %q, want oja_%s_<32+ base62>", secret, mode)
			}
			// The key works on the public API, in its mode.
			got := listBalances(t, s, secret)
			if len(got) != 3 {
				t.Errorf("balances with the new key: got %d, want 3 wallets", len(got))
			}
			keys[mode] = k
		})
	}
	if keys["sandbox"] == nil || keys["live"] == nil {
		t.Fatal("keys not created")
	}
	sandboxKey := getString(t, keys["sandbox"], "key")
	second := wantCreated(t, admin(t, s, http.MethodPost, "/admin/v1/clients/"+clientID+"/keys",
		map[string]any{"mode": "sandbox"}))
	if second["key"] == sandboxKey || second["keyId"] == keys["sandbox"]["keyId"] {
		t.Errorf("two keys share a secret or id")
	}
	// The two sandbox keys see the same wallets.
	a, b := listBalances(t, s, sandboxKey), listBalances(t, s, getString(t, second, "key"))
	for id := range a {
		if b[id] == nil {
			t.Errorf("wallet %s seen by one sandbox key and not the other", id)
		}
	}
	// The live key sees other wallets.
	for id := range listBalances(t, s, getString(t, keys["live"], "key")) {
		if a[id] != nil {
			t.Errorf("wallet %s seen by both the live and the sandbox key", id)
		}
	}

	t.Run("key validation", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			client string
			body   any
			status int
			code   string
			field  string
		}{
			{"bad mode", clientID, map[string]any{"mode": "prod"}, 400, "VALIDATION_ERROR", "mode"},
			{"mode in upper case", clientID, map[string]any{"mode": "LIVE"}, 400, "VALIDATION_ERROR", "mode"},
			{"missing mode", clientID, map[string]any{}, 400, "VALIDATION_ERROR", "mode"},
			{"client not a uuid", "acme", map[string]any{"mode": "live"}, 400, "VALIDATION_ERROR", "clientId"},
			{"unknown client", randomUUID, map[string]any{"mode": "live"}, 404, "NOT_FOUND", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				details := wantError(t, admin(t, s, http.MethodPost, "/admin/v1/clients/"+tc.client+"/keys", tc.body),
					tc.status, tc.code)
				if tc.field != "" {
					wantDetailsNames(t, details, tc.field)
				}
			})
		}
	})

	t.Run("keys are shown only at creation", func(t *testing.T) {
		r := admin(t, s, http.MethodGet, "/admin/v1/clients/"+clientID+"/keys", nil)
		wantError(t, r, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
		if strings.Contains(string(r.body), sandboxKey) {
			t.Errorf("the key leaked after creation")
		}
	})

	t.Run("revoke", func(t *testing.T) {
		keyID := getString(t, keys["sandbox"], "keyId")
		r := admin(t, s, http.MethodDelete, "/admin/v1/keys/"+keyID, nil)
		wantStatus(t, r, http.StatusNoContent)
		if len(r.body) != 0 {
			t.Errorf("204 with a body: %q", r.body)
		}
		wantError(t, do(t, http.MethodGet, s.URL+balancesPath, sandboxKey, nil, "x-service-source", "t"),
			http.StatusUnauthorized, "UNAUTHORIZED")
		// Other keys of the client still work.
		listBalances(t, s, getString(t, second, "key"))
		listBalances(t, s, getString(t, keys["live"], "key"))
		// Revoking again is harmless; unknown and malformed ids are refused.
		wantStatus(t, admin(t, s, http.MethodDelete, "/admin/v1/keys/"+keyID, nil), http.StatusNoContent)
		wantError(t, admin(t, s, http.MethodDelete, "/admin/v1/keys/"+randomUUID, nil), http.StatusNotFound, "NOT_FOUND")
		details := wantError(t, admin(t, s, http.MethodDelete, "/admin/v1/keys/key-1", nil),
			http.StatusBadRequest, "VALIDATION_ERROR")
		wantDetailsNames(t, details, "keyId")
	})
}

func TestAdminPools(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	owner := s.NewPartner(t, "maker")
	before := time.Now().Add(-time.Second)
	p := wantPool(t, wantCreated(t, admin(t, s, http.MethodPost, "/admin/v1/pools", map[string]any{
		"mode": "sandbox", "name": "alpha", "source": "NGN", "destination": "USDT", "rate": n("0.000625"),
	})), false)
	for k, want := range map[string]string{
		"mode": "sandbox", "name": "alpha", "source": "NGN", "destination": "USDT", "status": "active",
	} {
		if got := p[k]; got != want {
			t.Errorf("%s: got %v, want %s", k, got, want)
		}
	}
	wantNumber(t, p, "rate", "0.000625")
	for _, k := range []string{"balance", "available", "tradesCount", "completionRate"} {
		wantNumber(t, p, k, "0")
	}
	if at := wantTimestamp(t, p, "rateSetAt"); at.Before(before) || at.After(time.Now().Add(time.Second)) {
		t.Errorf("rateSetAt: got %s, want about now", at)
	}
	poolID := getString(t, p, "poolId")

	owned := wantPool(t, wantCreated(t, admin(t, s, http.MethodPost, "/admin/v1/pools", map[string]any{
		"mode": "live", "name": "maker-live", "source": "GHS", "destination": "USDT", "rate": n("0.0625"),
		"ownerClientId": owner.Client.ID.String(),
	})), true)
	if owned["ownerClientId"] != owner.Client.ID.String() || owned["mode"] != "live" {
		t.Errorf("owned pool: got owner %v mode %v", owned["ownerClientId"], owned["mode"])
	}

	t.Run("create validation", func(t *testing.T) {
		base := map[string]any{"mode": "sandbox", "name": "x", "source": "NGN", "destination": "USDT", "rate": n("0.0006")}
		for _, tc := range []struct {
			name   string
			body   map[string]any
			status int
			code   string
			field  string
		}{
			{"bad mode", with(base, "mode", "prod"), 400, "VALIDATION_ERROR", "mode"},
			{"missing mode", with(base, "mode", nil), 400, "VALIDATION_ERROR", "mode"},
			{"missing name", with(base, "name", nil), 400, "VALIDATION_ERROR", "name"},
			{"unknown source", with(base, "source", "XYZ"), 400, "VALIDATION_ERROR", "source"},
			{"unknown destination", with(base, "destination", "EUR"), 400, "VALIDATION_ERROR", "destination"},
			{"GHS to NGN", with(base, "source", "GHS", "destination", "NGN"), 400, "INVALID_CURRENCY_PAIR", ""},
			{"USDT to NGN", with(base, "source", "USDT", "destination", "NGN"), 400, "INVALID_CURRENCY_PAIR", ""},
			{"NGN to NGN", with(base, "destination", "NGN"), 400, "INVALID_CURRENCY_PAIR", ""},
			{"zero rate", with(base, "rate", n("0")), 400, "VALIDATION_ERROR", "rate"},
			{"negative rate", with(base, "rate", n("-1")), 400, "VALIDATION_ERROR", "rate"},
			{"rate with 19 decimals", with(base, "rate", n("0.0000000000000000001")), 400, "VALIDATION_ERROR", "rate"},
			{"rate as a string", with(base, "rate", "0.0006"), 400, "VALIDATION_ERROR", "rate"},
			{"owner not a uuid", with(base, "ownerClientId", "maker"), 400, "VALIDATION_ERROR", "ownerClientId"},
			{"unknown owner", with(base, "ownerClientId", randomUUID), 404, "NOT_FOUND", ""},
			{"unknown member", with(base, "liquidity", n("100")), 400, "VALIDATION_ERROR", "liquidity"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				details := wantError(t, admin(t, s, http.MethodPost, "/admin/v1/pools", tc.body), tc.status, tc.code)
				if tc.field != "" {
					wantDetailsNames(t, details, tc.field)
				}
			})
		}
	})

	t.Run("list", func(t *testing.T) {
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"", []string{poolID, getString(t, owned, "poolId")}},
			{"?mode=sandbox", []string{poolID}},
			{"?mode=live", []string{getString(t, owned, "poolId")}},
		} {
			r := admin(t, s, http.MethodGet, "/admin/v1/pools"+tc.query, nil)
			wantStatus(t, r, http.StatusOK)
			var ids []string
			for _, v := range array(t, r) {
				ids = append(ids, getString(t, wantPool(t, v.(map[string]any), v.(map[string]any)["ownerClientId"] != nil), "poolId"))
			}
			if !equalJSON(toAny(sortedStrings(ids)), toAny(sortedStrings(tc.want))) {
				t.Errorf("GET pools%s: got %v, want %v", tc.query, ids, tc.want)
			}
		}
		details := wantError(t, admin(t, s, http.MethodGet, "/admin/v1/pools?mode=prod", nil),
			http.StatusBadRequest, "VALIDATION_ERROR")
		wantDetailsNames(t, details, "mode")
	})

	t.Run("rate", func(t *testing.T) {
		old := wantTimestamp(t, p, "rateSetAt")
		got := wantPool(t, wantOK(t, admin(t, s, http.MethodPut, "/admin/v1/pools/"+poolID+"/rate",
			map[string]any{"rate": n("0.00063")})), false)
		wantNumber(t, got, "rate", "0.00063")
		if at := wantTimestamp(t, got, "rateSetAt"); at.Before(old) {
			t.Errorf("rateSetAt went back: %s → %s", old, at)
		}
		wantNumber(t, pool(t, s, poolID), "rate", "0.00063")
		for _, tc := range []struct {
			name, pool string
			body       any
			status     int
			code       string
		}{
			{"zero rate", poolID, map[string]any{"rate": n("0")}, 400, "VALIDATION_ERROR"},
			{"missing rate", poolID, map[string]any{}, 400, "VALIDATION_ERROR"},
			{"rate with 19 decimals", poolID, map[string]any{"rate": n("0.0006300000000000001")}, 400, "VALIDATION_ERROR"},
			{"unknown pool", randomUUID, map[string]any{"rate": n("0.0006")}, 404, "NOT_FOUND"},
			{"pool not a uuid", "alpha", map[string]any{"rate": n("0.0006")}, 400, "VALIDATION_ERROR"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantError(t, admin(t, s, http.MethodPut, "/admin/v1/pools/"+tc.pool+"/rate", tc.body), tc.status, tc.code)
			})
		}
		wantNumber(t, pool(t, s, poolID), "rate", "0.00063")
	})

	t.Run("status", func(t *testing.T) {
		got := wantPool(t, wantOK(t, admin(t, s, http.MethodPut, "/admin/v1/pools/"+poolID+"/status",
			map[string]any{"status": "suspended"})), false)
		if got["status"] != "suspended" {
			t.Errorf("status: got %v, want suspended", got["status"])
		}
		for _, tc := range []struct {
			name, pool string
			body       any
			status     int
			code       string
		}{
			{"unknown status", poolID, map[string]any{"status": "paused"}, 400, "VALIDATION_ERROR"},
			{"missing status", poolID, map[string]any{}, 400, "VALIDATION_ERROR"},
			{"unknown pool", randomUUID, map[string]any{"status": "active"}, 404, "NOT_FOUND"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantError(t, admin(t, s, http.MethodPut, "/admin/v1/pools/"+tc.pool+"/status", tc.body), tc.status, tc.code)
			})
		}
		got = wantOK(t, admin(t, s, http.MethodPut, "/admin/v1/pools/"+poolID+"/status",
			map[string]any{"status": "active"}))
		if got["status"] != "active" {
			t.Errorf("status: got %v, want active", got["status"])
		}
	})

	t.Run("deposit and withdraw", func(t *testing.T) {
		move := func(op, amount string) *response {
			return admin(t, s, http.MethodPost, "/admin/v1/pools/"+poolID+"/"+op, map[string]any{"amount": n(amount)})
		}
		got := wantPool(t, wantOK(t, move("deposit", "100.000001")), false)
		wantNumber(t, got, "balance", "100.000001")
		wantNumber(t, got, "available", "100.000001")
		got = wantOK(t, move("withdraw", "0.000001"))
		wantNumber(t, got, "balance", "100")
		wantNumber(t, got, "available", "100")
		// A hold makes available < balance: withdrawals are capped by available.
		partner := s.NewPartner(t, "taker")
		q := mustCreateQuote(t, s, partner.SandboxKey, quoteRequest("NGN", "USDT", "64000", "0.00063", "source"))
		wantNumber(t, q, "totalDestinationAmount", "40.32")
		got = syncPool(t, s, poolID)
		wantNumber(t, got, "balance", "100")
		wantNumber(t, got, "available", "59.68")
		wantError(t, move("withdraw", "59.680001"), http.StatusUnprocessableEntity, "INSUFFICIENT_FUNDS")
		wantError(t, move("withdraw", "100"), http.StatusUnprocessableEntity, "INSUFFICIENT_FUNDS")
		got = wantOK(t, move("withdraw", "59.68"))
		wantNumber(t, got, "balance", "40.32")
		wantNumber(t, got, "available", "0")
		wantError(t, move("withdraw", "0.000001"), http.StatusUnprocessableEntity, "INSUFFICIENT_FUNDS")

		for _, tc := range []struct {
			name, op string
			body     any
			field    string
		}{
			{"zero deposit", "deposit", map[string]any{"amount": n("0")}, "amount"},
			{"negative deposit", "deposit", map[string]any{"amount": n("-5")}, "amount"},
			{"USDT deposit with 7 decimals", "deposit", map[string]any{"amount": n("1.0000001")}, "amount"},
			{"deposit as a string", "deposit", map[string]any{"amount": "5"}, "amount"},
			{"missing amount", "withdraw", map[string]any{}, "amount"},
			{"zero withdrawal", "withdraw", map[string]any{"amount": n("0")}, "amount"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				details := wantError(t, admin(t, s, http.MethodPost, "/admin/v1/pools/"+poolID+"/"+tc.op, tc.body),
					http.StatusBadRequest, "VALIDATION_ERROR")
				wantDetailsNames(t, details, tc.field)
			})
		}
		wantError(t, admin(t, s, http.MethodPost, "/admin/v1/pools/"+randomUUID+"/deposit",
			map[string]any{"amount": n("1")}), http.StatusNotFound, "NOT_FOUND")
		got = pool(t, s, poolID)
		wantNumber(t, got, "balance", "40.32")
		wantNumber(t, got, "available", "0")
	})
}

// TestAdminPoolCounters: tradesCount counts completed quotes and
// completionRate is completed ÷ accepted × 100, half-even to 2 places.
func TestAdminPoolCounters(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	alpha := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	key := partner.SandboxKey
	body := quoteRequest("NGN", "USDT", "1000", "0.000625", "source")
	for _, path := range [][]string{
		{"accept", "complete"},
		{"accept", "cancel"},
		{"accept", "complete"},
		{"cancel"},
	} {
		q := mustCreateQuote(t, s, key, body)
		for _, op := range path {
			if op == "accept" {
				mustAccept(t, s, key, q)
				continue
			}
			wantOK(t, transition(t, s, key, getString(t, q, "quoteId"), op, nil))
		}
	}
	p := syncPool(t, s, alpha.ID.String())
	wantNumber(t, p, "tradesCount", "2")
	wantNumber(t, p, "completionRate", "66.67")
	wantNumber(t, p, "balance", "998.75")
	wantNumber(t, p, "available", "998.75")
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func TestAdminSuspendedPoolSkipped(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	alpha := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	beta := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "beta", "0.0006", "1000")
	status := func(p *engine.Pool, st string) {
		t.Helper()
		wantOK(t, admin(t, s, http.MethodPut, "/admin/v1/pools/"+p.ID.String()+"/status", map[string]any{"status": st}))
	}
	body := quoteRequest("NGN", "USDT", "1000", "0.0006", "source")
	poolOf := func(q map[string]any) string {
		a := getArray(t, q, "allocationResult.allocations")
		if len(a) != 1 {
			t.Fatalf("allocations: got %d, want 1", len(a))
		}
		return getString(t, a[0], "poolId")
	}

	status(alpha, "suspended")
	if got := poolOf(mustCreateQuote(t, s, partner.SandboxKey, body)); got != beta.ID.String() {
		t.Errorf("with alpha suspended: allocated from %s, want beta %s", got, beta.ID)
	}
	status(beta, "suspended")
	details := wantError(t, do(t, http.MethodPost, s.URL+intentPath, partner.SandboxKey, body),
		http.StatusUnprocessableEntity, "INSUFFICIENT_LIQUIDITY")
	if v, ok := details["bestRate"]; !ok || v != nil {
		t.Errorf("bestRate with every pool suspended: got %v, want null", v)
	}
	status(alpha, "active")
	status(beta, "active")
	if got := poolOf(mustCreateQuote(t, s, partner.SandboxKey, body)); got != alpha.ID.String() {
		t.Errorf("with both active: allocated from %s, want alpha %s", got, alpha.ID)
	}
}

func TestAdminAccountDeposit(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	p := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	ngn := wallet(t, partner, engine.ModeSandbox, engine.CurrencyNGN)
	usdtLive := wallet(t, partner, engine.ModeLive, engine.CurrencyUSDT)
	deposit := func(account string, body any) *response {
		if m, ok := body.(map[string]any); ok && m["reference"] == nil {
			m["reference"] = nextRef() // the reference's own rules: TestPaymentIdentity
		}
		return admin(t, s, http.MethodPost, "/admin/v1/accounts/"+account+"/deposit", body)
	}

	b := wantOK(t, deposit(ngn, map[string]any{"amount": n("1500.25")}))
	wantKeys(t, "balance", b, "accountId", "currency", "balance", "availableBalance", "reference")
	if b["accountId"] != ngn || b["currency"] != "NGN" {
		t.Errorf("balance: got account %v currency %v, want %s NGN", b["accountId"], b["currency"], ngn)
	}
	wantNumber(t, b, "balance", "1500.25")
	wantNumber(t, b, "availableBalance", "1500.25")
	b = wantOK(t, deposit(ngn, map[string]any{"amount": n("0.75")}))
	wantNumber(t, b, "balance", "1501")
	b = wantOK(t, deposit(usdtLive, map[string]any{"amount": n("0.000001")}))
	wantNumber(t, b, "balance", "0.000001")
	// The partner sees the deposits.
	one := balancesOf(t, do(t, http.MethodGet, s.URL+balancesPath+"/"+ngn, partner.SandboxKey, nil))
	wantNumber(t, one[ngn], "balance", "1501")

	for _, tc := range []struct {
		name    string
		account string
		body    any
		status  int
		code    string
		field   string
	}{
		{"NGN with 3 decimals", ngn, map[string]any{"amount": n("1.001")}, 400, "VALIDATION_ERROR", "amount"},
		{"USDT with 7 decimals", usdtLive, map[string]any{"amount": n("0.0000001")}, 400, "VALIDATION_ERROR", "amount"},
		{"zero", ngn, map[string]any{"amount": n("0")}, 400, "VALIDATION_ERROR", "amount"},
		{"negative", ngn, map[string]any{"amount": n("-1")}, 400, "VALIDATION_ERROR", "amount"},
		{"missing amount", ngn, map[string]any{}, 400, "VALIDATION_ERROR", "amount"},
		{"unknown member", ngn, map[string]any{"amount": n("1"), "memo": "x"}, 400, "VALIDATION_ERROR", "memo"},
		{"unknown account", randomUUID, map[string]any{"amount": n("1")}, 404, "ACCOUNT_NOT_FOUND", ""},
		{"a pool account", p.Liquidity.ID.String(), map[string]any{"amount": n("1")}, 404, "ACCOUNT_NOT_FOUND", ""},
		{"account not a uuid", "wallet", map[string]any{"amount": n("1")}, 400, "VALIDATION_ERROR", "accountId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			details := wantError(t, deposit(tc.account, tc.body), tc.status, tc.code)
			if tc.field != "" {
				wantDetailsNames(t, details, tc.field)
			}
		})
	}
	wantNumber(t, wantOK(t, deposit(ngn, map[string]any{"amount": n("1")})), "balance", "1502")
}

func TestAdminLedgerCheck(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	a := s.NewPartner(t, "a")
	b := s.NewPartner(t, "b")
	alpha := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNGHS, "cedi", "0.0085", "500")
	newPool(t, s, engine.ModeLive, gatewaytest.GHSUSDT, "accra", "0.0625", "300")
	mixedWorkload(t, s, a, b)
	wantOK(t, admin(t, s, http.MethodPost, "/admin/v1/pools/"+alpha.ID.String()+"/withdraw", map[string]any{"amount": n("10")}))
	syncPool(t, s, alpha.ID.String())

	for _, tc := range []struct {
		mode     string
		accounts map[string]int64 // per currency: wallets + clearing + pool accounts
	}{
		// sandbox: 2 wallets + clearing; NGN also alpha's and cedi's
		// proceeds; USDT alpha's liquidity; GHS cedi's liquidity.
		{"sandbox", map[string]int64{"NGN": 5, "USDT": 4, "GHS": 4}},
		// live: 2 wallets + clearing; GHS accra's proceeds, USDT its liquidity.
		{"live", map[string]int64{"NGN": 3, "USDT": 4, "GHS": 4}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			report := syncTreasury(t, s, tc.mode)
			if report["ok"] != true {
				t.Errorf("ok: got %v, want true; report %v", report["ok"], report)
			}
			if _, ok := report["problems"]; ok {
				t.Errorf("problems on a sound ledger: %v", report["problems"])
			}
			currencies := getObject(t, report, "currencies")
			wantKeys(t, "currencies", currencies, "GHS", "NGN", "USDT")
			for c, accounts := range tc.accounts {
				line := getObject(t, currencies, c)
				wantKeys(t, c, line, "sum", "accounts")
				wantNumber(t, line, "sum", "0")
				if got := number(t, line, "accounts"); got.IntPart() != accounts {
					t.Errorf("%s accounts: got %s, want %d", c, got, accounts)
				}
			}
		})
	}
	for _, q := range []string{"", "?mode=", "?mode=prod", "?mode=LIVE"} {
		details := wantError(t, admin(t, s, http.MethodGet, "/admin/v1/ledger/check"+q, nil),
			http.StatusBadRequest, "VALIDATION_ERROR")
		wantDetailsNames(t, details, "mode")
	}
}

// mixedWorkload runs quotes in every outcome plus wallet deposits in
// sandbox, and one completed quote in live. It returns the quote ids.
func mixedWorkload(t testing.TB, s *gatewaytest.Server, a, b gatewaytest.Partner) []string {
	t.Helper()
	var ids []string
	create := func(key string, body map[string]any) map[string]any {
		q := mustCreateQuote(t, s, key, body)
		ids = append(ids, getString(t, q, "quoteId"))
		return q
	}
	completed := create(a.SandboxKey, quoteRequest("NGN", "USDT", "1000", "0.000625", "source"))
	mustAccept(t, s, a.SandboxKey, completed)
	wantOK(t, transition(t, s, a.SandboxKey, getString(t, completed, "quoteId"), "complete", nil))
	cancelled := create(b.SandboxKey, quoteRequest("NGN", "USDT", "5", "0.0006", "destination"))
	wantOK(t, transition(t, s, b.SandboxKey, getString(t, cancelled, "quoteId"), "cancel", nil))
	mustAccept(t, s, b.SandboxKey, create(b.SandboxKey, quoteRequest("NGN", "GHS", "1234.56", "0.0085", "source")))
	create(a.SandboxKey, quoteRequest("NGN", "GHS", "1000", "0.0085", "source"))
	live := create(a.LiveKey, quoteRequest("GHS", "USDT", "100", "0.0625", "source"))
	liveAccepted := mustAccept(t, s, a.LiveKey, live)
	// Funds first: the live completion spends a's GHS, which a bank
	// transfer carrying the quote's reference brought in.
	wantOK(t, admin(t, s, http.MethodPost, "/admin/v1/payins/bank", map[string]any{"amount": n("100"),
		"reference": getString(t, getObject(t, getObject(t, liveAccepted, "metadata"), "bankPayIn"), "reference"), "bankTransactionId": "mixed-1"}))
	wantOK(t, transition(t, s, a.LiveKey, getString(t, live, "quoteId"), "complete", nil))
	wantOK(t, admin(t, s, http.MethodPost, "/admin/v1/accounts/"+wallet(t, b, engine.ModeSandbox, engine.CurrencyNGN)+"/deposit",
		map[string]any{"amount": n("250"), "reference": nextRef()}))
	return ids
}

func TestAdminBackup(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	a := s.NewPartner(t, "a")
	b := s.NewPartner(t, "b")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNGHS, "cedi", "0.0085", "500")
	newPool(t, s, engine.ModeLive, gatewaytest.GHSUSDT, "accra", "0.0625", "300")
	ids := mixedWorkload(t, s, a, b)
	live := syncTreasury(t, s, "sandbox")

	dir := filepath.Join(t.TempDir(), "backup")
	// NB: what the log holds before the backup; the backup's own audit
	// line is written after it (answered once both are done).
	records := s.Log.LastSeq()
	r := admin(t, s, http.MethodPost, "/admin/v1/backup", map[string]any{"dir": dir})
	if got := wantOK(t, r); got["dir"] != dir {
		t.Errorf("dir: got %v, want %s", got["dir"], dir)
	}
	if after := s.Log.LastSeq(); after != records+1 {
		t.Errorf("the log went from %d to %d records over the backup, want its audit line only", records, after)
	}

	copyLog, err := wal.Open(dir, wal.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open the backup: %v", err)
	}
	defer copyLog.Close()
	stats, err := copyLog.Stats()
	if err != nil {
		t.Fatalf("backup stats: %v", err)
	}
	if stats.Records != records || stats.LastSeq != records {
		t.Errorf("backup: got %d records (last %d), want %d", stats.Records, stats.LastSeq, records)
	}
	state, _, err := actors.Recover(copyLog, time.Now())
	if err != nil {
		t.Fatalf("recover the backup: %v", err)
	}
	for _, id := range ids {
		qid, _ := engine.ParseUUID(id)
		if state.Quotes.Get(engine.QuoteID(qid)) == nil {
			t.Errorf("quote %s missing from the backup", id)
		}
	}
	if got := len(state.Clients); got != 2 {
		t.Errorf("clients in the backup: got %d, want 2", got)
	}
	if got := len(state.Pools); got != 3 {
		t.Errorf("pools in the backup: got %d, want 3", got)
	}
	report := state.LedgerCheck(engine.ModeSandbox)
	if !report.OK {
		t.Errorf("backup ledger check: %v", report.Problems)
	}
	for _, c := range engine.DefaultMarkets().CurrencyList() {
		want := number(t, live, "currencies."+c.String()+".accounts").IntPart()
		if got := int64(report.Currencies[c].Accounts); got != want {
			t.Errorf("backup %s accounts: got %d, want %d as live", c, got, want)
		}
	}

	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			body any
		}{
			{"existing dir", map[string]any{"dir": dir}},
			{"missing dir", map[string]any{}},
			{"dir a number", map[string]any{"dir": n("1")}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				details := wantError(t, admin(t, s, http.MethodPost, "/admin/v1/backup", tc.body),
					http.StatusBadRequest, "VALIDATION_ERROR")
				wantDetailsNames(t, details, "dir")
			})
		}
	})
}

// TestAdminMetrics: spec §11 serves /metrics (Prometheus text format)
// on the admin listener, next to /livez and /readyz.
func TestAdminMetrics(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	r := do(t, http.MethodGet, s.Admin+"/metrics", gatewaytest.AdminToken, nil)
	wantStatus(t, r, http.StatusOK)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type: got %q, want text/plain (Prometheus text format)", ct)
	}
	if !strings.Contains(string(r.body), "# TYPE ") {
		t.Errorf("body is not Prometheus text format: %.200s", r.body)
	}
}
