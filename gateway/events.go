package gateway

import (
	"errors"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/wal/eventlog"
)

// The partners' event history (spec §15.4): the events the webhooks
// carry, same ids and bodies, for eventlog.RetentionDefault (30 days).

const (
	eventsPath = apiBase + "/partners/events"
	// eventsPageSizeDefault is a page's size when limit is absent; the
	// largest is eventlog.PageSizeMax.
	eventsPageSizeDefault = 20
)

// EventHistory is the partners' event history (*eventlog.Store).
type EventHistory interface {
	List(q eventlog.Query) (events []engine.OwedEvent, more bool, err error)
}

// listEvents is GET /api/v1/partners/events?type=&limit=&startingAfter=:
// the caller's events of its key's mode, newest first,
// {"data":[event…],"hasMore":bool}; startingAfter is an event id
// ("evt_…") from an earlier page or a delivery.
func (s *Server) listEvents(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	q, e := queryParams(ctx, "type", "limit", "startingAfter")
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	f := fxFields{}
	query := eventlog.Query{Client: who.Client, Mode: who.Mode}
	if raw, ok := q["type"]; ok {
		kind, known := engine.ParseWebhookEvent(raw)
		if !known {
			f.problem("type", "must be one of "+strings.Join(engine.WebhookEventsAll.Names(), ", "))
		}
		query.Kind = kind
	}
	query.Limit = pageLimit(&f, q, eventsPageSizeDefault, eventlog.PageSizeMax)
	if raw, ok := q["startingAfter"]; ok {
		id, valid := engine.ParseEventID(raw)
		if !valid {
			f.problem("startingAfter", `must be an event id ("evt_" and 32 hexadecimal digits)`)
		}
		query.After = id
	}
	if e := f.err(); e != nil {
		s.writeError(ctx, e)
		return
	}
	if s.cfg.Events == nil {
		s.writeError(ctx, historyUnavailable("the event history is not kept by this server"))
		return
	}
	events, more, err := s.cfg.Events.List(query)
	switch {
	case errors.Is(err, eventlog.ErrUnknownEvent):
		s.writeError(ctx, fieldError("startingAfter", "names no event of yours in the history (unknown, or older than its 30 days)"))
		return
	case err != nil:
		s.cfg.Logger.Error("event history read failed", "err", err)
		s.writeError(ctx, historyUnavailable("the event history cannot be read now; retry later"))
		return
	}
	// NB: rendered with the markets in force, as the webhook body was with
	// those of the event's time: the same bytes unless an operator changed
	// a collection account since.
	markets := svc.market.Markets()
	b := make([]byte, 0, 32+1600*len(events))
	b = append(b, `{"data":[`...)
	for i := range events {
		if i > 0 {
			b = append(b, ',')
		}
		events[i].Markets = markets
		b = append(b, RenderEvent(&events[i])...)
	}
	b = append(b, `],"hasMore":`...)
	b = strconv.AppendBool(b, more)
	s.writeJSON(ctx, fasthttp.StatusOK, append(b, '}'))
}

func historyUnavailable(message string) *apiError {
	return &apiError{status: fasthttp.StatusServiceUnavailable, code: codeUnavailable, message: message}
}
