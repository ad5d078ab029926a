package gateway_test

// The OpenAPI document (gateway/openapi.json) is kept true here: a real
// server is driven through every JSON endpoint, success and main errors,
// and each real response is checked against the document: its status must
// be documented for the operation, its content type listed, its JSON body
// valid against the schema (additionalProperties false wherever the
// spec fixes a shape, so a gained, lost or retyped member fails), its
// error code among the response's x-oja-codes, its documented headers
// present. XML responses are checked by status, content type and root
// element (name and namespace); rate stream frames against the event
// schemas. Every documented response must be exercised at least once,
// except 500s, which no test can provoke. The validator
// below implements the subset of JSON Schema the document uses and refuses
// any keyword it does not know, so the document cannot silently outgrow it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ethereum/go-ethereum/common"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/actors/cluster"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway"
	"github.com/oja-exchange/oja/gateway/camt"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
	"github.com/oja-exchange/oja/internal/camttest"
	"github.com/oja-exchange/oja/internal/poll"
	"github.com/oja-exchange/oja/internal/simchain"
	"github.com/oja-exchange/oja/internal/xsdcheck"
)

// ---- The document and a JSON Schema subset -----------------------------------------

type oapiDoc struct {
	root map[string]any
}

func oapiParse(t testing.TB, raw []byte) *oapiDoc {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var root map[string]any
	if err := d.Decode(&root); err != nil {
		t.Fatalf("openapi document: %v", err)
	}
	return &oapiDoc{root: root}
}

// deref follows $ref (possibly chained) to the referenced object; name is
// the last component's "kind/Name" ("" when v was no reference).
func (d *oapiDoc) deref(v any) (obj map[string]any, name string, err error) {
	for range 16 {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, name, fmt.Errorf("not an object: %v", v)
		}
		r, ok := m["$ref"].(string)
		if !ok {
			return m, name, nil
		}
		if !strings.HasPrefix(r, "#/components/") {
			return nil, "", fmt.Errorf("unsupported $ref %q", r)
		}
		name = strings.TrimPrefix(r, "#/components/")
		kind, key, _ := strings.Cut(name, "/")
		section, _ := d.root["components"].(map[string]any)[kind].(map[string]any)
		if v, ok = section[key]; !ok {
			return nil, "", fmt.Errorf("dangling $ref %q", r)
		}
	}
	return nil, "", fmt.Errorf("$ref chain too long")
}

// oapiAnnotations are schema keywords that do not constrain a value.
var oapiAnnotations = map[string]bool{"description": true, "examples": true, "xml": true, "title": true, "default": true}

var (
	oapiUUID     = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	oapiPatterns sync.Map // pattern → *regexp.Regexp
)

// validate checks value (decoded with UseNumber) against schema and
// returns every violation, each prefixed by its JSON path.
func (d *oapiDoc) validate(schema any, value any, path string) []string {
	s, _, err := d.deref(schema)
	if err != nil {
		return []string{path + ": schema: " + err.Error()}
	}
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, path+": "+fmt.Sprintf(format, args...)) }
	for k := range s {
		switch k {
		case "type", "enum", "required", "properties", "additionalProperties", "items", "minItems", "format", "pattern",
			"minimum", "maximum", "exclusiveMinimum", "minLength", "maxLength", "oneOf":
		default:
			if !oapiAnnotations[k] && !strings.HasPrefix(k, "x-") {
				fail("schema uses keyword %q, which this validator does not implement", k)
			}
		}
	}
	if len(problems) > 0 {
		return problems
	}
	if alternatives, ok := s["oneOf"].([]any); ok {
		matched := 0
		var all []string
		for i, alt := range alternatives {
			p := d.validate(alt, value, path)
			if len(p) == 0 {
				matched++
			} else {
				all = append(all, fmt.Sprintf("[alternative %d] %s", i, strings.Join(p, "; ")))
			}
		}
		if matched != 1 {
			fail("matches %d of the oneOf alternatives, want exactly 1: %s", matched, strings.Join(all, " | "))
		}
		return problems
	}
	if t, ok := s["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, x := range t {
				types = append(types, x.(string))
			}
		}
		if !slices.ContainsFunc(types, func(typ string) bool { return oapiHasType(value, typ) }) {
			fail("is %s, want %v", oapiTypeName(value), types)
			return problems
		}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return e == value }) {
		fail("%v is not one of %v", value, enum)
	}
	switch v := value.(type) {
	case string:
		if n, ok := s["minLength"].(json.Number); ok && int64(len([]rune(v))) < mustInt(n) {
			fail("%q is shorter than %s", v, n)
		}
		if n, ok := s["maxLength"].(json.Number); ok && int64(len([]rune(v))) > mustInt(n) {
			fail("%q is longer than %s", v, n)
		}
		if p, ok := s["pattern"].(string); ok {
			re, _ := oapiPatterns.LoadOrStore(p, regexp.MustCompile(p))
			if !re.(*regexp.Regexp).MatchString(v) {
				fail("%q does not match %s", v, p)
			}
		}
		switch s["format"] {
		case "uuid":
			if !oapiUUID.MatchString(v) {
				fail("%q is not a canonical lower-case UUID", v)
			}
		case "date-time":
			if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
				fail("%q is not an RFC 3339 date-time: %v", v, err)
			}
		}
	case json.Number:
		if strings.ContainsAny(string(v), "eE") {
			fail("%s is in exponent form (spec §1: plain decimal)", v)
		}
		n, err := decimal.NewFromString(string(v))
		if err != nil {
			fail("%s: %v", v, err)
			break
		}
		if m, ok := s["minimum"].(json.Number); ok && n.LessThan(decimal.RequireFromString(string(m))) {
			fail("%s is below the minimum %s", v, m)
		}
		if m, ok := s["maximum"].(json.Number); ok && n.GreaterThan(decimal.RequireFromString(string(m))) {
			fail("%s is above the maximum %s", v, m)
		}
		if m, ok := s["exclusiveMinimum"].(json.Number); ok && !n.GreaterThan(decimal.RequireFromString(string(m))) {
			fail("%s is not above %s", v, m)
		}
	case []any:
		if n, ok := s["minItems"].(json.Number); ok && int64(len(v)) < mustInt(n) {
			fail("has %d items, want at least %s", len(v), n)
		}
		if items, ok := s["items"]; ok {
			for i, item := range v {
				problems = append(problems, d.validate(items, item, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			for _, name := range req {
				if _, ok := v[name.(string)]; !ok {
					fail("member %q is required", name)
				}
			}
		}
		for k, member := range v {
			if ps, ok := props[k]; ok {
				problems = append(problems, d.validate(ps, member, path+"."+k)...)
				continue
			}
			switch extra := s["additionalProperties"].(type) {
			case bool:
				if !extra {
					fail("member %q is not in the schema", k)
				}
			case map[string]any:
				problems = append(problems, d.validate(extra, member, path+"."+k)...)
			}
		}
	}
	return problems
}

func mustInt(n json.Number) int64 {
	v, err := n.Int64()
	if err != nil {
		panic(err)
	}
	return v
}

func oapiHasType(v any, typ string) bool {
	switch typ {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		return ok && !strings.ContainsAny(string(n), ".eE")
	}
	return false
}

func oapiTypeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case json.Number:
		return "number " + string(v)
	case string:
		return "string"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// ---- Checking real responses ----------------------------------------------------------

// oapiChecker checks responses against the document and records which
// documented responses were seen.
type oapiChecker struct {
	doc     *oapiDoc
	mu      sync.Mutex
	covered map[string]bool // "GET /path 200", "responses/Unauthorized"
	// lint is xmllint's path ("" outside CI without it): every XML answer
	// is validated against its message's schema (fxSchemas); xmlChecked
	// counts them.
	lint       string
	xmlChecked int
}

// fxSchemas holds the XML FX API's schemas, one per message.
const fxSchemas = "../client/fxmsg/xsd"

// oapiResponse is one real answer.
type oapiResponse struct {
	status int
	header http.Header
	body   []byte
}

func (r *oapiResponse) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

// operation returns the document's operation for method on a path template.
func (c *oapiChecker) operation(t testing.TB, method, template string) map[string]any {
	t.Helper()
	item, ok := c.doc.root["paths"].(map[string]any)[template].(map[string]any)
	if !ok {
		t.Fatalf("openapi: path %s is not documented", template)
	}
	op, ok := item[strings.ToLower(method)].(map[string]any)
	if !ok {
		t.Fatalf("openapi: %s %s is not documented", method, template)
	}
	return op
}

// check validates r, the answer to method on template, and returns its
// decoded JSON body (nil when not JSON).
func (c *oapiChecker) check(t testing.TB, method, template string, r *oapiResponse) any {
	t.Helper()
	op := c.operation(t, method, template)
	raw, ok := op["responses"].(map[string]any)[strconv.Itoa(r.status)]
	if !ok {
		t.Fatalf("openapi: %s %s answered %s, an undocumented status", method, template, r)
	}
	resp, name, err := c.doc.deref(raw)
	if err != nil {
		t.Fatalf("openapi: %s %s %d: %v", method, template, r.status, err)
	}
	c.mu.Lock()
	c.covered[fmt.Sprintf("%s %s %d", method, template, r.status)] = true
	if name != "" {
		c.covered[name] = true
	}
	c.mu.Unlock()
	where := fmt.Sprintf("%s %s → %d", method, template, r.status)

	headers, _ := resp["headers"].(map[string]any)
	for h, spec := range headers {
		if h == "Idempotent-Replayed" || h == "Cache-Control" || h == "X-Accel-Buffering" {
			continue // present only on a replay; stream headers checked elsewhere
		}
		if obj, _, err := c.doc.deref(spec); err == nil && obj["required"] == false {
			continue // documented as sometimes absent
		}
		if r.header.Get(h) == "" {
			t.Errorf("%s: documented header %s is missing", where, h)
		}
	}
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if len(r.body) != 0 {
			t.Errorf("%s: body %q, but the document has no content", where, r.body)
		}
		return nil
	}
	media, _, err := mime.ParseMediaType(r.header.Get("Content-Type"))
	if err != nil {
		t.Fatalf("%s: Content-Type %q: %v", where, r.header.Get("Content-Type"), err)
	}
	mt, ok := content[media].(map[string]any)
	if !ok {
		t.Fatalf("%s: Content-Type %s is not documented (have %v): %s", where, media, oapiKeys(content), r.body)
	}
	codes, _ := resp["x-oja-codes"].([]any)
	switch media {
	case "application/json":
		body := decodeJSONBody(t, r.body)
		for _, p := range c.doc.validate(mt["schema"], body, "body") {
			t.Errorf("%s: %s\n  body: %s", where, p, r.body)
		}
		if codes != nil {
			code, _ := body.(map[string]any)["code"]
			if !slices.Contains(codes, code) {
				t.Errorf("%s: code %v is not among the documented %v", where, code, codes)
			}
		}
		return body
	case "application/xml":
		schema, _, err := c.doc.deref(mt["schema"])
		if err != nil {
			t.Fatal(err)
		}
		x, _ := schema["xml"].(map[string]any)
		root, code := xmlRoot(t, r.body)
		if root.Local != x["name"] || root.Space != x["namespace"] {
			t.Errorf("%s: root element {%s}%s, documented {%s}%s", where, root.Space, root.Local, x["namespace"], x["name"])
		}
		if codes != nil && !slices.Contains(codes, any(code)) {
			t.Errorf("%s: MsgRjct code %q is not among the documented %v", where, code, codes)
		}
		if c.lint != "" {
			if err := xsdcheck.Validate(c.lint, filepath.Join(fxSchemas, root.Local+".xsd"), r.body); err != nil {
				t.Errorf("%s: not valid against its schema: %v", where, err)
			}
			c.mu.Lock()
			c.xmlChecked++
			c.mu.Unlock()
		}
	}
	return nil
}

func oapiKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func decodeJSONBody(t testing.TB, raw []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("body is not JSON: %v: %q", err, raw)
	}
	if d.More() {
		t.Fatalf("trailing data after the JSON body: %q", raw)
	}
	return v
}

// xmlRoot returns an XML document's root element name and, for a MsgRjct,
// its RjctgPtyRsn.
func xmlRoot(t testing.TB, raw []byte) (xml.Name, string) {
	t.Helper()
	var doc struct {
		XMLName xml.Name
		Code    string `xml:"Rsn>RjctgPtyRsn"`
	}
	if err := xml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("body is not XML: %v: %q", err, raw)
	}
	return doc.XMLName, doc.Code
}

// ---- Requests ---------------------------------------------------------------------------

var oapiHTTP = &http.Client{Timeout: 10 * time.Second}

// oapiDo sends one request; body is sent as is with contentType (when
// body is not nil); hdr are name, value pairs. A body over 64 KiB is sent
// after asking (see doOversized).
func oapiDo(t testing.TB, method, url, token, contentType string, body []byte, hdr ...string) *oapiResponse {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header[http.CanonicalHeaderKey(hdr[i])] = []string{hdr[i+1]}
	}
	if len(body) > 64<<10 {
		req.Header.Set("Expect", "100-continue")
	}
	res, err := oapiHTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &oapiResponse{status: res.StatusCode, header: res.Header, body: raw}
}

// call is one exercised request: it must answer want, and its answer must
// agree with the document.
type oapiCall struct {
	name     string
	base     string // server base URL
	method   string
	path     string // concrete path (with query)
	template string // documented path
	token    string
	ctype    string // "" = application/json when body is set
	body     string
	hdr      []string
	want     int
}

func (c *oapiChecker) run(t testing.TB, call oapiCall) any {
	t.Helper()
	var body []byte
	ctype := call.ctype
	if call.body != "" {
		body = []byte(call.body)
		if ctype == "" {
			ctype = "application/json"
		}
	}
	r := oapiDo(t, call.method, call.base+call.path, call.token, ctype, body, call.hdr...)
	if r.status != call.want {
		t.Fatalf("%s: %s %s answered %s, want %d", call.name, call.method, call.path, r, call.want)
	}
	return c.check(t, call.method, call.template, r)
}

func oapiField(v any, path string) any {
	for _, part := range strings.Split(path, ".") {
		m, _ := v.(map[string]any)
		v = m[part]
	}
	return v
}

func oapiString(v any, path string) string { s, _ := oapiField(v, path).(string); return s }

// ---- The test ----------------------------------------------------------------------------

// logCapture records log records at error level.
type logCapture struct {
	mu      sync.Mutex
	records []string
}

func (l *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		var b strings.Builder
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
		l.mu.Lock()
		l.records = append(l.records, b.String())
		l.mu.Unlock()
	}
	return nil
}
func (l *logCapture) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCapture) WithGroup(string) slog.Handler      { return l }

func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	whole := oapiParse(t, gateway.OpenAPIDocument())
	c := &oapiChecker{doc: whole, covered: map[string]bool{}, lint: xsdcheck.Optional(t)}

	// A server that never becomes ready: 503 on every route that needs the
	// system; built with a capturing logger, which also hears the route
	// check (every served route documented, every documented one served).
	logs := &logCapture{}
	unready := gateway.New(gateway.Config{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		AdminToken: gatewaytest.AdminToken, Logger: slog.New(logs)})
	if err := unready.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = unready.Shutdown(ctx)
	}()
	logs.mu.Lock()
	for _, rec := range logs.records {
		t.Errorf("route check: %s", rec)
	}
	logs.mu.Unlock()

	s := gatewaytest.Start(t, gatewaytest.Options{SSEHeartbeat: 100 * time.Millisecond})
	limited := gatewaytest.Start(t, gatewaytest.Options{RateLimit: 1})
	p := s.NewPartner(t, "openapi")
	other := s.NewPartner(t, "openapi-other")
	poolA := s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Desk A", "0.000625", "1000")
	poolB := s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Desk B", "0.00062", "1000")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.GHSUSDT, "Desk C", "0.08", "1000")
	key := p.SandboxKey
	pub, adm := s.URL, s.Admin
	sandboxWallet := func(who gatewaytest.Partner, cur engine.Currency) string {
		return wallet(t, who, engine.ModeSandbox, cur)
	}
	const (
		intent      = "/api/v1/partners/marketplace/intent"
		quote       = "/api/v1/partners/marketplace/quote/{id}"
		unknownID   = "7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4"
		createBody  = `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":16000,"rate":0.0006,"amountDirection":"source"}`
		xmlType     = "application/xml; charset=utf-8"
		fx          = "/api/v1/partners/fx"
		fxInstrBody = `<FXTradInstr xmlns="urn:iso:std:iso:20022:tech:xsd:fxtr.014.001.05"><CcyPair><BaseCcy>NGN</BaseCcy><QtdCcy>USDT</QtdCcy></CcyPair>` +
			`<TradAmts><TradgCcyAmt>16000</TradgCcyAmt></TradAmts><AgrdRate><XchgRate>0.0006</XchgRate></AgrdRate><AmtDrctn>SELL</AmtDrctn></FXTradInstr>`
	)
	q := func(id string) string { return strings.Replace(quote, "{id}", id, 1) }

	// ---- The documents themselves, without a credential.
	publicDoc := oapiParse(t, oapiDo(t, "GET", pub+"/api/v1/openapi.json", "", "", nil).body)
	c.run(t, oapiCall{name: "public doc", base: pub, method: "GET", path: "/api/v1/openapi.json", template: "/api/v1/openapi.json", want: 200})
	c.run(t, oapiCall{name: "admin doc", base: adm, method: "GET", path: "/admin/v1/openapi.json", template: "/admin/v1/openapi.json", want: 200})
	for path := range publicDoc.root["paths"].(map[string]any) {
		if strings.HasPrefix(path, "/admin") || path == "/metrics" {
			t.Errorf("the public document describes the operator path %s", path)
		}
	}
	if _, ok := publicDoc.root["components"].(map[string]any)["securitySchemes"].(map[string]any)["adminToken"]; ok {
		t.Error("the public document carries the operator security scheme")
	}
	adminDoc := oapiParse(t, oapiDo(t, "GET", adm+"/admin/v1/openapi.json", "", "", nil).body)
	for path := range adminDoc.root["paths"].(map[string]any) {
		if strings.HasPrefix(path, "/api/") {
			t.Errorf("the admin document describes the partner path %s", path)
		}
	}
	for _, part := range []*oapiDoc{publicDoc, adminDoc} {
		oapiCheckRefs(t, part, part.root)
	}
	oapiCheckRefs(t, whole, whole.root)

	// ---- Health, on both listeners and before readiness.
	for _, base := range []string{pub, adm} {
		for _, path := range []string{"/livez", "/healthz", "/readyz"} {
			c.run(t, oapiCall{name: path, base: base, method: "GET", path: path, template: path, want: 200})
		}
	}
	unreadyPub, unreadyAdm := "http://"+unready.Addr(), "http://"+unready.AdminAddr()
	c.run(t, oapiCall{name: "readyz unready", base: unreadyPub, method: "GET", path: "/readyz", template: "/readyz", want: 503})
	c.run(t, oapiCall{name: "create unready", base: unreadyPub, method: "POST", path: intent, template: intent, token: key, body: createBody, want: 503})
	c.run(t, oapiCall{name: "stream unready", base: unreadyPub, method: "GET", path: "/api/v1/partners/marketplace/rates/stream",
		template: "/api/v1/partners/marketplace/rates/stream", token: key, want: 503})
	c.run(t, oapiCall{name: "fx unready", base: unreadyPub, method: "GET", path: fx + "/listings", template: fx + "/listings", token: key, want: 503})
	c.run(t, oapiCall{name: "admin unready", base: unreadyAdm, method: "GET", path: "/admin/v1/pools", template: "/admin/v1/pools", token: gatewaytest.AdminToken, want: 503})

	// ---- Quotes.
	created := c.run(t, oapiCall{name: "create", base: pub, method: "POST", path: intent, template: intent, token: key, body: createBody,
		hdr: []string{"Idempotency-Key", "oapi-1", "X-Request-Id", "trace-1"}, want: 200})
	id := oapiString(created, "quoteId")
	account := oapiString(oapiField(created, "allocationResult.allocations").([]any)[0], "poolAccountId")
	replay := oapiDo(t, "POST", pub+intent, key, "application/json", []byte(createBody), "Idempotency-Key", "oapi-1")
	if replay.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replayed create: Idempotent-Replayed %q", replay.header.Get("Idempotent-Replayed"))
	}
	c.check(t, "POST", intent, replay)
	chat := c.run(t, oapiCall{name: "create with chat", base: pub, method: "POST", path: intent, template: intent, token: key,
		body: fmt.Sprintf(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1600,"rate":0.0006,"amountDirection":"source","listingId":%q,"chain":"TRON",`+
			`"chatMetadata":{"conversationId":"c-1","chatQuoteId":"cq-1","listingId":"l-1","negotiationStartedAt":"2026-11-21T10:00:00Z","quoteSentAt":"2026-11-21T10:01:00Z"}}`, poolA.ID), want: 200})
	if oapiString(chat, "chatMetadata.initialListingRate") == "" {
		t.Errorf("chat quote without initialListingRate: %v", chat)
	}
	chatID := oapiString(chat, "quoteId")
	for _, bad := range []struct{ name, body string }{
		{"missing member", `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1,"rate":0.0006}`},
		{"invalid currency", `{"sourceCurrency":"USDT","destinationCurrency":"NGN","amount":1,"rate":1,"amountDirection":"source"}`},
		{"invalid pair", `{"sourceCurrency":"GHS","destinationCurrency":"NGN","amount":1,"rate":1,"amountDirection":"source"}`},
	} {
		c.run(t, oapiCall{name: bad.name, base: pub, method: "POST", path: intent, template: intent, token: key, body: bad.body, want: 400})
	}
	c.run(t, oapiCall{name: "no key", base: pub, method: "POST", path: intent, template: intent, body: createBody, want: 401})
	c.run(t, oapiCall{name: "too large", base: pub, method: "POST", path: intent, template: intent, token: key,
		body: `{"x":"` + strings.Repeat("a", 70<<10) + `"}`, want: 413})
	c.run(t, oapiCall{name: "not json", base: pub, method: "POST", path: intent, template: intent, token: key, ctype: "text/plain", body: createBody, want: 415})
	liquidity := c.run(t, oapiCall{name: "no liquidity", base: pub, method: "POST", path: intent, template: intent, token: key,
		body: `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":90000000,"rate":0.0006,"amountDirection":"source"}`, want: 422})
	if _, ok := oapiField(liquidity, "details.bestRate").(json.Number); !ok {
		t.Errorf("INSUFFICIENT_LIQUIDITY with pools: bestRate %v", oapiField(liquidity, "details.bestRate"))
	}
	noPool := c.run(t, oapiCall{name: "no pool", base: pub, method: "POST", path: intent, template: intent, token: key,
		body: `{"sourceCurrency":"NGN","destinationCurrency":"GHS","amount":100,"rate":0.001,"amountDirection":"source"}`, want: 422})
	if oapiField(noPool, "details.bestRate") != nil {
		t.Errorf("INSUFFICIENT_LIQUIDITY without pools: bestRate %v, want null", oapiField(noPool, "details.bestRate"))
	}
	s.NewPool(t, engine.ModeLive, gatewaytest.NGNGHS, "Cedi", "0.0085", "1000") // live: the sandbox NGN/GHS book stays empty
	c.run(t, oapiCall{name: "dust", base: pub, method: "POST", path: intent, template: intent, token: p.LiveKey,
		body: `{"sourceCurrency":"NGN","destinationCurrency":"GHS","amount":0.01,"rate":0.0085,"amountDirection":"source"}`, want: 422})
	c.run(t, oapiCall{name: "key reused", base: pub, method: "POST", path: intent, template: intent, token: key,
		body: strings.Replace(createBody, "16000", "16001", 1), hdr: []string{"Idempotency-Key", "oapi-1"}, want: 422})

	c.run(t, oapiCall{name: "get", base: pub, method: "GET", path: q(id), template: quote, token: key, want: 200})
	c.run(t, oapiCall{name: "get bad id", base: pub, method: "GET", path: q("nope"), template: quote, token: key, want: 400})
	c.run(t, oapiCall{name: "get unknown", base: pub, method: "GET", path: q(unknownID), template: quote, token: key, want: 404})
	c.run(t, oapiCall{name: "get another's", base: pub, method: "GET", path: q(id), template: quote, token: other.SandboxKey, want: 404})
	c.run(t, oapiCall{name: "get no key", base: pub, method: "GET", path: q(id), template: quote, want: 401})

	accept, cancel, complete := quote+"/accept", quote+"/cancel", quote+"/complete"
	c.run(t, oapiCall{name: "accept wrong account", base: pub, method: "PUT", path: q(id) + "/accept", template: accept, token: key,
		body: fmt.Sprintf(`{"accountId":%q}`, poolB.Liquidity.ID), want: 422})
	c.run(t, oapiCall{name: "accept bad body", base: pub, method: "PUT", path: q(id) + "/accept", template: accept, token: key, body: `{}`, want: 400})
	c.run(t, oapiCall{name: "accept not json", base: pub, method: "PUT", path: q(id) + "/accept", template: accept, token: key, ctype: "text/plain", body: `x`, want: 415})
	c.run(t, oapiCall{name: "accept unknown", base: pub, method: "PUT", path: q(unknownID) + "/accept", template: accept, token: key,
		body: fmt.Sprintf(`{"accountId":%q}`, account), want: 404})
	c.run(t, oapiCall{name: "accept no key", base: pub, method: "PUT", path: q(id) + "/accept", template: accept, body: `{}`, want: 401})
	c.run(t, oapiCall{name: "complete pending", base: pub, method: "PUT", path: q(id) + "/complete", template: complete, token: key, want: 409})
	accepted := c.run(t, oapiCall{name: "accept", base: pub, method: "PUT", path: q(id) + "/accept", template: accept, token: key,
		body: fmt.Sprintf(`{"accountId":%q}`, account), want: 200})
	if oapiString(accepted, "metadata.bankPayIn.reference") == "" {
		t.Errorf("accepted quote without bankPayIn: %v", accepted)
	}
	c.run(t, oapiCall{name: "complete", base: pub, method: "PUT", path: q(id) + "/complete", template: complete, token: key, want: 200})
	done := c.run(t, oapiCall{name: "get completed", base: pub, method: "GET", path: q(id), template: quote, token: key, want: 200})
	if _, ok := done.(map[string]any)["expiresAt"]; ok {
		t.Errorf("completed quote with expiresAt: %v", done)
	}
	c.run(t, oapiCall{name: "cancel completed", base: pub, method: "PUT", path: q(id) + "/cancel", template: cancel, token: key, want: 409})
	c.run(t, oapiCall{name: "cancel bad id", base: pub, method: "PUT", path: q("nope") + "/cancel", template: cancel, token: key, want: 400})
	c.run(t, oapiCall{name: "cancel unknown", base: pub, method: "PUT", path: q(unknownID) + "/cancel", template: cancel, token: key, want: 404})
	c.run(t, oapiCall{name: "cancel not json", base: pub, method: "PUT", path: q(id) + "/cancel", template: cancel, token: key, ctype: "text/plain", body: "x", want: 415})
	c.run(t, oapiCall{name: "cancel no key", base: pub, method: "PUT", path: q(id) + "/cancel", template: cancel, want: 401})
	c.run(t, oapiCall{name: "complete bad id", base: pub, method: "PUT", path: q("nope") + "/complete", template: complete, token: key, want: 400})
	c.run(t, oapiCall{name: "complete unknown", base: pub, method: "PUT", path: q(unknownID) + "/complete", template: complete, token: key, want: 404})
	c.run(t, oapiCall{name: "complete not json", base: pub, method: "PUT", path: q(id) + "/complete", template: complete, token: key, ctype: "text/plain", body: "x", want: 415})
	c.run(t, oapiCall{name: "complete no key", base: pub, method: "PUT", path: q(id) + "/complete", template: complete, want: 401})
	chatAccepted := c.run(t, oapiCall{name: "accept chat", base: pub, method: "PUT", path: q(chatID) + "/accept", template: accept, token: key,
		body: fmt.Sprintf(`{"accountId":%q}`, poolA.Liquidity.ID), want: 200})
	if oapiString(chatAccepted, "chatMetadata.acceptedAt") == "" {
		t.Errorf("accepted chat quote without acceptedAt: %v", chatAccepted)
	}
	c.run(t, oapiCall{name: "accept cancelled", base: pub, method: "PUT", path: q(chatID) + "/cancel", template: cancel, token: key, want: 200})
	c.run(t, oapiCall{name: "accept after cancel", base: pub, method: "PUT", path: q(chatID) + "/accept", template: accept, token: key,
		body: fmt.Sprintf(`{"accountId":%q}`, poolA.Liquidity.ID), want: 409})

	// ---- Balances.
	balances := "/api/v1/partners/balances"
	c.run(t, oapiCall{name: "balances", base: pub, method: "GET", path: balances, template: balances, token: key, hdr: []string{"x-service-source", "oapi"}, want: 200})
	c.run(t, oapiCall{name: "balances no header", base: pub, method: "GET", path: balances, template: balances, token: key, want: 400})
	c.run(t, oapiCall{name: "balances bad header", base: pub, method: "GET", path: balances, template: balances, token: key,
		hdr: []string{"x-service-source", strings.Repeat("s", 200)}, want: 400})
	c.run(t, oapiCall{name: "balances no key", base: pub, method: "GET", path: balances, template: balances, want: 401})
	one := balances + "/{accountId}"
	c.run(t, oapiCall{name: "balance", base: pub, method: "GET", path: balances + "/" + sandboxWallet(p, engine.CurrencyUSDT), template: one, token: key, want: 200})
	c.run(t, oapiCall{name: "balance bad id", base: pub, method: "GET", path: balances + "/nope", template: one, token: key, want: 400})
	c.run(t, oapiCall{name: "balance another's", base: pub, method: "GET", path: balances + "/" + sandboxWallet(other, engine.CurrencyUSDT), template: one, token: key, want: 404})
	c.run(t, oapiCall{name: "balance no key", base: pub, method: "GET", path: balances + "/" + unknownID, template: one, want: 401})
	byCurrency := balances + "/currency/{currency}"
	c.run(t, oapiCall{name: "by currency", base: pub, method: "GET", path: balances + "/currency/USDT", template: byCurrency, token: key, want: 200})
	c.run(t, oapiCall{name: "by bad currency", base: pub, method: "GET", path: balances + "/currency/XYZ", template: byCurrency, token: key, want: 400})
	c.run(t, oapiCall{name: "by currency no key", base: pub, method: "GET", path: balances + "/currency/USDT", template: byCurrency, want: 401})

	// ---- The rate stream: headers, and each frame's data against its event schema.
	stream := "/api/v1/partners/marketplace/rates/stream"
	oapiStream(t, c, pub+stream+"?from=NGN&to=USDT", key)
	c.run(t, oapiCall{name: "stream bad pair", base: pub, method: "GET", path: stream + "?from=GHS&to=NGN", template: stream, token: key, want: 400})
	c.run(t, oapiCall{name: "stream half pair", base: pub, method: "GET", path: stream + "?from=NGN", template: stream, token: key, want: 400})
	c.run(t, oapiCall{name: "stream no key", base: pub, method: "GET", path: stream, template: stream, want: 401})
	oapiStreamsPerKey(t, c, pub+stream, other.SandboxKey)

	// ---- Rate limits: the JSON and XML shapes of 429.
	lp := limited.NewPartner(t, "openapi-limited")
	oapiUntil429(t, c, limited.URL, "GET", balances+"/currency/USDT", byCurrency, lp.SandboxKey)
	oapiUntil429(t, c, limited.URL, "GET", fx+"/listings", fx+"/listings", lp.SandboxKey)

	// ---- The XML FX API: status, content type and root element.
	trades := fx + "/trades"
	trade := trades + "/{id}"
	initiated := oapiDo(t, "POST", pub+trades, key, xmlType, []byte(fxInstrBody))
	c.check(t, "POST", trades, initiated)
	txID := oapiTxID(t, initiated)
	c.run(t, oapiCall{name: "fx initiate bad", base: pub, method: "POST", path: trades, template: trades, token: key, ctype: xmlType, body: "<nope/>", want: 400})
	c.run(t, oapiCall{name: "fx initiate json", base: pub, method: "POST", path: trades, template: trades, token: key, ctype: "application/json", body: "{}", want: 415})
	c.run(t, oapiCall{name: "fx initiate too large", base: pub, method: "POST", path: trades, template: trades, token: key,
		ctype: "application/xml", body: "<FXTradInstr>" + strings.Repeat("a", 70<<10) + "</FXTradInstr>", want: 413})
	c.run(t, oapiCall{name: "fx initiate no key", base: pub, method: "POST", path: trades, template: trades, ctype: xmlType, body: fxInstrBody, want: 401})
	c.run(t, oapiCall{name: "fx no liquidity", base: pub, method: "POST", path: trades, template: trades, token: key, ctype: xmlType,
		body: strings.Replace(fxInstrBody, ">16000<", ">90000000<", 1), want: 422})
	tr := func(sub string) string { return trades + "/" + txID + sub }
	c.run(t, oapiCall{name: "fx status", base: pub, method: "GET", path: tr(""), template: trade, token: key, want: 200})
	c.run(t, oapiCall{name: "fx status bad id", base: pub, method: "GET", path: trades + "/nope", template: trade, token: key, want: 400})
	c.run(t, oapiCall{name: "fx status unknown", base: pub, method: "GET", path: trades + "/" + unknownID, template: trade, token: key, want: 404})
	c.run(t, oapiCall{name: "fx confirm pending", base: pub, method: "POST", path: tr("/confirmation"), template: trade + "/confirmation", token: key, want: 409})
	acceptXML := `<FXTradAccptReq><AcctId>` + sandboxWallet(p, engine.CurrencyUSDT) + `</AcctId></FXTradAccptReq>`
	c.run(t, oapiCall{name: "fx accept another's account", base: pub, method: "POST", path: tr("/accept"), template: trade + "/accept", token: key, ctype: xmlType,
		body: `<FXTradAccptReq><AcctId>` + sandboxWallet(other, engine.CurrencyUSDT) + `</AcctId></FXTradAccptReq>`, want: 422})
	c.run(t, oapiCall{name: "fx accept bad", base: pub, method: "POST", path: tr("/accept"), template: trade + "/accept", token: key, ctype: xmlType, body: `<FXTradAccptReq/>`, want: 400})
	c.run(t, oapiCall{name: "fx accept json", base: pub, method: "POST", path: tr("/accept"), template: trade + "/accept", token: key, ctype: "application/json", body: `{}`, want: 415})
	c.run(t, oapiCall{name: "fx accept unknown", base: pub, method: "POST", path: trades + "/" + unknownID + "/accept", template: trade + "/accept", token: key, ctype: xmlType, body: acceptXML, want: 404})
	c.run(t, oapiCall{name: "fx accept", base: pub, method: "POST", path: tr("/accept"), template: trade + "/accept", token: key, ctype: xmlType, body: acceptXML, want: 200})
	c.run(t, oapiCall{name: "fx confirm", base: pub, method: "POST", path: tr("/confirmation"), template: trade + "/confirmation", token: key, want: 200})
	c.run(t, oapiCall{name: "fx confirm bad id", base: pub, method: "POST", path: trades + "/nope/confirmation", template: trade + "/confirmation", token: key, want: 400})
	c.run(t, oapiCall{name: "fx confirm unknown", base: pub, method: "POST", path: trades + "/" + unknownID + "/confirmation", template: trade + "/confirmation", token: key, want: 404})
	c.run(t, oapiCall{name: "fx confirm json", base: pub, method: "POST", path: tr("/confirmation"), template: trade + "/confirmation", token: key, ctype: "application/json", body: "{}", want: 415})
	c.run(t, oapiCall{name: "fx accept completed", base: pub, method: "POST", path: tr("/accept"), template: trade + "/accept", token: key, ctype: xmlType, body: acceptXML, want: 409})
	c.run(t, oapiCall{name: "fx cancel completed", base: pub, method: "PUT", path: tr("/cancellation"), template: trade + "/cancellation", token: key, want: 409})
	other1 := oapiTxID(t, oapiDo(t, "POST", pub+trades, key, xmlType, []byte(fxInstrBody)))
	c.run(t, oapiCall{name: "fx cancel", base: pub, method: "PUT", path: trades + "/" + other1 + "/cancellation", template: trade + "/cancellation", token: key, want: 200})
	c.run(t, oapiCall{name: "fx cancel bad id", base: pub, method: "PUT", path: trades + "/nope/cancellation", template: trade + "/cancellation", token: key, want: 400})
	c.run(t, oapiCall{name: "fx cancel unknown", base: pub, method: "PUT", path: trades + "/" + unknownID + "/cancellation", template: trade + "/cancellation", token: key, want: 404})
	c.run(t, oapiCall{name: "fx cancel json", base: pub, method: "PUT", path: trades + "/" + other1 + "/cancellation", template: trade + "/cancellation", token: key, ctype: "application/json", body: "{}", want: 415})
	listings, makers := fx+"/listings", fx+"/rates/makers"
	c.run(t, oapiCall{name: "fx listings", base: pub, method: "GET", path: listings + "?source=NGN&page=0&pageSize=5", template: listings, token: key, want: 200})
	c.run(t, oapiCall{name: "fx listings bad", base: pub, method: "GET", path: listings + "?pageSize=0", template: listings, token: key, want: 400})
	c.run(t, oapiCall{name: "fx listings no key", base: pub, method: "GET", path: listings, template: listings, want: 401})
	c.run(t, oapiCall{name: "fx makers", base: pub, method: "GET", path: makers + "?from=NGN&to=USDT", template: makers, token: key, want: 200})
	c.run(t, oapiCall{name: "fx makers bad", base: pub, method: "GET", path: makers + "?from=GHS&to=NGN", template: makers, token: key, want: 400})
	c.run(t, oapiCall{name: "fx makers none", base: pub, method: "GET", path: makers + "?from=NGN&to=GHS", template: makers, token: key, want: 404})

	// ---- The operator API.
	tok := gatewaytest.AdminToken
	clients := "/admin/v1/clients"
	client := c.run(t, oapiCall{name: "create client", base: adm, method: "POST", path: clients, template: clients, token: tok, body: `{"name":"Acme"}`, want: 201})
	clientID := oapiString(client, "clientId")
	c.run(t, oapiCall{name: "create client bad", base: adm, method: "POST", path: clients, template: clients, token: tok, body: `{"name":" "}`, want: 400})
	c.run(t, oapiCall{name: "create client not json", base: adm, method: "POST", path: clients, template: clients, token: tok, ctype: "text/plain", body: "x", want: 415})
	c.run(t, oapiCall{name: "create client no token", base: adm, method: "POST", path: clients, template: clients, token: "wrong", body: `{"name":"A"}`, want: 401})
	keys := clients + "/{clientId}/keys"
	newKey := c.run(t, oapiCall{name: "create key", base: adm, method: "POST", path: clients + "/" + clientID + "/keys", template: keys, token: tok, body: `{"mode":"live"}`, want: 201})
	c.run(t, oapiCall{name: "create key bad", base: adm, method: "POST", path: clients + "/" + clientID + "/keys", template: keys, token: tok, body: `{"mode":"staging"}`, want: 400})
	c.run(t, oapiCall{name: "create key unknown", base: adm, method: "POST", path: clients + "/" + unknownID + "/keys", template: keys, token: tok, body: `{"mode":"live"}`, want: 404})
	c.run(t, oapiCall{name: "create key not json", base: adm, method: "POST", path: clients + "/" + clientID + "/keys", template: keys, token: tok, ctype: "text/plain", body: "x", want: 415})
	c.run(t, oapiCall{name: "create key no token", base: adm, method: "POST", path: clients + "/" + clientID + "/keys", template: keys, body: `{"mode":"live"}`, want: 401})
	revoke := "/admin/v1/keys/{keyId}"
	c.run(t, oapiCall{name: "revoke", base: adm, method: "DELETE", path: "/admin/v1/keys/" + oapiString(newKey, "keyId"), template: revoke, token: tok, want: 204})
	c.run(t, oapiCall{name: "revoke bad", base: adm, method: "DELETE", path: "/admin/v1/keys/nope", template: revoke, token: tok, want: 400})
	c.run(t, oapiCall{name: "revoke unknown", base: adm, method: "DELETE", path: "/admin/v1/keys/" + unknownID, template: revoke, token: tok, want: 404})
	c.run(t, oapiCall{name: "revoke no token", base: adm, method: "DELETE", path: "/admin/v1/keys/" + unknownID, template: revoke, want: 401})
	pools := "/admin/v1/pools"
	pool := c.run(t, oapiCall{name: "create pool", base: adm, method: "POST", path: pools, template: pools, token: tok,
		body: fmt.Sprintf(`{"mode":"live","name":"L","source":"NGN","destination":"USDT","rate":0.000625,"ownerClientId":%q}`, clientID), want: 201})
	poolID := oapiString(pool, "poolId")
	c.run(t, oapiCall{name: "create pool bad", base: adm, method: "POST", path: pools, template: pools, token: tok, body: `{"mode":"live"}`, want: 400})
	c.run(t, oapiCall{name: "create pool bad pair", base: adm, method: "POST", path: pools, template: pools, token: tok,
		body: `{"mode":"live","name":"L","source":"GHS","destination":"NGN","rate":1}`, want: 400})
	c.run(t, oapiCall{name: "create pool unknown owner", base: adm, method: "POST", path: pools, template: pools, token: tok,
		body: fmt.Sprintf(`{"mode":"live","name":"L","source":"NGN","destination":"USDT","rate":0.000625,"ownerClientId":%q}`, unknownID), want: 404})
	c.run(t, oapiCall{name: "create pool not json", base: adm, method: "POST", path: pools, template: pools, token: tok, ctype: "text/plain", body: "x", want: 415})
	c.run(t, oapiCall{name: "create pool no token", base: adm, method: "POST", path: pools, template: pools, body: "{}", want: 401})
	c.run(t, oapiCall{name: "list pools", base: adm, method: "GET", path: pools + "?mode=sandbox", template: pools, token: tok, want: 200})
	c.run(t, oapiCall{name: "list all pools", base: adm, method: "GET", path: pools, template: pools, token: tok, want: 200})
	c.run(t, oapiCall{name: "list pools bad", base: adm, method: "GET", path: pools + "?mode=x", template: pools, token: tok, want: 400})
	c.run(t, oapiCall{name: "list pools no token", base: adm, method: "GET", path: pools, template: pools, want: 401})
	for _, sub := range []struct{ name, method, body, bad string }{
		{"deposit", "POST", `{"amount":500.5}`, `{"amount":0.0000001}`},
		{"withdraw", "POST", `{"amount":0.5}`, `{"amount":-1}`},
		{"rate", "PUT", `{"rate":0.00063}`, `{"rate":"x"}`},
		{"status", "PUT", `{"status":"suspended"}`, `{"status":"paused"}`},
	} {
		template := pools + "/{poolId}/" + sub.name
		path := pools + "/" + poolID + "/" + sub.name
		c.run(t, oapiCall{name: "pool " + sub.name, base: adm, method: sub.method, path: path, template: template, token: tok, body: sub.body, want: 200})
		c.run(t, oapiCall{name: "pool " + sub.name + " bad", base: adm, method: sub.method, path: path, template: template, token: tok, body: sub.bad, want: 400})
		c.run(t, oapiCall{name: "pool " + sub.name + " unknown", base: adm, method: sub.method, path: pools + "/" + unknownID + "/" + sub.name, template: template, token: tok, body: sub.body, want: 404})
		c.run(t, oapiCall{name: "pool " + sub.name + " not json", base: adm, method: sub.method, path: path, template: template, token: tok, ctype: "text/plain", body: "x", want: 415})
		c.run(t, oapiCall{name: "pool " + sub.name + " no token", base: adm, method: sub.method, path: path, template: template, body: sub.body, want: 401})
	}
	c.run(t, oapiCall{name: "deposit over the largest balance", base: adm, method: "POST", path: pools + "/" + poolID + "/deposit", template: pools + "/{poolId}/deposit", token: tok, body: `{"amount":1000000000}`, want: 422})
	c.run(t, oapiCall{name: "withdraw too much", base: adm, method: "POST", path: pools + "/" + poolID + "/withdraw", template: pools + "/{poolId}/withdraw", token: tok, body: `{"amount":1000000}`, want: 422})
	deposit := "/admin/v1/accounts/{accountId}/deposit"
	depositPath := "/admin/v1/accounts/" + sandboxWallet(p, engine.CurrencyNGN) + "/deposit"
	c.run(t, oapiCall{name: "deposit", base: adm, method: "POST", path: depositPath, template: deposit, token: tok, body: `{"amount":100.25,"reference":"NIP-OAPI-1"}`, want: 200})
	c.run(t, oapiCall{name: "deposit bad", base: adm, method: "POST", path: depositPath, template: deposit, token: tok, body: `{"amount":1.001,"reference":"NIP-OAPI-2"}`, want: 400})
	c.run(t, oapiCall{name: "deposit over the largest balance", base: adm, method: "POST", path: depositPath, template: deposit, token: tok, body: `{"amount":10000000000000,"reference":"NIP-OAPI-3"}`, want: 422})
	c.run(t, oapiCall{name: "deposit unknown", base: adm, method: "POST", path: "/admin/v1/accounts/" + unknownID + "/deposit", template: deposit, token: tok, body: `{"amount":1,"reference":"NIP-OAPI-4"}`, want: 404})
	c.run(t, oapiCall{name: "deposit not json", base: adm, method: "POST", path: depositPath, template: deposit, token: tok, ctype: "text/plain", body: "x", want: 415})
	c.run(t, oapiCall{name: "deposit no token", base: adm, method: "POST", path: depositPath, template: deposit, body: `{"amount":1}`, want: 401})
	ledger := "/admin/v1/ledger/check"
	for _, mode := range []string{"live", "sandbox"} {
		report := c.run(t, oapiCall{name: "ledger " + mode, base: adm, method: "GET", path: ledger + "?mode=" + mode, template: ledger, token: tok, want: 200})
		if oapiField(report, "ok") != true {
			t.Errorf("ledger %s: %v", mode, report)
		}
	}
	c.run(t, oapiCall{name: "ledger bad", base: adm, method: "GET", path: ledger, template: ledger, token: tok, want: 400})
	c.run(t, oapiCall{name: "ledger no token", base: adm, method: "GET", path: ledger + "?mode=live", template: ledger, want: 401})
	backup := "/admin/v1/backup"
	dir := filepath.Join(t.TempDir(), "backup")
	c.run(t, oapiCall{name: "backup", base: adm, method: "POST", path: backup, template: backup, token: tok, body: fmt.Sprintf(`{"dir":%q}`, dir), want: 200})
	c.run(t, oapiCall{name: "backup again", base: adm, method: "POST", path: backup, template: backup, token: tok, body: fmt.Sprintf(`{"dir":%q}`, dir), want: 400})
	c.run(t, oapiCall{name: "backup not json", base: adm, method: "POST", path: backup, template: backup, token: tok, ctype: "text/plain", body: "x", want: 415})
	c.run(t, oapiCall{name: "backup no token", base: adm, method: "POST", path: backup, template: backup, body: "{}", want: 401})
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("backup: %v", err)
	}
	c.run(t, oapiCall{name: "metrics", base: adm, method: "GET", path: "/metrics", template: "/metrics", token: tok, want: 200})
	c.run(t, oapiCall{name: "metrics no token", base: adm, method: "GET", path: "/metrics", template: "/metrics", want: 401})

	// The partner's quote listing.
	qs := "/api/v1/partners/marketplace/quotes"
	listed := c.run(t, oapiCall{name: "list quotes", base: pub, method: "GET", path: qs + "?limit=1", template: qs, token: key, want: 200})
	c.run(t, oapiCall{name: "list quotes after", base: pub, method: "GET", path: qs + "?status=pending&startingAfter=" + oapiString(oapiField(listed, "data").([]any)[0], "quoteId"),
		template: qs, token: key, want: 200})
	c.run(t, oapiCall{name: "list quotes bad", base: pub, method: "GET", path: qs + "?status=open&limit=0", template: qs, token: key, want: 400})
	c.run(t, oapiCall{name: "list quotes no key", base: pub, method: "GET", path: qs, template: qs, want: 401})
	c.run(t, oapiCall{name: "list quotes unready", base: unreadyPub, method: "GET", path: qs, template: qs, token: key, want: 503})

	// Webhooks (a public address literal: no look-up, no private address).
	hooks, hook := "/api/v1/partners/webhooks", "/api/v1/partners/webhooks/{id}"
	hp := func(id string) string { return strings.Replace(hook, "{id}", id, 1) }
	hookBody := `{"url":"https://93.184.215.14/oja","events":["quote.created","quote.completed"]}`
	made := c.run(t, oapiCall{name: "create webhook", base: pub, method: "POST", path: hooks, template: hooks, token: key, body: hookBody, want: 201})
	c.run(t, oapiCall{name: "create webhook private", base: pub, method: "POST", path: hooks, template: hooks, token: key,
		body: `{"url":"http://169.254.169.254/","events":["quote.created"]}`, want: 400})
	c.run(t, oapiCall{name: "create webhook no key", base: pub, method: "POST", path: hooks, template: hooks, body: hookBody, want: 401})
	c.run(t, oapiCall{name: "create webhook not json", base: pub, method: "POST", path: hooks, template: hooks, token: key, ctype: "text/plain", body: hookBody, want: 415})
	c.run(t, oapiCall{name: "create webhook unready", base: unreadyPub, method: "POST", path: hooks, template: hooks, token: key, body: hookBody, want: 503})
	for i := 1; i < engine.WebhooksPerClientMax; i++ {
		oapiDo(t, "POST", pub+hooks, key, "application/json", []byte(hookBody))
	}
	c.run(t, oapiCall{name: "create webhook over the limit", base: pub, method: "POST", path: hooks, template: hooks, token: key, body: hookBody, want: 422})
	c.run(t, oapiCall{name: "list webhooks", base: pub, method: "GET", path: hooks, template: hooks, token: key, want: 200})
	c.run(t, oapiCall{name: "list webhooks bad query", base: pub, method: "GET", path: hooks + "?limit=1", template: hooks, token: key, want: 400})
	c.run(t, oapiCall{name: "list webhooks no key", base: pub, method: "GET", path: hooks, template: hooks, want: 401})
	c.run(t, oapiCall{name: "list webhooks unready", base: unreadyPub, method: "GET", path: hooks, template: hooks, token: key, want: 503})
	cw := "/admin/v1/clients/{clientId}/webhooks"
	cwp := func(id string) string { return strings.Replace(cw, "{clientId}", id, 1) }
	c.run(t, oapiCall{name: "client webhooks", base: adm, method: "GET", path: cwp(p.Client.ID.String()), template: cw, token: tok, want: 200})
	c.run(t, oapiCall{name: "client webhooks bad id", base: adm, method: "GET", path: cwp("x"), template: cw, token: tok, want: 400})
	c.run(t, oapiCall{name: "client webhooks unknown", base: adm, method: "GET", path: cwp(unknownID), template: cw, token: tok, want: 404})
	c.run(t, oapiCall{name: "client webhooks no token", base: adm, method: "GET", path: cwp(unknownID), template: cw, want: 401})
	c.run(t, oapiCall{name: "client webhooks unready", base: unreadyAdm, method: "GET", path: cwp(unknownID), template: cw, token: tok, want: 503})
	madeID := oapiString(made, "webhookId")
	c.run(t, oapiCall{name: "delete webhook of another", base: pub, method: "DELETE", path: hp(madeID), template: hook, token: other.SandboxKey, want: 404})
	c.run(t, oapiCall{name: "delete webhook", base: pub, method: "DELETE", path: hp(madeID), template: hook, token: key, want: 204})
	c.run(t, oapiCall{name: "delete webhook bad id", base: pub, method: "DELETE", path: hp("x"), template: hook, token: key, want: 400})
	c.run(t, oapiCall{name: "delete webhook no key", base: pub, method: "DELETE", path: hp(madeID), template: hook, want: 401})
	c.run(t, oapiCall{name: "delete webhook unready", base: unreadyPub, method: "DELETE", path: hp(madeID), template: hook, token: key, want: 503})
	// Changing an endpoint.
	live0 := oapiString(oapiParse(t, oapiDo(t, "POST", pub+hooks, other.LiveKey, "application/json", []byte(hookBody)).body).root, "webhookId")
	c.run(t, oapiCall{name: "update webhook", base: pub, method: "PATCH", path: hp(live0), template: hook, token: other.LiveKey, body: `{"events":["quote.expired"]}`, want: 200})
	c.run(t, oapiCall{name: "update webhook of another", base: pub, method: "PATCH", path: hp(live0), template: hook, token: p.LiveKey, body: `{"events":["quote.expired"]}`, want: 404})
	c.run(t, oapiCall{name: "update webhook empty", base: pub, method: "PATCH", path: hp(live0), template: hook, token: other.LiveKey, body: `{}`, want: 400})
	c.run(t, oapiCall{name: "update webhook not json", base: pub, method: "PATCH", path: hp(live0), template: hook, token: other.LiveKey, ctype: "text/plain", body: `{}`, want: 415})
	c.run(t, oapiCall{name: "update webhook no key", base: pub, method: "PATCH", path: hp(live0), template: hook, body: `{}`, want: 401})
	c.run(t, oapiCall{name: "update webhook unready", base: unreadyPub, method: "PATCH", path: hp(live0), template: hook, token: other.LiveKey, body: `{"events":["quote.expired"]}`, want: 503})
	// Rotating an endpoint's secret.
	rotatePath := "/api/v1/partners/webhooks/{id}/rotate-secret"
	rotateAt := func(id string) string { return strings.Replace(rotatePath, "{id}", id, 1) }
	live := oapiString(oapiParse(t, oapiDo(t, "POST", pub+hooks, p.LiveKey, "application/json", []byte(hookBody)).body).root, "webhookId")
	c.run(t, oapiCall{name: "rotate secret", base: pub, method: "POST", path: rotateAt(live), template: rotatePath, token: p.LiveKey, want: 200})
	c.run(t, oapiCall{name: "rotate secret of another", base: pub, method: "POST", path: rotateAt(live), template: rotatePath, token: other.LiveKey, want: 404})
	c.run(t, oapiCall{name: "rotate secret bad id", base: pub, method: "POST", path: rotateAt("x"), template: rotatePath, token: p.LiveKey, want: 400})
	c.run(t, oapiCall{name: "rotate secret no key", base: pub, method: "POST", path: rotateAt(live), template: rotatePath, want: 401})
	c.run(t, oapiCall{name: "rotate secret unready", base: unreadyPub, method: "POST", path: rotateAt(live), template: rotatePath, token: p.LiveKey, want: 503})
	// The caller's keys.
	keysPath := "/api/v1/partners/keys"
	c.run(t, oapiCall{name: "list keys", base: pub, method: "GET", path: keysPath, template: keysPath, token: key, want: 200})
	c.run(t, oapiCall{name: "list keys bad query", base: pub, method: "GET", path: keysPath + "?limit=1", template: keysPath, token: key, want: 400})
	c.run(t, oapiCall{name: "list keys no key", base: pub, method: "GET", path: keysPath, template: keysPath, want: 401})
	c.run(t, oapiCall{name: "list keys unready", base: unreadyPub, method: "GET", path: keysPath, template: keysPath, token: key, want: 503})
	rollPath := "/api/v1/partners/keys/{keyId}/roll"
	rollAt := func(id string) string { return strings.Replace(rollPath, "{keyId}", id, 1) }
	roller := s.NewPartner(t, "openapi-roller")
	rollerKey := oapiString(oapiField(oapiParse(t, oapiDo(t, "GET", pub+keysPath, roller.LiveKey, "", nil).body).root, "data").([]any)[0], "keyId")
	c.run(t, oapiCall{name: "roll key other mode", base: pub, method: "POST", path: rollAt(rollerKey), template: rollPath, token: roller.SandboxKey, body: `{"expiresInHours":1}`, want: 404})
	c.run(t, oapiCall{name: "roll key bad body", base: pub, method: "POST", path: rollAt(rollerKey), template: rollPath, token: roller.LiveKey, body: `{"expiresInHours":-1}`, want: 400})
	c.run(t, oapiCall{name: "roll key not json", base: pub, method: "POST", path: rollAt(rollerKey), template: rollPath, token: roller.LiveKey, ctype: "text/plain", body: `{"expiresInHours":1}`, want: 415})
	c.run(t, oapiCall{name: "roll key no key", base: pub, method: "POST", path: rollAt(rollerKey), template: rollPath, body: `{"expiresInHours":1}`, want: 401})
	c.run(t, oapiCall{name: "roll key unready", base: unreadyPub, method: "POST", path: rollAt(rollerKey), template: rollPath, token: roller.LiveKey, body: `{"expiresInHours":1}`, want: 503})
	c.run(t, oapiCall{name: "roll key", base: pub, method: "POST", path: rollAt(rollerKey), template: rollPath, token: roller.LiveKey, body: `{"expiresInHours":1}`, want: 201})
	c.run(t, oapiCall{name: "roll key twice", base: pub, method: "POST", path: rollAt(rollerKey), template: rollPath, token: roller.LiveKey, body: `{"expiresInHours":1}`, want: 409})
	c.run(t, oapiCall{name: "list keys with a rolled one", base: pub, method: "GET", path: keysPath, template: keysPath, token: roller.LiveKey, want: 200})
	// The event history needs a server that keeps one.
	eventsPath := "/api/v1/partners/events"
	es := gatewaytest.Start(t, gatewaytest.Options{History: true})
	ep := es.NewPartner(t, "openapi-events")
	es.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Desk E", "0.000625", "1000")
	oapiDo(t, "POST", es.URL+intent, ep.SandboxKey, "application/json", []byte(createBody))
	poll.Until(t, 10*time.Second, func() string {
		if page := oapiParse(t, oapiDo(t, "GET", es.URL+eventsPath, ep.SandboxKey, "", nil).body).root; len(oapiField(page, "data").([]any)) == 0 {
			return "the event history holds no event of the quote created"
		}
		return ""
	})
	c.run(t, oapiCall{name: "list events", base: es.URL, method: "GET", path: eventsPath, template: eventsPath, token: ep.SandboxKey, want: 200})
	c.run(t, oapiCall{name: "list events of a type", base: es.URL, method: "GET", path: eventsPath + "?type=quote.created&limit=1", template: eventsPath, token: ep.SandboxKey, want: 200})
	c.run(t, oapiCall{name: "list events bad type", base: es.URL, method: "GET", path: eventsPath + "?type=quote", template: eventsPath, token: ep.SandboxKey, want: 400})
	c.run(t, oapiCall{name: "list events unknown cursor", base: es.URL, method: "GET", path: eventsPath + "?startingAfter=evt_0123456789abcdef0123456789abcdef", template: eventsPath, token: ep.SandboxKey, want: 400})
	c.run(t, oapiCall{name: "list events no key", base: es.URL, method: "GET", path: eventsPath, template: eventsPath, want: 401})
	c.run(t, oapiCall{name: "list events without a history", base: pub, method: "GET", path: eventsPath, template: eventsPath, token: key, want: 503})
	// A test event: the delivery itself needs a dispatcher (a server with
	// one that accepts every test here; the real one is cmd/oja's
	// TestWebhookTestEvent).
	hookTest := "/api/v1/partners/webhooks/{id}/test"
	ht := func(id string) string { return strings.Replace(hookTest, "{id}", id, 1) }
	tested := gatewaytest.Start(t, gatewaytest.Options{Webhooks: acceptingDeliveries{}})
	tp := tested.NewPartner(t, "openapi-tests")
	testedID := oapiString(oapiParse(t, oapiDo(t, "POST", tested.URL+hooks, tp.SandboxKey, "application/json", []byte(hookBody)).body).root, "webhookId")
	c.run(t, oapiCall{name: "test webhook", base: tested.URL, method: "POST", path: ht(testedID), template: hookTest, token: tp.SandboxKey, want: 202})
	c.run(t, oapiCall{name: "test webhook of another", base: tested.URL, method: "POST", path: ht(testedID), template: hookTest, token: tp.LiveKey, want: 404})
	c.run(t, oapiCall{name: "test webhook bad id", base: tested.URL, method: "POST", path: ht("x"), template: hookTest, token: tp.SandboxKey, want: 400})
	c.run(t, oapiCall{name: "test webhook no key", base: tested.URL, method: "POST", path: ht(testedID), template: hookTest, want: 401})
	c.run(t, oapiCall{name: "test webhook without a dispatcher", base: pub, method: "POST", path: ht(madeID), template: hookTest, token: key, want: 404})
	c.run(t, oapiCall{name: "test webhook unready", base: unreadyPub, method: "POST", path: ht(madeID), template: hookTest, token: key, want: 503})

	// Operator look-ups.
	clientsPath := "/admin/v1/clients"
	clientPage := c.run(t, oapiCall{name: "list clients", base: adm, method: "GET", path: clientsPath + "?limit=1", template: clientsPath, token: tok, want: 200})
	first := oapiString(oapiField(clientPage, "data").([]any)[0], "clientId")
	c.run(t, oapiCall{name: "list clients after", base: adm, method: "GET", path: clientsPath + "?limit=1&startingAfter=" + first, template: clientsPath, token: tok, want: 200})
	c.run(t, oapiCall{name: "list clients bad limit", base: adm, method: "GET", path: clientsPath + "?limit=0", template: clientsPath, token: tok, want: 400})
	c.run(t, oapiCall{name: "list clients no token", base: adm, method: "GET", path: clientsPath, template: clientsPath, want: 401})
	c.run(t, oapiCall{name: "list clients unready", base: unreadyAdm, method: "GET", path: clientsPath, template: clientsPath, token: tok, want: 503})
	clientPath := "/admin/v1/clients/{clientId}"
	cl := func(id string) string { return strings.Replace(clientPath, "{clientId}", id, 1) }
	c.run(t, oapiCall{name: "get client", base: adm, method: "GET", path: cl(p.Client.ID.String()), template: clientPath, token: tok, want: 200})
	c.run(t, oapiCall{name: "get client bad id", base: adm, method: "GET", path: cl("x"), template: clientPath, token: tok, want: 400})
	c.run(t, oapiCall{name: "get client unknown", base: adm, method: "GET", path: cl(unknownID), template: clientPath, token: tok, want: 404})
	c.run(t, oapiCall{name: "get client no token", base: adm, method: "GET", path: cl(unknownID), template: clientPath, want: 401})
	c.run(t, oapiCall{name: "get client unready", base: unreadyAdm, method: "GET", path: cl(unknownID), template: clientPath, token: tok, want: 503})
	aq := "/admin/v1/quotes/{quoteId}"
	aqp := func(id string) string { return strings.Replace(aq, "{quoteId}", id, 1) }
	c.run(t, oapiCall{name: "admin quote", base: adm, method: "GET", path: aqp(id), template: aq, token: tok, want: 200})
	c.run(t, oapiCall{name: "admin quote bad id", base: adm, method: "GET", path: aqp("x"), template: aq, token: tok, want: 400})
	c.run(t, oapiCall{name: "admin quote unknown", base: adm, method: "GET", path: aqp(unknownID), template: aq, token: tok, want: 404})
	c.run(t, oapiCall{name: "admin quote no token", base: adm, method: "GET", path: aqp(unknownID), template: aq, want: 401})
	c.run(t, oapiCall{name: "admin quote unready", base: unreadyAdm, method: "GET", path: aqp(unknownID), template: aq, token: tok, want: 503})
	oc := "/admin/v1/quotes/{quoteId}/cancel"
	ocp := func(id string) string { return strings.Replace(oc, "{quoteId}", id, 1) }
	open := c.run(t, oapiCall{name: "create for the operator", base: pub, method: "POST", path: intent, template: intent, token: key, body: createBody, want: 200})
	c.run(t, oapiCall{name: "operator cancel", base: adm, method: "POST", path: ocp(oapiString(open, "quoteId")), template: oc, token: tok, want: 200})
	c.run(t, oapiCall{name: "operator cancel completed", base: adm, method: "POST", path: ocp(id), template: oc, token: tok, want: 409})
	c.run(t, oapiCall{name: "operator cancel unknown", base: adm, method: "POST", path: ocp(unknownID), template: oc, token: tok, want: 404})
	c.run(t, oapiCall{name: "operator cancel bad id", base: adm, method: "POST", path: ocp("x"), template: oc, token: tok, want: 400})
	c.run(t, oapiCall{name: "operator cancel no token", base: adm, method: "POST", path: ocp(unknownID), template: oc, want: 401})
	c.run(t, oapiCall{name: "operator cancel unready", base: unreadyAdm, method: "POST", path: ocp(unknownID), template: oc, token: tok, want: 503})

	// Crypto pay-ins, on a server with markets.example.json (USDT→NGN has
	// a token source): the accepted quote's cryptoPayIn, then the
	// operator's report of the deposit.
	exampleMarkets, err := os.ReadFile("../markets.example.json")
	if err != nil {
		t.Fatal(err)
	}
	marketsCfg, err := engine.ParseMarketsConfig(exampleMarkets)
	if err != nil {
		t.Fatal(err)
	}
	ps := gatewaytest.Start(t, gatewaytest.Options{Markets: marketsCfg})
	pp := ps.NewPartner(t, "openapi-payins")
	usdtNGN := ps.NewPool(t, engine.ModeSandbox, engine.Pair{Source: engine.CurrencyUSDT, Destination: engine.CurrencyNGN},
		"Desk D", "1612.5", "1000000")
	offRamp := c.run(t, oapiCall{name: "create usdt to ngn", base: ps.URL, method: "POST", path: intent, template: intent, token: pp.SandboxKey,
		body: `{"sourceCurrency":"USDT","destinationCurrency":"NGN","amount":100,"rate":1600,"amountDirection":"source"}`, want: 200})
	offRampID := oapiString(offRamp, "quoteId")
	offRampAccepted := c.run(t, oapiCall{name: "accept usdt to ngn", base: ps.URL, method: "PUT", path: q(offRampID) + "/accept", template: accept,
		token: pp.SandboxKey, body: fmt.Sprintf(`{"accountId":%q}`, usdtNGN.Liquidity.ID), want: 200})
	addressID := oapiString(offRampAccepted, "metadata.cryptoPayIn.addressId")
	if addressID == "" || oapiString(offRampAccepted, "metadata.cryptoPayIn.status") != "active" {
		t.Fatalf("accepted USDT→NGN quote without an active cryptoPayIn: %v", offRampAccepted)
	}
	seenPath := "/admin/v1/payins/{addressId}/seen"
	sp := func(id string) string { return strings.Replace(seenPath, "{addressId}", id, 1) }
	seenBody := `{"amount":100,"txHash":"0x` + strings.Repeat("0f", 32) + `"}`
	seen := c.run(t, oapiCall{name: "payin seen", base: ps.Admin, method: "POST", path: sp(addressID), template: seenPath, token: tok, body: seenBody, want: 200})
	if oapiString(seen, "status") != "pending" || fmt.Sprint(oapiField(seen, "receivedAmount")) != "100" {
		t.Errorf("after the deposit: %v", seen)
	}
	c.run(t, oapiCall{name: "payin seen again, another amount", base: ps.Admin, method: "POST", path: sp(addressID), template: seenPath, token: tok,
		body: `{"amount":99,"txHash":"0x` + strings.Repeat("0f", 32) + `"}`, want: 409})
	c.run(t, oapiCall{name: "payin seen bad body", base: ps.Admin, method: "POST", path: sp(addressID), template: seenPath, token: tok,
		body: `{"amount":100,"txHash":"nope"}`, want: 400})
	c.run(t, oapiCall{name: "payin seen not json", base: ps.Admin, method: "POST", path: sp(addressID), template: seenPath, token: tok,
		ctype: "text/plain", body: "x", want: 415})
	c.run(t, oapiCall{name: "payin seen unknown", base: ps.Admin, method: "POST", path: sp(unknownID), template: seenPath, token: tok, body: seenBody, want: 404})
	c.run(t, oapiCall{name: "payin seen no token", base: ps.Admin, method: "POST", path: sp(unknownID), template: seenPath, body: seenBody, want: 401})
	c.run(t, oapiCall{name: "payin seen unready", base: unreadyAdm, method: "POST", path: sp(unknownID), template: seenPath, token: tok, body: seenBody, want: 503})
	payInPath := "/admin/v1/payins/{addressId}"
	pp2 := func(id string) string { return strings.Replace(payInPath, "{addressId}", id, 1) }
	got := c.run(t, oapiCall{name: "payin get", base: ps.Admin, method: "GET", path: pp2(addressID), template: payInPath, token: tok, want: 200})
	if deposits, _ := oapiField(got, "deposits").([]any); len(deposits) != 1 || oapiString(got, "quoteId") != offRampID {
		t.Errorf("pay-in look-up: %v", got)
	}
	c.run(t, oapiCall{name: "payin get bad id", base: ps.Admin, method: "GET", path: pp2("x"), template: payInPath, token: tok, want: 400})
	c.run(t, oapiCall{name: "payin get unknown", base: ps.Admin, method: "GET", path: pp2(unknownID), template: payInPath, token: tok, want: 404})
	c.run(t, oapiCall{name: "payin get no token", base: ps.Admin, method: "GET", path: pp2(unknownID), template: payInPath, want: 401})
	c.run(t, oapiCall{name: "payin get unready", base: unreadyAdm, method: "GET", path: pp2(unknownID), template: payInPath, token: tok, want: 503})

	// Watched chains, on a server watching a simulated chain whose token
	// has 18 decimals: a transfer of 1.000000000000000001 to a deposit
	// address is listed unapplied.
	oapiChains(t, c, tok, unreadyAdm, exampleMarkets)
	oapiStatements(t, c, tok, unreadyAdm)
	// The same deposit spelled otherwise: a repeat; the receipt taken back.
	again := c.run(t, oapiCall{name: "payin seen again, spelled otherwise", base: ps.Admin, method: "POST", path: sp(addressID), template: seenPath, token: tok,
		body: `{"amount":100,"txHash":" 0X` + strings.ToUpper(strings.Repeat("0f", 32)) + `","logIndex":0}`, want: 200})
	deposits, _ := oapiField(again, "deposits").([]any)
	if len(deposits) != 1 {
		t.Fatalf("a repeat credited again: %v", again)
	}
	receiptID := oapiString(deposits[0], "receiptId")
	dups := "/admin/v1/payins/duplicates"
	c.run(t, oapiCall{name: "duplicates", base: ps.Admin, method: "GET", path: dups, template: dups, token: tok, want: 200})
	c.run(t, oapiCall{name: "duplicates no token", base: ps.Admin, method: "GET", path: dups, template: dups, want: 401})
	rev := "/admin/v1/payins/{receiptId}/reverse"
	revp := func(id string) string { return strings.Replace(rev, "{receiptId}", id, 1) }
	c.run(t, oapiCall{name: "reverse unknown", base: ps.Admin, method: "POST", path: revp("rcpt_s00000000000ffff"), template: rev, token: tok, body: `{"reason":"x"}`, want: 404})
	c.run(t, oapiCall{name: "reverse bad id", base: ps.Admin, method: "POST", path: revp("rcpt_x"), template: rev, token: tok, body: `{"reason":"x"}`, want: 400})
	c.run(t, oapiCall{name: "reverse no token", base: ps.Admin, method: "POST", path: revp(receiptID), template: rev, body: `{"reason":"x"}`, want: 401})
	// Paid out first, the wallet cannot cover taking the receipt back.
	payout := "/admin/v1/accounts/{accountId}/withdraw"
	ppUSDTWallet := wallet(t, pp, engine.ModeSandbox, engine.CurrencyUSDT)
	payoutPath := strings.Replace(payout, "{accountId}", ppUSDTWallet, 1)
	c.run(t, oapiCall{name: "pay the deposit out", base: ps.Admin, method: "POST", path: payoutPath, template: payout, token: tok, body: `{"amount":100,"reference":"0xaa"}`, want: 200})
	c.run(t, oapiCall{name: "reverse uncovered", base: ps.Admin, method: "POST", path: revp(receiptID), template: rev, token: tok, body: `{"reason":"x"}`, want: 422})
	refill := "/admin/v1/accounts/{accountId}/deposit"
	c.run(t, oapiCall{name: "prefund it back", base: ps.Admin, method: "POST", path: strings.Replace(refill, "{accountId}", ppUSDTWallet, 1), template: refill, token: tok,
		body: `{"amount":100,"reference":"0xbb"}`, want: 200})
	reversed := c.run(t, oapiCall{name: "reverse", base: ps.Admin, method: "POST", path: revp(receiptID), template: rev, token: tok, body: `{"reason":"returned to sender"}`, want: 200})
	if oapiString(reversed, "reversedAt") == "" {
		t.Errorf("reversed receipt: %v", reversed)
	}
	c.run(t, oapiCall{name: "reverse twice", base: ps.Admin, method: "POST", path: revp(receiptID), template: rev, token: tok, body: `{"reason":"x"}`, want: 409})

	// A deposit that would take the wallet over 10^15 minor units: 422.
	ppUSDT := ppUSDTWallet
	c.run(t, oapiCall{name: "fill the usdt wallet", base: ps.Admin, method: "POST", path: "/admin/v1/accounts/" + ppUSDT + "/deposit",
		template: "/admin/v1/accounts/{accountId}/deposit", token: tok, body: `{"amount":1000000000,"reference":"NIP-OAPI-5"}`, want: 200})
	c.run(t, oapiCall{name: "payin seen over the largest balance", base: ps.Admin, method: "POST", path: sp(addressID), template: seenPath, token: tok,
		body: `{"amount":1,"txHash":"0x` + strings.Repeat("1e", 32) + `"}`, want: 422})

	oapiFunds(t, c, s, p, other, unreadyAdm, unreadyPub)

	// The cluster routes: 404 on a single node; their shapes on a node of
	// a cluster (a fixed ClusterNode: the real one is tested over three
	// processes in cmd/oja's TestClusterFailover).
	node := gateway.New(gateway.Config{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		AdminToken: gatewaytest.AdminToken, Cluster: fixedCluster{}})
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = node.Shutdown(ctx)
	}()
	replace := "/admin/v1/cluster/nodes/{nodeId}/replace"
	rp := func(id string) string { return strings.Replace(replace, "{nodeId}", id, 1) }
	c.run(t, oapiCall{name: "replace single node", base: adm, method: "POST", path: rp("n3"), template: replace, token: tok, want: 404})
	c.run(t, oapiCall{name: "replace unready", base: unreadyAdm, method: "POST", path: rp("n3"), template: replace, token: tok, want: 503})
	c.run(t, oapiCall{name: "replace no token", base: adm, method: "POST", path: rp("n3"), template: replace, want: 401})
	// The fixed node "leads" here: the server serves a term, as a leader's
	// does (another server's actors: ending the term stops them).
	lead := actors.NewTerm(gatewaytest.Start(t, gatewaytest.Options{}).Sys, nil, nil)
	node.SetTerm(lead)
	c.run(t, oapiCall{name: "replace", base: "http://" + node.AdminAddr(), method: "POST", path: rp("n3"), template: replace, token: tok, want: 200})
	c.run(t, oapiCall{name: "replace the leader", base: "http://" + node.AdminAddr(), method: "POST", path: rp("n2"), template: replace, token: tok, want: 409})
	c.run(t, oapiCall{name: "replace unknown", base: "http://" + node.AdminAddr(), method: "POST", path: rp("n9"), template: replace, token: tok, want: 404})
	nodes, nodeAt := "/admin/v1/cluster/nodes", "/admin/v1/cluster/nodes/{nodeId}"
	na := func(id string) string { return strings.Replace(nodeAt, "{nodeId}", id, 1) }
	fixed := "http://" + node.AdminAddr()
	c.run(t, oapiCall{name: "add single node", base: adm, method: "POST", path: nodes, template: nodes, token: tok, body: `{"id":"n4","raft":"10.0.0.4:7000"}`, want: 404})
	c.run(t, oapiCall{name: "add no token", base: fixed, method: "POST", path: nodes, template: nodes, body: `{"id":"n4","raft":"10.0.0.4:7000"}`, want: 401})
	c.run(t, oapiCall{name: "add", base: fixed, method: "POST", path: nodes, template: nodes, token: tok, body: `{"id":"n4","raft":"10.0.0.4:7000"}`, want: 200})
	c.run(t, oapiCall{name: "add without raft", base: fixed, method: "POST", path: nodes, template: nodes, token: tok, body: `{"id":"n4"}`, want: 400})
	c.run(t, oapiCall{name: "add a bad id", base: fixed, method: "POST", path: nodes, template: nodes, token: tok, body: `{"id":"bad id","raft":"10.0.0.4:7000"}`, want: 400})
	c.run(t, oapiCall{name: "add a member twice", base: fixed, method: "POST", path: nodes, template: nodes, token: tok, body: `{"id":"n1","raft":"10.0.0.4:7000"}`, want: 409})
	c.run(t, oapiCall{name: "add not json", base: fixed, method: "POST", path: nodes, template: nodes, token: tok, body: `id=n4`, ctype: "text/plain", want: 415})
	c.run(t, oapiCall{name: "remove single node", base: adm, method: "DELETE", path: na("n3"), template: nodeAt, token: tok, want: 404})
	c.run(t, oapiCall{name: "remove no token", base: fixed, method: "DELETE", path: na("n3"), template: nodeAt, want: 401})
	c.run(t, oapiCall{name: "remove", base: fixed, method: "DELETE", path: na("n3"), template: nodeAt, token: tok, want: 200})
	c.run(t, oapiCall{name: "remove the last", base: fixed, method: "DELETE", path: na("last"), template: nodeAt, token: tok, want: 409})
	c.run(t, oapiCall{name: "remove unknown", base: fixed, method: "DELETE", path: na("n9"), template: nodeAt, token: tok, want: 404})
	lead.End() // the leadership lost
	// A follower forwards them; its leader unreachable, it answers 503.
	c.run(t, oapiCall{name: "add, no leader", base: fixed, method: "POST", path: nodes, template: nodes, token: tok, body: `{"id":"n4","raft":"10.0.0.4:7000"}`, want: 503})
	c.run(t, oapiCall{name: "remove, no leader", base: fixed, method: "DELETE", path: na("n3"), template: nodeAt, token: tok, want: 503})
	for _, path := range []string{"/admin/v1/cluster", "/admin/v1/cluster/node", "/admin/v1/state"} {
		c.run(t, oapiCall{name: "single node " + path, base: adm, method: "GET", path: path, template: path, token: tok, want: 404})
		c.run(t, oapiCall{name: "cluster node " + path, base: "http://" + node.AdminAddr(), method: "GET", path: path, template: path, token: tok, want: 200})
	}

	// Named operators and the audit trail; a viewer's write is 403 on every
	// admin write route the document lists.
	ops, opAt, auditPath := "/admin/v1/operators", "/admin/v1/operators/{operatorId}", "/admin/v1/audit"
	viewer := c.run(t, oapiCall{name: "create a viewer", base: adm, method: "POST", path: ops, template: ops, token: tok,
		body: `{"name":"Openapi Viewer","role":"viewer"}`, want: 201}).(map[string]any)
	c.run(t, oapiCall{name: "create a viewer twice", base: adm, method: "POST", path: ops, template: ops, token: tok,
		body: `{"name":"Openapi Viewer","role":"operator"}`, want: 409})
	c.run(t, oapiCall{name: "list operators", base: adm, method: "GET", path: ops, template: ops, token: tok, want: 200})
	c.run(t, oapiCall{name: "audit", base: adm, method: "GET", path: auditPath + "?limit=5", template: auditPath, token: tok, want: 200})
	viewerToken := viewer["token"].(string)
	var writes []string
	for path, item := range whole.root["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			if strings.HasPrefix(path, "/admin/") && (method == "post" || method == "put" || method == "delete" || method == "patch") {
				writes = append(writes, strings.ToUpper(method)+" "+path)
			}
		}
	}
	sort.Strings(writes)
	param := regexp.MustCompile(`\{[^}]+\}`)
	for _, w := range writes {
		method, template, _ := strings.Cut(w, " ")
		c.run(t, oapiCall{name: "a viewer's " + w, base: adm, method: method, template: template, token: viewerToken,
			path: param.ReplaceAllString(template, "6f1c1f43-0000-4000-8000-000000000000"), body: `{}`, want: 403})
	}
	oa := func(id string) string { return strings.Replace(opAt, "{operatorId}", id, 1) }
	c.run(t, oapiCall{name: "revoke an unknown operator", base: adm, method: "DELETE", path: oa("6f1c1f43-0000-4000-8000-000000000000"), template: opAt, token: tok, want: 404})
	c.run(t, oapiCall{name: "revoke the viewer", base: adm, method: "DELETE", path: oa(viewer["operatorId"].(string)), template: opAt, token: tok, want: 200})

	// ---- Coverage: every documented response was seen, but for those no
	// test can provoke (500).
	uncoverable := map[string]bool{"responses/InternalError": true, "responses/XMLInternalError": true}
	var missing []string
	for path, item := range whole.root["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			opm, ok := op.(map[string]any)
			if !ok || method == "parameters" {
				continue
			}
			for status, resp := range opm["responses"].(map[string]any) {
				if r, ok := resp.(map[string]any)["$ref"].(string); ok {
					name := strings.TrimPrefix(r, "#/components/")
					if !c.covered[name] && !uncoverable[name] {
						missing = append(missing, name)
					}
					continue
				}
				if key := fmt.Sprintf("%s %s %s", strings.ToUpper(method), path, status); !c.covered[key] {
					missing = append(missing, key)
				}
			}
		}
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)
	for _, m := range missing {
		t.Errorf("documented but never exercised: %s", m)
	}
	if c.lint != "" && c.xmlChecked < 20 {
		t.Errorf("only %d XML answers checked against their schemas", c.xmlChecked)
	}
}

// oapiCheckRefs fails on any $ref of v that does not resolve in doc.
func oapiCheckRefs(t *testing.T, doc *oapiDoc, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["$ref"]; ok {
			if _, _, err := doc.deref(v); err != nil {
				t.Errorf("openapi: %v", err)
			}
		}
		for _, child := range v {
			oapiCheckRefs(t, doc, child)
		}
	case []any:
		for _, child := range v {
			oapiCheckRefs(t, doc, child)
		}
	}
}

// oapiTxID reads UnqTxIdr/TxId of an FX answer.
func oapiTxID(t *testing.T, r *oapiResponse) string {
	t.Helper()
	var doc struct {
		TxID string `xml:"UnqTxIdr>TxId"`
	}
	if r.status != 200 || xml.Unmarshal(r.body, &doc) != nil || doc.TxID == "" {
		t.Fatalf("fx initiate: %s", r)
	}
	return doc.TxID
}

// oapiStream opens a rate stream, checks its documented headers and
// validates a rate_update's and a heartbeat's data against the schemas of
// x-oja-events.
func oapiStream(t *testing.T, c *oapiChecker, url, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	template := "/api/v1/partners/marketplace/rates/stream"
	op := c.operation(t, "GET", template)
	ok200, _, _ := c.doc.deref(op["responses"].(map[string]any)["200"])
	c.mu.Lock()
	c.covered["GET "+template+" 200"] = true
	c.mu.Unlock()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("Cache-Control") != "no-cache" ||
		res.Header.Get("X-Accel-Buffering") != "no" || res.Header.Get("X-Request-Id") == "" {
		t.Fatalf("stream: %d %v", res.StatusCode, res.Header)
	}
	events := ok200["content"].(map[string]any)["text/event-stream"].(map[string]any)["x-oja-events"].(map[string]any)
	seen := map[string]bool{}
	r := bufio.NewReader(res.Body)
	var event string
	for len(seen) < len(events) {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended after %v: %v", seen, err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
			if _, ok := events[event]; !ok {
				t.Errorf("stream event %q is not documented", event)
			}
		case strings.HasPrefix(line, "data: "):
			data := decodeJSONBody(t, []byte(strings.TrimPrefix(line, "data: ")))
			for _, p := range c.doc.validate(events[event], data, event) {
				t.Errorf("stream: %s\n  data: %s", p, line)
			}
			seen[event] = true
		}
	}
}

// oapiStreamsPerKey opens streams with one key until the next is refused
// (429, at most 10 per key) and checks the refusal.
func oapiStreamsPerKey(t *testing.T, c *oapiChecker, url, key string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	streamClient := &http.Client{Transport: transport}
	for i := 0; i < 20; i++ {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := streamClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode == 200 {
			defer res.Body.Close() // held open until the test's end
			continue
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		c.check(t, "GET", "/api/v1/partners/marketplace/rates/stream", &oapiResponse{status: res.StatusCode, header: res.Header, body: raw})
		if res.StatusCode != 429 || i != 10 {
			t.Errorf("stream %d refused with %d: %s", i+1, res.StatusCode, raw)
		}
		return
	}
	t.Error("20 streams with one key, none refused")
}

// oapiUntil429 repeats a request on a rate-limited server until it is
// refused, and checks the refusal.
func oapiUntil429(t *testing.T, c *oapiChecker, base, method, path, template, key string) {
	t.Helper()
	for range 50 {
		r := oapiDo(t, method, base+path, key, "", nil)
		if r.status == 429 {
			c.check(t, method, template, r)
			return
		}
	}
	t.Errorf("%s %s: 50 requests at 1/s, none refused", method, path)
}

// fixedCluster is a ClusterNode with fixed answers, for the document's shapes.
type fixedCluster struct{}

func (fixedCluster) Self() cluster.Member { return cluster.Member{ID: "n2"} }
func (fixedCluster) Leader() (cluster.Member, bool) {
	return cluster.Member{ID: "n1", Raft: "127.0.0.1:1"}, true
}
func (fixedCluster) IsMember() bool             { return true }
func (fixedCluster) PeerListener() net.Listener { return nil }
func (fixedCluster) DialPeer(cluster.Member, time.Duration) (net.Conn, error) {
	return nil, errors.New("fixedCluster: no peers")
}
func (fixedCluster) AddMember(_ context.Context, id, raft string, _ cluster.PeerAsker) error {
	switch {
	case id == "bad id":
		return &cluster.BadMemberError{Field: "id", Problem: "must be 1 to 64 letters, digits, '-' or '_'"}
	case id == "n1":
		return cluster.ErrMemberExists
	}
	return nil
}
func (fixedCluster) RemoveMember(_ context.Context, id string, _ cluster.PeerAsker) error {
	switch id {
	case "n1", "n2", "n3":
		return nil
	case "last":
		return cluster.ErrLastMember
	}
	return cluster.ErrUnknownMember
}
func (fixedCluster) Status(context.Context, cluster.PeerAsker) cluster.Status {
	leader := "n1"
	return cluster.Status{Leader: &leader, Term: 3, Nodes: []cluster.NodeStatus{
		{ID: "n1", Raft: "127.0.0.1:7001", State: "leader", AppliedIndex: 12}, {ID: "n2", Raft: "127.0.0.1:7002", State: "follower", AppliedIndex: 12},
		{ID: "n3", Raft: "127.0.0.1:7003", State: "unreachable"}}}
}
func (fixedCluster) LocalStatus() cluster.NodeStatus {
	return cluster.NodeStatus{ID: "n2", Raft: "127.0.0.1:7002", State: "follower", AppliedIndex: 12}
}
func (fixedCluster) StateHash() (uint64, string, error) { return 9, strings.Repeat("ab", 32), nil }
func (fixedCluster) VerifyLeader() error                { return nil }
func (fixedCluster) Replace(_ context.Context, id string, _ cluster.PeerAsker) error {
	switch id {
	case "n2":
		return cluster.ErrReplaceLeader
	case "n1", "n3":
		return nil
	}
	return cluster.ErrUnknownMember
}

// acceptingDeliveries is a webhook dispatcher that accepts every test
// delivery, is fed nothing and knows no backlog.
type acceptingDeliveries struct{}

func (acceptingDeliveries) Registered(*engine.Webhook)                 {}
func (acceptingDeliveries) Deleted(*engine.Webhook)                    {}
func (acceptingDeliveries) Owed(*engine.Webhook, *engine.OwedEvent)    {}
func (acceptingDeliveries) Dropped(*engine.Webhook, *engine.OwedEvent) {}
func (acceptingDeliveries) Start()                                     {}
func (acceptingDeliveries) Stop()                                      {}
func (acceptingDeliveries) Counters() actors.WebhookCounters           { return actors.WebhookCounters{} }
func (acceptingDeliveries) Status(engine.WebhookID) actors.WebhookStatus {
	return actors.WebhookStatus{Unknown: true}
}
func (acceptingDeliveries) Test(*engine.Webhook, engine.EventID, []byte) error { return nil }

// oapiChains exercises the watched-chain routes against a server that
// watches a simulated chain (internal/simchain).
func oapiChains(t *testing.T, c *oapiChecker, tok, unreadyAdm string, exampleMarkets []byte) {
	t.Helper()
	one := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	chain := simchain.Start(t, 18, new(big.Int).Mul(one, big.NewInt(1_000_000)))
	var file map[string]any
	if err := json.Unmarshal(exampleMarkets, &file); err != nil {
		t.Fatal(err)
	}
	file["chainWatch"] = map[string]any{"ETHEREUM": map[string]any{"rpc": chain.URL, "confirmations": 1, "pollMillis": 50,
		"tokens": map[string]any{"USDT": chain.Token.Hex()}}}
	raw, _ := json.Marshal(file)
	cfg, err := engine.ParseMarketsConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	cs := gatewaytest.Start(t, gatewaytest.Options{Markets: cfg})
	cp := cs.NewPartner(t, "openapi-chains")
	pool := cs.NewPool(t, engine.ModeLive, engine.Pair{Source: engine.CurrencyUSDT, Destination: engine.CurrencyNGN}, "Desk C", "1612.5", "1000000")
	created := oapiParse(t, oapiDo(t, "POST", cs.URL+"/api/v1/partners/marketplace/intent", cp.LiveKey, "application/json",
		[]byte(`{"sourceCurrency":"USDT","destinationCurrency":"NGN","amount":100,"rate":1600,"amountDirection":"source","chain":"ETHEREUM"}`)).body).root
	accepted := oapiParse(t, oapiDo(t, "PUT", cs.URL+"/api/v1/partners/marketplace/quote/"+oapiString(created, "quoteId")+"/accept", cp.LiveKey,
		"application/json", []byte(fmt.Sprintf(`{"accountId":%q}`, pool.Liquidity.ID))).body).root
	deposit := oapiString(accepted, "metadata.cryptoPayIn.address")
	chain.Transfer(1, common.HexToAddress(deposit), new(big.Int).Add(one, big.NewInt(1)))
	chain.Commit()
	poll.Until(t, 15*time.Second, func() string {
		if st, _ := cs.Sys.ChainState(engine.ChainEthereum); len(st.Unapplied) == 0 {
			return "no unapplied deposit listed"
		}
		return ""
	})
	chains, unapplied := "/admin/v1/chains", "/admin/v1/chains/unapplied"
	got := c.run(t, oapiCall{name: "chains", base: cs.Admin, method: "GET", path: chains, template: chains, token: tok, want: 200})
	if n := len(oapiField(got, "data").([]any)); n != 1 {
		t.Errorf("%d chains listed, want ETHEREUM", n)
	}
	c.run(t, oapiCall{name: "chains no token", base: cs.Admin, method: "GET", path: chains, template: chains, want: 401})
	c.run(t, oapiCall{name: "chains unready", base: unreadyAdm, method: "GET", path: chains, template: chains, token: tok, want: 503})
	page := c.run(t, oapiCall{name: "chains unapplied", base: cs.Admin, method: "GET", path: unapplied + "?limit=1", template: unapplied, token: tok, want: 200})
	first := oapiField(page, "data").([]any)[0]
	c.run(t, oapiCall{name: "chains unapplied next page", base: cs.Admin, method: "GET", template: unapplied, token: tok, want: 200,
		path: unapplied + "?startingAfter=" + url.QueryEscape(oapiString(first, "unappliedId"))})
	c.run(t, oapiCall{name: "chains unapplied bad limit", base: cs.Admin, method: "GET", path: unapplied + "?limit=0", template: unapplied, token: tok, want: 400})
	c.run(t, oapiCall{name: "chains unapplied unknown cursor", base: cs.Admin, method: "GET", path: unapplied + "?startingAfter=x", template: unapplied, token: tok, want: 400})
	c.run(t, oapiCall{name: "chains unapplied no token", base: cs.Admin, method: "GET", path: unapplied, template: unapplied, want: 401})
	c.run(t, oapiCall{name: "chains unapplied unready", base: unreadyAdm, method: "GET", path: unapplied, template: unapplied, token: tok, want: 503})
	// The console's page shows the chain and the deposit not credited.
	op := newConsoleBrowser(t, cs.Admin)
	op.login(gatewaytest.AdminToken)
	chainsPage := op.do(http.MethodGet, "/console/chains", nil)
	wantConsole(t, "chains page", chainsPage, http.StatusOK, "ETHEREUM")
	wantConsole(t, "chains page", chainsPage, http.StatusOK, new(big.Int).Add(one, big.NewInt(1)).String())
}

// oapiStatements exercises the bank statement import and the receipts held
// in suspense.
func oapiStatements(t *testing.T, c *oapiChecker, tok, unreadyAdm string) {
	t.Helper()
	ss := gatewaytest.Start(t, gatewaytest.Options{})
	ss.NewPool(t, engine.ModeLive, gatewaytest.NGNUSDT, "Desk S", "0.000625", "10000")
	sp := ss.NewPartner(t, "openapi-statements")
	quote := oapiParse(t, oapiDo(t, "POST", ss.URL+"/api/v1/partners/marketplace/intent", sp.LiveKey, "application/json",
		[]byte(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1000,"rate":0.0006,"amountDirection":"source"}`)).body).root
	quoteID := oapiString(quote, "quoteId")
	statements, unapplied := "/admin/v1/payins/bank/statements", "/admin/v1/payins/unapplied"
	apply, ret := unapplied+"/{unappliedId}/apply", unapplied+"/{unappliedId}/return"
	at := func(template, id string) string { return strings.Replace(template, "{unappliedId}", id, 1) }
	doc := camttest.Statement("OAPI-1", "0123456789", "NGN",
		camttest.Entry{Amount: "1000.00", Currency: "NGN", AcctSvcrRef: "OAPI/1", Remittance: []string{"no quote named"}, Debtor: "Ada Obi"},
		camttest.Entry{Amount: "50.00", Currency: "NGN", AcctSvcrRef: "OAPI/2"},
		camttest.Entry{Amount: "60.00", Currency: "NGN", AcctSvcrRef: "OAPI/4"},
		camttest.Entry{Amount: "7.00", Currency: "NGN", AcctSvcrRef: "OAPI/3", Debit: true})
	imported := c.run(t, oapiCall{name: "import a statement", base: ss.Admin, method: "POST", path: statements, template: statements, token: tok,
		ctype: "application/xml", body: string(doc), want: 200})
	if n := fmt.Sprint(oapiField(imported, "unapplied")); n != "3" {
		t.Fatalf("import: %v", imported)
	}
	c.run(t, oapiCall{name: "import a statement again", base: ss.Admin, method: "POST", path: statements, template: statements, token: tok,
		ctype: "text/xml", body: string(doc), want: 200})
	c.run(t, oapiCall{name: "import a bad document", base: ss.Admin, method: "POST", path: statements, template: statements, token: tok,
		ctype: "application/xml", body: `<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.052.001.08"/>`, want: 400})
	c.run(t, oapiCall{name: "import JSON", base: ss.Admin, method: "POST", path: statements, template: statements, token: tok,
		body: `{}`, want: 415})
	c.run(t, oapiCall{name: "import over the bound", base: ss.Admin, method: "POST", path: statements, template: statements, token: tok,
		ctype: "application/xml", body: strings.Repeat(" ", camt.BytesMax+128<<10), want: 413})
	c.run(t, oapiCall{name: "import no token", base: ss.Admin, method: "POST", path: statements, template: statements,
		ctype: "application/xml", body: string(doc), want: 401})
	c.run(t, oapiCall{name: "import unready", base: unreadyAdm, method: "POST", path: statements, template: statements, token: tok,
		ctype: "application/xml", body: string(doc), want: 503})
	list := c.run(t, oapiCall{name: "unapplied", base: ss.Admin, method: "GET", path: unapplied + "?mode=live&limit=1", template: unapplied, token: tok, want: 200})
	first := oapiString(oapiField(list, "data").([]any)[0], "unappliedId")
	c.run(t, oapiCall{name: "unapplied next page", base: ss.Admin, method: "GET", path: unapplied + "?startingAfter=" + first, template: unapplied, token: tok, want: 200})
	c.run(t, oapiCall{name: "unapplied bad mode", base: ss.Admin, method: "GET", path: unapplied + "?mode=x", template: unapplied, token: tok, want: 400})
	c.run(t, oapiCall{name: "unapplied no token", base: ss.Admin, method: "GET", path: unapplied, template: unapplied, want: 401})
	c.run(t, oapiCall{name: "unapplied unready", base: unreadyAdm, method: "GET", path: unapplied, template: unapplied, token: tok, want: 503})
	all := oapiField(c.run(t, oapiCall{name: "unapplied all", base: ss.Admin, method: "GET", path: unapplied, template: unapplied, token: tok, want: 200}), "data").([]any)
	one, two, three := oapiString(all[0], "unappliedId"), oapiString(all[1], "unappliedId"), oapiString(all[2], "unappliedId")
	c.run(t, oapiCall{name: "apply to a quote", base: ss.Admin, method: "POST", path: at(apply, one), template: apply, token: tok,
		body: fmt.Sprintf(`{"quoteId":%q}`, quoteID), want: 200})
	c.run(t, oapiCall{name: "apply again", base: ss.Admin, method: "POST", path: at(apply, one), template: apply, token: tok,
		body: fmt.Sprintf(`{"quoteId":%q}`, quoteID), want: 404})
	c.run(t, oapiCall{name: "apply nowhere", base: ss.Admin, method: "POST", path: at(apply, two), template: apply, token: tok, body: `{}`, want: 400})
	c.run(t, oapiCall{name: "apply not json", base: ss.Admin, method: "POST", path: at(apply, two), template: apply, token: tok,
		ctype: "text/plain", body: `{}`, want: 415})
	c.run(t, oapiCall{name: "apply no token", base: ss.Admin, method: "POST", path: at(apply, two), template: apply, body: `{}`, want: 401})
	c.run(t, oapiCall{name: "apply unready", base: unreadyAdm, method: "POST", path: at(apply, two), template: apply, token: tok, body: `{}`, want: 503})
	c.run(t, oapiCall{name: "return", base: ss.Admin, method: "POST", path: at(ret, two), template: ret, token: tok,
		body: `{"reference":"RET/OAPI/2"}`, want: 200})
	c.run(t, oapiCall{name: "return under a used reference", base: ss.Admin, method: "POST", path: at(ret, three), template: ret, token: tok,
		body: `{"reference":"ret/oapi/2"}`, want: 409})
	c.run(t, oapiCall{name: "return again", base: ss.Admin, method: "POST", path: at(ret, two), template: ret, token: tok,
		body: `{"reference":"RET/OAPI/2b"}`, want: 404})
	c.run(t, oapiCall{name: "return no reference", base: ss.Admin, method: "POST", path: at(ret, two), template: ret, token: tok, body: `{}`, want: 400})
	c.run(t, oapiCall{name: "return not json", base: ss.Admin, method: "POST", path: at(ret, two), template: ret, token: tok,
		ctype: "text/plain", body: `{}`, want: 415})
	c.run(t, oapiCall{name: "return no token", base: ss.Admin, method: "POST", path: at(ret, two), template: ret, body: `{}`, want: 401})
	c.run(t, oapiCall{name: "return unready", base: unreadyAdm, method: "POST", path: at(ret, two), template: ret, token: tok, body: `{}`, want: 503})
}

// TestOpenAPIWebhookTestDelivery checks the body a webhook test sends to
// the endpoint against the document's webhook (webhooks.quoteEvent). The
// other events' bodies are the event history's items (GET
// /api/v1/partners/events, one renderer), which TestOpenAPIDocument
// validates against the same WebhookEvent schema.
func TestOpenAPIWebhookTestDelivery(t *testing.T) {
	t.Parallel()
	doc := oapiParse(t, gateway.OpenAPIDocument())
	schema := oapiField(doc.root, "webhooks.quoteEvent.post.requestBody.content.application/json.schema")
	if _, name, _ := doc.deref(schema); name != "schemas/WebhookEvent" {
		t.Fatalf("the webhook's body is %q, want the WebhookEvent schema the event history uses", name)
	}
	hooks := &capturingDeliveries{}
	s := gatewaytest.Start(t, gatewaytest.Options{Webhooks: hooks, WebhookAllowPrivate: true})
	p := s.NewPartner(t, "openapi-hooks")
	hook := wantCreated(t, do(t, http.MethodPost, s.URL+webhooksURL, p.SandboxKey,
		map[string]any{"url": "http://127.0.0.1:9/hooks", "events": []string{"quote.created"}}))
	wantStatus(t, do(t, http.MethodPost, s.URL+webhooksURL+"/"+getString(t, hook, "webhookId")+"/test", p.SandboxKey, nil), http.StatusAccepted)
	hooks.mu.Lock()
	bodies := slices.Clone(hooks.bodies)
	hooks.mu.Unlock()
	if len(bodies) != 1 {
		t.Fatalf("%d test deliveries handed to the dispatcher, want 1", len(bodies))
	}
	dec := json.NewDecoder(bytes.NewReader(bodies[0]))
	dec.UseNumber()
	var body any
	if err := dec.Decode(&body); err != nil {
		t.Fatal(err)
	}
	for _, problem := range doc.validate(schema, body, "$") {
		t.Errorf("webhook.test body %s: %s", bodies[0], problem)
	}
}

// capturingDeliveries is acceptingDeliveries that keeps each test
// delivery's body.
type capturingDeliveries struct {
	acceptingDeliveries
	mu     sync.Mutex
	bodies [][]byte
}

func (c *capturingDeliveries) Test(_ *engine.Webhook, _ engine.EventID, body []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bodies = append(c.bodies, bytes.Clone(body))
	return nil
}

// TestOpenAPIDecimalMembers: every non-integer number the document
// describes is "format": "decimal" with the x-go-type that makes
// oapi-codegen use shopspring/decimal, so no generator picks a binary
// float; and no member name is a decimal in one schema and another
// number in another, since client/typescript converts decimals by name.
func TestOpenAPIDecimalMembers(t *testing.T) {
	t.Parallel()
	doc := oapiParse(t, gateway.OpenAPIDocument())
	kinds := map[string]map[string]bool{} // member → "decimal"/"integer"
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case []any:
			for i, x := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), x)
			}
		case map[string]any:
			isNumber := v["type"] == "number"
			if list, ok := v["type"].([]any); ok {
				isNumber = slices.Contains(list, any("number"))
			}
			if isNumber {
				if v["format"] != "decimal" || v["x-go-type"] != "decimal.Decimal" {
					t.Errorf("%s: a number without format decimal and x-go-type decimal.Decimal", path)
				}
			}
			if props, ok := v["properties"].(map[string]any); ok {
				for name, p := range props {
					s, _, err := doc.deref(p)
					if err != nil {
						t.Errorf("%s.%s: %v", path, name, err)
						continue
					}
					kind := ""
					switch t := fmt.Sprint(s["type"]); {
					case s["format"] == "decimal":
						kind = "decimal"
					case strings.Contains(t, "integer"), strings.Contains(t, "number"):
						kind = "integer"
					}
					if kind != "" {
						if kinds[name] == nil {
							kinds[name] = map[string]bool{}
						}
						kinds[name][kind] = true
					}
				}
			}
			for k, x := range v {
				walk(path+"."+k, x)
			}
		}
	}
	walk("$", doc.root)
	decimals := 0
	for name, k := range kinds {
		if k["decimal"] && k["integer"] {
			t.Errorf("member %q is a decimal in one schema and an integer in another", name)
		}
		if k["decimal"] {
			decimals++
		}
	}
	if decimals < 10 {
		t.Fatalf("only %d decimal members found: the walk missed the money", decimals)
	}
}

// xsdNode is any element of an XML Schema document.
type xsdNode struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []xsdNode  `xml:",any"`
}

func (n *xsdNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n *xsdNode) child(local string) *xsdNode {
	for i := range n.Children {
		if n.Children[i].XMLName.Local == local {
			return &n.Children[i]
		}
	}
	return nil
}

func readXSD(t *testing.T, name string) *xsdNode {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fxSchemas, name))
	if err != nil {
		t.Fatal(err)
	}
	var n xsdNode
	if err := xml.Unmarshal(raw, &n); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &n
}

// TestOpenAPIXMLMatchesSchemas: the document's description of each XML
// message (components/schemas/<root>) has the elements of its XML Schema
// (client/fxmsg/xsd/<root>.xsd): the same children at every level, the
// same required ones, repeated ones as arrays, elements with text as
// scalars; and the same root name and namespace.
func TestOpenAPIXMLMatchesSchemas(t *testing.T) {
	t.Parallel()
	doc := oapiParse(t, gateway.OpenAPIDocument())
	types := map[string]*xsdNode{}
	addTypes := func(s *xsdNode) {
		for i := range s.Children {
			if n := s.Children[i].attr("name"); n != "" && strings.HasSuffix(s.Children[i].XMLName.Local, "Type") {
				types[n] = &s.Children[i]
			}
		}
	}
	addTypes(readXSD(t, "common.xsd"))
	var compare func(path string, el *xsdNode, schema any)
	compare = func(path string, el *xsdNode, schema any) {
		s, _, err := doc.deref(schema)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		if el.attr("maxOccurs") == "unbounded" {
			if s["type"] != "array" {
				t.Errorf("%s: repeated in the XML Schema, %v in the document", path, s["type"])
				return
			}
			if x, _ := s["xml"].(map[string]any); x == nil || x["name"] != el.attr("name") {
				t.Errorf("%s: the array is not named %s", path, el.attr("name"))
			}
			if s, _, err = doc.deref(s["items"]); err != nil {
				t.Errorf("%s: %v", path, err)
				return
			}
		}
		ct := el.child("complexType")
		if typ := el.attr("type"); typ != "" && !strings.HasPrefix(typ, "xs:") {
			ct = types[typ]
			if ct == nil {
				t.Errorf("%s: type %s is in no schema", path, typ)
				return
			}
		}
		var group *xsdNode
		if ct != nil && ct.XMLName.Local == "complexType" {
			for _, k := range []string{"sequence", "all", "choice"} {
				if group = ct.child(k); group != nil {
					break
				}
			}
		}
		if group == nil { // text (with or without attributes)
			if s["type"] == "object" || s["type"] == "array" {
				t.Errorf("%s: text in the XML Schema, %v in the document", path, s["type"])
			}
			return
		}
		props, _ := s["properties"].(map[string]any)
		if s["type"] != "object" || s["additionalProperties"] != false {
			t.Errorf("%s: elements in the XML Schema, want a closed object in the document", path)
			return
		}
		var names, required []string
		for i := range group.Children {
			c := &group.Children[i]
			name := c.attr("name")
			names = append(names, name)
			if group.XMLName.Local != "choice" && c.attr("minOccurs") != "0" {
				required = append(required, name)
			}
			if sub, ok := props[name]; ok {
				compare(path+"/"+name, c, sub)
			}
		}
		slices.Sort(names)
		slices.Sort(required)
		if got := oapiKeys(props); !slices.Equal(got, names) {
			t.Errorf("%s: children %v in the XML Schema, %v in the document", path, names, got)
		}
		var got []string
		for _, r := range oapiSlice(s["required"]) {
			got = append(got, r.(string))
		}
		slices.Sort(got)
		if !slices.Equal(got, required) {
			t.Errorf("%s: required %v in the XML Schema, %v in the document", path, required, got)
		}
	}
	files, err := filepath.Glob(filepath.Join(fxSchemas, "*.xsd"))
	if err != nil {
		t.Fatal(err)
	}
	messages := 0
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".xsd")
		if name == "common" {
			continue
		}
		messages++
		s := readXSD(t, filepath.Base(f))
		addTypes(s)
		root := s.child("element")
		if root == nil || root.attr("name") != name {
			t.Errorf("%s: no root element %s", f, name)
			continue
		}
		schema, ok := oapiField(doc.root, "components.schemas."+name).(map[string]any)
		if !ok {
			t.Errorf("%s has no schema %s in the document", f, name)
			continue
		}
		if x, _ := schema["xml"].(map[string]any); x == nil || x["name"] != name || x["namespace"] != s.attr("targetNamespace") {
			t.Errorf("%s: documented as %v, the XML Schema's root is {%s}%s", name, schema["xml"], s.attr("targetNamespace"), name)
		}
		compare(name, root, schema)
	}
	if messages != 9 {
		t.Errorf("%d message schemas, want 9", messages)
	}
}

func oapiSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// TestOpenAPIXMLExamples: every XML example of the document is valid
// against the XML Schema of its message, and is the documented message.
func TestOpenAPIXMLExamples(t *testing.T) {
	t.Parallel()
	lint := xsdcheck.Lint(t)
	doc := oapiParse(t, gateway.OpenAPIDocument())
	checked := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case []any:
			for _, x := range v {
				walk(path, x)
			}
		case map[string]any:
			for k, x := range v {
				mt, ok := x.(map[string]any)
				if k != "application/xml" || !ok {
					walk(path+"/"+k, x)
					continue
				}
				schema, _, err := doc.deref(mt["schema"])
				if err != nil {
					t.Fatal(err)
				}
				x, _ := schema["xml"].(map[string]any)
				examples, _ := mt["examples"].(map[string]any)
				for name, ex := range examples {
					value, _ := ex.(map[string]any)["value"].(string)
					root, _ := xmlRoot(t, []byte(value))
					if root.Local != x["name"] || root.Space != x["namespace"] {
						t.Errorf("%s example %s: root {%s}%s, documented %v", path, name, root.Space, root.Local, x)
					}
					if err := xsdcheck.Validate(lint, filepath.Join(fxSchemas, root.Local+".xsd"), []byte(value)); err != nil {
						t.Errorf("%s example %s: %v", path, name, err)
					}
					checked++
				}
			}
		}
	}
	walk("", doc.root["paths"])
	if checked < 15 {
		t.Errorf("%d XML examples checked, want every one the document has (15)", checked)
	}
}
