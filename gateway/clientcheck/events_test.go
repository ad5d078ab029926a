package clientcheck_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/oja-exchange/oja/client"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
	"github.com/oja-exchange/oja/internal/poll"
)

// TestEvents: the client pages through the event history (Events) and
// decodes each event as a webhook body (WebhookEvent); a type filter and
// an unknown cursor behave as the API says.
func TestEvents(t *testing.T) {
	s := gatewaytest.Start(t, gatewaytest.Options{History: true})
	p := s.NewPartner(t, "client-events")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Desk A", "0.000625", "1000")
	c, err := client.New(s.URL, p.SandboxKey, client.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var made []string // quote ids, oldest first
	for range 5 {
		q, err := c.CreateQuote(ctx, client.CreateQuoteRequest{SourceCurrency: "NGN", DestinationCurrency: "USDT",
			Amount: d("16000"), Rate: d("0.0006"), AmountDirection: client.DirectionSource})
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, q.QuoteID)
	}
	if _, err := c.CancelQuote(ctx, made[0]); err != nil {
		t.Fatal(err)
	}
	var got []client.WebhookEvent
	poll.Until(t, 10*time.Second, func() string {
		got = got[:0]
		for e, err := range c.Events(ctx, client.EventsParams{Limit: 2}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e)
		}
		if len(got) < 6 {
			return fmt.Sprintf("%d events listed, want 6", len(got))
		}
		return ""
	})
	if len(got) != 6 || got[0].Type != "quote.cancelled" || got[0].Data.Quote.QuoteID != made[0] ||
		got[1].Data.Quote.QuoteID != made[4] || got[5].Data.Quote.QuoteID != made[0] || got[5].Mode != client.ModeSandbox {
		t.Fatalf("events %+v", got)
	}
	page, err := c.EventsPage(ctx, client.EventsParams{Type: "quote.cancelled"}, "")
	if err != nil || len(page.Data) != 1 || page.HasMore || page.Data[0].ID != got[0].ID {
		t.Fatalf("cancelled only: %+v, %v", page, err)
	}
	_, err = c.EventsPage(ctx, client.EventsParams{}, "evt_0123456789abcdef0123456789abcdef")
	apiError(t, err, http.StatusBadRequest, "VALIDATION_ERROR")
}
