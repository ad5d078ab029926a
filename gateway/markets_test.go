package gateway_test

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/oja-exchange/oja/client/fxmsg"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// TestPairBounds: a quote whose total source amount is outside its pair's
// bounds is 422 AMOUNT_OUT_OF_RANGE naming them, in JSON and XML, whichever
// side the amount is on, and reserves nothing.
func TestPairBounds(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	pool := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	newPool(t, s, engine.ModeSandbox, gatewaytest.GHSUSDT, "accra", "0.0625", "1000")
	key := partner.SandboxKey
	cases := []struct {
		name          string
		body          map[string]any
		min, max, cur string
	}{
		{"below the NGN minimum", quoteRequest("NGN", "USDT", "999.99", "0.0006", "source"), "1000", "500000000", "NGN"},
		{"above the NGN maximum", quoteRequest("NGN", "USDT", "500000000.01", "0.0006", "source"), "1000", "500000000", "NGN"},
		{"a destination amount that costs less than the minimum", quoteRequest("NGN", "USDT", "0.6", "0.0006", "destination"),
			"1000", "500000000", "NGN"},
		{"below the GHS minimum", quoteRequest("GHS", "USDT", "9.99", "0.06", "source"), "10", "5000000", "GHS"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodPost, s.URL+intentPath, key, tc.body)
			details := wantError(t, r, http.StatusUnprocessableEntity, "AMOUNT_OUT_OF_RANGE")
			wantDetailsNames(t, details, "minimum", "maximum", "currency")
			wantNumber(t, details, "minimum", tc.min)
			wantNumber(t, details, "maximum", tc.max)
			if details["currency"] != tc.cur {
				t.Errorf("currency: got %v, want %s", details["currency"], tc.cur)
			}
		})
	}
	t.Run("XML", func(t *testing.T) {
		r := fxCall(t, s, http.MethodPost, "/trades", key, fxInstr("NGN", "USDT", "999.99", "0.0006", "SELL"))
		m := fxReject(t, r, http.StatusUnprocessableEntity, "AMOUNT_OUT_OF_RANGE")
		if !strings.Contains(m.Rsn.RsnDesc, "minimum: 1000") || !strings.Contains(m.Rsn.RsnDesc, "currency: NGN") {
			t.Errorf("RsnDesc %q does not name the bounds", m.Rsn.RsnDesc)
		}
	})
	// 1,000 NGN (exactly the minimum) buys 0.625 USDT: nothing before it
	// was reserved.
	wantOK(t, do(t, http.MethodPost, s.URL+intentPath, key, quoteRequest("NGN", "USDT", "1000", "0.0006", "source")))
	wantNumber(t, syncPool(t, s, pool.ID.String()), "available", "999.375")
}

// TestConfiguredMarketsMessages: INVALID_CURRENCY and INVALID_CURRENCY_PAIR
// name the markets in force, in JSON, XML and the rate stream; pairs of
// the default markets that are not configured take no quotes.
func TestConfiguredMarketsMessages(t *testing.T) {
	t.Parallel()
	cfg, err := engine.ParseMarketsConfig([]byte(`{
	 "currencies": [{"code":"NGN","kind":"fiat","minorUnits":2}, {"code":"GHS","kind":"fiat","minorUnits":2},
	   {"code":"USDT","kind":"token","minorUnits":6,"chains":["TRON","BSC"],"defaultChain":"BSC"}],
	 "pairs": [{"source":"GHS","destination":"USDT"}, {"source":"GHS","destination":"NGN"}],
	 "collectionAccounts": {"GHS":{"accountName":"Collections GHS","accountNumber":"77","bankName":"Bank GH"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := gatewaytest.Start(t, gatewaytest.Options{Markets: cfg})
	partner := s.NewPartner(t, "partner")
	key := partner.SandboxKey
	const sources, pairs = "supported source currencies are GHS", "supported pairs are GHS/USDT, GHS/NGN"

	message := func(t *testing.T, body map[string]any) string {
		t.Helper()
		msg, _ := body["message"].(string)
		return msg
	}
	r := do(t, http.MethodPost, s.URL+intentPath, key, quoteRequest("NGN", "USDT", "1000", "0.0006", "source"))
	wantError(t, r, http.StatusBadRequest, "INVALID_CURRENCY")
	if got := message(t, object(t, r)); got != sources {
		t.Errorf("JSON INVALID_CURRENCY: %q, want %q", got, sources)
	}
	r = do(t, http.MethodPost, s.URL+intentPath, key, quoteRequest("GHS", "GHS", "100", "1", "source"))
	wantError(t, r, http.StatusBadRequest, "INVALID_CURRENCY_PAIR")
	if got := message(t, object(t, r)); got != pairs {
		t.Errorf("JSON INVALID_CURRENCY_PAIR: %q, want %q", got, pairs)
	}
	x := fxReject(t, fxCall(t, s, http.MethodPost, "/trades", key, fxInstr("NGN", "USDT", "1000", "0.0006", "SELL")),
		http.StatusBadRequest, "INVALID_CURRENCY")
	if x.Rsn.RsnDesc != sources {
		t.Errorf("XML INVALID_CURRENCY: %q, want %q", x.Rsn.RsnDesc, sources)
	}
	resp := streamRequest(t, streamHTTP(t), s, key, "from=NGN&to=USDT")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `{"code":"INVALID_CURRENCY_PAIR","message":"` + pairs + `"}`; resp.StatusCode != http.StatusBadRequest || string(body) != want {
		t.Errorf("stream: %d %s, want 400 %s", resp.StatusCode, body, want)
	}
	// The token's configured chains and default: BSC by default, TRON
	// allowed, ETHEREUM (a default chain of USDT) refused.
	newPool(t, s, engine.ModeSandbox, engine.Pair{Source: engine.CurrencyGHS, Destination: engine.CurrencyUSDT}, "accra", "0.0625", "100")
	q := mustCreateQuote(t, s, key, quoteRequest("GHS", "USDT", "100", "0.06", "source"))
	if q["chain"] != "BSC" {
		t.Errorf("chain: got %v, want the configured default BSC", q["chain"])
	}
	r = do(t, http.MethodPost, s.URL+intentPath, key, with(quoteRequest("GHS", "USDT", "100", "0.06", "source"), "chain", "ETHEREUM"))
	details := wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
	if details["chain"] != "USDT settles on TRON, BSC" {
		t.Errorf("chain problem: %v", details["chain"])
	}
}

// TestOffRampRates: with markets.example.json, USDT→NGN at 1612.5 (a rate
// a 64-bit rate could not hold) is quoted, split and rendered exactly, in
// JSON, XML and the rate stream.
func TestOffRampRates(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../markets.example.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := engine.ParseMarketsConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	s := gatewaytest.Start(t, gatewaytest.Options{Markets: cfg})
	partner := s.NewPartner(t, "partner")
	usdtNGN := engine.Pair{Source: engine.CurrencyUSDT, Destination: engine.CurrencyNGN}
	newPool(t, s, engine.ModeSandbox, usdtNGN, "lagos", "1612.5", "100000")
	newPool(t, s, engine.ModeSandbox, usdtNGN, "ikeja", "1611.999999999999999999", "1000000")
	key := partner.SandboxKey

	// 100 USDT: 62.01551 at 1612.5 buys 100,000.009875 NGN, floored to
	// lagos's whole 100,000 (the most that stays within it); the rest,
	// 37.98449 USDT, buys 61,230.9978… NGN at the second pool, floored.
	q := mustCreateQuote(t, s, key, quoteRequest("USDT", "NGN", "100", "1600", "source"))
	allocations := getArray(t, q, "allocationResult.allocations")
	if len(allocations) != 2 {
		t.Fatalf("allocations: %v", allocations)
	}
	wantNumber(t, allocations[0], "rate", "1612.5")
	wantNumber(t, allocations[0], "sourceAmount", "62.01551")
	wantNumber(t, allocations[0], "allocatedAmount", "100000")
	wantNumber(t, allocations[1], "rate", "1611.999999999999999999")
	wantNumber(t, allocations[1], "sourceAmount", "37.98449")
	wantNumber(t, allocations[1], "allocatedAmount", "61230.99")
	wantNumber(t, q, "totalDestinationAmount", "161230.99")
	// 161230.99 ÷ 100 = 1612.3099 exactly.
	wantNumber(t, q, "allocationResult.weightedAverageRate", "1612.3099")

	// In XML (lagos is all reserved now): 1 USDT buys 1611.99 NGN; the
	// makers' rate is the best pool's, with its 18 places.
	m := fxCreate(t, s, key, fxInstr("USDT", "NGN", "1", "1611", "SELL"))
	fxWantDecimal(t, "XchgRate", m.XchgRate, "1611.99")
	makers := &fxmsg.FxTradStsAndDtls{}
	fxOK(t, fxCall(t, s, http.MethodGet, "/rates/makers?from=USDT&to=NGN", key, ""), fxmsg.TypeTradeInstruction, makers)
	fxWantDecimal(t, "XchgRate", makers.XchgRate, "1611.999999999999999999")
	// The listings of the configured pair: both pools, best rate first.
	listings := &fxmsg.FndPrcgPsptRpt{}
	fxOK(t, fxCall(t, s, http.MethodGet, "/listings?source=USDT&destination=NGN", key, ""), fxmsg.TypeListings, listings)
	if len(listings.Listgs) != 2 {
		t.Fatalf("USDT→NGN listings: %+v", listings.Listgs)
	}
	fxWantDecimal(t, "first listing's XchgRate", listings.Listgs[0].XchgRate, "1612.5")

	// The stream shows the consensus rate of the pair exactly.
	c := openStream(t, streamHTTP(t), s, key, "from=USDT&to=NGN")
	defer c.close()
	u := rateUpdate(t, c.nextEvent("rate_update", streamPrompt))
	wantRate(t, u, "1611.999999999999999999")
}
