package client

import (
	"context"
	"iter"
	"net/url"
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
	query := url.Values{}
	if p.Type != "" {
		query.Set("type", p.Type)
	}
	return getPage[EventPage](ctx, c.t, "/partners/events", query, p.Limit, startingAfter, opts)
}

// Events iterates over the caller's event history, newest first, page by
// page: reconcile by reading until an event already seen. An error ends
// the iteration (yielded once).
func (c *Client) Events(ctx context.Context, p EventsParams, opts ...CallOption) iter.Seq2[WebhookEvent, error] {
	return walk(func(after string) ([]WebhookEvent, bool, error) {
		page, err := c.EventsPage(ctx, p, after, opts...)
		return page.Data, page.HasMore, err
	}, func(e WebhookEvent) string { return e.ID })
}
