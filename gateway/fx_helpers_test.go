package gateway_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/client/fxmsg"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// Helpers of the XML FX API tests, named fx… beside the package's general
// ones (helpers_test.go), which the FX tests use too: the HTTP client,
// reading a JSON member, a pool, a wallet.

const (
	fxPath     = "/api/v1/partners/fx"
	fxXMLType  = "application/xml; charset=utf-8"
	fxJSONType = "application/json"
	fxTronAddr = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW"
	fxEthAddr  = "0x52908400098527886E0F7030069857D2E4169EE7"
	fxSolAddr  = "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T"
)

// fxDo sends one request. contentType is set when not empty; body is sent
// as is; key, when not empty, is the Bearer credential; headers are name,
// value pairs.
func fxDo(t testing.TB, method, url, key, contentType, body string, headers ...string) *response {
	t.Helper()
	r, err := fxTryDo(t, method, url, key, contentType, body, headers...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// fxDoOversized is fxDo for a body over the bound, asking first (see
// doOversized).
func fxDoOversized(t testing.TB, method, url, key, contentType, body string) *response {
	t.Helper()
	return fxDo(t, method, url, key, contentType, body, "Expect", "100-continue")
}

func fxTryDo(t testing.TB, method, url, key, contentType, body string, headers ...string) (*response, error) {
	t.Helper()
	var reader io.Reader
	if body != "" {
		reader = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, reader)
	if err != nil {
		t.Fatalf("new request %s %s: %v", method, url, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/xml")
	return send(t, req, key, headers)
}

// fxCall sends an XML request to the FX API (path after fxPath).
func fxCall(t testing.TB, s *gatewaytest.Server, method, path, key, body string, headers ...string) *response {
	t.Helper()
	ct := ""
	if body != "" {
		ct = fxXMLType
	}
	return fxDo(t, method, s.URL+fxPath+path, key, ct, body, headers...)
}

// fxDecode parses an XML answer into m after checking its status, its
// Content-Type and its root's namespace.
func fxDecode(t testing.TB, r *response, status int, messageType string, m any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status: got %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != fxXMLType {
		t.Errorf("Content-Type: got %q, want %q", ct, fxXMLType)
	}
	if !bytes.HasPrefix(r.body, []byte(`<?xml version="1.0" encoding="UTF-8"?>`)) {
		t.Errorf("body does not start with an XML declaration: %s", r.body)
	}
	if err := xml.Unmarshal(r.body, m); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	d := xml.NewDecoder(bytes.NewReader(r.body))
	for {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("no root element in %s: %v", r.body, err)
		}
		if start, ok := tok.(xml.StartElement); ok {
			if want := fxmsg.NamespacePrefix + messageType; start.Name.Space != want {
				t.Errorf("root namespace: got %q, want %q", start.Name.Space, want)
			}
			return
		}
	}
}

// fxOK decodes a 200 answer of messageType into m.
func fxOK(t testing.TB, r *response, messageType string, m any) {
	t.Helper()
	fxDecode(t, r, http.StatusOK, messageType, m)
}

// fxReject checks an XML error (spec §7): status, MsgRjct in the
// admi.002 namespace, the JSON code, a timestamp, a description and a
// reference; it returns the MsgRjct.
func fxReject(t testing.TB, r *response, status int, code string) *fxmsg.MsgRjct {
	t.Helper()
	m := &fxmsg.MsgRjct{}
	fxDecode(t, r, status, fxmsg.TypeMessageReject, m)
	if m.XMLName.Local != "MsgRjct" {
		t.Errorf("root: got <%s>, want <MsgRjct>", m.XMLName.Local)
	}
	if m.Rsn.RjctgPtyRsn != code {
		t.Fatalf("RjctgPtyRsn: got %q, want %q; body %s", m.Rsn.RjctgPtyRsn, code, r.body)
	}
	if !timestampPattern.MatchString(m.Rsn.RjctnDtTm) {
		t.Errorf("RjctnDtTm: got %q, want RFC 3339 UTC with milliseconds", m.Rsn.RjctnDtTm)
	}
	if m.Rsn.RsnDesc == "" {
		t.Errorf("RsnDesc is empty")
	}
	if m.RltdRef.Ref == "" {
		t.Errorf("RltdRef/Ref is empty")
	}
	if r.header.Get("X-Request-Id") == "" {
		t.Errorf("X-Request-Id missing")
	}
	return m
}

// fxInstr is an FXTradInstr document.
func fxInstr(base, quoted, amount, rate, direction string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<FXTradInstr xmlns="urn:iso:std:iso:20022:tech:xsd:fxtr.014.001.05">
  <CcyPair><BaseCcy>` + base + `</BaseCcy><QtdCcy>` + quoted + `</QtdCcy></CcyPair>
  <TradAmts><TradgCcyAmt>` + amount + `</TradgCcyAmt></TradAmts>
  <AgrdRate><XchgRate>` + rate + `</XchgRate></AgrdRate>
  <AmtDrctn>` + direction + `</AmtDrctn>
</FXTradInstr>`
}

// fxBankAccept, fxWalletAccept and fxChainAccept are FXTradAccptReq bodies.
func fxBankAccept(name, number, code string) string {
	return `<FXTradAccptReq xmlns="urn:iso:std:iso:20022:tech:xsd:fxtr.014.001.05"><SttlmDstn><BkDstn>` +
		`<AcctNm>` + name + `</AcctNm><AcctNb>` + number + `</AcctNb><BkCd>` + code + `</BkCd>` +
		`</BkDstn></SttlmDstn></FXTradAccptReq>`
}

func fxWalletAccept(account string) string {
	return `<FXTradAccptReq><AcctId>` + account + `</AcctId></FXTradAccptReq>`
}

func fxChainAccept(address string) string {
	return `<FXTradAccptReq xmlns="urn:iso:std:iso:20022:tech:xsd:fxtr.014.001.05"><SttlmDstn><BlkChnDstn>` +
		`<Adr>` + address + `</Adr></BlkChnDstn></SttlmDstn></FXTradAccptReq>`
}

// fxCreate initiates a trade and returns its answer.
func fxCreate(t testing.TB, s *gatewaytest.Server, key, body string, headers ...string) *fxmsg.FXTradInstrRspn {
	t.Helper()
	m := &fxmsg.FXTradInstrRspn{}
	fxOK(t, fxCall(t, s, http.MethodPost, "/trades", key, body, headers...), fxmsg.TypeTradeInstruction, m)
	return m
}

// fxStatus reads a trade's status notification.
func fxStatus(t testing.TB, s *gatewaytest.Server, key, id string) *fxmsg.FXTradStsAndDtlsNtfctn {
	t.Helper()
	m := &fxmsg.FXTradStsAndDtlsNtfctn{}
	fxOK(t, fxCall(t, s, http.MethodGet, "/trades/"+id, key, ""), fxmsg.TypeTradeStatus, m)
	return m
}

// fxAccept accepts a trade with body and returns the answer.
func fxAccept(t testing.TB, s *gatewaytest.Server, key, id, body string) *fxmsg.FXTradInstrRspn {
	t.Helper()
	m := &fxmsg.FXTradInstrRspn{}
	fxOK(t, fxCall(t, s, http.MethodPost, "/trades/"+id+"/accept", key, body), fxmsg.TypeTradeInstruction, m)
	return m
}

// fxConfirm confirms (completes) a trade.
func fxConfirm(t testing.TB, s *gatewaytest.Server, key, id string) *fxmsg.FXTradConfStsAdvc {
	t.Helper()
	m := &fxmsg.FXTradConfStsAdvc{}
	fxOK(t, fxCall(t, s, http.MethodPost, "/trades/"+id+"/confirmation", key, ""), fxmsg.TypeTradeConfirmation, m)
	return m
}

// fxWantDecimal fails unless text is the decimal want (by value) and in
// plain form.
func fxWantDecimal(t testing.TB, what string, text fxmsg.Decimal, want string) {
	t.Helper()
	got, err := decimal.NewFromString(string(text))
	if err != nil || strings.ContainsAny(string(text), "eE") {
		t.Errorf("%s: %q is not plain decimal text", what, text)
		return
	}
	if !got.Equal(decimal.RequireFromString(want)) {
		t.Errorf("%s: got %s, want %s", what, text, want)
	}
}

// fxWantAmount fails unless a is want in currency.
func fxWantAmount(t testing.TB, what string, a fxmsg.Amount, want, currency string) {
	t.Helper()
	fxWantDecimal(t, what, a.Value, want)
	if a.Ccy != currency {
		t.Errorf("%s/@Ccy: got %q, want %q", what, a.Ccy, currency)
	}
}

// ---- JSON side -------------------------------------------------------------------

// fxJSON sends a JSON request and decodes a JSON object answer (numbers as
// json.Number).
func fxJSON(t testing.TB, method, url, key string, body any) (int, map[string]any) {
	t.Helper()
	raw := ""
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		raw = string(b)
	}
	ct := ""
	if body != nil {
		ct = fxJSONType
	}
	r := fxDo(t, method, url, key, ct, raw, "Accept", "application/json")
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s %s: Content-Type %q, body %s", method, url, ct, r.body)
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(r.body))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{"": v}
	}
	return r.status, m
}

// fxJSONQuote reads a quote through the JSON API.
func fxJSONQuote(t testing.TB, s *gatewaytest.Server, key, id string) map[string]any {
	t.Helper()
	status, q := fxJSON(t, http.MethodGet, s.URL+"/api/v1/partners/marketplace/quote/"+id, key, nil)
	if status != http.StatusOK {
		t.Fatalf("JSON get quote %s: %d %v", id, status, q)
	}
	return q
}

// fxBalance is the available balance of the partner's wallet in mode and
// currency, read through the JSON balances API once the treasury applied
// earlier credits (the admin ledger check is ordered after them).
func fxBalance(t testing.TB, s *gatewaytest.Server, p gatewaytest.Partner, key string, mode engine.Mode, c engine.Currency) decimal.Decimal {
	t.Helper()
	fxLedgerOK(t, s, mode)
	r := fxDo(t, http.MethodGet, s.URL+"/api/v1/partners/balances/"+wallet(t, p, mode, c), key, "", "")
	if r.status != http.StatusOK {
		t.Fatalf("JSON balance: %s", r)
	}
	d := json.NewDecoder(bytes.NewReader(r.body))
	d.UseNumber()
	var raw []map[string]any
	if err := d.Decode(&raw); err != nil || len(raw) != 1 {
		t.Fatalf("JSON balance %s: %v", r.body, err)
	}
	return number(t, raw[0], "availableBalance")
}

// fxLedgerOK checks the ledger invariant of mode through the admin API (and
// so waits for the treasury to apply earlier effects).
func fxLedgerOK(t testing.TB, s *gatewaytest.Server, mode engine.Mode) {
	t.Helper()
	r := fxDo(t, http.MethodGet, s.Admin+"/admin/v1/ledger/check?mode="+mode.String(), gatewaytest.AdminToken, "", "")
	if r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`"ok":true`)) {
		t.Fatalf("ledger check %s: %s", mode, r)
	}
}

// fxPoolView returns a pool's admin JSON once every effect of earlier
// acknowledged requests reached it: PUT status active is ordered after them
// and answered by the pool itself. The pool must be active.
func fxPoolView(t testing.TB, s *gatewaytest.Server, id engine.PoolID) map[string]any {
	t.Helper()
	status, p := fxJSON(t, http.MethodPut, s.Admin+"/admin/v1/pools/"+id.String()+"/status", gatewaytest.AdminToken,
		map[string]any{"status": "active"})
	if status != http.StatusOK {
		t.Fatalf("sync pool %s: %d %v", id, status, p)
	}
	return p
}

// fxPoolUnchanged fails unless the pool's balance and available liquidity
// are as given.
func fxPoolUnchanged(t testing.TB, s *gatewaytest.Server, id engine.PoolID, balance, available string) {
	t.Helper()
	p := fxPoolView(t, s, id)
	if got := number(t, p, "balance"); !got.Equal(decimal.RequireFromString(balance)) {
		t.Errorf("pool balance: got %s, want %s", got, balance)
	}
	if got := number(t, p, "available"); !got.Equal(decimal.RequireFromString(available)) {
		t.Errorf("pool available: got %s, want %s", got, available)
	}
}

// fxClock is a test clock: the wall clock plus an offset the test moves.
type fxClock struct{ offset atomic.Int64 }

func (c *fxClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *fxClock) advance(d time.Duration) { c.offset.Add(int64(d)) }
