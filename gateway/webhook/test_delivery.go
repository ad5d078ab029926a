package webhook

import (
	"errors"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// Why Test refuses.
var (
	// ErrNotReady: the dispatcher is not running here (it stopped, or
	// this node does not lead).
	ErrNotReady = errors.New("webhook: the dispatcher does not run here")
	// ErrTestInFlight: a test delivery to the endpoint has not finished.
	ErrTestInFlight = errors.New("webhook: a test delivery to this endpoint is in flight")
)

// Test delivers body, a webhook.test event with id, to endpoint w as the
// caller sees it now (its URL and secrets: the dispatcher hears of a
// creation or an update from the log a moment after it is acknowledged,
// so an endpoint it does not know yet is registered from w — read your
// writes, as for quotes; the log's telling of it later finds it there)
// once, in the background: signed like any event (with attempt 1), not logged, not
// retried, not owed and not counted among the deliveries; its outcome is the
// endpoint's last attempt (Status). One test per endpoint is in flight at
// most; a delete or Stop ends it.
func (d *Dispatcher) Test(w *engine.Webhook, id engine.EventID, body []byte) error {
	d.mu.Lock()
	if !d.started || d.ctx.Err() != nil {
		d.mu.Unlock()
		return ErrNotReady
	}
	if _, known := d.endpoints[w.ID]; !known {
		d.mu.Unlock()
		d.Registered(w)
		d.mu.Lock()
	}
	defer d.mu.Unlock()
	ep, ok := d.endpoints[w.ID]
	if !ok {
		return ErrNotReady
	}
	url := w.URL
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.testing {
		return ErrTestInFlight
	}
	ep.testing = true
	d.workers.Add(1)
	go func() {
		defer d.workers.Done()
		it := &item{event: engine.OwedEvent{ID: id}, body: body, attempt: 1}
		status, problem := d.postTo(ep, url, it)
		now := d.cfg.Clock()
		ep.mu.Lock()
		defer ep.mu.Unlock()
		ep.testing = false
		if ep.ctx.Err() == nil {
			ep.last = actors.WebhookAttempt{At: now, Event: id, Status: status, Error: problem, Attempts: 1}
		}
	}()
	return nil
}
