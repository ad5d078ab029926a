package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// httpClient is the one client of every test: loopback only, bounded.
var httpClient = &http.Client{Timeout: 10 * time.Second}

const (
	intentPath   = "/api/v1/partners/marketplace/intent"
	quotePath    = "/api/v1/partners/marketplace/quote/"
	balancesPath = "/api/v1/partners/balances"
)

var (
	uuidPattern      = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	timestampPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
)

// response is one HTTP answer, read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) String() string {
	return fmt.Sprintf("%d %s", r.status, r.body)
}

// do sends one request. body may be nil (no body), a string or []byte (sent
// as is) or anything else (sent as JSON). Content-Type is application/json
// when there is a body, unless headers name another. headers are name,
// value pairs; key, when not empty, is sent as a Bearer credential.
func do(t testing.TB, method, url, key string, body any, headers ...string) *response {
	t.Helper()
	r, err := tryDo(t, method, url, key, body, headers...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// doOversized is do for a body over the listener's bound, sent as curl sends
// a large upload: "Expect: 100-continue" first, so the server answers 413
// before the body is sent. (A body sent unasked is read up to the bound and
// the connection closed; the client may then see a reset instead of the
// answer: TestOversizedUnasked.)
func doOversized(t testing.TB, method, url, key string, body any, headers ...string) *response {
	t.Helper()
	return do(t, method, url, key, body, append(headers, "Expect", "100-continue")...)
}

func tryDo(t testing.TB, method, url, key string, body any, headers ...string) (*response, error) {
	t.Helper()
	var reader io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		reader = strings.NewReader(b)
	case []byte:
		reader = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("marshal request body: %v", err)
		}
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, reader)
	if err != nil {
		t.Fatalf("new request %s %s: %v", method, url, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return send(t, req, key, headers)
}

// send sets the Bearer credential key (when not empty) and the name, value
// pairs of headers on req, sends it and reads the answer in full.
func send(t testing.TB, req *http.Request, key string, headers []string) (*response, error) {
	t.Helper()
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if len(headers)%2 != 0 {
		t.Fatalf("headers must be name, value pairs: %q", headers)
	}
	for i := 0; i < len(headers); i += 2 {
		req.Header[http.CanonicalHeaderKey(headers[i])] = []string{headers[i+1]}
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return &response{status: res.StatusCode, header: res.Header, body: raw}, nil
}

// admin sends one admin API request with the operator token.
func admin(t testing.TB, s *gatewaytest.Server, method, path string, body any) *response {
	t.Helper()
	return do(t, method, s.Admin+path, gatewaytest.AdminToken, body)
}

// decode parses a JSON body exactly: numbers stay json.Number.
func decode(t testing.TB, raw []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	if d.More() {
		t.Fatalf("decode %q: trailing data", raw)
	}
	return v
}

// object decodes r's body as one JSON object.
func object(t testing.TB, r *response) map[string]any {
	t.Helper()
	m, ok := decode(t, r.body).(map[string]any)
	if !ok {
		t.Fatalf("body is not a JSON object: %s", r.body)
	}
	return m
}

// array decodes r's body as one JSON array.
func array(t testing.TB, r *response) []any {
	t.Helper()
	a, ok := decode(t, r.body).([]any)
	if !ok {
		t.Fatalf("body is not a JSON array: %s", r.body)
	}
	return a
}

// wantStatus fails unless r has status want.
func wantStatus(t testing.TB, r *response, want int) {
	t.Helper()
	if r.status != want {
		t.Fatalf("status: got %d, want %d; body %s", r.status, want, r.body)
	}
}

// wantOK checks a 200 JSON object answer and returns it.
func wantOK(t testing.TB, r *response) map[string]any {
	t.Helper()
	wantStatus(t, r, http.StatusOK)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type: got %q, want application/json", ct)
	}
	return object(t, r)
}

// wantError checks the spec's error shape (spec §9) and returns details (nil
// when absent).
func wantError(t testing.TB, r *response, status int, code string) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status: got %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type: got %q, want application/json", ct)
	}
	if r.header.Get("X-Request-Id") == "" {
		t.Errorf("X-Request-Id: missing on error %d", r.status)
	}
	body := object(t, r)
	if got := body["code"]; got != code {
		t.Fatalf("code: got %v, want %s; body %s", got, code, r.body)
	}
	if msg, _ := body["message"].(string); msg == "" {
		t.Errorf("message: got %v, want a non-empty string", body["message"])
	}
	for k := range body {
		if k != "code" && k != "message" && k != "details" {
			t.Errorf("error body has unexpected member %q: %s", k, r.body)
		}
	}
	if raw, ok := body["details"]; ok {
		details, ok := raw.(map[string]any)
		if !ok {
			t.Fatalf("details: got %T, want an object", raw)
		}
		return details
	}
	return nil
}

// wantDetailsNames fails unless details has exactly the members want.
func wantDetailsNames(t testing.TB, details map[string]any, want ...string) {
	t.Helper()
	if got := sortedKeys(details); !slices.Equal(got, sortedStrings(want)) {
		t.Errorf("details members: got %q, want %q", got, sortedStrings(want))
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sortedStrings(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// wantKeys fails unless m has exactly the members want (absent optional
// objects must be omitted, not null).
func wantKeys(t testing.TB, what string, m map[string]any, want ...string) {
	t.Helper()
	if got := sortedKeys(m); !slices.Equal(got, sortedStrings(want)) {
		t.Errorf("%s members: got %q, want %q", what, got, sortedStrings(want))
	}
	for k, v := range m {
		if v == nil {
			t.Errorf("%s.%s is null; absent values must be omitted", what, k)
		}
	}
}

// get walks a path of object members ("allocationResult.allocations").
func get(t testing.TB, v any, path string) any {
	t.Helper()
	for _, part := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: %q is not inside an object (got %T)", path, part, v)
		}
		if v, ok = m[part]; !ok {
			t.Fatalf("%s: member %q missing", path, part)
		}
	}
	return v
}

func getString(t testing.TB, v any, path string) string {
	t.Helper()
	s, ok := get(t, v, path).(string)
	if !ok {
		t.Fatalf("%s: got %T (%v), want a string", path, get(t, v, path), get(t, v, path))
	}
	return s
}

func getObject(t testing.TB, v any, path string) map[string]any {
	t.Helper()
	m, ok := get(t, v, path).(map[string]any)
	if !ok {
		t.Fatalf("%s: got %T, want an object", path, get(t, v, path))
	}
	return m
}

func getArray(t testing.TB, v any, path string) []any {
	t.Helper()
	a, ok := get(t, v, path).([]any)
	if !ok {
		t.Fatalf("%s: got %T, want an array", path, get(t, v, path))
	}
	return a
}

// number reads a JSON number exactly.
func number(t testing.TB, v any, path string) decimal.Decimal {
	t.Helper()
	n, ok := get(t, v, path).(json.Number)
	if !ok {
		t.Fatalf("%s: got %T (%v), want a JSON number", path, get(t, v, path), get(t, v, path))
	}
	d, err := decimal.NewFromString(string(n))
	if err != nil {
		t.Fatalf("%s: %q is not a decimal: %v", path, n, err)
	}
	if strings.ContainsAny(string(n), "eE") {
		t.Errorf("%s: %q is in exponent form", path, n)
	}
	return d
}

// wantNumber fails unless the number at path equals want (by value).
func wantNumber(t testing.TB, v any, path, want string) {
	t.Helper()
	if got := number(t, v, path); !got.Equal(decimal.RequireFromString(want)) {
		t.Errorf("%s: got %s, want %s", path, got, want)
	}
}

// wantTimestamp fails unless path holds an RFC 3339 UTC time with ms.
func wantTimestamp(t testing.TB, v any, path string) time.Time {
	t.Helper()
	s := getString(t, v, path)
	if !timestampPattern.MatchString(s) {
		t.Errorf("%s: got %q, want RFC 3339 UTC with milliseconds", path, s)
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Errorf("%s: %q: %v", path, s, err)
	}
	return at
}

func wantUUID(t testing.TB, v any, path string) string {
	t.Helper()
	s := getString(t, v, path)
	if !uuidPattern.MatchString(s) {
		t.Errorf("%s: got %q, want a lower-case canonical UUID", path, s)
	}
	return s
}

// n is a JSON number literal for request bodies.
func n(s string) json.Number { return json.Number(s) }

// quoteRequest is a create request body.
func quoteRequest(source, destination, amount, rate, direction string) map[string]any {
	return map[string]any{
		"sourceCurrency":      source,
		"destinationCurrency": destination,
		"amount":              n(amount),
		"rate":                n(rate),
		"amountDirection":     direction,
	}
}

// with returns a copy of body with members set (nil value: member removed).
func with(body map[string]any, kv ...any) map[string]any {
	c := make(map[string]any, len(body)+len(kv)/2)
	for k, v := range body {
		c[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		if kv[i+1] == nil {
			delete(c, k)
		} else {
			c[k] = kv[i+1]
		}
	}
	return c
}

// mustCreateQuote creates a quote and returns its JSON.
func mustCreateQuote(t testing.TB, s *gatewaytest.Server, key string, body any, headers ...string) map[string]any {
	t.Helper()
	r := do(t, http.MethodPost, s.URL+intentPath, key, body, headers...)
	if r.status != http.StatusOK {
		t.Fatalf("create quote: got %s, want 200", r)
	}
	return object(t, r)
}

// transition PUTs accept, cancel or complete on a quote.
func transition(t testing.TB, s *gatewaytest.Server, key, quoteID, op string, body any) *response {
	t.Helper()
	return do(t, http.MethodPut, s.URL+quotePath+quoteID+"/"+op, key, body)
}

// acceptBody is the JSON accept body for a pool account.
func acceptBody(accountID string) map[string]any { return map[string]any{"accountId": accountID} }

// mustAccept accepts q with its first allocation's pool account.
func mustAccept(t testing.TB, s *gatewaytest.Server, key string, q map[string]any) map[string]any {
	t.Helper()
	account := firstPoolAccount(t, q)
	r := transition(t, s, key, getString(t, q, "quoteId"), "accept", acceptBody(account))
	if r.status != http.StatusOK {
		t.Fatalf("accept: got %s, want 200", r)
	}
	return object(t, r)
}

func firstPoolAccount(t testing.TB, q map[string]any) string {
	t.Helper()
	allocations := getArray(t, q, "allocationResult.allocations")
	if len(allocations) == 0 {
		t.Fatalf("quote has no allocations")
	}
	return getString(t, allocations[0], "poolAccountId")
}

func getQuote(t testing.TB, s *gatewaytest.Server, key, id string) *response {
	t.Helper()
	return do(t, http.MethodGet, s.URL+quotePath+id, key, nil)
}

// pool returns one pool's admin JSON from GET /admin/v1/pools.
func pool(t testing.TB, s *gatewaytest.Server, id string) map[string]any {
	t.Helper()
	r := admin(t, s, http.MethodGet, "/admin/v1/pools", nil)
	wantStatus(t, r, http.StatusOK)
	for _, p := range array(t, r) {
		if getString(t, p, "poolId") == id {
			return p.(map[string]any)
		}
	}
	t.Fatalf("pool %s not listed by GET /admin/v1/pools", id)
	return nil
}

// syncPool returns a pool's admin JSON once every effect of earlier
// acknowledged requests (holds placed, released, settled) has reached it:
// PUT status active (the pool must be active) is ordered after them in the
// log, and its reply comes from the pool itself.
func syncPool(t testing.TB, s *gatewaytest.Server, id string) map[string]any {
	t.Helper()
	r := admin(t, s, http.MethodPut, "/admin/v1/pools/"+id+"/status", map[string]any{"status": "active"})
	return wantOK(t, r)
}

// syncTreasury waits until the treasury of mode has applied every wallet
// credit of earlier acknowledged requests (the ledger check asks it).
func syncTreasury(t testing.TB, s *gatewaytest.Server, mode string) map[string]any {
	t.Helper()
	return wantOK(t, admin(t, s, http.MethodGet, "/admin/v1/ledger/check?mode="+mode, nil))
}

// newPool creates a funded pool; pools created one after another have
// distinct rate-set times (gatewaytest's NewPool advances the clock).
func newPool(t testing.TB, s *gatewaytest.Server, mode engine.Mode, pair engine.Pair, name, rate, liquidity string) *engine.Pool {
	t.Helper()
	return s.NewPool(t, mode, pair, name, rate, liquidity)
}

// wallet is the partner's wallet account id in mode and currency.
func wallet(t testing.TB, p gatewaytest.Partner, mode engine.Mode, c engine.Currency) string {
	t.Helper()
	w, ok := p.Client.Wallet(mode, c)
	if !ok {
		t.Fatalf("partner %s has no %s %s wallet", p.Client.Name, mode, c)
	}
	return w.String()
}

// randomUUID is a syntactically valid id nobody has.
const randomUUID = "7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4"

// wantCreated checks a 201 JSON object answer and returns it.
func wantCreated(t testing.TB, r *response) map[string]any {
	t.Helper()
	wantStatus(t, r, http.StatusCreated)
	return object(t, r)
}

// refs numbers the references tests give prefunds and payouts: each call a
// new one, so no two payments of a test share an identity by accident.
var refs atomic.Int64

// nextRef is a new bank reference ("NIP-T-7").
func nextRef() string { return "NIP-T-" + strconv.FormatInt(refs.Add(1), 10) }
