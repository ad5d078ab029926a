package gateway_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// limitRefusalMax is how long any limit refusal may take: each is decided
// from the request's size or shape before any work.
const limitRefusalMax = 2 * time.Second

// TestLimits sends one request over each limit of the JSON API (doc.go's
// list) to a real server: each is refused with the spec's status and
// code, fast, and changes nothing.
func TestLimits(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	p := s.NewPartner(t, "limits")
	pool := s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Limits Desk", "0.000625", "1000")
	q := mustCreateQuote(t, s, p.SandboxKey, quoteRequest("NGN", "USDT", "16000", "0.0006", "source"))
	valid := `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":16000,"rate":0.0006,"amountDirection":"source"`
	nested := func(levels int) string { // levels of arrays in one extra member
		return valid + `,"x":` + strings.Repeat("[", levels) + strings.Repeat("]", levels) + `}`
	}
	giantArray := "[" + strings.Repeat("0,", 30<<10) + "0]"
	before := limitsState(t, s, pool.ID.String())

	cases := []struct {
		name           string
		method, url    string
		key, body      string
		headers        []string
		status         int
		code, detail   string // detail: a member details must name
		detailContains string // ... with a message containing this
	}{
		{"JSON nesting at the limit is parsed", http.MethodPost, s.URL + intentPath, p.SandboxKey, nested(31), nil,
			400, "VALIDATION_ERROR", "x", "not a known field"},
		{"JSON nesting over the limit", http.MethodPost, s.URL + intentPath, p.SandboxKey, nested(32), nil,
			400, "VALIDATION_ERROR", "body", "32 levels"},
		{"JSON nesting 20000 deep", http.MethodPost, s.URL + intentPath, p.SandboxKey, nested(20000), nil,
			400, "VALIDATION_ERROR", "body", "32 levels"},
		{"deep chatMetadata", http.MethodPost, s.URL + intentPath, p.SandboxKey,
			valid + `,"chatMetadata":` + strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40) + "}", nil,
			400, "VALIDATION_ERROR", "body", "32 levels"},
		{"deep accept body", http.MethodPut, s.URL + quotePath + getString(t, q, "quoteId") + "/accept", p.SandboxKey,
			strings.Repeat("[", 5000) + strings.Repeat("]", 5000), nil, 400, "VALIDATION_ERROR", "body", "32 levels"},
		{"deep admin body", http.MethodPost, s.Admin + "/admin/v1/clients", gatewaytest.AdminToken,
			`{"name":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, nil, 400, "VALIDATION_ERROR", "body", "32 levels"},
		{"giant array as a known member", http.MethodPost, s.URL + intentPath, p.SandboxKey,
			strings.Replace(valid, `"amount":16000`, `"amount":`+giantArray, 1) + "}", nil,
			400, "VALIDATION_ERROR", "amount", "number"},
		{"giant array as an unknown member", http.MethodPost, s.URL + intentPath, p.SandboxKey,
			valid + `,"allocations":` + giantArray + "}", nil, 400, "VALIDATION_ERROR", "allocations", "not a known field"},
		{"giant array as the body", http.MethodPost, s.URL + intentPath, p.SandboxKey, giantArray, nil,
			400, "VALIDATION_ERROR", "body", "object"},
		{"too many members", http.MethodPost, s.URL + intentPath, p.SandboxKey,
			valid + manyMembers(40) + "}", nil, 400, "VALIDATION_ERROR", "body", "too many members"},
		{"body over 64 KiB", http.MethodPost, s.URL + intentPath, p.SandboxKey,
			valid + `,"pad":"` + strings.Repeat("x", 65<<10) + `"}`, nil, 413, "PAYLOAD_TOO_LARGE", "", ""},
		{"enum member over 16 bytes", http.MethodPost, s.URL + intentPath, p.SandboxKey,
			strings.Replace(valid, `"source"`, `"`+strings.Repeat("s", 17)+`"`, 1) + "}", nil,
			400, "VALIDATION_ERROR", "amountDirection", "at most 16"},
		{"id member over 64 bytes", http.MethodPut, s.URL + quotePath + getString(t, q, "quoteId") + "/accept", p.SandboxKey,
			`{"accountId":"` + strings.Repeat("a", 65) + `"}`, nil, 400, "VALIDATION_ERROR", "accountId", "at most 64"},
		{"number over 64 characters", http.MethodPost, s.URL + intentPath, p.SandboxKey,
			strings.Replace(valid, "16000", "1"+strings.Repeat("0", 70), 1) + "}", nil, 400, "VALIDATION_ERROR", "amount", "number"},
		{"Idempotency-Key over 255", http.MethodPost, s.URL + intentPath, p.SandboxKey, valid + "}",
			[]string{"Idempotency-Key", strings.Repeat("k", 256)}, 400, "VALIDATION_ERROR", "Idempotency-Key", "255"},
		{"x-service-source over 128", http.MethodGet, s.URL + balancesPath, p.SandboxKey, "",
			[]string{"x-service-source", strings.Repeat("s", 129)}, 400, "VALIDATION_ERROR", "x-service-source", "128"},
		{"bearer token over 256", http.MethodGet, s.URL + balancesPath, "oja_sandbox_" + strings.Repeat("k", 260), "",
			[]string{"x-service-source", "limits"}, 401, "UNAUTHORIZED", "", ""},
		{"admin token over 256", http.MethodGet, s.Admin + "/admin/v1/pools", strings.Repeat("t", 300), "", nil,
			401, "UNAUTHORIZED", "", ""},
		{"backup dir over 4096", http.MethodPost, s.Admin + "/admin/v1/backup", gatewaytest.AdminToken,
			`{"dir":"/tmp/` + strings.Repeat("d", 4100) + `"}`, nil, 400, "VALIDATION_ERROR", "dir", "4096"},
		{"pool name over 200", http.MethodPost, s.Admin + "/admin/v1/pools", gatewaytest.AdminToken,
			`{"mode":"sandbox","name":"` + strings.Repeat("n", 201) + `","source":"NGN","destination":"USDT","rate":0.0006}`,
			nil, 400, "VALIDATION_ERROR", "name", "200"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			start := time.Now()
			var r *response
			if tc.status == http.StatusRequestEntityTooLarge {
				r = doOversized(t, tc.method, tc.url, tc.key, body, tc.headers...)
			} else {
				r = do(t, tc.method, tc.url, tc.key, body, tc.headers...)
			}
			if d := time.Since(start); d > limitRefusalMax {
				t.Errorf("refusal took %s", d)
			}
			details := wantError(t, r, tc.status, tc.code)
			if tc.detail != "" {
				msg, _ := details[tc.detail].(string)
				if !strings.Contains(msg, tc.detailContains) {
					t.Errorf("details[%q] = %q, want it to mention %q; body %s", tc.detail, msg, tc.detailContains, r.body)
				}
			}
		})
	}

	t.Run("headers over 8 KiB", func(t *testing.T) {
		conn, err := net.DialTimeout("tcp", strings.TrimPrefix(s.URL, "http://"), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(limitRefusalMax))
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nX-Pad: %s\r\n\r\n",
			balancesPath, p.SandboxKey, strings.Repeat("p", 9<<10))
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("read answer: %v", err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest && res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("status %d, want 400 or 431", res.StatusCode)
		}
	})

	if after := limitsState(t, s, pool.ID.String()); after != before {
		t.Errorf("refused requests changed the state:\nbefore %s\nafter  %s", before, after)
	}
}

// manyMembers is n extra members with distinct names.
func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"m%d":1`, i)
	}
	return b.String()
}

// limitsState is what a refused request must not change: the log's length,
// the pool's balance and availability, the number of clients.
func limitsState(t *testing.T, s *gatewaytest.Server, poolID string) string {
	t.Helper()
	p := pool(t, s, poolID)
	return fmt.Sprintf("log %d, pool %s/%s, clients %d", s.Log.LastSeq(), number(t, p, "balance"),
		number(t, p, "available"), len(s.Sys.Clients()))
}

// TestRateLimitHeaders (--rate-limit): every answer to a limited key carries
// RateLimit-Limit and RateLimit-Remaining; the refusal carries Retry-After
// and RateLimit-Reset in whole seconds; the XML API shares the bucket.
func TestRateLimitHeaders(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{RateLimit: 2})
	p := s.NewPartner(t, "limited")
	get := func(path string) *response {
		return do(t, http.MethodGet, s.URL+path, p.SandboxKey, nil, "x-service-source", "limits")
	}
	first := get(balancesPath)
	wantStatus(t, first, http.StatusOK)
	if got := first.header.Get("RateLimit-Limit"); got != "2" {
		t.Errorf("RateLimit-Limit: got %q, want 2", got)
	}
	if got := first.header.Get("RateLimit-Remaining"); got != "1" && got != "0" {
		t.Errorf("RateLimit-Remaining after one request: got %q, want 1 (or 0 on a slow machine)", got)
	}
	var refused *response
	for range 10 {
		r := get("/api/v1/partners/fx/rates/makers?from=NGN&to=USDT") // XML, same key, same bucket
		if r.status == http.StatusTooManyRequests {
			refused = r
			break
		}
		if r.header.Get("RateLimit-Limit") == "" {
			t.Errorf("XML answer %d without RateLimit-Limit", r.status)
		}
	}
	if refused == nil {
		t.Fatal("10 requests within a burst of 2 were never refused")
	}
	for _, h := range []string{"Retry-After", "RateLimit-Reset"} {
		if v, err := strconv.Atoi(refused.header.Get(h)); err != nil || v < 1 {
			t.Errorf("%s: got %q, want whole seconds >= 1", h, refused.header.Get(h))
		}
	}
	if got := refused.header.Get("RateLimit-Remaining"); got != "0" {
		t.Errorf("RateLimit-Remaining on refusal: got %q, want 0", got)
	}
	if !strings.Contains(string(refused.body), "RATE_LIMITED") {
		t.Errorf("refusal body: %s", refused.body)
	}
}

// TestOversizedUnasked sends a body over the bound without asking first:
// the server reads up to the bound, answers 413 in the error shape and
// closes the connection with the rest unread. The client, still writing,
// may see a reset before it reads the answer (an HTTP/1.1 race the server
// cannot close without reading what it refuses), so a reset is retried; an
// answer other than the 413 fails.
func TestOversizedUnasked(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	p := s.NewPartner(t, "unasked")
	body := `{"x":"` + strings.Repeat("a", 65<<10) + `"}`
	var err error
	for range 10 {
		var r *response
		if r, err = tryDo(t, http.MethodPost, s.URL+"/api/v1/partners/marketplace/intent", p.SandboxKey, body); err == nil {
			wantError(t, r, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
			return
		}
		if !strings.Contains(err.Error(), "connection reset") && !strings.Contains(err.Error(), "broken pipe") {
			break
		}
	}
	t.Fatalf("no answer in 10 attempts: %v", err)
}

// TestOversizedAsked: a client that asks first ("Expect: 100-continue") is
// answered 413 before it sends a byte of the body, on every listener.
func TestOversizedAsked(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	for _, tc := range []struct{ name, addr, path string }{
		{"public", strings.TrimPrefix(s.URL, "http://"), "/api/v1/partners/marketplace/intent"},
		{"admin", strings.TrimPrefix(s.Admin, "http://"), "/admin/v1/payins/bank/statements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.DialTimeout("tcp", tc.addr, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			// Only the head is written: were the server to wait for the
			// body, the read below would time out.
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/xml\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", tc.path, 64<<20)
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(res.Header.Get("Content-Type"), "json") || res.Header.Get("X-Request-Id") == "" {
				t.Fatalf("answered %s %v", res.Status, res.Header)
			}
		})
	}
}
