package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
	"github.com/oja-exchange/oja/internal/poll"
)

// eventsPage reads one page of GET /api/v1/partners/events as the raw
// bodies it lists.
func eventsPage(t *testing.T, s *gatewaytest.Server, key, query string) (bodies []json.RawMessage, more bool) {
	t.Helper()
	r := do(t, http.MethodGet, s.URL+"/api/v1/partners/events"+query, key, nil)
	wantStatus(t, r, http.StatusOK)
	var page struct {
		Data    []json.RawMessage `json:"data"`
		HasMore *bool             `json:"hasMore"`
	}
	if err := json.Unmarshal(r.body, &page); err != nil || page.Data == nil || page.HasMore == nil {
		t.Fatalf("events page %s: %v", r.body, err)
	}
	return page.Data, *page.HasMore
}

type listedEvent struct {
	ID, Type, CreatedAt, Mode string
	Data                      struct {
		Quote struct {
			QuoteID, Status string
		}
	}
}

func readEvent(t *testing.T, body json.RawMessage) listedEvent {
	t.Helper()
	var e listedEvent
	if err := json.Unmarshal(body, &e); err != nil || e.ID == "" || e.CreatedAt == "" {
		t.Fatalf("event %s: %v", body, err)
	}
	return e
}

// TestPartnerEvents: a partner lists its events of its key's mode —
// whether or not it registered a webhook — newest first, the quote as each
// event left it; pages follow one another through startingAfter; type
// filters; another partner's events and another mode's never show; bad
// input is a 400 naming the parameter.
func TestPartnerEvents(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{History: true})
	ada, bola := s.NewPartner(t, "Ada"), s.NewPartner(t, "Bola")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	body := quoteRequest("NGN", "USDT", "16000", "0.0006", "source")
	done := mustCreateQuote(t, s, ada.SandboxKey, body)
	mustAccept(t, s, ada.SandboxKey, done)
	wantStatus(t, transition(t, s, ada.SandboxKey, getString(t, done, "quoteId"), "complete", nil), http.StatusOK)
	cancelled := mustCreateQuote(t, s, ada.SandboxKey, body)
	wantStatus(t, transition(t, s, ada.SandboxKey, getString(t, cancelled, "quoteId"), "cancel", nil), http.StatusOK)
	open := mustCreateQuote(t, s, ada.SandboxKey, body)
	bolas := mustCreateQuote(t, s, bola.SandboxKey, body)

	want := []struct{ typ, quote, status string }{ // newest first
		{"quote.created", getString(t, open, "quoteId"), "pending"},
		{"quote.cancelled", getString(t, cancelled, "quoteId"), "cancelled"},
		{"quote.created", getString(t, cancelled, "quoteId"), "pending"},
		{"quote.completed", getString(t, done, "quoteId"), "completed"},
		{"quote.accepted", getString(t, done, "quoteId"), "awaiting_payment"},
		{"quote.created", getString(t, done, "quoteId"), "pending"},
	}
	var all []json.RawMessage
	poll.Until(t, 10*time.Second, func() string {
		if all, _ = eventsPage(t, s, ada.SandboxKey, ""); len(all) < len(want) {
			return fmt.Sprintf("%d events listed, want %d", len(all), len(want))
		}
		return ""
	})
	if len(all) != len(want) {
		t.Fatalf("%d events listed, want %d: %s", len(all), len(want), all)
	}
	for i, w := range want {
		e := readEvent(t, all[i])
		if e.Type != w.typ || e.Data.Quote.QuoteID != w.quote || e.Data.Quote.Status != w.status || e.Mode != "sandbox" {
			t.Errorf("event %d: %s %s %s, want %+v", i, e.Type, e.Data.Quote.QuoteID, e.Data.Quote.Status, w)
		}
	}

	// Pages of two, through startingAfter: the same events, the same bytes.
	var paged []json.RawMessage
	query := "?limit=2"
	for range 4 {
		page, more := eventsPage(t, s, ada.SandboxKey, query)
		paged = append(paged, page...)
		if !more {
			break
		}
		query = "?limit=2&startingAfter=" + readEvent(t, page[len(page)-1]).ID
	}
	if !slices.EqualFunc(paged, all, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
		t.Fatalf("pages differ from the whole list:\n%s\n%s", paged, all)
	}
	created, more := eventsPage(t, s, ada.SandboxKey, "?type=quote.created")
	if len(created) != 3 || more {
		t.Fatalf("type=quote.created: %d events", len(created))
	}
	for _, b := range created {
		if readEvent(t, b).Type != "quote.created" {
			t.Fatalf("type filter let through %s", b)
		}
	}
	if live, _ := eventsPage(t, s, ada.LiveKey, ""); len(live) != 0 {
		t.Fatalf("the live key lists sandbox events: %s", live)
	}
	theirs, _ := eventsPage(t, s, bola.SandboxKey, "")
	if len(theirs) != 1 || readEvent(t, theirs[0]).Data.Quote.QuoteID != getString(t, bolas, "quoteId") {
		t.Fatalf("Bola's events: %s", theirs)
	}

	for _, bad := range []struct{ query, field string }{
		{"?type=quote.nope", "type"},
		{"?limit=0", "limit"},
		{"?limit=101", "limit"},
		{"?startingAfter=evt_zz", "startingAfter"},
		{"?startingAfter=evt_00000000000000000000000000000000", "startingAfter"},
		{"?startingAfter=evt_0123456789abcdef0123456789abcdef", "startingAfter"},
		{"?startingAfter=" + readEvent(t, theirs[0]).ID, "startingAfter"}, // Bola's
		{"?status=pending", "status"},
	} {
		e := wantError(t, do(t, http.MethodGet, s.URL+"/api/v1/partners/events"+bad.query, ada.SandboxKey, nil), http.StatusBadRequest, "VALIDATION_ERROR")
		wantDetailsNames(t, e, bad.field)
	}
	wantError(t, do(t, http.MethodGet, s.URL+"/api/v1/partners/events", "", nil), http.StatusUnauthorized, "UNAUTHORIZED")

	// A server that keeps no history says so.
	plain := gatewaytest.Start(t, gatewaytest.Options{})
	p := plain.NewPartner(t, "Chidi")
	wantError(t, do(t, http.MethodGet, plain.URL+"/api/v1/partners/events", p.SandboxKey, nil), http.StatusServiceUnavailable, "UNAVAILABLE")
}
