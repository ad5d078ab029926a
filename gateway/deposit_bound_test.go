package gateway_test

import (
	"net/http"
	"testing"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// A deposit that would take a balance over engine.AmountMax is refused
// before anything is logged (422 AMOUNT_OUT_OF_RANGE), for pools and
// wallets alike, and what was acknowledged replays: the service restarts.
// (a probe found three deposits of 1e9 USDT were acknowledged and the next
// start refused the log.)
func TestDepositBoundMatchesReplay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := gatewaytest.Start(t, gatewaytest.Options{Dir: dir})
	partner := s.NewPartner(t, "partner")
	p := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "250000")
	poolID := p.ID.String()
	usdt := wallet(t, partner, engine.ModeSandbox, engine.CurrencyUSDT)
	depositPool := func(amount string) *response {
		return admin(t, s, http.MethodPost, "/admin/v1/pools/"+poolID+"/deposit", map[string]any{"amount": n(amount)})
	}
	depositWallet := func(amount string) *response {
		return admin(t, s, http.MethodPost, "/admin/v1/accounts/"+usdt+"/deposit", map[string]any{"amount": n(amount), "reference": nextRef()})
	}

	before := s.Log.LastSeq()
	wantError(t, depositPool("999999999"), http.StatusUnprocessableEntity, "AMOUNT_OUT_OF_RANGE")
	if after := s.Log.LastSeq(); after != before {
		t.Fatalf("a refused deposit was logged: last seq %d → %d", before, after)
	}
	wantNumber(t, pool(t, s, poolID), "balance", "250000")
	// Up to the bound exactly is fine: 250000 + 999750000 = 10^9 USDT = 10^15 minor units.
	wantNumber(t, wantOK(t, depositPool("999750000")), "balance", "1000000000")
	wantError(t, depositPool("0.000001"), http.StatusUnprocessableEntity, "AMOUNT_OUT_OF_RANGE")

	wantNumber(t, wantOK(t, depositWallet("1000000000")), "balance", "1000000000")
	for range 2 {
		wantError(t, depositWallet("1000000000"), http.StatusUnprocessableEntity, "AMOUNT_OUT_OF_RANGE")
	}
	wantError(t, depositWallet("0.000001"), http.StatusUnprocessableEntity, "AMOUNT_OUT_OF_RANGE")
	s.Stop()
	s = gatewaytest.Start(t, gatewaytest.Options{Dir: dir})
	wantNumber(t, pool(t, s, poolID), "balance", "1000000000")
	b := wantOK(t, admin(t, s, http.MethodGet, "/admin/v1/ledger/check?mode=sandbox", nil))
	if b["ok"] != true {
		t.Errorf("ledger after restart: %v", b)
	}
}
