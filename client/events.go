package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
)

// EventPage is one page of the partner's event history, newest first.
type EventPage struct {
	Data    []WebhookEvent `json:"data"`
	HasMore bool           `json:"hasMore"`
}

// EventsParams filters the event history: Type is one event type
// ("quote.completed", …; "" = every type); Limit 0 is the server's default
// page size (20; at most 100).
type EventsParams struct {
	Type  string
	Limit int
}

// EventsPage reads one page of the caller's event history (GET
// /partners/events): the events its webhooks carry, same ids and bodies,
// kept 30 days, in the key's mode; startingAfter "" = from the newest.
func (c *Client) EventsPage(ctx context.Context, p EventsParams, startingAfter string, opts ...CallOption) (EventPage, error) {
	call := newCall(http.MethodGet, "/partners/events", nil, opts)
	call.query = url.Values{}
	if p.Type != "" {
		call.query.Set("type", p.Type)
	}
	if p.Limit > 0 {
		call.query.Set("limit", strconv.Itoa(p.Limit))
	}
	if startingAfter != "" {
		call.query.Set("startingAfter", startingAfter)
	}
	var out EventPage
	_, err := c.t.do(ctx, call, &out)
	return out, err
}

// Events iterates over the caller's event history, newest first, page by
// page: reconcile by reading until an event already seen. An error ends
// the iteration (yielded once).
func (c *Client) Events(ctx context.Context, p EventsParams, opts ...CallOption) iter.Seq2[WebhookEvent, error] {
	return func(yield func(WebhookEvent, error) bool) {
		after := ""
		for {
			page, err := c.EventsPage(ctx, p, after, opts...)
			if err != nil {
				yield(WebhookEvent{}, err)
				return
			}
			for _, e := range page.Data {
				if !yield(e, nil) {
					return
				}
			}
			if !page.HasMore || len(page.Data) == 0 {
				return
			}
			after = page.Data[len(page.Data)-1].ID
		}
	}
}
