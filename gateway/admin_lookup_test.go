package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// TestOperatorLookups: the client listing pages newest first without
// repeats or gaps; a client's detail shows its keys (never a secret) and
// its accounts in both modes; any client's quote is found by id alone.
func TestOperatorLookups(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	var made []string
	var first gatewaytest.Partner
	for i := 0; i < 7; i++ {
		p := s.NewPartner(t, fmt.Sprintf("client-%d", i))
		if i == 0 {
			first = p
		}
		made = append(made, p.Client.ID.String())
		s.Advance(time.Second) // distinct creation times
	}
	adm := gatewaytest.AdminToken

	// Pages of 3: every client once, newest first.
	var seen []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("the listing never ends")
		}
		url := s.Admin + "/admin/v1/clients?limit=3"
		if after != "" {
			url += "&startingAfter=" + after
		}
		page := wantOK(t, do(t, http.MethodGet, url, adm, nil))
		data := page["data"].([]any)
		for _, c := range data {
			seen = append(seen, c.(map[string]any)["clientId"].(string))
		}
		if page["hasMore"] != true {
			break
		}
		after = seen[len(seen)-1]
	}
	if len(seen) != len(made) {
		t.Fatalf("listed %d clients, made %d: %v", len(seen), len(made), seen)
	}
	for i := range made {
		if seen[i] != made[len(made)-1-i] {
			t.Fatalf("listing order %v, want newest first %v", seen, made)
		}
	}
	wantError(t, do(t, http.MethodGet, s.Admin+"/admin/v1/clients?limit=101", adm, nil), 400, "VALIDATION_ERROR")
	wantError(t, do(t, http.MethodGet, s.Admin+"/admin/v1/clients?startingAfter=7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4", adm, nil), 400, "VALIDATION_ERROR")
	wantError(t, do(t, http.MethodGet, s.Admin+"/admin/v1/clients?page=2", adm, nil), 400, "VALIDATION_ERROR")

	// One client: two keys (one per mode), wallets in both modes.
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	r := do(t, http.MethodGet, s.Admin+"/admin/v1/clients/"+first.Client.ID.String(), adm, nil)
	if strings.Contains(string(r.body), first.SandboxKey) || strings.Contains(string(r.body), first.LiveKey) {
		t.Fatalf("a client look-up shows a key's secret: %s", r.body)
	}
	detail := wantOK(t, r)
	keys := detail["keys"].([]any)
	if detail["name"] != "client-0" || len(keys) != 2 {
		t.Fatalf("client detail %v", detail)
	}
	accounts := detail["accounts"].(map[string]any)
	for _, m := range []string{"live", "sandbox"} {
		if len(accounts[m].([]any)) == 0 {
			t.Errorf("no %s accounts in %v", m, accounts)
		}
	}

	// Any quote by id, whichever client made it.
	q := mustCreateQuote(t, s, first.SandboxKey, `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1000,"rate":0.0006,"amountDirection":"source"}`)
	id := q["quoteId"].(string)
	got := wantOK(t, do(t, http.MethodGet, s.Admin+"/admin/v1/quotes/"+id, adm, nil))
	if got["quoteId"] != id || got["clientId"] != first.Client.ID.String() || got["mode"] != "sandbox" {
		t.Fatalf("admin quote %v", got)
	}
	// The partner API still sees only the caller's own quotes.
	other := s.NewPartner(t, "other")
	wantError(t, do(t, http.MethodGet, s.URL+"/api/v1/partners/marketplace/quote/"+id, other.SandboxKey, nil), 404, "QUOTE_NOT_FOUND")

	// An operator cancels it: the partner sees it cancelled, and the log
	// records the operator's cancel as such.
	cancelled := wantOK(t, do(t, http.MethodPost, s.Admin+"/admin/v1/quotes/"+id+"/cancel", adm, nil))
	if cancelled["status"] != "cancelled" {
		t.Fatalf("operator cancel: %v", cancelled)
	}
	if got := wantOK(t, getQuote(t, s, first.SandboxKey, id)); got["status"] != "cancelled" {
		t.Fatalf("the partner reads %v after the operator's cancel", got["status"])
	}
	byOperator := 0
	if err := s.Log.Replay(0, func(_ uint64, rec []byte) error {
		ev, err := engine.DecodeEvent(rec)
		if c, ok := ev.(*engine.QuoteCancelled); err == nil && ok && c.ByOperator && c.Quote.String() == id {
			byOperator++
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if byOperator != 1 {
		t.Fatalf("%d operator cancels of %s in the log, want 1", byOperator, id)
	}
}
