package gateway_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

const quotesListPath = "/api/v1/partners/marketplace/quotes"

// listAll walks every page of a listing and returns the quote ids in order.
func listAll(t *testing.T, s *gatewaytest.Server, key string, query url.Values) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 50 {
			t.Fatal("the listing never ends")
		}
		q := url.Values{}
		for k, v := range query {
			q[k] = v
		}
		if len(ids) > 0 {
			q.Set("startingAfter", ids[len(ids)-1])
		}
		page := wantOK(t, do(t, http.MethodGet, s.URL+quotesListPath+"?"+q.Encode(), key, nil))
		for _, d := range page["data"].([]any) {
			ids = append(ids, d.(map[string]any)["quoteId"].(string))
		}
		if page["hasMore"] != true {
			return ids
		}
	}
}

// TestListQuotes: newest first, every quote once across pages, only the
// caller's client and mode, the filters, and the bad parameters named.
func TestListQuotes(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	p := s.NewPartner(t, "lister")
	other := s.NewPartner(t, "other")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "100000")
	newPool(t, s, engine.ModeLive, gatewaytest.NGNUSDT, "live", "0.000625", "100000")
	body := `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1000,"rate":0.0006,"amountDirection":"source"}`

	var made []string // oldest first
	var times []time.Time
	for i := 0; i < 11; i++ {
		times = append(times, s.Now())
		q := mustCreateQuote(t, s, p.SandboxKey, body)
		made = append(made, q["quoteId"].(string))
		if i%3 == 0 {
			wantStatus(t, transition(t, s, p.SandboxKey, made[i], "cancel", nil), http.StatusOK)
		}
		s.Advance(time.Second)
	}
	mustCreateQuote(t, s, other.SandboxKey, body)
	mustCreateQuote(t, s, p.LiveKey, body)

	newestFirst := slices.Clone(made)
	slices.Reverse(newestFirst)
	for _, limit := range []string{"1", "4", "100"} {
		if got := listAll(t, s, p.SandboxKey, url.Values{"limit": {limit}}); !slices.Equal(got, newestFirst) {
			t.Fatalf("limit %s: %v, want %v", limit, got, newestFirst)
		}
	}
	// A quote created after the first listing built the index is in it.
	later := mustCreateQuote(t, s, p.SandboxKey, body)["quoteId"].(string)
	if got := listAll(t, s, p.SandboxKey, url.Values{"limit": {"1"}}); len(got) != len(made)+1 || got[0] != later {
		t.Fatalf("after one more create: %v, want %s first", got, later)
	}
	wantStatus(t, transition(t, s, p.SandboxKey, later, "cancel", nil), http.StatusOK)
	made = append(made, later)
	s.Advance(time.Second)

	var cancelled []string
	for i := len(made) - 1; i >= 0; i-- {
		if i%3 == 0 || made[i] == later {
			cancelled = append(cancelled, made[i])
		}
	}
	if got := listAll(t, s, p.SandboxKey, url.Values{"status": {"cancelled"}, "limit": {"2"}}); !slices.Equal(got, cancelled) {
		t.Fatalf("status=cancelled: %v, want %v", got, cancelled)
	}
	window := url.Values{"createdGte": {times[3].UTC().Format(time.RFC3339Nano)}, "createdLt": {times[7].UTC().Format(time.RFC3339Nano)}}
	want := []string{made[6], made[5], made[4], made[3]}
	if got := listAll(t, s, p.SandboxKey, window); !slices.Equal(got, want) {
		t.Fatalf("created in [t3, t7): %v, want %v", got, want)
	}
	if got := listAll(t, s, p.LiveKey, nil); len(got) != 1 {
		t.Fatalf("the live key lists %v, want its one live quote", got)
	}

	for _, bad := range []struct{ query, field string }{
		{"limit=0", "limit"}, {"limit=101", "limit"}, {"status=open", "status"}, {"createdGte=yesterday", "createdGte"},
		{"startingAfter=x", "startingAfter"}, {"page=2", "page"},
		{"startingAfter=00000000-0000-0000-0000-000000000000", "startingAfter"}, // the nil UUID: no quote's
		{"startingAfter=7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4", "startingAfter"}, // unknown
		{"startingAfter=" + made[0] + "&limit=2", ""},                           // fine: the oldest has nothing after it
	} {
		r := do(t, http.MethodGet, s.URL+quotesListPath+"?"+bad.query, p.SandboxKey, nil)
		if bad.field == "" {
			if page := wantOK(t, r); len(page["data"].([]any)) != 0 || page["hasMore"] != false {
				t.Errorf("%s: %v", bad.query, page)
			}
			continue
		}
		if details := wantError(t, r, 400, "VALIDATION_ERROR"); details[bad.field] == nil {
			t.Errorf("%s: details %v do not name %s", bad.query, details, bad.field)
		}
	}
	// Another client's quote is not a cursor of this one's.
	theirs := listAll(t, s, other.SandboxKey, nil)
	details := wantError(t, do(t, http.MethodGet, s.URL+quotesListPath+"?startingAfter="+theirs[0], p.SandboxKey, nil), 400, "VALIDATION_ERROR")
	if details["startingAfter"] == nil {
		t.Errorf("a foreign cursor: %v", details)
	}

	// Past the retention, the terminal quotes leave the listing with the
	// registry.
	s.Advance(169 * time.Hour)
	s.Sys.Maintain()
	if got := listAll(t, s, p.SandboxKey, url.Values{"status": {"cancelled"}}); len(got) != 0 {
		t.Fatalf("cancelled quotes past the retention still listed: %v", got)
	}
}
