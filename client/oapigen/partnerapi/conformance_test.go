package partnerapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/oja-exchange/oja/client/oapigen/partnerapi"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// conformance is an http.RoundTripper that checks every request a client
// sends and every answer it gets against the service's own OpenAPI
// document with kin-openapi's validator (an independent implementation):
// route, parameters, headers, status and JSON bodies. XML bodies are
// checked against their XML Schemas by the gateway's tests instead
// (kin-openapi decodes no XML).
type conformance struct {
	report func(format string, args ...any) // t.Errorf
	router routers.Router
	next   http.RoundTripper

	mu      sync.Mutex
	checked int
}

func newConformance(t *testing.T, s *gatewaytest.Server) *conformance {
	t.Helper()
	resp, err := http.Get(s.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatalf("load the served document: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: s.URL}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("route the served document: %v", err)
	}
	c := &conformance{report: t.Errorf, router: router, next: http.DefaultTransport}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.checked == 0 {
			t.Error("no exchange went through the conformance check")
		}
	})
	return c
}

func isXML(contentType string) bool {
	media, _, _ := mime.ParseMediaType(contentType)
	return media == "application/xml"
}

func (c *conformance) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		c.report("%s %s: not in the document: %v", req.Method, req.URL.Path, err)
		return c.next.RoundTrip(req)
	}
	check := req.Clone(req.Context())
	check.Body = io.NopCloser(bytes.NewReader(body))
	in := &openapi3filter.RequestValidationInput{Request: check, PathParams: params, Route: route,
		Options: &openapi3filter.Options{MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
			ExcludeRequestBody: isXML(req.Header.Get("Content-Type"))}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		c.report("%s %s: the request breaks the document: %v", req.Method, req.URL.Path, err)
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Options: &openapi3filter.Options{MultiError: true, IncludeResponseStatus: true, ExcludeResponseBody: isXML(resp.Header.Get("Content-Type"))}}
	out.SetBodyBytes(answer)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		c.report("%s %s → %d: the answer breaks the document: %v\n%s", req.Method, req.URL.Path, resp.StatusCode, err, answer)
	}
	c.mu.Lock()
	c.checked++
	c.mu.Unlock()
	return resp, nil
}

// partnerClient is the generated client with key, its every exchange
// checked by conformance.
func partnerClient(t *testing.T, s *gatewaytest.Server, key string) *partnerapi.ClientWithResponses {
	t.Helper()
	c, err := partnerapi.NewClientWithResponses(s.URL,
		partnerapi.WithHTTPClient(&http.Client{Transport: newConformance(t, s)}),
		partnerapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+key)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// roundTripFunc is an http.RoundTripper from a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestConformanceCatchesViolations: the check is not a pass-through: an
// answer with an amount as a string, an undocumented status, a missing
// member, and a request with a bad parameter are each reported.
func TestConformanceCatchesViolations(t *testing.T) {
	s := gatewaytest.Start(t, gatewaytest.Options{})
	p := s.NewPartner(t, "conformance")
	c := newConformance(t, s)
	var reports []string
	c.report = func(format string, args ...any) { reports = append(reports, fmt.Sprintf(format, args...)) }
	answer := func(status int, body string) {
		c.next = roundTripFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"r"}},
				Body: io.NopCloser(strings.NewReader(body))}, nil
		})
	}
	client, err := partnerapi.NewClientWithResponses(s.URL, partnerapi.WithHTTPClient(&http.Client{Transport: c}),
		partnerapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+p.SandboxKey)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	params := &partnerapi.ListBalancesParams{XServiceSource: "conformance"}
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"valid", 200, `[{"accountId":"7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4","currency":"NGN","balance":1,"availableBalance":1}]`},
		{"amount as a string", 200, `[{"accountId":"7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4","currency":"NGN","balance":"1.00","availableBalance":1}]`},
		{"undocumented status", 418, `{"code":"TEAPOT","message":"no"}`},
		{"missing member", 200, `[{"accountId":"7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4","currency":"NGN","balance":1}]`},
	} {
		reports = nil
		answer(tc.status, tc.body)
		if _, err := client.ListBalancesWithResponse(ctx, params); err != nil {
			t.Fatal(err)
		}
		if valid := tc.name == "valid"; valid != (len(reports) == 0) {
			t.Errorf("%s: reports %q", tc.name, reports)
		}
	}
	reports = nil
	answer(200, `[]`)
	if _, err := client.ListBalancesWithResponse(ctx, &partnerapi.ListBalancesParams{}); err != nil {
		t.Fatal(err)
	}
	if len(reports) == 0 {
		t.Error("a request without the required x-service-source header: not reported")
	}
}
