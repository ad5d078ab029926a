package client

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Limits of the client.
const (
	// DefaultTimeout bounds one call (not a rate stream) unless WithTimeout
	// says otherwise.
	DefaultTimeout = 30 * time.Second
	// responseBytesMax bounds a response body the client reads; the
	// service's largest (a long pool list) is far below it.
	responseBytesMax = 16 << 20
	// errorBodyBytesMax bounds how much of a non-JSON error body is kept in
	// APIError.Message.
	errorBodyBytesMax = 512
	// DefaultServiceSource is the x-service-source header Balances sends
	// unless WithServiceSource names the calling service.
	DefaultServiceSource = "oja-go-client"
	userAgentDefault     = "oja-go-client/1"
)

// Option configures a Client or an Admin.
type Option func(*transport)

// WithHTTPClient sets the http.Client every call uses (its transport, TLS,
// proxy). NB: an http.Client.Timeout also cuts rate streams; prefer
// WithTimeout, which does not.
func WithHTTPClient(c *http.Client) Option { return func(t *transport) { t.http = c } }

// WithTimeout bounds each call (the context may bound it further); 0 means
// the context alone bounds it.
func WithTimeout(d time.Duration) Option { return func(t *transport) { t.timeout = d } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(t *transport) { t.userAgent = ua } }

// WithServiceSource sets the x-service-source header that GET
// /partners/balances requires (spec §10): the name of the calling
// service, which the service logs.
func WithServiceSource(name string) Option { return func(t *transport) { t.serviceSource = name } }

// CallOption configures one call.
type CallOption func(*call)

// IdempotencyKey sends an Idempotency-Key (1–255 printable ASCII
// characters) with a create: the same key with the same request within
// 24 h answers the original quote instead of creating another (spec §6).
func IdempotencyKey(key string) CallOption {
	return func(c *call) { c.header.Set("Idempotency-Key", key) }
}

// RequestID sends an X-Request-Id, which the service echoes and logs; by
// default the service makes one (APIError.RequestID carries it).
func RequestID(id string) CallOption { return func(c *call) { c.header.Set("X-Request-Id", id) } }

// ResponseBody makes the call store the answer's body, as the service sent
// it, in *dst — a 2xx or an error — for audit logs, or to show an answer
// exactly (oja admin prints the operator API's JSON this way).
func ResponseBody(dst *[]byte) CallOption { return func(c *call) { c.raw = dst } }

// call is one request being made.
type call struct {
	method string
	path   string // below the transport's base, e.g. "/partners/balances"
	query  url.Values
	body   any // marshalled as JSON (as XML with xml) when not nil
	header http.Header
	// xml: an XML FX API call (fx.go): the body is marshalled as XML, a
	// 2xx answer is decoded as XML and a refusal is a MsgRjct.
	xml bool
	// raw, when set, receives the answer's body as it came (ResponseBody).
	raw *[]byte
	// document, when set, is the request's body as it is, of media type
	// documentType (a bank statement's XML); the answer is JSON.
	document     []byte
	documentType string
}

// response is what a successful call returned, beyond its body.
type response struct {
	header http.Header
}

// transport is the HTTP plumbing Client and Admin share.
type transport struct {
	base          *url.URL // scheme, host and path prefix (e.g. /api/v1)
	token         string
	http          *http.Client
	timeout       time.Duration
	userAgent     string
	serviceSource string
}

func newTransport(baseURL, prefix, token string, opts []Option) (*transport, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil {
		return nil, fmt.Errorf("client: base URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[:port]", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("client: base URL %q: no query or fragment allowed", baseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(u.Path, prefix) {
		u.Path += prefix
	}
	u.RawPath = ""
	// A key read from a file (data/demo.key) ends with a newline, which
	// is not a valid header value: surrounding white space is dropped.
	token = strings.TrimSpace(token)
	if token == "" {
		return nil, errors.New("client: a credential is required")
	}
	t := &transport{base: u, token: token, http: http.DefaultClient, timeout: DefaultTimeout,
		userAgent: userAgentDefault, serviceSource: DefaultServiceSource}
	for _, o := range opts {
		o(t)
	}
	if t.http == nil {
		t.http = http.DefaultClient
	}
	return t, nil
}

// newCall starts a call with the call options applied.
func newCall(method, path string, body any, opts []CallOption) *call {
	c := &call{method: method, path: path, body: body, header: http.Header{}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// request builds the HTTP request of c.
func (t *transport) request(ctx context.Context, c *call) (*http.Request, error) {
	u := *t.base
	u.Path += c.path
	if len(c.query) > 0 {
		u.RawQuery = c.query.Encode()
	}
	var body io.Reader
	if c.document != nil {
		body = bytes.NewReader(c.document)
	} else if c.body != nil {
		marshal := json.Marshal
		if c.xml {
			marshal = xml.Marshal
		}
		raw, err := marshal(c.body)
		if err != nil {
			return nil, fmt.Errorf("client: encoding the request: %w", err)
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+t.token)
	mediaType := "application/json"
	if c.xml {
		mediaType = "application/xml"
	}
	req.Header.Set("Accept", mediaType)
	if t.userAgent != "" {
		req.Header.Set("User-Agent", t.userAgent)
	}
	switch {
	case c.document != nil:
		req.Header.Set("Content-Type", c.documentType)
	case c.body != nil:
		req.Header.Set("Content-Type", mediaType)
	}
	return req, nil
}

// do makes call c and decodes a 2xx JSON body into out (when not nil). A
// non-2xx answer is an *APIError.
func (t *transport) do(ctx context.Context, c *call, out any) (*response, error) {
	if t.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.timeout)
		defer cancel()
	}
	req, err := t.request(ctx, c)
	if err != nil {
		return nil, err
	}
	res, err := t.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, responseBytesMax+1))
	if err != nil {
		return nil, fmt.Errorf("client: reading the response to %s %s: %w", c.method, c.path, err)
	}
	if len(raw) > responseBytesMax {
		return nil, fmt.Errorf("client: the response to %s %s is over %d bytes", c.method, c.path, responseBytesMax)
	}
	if c.raw != nil {
		*c.raw = raw
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		if c.xml {
			return nil, newFXError(res, raw)
		}
		return nil, newAPIError(res, raw)
	}
	if out != nil && c.xml {
		if err := xml.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("client: decoding the response to %s %s (status %d): %w", c.method, c.path, res.StatusCode, err)
		}
	} else if out != nil {
		if err := decodeJSON(raw, out); err != nil {
			return nil, fmt.Errorf("client: decoding the response to %s %s (status %d): %w", c.method, c.path, res.StatusCode, err)
		}
	}
	return &response{header: res.Header}, nil
}

// decodeJSON decodes exactly one JSON value. Numbers in untyped places
// (error details) stay json.Number; typed amounts are decimal.Decimal, which
// reads the number's text.
func decodeJSON(raw []byte, out any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(out); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
