package gateway_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// chromium is the browser the console's tests drive: Debian's chromium,
// which .ci/run installs. Outside CI a machine without it skips them (and
// says so); in CI its absence fails them.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed: .ci/run installs Debian's chromium for the console's browser tests")
	}
	t.Skip("chromium is not installed (apt-get install chromium): the console's browser tests are skipped outside CI")
	return ""
}

// browser starts a headless chromium (no sandbox: CI runs as root; no
// background networking: only the test's loopback server is reached) and
// records every JavaScript exception and every console or browser-log
// error its pages report, CSP violations included.
func browser(t *testing.T) (context.Context, func() []string) {
	exe := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	var mu sync.Mutex
	var problems []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				problems = append(problems, m.String()+" ("+m.URL+")")
				mu.Unlock()
			}
		}
	}()
	return ctx, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), problems...) }
}

// TestConsoleBrowser drives the console in a real browser: log in as a
// named operator, read the overview (the ledger, the live rate chart fed
// by the rate stream), find a quote by id, cancel it, and find the cancel
// in the audit trail under the operator's name — with no JavaScript error
// and no Content-Security-Policy violation on any page. With
// OJA_SCREENSHOTS=DIR it saves each page there (make screenshots).
func TestConsoleBrowser(t *testing.T) {
	ctx, problems := browser(t)
	s := gatewaytest.Start(t, gatewaytest.Options{History: true})
	p := s.NewPartner(t, "Kora Payments")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Lagos OTC", "0.00065", "250000")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Ikeja Desk", "0.00064", "120000")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.GHSUSDT, "Accra Makers", "0.082", "90000")
	q := mustCreateQuote(t, s, p.SandboxKey, `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1500000,"rate":0.00063,"amountDirection":"source"}`)
	quoteID := getString(t, q, "quoteId")
	ghs := mustCreateQuote(t, s, p.SandboxKey, `{"sourceCurrency":"GHS","destinationCurrency":"USDT","amount":20000,"rate":0.08,"amountDirection":"source"}`)
	mustAccept(t, s, p.SandboxKey, ghs)
	ghsID := getString(t, ghs, "quoteId")
	ghsQuote, _ := s.Sys.AnyQuote(quoteIDOf(t, ghsID))
	r := do(t, http.MethodPost, s.Admin+"/admin/v1/operators", gatewaytest.AdminToken, map[string]any{"name": "Ngozi Okafor", "role": "operator"})
	wantStatus(t, r, http.StatusCreated)
	token := getString(t, object(t, r), "token")

	shots := os.Getenv("OJA_SCREENSHOTS")
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
			if shots == "" {
				return nil
			}
			png, err := chromedp.FullScreenshot(100)(ctx, target)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644)
		})
	}
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(tctx, actions...); err != nil {
			t.Fatalf("%s: %v (page problems: %v)", what, err, problems())
		}
	}
	text := func(sel string) string {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		v, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v (page problems: %v)", sel, err, problems())
		}
		return strings.TrimSpace(v)
	}
	visible := func(sel string) chromedp.Action[chromedp.Void] { return chromedp.WaitVisible(chromedp.CSS(sel)) }
	click := func(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }

	// A page asked for without a session leads to the login, and back.
	// (The first Run starts the browser: no timeout on it.)
	if err := chromedp.Do(ctx, chromedp.Navigate(s.Admin+"/console/?mode=sandbox")); err != nil {
		t.Fatalf("open the console: %v", err)
	}
	step("log in", visible("#token"), shot("login"),
		chromedp.SendKeys(chromedp.CSS("#token"), token), click("#login"), visible("#operator"))
	if op := text("#operator"); !strings.Contains(op, "Ngozi Okafor") || !strings.Contains(op, "operator") {
		t.Fatalf("logged in as %q", op)
	}
	if l := text("#ledger"); l != "balanced" {
		t.Fatalf("overview ledger: %q", l)
	}
	// Kora's key holds every open quote of NGN/USDT and GHS/USDT.
	if ex := text("#exposures"); !strings.Contains(ex, "Kora Payments") || !strings.Contains(ex, "975") || !strings.Contains(ex, "100.0 %") {
		t.Fatalf("overview exposures: %q", ex)
	}
	// The chart's EventSource opened the rate stream and drew from it.
	step("live rates", visible("#rates canvas"), chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := chromedp.Poll[bool](`document.getElementById("rates-status").textContent.startsWith("live ·")`,
			chromedp.WithPollingTimeout(20*time.Second))(ctx, target)
		return err
	}))
	step("pools", click(`nav a[href^="/console/pools"]`), visible(`form[action$="/rate"]`), shot("pools"))
	// Find the quote by its id (htmx's search navigates to its page).
	step("find the quote", click(`nav a[href^="/console/quotes"]`), visible("#q"),
		chromedp.SendKeys(chromedp.CSS("#q"), quoteID), click("#search"), visible("#quote-status"), shot("quote"))
	if st := text("#quote-status"); st != "pending" {
		t.Fatalf("quote page status %q, want pending", st)
	}
	step("cancel it", click("#cancel"), visible("#confirm"), click("#confirm"), visible("#flash"))
	if flash, st := text("#flash"), text("#quote-status"); flash != "Quote cancelled." || st != "cancelled" {
		t.Fatalf("after cancel: flash %q, status %q", flash, st)
	}
	if got, _ := s.Sys.AnyQuote(quoteIDOf(t, quoteID)); got.Status != engine.StatusCancelled {
		t.Fatalf("the system holds the quote %s", got.Status)
	}
	step("audit", click(`nav a[href^="/console/audit"]`), visible("#audit"), shot("audit"))
	want := "POST /console/quotes/{quoteId}/cancel"
	if audit := text("#audit tbody tr"); !strings.Contains(audit, "Ngozi Okafor") || !strings.Contains(audit, want) || !strings.Contains(audit, quoteID) {
		t.Fatalf("newest audit line %q, want Ngozi Okafor's %s of %s", audit, want, quoteID)
	}
	// The money waiting: the accepted quote is listed; a bank transfer
	// with its reference is recorded; the quote is completed.
	step("pay-ins", click(`nav a[href^="/console/payins"]`), visible("#awaiting"))
	if rows := text("#awaiting tbody"); !strings.Contains(rows, ghsID) {
		t.Fatalf("pay-ins awaiting: %q lacks %s", rows, ghsID)
	}
	step("record a bank transfer", chromedp.SendKeys(chromedp.CSS("#bank-reference"), ghsQuote.Reference.String()),
		chromedp.SendKeys(chromedp.CSS("#bank-amount"), "20000"), chromedp.SendKeys(chromedp.CSS("#bank-tx"), "GTB-0001"),
		click("#record-bank"), visible("#flash"), shot("payins"))
	if flash := text("#flash"); flash != "Bank receipt recorded for "+ghsQuote.Reference.String()+"." {
		t.Fatalf("bank receipt: %q", flash)
	}
	if received := text("#received tbody"); !strings.Contains(received, "gtb-0001") || !strings.Contains(received, "20,000.00 GHS") || !strings.Contains(received, ghsID) {
		t.Fatalf("pay-ins received: %q", received)
	}
	step("complete", chromedp.Navigate(s.Admin+"/console/quotes/"+ghsID), visible("#complete"), click("#complete"),
		visible("#confirm"), click("#confirm"), visible("#flash"))
	if flash, st := text("#flash"), text("#quote-status"); flash != "Quote completed." || st != "completed" {
		t.Fatalf("after complete: flash %q, status %q", flash, st)
	}
	// The evidence: the receipt's id, its bank transaction id and the
	// (sandbox) account it was paid into.
	if rs := text("#receipts tbody"); !strings.Contains(rs, "rcpt_s") || !strings.Contains(rs, "gtb-0001") ||
		!strings.Contains(rs, engine.SandboxCollectionDefault.AccountNumber) || !strings.Contains(rs, "20,000.00 GHS") {
		t.Fatalf("the quote's receipts: %q", rs)
	}
	step("webhooks", click(`nav a[href^="/console/webhooks"]`), visible("#webhooks"), shot("webhooks"))
	step("log", click(`nav a[href^="/console/cluster"]`), visible("#figures"), shot("log"))
	step("clients", click(`nav a[href^="/console/clients"]`), visible("table"), shot("clients"))
	step("overview again", click(`nav a[href^="/console/?"]`), visible("#activity canvas"), shot("overview"))
	if ps := problems(); len(ps) > 0 {
		t.Fatalf("the pages reported %d problem(s):\n%s", len(ps), strings.Join(ps, "\n"))
	}
}

func quoteIDOf(t *testing.T, s string) engine.QuoteID {
	t.Helper()
	id, ok := engine.ParseUUID(s)
	if !ok {
		t.Fatalf("quote id %q", s)
	}
	return engine.QuoteID(id)
}
