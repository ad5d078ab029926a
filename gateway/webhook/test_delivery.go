package webhook

import (
	"errors"

	"github.com/oja-exchange/oja/engine"
)

// Why Test refuses.
var (
	// ErrNotReady: the dispatcher is not running here, or has not yet been
	// told of the endpoint (it was created a moment ago): retry shortly.
	ErrNotReady = errors.New("webhook: the endpoint is not known to the dispatcher yet")
	// ErrTestInFlight: a test delivery to the endpoint has not finished.
	ErrTestInFlight = errors.New("webhook: a test delivery to this endpoint is in flight")
)

// Test delivers body, a webhook.test event with id, to endpoint w at url
// (the endpoint's URL as the caller sees it now: the dispatcher hears of
// an update a moment after it is acknowledged) once, in the background: signed like any event (with attempt 1), not logged, not
// retried, not owed and not counted among the deliveries; its outcome is the
// endpoint's last attempt (Status). One test per endpoint is in flight at
// most; a delete or Stop ends it.
func (d *Dispatcher) Test(w engine.WebhookID, url string, id engine.EventID, body []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ep, ok := d.endpoints[w]
	if !ok || !d.started || d.ctx.Err() != nil {
		return ErrNotReady
	}
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
			ep.last = Attempt{At: now, Event: id, Status: status, Error: problem, Attempts: 1}
		}
	}()
	return nil
}
