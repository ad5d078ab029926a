package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/client/fxmsg"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
	"github.com/oja-exchange/oja/internal/poll"
)

// Tests of the XML FX API (spec §7) through a real server on loopback.

const sandbox = engine.ModeSandbox

// fxMarket is a server with one partner and one sandbox NGN/USDT pool at
// 0.000625 (1 USDT = 1,600 NGN) holding 1,000 USDT.
func fxMarket(t *testing.T, opts gatewaytest.Options) (*gatewaytest.Server, gatewaytest.Partner, *engine.Pool) {
	t.Helper()
	s := gatewaytest.Start(t, opts)
	p := s.NewPartner(t, "acme")
	pool := newPool(t, s, sandbox, gatewaytest.NGNUSDT, "Lagos Desk", "0.000625", "1000")
	return s, p, pool
}

func TestFXInitiateSell(t *testing.T) {
	s, p, pool := fxMarket(t, gatewaytest.Options{})
	m := fxCreate(t, s, p.SandboxKey, fxInstr("NGN", "USDT", "160000", "0.0006", "SELL"))
	if !uuidPattern.MatchString(m.UnqTxIdr.TxId) {
		t.Errorf("TxId: got %q, want a UUID", m.UnqTxIdr.TxId)
	}
	if m.TradSts != (fxmsg.TradeStatus{Sts: "NEWT"}) {
		t.Errorf("TradSts: got %+v, want NEWT", m.TradSts)
	}
	if m.CcyPair != (fxmsg.CurrencyPair{BaseCcy: "NGN", QtdCcy: "USDT"}) {
		t.Errorf("CcyPair: got %+v", m.CcyPair)
	}
	fxWantDecimal(t, "XchgRate", m.XchgRate, "0.000625")
	fxWantAmount(t, "TradgCcyAmt", m.TradAmts.TradgCcyAmt, "160000", "NGN")
	if m.TradAmts.SttlmCcyAmt == nil {
		t.Fatalf("SttlmCcyAmt missing")
	}
	fxWantAmount(t, "SttlmCcyAmt", *m.TradAmts.SttlmCcyAmt, "100", "USDT")
	fxWantAmount(t, "CntrValCcyAmt", m.TradAmts.CntrValCcyAmt, "160000", "NGN")
	fxWantAmount(t, "TtlSttlmAmt", m.AllcnDtls.TtlSttlmAmt, "100", "USDT")
	fxWantDecimal(t, "WtdAvrgRate", m.AllcnDtls.WtdAvrgRate, "0.000625")
	if m.TTL < 299 || m.TTL > 300 {
		t.Errorf("TTL: got %d, want 300 s less the time since creation", m.TTL)
	}
	if m.OprgMd != "sandbox" {
		t.Errorf("OprgMd: got %q", m.OprgMd)
	}
	if m.SttlmInstr != nil {
		t.Errorf("SttlmInstr present before accept: %+v", m.SttlmInstr)
	}

	// The trade is a quote: same id, status, amounts; liquidity held.
	q := fxJSONQuote(t, s, p.SandboxKey, m.UnqTxIdr.TxId)
	if got := getString(t, q, "status"); got != "pending" {
		t.Errorf("JSON status: got %s", got)
	}
	if got := number(t, q, "totalDestinationAmount"); !got.Equal(decimal.RequireFromString("100")) {
		t.Errorf("JSON totalDestinationAmount: got %s", got)
	}
	fxPoolUnchanged(t, s, pool.ID, "1000", "900")
}

func TestFXInitiateBuySplit(t *testing.T) {
	s, p, _ := fxMarket(t, gatewaytest.Options{})
	newPool(t, s, sandbox, gatewaytest.NGNUSDT, "Ikeja Desk", "0.0005", "1000")
	// 1,200 USDT: 1,000 from the better pool at 0.000625 (1,600,000 NGN),
	// 200 from the other at 0.0005 (400,000 NGN).
	m := fxCreate(t, s, p.SandboxKey, fxInstr("NGN", "USDT", "1200", "0.0005", "BUY"))
	fxWantAmount(t, "TradgCcyAmt", m.TradAmts.TradgCcyAmt, "1200", "USDT")
	fxWantAmount(t, "SttlmCcyAmt", *m.TradAmts.SttlmCcyAmt, "1200", "USDT")
	fxWantAmount(t, "CntrValCcyAmt", m.TradAmts.CntrValCcyAmt, "2000000", "NGN")
	fxWantDecimal(t, "WtdAvrgRate", m.AllcnDtls.WtdAvrgRate, "0.0006")
	fxWantDecimal(t, "XchgRate", m.XchgRate, "0.0006")
	q := fxJSONQuote(t, s, p.SandboxKey, m.UnqTxIdr.TxId)
	if got := len(get(t, q, "allocationResult.allocations").([]any)); got != 2 {
		t.Errorf("allocations: got %d, want 2", got)
	}
	if got := getString(t, q, "chain"); got != "TRON" {
		t.Errorf("chain: got %s, want TRON (the USDT default)", got)
	}
}

// TestFXInitiateRefusals: every refusal of a create, with the same status
// and code as the equivalent JSON request, and nothing held.
func TestFXInitiateRefusals(t *testing.T) {
	// Without bounds, so a dust trade reaches the dust rule (TestPairBounds
	// has the bounds' refusals).
	s, p, pool := fxMarket(t, gatewaytest.Options{Markets: gatewaytest.WideMarkets()})
	newPool(t, s, sandbox, gatewaytest.NGNGHS, "Accra Desk", "0.0075", "10")
	for _, c := range []struct {
		name   string
		body   string
		json   map[string]any // the same request in JSON, when there is one
		status int
		code   string
		detail string // a details name RsnDesc must mention
	}{
		{"unsupported source", fxInstr("USD", "USDT", "100", "0.0006", "SELL"),
			jsonCreate("USD", "USDT", "100", "0.0006", "source"), 400, "INVALID_CURRENCY", ""},
		{"token source", fxInstr("USDT", "NGN", "100", "1600", "SELL"),
			jsonCreate("USDT", "NGN", "100", "1600", "source"), 400, "INVALID_CURRENCY", ""},
		{"lower case", fxInstr("ngn", "USDT", "100", "0.0006", "SELL"),
			jsonCreate("ngn", "USDT", "100", "0.0006", "source"), 400, "INVALID_CURRENCY", ""},
		{"unsupported pair", fxInstr("GHS", "NGN", "100", "0.0006", "SELL"),
			jsonCreate("GHS", "NGN", "100", "0.0006", "source"), 400, "INVALID_CURRENCY_PAIR", ""},
		{"same currency", fxInstr("NGN", "NGN", "100", "1", "SELL"),
			jsonCreate("NGN", "NGN", "100", "1", "source"), 400, "INVALID_CURRENCY_PAIR", ""},
		{"unknown destination", fxInstr("NGN", "EUR", "100", "1", "SELL"),
			jsonCreate("NGN", "EUR", "100", "1", "source"), 400, "INVALID_CURRENCY_PAIR", ""},
		{"zero amount", fxInstr("NGN", "USDT", "0", "0.0006", "SELL"),
			jsonCreate("NGN", "USDT", "0", "0.0006", "source"), 400, "VALIDATION_ERROR", "TradAmts/TradgCcyAmt"},
		{"negative amount", fxInstr("NGN", "USDT", "-5", "0.0006", "SELL"),
			jsonCreate("NGN", "USDT", "-5", "0.0006", "source"), 400, "VALIDATION_ERROR", "TradAmts/TradgCcyAmt"},
		{"over-precise NGN", fxInstr("NGN", "USDT", "100.001", "0.0006", "SELL"),
			jsonCreate("NGN", "USDT", "100.001", "0.0006", "source"), 400, "VALIDATION_ERROR", "TradAmts/TradgCcyAmt"},
		{"over-precise USDT", fxInstr("NGN", "USDT", "1.0000001", "0.0006", "BUY"),
			jsonCreate("NGN", "USDT", "1.0000001", "0.0006", "destination"), 400, "VALIDATION_ERROR", "TradAmts/TradgCcyAmt"},
		{"too large", fxInstr("NGN", "USDT", "99999999999999999", "0.0006", "SELL"),
			jsonCreate("NGN", "USDT", "99999999999999999", "0.0006", "source"), 400, "VALIDATION_ERROR", "TradAmts/TradgCcyAmt"},
		{"exponent amount", fxInstr("NGN", "USDT", "1e5", "0.0006", "SELL"), nil, 400, "VALIDATION_ERROR", "TradAmts/TradgCcyAmt"},
		{"text amount", fxInstr("NGN", "USDT", "lots", "0.0006", "SELL"), nil, 400, "VALIDATION_ERROR", "TradAmts/TradgCcyAmt"},
		{"empty amount", fxInstr("NGN", "USDT", "", "0.0006", "SELL"), nil, 400, "VALIDATION_ERROR", "TradAmts/TradgCcyAmt"},
		{"zero rate", fxInstr("NGN", "USDT", "100", "0", "SELL"),
			jsonCreate("NGN", "USDT", "100", "0", "source"), 400, "VALIDATION_ERROR", "AgrdRate/XchgRate"},
		{"rate over 10^12", fxInstr("NGN", "USDT", "100", "1000000000000.000000000000000001", "SELL"),
			jsonCreate("NGN", "USDT", "100", "1000000000000.000000000000000001", "source"), 400, "VALIDATION_ERROR", "AgrdRate/XchgRate"},
		{"rate with 19 places", fxInstr("NGN", "USDT", "100", "0.0000000000000000001", "SELL"),
			jsonCreate("NGN", "USDT", "100", "0.0000000000000000001", "source"), 400, "VALIDATION_ERROR", "AgrdRate/XchgRate"},
		{"bad direction", fxInstr("NGN", "USDT", "100", "0.0006", "HOLD"),
			jsonCreate("NGN", "USDT", "100", "0.0006", "sideways"), 400, "VALIDATION_ERROR", "AmtDrctn"},
		{"lower-case direction", fxInstr("NGN", "USDT", "100", "0.0006", "sell"), nil, 400, "VALIDATION_ERROR", "AmtDrctn"},
		{"missing everything", `<FXTradInstr/>`, map[string]any{}, 400, "VALIDATION_ERROR", "CcyPair"},
		{"missing QtdCcy", `<FXTradInstr><CcyPair><BaseCcy>NGN</BaseCcy></CcyPair><TradAmts><TradgCcyAmt>1</TradgCcyAmt></TradAmts><AgrdRate><XchgRate>1</XchgRate></AgrdRate><AmtDrctn>SELL</AmtDrctn></FXTradInstr>`,
			nil, 400, "VALIDATION_ERROR", "CcyPair/QtdCcy"},
		{"unknown element", strings.Replace(fxInstr("NGN", "USDT", "100", "0.0006", "SELL"), "<AmtDrctn>", "<Memo>hi</Memo><AmtDrctn>", 1),
			nil, 400, "VALIDATION_ERROR", "Memo"},
		{"Ccy mismatch", strings.Replace(fxInstr("NGN", "USDT", "100", "0.0006", "SELL"), "<TradgCcyAmt>", `<TradgCcyAmt Ccy="USDT">`, 1),
			nil, 400, "VALIDATION_ERROR", "TradAmts/TradgCcyAmt/@Ccy"},
		{"no liquidity at rate", fxInstr("NGN", "USDT", "1600", "0.0007", "SELL"),
			jsonCreate("NGN", "USDT", "1600", "0.0007", "source"), 422, "INSUFFICIENT_LIQUIDITY", "fillable"},
		{"more than the pool", fxInstr("NGN", "USDT", "2000", "0.0006", "BUY"),
			jsonCreate("NGN", "USDT", "2000", "0.0006", "destination"), 422, "INSUFFICIENT_LIQUIDITY", "requested"},
		{"dust", fxInstr("NGN", "GHS", "0.01", "0.007", "SELL"),
			jsonCreate("NGN", "GHS", "0.01", "0.007", "source"), 422, "AMOUNT_TOO_SMALL", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := fxCall(t, s, http.MethodPost, "/trades", p.SandboxKey, c.body, "X-Request-Id", "req-"+strings.ReplaceAll(c.name, " ", "-"))
			m := fxReject(t, r, c.status, c.code)
			if want := "req-" + strings.ReplaceAll(c.name, " ", "-"); m.RltdRef.Ref != want {
				t.Errorf("Ref: got %q, want the request id %q", m.RltdRef.Ref, want)
			}
			if c.detail != "" && !strings.Contains(m.Rsn.RsnDesc, c.detail) {
				t.Errorf("RsnDesc %q does not name %s", m.Rsn.RsnDesc, c.detail)
			}
			if c.json != nil {
				status, body := fxJSON(t, http.MethodPost, s.URL+"/api/v1/partners/marketplace/intent", p.SandboxKey, c.json)
				if status != r.status || body["code"] != m.Rsn.RjctgPtyRsn {
					t.Errorf("JSON answers %d %v; XML %d %s", status, body["code"], r.status, m.Rsn.RjctgPtyRsn)
				}
			}
		})
	}
	fxPoolUnchanged(t, s, pool.ID, "1000", "1000")
}

func jsonCreate(source, destination, amount, rate, direction string) map[string]any {
	return map[string]any{"sourceCurrency": source, "destinationCurrency": destination,
		"amount": jsonNumber(amount), "rate": jsonNumber(rate), "amountDirection": direction}
}

// TestFXIdempotency: Idempotency-Key on XML creates, as in JSON (spec §6).
func TestFXIdempotency(t *testing.T) {
	s, p, pool := fxMarket(t, gatewaytest.Options{})
	body := fxInstr("NGN", "USDT", "16000", "0.0006", "SELL")
	first := fxCall(t, s, http.MethodPost, "/trades", p.SandboxKey, body, "Idempotency-Key", "order-1")
	a := &fxmsg.FXTradInstrRspn{}
	fxOK(t, first, fxmsg.TypeTradeInstruction, a)
	if first.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("first create marked as replayed")
	}
	// Accept it, then replay: the original answer (NEWT), nothing created.
	fxAccept(t, s, p.SandboxKey, a.UnqTxIdr.TxId, fxWalletAccept(wallet(t, p, sandbox, engine.CurrencyUSDT)))
	// Same meaning, other spelling: still the same request.
	respelled := strings.ReplaceAll(body, "\n  ", "") + "\n<!-- retry -->"
	again := fxCall(t, s, http.MethodPost, "/trades", p.SandboxKey, respelled, "Idempotency-Key", "order-1")
	b := &fxmsg.FXTradInstrRspn{}
	fxOK(t, again, fxmsg.TypeTradeInstruction, b)
	if again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("Idempotent-Replayed: got %q, want true", again.header.Get("Idempotent-Replayed"))
	}
	if b.UnqTxIdr != a.UnqTxIdr || b.TradSts.Sts != "NEWT" || b.TTL != 300 {
		t.Errorf("replay: got %+v, want the original answer %+v", b, a)
	}
	// Same key, other request: refused.
	r := fxCall(t, s, http.MethodPost, "/trades", p.SandboxKey, fxInstr("NGN", "USDT", "16001", "0.0006", "SELL"),
		"Idempotency-Key", "order-1")
	fxReject(t, r, http.StatusUnprocessableEntity, "IDEMPOTENCY_KEY_REUSED")
	// Keys are scoped to the client and mode, not to the API: the same key
	// on the JSON create is another request (another body), refused.
	r = fxDo(t, http.MethodPost, s.URL+"/api/v1/partners/marketplace/intent", p.SandboxKey, fxJSONType,
		`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":16000,"rate":0.0006,"amountDirection":"source"}`,
		"Idempotency-Key", "order-1")
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "IDEMPOTENCY_KEY_REUSED") {
		t.Errorf("JSON create with the XML key: %s", r)
	}
	r = fxCall(t, s, http.MethodPost, "/trades", p.SandboxKey, body, "Idempotency-Key", strings.Repeat("k", 256))
	fxReject(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
	// One trade (10 USDT) exists.
	fxPoolUnchanged(t, s, pool.ID, "1000", "990")
}

// TestFXStatusCancelConfirmErrors covers rows 2–4 and their refusals.
func TestFXStatusCancelConfirmErrors(t *testing.T) {
	s, p, pool := fxMarket(t, gatewaytest.Options{})
	other := s.NewPartner(t, "other")
	m := fxCreate(t, s, p.SandboxKey, fxInstr("NGN", "USDT", "16000", "0.0006", "SELL"))
	id := m.UnqTxIdr.TxId

	st := fxStatus(t, s, p.SandboxKey, id)
	if st.TradSts.Sts != "NEWT" || st.UnqTxIdr.TxId != id || st.OprgMd != "sandbox" || st.TTL < 299 {
		t.Errorf("status: got %+v", st)
	}
	fxWantAmount(t, "TradgCcyAmt", st.TradAmts.TradgCcyAmt, "16000", "NGN")
	fxWantAmount(t, "CntrValCcyAmt", st.TradAmts.CntrValCcyAmt, "16000", "NGN")
	if st.TradAmts.SttlmCcyAmt != nil || st.SttlmInstr != nil {
		t.Errorf("status carries SttlmCcyAmt or SttlmInstr before accept: %+v", st)
	}

	// Confirmation before accept: 409 with the JSON details.
	r := fxCall(t, s, http.MethodPost, "/trades/"+id+"/confirmation", p.SandboxKey, "")
	rj := fxReject(t, r, http.StatusConflict, "INVALID_STATE")
	if rj.RltdRef.Ref != id {
		t.Errorf("Ref: got %q, want the TxId %s", rj.RltdRef.Ref, id)
	}
	if !strings.Contains(rj.Rsn.RsnDesc, "allowedFrom: awaiting_payment") || !strings.Contains(rj.Rsn.RsnDesc, "status: pending") {
		t.Errorf("RsnDesc lacks the details: %q", rj.Rsn.RsnDesc)
	}

	// Not the caller's, the other mode's, unknown, not an id.
	for _, c := range []struct {
		name, key, id string
		status        int
		code          string
	}{
		{"another client", other.SandboxKey, id, 404, "QUOTE_NOT_FOUND"},
		{"the other mode", p.LiveKey, id, 404, "QUOTE_NOT_FOUND"},
		{"unknown", p.SandboxKey, randomUUID, 404, "QUOTE_NOT_FOUND"},
		{"not a UUID", p.SandboxKey, "not-a-trade", 400, "VALIDATION_ERROR"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, call := range []struct{ method, path, body string }{
				{http.MethodGet, "/trades/" + c.id, ""},
				{http.MethodPut, "/trades/" + c.id + "/cancellation", ""},
				{http.MethodPost, "/trades/" + c.id + "/confirmation", ""},
				{http.MethodPost, "/trades/" + c.id + "/accept", fxWalletAccept(wallet(t, p, sandbox, engine.CurrencyUSDT))},
			} {
				m := fxReject(t, fxCall(t, s, call.method, call.path, c.key, call.body), c.status, c.code)
				if c.status == 404 && m.RltdRef.Ref != c.id {
					t.Errorf("%s %s: Ref %q, want %s", call.method, call.path, m.RltdRef.Ref, c.id)
				}
			}
		})
	}

	// Cancel: CANC, TTL 0; again: same; then nothing else is allowed.
	for range 2 {
		c := &fxmsg.FXTradCxlRspn{}
		fxOK(t, fxCall(t, s, http.MethodPut, "/trades/"+id+"/cancellation", p.SandboxKey, ""), fxmsg.TypeTradeCancellation, c)
		if c.TradSts != (fxmsg.TradeStatus{Sts: "CANC"}) || c.TTL != 0 || c.UnqTxIdr.TxId != id ||
			c.CcyPair.BaseCcy != "NGN" || c.OprgMd != "sandbox" {
			t.Errorf("cancellation: got %+v", c)
		}
		fxWantDecimal(t, "XchgRate", c.XchgRate, "0.000625")
	}
	if st := fxStatus(t, s, p.SandboxKey, id); st.TradSts != (fxmsg.TradeStatus{Sts: "CANC"}) || st.TTL != 0 {
		t.Errorf("status after cancel: %+v", st.TradSts)
	}
	if got := getString(t, fxJSONQuote(t, s, p.SandboxKey, id), "status"); got != "cancelled" {
		t.Errorf("JSON status: %s", got)
	}
	fxReject(t, fxCall(t, s, http.MethodPost, "/trades/"+id+"/accept", p.SandboxKey,
		fxWalletAccept(wallet(t, p, sandbox, engine.CurrencyUSDT))), http.StatusConflict, "INVALID_STATE")
	fxReject(t, fxCall(t, s, http.MethodPost, "/trades/"+id+"/confirmation", p.SandboxKey, ""), http.StatusConflict, "INVALID_STATE")
	fxPoolUnchanged(t, s, pool.ID, "1000", "1000")

	// A body on a body-less operation must at least be declared XML.
	m2 := fxCreate(t, s, p.SandboxKey, fxInstr("NGN", "USDT", "1600", "0.0006", "SELL"))
	r = fxDo(t, http.MethodPut, s.URL+fxPath+"/trades/"+m2.UnqTxIdr.TxId+"/cancellation", p.SandboxKey, "application/json", `{}`)
	fxReject(t, r, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
	if st := fxStatus(t, s, p.SandboxKey, m2.UnqTxIdr.TxId); st.TradSts.Sts != "NEWT" {
		t.Errorf("refused cancellation changed the trade: %+v", st.TradSts)
	}
}

func TestFXExpired(t *testing.T) {
	s, p, pool := fxMarket(t, gatewaytest.Options{QuoteTTL: time.Second})
	m := fxCreate(t, s, p.SandboxKey, fxInstr("NGN", "USDT", "16000", "0.0006", "SELL"))
	if m.TTL > 1 {
		t.Errorf("TTL: got %d, want at most 1", m.TTL)
	}
	var st *fxmsg.FXTradStsAndDtlsNtfctn
	poll.True(t, 5*time.Second, "trade expired", func() bool {
		st = fxStatus(t, s, p.SandboxKey, m.UnqTxIdr.TxId)
		return st.TradSts.Sts == "CANC"
	})
	if st.TradSts.Rsn != "EXPD" || st.TTL != 0 {
		t.Errorf("expired trade: got %+v TTL %d, want CANC/EXPD TTL 0", st.TradSts, st.TTL)
	}
	if got := getString(t, fxJSONQuote(t, s, p.SandboxKey, m.UnqTxIdr.TxId), "status"); got != "expired" {
		t.Errorf("JSON status: %s", got)
	}
	// Only expiry carries EXPD: a cancelled trade does not.
	fxReject(t, fxCall(t, s, http.MethodPut, "/trades/"+m.UnqTxIdr.TxId+"/cancellation", p.SandboxKey, ""),
		http.StatusConflict, "INVALID_STATE")
	fxPoolUnchanged(t, s, pool.ID, "1000", "1000")
}

// TestFXLifecycleXMLThenJSON: create in XML, read and accept in JSON,
// confirm in XML, read in JSON.
func TestFXLifecycleXMLThenJSON(t *testing.T) {
	s, p, pool := fxMarket(t, gatewaytest.Options{})
	m := fxCreate(t, s, p.SandboxKey, fxInstr("NGN", "USDT", "160000", "0.0006", "SELL"))
	id := m.UnqTxIdr.TxId

	q := fxJSONQuote(t, s, p.SandboxKey, id)
	account := getString(t, get(t, q, "allocationResult.allocations").([]any)[0], "poolAccountId")
	status, accepted := fxJSON(t, http.MethodPut, s.URL+"/api/v1/partners/marketplace/quote/"+id+"/accept", p.SandboxKey,
		map[string]any{"accountId": account})
	if status != http.StatusOK || getString(t, accepted, "status") != "awaiting_payment" {
		t.Fatalf("JSON accept: %d %v", status, accepted)
	}
	reference := getString(t, accepted, "metadata.bankPayIn.reference")

	st := fxStatus(t, s, p.SandboxKey, id)
	if st.TradSts.Sts != "SETT" || st.TTL < 1799 || st.TTL > 1800 {
		t.Errorf("status after JSON accept: %+v TTL %d", st.TradSts, st.TTL)
	}
	if st.SttlmInstr == nil || st.SttlmInstr.BkPayInDtls == nil || st.SttlmInstr.BkPayInDtls.Ref != reference {
		t.Errorf("status SttlmInstr: got %+v, want Ref %s", st.SttlmInstr, reference)
	}
	// An XML accept of a JSON-accepted trade is another accept: 409.
	fxReject(t, fxCall(t, s, http.MethodPost, "/trades/"+id+"/accept", p.SandboxKey,
		fxWalletAccept(wallet(t, p, sandbox, engine.CurrencyUSDT))), http.StatusConflict, "INVALID_STATE")

	c := fxConfirm(t, s, p.SandboxKey, id)
	if c.TradSts != (fxmsg.TradeStatus{Sts: "COMP"}) || c.TTL != 0 || c.UnqTxIdr.TxId != id {
		t.Errorf("confirmation: %+v", c)
	}
	sb := engine.SandboxCollectionDefault // a sandbox trade never shows the real collection account
	want := fxmsg.BankPayInDetails{AcctNm: sb.AccountName, AcctNb: sb.AccountNumber, BkNm: sb.BankName, Ref: reference}
	if c.SttlmInstr == nil || c.SttlmInstr.BkPayInDtls == nil || *c.SttlmInstr.BkPayInDtls != want {
		t.Errorf("confirmation BkPayInDtls: got %+v, want %+v", c.SttlmInstr, want)
	}
	// Confirming again is a safe repeat.
	if again := fxConfirm(t, s, p.SandboxKey, id); again.TradSts.Sts != "COMP" {
		t.Errorf("repeat confirmation: %+v", again.TradSts)
	}
	if got := getString(t, fxJSONQuote(t, s, p.SandboxKey, id), "status"); got != "completed" {
		t.Errorf("JSON status: %s", got)
	}
	if got := fxBalance(t, s, p, p.SandboxKey, sandbox, engine.CurrencyUSDT); !got.Equal(decimal.RequireFromString("100")) {
		t.Errorf("USDT wallet: got %s, want 100 (a JSON accept settles to the wallet)", got)
	}
	fxPoolUnchanged(t, s, pool.ID, "900", "900")
}

// TestFXLifecycleJSONThenXML: create in JSON, read and accept in XML,
// complete in JSON, read in XML.
func TestFXLifecycleJSONThenXML(t *testing.T) {
	s, p, pool := fxMarket(t, gatewaytest.Options{})
	status, q := fxJSON(t, http.MethodPost, s.URL+"/api/v1/partners/marketplace/intent", p.SandboxKey,
		jsonCreate("NGN", "USDT", "50", "0.0006", "destination"))
	if status != http.StatusOK {
		t.Fatalf("JSON create: %d %v", status, q)
	}
	id := getString(t, q, "quoteId")

	st := fxStatus(t, s, p.SandboxKey, id)
	if st.TradSts.Sts != "NEWT" || st.UnqTxIdr.TxId != id {
		t.Errorf("XML status of a JSON quote: %+v", st)
	}
	fxWantAmount(t, "TradgCcyAmt", st.TradAmts.TradgCcyAmt, "50", "USDT")
	fxWantAmount(t, "CntrValCcyAmt", st.TradAmts.CntrValCcyAmt, "80000", "NGN")

	a := fxAccept(t, s, p.SandboxKey, id, fxWalletAccept(wallet(t, p, sandbox, engine.CurrencyUSDT)))
	if a.TradSts.Sts != "SETT" || a.SttlmInstr == nil || a.TTL < 1799 {
		t.Fatalf("XML accept: %+v", a)
	}
	q = fxJSONQuote(t, s, p.SandboxKey, id)
	if getString(t, q, "status") != "awaiting_payment" ||
		getString(t, q, "metadata.bankPayIn.reference") != a.SttlmInstr.BkPayInDtls.Ref {
		t.Errorf("JSON view after XML accept: %v", q)
	}
	// JSON complete of an XML-accepted trade.
	status, done := fxJSON(t, http.MethodPut, s.URL+"/api/v1/partners/marketplace/quote/"+id+"/complete", p.SandboxKey, nil)
	if status != http.StatusOK || getString(t, done, "status") != "completed" {
		t.Fatalf("JSON complete: %d %v", status, done)
	}
	if st := fxStatus(t, s, p.SandboxKey, id); st.TradSts.Sts != "COMP" || st.TTL != 0 {
		t.Errorf("XML status after JSON complete: %+v", st)
	}
	if got := fxBalance(t, s, p, p.SandboxKey, sandbox, engine.CurrencyUSDT); !got.Equal(decimal.RequireFromString("50")) {
		t.Errorf("USDT wallet: got %s, want 50", got)
	}
	fxPoolUnchanged(t, s, pool.ID, "950", "950")
}

// TestFXAcceptInternal: row 6, AcctId must be the caller's own wallet in
// the destination currency; completion credits it.
func TestFXAcceptInternal(t *testing.T) {
	s, p, pool := fxMarket(t, gatewaytest.Options{})
	other := s.NewPartner(t, "other")
	m := fxCreate(t, s, p.SandboxKey, fxInstr("NGN", "USDT", "160000", "0.0006", "SELL"))
	id := m.UnqTxIdr.TxId
	own := wallet(t, p, sandbox, engine.CurrencyUSDT)

	for _, c := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"own NGN wallet", fxWalletAccept(wallet(t, p, sandbox, engine.CurrencyNGN)), 422, "INVALID_ACCOUNT"},
		{"own live USDT wallet", fxWalletAccept(wallet(t, p, engine.ModeLive, engine.CurrencyUSDT)), 422, "INVALID_ACCOUNT"},
		{"another client's wallet", fxWalletAccept(wallet(t, other, sandbox, engine.CurrencyUSDT)), 422, "INVALID_ACCOUNT"},
		{"the pool's account", fxWalletAccept(pool.Liquidity.ID.String()), 422, "INVALID_ACCOUNT"},
		{"unknown account", fxWalletAccept(randomUUID), 422, "INVALID_ACCOUNT"},
		{"not a UUID", fxWalletAccept("wallet-1"), 400, "VALIDATION_ERROR"},
		{"empty", fxWalletAccept(""), 400, "VALIDATION_ERROR"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := fxReject(t, fxCall(t, s, http.MethodPost, "/trades/"+id+"/accept", p.SandboxKey, c.body), c.status, c.code)
			if m.RltdRef.Ref != id {
				t.Errorf("Ref: got %q, want %s", m.RltdRef.Ref, id)
			}
		})
	}
	if st := fxStatus(t, s, p.SandboxKey, id); st.TradSts.Sts != "NEWT" {
		t.Fatalf("refused accepts changed the trade: %+v", st.TradSts)
	}

	a := fxAccept(t, s, p.SandboxKey, id, fxWalletAccept(" "+strings.ToUpper(own)+"\n"))
	if a.TradSts.Sts != "SETT" || a.TTL < 1799 || a.SttlmInstr == nil || a.SttlmInstr.BkPayInDtls.Ref == "" {
		t.Fatalf("accept: %+v", a)
	}
	fxWantAmount(t, "SttlmCcyAmt", *a.TradAmts.SttlmCcyAmt, "100", "USDT")
	// The same accept again is a safe repeat; another settlement is not.
	if again := fxAccept(t, s, p.SandboxKey, id, fxWalletAccept(own)); again.TradSts.Sts != "SETT" {
		t.Errorf("repeat accept: %+v", again.TradSts)
	}
	fxReject(t, fxCall(t, s, http.MethodPost, "/trades/"+id+"/accept", p.SandboxKey, fxChainAccept(fxTronAddr)),
		http.StatusConflict, "INVALID_STATE")

	before := fxBalance(t, s, p, p.SandboxKey, sandbox, engine.CurrencyUSDT)
	fxConfirm(t, s, p.SandboxKey, id)
	after := fxBalance(t, s, p, p.SandboxKey, sandbox, engine.CurrencyUSDT)
	if got := after.Sub(before); !got.Equal(decimal.RequireFromString("100")) {
		t.Errorf("USDT wallet credit: got %s, want 100", got)
	}
	fxPoolUnchanged(t, s, pool.ID, "900", "900")
}

// TestFXAcceptBank: row 5, fiat destinations only; completion pays out
// through clearing, so the partner's wallet is not credited.
func TestFXAcceptBank(t *testing.T) {
	s, p, usdtPool := fxMarket(t, gatewaytest.Options{})
	ghsPool := newPool(t, s, sandbox, gatewaytest.NGNGHS, "Accra Desk", "0.0075", "1000")
	m := fxCreate(t, s, p.SandboxKey, fxInstr("NGN", "GHS", "10000", "0.007", "SELL"))
	id := m.UnqTxIdr.TxId
	fxWantAmount(t, "SttlmCcyAmt", *m.TradAmts.SttlmCcyAmt, "75", "GHS")

	for _, c := range []struct{ name, body, detail string }{
		{"missing BkCd", `<FXTradAccptReq><SttlmDstn><BkDstn><AcctNm>Ama</AcctNm><AcctNb>1</AcctNb></BkDstn></SttlmDstn></FXTradAccptReq>`, "SttlmDstn/BkDstn/BkCd"},
		{"empty AcctNm", fxBankAccept("  ", "0041234567", "GCB"), "SttlmDstn/BkDstn/AcctNm"},
		{"empty AcctNb", fxBankAccept("Ama Mensah", "", "GCB"), "SttlmDstn/BkDstn/AcctNb"},
		{"long AcctNb", fxBankAccept("Ama Mensah", strings.Repeat("1", 35), "GCB"), "SttlmDstn/BkDstn/AcctNb"},
		{"control character", fxBankAccept("Ama&#9;Mensah", "0041234567", "GCB"), "SttlmDstn/BkDstn/AcctNm"},
		{"illegal XML character", fxBankAccept("Ama&#x1;Mensah", "0041234567", "GCB"), "body"},
		{"unknown element", strings.Replace(fxBankAccept("Ama", "1", "GCB"), "<BkCd>", "<Swift>X</Swift><BkCd>", 1), "SttlmDstn/BkDstn/Swift"},
		{"bank and chain", `<FXTradAccptReq><SttlmDstn><BkDstn><AcctNm>A</AcctNm><AcctNb>1</AcctNb><BkCd>G</BkCd></BkDstn><BlkChnDstn><Adr>` + fxTronAddr + `</Adr></BlkChnDstn></SttlmDstn></FXTradAccptReq>`, "FXTradAccptReq"},
		{"bank and wallet", `<FXTradAccptReq><SttlmDstn><BkDstn><AcctNm>A</AcctNm><AcctNb>1</AcctNb><BkCd>G</BkCd></BkDstn></SttlmDstn><AcctId>` + randomUUID + `</AcctId></FXTradAccptReq>`, "FXTradAccptReq"},
		{"none", `<FXTradAccptReq/>`, "FXTradAccptReq"},
		{"empty SttlmDstn", `<FXTradAccptReq><SttlmDstn/></FXTradAccptReq>`, "SttlmDstn"},
		{"chain on a fiat destination", fxChainAccept(fxTronAddr), "SttlmDstn/BlkChnDstn"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := fxReject(t, fxCall(t, s, http.MethodPost, "/trades/"+id+"/accept", p.SandboxKey, c.body), 400, "VALIDATION_ERROR")
			if !strings.Contains(m.Rsn.RsnDesc, c.detail+":") {
				t.Errorf("RsnDesc %q does not name %s", m.Rsn.RsnDesc, c.detail)
			}
		})
	}
	// A bank payout of a token destination is refused.
	u := fxCreate(t, s, p.SandboxKey, fxInstr("NGN", "USDT", "1600", "0.0006", "SELL"))
	fxReject(t, fxCall(t, s, http.MethodPost, "/trades/"+u.UnqTxIdr.TxId+"/accept", p.SandboxKey,
		fxBankAccept("Ada Obi", "0123456789", "058")), 400, "VALIDATION_ERROR")
	if st := fxStatus(t, s, p.SandboxKey, id); st.TradSts.Sts != "NEWT" {
		t.Fatalf("refused accepts changed the trade: %+v", st.TradSts)
	}

	a := fxAccept(t, s, p.SandboxKey, id, fxBankAccept("Kofi &amp; Ama Mensah", "0041234567", "GCB-030100"))
	if a.TradSts.Sts != "SETT" || a.SttlmInstr == nil || a.SttlmInstr.BkPayInDtls.AcctNb != engine.SandboxCollectionDefault.AccountNumber {
		t.Fatalf("accept: %+v", a)
	}
	jq := fxJSONQuote(t, s, p.SandboxKey, id)
	if got := getString(t, jq, "status"); got != "awaiting_payment" {
		t.Errorf("JSON status: %s", got)
	}
	// Where the money goes, in both dialects' reads.
	if st, _ := jq["settlement"].(map[string]any); st["type"] != "bank" || st["accountName"] != "Kofi & Ama Mensah" ||
		st["accountNumber"] != "0041234567" || st["bankCode"] != "GCB-030100" {
		t.Errorf("JSON settlement: %v", jq["settlement"])
	}
	if st := fxStatus(t, s, p.SandboxKey, id); st.SttlmDstn == nil || st.SttlmDstn.BkDstn == nil ||
		*st.SttlmDstn.BkDstn.AcctNm != "Kofi & Ama Mensah" || *st.SttlmDstn.BkDstn.BkCd != "GCB-030100" || st.AcctId != nil {
		t.Errorf("XML status settlement: %+v", st.SttlmDstn)
	}
	fxConfirm(t, s, p.SandboxKey, id)
	if got := fxBalance(t, s, p, p.SandboxKey, sandbox, engine.CurrencyGHS); !got.IsZero() {
		t.Errorf("GHS wallet: got %s, want 0 (paid out to the bank)", got)
	}
	fxPoolUnchanged(t, s, ghsPool.ID, "925", "925")
	fxPoolUnchanged(t, s, usdtPool.ID, "1000", "999")
}

// TestFXAcceptChain: row 7, token destinations only, the address checked
// against the trade's chain; completion pays out through clearing.
func TestFXAcceptChain(t *testing.T) {
	s, p, pool := fxMarket(t, gatewaytest.Options{})
	m := fxCreate(t, s, p.SandboxKey, fxInstr("NGN", "USDT", "160000", "0.0006", "SELL"))
	id := m.UnqTxIdr.TxId
	for _, c := range []struct{ name, address string }{
		{"ethereum address on TRON", fxEthAddr},
		{"solana address on TRON", fxSolAddr},
		{"short", fxTronAddr[:33]},
		{"not base58", "T0" + fxTronAddr[2:]},
		{"empty", ""},
		{"too long", strings.Repeat("T", 65)},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := fxReject(t, fxCall(t, s, http.MethodPost, "/trades/"+id+"/accept", p.SandboxKey, fxChainAccept(c.address)),
				400, "VALIDATION_ERROR")
			if !strings.Contains(m.Rsn.RsnDesc, "SttlmDstn/BlkChnDstn/Adr:") {
				t.Errorf("RsnDesc %q does not name the address", m.Rsn.RsnDesc)
			}
		})
	}
	a := fxAccept(t, s, p.SandboxKey, id, fxChainAccept(fxTronAddr))
	if a.TradSts.Sts != "SETT" || a.SttlmInstr == nil {
		t.Fatalf("accept: %+v", a)
	}
	if st, _ := fxJSONQuote(t, s, p.SandboxKey, id)["settlement"].(map[string]any); st["type"] != "chain" ||
		st["chain"] != "TRON" || st["address"] != fxTronAddr {
		t.Errorf("JSON settlement: %v", st)
	}
	if st := fxStatus(t, s, p.SandboxKey, id); st.SttlmDstn == nil || st.SttlmDstn.BlkChnDstn == nil ||
		*st.SttlmDstn.BlkChnDstn.Adr != fxTronAddr {
		t.Errorf("XML status settlement: %+v; %s", st.SttlmDstn, fxCall(t, s, http.MethodGet, "/trades/"+id, p.SandboxKey, "").body)
	}
	fxConfirm(t, s, p.SandboxKey, id)
	if got := fxBalance(t, s, p, p.SandboxKey, sandbox, engine.CurrencyUSDT); !got.IsZero() {
		t.Errorf("USDT wallet: got %s, want 0 (paid out on chain)", got)
	}
	fxPoolUnchanged(t, s, pool.ID, "900", "900")

	// A quote created in JSON on another chain takes that chain's addresses.
	for _, c := range []struct{ chain, good, bad string }{
		{"ETHEREUM", fxEthAddr, fxTronAddr},
		{"BSC", strings.ToLower(fxEthAddr), fxSolAddr},
		{"POLYGON", fxEthAddr, "0x" + strings.Repeat("g", 40)},
		{"SOLANA", fxSolAddr, fxEthAddr},
	} {
		t.Run(c.chain, func(t *testing.T) {
			body := jsonCreate("NGN", "USDT", "1600", "0.0006", "source")
			body["chain"] = c.chain
			status, q := fxJSON(t, http.MethodPost, s.URL+"/api/v1/partners/marketplace/intent", p.SandboxKey, body)
			if status != http.StatusOK {
				t.Fatalf("JSON create: %d %v", status, q)
			}
			id := getString(t, q, "quoteId")
			m := fxReject(t, fxCall(t, s, http.MethodPost, "/trades/"+id+"/accept", p.SandboxKey, fxChainAccept(c.bad)), 400, "VALIDATION_ERROR")
			if !strings.Contains(m.Rsn.RsnDesc, "must be a "+c.chain+" address") {
				t.Errorf("RsnDesc: %q", m.Rsn.RsnDesc)
			}
			if a := fxAccept(t, s, p.SandboxKey, id, fxChainAccept(c.good)); a.TradSts.Sts != "SETT" {
				t.Errorf("accept: %+v", a.TradSts)
			}
		})
	}
}

// TestFXListings: row 8, paging, filters, order and counters.
func TestFXListings(t *testing.T) {
	s := gatewaytest.Start(t, gatewaytest.Options{})
	p := s.NewPartner(t, "acme")
	b := newPool(t, s, sandbox, gatewaytest.NGNUSDT, "B earlier", "0.000625", "500")
	a := newPool(t, s, sandbox, gatewaytest.NGNUSDT, "A best", "0.00063", "1000")
	c := newPool(t, s, sandbox, gatewaytest.NGNUSDT, "C later", "0.000625", "800")
	d := newPool(t, s, sandbox, gatewaytest.NGNUSDT, "D suspended", "0.0007", "800")
	e := newPool(t, s, sandbox, gatewaytest.GHSUSDT, "E cedi", "0.08", "100")
	f := newPool(t, s, sandbox, gatewaytest.NGNGHS, "F naira-cedi", "0.0075", "1000")
	g := newPool(t, s, engine.ModeLive, gatewaytest.NGNUSDT, "G live", "0.00064", "100")
	z := newPool(t, s, sandbox, gatewaytest.NGNUSDT, "Z empty", "0.0006", "")
	status, _ := fxJSON(t, http.MethodPut, s.Admin+"/admin/v1/pools/"+d.ID.String()+"/status", gatewaytest.AdminToken,
		map[string]any{"status": "suspended"})
	if status != http.StatusOK {
		t.Fatalf("suspend: %d", status)
	}

	list := func(t *testing.T, key, query string) *fxmsg.FndPrcgPsptRpt {
		t.Helper()
		m := &fxmsg.FndPrcgPsptRpt{}
		fxOK(t, fxCall(t, s, http.MethodGet, "/listings"+query, key, ""), fxmsg.TypeListings, m)
		return m
	}
	ids := func(m *fxmsg.FndPrcgPsptRpt) []string {
		var out []string
		for _, l := range m.Listgs {
			out = append(out, l.Id)
		}
		return out
	}
	names := map[string]string{}
	for _, pool := range []*engine.Pool{a, b, c, d, e, f, g, z} {
		names[pool.ID.String()] = pool.Name
	}
	wantIDs := func(t *testing.T, m *fxmsg.FndPrcgPsptRpt, want ...*engine.Pool) {
		t.Helper()
		var w []string
		for _, pool := range want {
			w = append(w, pool.ID.String())
		}
		if got := ids(m); strings.Join(got, ",") != strings.Join(w, ",") {
			var gotNames, wantNames []string
			for _, id := range got {
				gotNames = append(gotNames, names[id])
			}
			for _, id := range w {
				wantNames = append(wantNames, names[id])
			}
			t.Errorf("listings: got %q, want %q", gotNames, wantNames)
		}
	}

	all := list(t, p.SandboxKey, "")
	wantIDs(t, all, e, f, a, b, c, z)
	if all.Pgntn != (fxmsg.Pagination{PageNumber: 0, PageSize: 20, TotalElements: 6}) || all.OprgMd != "sandbox" {
		t.Errorf("Pgntn: %+v %s", all.Pgntn, all.OprgMd)
	}
	first := all.Listgs[2]
	if first.Nm != "A best" || first.CcyPair != "NGN/USDT" || first.TradsCnt != 0 || first.CmpltnRate != "0.00" {
		t.Errorf("listing: %+v", first)
	}
	fxWantDecimal(t, "XchgRate", first.XchgRate, "0.00063")
	fxWantAmount(t, "AvlblBal", first.AvlblBal, "1000", "USDT")
	fxWantAmount(t, "AvlblBal of an empty pool", all.Listgs[5].AvlblBal, "0", "USDT")

	t.Run("filters", func(t *testing.T) {
		wantIDs(t, list(t, p.SandboxKey, "?source=NGN"), f, a, b, c, z)
		wantIDs(t, list(t, p.SandboxKey, "?destination=USDT"), e, a, b, c, z)
		wantIDs(t, list(t, p.SandboxKey, "?source=NGN&destination=USDT"), a, b, c, z)
		wantIDs(t, list(t, p.SandboxKey, "?source=GHS&destination=USDT"), e)
		wantIDs(t, list(t, p.SandboxKey, "?destination=GHS"), f)
		wantIDs(t, list(t, p.LiveKey, ""), g)
		if m := list(t, p.LiveKey, "?source=GHS"); len(m.Listgs) != 0 || m.Pgntn.TotalElements != 0 || m.OprgMd != "live" {
			t.Errorf("empty filter: %+v", m)
		}
	})
	t.Run("paging", func(t *testing.T) {
		wantIDs(t, list(t, p.SandboxKey, "?pageSize=2"), e, f)
		wantIDs(t, list(t, p.SandboxKey, "?page=1&pageSize=2"), a, b)
		wantIDs(t, list(t, p.SandboxKey, "?page=2&pageSize=2"), c, z)
		wantIDs(t, list(t, p.SandboxKey, "?page=1&pageSize=4"), c, z)
		last := list(t, p.SandboxKey, "?page=3&pageSize=2")
		wantIDs(t, last)
		if last.Pgntn != (fxmsg.Pagination{PageNumber: 3, PageSize: 2, TotalElements: 6}) {
			t.Errorf("Pgntn past the end: %+v", last.Pgntn)
		}
		wantIDs(t, list(t, p.SandboxKey, "?page=999999999&pageSize=100"))
		wantIDs(t, list(t, p.SandboxKey, "?pageSize=100"), e, f, a, b, c, z)
		wantIDs(t, list(t, p.SandboxKey, "?pageSize=1"), e)
	})
	t.Run("refusals", func(t *testing.T) {
		for _, c := range []struct{ query, code string }{
			{"?page=-1", "VALIDATION_ERROR"},
			{"?page=x", "VALIDATION_ERROR"},
			{"?pageSize=0", "VALIDATION_ERROR"},
			{"?pageSize=101", "VALIDATION_ERROR"},
			{"?pageSize=1.5", "VALIDATION_ERROR"},
			{"?page=1&page=2", "VALIDATION_ERROR"},
			{"?sort=rate", "VALIDATION_ERROR"},
			{"?source=XYZ", "INVALID_CURRENCY_PAIR"},
			{"?source=USDT", "INVALID_CURRENCY_PAIR"},
			{"?destination=NGN", "INVALID_CURRENCY_PAIR"},
			{"?source=GHS&destination=GHS", "INVALID_CURRENCY_PAIR"},
		} {
			fxReject(t, fxCall(t, s, http.MethodGet, "/listings"+c.query, p.SandboxKey, ""), 400, c.code)
		}
	})
	t.Run("counters", func(t *testing.T) {
		// Two trades on A; both accepted, one completed: 1 trade, 50 %.
		var trades []string
		for range 2 {
			m := fxCreate(t, s, p.SandboxKey, fxInstr("NGN", "USDT", "16000", "0.00063", "SELL"))
			fxAccept(t, s, p.SandboxKey, m.UnqTxIdr.TxId, fxChainAccept(fxTronAddr))
			trades = append(trades, m.UnqTxIdr.TxId)
		}
		fxConfirm(t, s, p.SandboxKey, trades[0])
		fxPoolView(t, s, a.ID)
		m := list(t, p.SandboxKey, "?source=NGN&destination=USDT&pageSize=1")
		wantIDs(t, m, a)
		l := m.Listgs[0]
		if l.TradsCnt != 1 || l.CmpltnRate != "50.00" {
			t.Errorf("counters: TradsCnt %d CmpltnRate %s, want 1 and 50.00", l.TradsCnt, l.CmpltnRate)
		}
		fxWantAmount(t, "AvlblBal", l.AvlblBal, "979.84", "USDT") // 1000 − 10.08 paid − 10.08 held
	})
}

// TestFXMakersRate: row 9, with a clock the test moves.
func TestFXMakersRate(t *testing.T) {
	clock := &fxClock{}
	s := gatewaytest.Start(t, gatewaytest.Options{Clock: clock.now})
	p := s.NewPartner(t, "acme")
	rate := func(t *testing.T, key, query string) *fxmsg.FxTradStsAndDtls {
		t.Helper()
		m := &fxmsg.FxTradStsAndDtls{}
		fxOK(t, fxCall(t, s, http.MethodGet, "/rates/makers"+query, key, ""), fxmsg.TypeTradeInstruction, m)
		return m
	}

	m := fxReject(t, fxCall(t, s, http.MethodGet, "/rates/makers?from=NGN&to=USDT", p.SandboxKey, "", "X-Request-Id", "r-1"),
		http.StatusNotFound, "NO_RATE")
	if m.RltdRef.Ref != "r-1" {
		t.Errorf("Ref: got %q, want the request id", m.RltdRef.Ref)
	}
	newPool(t, s, sandbox, gatewaytest.NGNUSDT, "Empty", "0.0007", "")
	fxReject(t, fxCall(t, s, http.MethodGet, "/rates/makers?from=NGN&to=USDT", p.SandboxKey, ""), http.StatusNotFound, "NO_RATE")

	pool := newPool(t, s, sandbox, gatewaytest.NGNUSDT, "Lagos", "0.000625", "1000")
	newPool(t, s, sandbox, gatewaytest.NGNUSDT, "Worse", "0.0006", "1000")
	got := rate(t, p.SandboxKey, "?from=NGN&to=USDT")
	if got.SrcCcy != "NGN" || got.TrgtCcy != "USDT" || got.RateSrc != "market_maker" || got.OprgMd != "sandbox" ||
		got.AgeSecs != 0 || got.PctChg24H != "0.00" {
		t.Errorf("makers rate: %+v", got)
	}
	fxWantDecimal(t, "XchgRate", got.XchgRate, "0.000625")
	if want := time.UnixMilli(pool.RateSetAt).UTC().Format("2006-01-02T15:04:05.000Z"); got.TmStmp != want {
		t.Errorf("TmStmp: got %s, want %s", got.TmStmp, want)
	}

	clock.advance(90 * time.Second)
	if got := rate(t, p.SandboxKey, "?from=NGN&to=USDT"); got.AgeSecs != 90 {
		t.Errorf("AgeSecs after 90 s: %d", got.AgeSecs)
	}
	setRate := func(t *testing.T, id engine.PoolID, r string) {
		t.Helper()
		status, body := fxJSON(t, http.MethodPut, s.Admin+"/admin/v1/pools/"+id.String()+"/rate", gatewaytest.AdminToken,
			map[string]any{"rate": jsonNumber(r)})
		if status != http.StatusOK {
			t.Fatalf("set rate: %d %v", status, body)
		}
	}
	setRate(t, pool.ID, "0.00065")
	got = rate(t, p.SandboxKey, "?from=NGN&to=USDT")
	fxWantDecimal(t, "XchgRate", got.XchgRate, "0.00065")
	if got.PctChg24H != "4.00" || got.AgeSecs != 0 {
		t.Errorf("after a rise against the oldest sample: PctChg24H %s AgeSecs %d, want 4.00 and 0", got.PctChg24H, got.AgeSecs)
	}

	clock.advance(25 * time.Hour)
	got = rate(t, p.SandboxKey, "?from=NGN&to=USDT")
	if got.PctChg24H != "0.00" || got.AgeSecs != 25*3600 {
		t.Errorf("a day later: PctChg24H %s AgeSecs %d, want 0.00 and 90000", got.PctChg24H, got.AgeSecs)
	}
	setRate(t, pool.ID, "0.000617")
	if got = rate(t, p.SandboxKey, "?from=NGN&to=USDT"); got.PctChg24H != "-5.08" {
		t.Errorf("after a fall: PctChg24H %s, want -5.08", got.PctChg24H) // −5.0769…
	}
	// The empty pool's better rate never counts; suspending the best moves on.
	status, _ := fxJSON(t, http.MethodPut, s.Admin+"/admin/v1/pools/"+pool.ID.String()+"/status", gatewaytest.AdminToken,
		map[string]any{"status": "suspended"})
	if status != http.StatusOK {
		t.Fatalf("suspend: %d", status)
	}
	fxWantDecimal(t, "XchgRate after suspension", rate(t, p.SandboxKey, "?from=NGN&to=USDT").XchgRate, "0.0006")

	// Modes are separate; refusals.
	fxReject(t, fxCall(t, s, http.MethodGet, "/rates/makers?from=NGN&to=USDT", p.LiveKey, ""), http.StatusNotFound, "NO_RATE")
	fxReject(t, fxCall(t, s, http.MethodGet, "/rates/makers?from=GHS&to=USDT", p.SandboxKey, ""), http.StatusNotFound, "NO_RATE")
	for _, c := range []struct{ query, code string }{
		{"?from=USDT&to=NGN", "INVALID_CURRENCY_PAIR"},
		{"?from=GHS&to=NGN", "INVALID_CURRENCY_PAIR"},
		{"?from=ngn&to=usdt", "INVALID_CURRENCY_PAIR"},
		{"?from=XYZ&to=USDT", "INVALID_CURRENCY_PAIR"},
		{"?from=NGN", "VALIDATION_ERROR"},
		{"", "VALIDATION_ERROR"},
		{"?from=NGN&to=USDT&window=24h", "VALIDATION_ERROR"},
		{"?from=NGN&to=USDT&to=GHS", "VALIDATION_ERROR"},
	} {
		fxReject(t, fxCall(t, s, http.MethodGet, "/rates/makers"+c.query, p.SandboxKey, ""), http.StatusBadRequest, c.code)
	}
}

// TestFXPlumbingErrors: authentication, routing, media type, rate limit
// and availability errors are MsgRjct on the FX routes (JSON elsewhere).
func TestFXPlumbingErrors(t *testing.T) {
	s, p, _ := fxMarket(t, gatewaytest.Options{})
	body := fxInstr("NGN", "USDT", "1600", "0.0006", "SELL")

	for _, c := range []struct{ name, auth string }{
		{"no credential", ""},
		{"not bearer", "Basic " + p.SandboxKey},
		{"unknown key", "Bearer oja_sandbox_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
		{"empty bearer", "Bearer "},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, path := range []string{"/trades/" + randomUUID, "/listings", "/rates/makers?from=NGN&to=USDT"} {
				r := fxDo(t, http.MethodGet, s.URL+fxPath+path, "", "", "", "Authorization", c.auth)
				fxReject(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
				if got := r.header.Get("WWW-Authenticate"); got != "Bearer" {
					t.Errorf("WWW-Authenticate: got %q", got)
				}
			}
		})
	}
	t.Run("revoked key", func(t *testing.T) {
		q := &fxmsg.FndPrcgPsptRpt{}
		fxOK(t, fxCall(t, s, http.MethodGet, "/listings", p.LiveKey, ""), fxmsg.TypeListings, q)
		status, created := fxJSON(t, http.MethodPost, s.Admin+"/admin/v1/clients/"+p.Client.ID.String()+"/keys",
			gatewaytest.AdminToken, map[string]any{"mode": "live"})
		if status != http.StatusCreated {
			t.Fatalf("create key: %d %v", status, created)
		}
		keyID, key := getString(t, created, "keyId"), getString(t, created, "key")
		fxOK(t, fxCall(t, s, http.MethodGet, "/listings", key, ""), fxmsg.TypeListings, q)
		r := fxDo(t, http.MethodDelete, s.Admin+"/admin/v1/keys/"+keyID, gatewaytest.AdminToken, "", "")
		if r.status != http.StatusNoContent {
			t.Fatalf("revoke: %s", r)
		}
		fxReject(t, fxCall(t, s, http.MethodGet, "/listings", key, ""), http.StatusUnauthorized, "UNAUTHORIZED")
	})
	t.Run("routes", func(t *testing.T) {
		r := fxCall(t, s, http.MethodGet, "/trades", p.SandboxKey, "")
		fxReject(t, r, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
		fxReject(t, fxCall(t, s, http.MethodDelete, "/trades/"+randomUUID, p.SandboxKey, ""), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
		fxReject(t, fxCall(t, s, http.MethodPut, "/trades/"+randomUUID+"/accept", p.SandboxKey, ""), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
		fxReject(t, fxCall(t, s, http.MethodGet, "/nothing", p.SandboxKey, ""), http.StatusNotFound, "NOT_FOUND")
		fxReject(t, fxCall(t, s, http.MethodGet, "", p.SandboxKey, ""), http.StatusNotFound, "NOT_FOUND")
		fxReject(t, fxCall(t, s, http.MethodGet, "/trades/"+randomUUID+"/more/x", p.SandboxKey, ""), http.StatusNotFound, "NOT_FOUND")
		// Outside the FX base, errors stay JSON.
		for _, path := range []string{"/api/v1/partners/fxtrades", "/api/v1/nothing"} {
			status, j := fxJSON(t, http.MethodGet, s.URL+path, p.SandboxKey, nil)
			if status != http.StatusNotFound || j["code"] != "NOT_FOUND" {
				t.Errorf("%s: %d %v", path, status, j)
			}
		}
	})
	t.Run("media type", func(t *testing.T) {
		trade := fxCreate(t, s, p.SandboxKey, body, "Content-Type", "text/xml")
		for _, ct := range []string{"", "application/json", "text/plain", "application/xml; charset=iso-8859-1", "application/x-www-form-urlencoded"} {
			r := fxDo(t, http.MethodPost, s.URL+fxPath+"/trades", p.SandboxKey, ct, body)
			fxReject(t, r, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
			r = fxDo(t, http.MethodPost, s.URL+fxPath+"/trades/"+trade.UnqTxIdr.TxId+"/accept", p.SandboxKey, ct, fxChainAccept(fxTronAddr))
			fxReject(t, r, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
		}
		if st := fxStatus(t, s, p.SandboxKey, trade.UnqTxIdr.TxId); st.TradSts.Sts != "NEWT" {
			t.Errorf("trade changed: %+v", st.TradSts)
		}
	})
	t.Run("request id", func(t *testing.T) {
		r := fxCall(t, s, http.MethodGet, "/nothing", p.SandboxKey, "", "X-Request-Id", "trace-42")
		if m := fxReject(t, r, http.StatusNotFound, "NOT_FOUND"); m.RltdRef.Ref != "trace-42" || r.header.Get("X-Request-Id") != "trace-42" {
			t.Errorf("Ref %q, X-Request-Id %q; want trace-42", m.RltdRef.Ref, r.header.Get("X-Request-Id"))
		}
	})
	t.Run("system stopped", func(t *testing.T) {
		s, p, _ := fxMarket(t, gatewaytest.Options{})
		s.Sys.Stop()
		r := fxCall(t, s, http.MethodPost, "/trades", p.SandboxKey, body)
		fxReject(t, r, http.StatusServiceUnavailable, "UNAVAILABLE")
		if r.header.Get("Retry-After") == "" {
			t.Errorf("Retry-After missing")
		}
	})
}

func TestFXRateLimited(t *testing.T) {
	s, p, _ := fxMarket(t, gatewaytest.Options{RateLimit: 1})
	var limited *response
	for range 5 {
		r := fxCall(t, s, http.MethodGet, "/listings", p.SandboxKey, "")
		if r.status == http.StatusTooManyRequests {
			limited = r
			break
		}
	}
	if limited == nil {
		t.Fatalf("5 requests within a second at 1 req/s were all served")
	}
	fxReject(t, limited, http.StatusTooManyRequests, "RATE_LIMITED")
	if limited.header.Get("Retry-After") == "" {
		t.Errorf("Retry-After missing")
	}
}

// jsonNumber is a JSON number literal for request bodies.
func jsonNumber(s string) json.Number { return json.Number(s) }

// TestFXNotReady: before recovery finishes, the FX routes answer 503 as
// MsgRjct (the credential is checked for form first, as in JSON).
func TestFXNotReady(t *testing.T) {
	srv := gateway.New(gateway.Config{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0", AdminToken: "t"})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	url := "http://" + srv.Addr() + fxPath + "/listings"
	r := fxDo(t, http.MethodGet, url, "oja_sandbox_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "", "")
	fxReject(t, r, http.StatusServiceUnavailable, "UNAVAILABLE")
	if r.header.Get("Retry-After") == "" {
		t.Errorf("Retry-After missing")
	}
	fxReject(t, fxDo(t, http.MethodGet, url, "", "", ""), http.StatusUnauthorized, "UNAUTHORIZED")
}

// TestFXOpenQuoteCap: the per-key open-quote cap applies to XML creates
// (the key is passed on, as in JSON) and answers 429 as a MsgRjct.
func TestFXOpenQuoteCap(t *testing.T) {
	s, p, pool := fxMarket(t, gatewaytest.Options{MaxOpenQuotes: 1})
	first := fxCreate(t, s, p.SandboxKey, fxInstr("NGN", "USDT", "1600", "0.0006", "SELL"))
	r := fxCall(t, s, http.MethodPost, "/trades", p.SandboxKey, fxInstr("NGN", "USDT", "1600", "0.0006", "SELL"))
	fxReject(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
	if r.header.Get("Retry-After") == "" {
		t.Errorf("Retry-After missing")
	}
	status, j := fxJSON(t, http.MethodPost, s.URL+"/api/v1/partners/marketplace/intent", p.SandboxKey,
		jsonCreate("NGN", "USDT", "1600", "0.0006", "source"))
	if status != http.StatusTooManyRequests || j["code"] != "RATE_LIMITED" {
		t.Errorf("JSON create over the cap: %d %v", status, j)
	}
	fxCall(t, s, http.MethodPut, "/trades/"+first.UnqTxIdr.TxId+"/cancellation", p.SandboxKey, "")
	poll.True(t, 5*time.Second, "cap freed", func() bool {
		return fxCall(t, s, http.MethodPost, "/trades", p.SandboxKey, fxInstr("NGN", "USDT", "1600", "0.0006", "SELL")).status == http.StatusOK
	})
	fxPoolUnchanged(t, s, pool.ID, "1000", "999")
}

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Both dialects pass the same partner gate: an XML request's access log
// line names its client exactly as a JSON request's does (the XML gate was
// a copy that never recorded it).
func TestFXAccessLogNamesClient(t *testing.T) {
	var logs lockedBuffer
	s, p, _ := fxMarket(t, gatewaytest.Options{AccessLog: true, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	mustCreateQuote(t, s, p.SandboxKey, quoteRequest("NGN", "USDT", "1000", "0.0006", "source"))
	fxCreate(t, s, p.SandboxKey, fxInstr("NGN", "USDT", "16000", "0.0006", "SELL"))
	want := p.Client.ID.String()
	for _, route := range []string{"/api/v1/partners/marketplace/intent", "/api/v1/partners/fx/trades"} {
		poll.Until(t, 5*time.Second, func() string {
			for line := range strings.Lines(logs.String()) {
				var rec map[string]any
				if json.Unmarshal([]byte(line), &rec) != nil || rec["route"] != route {
					continue
				}
				if rec["client_id"] != want {
					return fmt.Sprintf("%s logged with client_id %v, want %s: %s", route, rec["client_id"], want, line)
				}
				return ""
			}
			return "no access log line for " + route
		})
	}
}
