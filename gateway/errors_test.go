package gateway_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// TestErrors covers the rows of spec §9 that any request can hit.
func TestErrors(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	key := partner.SandboxKey
	valid := `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1000,"rate":0.000625,"amountDirection":"source"}`
	large := `{"sourceCurrency":"NGN","pad":"` + strings.Repeat("x", 65<<10) + `"}`

	cases := []struct {
		name     string
		method   string
		url      string
		key      string
		body     any
		headers  []string
		status   int
		code     string
		wantAuth bool // WWW-Authenticate: Bearer
	}{
		{name: "malformed JSON", method: "POST", url: s.URL + intentPath, key: key, body: `{"amount":`,
			status: 400, code: "VALIDATION_ERROR"},
		{name: "JSON array body", method: "POST", url: s.URL + intentPath, key: key, body: "[" + valid + "]",
			status: 400, code: "VALIDATION_ERROR"},
		{name: "trailing garbage", method: "POST", url: s.URL + intentPath, key: key, body: valid + " x",
			status: 400, code: "VALIDATION_ERROR"},
		{name: "two objects", method: "POST", url: s.URL + intentPath, key: key, body: valid + valid,
			status: 400, code: "VALIDATION_ERROR"},
		{name: "empty body", method: "POST", url: s.URL + intentPath, key: key, body: "",
			status: 400, code: "VALIDATION_ERROR"},
		{name: "null body", method: "POST", url: s.URL + intentPath, key: key, body: "null",
			status: 400, code: "VALIDATION_ERROR"},
		{name: "string body", method: "POST", url: s.URL + intentPath, key: key, body: `"quote"`,
			status: 400, code: "VALIDATION_ERROR"},
		{name: "no Authorization", method: "POST", url: s.URL + intentPath, body: valid,
			status: 401, code: "UNAUTHORIZED", wantAuth: true},
		{name: "Basic scheme", method: "GET", url: s.URL + balancesPath,
			headers: []string{"Authorization", "Basic " + key, "x-service-source", "test"},
			status:  401, code: "UNAUTHORIZED", wantAuth: true},
		{name: "Bearer without a key", method: "GET", url: s.URL + balancesPath,
			headers: []string{"Authorization", "Bearer ", "x-service-source", "test"},
			status:  401, code: "UNAUTHORIZED", wantAuth: true},
		{name: "key without scheme", method: "GET", url: s.URL + balancesPath,
			headers: []string{"Authorization", key, "x-service-source", "test"},
			status:  401, code: "UNAUTHORIZED", wantAuth: true},
		{name: "unknown key", method: "GET", url: s.URL + balancesPath,
			key: "oja_sandbox_0123456789abcdefghijABCDEFGHIJ0123456789", headers: []string{"x-service-source", "test"},
			status: 401, code: "UNAUTHORIZED", wantAuth: true},
		{name: "key with one character more", method: "GET", url: s.URL + balancesPath, key: key + "x",
			headers: []string{"x-service-source", "test"}, status: 401, code: "UNAUTHORIZED", wantAuth: true},
		{name: "admin token on the public API", method: "GET", url: s.URL + balancesPath,
			key: gatewaytest.AdminToken, headers: []string{"x-service-source", "test"},
			status: 401, code: "UNAUTHORIZED", wantAuth: true},
		{name: "unknown route", method: "GET", url: s.URL + "/api/v1/partners/nothing", key: key,
			status: 404, code: "NOT_FOUND"},
		{name: "admin route on the public listener", method: "GET", url: s.URL + "/admin/v1/pools",
			key: gatewaytest.AdminToken, status: 404, code: "NOT_FOUND"},
		{name: "unknown admin route", method: "GET", url: s.Admin + "/admin/v1/nothing",
			key: gatewaytest.AdminToken, status: 404, code: "NOT_FOUND"},
		{name: "DELETE on intent", method: "DELETE", url: s.URL + intentPath, key: key,
			status: 405, code: "METHOD_NOT_ALLOWED"},
		{name: "GET on intent", method: "GET", url: s.URL + intentPath, key: key,
			status: 405, code: "METHOD_NOT_ALLOWED"},
		{name: "POST on a quote", method: "POST", url: s.URL + quotePath + randomUUID, key: key, body: "{}",
			status: 405, code: "METHOD_NOT_ALLOWED"},
		{name: "GET on cancel", method: "GET", url: s.URL + quotePath + randomUUID + "/cancel", key: key,
			status: 405, code: "METHOD_NOT_ALLOWED"},
		{name: "body over 64 KiB", method: "POST", url: s.URL + intentPath, key: key, body: large,
			status: 413, code: "PAYLOAD_TOO_LARGE"},
		{name: "admin body over 64 KiB", method: "POST", url: s.Admin + "/admin/v1/clients",
			key: gatewaytest.AdminToken, body: large, status: 413, code: "PAYLOAD_TOO_LARGE"},
		{name: "text/plain create", method: "POST", url: s.URL + intentPath, key: key, body: valid,
			headers: []string{"Content-Type", "text/plain"}, status: 415, code: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "XML create on the JSON route", method: "POST", url: s.URL + intentPath, key: key,
			body: "<FXTradInstr/>", headers: []string{"Content-Type", "application/xml"},
			status: 415, code: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "text/plain accept", method: "PUT", url: s.URL + quotePath + randomUUID + "/accept", key: key,
			body: `{"accountId":"` + randomUUID + `"}`, headers: []string{"Content-Type", "text/plain"},
			status: 415, code: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "form admin body", method: "POST", url: s.Admin + "/admin/v1/clients", key: gatewaytest.AdminToken,
			body: "name=acme", headers: []string{"Content-Type", "application/x-www-form-urlencoded"},
			status: 415, code: "UNSUPPORTED_MEDIA_TYPE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			send := do
			if tc.status == http.StatusRequestEntityTooLarge {
				send = doOversized
			}
			r := send(t, tc.method, tc.url, tc.key, tc.body, tc.headers...)
			wantError(t, r, tc.status, tc.code)
			if got := r.header.Get("WWW-Authenticate"); tc.wantAuth && got != "Bearer" {
				t.Errorf("WWW-Authenticate: got %q, want Bearer", got)
			}
		})
	}
	t.Run("JSON with a charset is JSON", func(t *testing.T) {
		r := do(t, http.MethodPost, s.URL+intentPath, key, valid, "Content-Type", "application/json; charset=utf-8")
		wantQuoteStatus(t, wantOK(t, r), "pending")
	})
	t.Run("error texts are not HTML-escaped", func(t *testing.T) {
		r := do(t, http.MethodPost, s.URL+intentPath, "", valid)
		if !strings.Contains(string(r.body), "Authorization: Bearer <API_KEY>") {
			t.Errorf("401 body %s: want the text as written, <API_KEY> unescaped", r.body)
		}
	})
	t.Run("bearer scheme is case-insensitive", func(t *testing.T) {
		r := do(t, http.MethodGet, s.URL+balancesPath, "", nil, "Authorization", "bearer "+key,
			"x-service-source", "test")
		wantStatus(t, r, http.StatusOK)
	})
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	cases := []struct {
		name   string
		method string
		url    string
		key    string
		status int
	}{
		{"success", "GET", s.URL + balancesPath + "/currency/NGN", partner.SandboxKey, 200},
		{"business error", "GET", s.URL + quotePath + randomUUID, partner.SandboxKey, 404},
		{"unauthorized", "GET", s.URL + quotePath + randomUUID, "", 401},
		{"unknown route", "GET", s.URL + "/nothing", "", 404},
		{"health", "GET", s.URL + "/livez", "", 200},
		{"admin", "GET", s.Admin + "/admin/v1/pools", gatewaytest.AdminToken, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sent := do(t, tc.method, tc.url, tc.key, nil, "X-Request-Id", "trace-"+strings.ReplaceAll(tc.name, " ", "-"))
			wantStatus(t, sent, tc.status)
			if got, want := sent.header.Get("X-Request-Id"), "trace-"+strings.ReplaceAll(tc.name, " ", "-"); got != want {
				t.Errorf("echoed X-Request-Id: got %q, want %q", got, want)
			}
			first := do(t, tc.method, tc.url, tc.key, nil)
			second := do(t, tc.method, tc.url, tc.key, nil)
			a, b := first.header.Get("X-Request-Id"), second.header.Get("X-Request-Id")
			if a == "" || b == "" || a == b {
				t.Errorf("generated X-Request-Id: got %q and %q, want two distinct ids", a, b)
			}
		})
	}
}

func TestRevokedKey(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	client := wantCreated(t, admin(t, s, http.MethodPost, "/admin/v1/clients", map[string]any{"name": "acme"}))
	created := wantCreated(t, admin(t, s, http.MethodPost, "/admin/v1/clients/"+getString(t, client, "clientId")+"/keys",
		map[string]any{"mode": "sandbox"}))
	key := getString(t, created, "key")
	r := do(t, http.MethodGet, s.URL+balancesPath, key, nil, "x-service-source", "test")
	wantStatus(t, r, http.StatusOK)
	r = admin(t, s, http.MethodDelete, "/admin/v1/keys/"+getString(t, created, "keyId"), nil)
	wantStatus(t, r, http.StatusNoContent)
	r = do(t, http.MethodGet, s.URL+balancesPath, key, nil, "x-service-source", "test")
	wantError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
	if got := r.header.Get("WWW-Authenticate"); got != "Bearer" {
		t.Errorf("WWW-Authenticate: got %q, want Bearer", got)
	}
}

func TestRateLimited(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{RateLimit: 1})
	limited := s.NewPartner(t, "limited")
	other := s.NewPartner(t, "other")
	get := func(key string) *response {
		return do(t, http.MethodGet, s.URL+balancesPath, key, nil, "x-service-source", "test")
	}
	wantStatus(t, get(limited.SandboxKey), http.StatusOK)
	// A burst of one: the next request within the second is refused (a few
	// tries, in case the machine is slow enough to refill the bucket).
	var r *response
	for range 5 {
		if r = get(limited.SandboxKey); r.status != http.StatusOK {
			break
		}
	}
	wantError(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || retry < 1 {
		t.Errorf("Retry-After: got %q, want whole seconds >= 1", r.header.Get("Retry-After"))
	}
	// The limit is per key: the same client's other key and other clients
	// are not limited.
	wantStatus(t, get(limited.LiveKey), http.StatusOK)
	wantStatus(t, get(other.SandboxKey), http.StatusOK)
	// Health checks are never limited.
	wantStatus(t, do(t, http.MethodGet, s.URL+"/livez", "", nil), http.StatusOK)
}

// TestUnavailable: a gateway whose system is not set yet (recovering).
func TestUnavailable(t *testing.T) {
	t.Parallel()
	srv := gateway.New(gateway.Config{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0", AdminToken: gatewaytest.AdminToken})
	if err := srv.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	public, adminURL := "http://"+srv.Addr(), "http://"+srv.AdminAddr()
	key := "oja_sandbox_0123456789abcdefghijABCDEFGHIJ0123456789"
	valid := quoteRequest("NGN", "USDT", "1000", "0.000625", "source")
	cases := []struct {
		name   string
		method string
		url    string
		key    string
		body   any
		status int
	}{
		{"create quote", "POST", public + intentPath, key, valid, 503},
		{"read quote", "GET", public + quotePath + randomUUID, key, nil, 503},
		{"balances", "GET", public + balancesPath, key, nil, 503},
		{"public readyz", "GET", public + "/readyz", "", nil, 503},
		{"admin readyz", "GET", adminURL + "/readyz", "", nil, 503},
		{"admin pools", "GET", adminURL + "/admin/v1/pools", gatewaytest.AdminToken, nil, 503},
		{"public livez", "GET", public + "/livez", "", nil, 200},
		{"public healthz", "GET", public + "/healthz", "", nil, 200},
		{"admin livez", "GET", adminURL + "/livez", "", nil, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, tc.method, tc.url, tc.key, tc.body, "x-service-source", "test")
			if tc.status == http.StatusOK {
				wantStatus(t, r, http.StatusOK)
				return
			}
			wantError(t, r, tc.status, "UNAVAILABLE")
			if retry, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || retry < 1 {
				t.Errorf("Retry-After: got %q, want whole seconds >= 1", r.header.Get("Retry-After"))
			}
		})
	}
}

// TestReady: a running service is ready on both listeners.
func TestReady(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	for _, base := range []string{s.URL, s.Admin} {
		for _, path := range []string{"/livez", "/healthz", "/readyz"} {
			r := do(t, http.MethodGet, base+path, "", nil)
			wantStatus(t, r, http.StatusOK)
			object(t, r)
		}
	}
}
