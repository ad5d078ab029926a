package gateway_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// balancesOf checks a balances answer (an array of Balance, spec §3)
// and returns it by account id.
func balancesOf(t testing.TB, r *response) map[string]map[string]any {
	t.Helper()
	wantStatus(t, r, http.StatusOK)
	out := map[string]map[string]any{}
	for i, v := range array(t, r) {
		b, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("balance %d: got %T, want an object", i, v)
		}
		wantKeys(t, "balance", b, "accountId", "currency", "balance", "availableBalance")
		id := wantUUID(t, b, "accountId")
		number(t, b, "balance")
		number(t, b, "availableBalance")
		if _, dup := out[id]; dup {
			t.Errorf("account %s listed twice", id)
		}
		out[id] = b
	}
	return out
}

func listBalances(t testing.TB, s *gatewaytest.Server, key string) map[string]map[string]any {
	t.Helper()
	return balancesOf(t, do(t, http.MethodGet, s.URL+balancesPath, key, nil, "x-service-source", "balances-test"))
}

func TestBalancesServiceSource(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	cases := []struct {
		name    string
		headers []string
		status  int
		code    string
	}{
		{"absent", nil, 400, "MISSING_HEADER"},
		{"empty", []string{"x-service-source", ""}, 400, "MISSING_HEADER"},
		{"over 128 characters", []string{"x-service-source", strings.Repeat("s", 129)}, 400, "VALIDATION_ERROR"},
		{"present", []string{"x-service-source", "treasury-dashboard"}, 200, ""},
		{"other spelling", []string{"X-Service-Source", "treasury-dashboard"}, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodGet, s.URL+balancesPath, partner.SandboxKey, nil, tc.headers...)
			if tc.status == http.StatusOK {
				if got := len(balancesOf(t, r)); got != 3 {
					t.Errorf("balances: got %d, want 3", got)
				}
				return
			}
			wantError(t, r, tc.status, tc.code)
		})
	}
	// Unauthenticated requests are refused before the header is looked at.
	wantError(t, do(t, http.MethodGet, s.URL+balancesPath, "", nil), http.StatusUnauthorized, "UNAUTHORIZED")
}

func TestBalancesWallets(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	stranger := s.NewPartner(t, "stranger")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")

	for _, mode := range []engine.Mode{engine.ModeSandbox, engine.ModeLive} {
		t.Run("new client, "+mode.String(), func(t *testing.T) {
			key := partner.SandboxKey
			if mode == engine.ModeLive {
				key = partner.LiveKey
			}
			got := listBalances(t, s, key)
			if len(got) != 3 {
				t.Fatalf("balances: got %d, want one wallet per currency (3)", len(got))
			}
			for _, c := range []engine.Currency{engine.CurrencyNGN, engine.CurrencyGHS, engine.CurrencyUSDT} {
				b, ok := got[wallet(t, partner, mode, c)]
				if !ok {
					t.Errorf("%s %s wallet not listed", mode, c)
					continue
				}
				if b["currency"] != c.String() {
					t.Errorf("%s wallet currency: got %v", c, b["currency"])
				}
				wantNumber(t, b, "balance", "0")
				wantNumber(t, b, "availableBalance", "0")
			}
		})
	}

	// A completed quote settles to the USDT wallet; an admin deposit
	// credits the NGN wallet.
	q := mustCreateQuote(t, s, partner.SandboxKey, quoteRequest("NGN", "USDT", "1000", "0.000625", "source"))
	mustAccept(t, s, partner.SandboxKey, q)
	wantOK(t, transition(t, s, partner.SandboxKey, getString(t, q, "quoteId"), "complete", nil))
	ngn := wallet(t, partner, engine.ModeSandbox, engine.CurrencyNGN)
	wantOK(t, admin(t, s, http.MethodPost, "/admin/v1/accounts/"+ngn+"/deposit", map[string]any{"amount": n("500.5"), "reference": nextRef()}))
	syncTreasury(t, s, "sandbox")

	want := map[engine.Currency]string{engine.CurrencyUSDT: "0.625", engine.CurrencyNGN: "500.5", engine.CurrencyGHS: "0"}
	got := listBalances(t, s, partner.SandboxKey)
	for c, amount := range want {
		b := got[wallet(t, partner, engine.ModeSandbox, c)]
		if b == nil {
			t.Fatalf("%s wallet missing", c)
		}
		wantNumber(t, b, "balance", amount)
		wantNumber(t, b, "availableBalance", amount)
	}
	// The live wallets and the stranger's are untouched.
	for _, b := range listBalances(t, s, partner.LiveKey) {
		wantNumber(t, b, "balance", "0")
	}
	for _, b := range listBalances(t, s, stranger.SandboxKey) {
		wantNumber(t, b, "balance", "0")
	}
}

func TestBalanceByAccount(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	stranger := s.NewPartner(t, "stranger")
	notOwned := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	key := partner.SandboxKey
	own := wallet(t, partner, engine.ModeSandbox, engine.CurrencyGHS)
	cases := []struct {
		name    string
		account string
		status  int
		code    string
	}{
		{"own wallet", own, 200, ""},
		{"another client's wallet", wallet(t, stranger, engine.ModeSandbox, engine.CurrencyGHS), 404, "ACCOUNT_NOT_FOUND"},
		{"own wallet of the other mode", wallet(t, partner, engine.ModeLive, engine.CurrencyGHS), 404, "ACCOUNT_NOT_FOUND"},
		{"a pool account not owned", notOwned.Liquidity.ID.String(), 404, "ACCOUNT_NOT_FOUND"},
		{"a clearing account", engine.ClearingAccountID(engine.ModeSandbox, engine.CurrencyNGN).String(), 404,
			"ACCOUNT_NOT_FOUND"},
		{"unknown account", randomUUID, 404, "ACCOUNT_NOT_FOUND"},
		{"not a uuid", "wallet-1", 400, "VALIDATION_ERROR"},
		{"upper-case words", "GHS", 400, "VALIDATION_ERROR"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodGet, s.URL+balancesPath+"/"+tc.account, key, nil)
			if tc.status != http.StatusOK {
				wantError(t, r, tc.status, tc.code)
				return
			}
			got := balancesOf(t, r)
			if len(got) != 1 || got[tc.account] == nil {
				t.Fatalf("balances: got %v, want exactly account %s", got, tc.account)
			}
			if got[tc.account]["currency"] != "GHS" {
				t.Errorf("currency: got %v, want GHS", got[tc.account]["currency"])
			}
		})
	}
}

func TestBalancesByCurrency(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	cases := []struct {
		currency string
		status   int
		code     string
	}{
		{"NGN", 200, ""},
		{"GHS", 200, ""},
		{"USDT", 200, ""},
		{"XYZ", 400, "INVALID_CURRENCY"},
		{"usdt", 400, "INVALID_CURRENCY"},
		{"EUR", 400, "INVALID_CURRENCY"},
	}
	for _, tc := range cases {
		t.Run(tc.currency, func(t *testing.T) {
			r := do(t, http.MethodGet, s.URL+balancesPath+"/currency/"+tc.currency, partner.SandboxKey, nil)
			if tc.status != http.StatusOK {
				wantError(t, r, tc.status, tc.code)
				return
			}
			got := balancesOf(t, r)
			c, _ := engine.ParseCurrency(tc.currency)
			id := wallet(t, partner, engine.ModeSandbox, c)
			if len(got) != 1 || got[id] == nil {
				t.Fatalf("balances: got %v, want the %s wallet %s only", got, tc.currency, id)
			}
			if got[id]["currency"] != tc.currency {
				t.Errorf("currency: got %v, want %s", got[id]["currency"], tc.currency)
			}
		})
	}
}

func TestBalancesOwnedPool(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	owner := s.NewPartner(t, "maker")
	stranger := s.NewPartner(t, "stranger")
	taker := s.NewPartner(t, "taker")
	created := wantCreated(t, admin(t, s, http.MethodPost, "/admin/v1/pools", map[string]any{
		"mode": "sandbox", "name": "maker-ngn", "source": "NGN", "destination": "USDT",
		"rate": n("0.000625"), "ownerClientId": owner.Client.ID.String(),
	}))
	poolID := getString(t, created, "poolId")
	liquidity := getString(t, created, "poolAccountId")
	proceeds := getString(t, created, "proceedsAccountId")
	wantOK(t, admin(t, s, http.MethodPost, "/admin/v1/pools/"+poolID+"/deposit", map[string]any{"amount": n("100")}))

	// A trade on the pool: proceeds 1000 NGN, liquidity 100 − 0.625 USDT.
	q := mustCreateQuote(t, s, taker.SandboxKey, quoteRequest("NGN", "USDT", "1000", "0.000625", "source"))
	mustAccept(t, s, taker.SandboxKey, q)
	wantOK(t, transition(t, s, taker.SandboxKey, getString(t, q, "quoteId"), "complete", nil))
	syncPool(t, s, poolID)

	got := listBalances(t, s, owner.SandboxKey)
	if len(got) != 5 {
		t.Errorf("balances: got %d, want 3 wallets + 2 pool accounts", len(got))
	}
	for _, want := range []struct {
		account, currency, balance string
	}{
		{liquidity, "USDT", "99.375"},
		{proceeds, "NGN", "1000"},
	} {
		b := got[want.account]
		if b == nil {
			t.Errorf("pool account %s not listed", want.account)
			continue
		}
		if b["currency"] != want.currency {
			t.Errorf("%s currency: got %v, want %s", want.account, b["currency"], want.currency)
		}
		wantNumber(t, b, "balance", want.balance)
		wantNumber(t, b, "availableBalance", want.balance)
		one := balancesOf(t, do(t, http.MethodGet, s.URL+balancesPath+"/"+want.account, owner.SandboxKey, nil))
		if len(one) != 1 || one[want.account] == nil {
			t.Errorf("by id %s: got %v, want that account only", want.account, one)
		}
		wantError(t, do(t, http.MethodGet, s.URL+balancesPath+"/"+want.account, stranger.SandboxKey, nil),
			http.StatusNotFound, "ACCOUNT_NOT_FOUND")
		wantError(t, do(t, http.MethodGet, s.URL+balancesPath+"/"+want.account, owner.LiveKey, nil),
			http.StatusNotFound, "ACCOUNT_NOT_FOUND")
	}
	usdt := balancesOf(t, do(t, http.MethodGet, s.URL+balancesPath+"/currency/USDT", owner.SandboxKey, nil))
	ids := make([]string, 0, len(usdt))
	for id := range usdt {
		ids = append(ids, id)
	}
	wantIDs := []string{liquidity, wallet(t, owner, engine.ModeSandbox, engine.CurrencyUSDT)}
	if !slices.Equal(sortedStrings(ids), sortedStrings(wantIDs)) {
		t.Errorf("USDT accounts: got %v, want %v", ids, wantIDs)
	}
	if got := len(listBalances(t, s, owner.LiveKey)); got != 3 {
		t.Errorf("live balances: got %d, want the 3 live wallets only", got)
	}
	if got := len(listBalances(t, s, stranger.SandboxKey)); got != 3 {
		t.Errorf("stranger's balances: got %d, want its 3 wallets only", got)
	}
}
