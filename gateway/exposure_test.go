package gateway_test

import (
	"net/http"
	"testing"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// One key may not reserve more than --max-key-share of a
// pair's pool liquidity with its open quotes; other keys still get theirs,
// the share comes back when a quote ends, and a restart keeps the count.
func TestMaxKeyShare(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := gatewaytest.Options{Dir: dir, MaxKeyShare: 500_000}
	s := gatewaytest.Start(t, opts)
	hog, other := s.NewPartner(t, "hog"), s.NewPartner(t, "other")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "600")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "beta", "0.000625", "400")
	buy := func(usdt string) map[string]any { return quoteRequest("NGN", "USDT", usdt, "0.0006", "destination") }

	first := mustCreateQuote(t, s, hog.SandboxKey, buy("400"))
	r := do(t, http.MethodPost, s.URL+intentPath, hog.SandboxKey, buy("200"))
	details := wantError(t, r, http.StatusUnprocessableEntity, "EXPOSURE_LIMIT")
	if details["pair"] != "NGN/USDT" {
		t.Errorf("details.pair %v, want NGN/USDT", details["pair"])
	}
	wantNumber(t, details, "maxShare", "0.5")
	wantNumber(t, details, "reserved", "400")
	wantNumber(t, details, "requested", "200")
	mustCreateQuote(t, s, hog.SandboxKey, buy("100")) // 500 of 1000: exactly the share
	// Another key is not affected by the hog's share.
	mustCreateQuote(t, s, other.SandboxKey, buy("400"))
	// The same refusal in XML.
	fxReject(t, fxCall(t, s, http.MethodPost, "/trades", hog.SandboxKey, fxInstr("NGN", "USDT", "1", "0.0006", "BUY")),
		http.StatusUnprocessableEntity, "EXPOSURE_LIMIT")

	// The share comes back when a quote ends.
	wantOK(t, transition(t, s, hog.SandboxKey, getString(t, first, "quoteId"), "cancel", nil))
	mustCreateQuote(t, s, hog.SandboxKey, buy("300"))

	// A restart rebuilds each key's reservations from the open quotes:
	// the hog holds 400 of 1000.
	s.Stop()
	s = gatewaytest.Start(t, opts)
	wantError(t, do(t, http.MethodPost, s.URL+intentPath, hog.SandboxKey, buy("100.000001")),
		http.StatusUnprocessableEntity, "EXPOSURE_LIMIT")
	mustCreateQuote(t, s, hog.SandboxKey, buy("100"))
}
