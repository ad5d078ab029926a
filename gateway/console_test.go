package gateway_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
	"github.com/oja-exchange/oja/internal/poll"
)

// consoleBrowser is a cookie-keeping HTTP client that does not follow
// redirects (the test reads each), sending the headers a same-origin
// browser form sends unless told otherwise.
type consoleBrowser struct {
	t      testing.TB
	base   string
	cookie string // the session cookie's value
	client *http.Client
}

func newConsoleBrowser(t testing.TB, base string) *consoleBrowser {
	return &consoleBrowser{t: t, base: base, client: &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type consoleAnswer struct {
	status int
	header http.Header
	body   string
}

func (b *consoleBrowser) do(method, path string, form url.Values, headers ...string) consoleAnswer {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if method == http.MethodPost {
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	if b.cookie != "" {
		req.AddCookie(&http.Cookie{Name: "oja_console", Value: b.cookie})
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return consoleAnswer{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}

func (b *consoleBrowser) login(token string) consoleAnswer {
	b.t.Helper()
	a := b.do(http.MethodPost, "/console/login", url.Values{"token": {token}, "next": {"/console/pools"}})
	for _, c := range (&http.Response{Header: a.header}).Cookies() {
		if c.Name == "oja_console" {
			b.cookie = c.Value
		}
	}
	return a
}

// location is a redirect's target path (and query).
func location(t *testing.T, a consoleAnswer) string {
	t.Helper()
	if a.status != http.StatusSeeOther && a.status != http.StatusFound {
		t.Fatalf("status %d, want a redirect; body %.300s", a.status, a.body)
	}
	u, err := url.Parse(a.header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return u.RequestURI()
}

var (
	inlineScript  = regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`)
	eventHandler  = regexp.MustCompile(`\son[a-z]+\s*=`)
	styleAttr     = regexp.MustCompile(`\sstyle\s*=`)
	consoleCSPHdr = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

// strictPage checks what every console page must be: the strict CSP, no
// inline script, no event-handler or style attribute, never cached.
func strictPage(t *testing.T, what string, a consoleAnswer) {
	t.Helper()
	if got := a.header.Get("Content-Security-Policy"); got != consoleCSPHdr {
		t.Errorf("%s: Content-Security-Policy %q", what, got)
	}
	if a.header.Get("Cache-Control") != "no-store" || a.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s: headers %v", what, a.header)
	}
	for _, re := range []*regexp.Regexp{inlineScript, eventHandler, styleAttr} {
		if m := re.FindString(a.body); m != "" {
			t.Errorf("%s: inline code %q", what, m)
		}
	}
}

// TestConsoleSecurity: the console is on the admin listener only; a page
// without a session leads to the login; a login exchanges a token for a
// session cookie (HttpOnly, SameSite=Strict, Path=/console/, never the
// token); every page has the strict CSP and no inline code; a viewer reads
// but cannot write; a write from another site is refused and changes
// nothing; a refused pool change shows the API's message and changes
// nothing; a made one is audited under the operator's name; logging out
// and revoking the operator end the session; a login's "next" never leaves
// the console.
func TestConsoleSecurity(t *testing.T) {
	s := gatewaytest.Start(t, gatewaytest.Options{History: true})
	p := s.NewPartner(t, "Kora Payments")
	pool := s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Lagos OTC", "0.00065", "250000")
	q := mustCreateQuote(t, s, p.SandboxKey, `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":100000,"rate":0.00063,"amountDirection":"source"}`)
	quoteID := getString(t, q, "quoteId")
	made := func(name, role string) (string, string) {
		r := do(t, http.MethodPost, s.Admin+"/admin/v1/operators", gatewaytest.AdminToken, map[string]any{"name": name, "role": role})
		wantStatus(t, r, http.StatusCreated)
		o := object(t, r)
		return getString(t, o, "operatorId"), getString(t, o, "token")
	}
	_, viewerToken := made("Ada Viewer", "viewer")
	opID, opToken := made("Bayo Operator", "operator")

	// Nothing of the console on the public listener.
	if a := newConsoleBrowser(t, s.URL).do(http.MethodGet, "/console/", nil); a.status != http.StatusNotFound {
		t.Fatalf("public listener /console/: %d", a.status)
	}
	anon := newConsoleBrowser(t, s.Admin)
	if got := location(t, anon.do(http.MethodGet, "/console/quotes?mode=sandbox", nil)); got != "/console/login?next=%2Fconsole%2Fquotes%3Fmode%3Dsandbox" {
		t.Fatalf("no session: redirected to %q", got)
	}
	loginPage := anon.do(http.MethodGet, "/console/login", nil)
	wantConsole(t, "login page", loginPage, http.StatusOK, `name="token"`)
	strictPage(t, "login page", loginPage)
	if a := anon.login("oja_op_not_a_token"); a.status != http.StatusUnauthorized || anon.cookie != "" {
		t.Fatalf("a bad token: %d, cookie %q", a.status, anon.cookie)
	}
	// A login posted from another site (login CSRF) is refused.
	if a := anon.do(http.MethodPost, "/console/login", url.Values{"token": {opToken}}, "Sec-Fetch-Site", "cross-site"); a.status != http.StatusForbidden || len(a.header.Values("Set-Cookie")) != 0 {
		t.Fatalf("cross-site login: %d %v", a.status, a.header.Values("Set-Cookie"))
	}

	viewer := newConsoleBrowser(t, s.Admin)
	a := viewer.login(viewerToken)
	if got := location(t, a); got != "/console/pools" {
		t.Fatalf("login went to %q", got)
	}
	set := a.header.Get("Set-Cookie")
	for _, want := range []string{"oja_console=", "httponly", "samesite=strict", "path=/console/", "max-age=43200"} {
		if !strings.Contains(strings.ToLower(set), want) {
			t.Errorf("session cookie %q lacks %s", set, want)
		}
	}
	if viewer.cookie == "" || strings.Contains(set, viewerToken) || strings.Contains(viewer.cookie, strings.TrimPrefix(viewerToken, "oja_op_")) {
		t.Fatalf("session cookie %q holds the token", set)
	}
	for _, page := range []string{"/console/?mode=sandbox", "/console/pools?mode=sandbox", "/console/quotes?mode=sandbox&q=" + quoteID,
		"/console/quotes/" + quoteID, "/console/clients", "/console/clients/" + p.Client.ID.String(), "/console/audit",
		"/console/payins?mode=sandbox", "/console/webhooks?mode=sandbox", "/console/cluster"} {
		a := viewer.do(http.MethodGet, page, nil)
		if page == "/console/quotes?mode=sandbox&q="+quoteID {
			if got := location(t, a); got != "/console/quotes/"+quoteID {
				t.Fatalf("search by quote id went to %q", got)
			}
			continue
		}
		wantConsole(t, page, a, http.StatusOK, "Ada Viewer")
		strictPage(t, page, a)
		if strings.Contains(a.body, `method="post" action="/console/quotes`) || strings.Contains(a.body, `method="post" action="/console/pools`) ||
			strings.Contains(a.body, `method="post" action="/console/payins`) {
			t.Errorf("%s offers a viewer a write", page)
		}
	}
	// The overview carries the rate history for its chart as the rates'
	// decimal text (HTML-escaped in the data attribute).
	if ov := viewer.do(http.MethodGet, "/console/?mode=sandbox", nil).body; !strings.Contains(ov, `data-chart="[{&#34;pair&#34;:&#34;NGN/USDT&#34;,&#34;points&#34;:[[`) ||
		!strings.Contains(ov, `,&#34;0.00065&#34;]`) {
		t.Fatalf("the overview's chart data:\n%.3000s", ov)
	}
	wantConsole(t, "viewer cancel", viewer.do(http.MethodPost, "/console/quotes/"+quoteID+"/cancel", nil), http.StatusForbidden, "reads only")
	wantHeld(t, s, quoteID, engine.StatusPending)

	op := newConsoleBrowser(t, s.Admin)
	op.login(opToken)
	// Cross-origin writes are refused and change nothing.
	for _, h := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Site", "same-site"}, {"Sec-Fetch-Site", "", "Origin", "http://evil.example"}} {
		a := op.do(http.MethodPost, "/console/quotes/"+quoteID+"/cancel", nil, h...)
		wantConsole(t, "cross-origin cancel "+strings.Join(h, " "), a, http.StatusForbidden, "another site")
	}
	wantHeld(t, s, quoteID, engine.StatusPending)
	// A refused pool change: the API's own message, nothing changed, not
	// audited.
	poolPath := "/console/pools/" + pool.ID.String()
	if got := location(t, op.do(http.MethodPost, poolPath+"/rate", url.Values{"rate": {"0.0007x"}, "mode": {"sandbox"}})); got != "/console/pools?mode=sandbox" {
		t.Fatalf("pool change went to %q", got)
	}
	wantConsole(t, "refused rate", op.do(http.MethodGet, "/console/pools?mode=sandbox", nil), http.StatusOK, "must be a number")
	if got, _ := s.Sys.Pool(pool.ID); string(engine.AppendRate(nil, got.Rate)) != "0.00065" {
		t.Fatalf("a refused rate changed the pool: %s", engine.AppendRate(nil, got.Rate))
	}
	// The flash is shown once.
	if a := op.do(http.MethodGet, "/console/pools?mode=sandbox", nil); strings.Contains(a.body, "must be a number") {
		t.Fatal("the flash was shown twice")
	}
	location(t, op.do(http.MethodPost, poolPath+"/rate", url.Values{"rate": {"0.00066"}, "mode": {"sandbox"}}))
	wantConsole(t, "rate set", op.do(http.MethodGet, "/console/pools?mode=sandbox", nil), http.StatusOK, "Pool rate done.")
	if got, _ := s.Sys.Pool(pool.ID); string(engine.AppendRate(nil, got.Rate)) != "0.00066" {
		t.Fatalf("pool rate %s after the console set 0.00066", engine.AppendRate(nil, got.Rate))
	}
	// A cancel asks first: the page says what would happen, nothing
	// changes until the operator confirms.
	ask := op.do(http.MethodPost, "/console/quotes/"+quoteID+"/cancel", nil)
	wantConsole(t, "cancel asks first", ask, http.StatusOK, `name="confirm" value="yes"`)
	wantHeld(t, s, quoteID, engine.StatusPending)
	if got := location(t, op.do(http.MethodPost, "/console/quotes/"+quoteID+"/cancel", url.Values{"confirm": {"yes"}})); got != "/console/quotes/"+quoteID {
		t.Fatalf("cancel went to %q", got)
	}
	wantHeld(t, s, quoteID, engine.StatusCancelled)
	wantConsole(t, "cancelled quote", op.do(http.MethodGet, "/console/quotes/"+quoteID, nil), http.StatusOK, "Quote cancelled.")
	// Its page shows its history from the event log (written a few
	// milliseconds behind the log by its follower).
	poll.Until(t, 10*time.Second, func() string {
		page := op.do(http.MethodGet, "/console/quotes/"+quoteID, nil).body
		created, cancelled := strings.Index(page, "<code>quote.created</code>"), strings.Index(page, "<code>quote.cancelled</code>")
		if created < 0 || cancelled < created {
			return "the quote page's history lacks created then cancelled:\n" + page
		}
		return ""
	})
	// The trail: the operator's rate change and cancel (not the refused
	// rate, nor the viewer's or the cross-site attempts), newest first,
	// after root's two operator creations.
	trail := object(t, do(t, http.MethodGet, s.Admin+"/admin/v1/audit", gatewaytest.AdminToken, nil))["data"].([]any)
	if len(trail) != 4 {
		t.Fatalf("audit trail %v: want the rate and the cancel after the two operators", trail)
	}
	newest, older := trail[0].(map[string]any), trail[1].(map[string]any)
	if newest["operator"] != "Bayo Operator" || newest["action"] != "POST /console/quotes/{quoteId}/cancel" || newest["target"] != "/console/quotes/"+quoteID+"/cancel" ||
		older["operator"] != "Bayo Operator" || older["action"] != "POST /console/pools/{poolId}/{action}" || older["target"] != poolPath+"/rate" {
		t.Fatalf("audit trail %v", trail)
	}

	// Logging out ends the session; so does revoking the operator.
	old := viewer.cookie
	location(t, viewer.do(http.MethodPost, "/console/logout", nil))
	viewer.cookie = old
	if got := location(t, viewer.do(http.MethodGet, "/console/", nil)); !strings.HasPrefix(got, "/console/login") {
		t.Fatalf("after logout: %q", got)
	}
	wantStatus(t, do(t, http.MethodDelete, s.Admin+"/admin/v1/operators/"+opID, gatewaytest.AdminToken, nil), http.StatusOK)
	if got := location(t, op.do(http.MethodGet, "/console/", nil)); !strings.HasPrefix(got, "/console/login") {
		t.Fatalf("after revoke: %q", got)
	}
	// A login's next stays in the console.
	root := newConsoleBrowser(t, s.Admin)
	for _, next := range []string{"//evil.example/x", "https://evil.example/", "/admin/v1/pools", "/console/\\evil"} {
		a := root.do(http.MethodPost, "/console/login", url.Values{"token": {gatewaytest.AdminToken}, "next": {next}})
		if got := location(t, a); got != "/console/" {
			t.Errorf("next %q went to %q", next, got)
		}
	}
	// The embedded files, and nothing beside them.
	if a := root.do(http.MethodGet, "/console/static/console.js", nil); a.status != http.StatusOK || !strings.HasPrefix(a.header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("console.js: %d %s", a.status, a.header.Get("Content-Type"))
	}
	for _, bad := range []string{"/console/static/../console.go", "/console/static/nope.js", "/console/static/"} {
		if a := root.do(http.MethodGet, bad, nil); a.status != http.StatusNotFound {
			t.Errorf("%s: %d", bad, a.status)
		}
	}
}

func wantConsole(t *testing.T, what string, a consoleAnswer, status int, contains string) {
	t.Helper()
	if a.status != status || !strings.Contains(a.body, contains) {
		t.Fatalf("%s: status %d (want %d), body without %q:\n%.2000s", what, a.status, status, contains, a.body)
	}
}

func wantHeld(t *testing.T, s *gatewaytest.Server, id string, want engine.Status) {
	t.Helper()
	q, ok := s.Sys.AnyQuote(quoteIDOf(t, id))
	if !ok || q.Status != want {
		t.Fatalf("quote %s: %v, want %s", id, q, want)
	}
}

// TestConsoleClientsAndPools: an operator creates a client, gives it an
// API key (shown once, and working), revokes it (401 after), sets a credit
// limit, creates a pool and reads a wallet's statement — each through the
// admin API's own rules and in the audit trail.
func TestConsoleClientsAndPools(t *testing.T) {
	s := gatewaytest.Start(t, gatewaytest.Options{})
	op := newConsoleBrowser(t, s.Admin)
	op.login(gatewaytest.AdminToken)

	a := op.do(http.MethodPost, "/console/clients", url.Values{"name": {"Chipper Remit"}})
	page := location(t, a)
	if !strings.HasPrefix(page, "/console/clients/") {
		t.Fatalf("create client went to %q", page)
	}
	clientID := strings.TrimPrefix(page, "/console/clients/")
	wantConsole(t, "client page", op.do(http.MethodGet, page, nil), http.StatusOK, "Client created.")
	// An empty name: the API's refusal, shown; nothing made.
	location(t, op.do(http.MethodPost, "/console/clients", url.Values{"name": {"  "}}))
	wantConsole(t, "empty name", op.do(http.MethodGet, "/console/clients", nil), http.StatusOK, "must not be empty")
	if n := len(s.Sys.Clients()); n != 1 {
		t.Fatalf("%d clients", n)
	}

	location(t, op.do(http.MethodPost, page+"/keys", url.Values{"mode": {"sandbox"}}))
	shown := op.do(http.MethodGet, page, nil).body
	secret := regexp.MustCompile(`oja_sandbox_[A-Za-z0-9_-]+`).FindString(shown)
	if secret == "" {
		t.Fatalf("the new key's secret is not shown:\n%s", shown)
	}
	if again := op.do(http.MethodGet, page, nil).body; strings.Contains(again, secret) {
		t.Fatal("the key's secret is shown twice")
	}
	wantStatus(t, do(t, http.MethodGet, s.URL+balancesPath, secret, nil, "x-service-source", "console-test"), http.StatusOK)
	keyID := regexp.MustCompile(`/console/keys/([0-9a-f-]{36})/revoke`).FindStringSubmatch(op.do(http.MethodGet, page, nil).body)
	if keyID == nil {
		t.Fatal("no revoke form for the key")
	}
	if got := location(t, op.do(http.MethodPost, "/console/keys/"+keyID[1]+"/revoke", url.Values{"client": {clientID}})); got != page {
		t.Fatalf("revoke went to %q", got)
	}
	wantConsole(t, "revoked", op.do(http.MethodGet, page, nil), http.StatusOK, "API key revoked.")
	wantStatus(t, do(t, http.MethodGet, s.URL+balancesPath, secret, nil, "x-service-source", "console-test"), http.StatusUnauthorized)

	location(t, op.do(http.MethodPost, page+"/credit", url.Values{"mode": {"live"}, "currency": {"NGN"}, "limit": {"50000"}}))
	wantConsole(t, "credit", op.do(http.MethodGet, page, nil), http.StatusOK, "Credit limit set.")
	// The client's page shows the limit, in its wallet's row.
	wantConsole(t, "credit shown", op.do(http.MethodGet, page, nil), http.StatusOK, `<td class="num credit">50,000.00 NGN</td>`)
	location(t, op.do(http.MethodPost, page+"/credit", url.Values{"mode": {"live"}, "currency": {"XYZ"}, "limit": {"5"}}))
	wantConsole(t, "bad credit", op.do(http.MethodGet, page, nil), http.StatusOK, "must be a currency")

	location(t, op.do(http.MethodPost, "/console/pools", url.Values{"mode": {"sandbox"}, "name": {"Kano Desk"},
		"source": {"NGN"}, "destination": {"USDT"}, "rate": {"0.00064"}}))
	wantConsole(t, "pool created", op.do(http.MethodGet, "/console/pools?mode=sandbox", nil), http.StatusOK, "Kano Desk")
	if pools := s.Sys.Pools(engine.ModeSandbox); len(pools) != 1 || pools[0].Name != "Kano Desk" {
		t.Fatalf("pools %v", pools)
	}

	// A wallet's statement: a deposit is its first posting.
	id, _ := engine.ParseUUID(clientID)
	var wallet string
	for _, acc := range s.Sys.ClientAccounts(engine.ClientID(id), engine.ModeSandbox) {
		if acc.Currency == engine.CurrencyNGN {
			wallet = acc.ID.String()
		}
	}
	wantStatus(t, do(t, http.MethodPost, s.Admin+"/admin/v1/accounts/"+wallet+"/deposit", gatewaytest.AdminToken, map[string]any{"amount": 125000, "reference": nextRef()}), http.StatusOK)
	st := op.do(http.MethodGet, "/console/accounts/"+wallet, nil)
	wantConsole(t, "statement", st, http.StatusOK, "125,000.00 NGN")
	strictPage(t, "statement", st)
	wantConsole(t, "not a wallet", op.do(http.MethodGet, "/console/accounts/"+clientID, nil), http.StatusNotFound, "No wallet")

	trail := object(t, do(t, http.MethodGet, s.Admin+"/admin/v1/audit", gatewaytest.AdminToken, nil))["data"].([]any)
	var actions []string
	for _, e := range trail {
		actions = append(actions, e.(map[string]any)["action"].(string))
	}
	want := []string{"POST /admin/v1/accounts/{accountId}/deposit", "POST /console/pools", "POST /console/clients/{clientId}/credit",
		"POST /console/keys/{keyId}/revoke", "POST /console/clients/{clientId}/keys", "POST /console/clients"}
	if strings.Join(actions, "|") != strings.Join(want, "|") {
		t.Fatalf("audit actions %v, want %v", actions, want)
	}
}
