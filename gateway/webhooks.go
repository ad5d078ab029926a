package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/webhook"
)

// Webhooks (spec §14, §15.4): partners register endpoints for their quotes' state
// changes; package webhook delivers them.

const webhooksPath = apiBase + "/partners/webhooks"

// updateWebhook is PATCH /api/v1/partners/webhooks/{id} {"url"?,
// "events"?} (at least one) → 200 the endpoint as it is now (no secret).
// A new URL is checked as at registration. Events already owed stay owed
// and go to the new URL; the new event set applies to quote events from
// then on.
func (s *Server) updateWebhook(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	id, ok := s.pathUUID(ctx, "id")
	if !ok {
		return
	}
	o, ok := s.jsonRequest(ctx)
	if !ok {
		return
	}
	url, urlOK := o.str("url", false, engine.WebhookURLBytesMax)
	events := webhookEvents(o, false)
	_, urlGiven := o.raw("url", false)
	_, eventsGiven := o.raw("events", false)
	if !urlGiven && !eventsGiven {
		o.problem("url", "give url, events or both")
	}
	if e := o.finish(); e != nil {
		s.writeError(ctx, e)
		return
	}
	if urlOK && !s.webhookURLAllowed(ctx, url, who.Mode) {
		return
	}
	reply := svc.directory.Admin(&actors.UpdateWebhook{Client: who.Client, Mode: who.Mode, Webhook: engine.WebhookID(id), URL: url, Events: events})
	if s.adminFailed(ctx, reply.Err, reply.Result) {
		return
	}
	w := jsonWriter{}
	appendWebhook(&w, reply.Webhook, "")
	s.writeJSON(ctx, fasthttp.StatusOK, w.b)
}

// bodilessID reads the {id} of a POST that takes no body; a bad id or any
// body is refused (400) and ok is false.
func (s *Server) bodilessID(ctx *fasthttp.RequestCtx) (id [16]byte, ok bool) {
	id, e := pathID(ctx, "id")
	if e == nil && len(ctx.PostBody()) > 0 {
		e = &apiError{status: fasthttp.StatusBadRequest, code: codeValidation, message: "this request takes no body"}
	}
	if e != nil {
		s.writeError(ctx, e)
		return id, false
	}
	return id, true
}

// webhookPreviousSecretFor is how long a rotated-out secret keeps signing.
const webhookPreviousSecretFor = 24 * time.Hour

// rotateWebhookSecret is POST /api/v1/partners/webhooks/{id}/rotate-secret
// (no body) → 200 {"secret","previousSecretExpiresAt"}: a new signing
// secret, shown only here. Every delivery from then on carries two v1
// signatures, the new secret's and the previous one's, until
// previousSecretExpiresAt (24 h); then the new one's only. Rotating again
// within the 24 h ends the oldest secret at once.
func (s *Server) rotateWebhookSecret(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	id, ok := s.bodilessID(ctx)
	if !ok {
		return
	}
	reply := svc.directory.Admin(&actors.RotateWebhookSecret{Client: who.Client, Mode: who.Mode, Webhook: engine.WebhookID(id),
		PreviousFor: webhookPreviousSecretFor})
	if s.adminFailed(ctx, reply.Err, reply.Result) {
		return
	}
	s.writeObject(ctx, fasthttp.StatusOK, func(w *jsonWriter) {
		w.str("secret", reply.Secret)
		w.time("previousSecretExpiresAt", reply.Webhook.PreviousUntil)
	})
}

// lookupHost resolves a webhook URL's host (CheckURL).
func lookupHost(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// createWebhook is POST /api/v1/partners/webhooks {"url","events":[…]} →
// 201 {"webhookId","url","events","secret","createdAt"}: an endpoint of
// the caller's client in its key's mode. The secret is shown only here.
func (s *Server) createWebhook(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	o, ok := s.jsonRequest(ctx)
	if !ok {
		return
	}
	url, urlOK := o.str("url", true, engine.WebhookURLBytesMax)
	events := webhookEvents(o, true)
	if e := o.finish(); e != nil {
		s.writeError(ctx, e)
		return
	}
	if urlOK && !s.webhookURLAllowed(ctx, url, who.Mode) {
		return
	}
	reply := svc.directory.Admin(&actors.CreateWebhook{Client: who.Client, Mode: who.Mode, URL: url, Events: events})
	if s.adminFailed(ctx, reply.Err, reply.Result) {
		return
	}
	w := jsonWriter{}
	appendWebhook(&w, reply.Webhook, reply.Secret)
	s.writeJSON(ctx, fasthttp.StatusCreated, w.b)
}

// webhookEvents reads the events member: a non-empty array of event names
// (0 when absent and not required, or refused).
// webhookURLAllowed checks a URL a partner gives an endpoint (CheckURL:
// scheme, address ranges, resolution); refused, it answers 400 naming url.
func (s *Server) webhookURLAllowed(ctx *fasthttp.RequestCtx, url string, mode engine.Mode) bool {
	if problem := webhook.CheckURL(ctx, url, mode, s.cfg.WebhookAllowPrivate, lookupHost); problem != "" {
		s.writeError(ctx, fieldError("url", problem))
		return false
	}
	return true
}

func webhookEvents(o *object, required bool) engine.WebhookEvents {
	raw, ok := o.raw("events", required)
	if !ok {
		return 0
	}
	const expected = "must be a non-empty array of quote.created, quote.accepted, quote.completed, quote.cancelled, quote.expired, payin.received"
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil || len(names) == 0 {
		o.problem("events", expected)
		return 0
	}
	var set engine.WebhookEvents
	for _, n := range names {
		k, ok := engine.ParseWebhookEvent(n)
		if !ok {
			o.problem("events", "unknown event "+strings.ReplaceAll(strings.ToValidUTF8(n, "?"), `"`, "'")+": "+expected[len("must be a non-empty array of "):])
			return 0
		}
		set |= k
	}
	return set
}

// appendWebhook renders an endpoint; secret is written when not empty.
func appendWebhook(w *jsonWriter, h *engine.Webhook, secret string) {
	w.open("")
	w.id("webhookId", h.ID)
	w.str("url", h.URL)
	w.value("events", h.Events.Names())
	if secret != "" {
		w.str("secret", secret)
	}
	w.time("createdAt", h.CreatedAt)
	w.close()
}

// listWebhooks is GET /api/v1/partners/webhooks: the caller's endpoints in
// its key's mode, oldest first, without secrets ({"data":[…],"hasMore":
// false}: at most 16, one page).
func (s *Server) listWebhooks(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	if _, e := queryParams(ctx); e != nil {
		s.writeError(ctx, e)
		return
	}
	s.writeObject(ctx, fasthttp.StatusOK, func(w *jsonWriter) {
		w.openArray("data")
		for _, h := range svc.directory.Webhooks(who.Client) {
			if h.Mode == who.Mode {
				appendWebhook(w, &h, "")
			}
		}
		w.closeArray()
		w.boolean("hasMore", false)
	})
}

// deleteWebhook is DELETE /api/v1/partners/webhooks/{id} → 204. Events
// still owed to the endpoint are dropped.
func (s *Server) deleteWebhook(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	id, ok := s.pathUUID(ctx, "id")
	if !ok {
		return
	}
	reply := svc.directory.Admin(&actors.DeleteWebhook{Client: who.Client, Mode: who.Mode, Webhook: engine.WebhookID(id)})
	if s.adminFailed(ctx, reply.Err, reply.Result) {
		return
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	ctx.Response.Header.Set("Cache-Control", "no-store")
}

var (
	errWebhookTestInFlight = &apiError{status: fasthttp.StatusTooManyRequests, code: codeRateLimited,
		message: "a test delivery to this endpoint is in flight; retry once it has ended"}
	errWebhookNotReady = &apiError{status: fasthttp.StatusServiceUnavailable, code: codeUnavailable,
		message: "webhook deliveries do not run on this node now; retry shortly"}
)

// testWebhook is POST /api/v1/partners/webhooks/{id}/test (no body) → 202
// {"webhookId","eventId","type":"webhook.test"}: a webhook.test event
// ({"id","type","createdAt","mode","data":{"webhookId"}}) is delivered to
// the endpoint once, in the background, signed like every event; it is not
// logged, retried or owed, and the endpoint need not subscribe to anything
// for it. Its outcome is the endpoint's lastAttempt (the operator's
// backlog view). One test per endpoint at a time: another while one is in
// flight is 429 RATE_LIMITED.
func (s *Server) testWebhook(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	id, ok := s.bodilessID(ctx)
	if !ok {
		return
	}
	hook, found := svc.directory.WebhookToDeliver(who.Client, who.Mode, engine.WebhookID(id))
	if !found {
		s.writeError(ctx, resultError(engine.ResultWebhookNotFound))
		return
	}
	hooks := s.webhooks()
	if hooks == nil {
		s.writeError(ctx, errWebhookNotReady)
		return
	}
	var event engine.EventID
	if _, err := cryptoRead(event[:]); err != nil {
		s.writeError(ctx, errInternal)
		return
	}
	body := jsonWriter{b: make([]byte, 0, 256)}
	body.open("")
	body.str("id", event.String())
	body.str("type", webhookTestType)
	body.time("createdAt", s.now().UnixMilli())
	body.str("mode", hook.Mode.String())
	body.open("data")
	body.id("webhookId", hook.ID)
	body.close()
	body.close()
	switch err := hooks.Test(hook, event, body.b); {
	case errors.Is(err, webhook.ErrTestInFlight):
		s.writeError(ctx, errWebhookTestInFlight)
		return
	case err != nil:
		s.writeError(ctx, errWebhookNotReady)
		return
	}
	s.writeObject(ctx, fasthttp.StatusAccepted, func(w *jsonWriter) {
		w.id("webhookId", hook.ID)
		w.str("eventId", event.String())
		w.str("type", webhookTestType)
	})
}

// webhookTestType is the type of the event POST …/webhooks/{id}/test sends.
const webhookTestType = "webhook.test"

// clientWebhooks is GET /admin/v1/clients/{clientId}/webhooks: the
// client's endpoints in both modes with their delivery backlog.
func (s *Server) clientWebhooks(ctx *fasthttp.RequestCtx, svc services) {
	id, ok := s.pathUUID(ctx, "clientId")
	if !ok {
		return
	}
	if _, ok := svc.directory.Client(engine.ClientID(id)); !ok {
		s.writeError(ctx, resultError(engine.ResultClientNotFound))
		return
	}
	hooks, d := svc.directory.Webhooks(engine.ClientID(id)), s.webhooks()
	s.writeObject(ctx, fasthttp.StatusOK, func(w *jsonWriter) {
		w.openArray("data")
		for i := range hooks {
			h := &hooks[i]
			w.open("")
			w.id("webhookId", h.ID)
			w.str("mode", h.Mode.String())
			w.str("url", h.URL)
			w.value("events", h.Events.Names())
			w.time("createdAt", h.CreatedAt)
			if d != nil {
				appendBacklog(w, d.Status(h.ID))
			}
			w.close()
		}
		w.closeArray()
		w.boolean("hasMore", false)
	})
}

// appendBacklog renders an endpoint's delivery state for operators.
func appendBacklog(w *jsonWriter, st actors.WebhookStatus) {
	w.open("backlog")
	w.integer("owed", int64(st.Owed))
	w.integer("inFlight", int64(st.InFlight))
	w.integer("dropped", int64(st.Dropped))
	optionalTime := func(k string, t time.Time) {
		if !t.IsZero() {
			w.time(k, t.UnixMilli())
		}
	}
	optionalTime("oldestOwedAt", st.OldestOwed)
	optionalTime("nextAttemptAt", st.NextAttempt)
	if st.Unknown {
		w.boolean("pending", true) // the dispatcher has not caught up with this endpoint yet
	}
	if l := st.Last; !l.At.IsZero() {
		w.open("lastAttempt")
		w.time("at", l.At.UnixMilli())
		w.str("eventId", l.Event.String())
		w.integer("attempt", int64(l.Attempts))
		if l.Status != 0 {
			w.integer("status", int64(l.Status))
		}
		if l.Error != "" {
			w.str("error", l.Error)
		}
		w.close()
	}
	w.close()
}

// RenderEvent renders a partner event's body, as webhooks carry it and
// the event history keeps it: {"id","type","createdAt","mode","data":
// {"quote":{…the Quote JSON as the event left it…}}} or, for
// payin.received, "data":{"payin":{…}}. It reads only e (the markets and
// the pay-in's receipt as they were at the event), so every node renders
// an event to the same bytes.
func RenderEvent(e *engine.OwedEvent) []byte {
	return renderEvent(e)
}

// appendReceivedEvent writes the receipt a payin.received event carries,
// as the event recorded it: the quote and client it pays, the wallet
// credited, the amount and the rail's reference (canonical for a receipt
// recorded with its identity).
func appendReceivedEvent(w *jsonWriter, k string, r *engine.PaymentReceived, q *engine.Quote) {
	c := q.Pair.Source
	w.open(k)
	w.id("quoteId", r.Quote)
	w.id("clientId", q.Client)
	w.id("accountId", r.Account)
	w.str("currency", c.String())
	w.amount("amount", r.Amount, c)
	w.str("method", r.Method.String())
	if r.Method == engine.ReceiptBank {
		w.str("bankTransactionId", r.Reference)
	} else {
		w.id("addressId", r.Address)
		w.str("txHash", r.Reference)
		if !r.Identity.IsZero() {
			w.integer("logIndex", int64(r.Identity.LogIndex))
		}
	}
	w.time("createdAt", r.At)
	w.close()
}

func renderEvent(e *engine.OwedEvent) []byte {
	w := jsonWriter{b: make([]byte, 0, 2048)}
	w.open("")
	w.str("id", e.ID.String())
	w.str("type", e.Kind.String())
	w.time("createdAt", e.At)
	w.str("mode", e.Quote.Mode.String())
	w.open("data")
	if e.Receipt != nil {
		appendReceivedEvent(&w, "payin", e.Receipt, &e.Quote)
	} else {
		markets := e.Markets
		if markets == nil {
			markets = defaultMarkets
		}
		w.key("quote")
		w.b = appendQuoteIn(w.b, &e.Quote, e.At, markets, e.PaidIn)
		w.comma = true
	}
	w.close()
	w.close()
	return w.b
}

// webhookCollector exposes the dispatcher's figures on /metrics.
type webhookCollector struct {
	d                            func() actors.Webhooks // the term's; nil: no figures
	deliveries, dropped, backlog *prometheus.Desc
	endpoints                    *prometheus.Desc
}

func newWebhookCollector(d func() actors.Webhooks) *webhookCollector {
	return &webhookCollector{d: d,
		deliveries: prometheus.NewDesc("oja_webhook_deliveries_total",
			"Webhook delivery attempts since start, by result: delivered (2xx), failed (retried later), abandoned (the failed last attempt of an event whose 72 h window ended).",
			[]string{"result"}, nil),
		dropped: prometheus.NewDesc("oja_webhook_events_dropped_total",
			"Webhook events not owed since start because the endpoint's outbox was full.", nil, nil),
		backlog: prometheus.NewDesc("oja_webhook_backlog_events",
			"Webhook events owed now (not yet delivered nor abandoned), all endpoints.", nil, nil),
		endpoints: prometheus.NewDesc("oja_webhook_endpoints", "Registered webhook endpoints.", nil, nil),
	}
}

func (c *webhookCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.deliveries, c.dropped, c.backlog, c.endpoints} {
		ch <- d
	}
}

func (c *webhookCollector) Collect(ch chan<- prometheus.Metric) {
	d := c.d()
	if d == nil {
		return
	}
	n := d.Counters()
	for _, r := range []struct {
		label string
		v     uint64
	}{{"delivered", n.Delivered}, {"failed", n.Failed}, {"abandoned", n.Abandoned}} {
		ch <- prometheus.MustNewConstMetric(c.deliveries, prometheus.CounterValue, float64(r.v), r.label)
	}
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(n.Dropped))
	ch <- prometheus.MustNewConstMetric(c.backlog, prometheus.GaugeValue, float64(n.Owed))
	ch <- prometheus.MustNewConstMetric(c.endpoints, prometheus.GaugeValue, float64(n.Endpoints))
}
