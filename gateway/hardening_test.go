package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// The smaller findings of a hardening probe, each over a real server.
func TestHardeningRoundTwo(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	p := s.NewPartner(t, "partner")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	key := p.SandboxKey
	rawCreate := func(body string, headers ...string) *response {
		return do(t, http.MethodPost, s.URL+intentPath, key, body, headers...)
	}
	valid := `"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1000,"rate":0.0006,"amountDirection":"source"`

	t.Run("invalid UTF-8 in a JSON string", func(t *testing.T) {
		before := s.Log.LastSeq()
		r := rawCreate(`{` + valid + `,"chatMetadata":{"conversationId":"a` + "\xed\xa0\x80" + `b"}}`)
		wantDetailsNames(t, wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR"), "chatMetadata.conversationId")
		if s.Log.LastSeq() != before {
			t.Error("a refused create was logged")
		}
	})

	t.Run("XML declaration not at the start", func(t *testing.T) {
		instr := fxInstr("NGN", "USDT", "1000", "0.0006", "SELL")
		for _, body := range []string{
			"\n  " + `<?xml version="1.0"?>` + instr,
			`<?xml version="1.0"?><?xml version="1.0"?>` + instr,
			strings.Replace(instr, "<CcyPair>", `<?xml version="1.0"?><CcyPair>`, 1),
		} {
			before := s.Log.LastSeq()
			fxReject(t, fxCall(t, s, http.MethodPost, "/trades", key, body), http.StatusBadRequest, "VALIDATION_ERROR")
			if s.Log.LastSeq() != before {
				t.Errorf("a trade was logged for %q", body)
			}
		}
	})

	t.Run("only the exact Bearer form", func(t *testing.T) {
		for _, auth := range []string{
			"Bearer " + key + "\u00a0", "Bearer  " + key, "Bearer\t" + key, "Bearer " + key + " x", "Bearer " + key + "\u200b",
			"Basic " + key, key,
		} {
			r := do(t, http.MethodGet, s.URL+"/api/v1/partners/balances", "", nil, "Authorization", auth, "x-service-source", "t")
			wantError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		}
		r := do(t, http.MethodGet, s.URL+"/api/v1/partners/balances", "", nil, "Authorization", "bearer "+key, "x-service-source", "t")
		wantStatus(t, r, http.StatusOK)
	})

	t.Run("repeated query parameters refused everywhere", func(t *testing.T) {
		r := do(t, http.MethodGet, s.URL+"/api/v1/partners/marketplace/rates/stream?from=NGN&to=USDT&from=GHS", key, nil)
		wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		for _, path := range []string{"/rates/makers?from=NGN&to=USDT&to=USDT", "/listings?page=0&page=1"} {
			fxReject(t, fxCall(t, s, http.MethodGet, path, key, ""), http.StatusBadRequest, "VALIDATION_ERROR")
		}
		for _, path := range []string{"/admin/v1/pools?mode=live&mode=sandbox", "/admin/v1/ledger/check?mode=live&mode=live"} {
			wantError(t, admin(t, s, http.MethodGet, path, nil), http.StatusBadRequest, "VALIDATION_ERROR")
		}
	})

	t.Run("nil UUID is no id", func(t *testing.T) {
		const nilUUID = "00000000-0000-0000-0000-000000000000"
		r := rawCreate(`{` + valid + `,"listingId":"` + nilUUID + `"}`)
		wantDetailsNames(t, wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR"), "listingId")
		r = admin(t, s, http.MethodPost, "/admin/v1/pools", map[string]any{"mode": "sandbox", "name": "x",
			"source": "NGN", "destination": "USDT", "rate": n("0.0006"), "ownerClientId": nilUUID})
		wantError(t, r, http.StatusNotFound, "NOT_FOUND")
		for _, name := range []string{"", "   "} {
			r = admin(t, s, http.MethodPost, "/admin/v1/pools", map[string]any{"mode": "sandbox", "name": name,
				"source": "NGN", "destination": "USDT", "rate": n("0.0006")})
			wantDetailsNames(t, wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR"), "name")
		}
	})
}
