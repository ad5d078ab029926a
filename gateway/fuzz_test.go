package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
	"github.com/oja-exchange/oja/internal/poll"
)

// Fuzz tests of every parser that faces the network, each through the real
// handlers of a real server on a loopback port (`make fuzz`; `make test`
// runs their seeds as unit tests). The bytes go over a raw connection, so
// fasthttp's own request parsing is fuzzed too. Whatever the input:
//
//   - never a 5xx, never a dropped connection;
//   - a refusal is the spec's error (JSON {code, message}, or an XML
//     MsgRjct under /partners/fx) with X-Request-Id;
//   - a refusal changes nothing: no record is appended to the log, the
//     pool's balance, holds and counters are as they were, the quote under
//     test keeps its status, and the ledger check still passes;
//   - a partner never reaches another partner's quote or account: those
//     answer exactly like missing ones (404).
//
// The XML bodies have their own fuzz tests (FuzzFXServer, FuzzFXTradInstr,
// FuzzFXTradAccptReq, fxmsg's FuzzDecode).

// fuzzMarket is the server a fuzz target runs against: an owner with a
// pending quote on a funded pool, and another partner.
type fuzzMarket struct {
	s     *gatewaytest.Server
	owner gatewaytest.Partner
	other gatewaytest.Partner
	pool  *engine.Pool
	quote string // a pending quote of owner
}

func newFuzzMarket(f *testing.F, opts gatewaytest.Options) *fuzzMarket {
	s := gatewaytest.Start(f, opts)
	m := &fuzzMarket{s: s, owner: s.NewPartner(f, "owner"), other: s.NewPartner(f, "other")}
	m.pool = s.NewPool(f, engine.ModeSandbox, gatewaytest.NGNUSDT, "Fuzz Desk", "0.000625", "100000")
	s.NewPool(f, engine.ModeSandbox, gatewaytest.NGNGHS, "Fuzz Cedi Desk", "0.0095", "100000")
	m.quote = m.newQuote(f)
	return m
}

// newQuote creates a pending quote of the owner and waits until its hold
// is on the pool.
func (m *fuzzMarket) newQuote(t testing.TB) string {
	t.Helper()
	held := m.poolView(t).held
	q := mustCreateQuote(t, m.s, m.owner.SandboxKey, quoteRequest("NGN", "USDT", "16000", "0.0006", "source"))
	m.settle(t, held+10_000_000)
	return getString(t, q, "quoteId")
}

// fuzzPoolView is what of the pool a refused request must not move.
type fuzzPoolView struct {
	balance, held       engine.Amount
	accepted, completed uint64
}

func (m *fuzzMarket) poolView(t testing.TB) fuzzPoolView {
	t.Helper()
	p, ok := m.s.Sys.Pool(m.pool.ID)
	if !ok {
		t.Fatal("fuzz pool missing")
	}
	return fuzzPoolView{p.Liquidity.Balance, p.Liquidity.Held, p.Accepted, p.Completed}
}

// settle waits until the pool's holds are held: the consequences of
// acknowledged writes reach the pool actor just after the reply.
func (m *fuzzMarket) settle(t testing.TB, held engine.Amount) {
	t.Helper()
	poll.True(t, 5*time.Second, "pool holds settle", func() bool { return m.poolView(t).held == held })
}

// fuzzState is everything a refused request must leave as it was.
type fuzzState struct {
	seq   uint64
	pool  fuzzPoolView
	quote engine.Status
}

func (m *fuzzMarket) state(t testing.TB) fuzzState {
	t.Helper()
	q, ok := m.s.Sys.Quote(m.owner.Client.ID, engine.ModeSandbox, mustQuoteID(t, m.quote))
	if !ok {
		t.Fatalf("quote %s missing", m.quote)
	}
	return fuzzState{seq: m.s.Log.LastSeq(), pool: m.poolView(t), quote: q.Status}
}

// unchanged fails if a refused request moved anything, or broke the ledger.
func (m *fuzzMarket) unchanged(t testing.TB, before fuzzState, what string, r *response) {
	t.Helper()
	if after := m.state(t); after != before {
		t.Fatalf("refused %s (%s) changed the state: %+v → %+v", what, r, before, after)
	}
	m.ledgerOK(t)
}

func (m *fuzzMarket) ledgerOK(t testing.TB) {
	t.Helper()
	for _, mode := range engine.Modes {
		report, err := m.s.Sys.LedgerCheck(mode)
		if err != nil || !report.OK {
			t.Fatalf("ledger check of %s: %v %v", mode, err, report.Problems)
		}
	}
}

func mustQuoteID(t testing.TB, id string) engine.QuoteID {
	t.Helper()
	raw, ok := engine.ParseUUID(id)
	if !ok {
		t.Fatalf("quote id %q", id)
	}
	return engine.QuoteID(raw)
}

// fuzzDo sends one HTTP/1.1 request over a new connection with the bytes
// given: the target as is, header values with CR and LF blanked (so that a
// header cannot end the head early and leave the server waiting for a
// body), the body with a Content-Length.
func fuzzDo(t testing.TB, addr, method, target string, body []byte, headers ...string) *response {
	t.Helper()
	if len(body) > fuzzBodyBytesMax {
		// The server refuses it from Content-Length and closes, which can
		// reset the connection before the answer is read; TestLimits covers
		// oversized bodies.
		t.Skip("body over the server's limit")
	}
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	var head bytes.Buffer
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: oja\r\nConnection: close\r\n", method, target)
	for i := 0; i+1 < len(headers); i += 2 {
		value := strings.NewReplacer("\r", " ", "\n", " ").Replace(headers[i+1])
		fmt.Fprintf(&head, "%s: %s\r\n", headers[i], value)
	}
	if body != nil {
		fmt.Fprintf(&head, "Content-Length: %d\r\n", len(body))
	}
	head.WriteString("\r\n")
	head.Write(body)
	if _, err := conn.Write(head.Bytes()); err != nil {
		t.Fatalf("%s %q: write: %v", method, target, err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %q: no answer: %v", method, target, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %q: read body: %v", method, target, err)
	}
	return &response{status: res.StatusCode, header: res.Header, body: raw}
}

// fuzzBodyBytesMax is the largest body the fuzz targets send: the server's
// limit (bodyBytesMax).
const fuzzBodyBytesMax = 64 << 10

// fuzzEscape makes a query string safe for a request line while keeping it
// what it was for the server: bytes a request line cannot
// hold are percent-encoded (the server decodes them back); '%', '&' and '='
// stay as they are, so malformed escapes and odd separators reach it too.
func fuzzEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '#' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// wantAnswer checks what every answer must be: not a 5xx, with
// X-Request-Id, and a refusal in the spec's shape.
func wantAnswer(t testing.TB, what string, r *response) {
	t.Helper()
	if r.status >= 500 || r.status < 200 {
		t.Fatalf("%s: status %d: %s", what, r.status, r.body)
	}
	if r.header.Get("X-Request-Id") == "" {
		t.Fatalf("%s: no X-Request-Id", what)
	}
	if r.status < 300 {
		return
	}
	ct := r.header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		var e struct{ Code, Message string }
		if err := json.Unmarshal(r.body, &e); err != nil || e.Code == "" || e.Message == "" {
			t.Fatalf("%s: %d with a malformed error body: %s", what, r.status, r.body)
		}
	case strings.HasPrefix(ct, "application/xml"):
		var e struct {
			XMLName xml.Name `xml:"MsgRjct"`
			Code    string   `xml:"Rsn>RjctgPtyRsn"`
		}
		if err := xml.Unmarshal(r.body, &e); err != nil || e.Code == "" {
			t.Fatalf("%s: %d with a malformed MsgRjct: %s", what, r.status, r.body)
		}
	default:
		t.Fatalf("%s: %d with Content-Type %q: %s", what, r.status, ct, r.body)
	}
}

// ---- JSON bodies -----------------------------------------------------------

// fuzzCreateSeeds are create bodies: valid ones in both directions and
// pairs, and each kind of mistake.
var fuzzCreateSeeds = []string{
	`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":16000,"rate":0.0006,"amountDirection":"source"}`,
	`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":10.5,"rate":0.0006,"amountDirection":"destination","chain":"TRON"}`,
	`{"sourceCurrency":"NGN","destinationCurrency":"GHS","amount":1000,"rate":0.009,"amountDirection":"source",` +
		`"chatMetadata":{"conversationId":"c","chatQuoteId":"q","listingId":"l","negotiationStartedAt":"2026-11-21T10:00:00.000Z"}}`,
	`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1e3,"rate":6.25E-4,"amountDirection":"source","listingId":"7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4"}`,
	`{"sourceCurrency":"GHS","destinationCurrency":"NGN","amount":1,"rate":1,"amountDirection":"source"}`,
	`{"sourceCurrency":"USDT","destinationCurrency":"NGN","amount":1,"rate":1,"amountDirection":"source"}`,
	`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":0.001,"rate":0.0006,"amountDirection":"source"}`,
	`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":-1,"rate":0,"amountDirection":"sideways","chain":"BTC"}`,
	`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":"16000","rate":[0.0006],"amountDirection":null,"extra":{}}`,
	`{"sourceCurrency":"NGN","sourceCurrency":"NGN"}`,
	`{"amount":1000000000000000000000000000000000000,"rate":0.0000000000000000001}`,
	`{"sourceCurrency":"N\u0047N","destinationCurrency":"\ud800","amount":1,"rate":1,"amountDirection":"source"}`,
	`[{"a":1}]`, `{}`, `{`, `null`, ``, "\x00", `{"a":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`,
}

// FuzzCreateQuoteJSON posts fuzzed bodies (and Idempotency-Keys) to
// POST /partners/marketplace/intent. A created quote is cancelled again at
// once, so that each input starts from the same market.
func FuzzCreateQuoteJSON(f *testing.F) {
	m := newFuzzMarket(f, gatewaytest.Options{MaxOpenQuotes: 5})
	for i, body := range fuzzCreateSeeds {
		f.Add([]byte(body), "")
		if i < 2 {
			f.Add([]byte(body), "retry-1")
			f.Add([]byte(body), strings.Repeat("k", 256))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, idempotencyKey string) {
		headers := []string{"Authorization", "Bearer " + m.owner.SandboxKey, "Content-Type", "application/json"}
		if idempotencyKey != "" {
			headers = append(headers, "Idempotency-Key", idempotencyKey)
		}
		before := m.state(t)
		r := fuzzDo(t, m.s.Addr(), http.MethodPost, intentPath, body, headers...)
		wantAnswer(t, "create", r)
		switch r.status {
		case http.StatusOK:
			var q struct {
				QuoteID string `json:"quoteId"`
				Status  string `json:"status"`
			}
			if err := json.Unmarshal(r.body, &q); err != nil || q.QuoteID == "" || q.Status != "pending" {
				t.Fatalf("200 that is not a new quote: %s", r.body)
			}
			// Cancel it (a replayed Idempotency-Key may name one already
			// cancelled: a safe repeat) and wait for the release.
			c := fuzzDo(t, m.s.Addr(), http.MethodPut, quotePath+q.QuoteID+"/cancel", nil, headers[:2]...)
			if c.status != http.StatusOK {
				t.Fatalf("cancel of a created quote: %s", c)
			}
			m.settle(t, before.pool.held)
			m.ledgerOK(t)
		case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusTooManyRequests:
			m.unchanged(t, before, fmt.Sprintf("create %q", body), r)
		default:
			t.Fatalf("create %q: unexpected %s", body, r)
		}
	})
}

// FuzzAcceptJSON puts fuzzed bodies to PUT …/quote/{id}/accept on the
// owner's pending quote. An accepted quote is cancelled and replaced, so
// that each input meets a pending quote.
func FuzzAcceptJSON(f *testing.F) {
	m := newFuzzMarket(f, gatewaytest.Options{})
	account := m.pool.Liquidity.ID.String()
	for _, body := range []string{
		`{"accountId":"` + account + `"}`,
		`{"accountId":"` + strings.ToUpper(account) + `"}`,
		`{"accountId":"` + m.pool.Proceeds.ID.String() + `"}`,
		`{"accountId":"` + randomUUID + `"}`,
		`{"accountId":"{` + account + `}"}`,
		`{"accountId":"urn:uuid:` + account + `"}`,
		`{"accountId":"` + account + `","settlement":"bank"}`,
		`{"accountId":["` + account + `"]}`,
		`{"accountId":null}`, `{"accountId":7}`, `{}`, `[]`, `"x"`, ``, `{"accountId":"` + account,
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		headers := []string{"Authorization", "Bearer " + m.owner.SandboxKey, "Content-Type", "application/json"}
		before := m.state(t)
		r := fuzzDo(t, m.s.Addr(), http.MethodPut, quotePath+m.quote+"/accept", body, headers...)
		wantAnswer(t, "accept", r)
		switch r.status {
		case http.StatusOK:
			var q struct{ Status string }
			if err := json.Unmarshal(r.body, &q); err != nil || q.Status != "awaiting_payment" {
				t.Fatalf("200 accept that is not an accepted quote: %s", r.body)
			}
			var named struct {
				AccountID string `json:"accountId"`
			}
			_ = json.Unmarshal(body, &named)
			if id, ok := engine.ParseUUID(named.AccountID); !ok || engine.AccountID(id) != m.pool.Liquidity.ID {
				t.Fatalf("accepted without naming the quote's pool account: %q", body)
			}
			c := fuzzDo(t, m.s.Addr(), http.MethodPut, quotePath+m.quote+"/cancel", nil, headers[:2]...)
			if c.status != http.StatusOK {
				t.Fatalf("cancel of an accepted quote: %s", c)
			}
			m.settle(t, before.pool.held-10_000_000)
			m.quote = m.newQuote(t)
			m.ledgerOK(t)
		case http.StatusBadRequest, http.StatusUnprocessableEntity:
			m.unchanged(t, before, fmt.Sprintf("accept %q", body), r)
		default:
			t.Fatalf("accept %q: unexpected %s", body, r)
		}
	})
}

// fuzzAdminRoutes are the admin calls that take a JSON body. POST
// /admin/v1/backup is left out: its body names a directory to write.
func (m *fuzzMarket) fuzzAdminRoutes(t testing.TB) []struct{ method, path string } {
	pool := "/admin/v1/pools/" + m.pool.ID.String()
	return []struct{ method, path string }{
		{http.MethodPost, "/admin/v1/clients"},
		{http.MethodPost, "/admin/v1/clients/" + m.other.Client.ID.String() + "/keys"},
		{http.MethodPost, "/admin/v1/pools"},
		{http.MethodPut, pool + "/rate"},
		{http.MethodPut, pool + "/status"},
		{http.MethodPost, pool + "/deposit"},
		{http.MethodPost, pool + "/withdraw"},
		{http.MethodPost, "/admin/v1/accounts/" + wallet(t, m.other, engine.ModeSandbox, engine.CurrencyNGN) + "/deposit"},
	}
}

// FuzzAdminJSON sends fuzzed bodies to each admin call that reads one: a
// refusal appends nothing, a success keeps the ledger balanced.
func FuzzAdminJSON(f *testing.F) {
	m := newFuzzMarket(f, gatewaytest.Options{})
	for _, seed := range []struct {
		route uint8
		body  string
	}{
		{0, `{"name":"Ada Traders"}`}, {0, `{"name":"   "}`}, {0, `{"name":""}`}, {0, `{"name":1}`},
		{1, `{"mode":"sandbox"}`}, {1, `{"mode":"LIVE"}`}, {1, `{"mode":"live","x":1}`},
		{2, `{"mode":"sandbox","name":"New Desk","source":"NGN","destination":"USDT","rate":0.00063}`},
		{2, `{"mode":"live","name":"x","source":"GHS","destination":"NGN","rate":1,"ownerClientId":"` + randomUUID + `"}`},
		{2, `{"mode":"live","name":"x","source":"NGN","destination":"GHS","rate":1e-19}`},
		{3, `{"rate":0.000626}`}, {3, `{"rate":0}`}, {3, `{"rate":19}`},
		{4, `{"status":"active"}`}, {4, `{"status":"closed"}`},
		{5, `{"amount":10.5}`}, {5, `{"amount":0.0000001}`}, {5, `{"amount":-5}`},
		{6, `{"amount":1}`}, {6, `{"amount":99999999}`},
		{7, `{"amount":100.25}`}, {7, `{"amount":100.255}`}, {7, `{"amount":1e400}`},
		{0, ``}, {3, `[]`}, {5, `{"amount":` + strings.Repeat("9", 80) + `}`},
	} {
		f.Add(seed.route, []byte(seed.body))
	}
	routes := m.fuzzAdminRoutes(f)
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		rt := routes[int(route)%len(routes)]
		before := m.state(t)
		r := fuzzDo(t, m.s.AdminAddr(), rt.method, rt.path, body,
			"Authorization", "Bearer "+gatewaytest.AdminToken, "Content-Type", "application/json")
		what := fmt.Sprintf("%s %s %q", rt.method, rt.path, body)
		wantAnswer(t, what, r)
		switch r.status {
		case http.StatusOK, http.StatusCreated:
			if !json.Valid(r.body) {
				t.Fatalf("%s: %d with a body that is not JSON: %s", what, r.status, r.body)
			}
			m.ledgerOK(t)
		case http.StatusBadRequest, http.StatusUnprocessableEntity:
			m.unchanged(t, before, what, r)
		default:
			t.Fatalf("%s: unexpected %s", what, r)
		}
	})
}

// ---- Query strings ---------------------------------------------------------

// FuzzQuery sends fuzzed query strings to every GET that reads one: the
// XML listings (source, destination, page, pageSize) and makers rate (from,
// to), the rate stream (from, to), the admin ledger check and pool list
// (mode). Reads never write.
func FuzzQuery(f *testing.F) {
	m := newFuzzMarket(f, gatewaytest.Options{SSEHeartbeat: 20 * time.Millisecond})
	for route, queries := range [][]string{
		{"", "source=NGN&destination=USDT&page=0&pageSize=100", "page=-1", "pageSize=0", "pageSize=101",
			"page=99999999999999999999", "page=1.5", "source=XXX", "page=1&page=2", "pageSize=%31%30"},
		{"from=NGN&to=USDT", "from=GHS&to=USDT", "from=NGN", "from=NGN&to=NGN", "from=ngn&to=usdt", "from=%zz", ""},
		{"", "from=NGN&to=USDT", "from=NGN&to=GHS", "from=GHS&to=NGN", "to=USDT", "from=NGN&to=&x=1"},
		{"mode=sandbox", "mode=live", "mode=", "mode=SANDBOX", "", "mode=sandbox&mode=live"},
		{"mode=live", "mode=x", "", "mode=%00"},
	} {
		for _, q := range queries {
			f.Add(uint8(route), q)
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, query string) {
		target := "?" + fuzzEscape(query)
		before := m.state(t)
		var r *response
		var stream bool
		switch route % 5 {
		case 0:
			r = m.partnerGet(t, "/api/v1/partners/fx/listings"+target)
		case 1:
			r = m.partnerGet(t, "/api/v1/partners/fx/rates/makers"+target)
		case 2:
			r, stream = m.streamGet(t, ratesStreamPathForFuzz+target), true
		case 3:
			r = fuzzDo(t, m.s.AdminAddr(), http.MethodGet, "/admin/v1/ledger/check"+target, nil,
				"Authorization", "Bearer "+gatewaytest.AdminToken)
		case 4:
			r = fuzzDo(t, m.s.AdminAddr(), http.MethodGet, "/admin/v1/pools"+target, nil,
				"Authorization", "Bearer "+gatewaytest.AdminToken)
		}
		what := fmt.Sprintf("route %d query %q", route%5, query)
		wantAnswer(t, what, r)
		switch {
		case r.status == http.StatusOK && !stream:
			fuzzWellFormed(t, what, r)
		case r.status == http.StatusOK, r.status == http.StatusBadRequest:
		case r.status == http.StatusNotFound && route%5 == 1: // NO_RATE
		default:
			t.Fatalf("%s: unexpected %s", what, r)
		}
		m.unchanged(t, before, what, r)
	})
}

// ratesStreamPathForFuzz is the rate stream (spec §8).
const ratesStreamPathForFuzz = "/api/v1/partners/marketplace/rates/stream"

func (m *fuzzMarket) partnerGet(t testing.TB, target string, headers ...string) *response {
	t.Helper()
	return fuzzDo(t, m.s.Addr(), http.MethodGet, target, nil,
		append([]string{"Authorization", "Bearer " + m.owner.SandboxKey}, headers...)...)
}

// streamGet opens the rate stream and, when it is served, reads its first
// frame, closes, and waits until the server has let the stream go (so the
// per-key stream cap never turns the next input away). The answer's body is
// the first frame.
func (m *fuzzMarket) streamGet(t testing.TB, target string, headers ...string) *response {
	t.Helper()
	conn, err := net.DialTimeout("tcp", m.s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	var head bytes.Buffer
	fmt.Fprintf(&head, "GET %s HTTP/1.1\r\nHost: oja\r\nAuthorization: Bearer %s\r\n", target, m.owner.SandboxKey)
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&head, "%s: %s\r\n", headers[i], strings.NewReplacer("\r", " ", "\n", " ").Replace(headers[i+1]))
	}
	head.WriteString("\r\n")
	if _, err := conn.Write(head.Bytes()); err != nil {
		t.Fatalf("write: %v", err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		t.Fatalf("stream %q: no answer: %v", target, err)
	}
	r := &response{status: res.StatusCode, header: res.Header}
	if res.StatusCode != http.StatusOK {
		r.body, _ = io.ReadAll(res.Body)
		return r
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("stream %q: 200 with Content-Type %q", target, ct)
	}
	first := make([]byte, len("retry: 3000\n"))
	if _, err := io.ReadFull(res.Body, first); err != nil || string(first) != "retry: 3000\n" {
		t.Fatalf("stream %q: first bytes %q, %v; want the retry line", target, first, err)
	}
	r.body = first
	conn.Close()
	poll.True(t, 5*time.Second, "the closed stream is let go", func() bool { return m.s.Streams() == 0 })
	return r
}

// fuzzWellFormed checks that a 200 body parses as its Content-Type says.
func fuzzWellFormed(t testing.TB, what string, r *response) {
	t.Helper()
	switch ct := r.header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "application/json"):
		if !json.Valid(r.body) {
			t.Fatalf("%s: 200 with invalid JSON: %s", what, r.body)
		}
	case strings.HasPrefix(ct, "application/xml"):
		d := xml.NewDecoder(bytes.NewReader(r.body))
		for {
			if _, err := d.Token(); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("%s: 200 with invalid XML (%v): %s", what, err, r.body)
				}
				return
			}
		}
	default:
		t.Fatalf("%s: 200 with Content-Type %q", what, ct)
	}
}

// ---- Path ids --------------------------------------------------------------

// FuzzPathID puts fuzzed ids into every path that takes one, with the
// other partner's key: ids of the owner's quote and accounts must answer
// exactly as missing ones (404), the other partner's own wallet is
// readable, and nothing is ever written.
func FuzzPathID(f *testing.F) {
	m := newFuzzMarket(f, gatewaytest.Options{})
	ownWallet := wallet(f, m.other, engine.ModeSandbox, engine.CurrencyNGN)
	ids := []string{
		m.quote, strings.ToUpper(m.quote), "{" + m.quote + "}", "urn:uuid:" + m.quote, m.quote[:35],
		m.pool.Liquidity.ID.String(), m.pool.Proceeds.ID.String(), m.pool.ID.String(),
		wallet(f, m.owner, engine.ModeSandbox, engine.CurrencyNGN), wallet(f, m.owner, engine.ModeLive, engine.CurrencyUSDT),
		ownWallet, wallet(f, m.other, engine.ModeLive, engine.CurrencyNGN), randomUUID,
		"NGN", "ngn", "USDT", "", ".", "..", "../balances", "../../admin/v1/pools", "%2F", "a/b", "\x00", strings.Repeat("f", 5000),
	}
	for route := range fuzzPathRoutes {
		for _, id := range ids {
			f.Add(uint8(route), id)
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, id string) {
		rt := fuzzPathRoutes[int(route)%len(fuzzPathRoutes)]
		target := strings.Replace(rt.path, "{id}", url.PathEscape(id), 1)
		before := m.state(t)
		var body []byte
		headers := []string{"Authorization", "Bearer " + m.other.SandboxKey, "x-service-source", "fuzz"}
		switch rt.body {
		case "json":
			body = []byte(`{"accountId":"` + m.pool.Liquidity.ID.String() + `"}`)
			headers = append(headers, "Content-Type", "application/json")
		case "xml":
			body = []byte(`<FXTradAccptReq><SttlmDstn><BkDstn><AcctNm>Ada</AcctNm><AcctNb>0123456789</AcctNb>` +
				`<BkCd>058</BkCd></BkDstn></SttlmDstn></FXTradAccptReq>`)
			headers = append(headers, "Content-Type", "application/xml")
		}
		r := fuzzDo(t, m.s.Addr(), rt.method, target, body, headers...)
		what := fmt.Sprintf("%s %s", rt.method, target)
		wantAnswer(t, what, r)
		// Whatever route the path ends up on (dot segments and escaped
		// slashes move it), nothing of the owner's is ever shown, beyond
		// the caller's own words echoed (an XML MsgRjct names the TxId).
		for _, secret := range m.ownerIDs() {
			if bytes.Contains(bytes.ToLower(r.body), []byte(secret)) && !strings.Contains(strings.ToLower(id), secret) {
				t.Fatalf("%s: %d shows the owner's %s to another partner: %s", what, r.status, secret, r.body)
			}
		}
		parsed, isUUID := engine.ParseUUID(id)
		mine := isUUID && m.otherWallet(engine.AccountID(parsed))
		switch rt.names {
		case "quote":
			// The other partner has no quote: every well-formed id, the
			// owner's quote among them, answers as a missing one.
			if isUUID && r.status != http.StatusNotFound {
				t.Fatalf("%s: %d, want 404 as for a missing quote: %s", what, r.status, r.body)
			}
		case "account":
			switch {
			case mine && r.status != http.StatusOK:
				t.Fatalf("%s: %d for the caller's own wallet: %s", what, r.status, r.body)
			case isUUID && !mine && r.status != http.StatusNotFound:
				t.Fatalf("%s: %d, want 404 as for a missing account (owner's: %v): %s", what, r.status,
					m.ownerAccount(engine.AccountID(parsed)), r.body)
			}
		case "currency":
			if _, known := engine.ParseCurrency(id); known && r.status != http.StatusOK {
				t.Fatalf("%s: %d for a known currency", what, r.status)
			}
		}
		m.unchanged(t, before, what, r)
	})
}

// fuzzPathRoutes are the public routes with an id in their path, and what
// the id names.
var fuzzPathRoutes = []struct{ method, path, body, names string }{
	{http.MethodGet, quotePath + "{id}", "", "quote"},
	{http.MethodPut, quotePath + "{id}/cancel", "", "quote"},
	{http.MethodPut, quotePath + "{id}/complete", "", "quote"},
	{http.MethodPut, quotePath + "{id}/accept", "json", "quote"},
	{http.MethodGet, balancesPath + "/{id}", "", "account"},
	{http.MethodGet, balancesPath + "/currency/{id}", "", "currency"},
	{http.MethodGet, "/api/v1/partners/fx/trades/{id}", "", "quote"},
	{http.MethodPut, "/api/v1/partners/fx/trades/{id}/cancellation", "", "quote"},
	{http.MethodPost, "/api/v1/partners/fx/trades/{id}/confirmation", "", "quote"},
	{http.MethodPost, "/api/v1/partners/fx/trades/{id}/accept", "xml", "quote"},
}

// otherWallet reports whether id is one of the other partner's wallets in
// the mode of its key (sandbox).
func (m *fuzzMarket) otherWallet(id engine.AccountID) bool {
	for _, w := range m.other.Client.Wallets {
		if w.Account == id && w.Mode == engine.ModeSandbox {
			return true
		}
	}
	return false
}

// ownerIDs are the owner's quote and accounts and the pool's accounts, as
// they appear in JSON and XML answers (lower case).
func (m *fuzzMarket) ownerIDs() []string {
	ids := []string{m.quote, m.pool.Liquidity.ID.String(), m.pool.Proceeds.ID.String()}
	for _, w := range m.owner.Client.Wallets {
		ids = append(ids, w.Account.String())
	}
	return ids
}

// ownerAccount reports whether id is the owner's wallet or the pool's
// account.
func (m *fuzzMarket) ownerAccount(id engine.AccountID) bool {
	for _, w := range m.owner.Client.Wallets {
		if w.Account == id {
			return true
		}
	}
	return id == m.pool.Liquidity.ID || id == m.pool.Proceeds.ID
}

// ---- Last-Event-ID -----------------------------------------------------------

// FuzzLastEventID reconnects to the rate stream with fuzzed Last-Event-ID
// headers: the stream is served from the current rates whatever the value
// (spec §8), or the request is refused as malformed HTTP; never more.
func FuzzLastEventID(f *testing.F) {
	m := newFuzzMarket(f, gatewaytest.Options{SSEHeartbeat: 20 * time.Millisecond})
	for _, id := range []string{"", "0", "1", "42", "-1", "18446744073709551615", "18446744073709551616",
		" 7 ", "1e3", "0x10", "abc", "\x00", "\xff\xfe", strings.Repeat("9", 5000), "1,2"} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		before := m.state(t)
		r := m.streamGet(t, ratesStreamPathForFuzz+"?from=NGN&to=USDT", "Last-Event-ID", id)
		what := fmt.Sprintf("Last-Event-ID %q", id)
		wantAnswer(t, what, r)
		if r.status != http.StatusOK && r.status != http.StatusBadRequest {
			t.Fatalf("%s: unexpected %s", what, r)
		}
		m.unchanged(t, before, what, r)
	})
}
