package webhook

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oja-exchange/oja/engine"
)

// Defaults of Config.
const (
	RetryMinDefault    = 10 * time.Second // first retry after this, doubling
	RetryMaxDefault    = time.Hour        // the doubling stops here
	WindowDefault      = 72 * time.Hour   // an event is abandoned this long after it happened
	TimeoutDefault     = 10 * time.Second // a 2xx must arrive within this
	ConcurrencyDefault = 4                // requests in flight per endpoint
)

// responseBytesMax is how much of a receiver's answer is read (and
// discarded) so the connection can be reused.
const responseBytesMax = 64 << 10

// settleBatchMax bounds the WebhookSettled records of one log append.
const settleBatchMax = 256

// Config configures a Dispatcher. Zero durations take the defaults.
type Config struct {
	RetryMin, RetryMax, Window, Timeout time.Duration
	Concurrency                         int // per endpoint
	AllowPrivate                        bool
	// Render returns the JSON body of an owed event (the event envelope
	// around the Quote JSON). Called once per event, from any goroutine.
	Render func(e *engine.OwedEvent) []byte
	// Settle records delivered and abandoned events durably.
	Settle func([]*engine.WebhookSettled) error
	Clock  func() time.Time // nil: time.Now
	Logger *slog.Logger     // nil: slog.Default()
	// Transport carries the requests; nil: one with the SSRF-guarded
	// dialer (see CheckURL), no proxy.
	Transport http.RoundTripper
}

// Dispatcher delivers owed events. It implements engine.WebhookObserver:
// the log follower feeds it (on its goroutine; every method returns at
// once). Deliveries start with Start.
type Dispatcher struct {
	cfg    Config
	client *http.Client
	logger *slog.Logger

	// ctx is cancelled by Stop: it ends every worker and request.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	endpoints map[engine.WebhookID]*endpoint
	started   bool
	workers   sync.WaitGroup
	settleCh  chan *engine.WebhookSettled
	settled   chan struct{} // closed when the settling goroutine ends

	delivered, failed, abandoned, dropped atomic.Uint64
}

// endpoint is one registered endpoint, its queue and its delivery state;
// every field but id (fixed) and sign (atomic) is guarded by Dispatcher.mu.
type endpoint struct {
	id       engine.WebhookID
	queue    []*item // owed, in log order
	queued   map[engine.EventID]struct{}
	inflight int
	dropped  uint64
	wake     chan struct{} // cap 1
	// ctx is cancelled when the endpoint is deleted or the dispatcher
	// stops: its worker and requests end.
	ctx     context.Context
	cancel  context.CancelFunc
	last    Attempt
	testing bool // a Test delivery is in flight
	// sign holds where deliveries go and the signing secrets (an update
	// or a rotation replaces it; read by every delivery without the lock).
	sign atomic.Pointer[signing]
}

// signing is an endpoint's URL and signing secrets: secret, and previous
// until previousUntil after a rotation.
type signing struct {
	url              string
	secret, previous string
	previousUntil    time.Time
}

func signingOf(w *engine.Webhook) *signing {
	sg := &signing{url: w.URL, secret: w.Secret}
	if w.PreviousUntil != 0 {
		sg.previous, sg.previousUntil = w.PreviousSecret, time.UnixMilli(w.PreviousUntil)
	}
	return sg
}

// header is the Oja-Signature of body at now: the current secret's v1,
// and the previous one's while it still signs.
func (sg *signing) header(now time.Time, body []byte) string {
	ts := strconv.FormatInt(now.Unix(), 10)
	h := "t=" + ts + ",v1=" + signature(sg.secret, ts, body)
	if sg.previous != "" && now.Before(sg.previousUntil) {
		h += ",v1=" + signature(sg.previous, ts, body)
	}
	return h
}

// item is one owed event.
type item struct {
	event   engine.OwedEvent
	body    []byte // rendered at the first attempt; the same bytes every attempt
	attempt int
	next    time.Time // not before
	busy    bool
}

// Attempt describes an endpoint's last delivery attempt.
type Attempt struct {
	At       time.Time
	Event    engine.EventID
	Status   int    // HTTP status; 0: no answer
	Error    string // why it failed ("" when delivered)
	Attempts int    // that event's attempt number
}

// EndpointStatus is an endpoint's backlog, for operators.
type EndpointStatus struct {
	Owed        int       // events not yet delivered nor abandoned
	OldestOwed  time.Time // zero: none owed
	NextAttempt time.Time // the earliest retry scheduled; zero: none
	Dropped     uint64    // events not owed since start: the outbox was full
	Last        Attempt   // zero: no attempt yet
	InFlight    int       // requests in flight
	// Unknown: the dispatcher has not been fed this endpoint (the log
	// follower is still catching up) or it was deleted.
	Unknown bool
}

// New returns a dispatcher that delivers nothing until Start.
func New(cfg Config) *Dispatcher {
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = RetryMinDefault
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = RetryMaxDefault
	}
	cfg.RetryMax = max(cfg.RetryMax, cfg.RetryMin)
	if cfg.Window <= 0 {
		cfg.Window = WindowDefault
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = TimeoutDefault
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = ConcurrencyDefault
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	transport := cfg.Transport
	if transport == nil {
		dialer := guardedDialer(cfg.AllowPrivate)
		transport = &http.Transport{
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   cfg.Concurrency,
			MaxConnsPerHost:       cfg.Concurrency,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   cfg.Timeout,
			ResponseHeaderTimeout: cfg.Timeout,
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Dispatcher{
		cfg:    cfg,
		logger: logger,
		ctx:    ctx,
		cancel: cancel,
		client: &http.Client{
			Transport: transport,
			Timeout:   cfg.Timeout,
			// A redirect is an answer, not a 2xx: never followed (it
			// could point anywhere, the metadata service included).
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		endpoints: make(map[engine.WebhookID]*endpoint),
		settleCh:  make(chan *engine.WebhookSettled, 4*settleBatchMax),
		settled:   make(chan struct{}),
	}
}

var _ engine.WebhookObserver = (*Dispatcher)(nil)

// Registered adds an endpoint.
func (d *Dispatcher) Registered(w *engine.Webhook) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ep, ok := d.endpoints[w.ID]; ok {
		ep.sign.Store(signingOf(w)) // told again: its URL or secrets changed
		return
	}
	ep := &endpoint{id: w.ID, queued: make(map[engine.EventID]struct{}), wake: make(chan struct{}, 1)}
	ep.sign.Store(signingOf(w))
	ep.ctx, ep.cancel = context.WithCancel(d.ctx)
	d.endpoints[w.ID] = ep
	if d.started {
		d.startWorker(ep)
	}
}

// Deleted stops an endpoint's deliveries and forgets its queue.
func (d *Dispatcher) Deleted(w *engine.Webhook) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ep, ok := d.endpoints[w.ID]; ok {
		delete(d.endpoints, w.ID)
		ep.cancel()
	}
}

// Owed queues an event (once: an event already queued is skipped, as when
// a replica restored from a snapshot tells of its outbox again).
func (d *Dispatcher) Owed(w *engine.Webhook, e *engine.OwedEvent) {
	d.mu.Lock()
	ep, ok := d.endpoints[w.ID]
	if ok {
		if _, dup := ep.queued[e.ID]; dup {
			ok = false
		} else {
			ep.queue = append(ep.queue, &item{event: *e})
			ep.queued[e.ID] = struct{}{}
		}
	}
	d.mu.Unlock()
	if ok {
		ep.poke()
	}
}

// Dropped counts an event the outbox had no room for.
func (d *Dispatcher) Dropped(w *engine.Webhook, _ *engine.OwedEvent) {
	d.dropped.Add(1)
	d.mu.Lock()
	if ep, ok := d.endpoints[w.ID]; ok {
		ep.dropped++
	}
	d.mu.Unlock()
	d.logger.Warn("webhook outbox full: event dropped", "webhook", w.ID.String(), "owed", w.OwedCount())
}

func (ep *endpoint) poke() {
	select {
	case ep.wake <- struct{}{}:
	default:
	}
}

// Start begins deliveries.
func (d *Dispatcher) Start() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started || d.ctx.Err() != nil {
		return
	}
	d.started = true
	go d.settleLoop()
	for _, ep := range d.endpoints {
		d.startWorker(ep)
	}
}

// Stop ends deliveries (requests in flight are cancelled, their events stay
// owed), records the settlements already made, and waits.
func (d *Dispatcher) Stop() {
	d.mu.Lock()
	started, stopped := d.started, d.ctx.Err() != nil
	d.cancel()
	d.mu.Unlock()
	if stopped {
		return
	}
	d.workers.Wait()
	if started {
		close(d.settleCh)
		<-d.settled
	}
}

// startWorker starts ep's worker. REQUIRES: d.mu held.
func (d *Dispatcher) startWorker(ep *endpoint) {
	if d.ctx.Err() != nil {
		return
	}
	d.workers.Add(1)
	go d.run(ep)
}

// run is an endpoint's worker: it starts every due delivery it may, then
// sleeps until the next is due, a delivery ends or an event arrives.
func (d *Dispatcher) run(ep *endpoint) {
	defer d.workers.Done()
	var inflight sync.WaitGroup
	defer inflight.Wait() // ep.ctx is done: the requests in flight end
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		// NB: since Go 1.23 Stop and Reset leave no stale tick to drain.
		if wait := d.launch(ep, &inflight); wait > 0 {
			timer.Reset(wait)
		} else {
			timer.Stop()
		}
		select {
		case <-ep.wake:
		case <-timer.C:
		case <-ep.ctx.Done():
			return
		}
	}
}

// launch starts the deliveries that are due, within the endpoint's
// concurrency, and returns how long until the next one is (0: none
// scheduled). An event waits while an earlier event of its quote is owed.
func (d *Dispatcher) launch(ep *endpoint, inflight *sync.WaitGroup) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.cfg.Clock()
	var next time.Time
	blocked := make(map[engine.QuoteID]struct{})
	for _, it := range ep.queue {
		q := it.event.Quote.ID
		if _, ok := blocked[q]; ok {
			continue
		}
		blocked[q] = struct{}{}
		if it.busy {
			continue
		}
		if it.next.After(now) {
			if next.IsZero() || it.next.Before(next) {
				next = it.next
			}
			continue
		}
		if ep.inflight >= d.cfg.Concurrency {
			break // a delivery ending wakes the worker
		}
		it.busy = true
		it.attempt++
		ep.inflight++
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			d.deliver(ep, it)
		}()
	}
	if next.IsZero() {
		return 0
	}
	return max(next.Sub(now), time.Millisecond)
}

// deliver makes one attempt and books its outcome.
func (d *Dispatcher) deliver(ep *endpoint, it *item) {
	if it.body == nil {
		it.body = d.cfg.Render(&it.event)
	}
	status, problem := d.post(ep, it)
	now := d.cfg.Clock()
	var settle *engine.WebhookSettled
	d.mu.Lock()
	it.busy = false
	ep.inflight--
	if ep.ctx.Err() != nil {
		d.mu.Unlock()
		return // deleted or stopping: the event stays owed
	}
	ep.last = Attempt{At: now, Event: it.event.ID, Status: status, Error: problem, Attempts: it.attempt}
	switch {
	case problem == "":
		d.delivered.Add(1)
		settle = &engine.WebhookSettled{At: now.UnixMilli(), Webhook: ep.id, Event: it.event.ID, Delivered: true}
	case now.Sub(time.UnixMilli(it.event.At)) >= d.cfg.Window:
		d.abandoned.Add(1)
		settle = &engine.WebhookSettled{At: now.UnixMilli(), Webhook: ep.id, Event: it.event.ID}
	default:
		d.failed.Add(1)
		it.next = now.Add(d.backoff(it.attempt))
	}
	if settle != nil {
		ep.queue = slices.DeleteFunc(ep.queue, func(x *item) bool { return x == it })
		delete(ep.queued, it.event.ID)
	}
	d.mu.Unlock()
	if settle != nil {
		if !settle.Delivered {
			d.logger.Warn("webhook event abandoned: retry window over", "webhook", ep.id.String(),
				"event", it.event.ID.String(), "attempts", it.attempt, "last_error", problem)
		}
		d.settleCh <- settle
	}
	ep.poke()
}

// backoff is the wait after the n-th failed attempt: RetryMin doubling,
// at most RetryMax.
func (d *Dispatcher) backoff(n int) time.Duration {
	wait := d.cfg.RetryMin
	for i := 1; i < n && wait < d.cfg.RetryMax; i++ {
		wait *= 2
	}
	return min(wait, d.cfg.RetryMax)
}

// post sends the event; problem is "" for a 2xx.
// The client's Timeout bounds the whole exchange.
func (d *Dispatcher) post(ep *endpoint, it *item) (status int, problem string) {
	return d.postTo(ep, "", it)
}

// postTo is post to url ("": the endpoint's).
func (d *Dispatcher) postTo(ep *endpoint, url string, it *item) (status int, problem string) {
	sign := ep.sign.Load()
	if url == "" {
		url = sign.url
	}
	req, err := http.NewRequestWithContext(ep.ctx, http.MethodPost, url, bytes.NewReader(it.body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Oja-Webhooks/1")
	req.Header.Set(SignatureHeader, sign.header(d.cfg.Clock(), it.body))
	req.Header.Set(AttemptHeader, strconv.Itoa(it.attempt))
	req.Header.Set(EventIDHeader, it.event.ID.String())
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, responseBytesMax))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, "answered " + strconv.Itoa(resp.StatusCode)
	}
	return resp.StatusCode, ""
}

// settleLoop records settlements in batches: one log append for all that
// are waiting (at most settleBatchMax).
func (d *Dispatcher) settleLoop() {
	defer close(d.settled)
	batch := make([]*engine.WebhookSettled, 0, settleBatchMax)
	for first := range d.settleCh {
		batch = append(batch[:0], first)
	more:
		for len(batch) < settleBatchMax {
			select {
			case s, ok := <-d.settleCh:
				if !ok {
					break more
				}
				batch = append(batch, s)
			default:
				break more
			}
		}
		if err := d.cfg.Settle(batch); err != nil {
			// The events stay owed in the log: a restart delivers them
			// again (at least once).
			d.logger.Error("webhook settlements not recorded; those events will be delivered again after a restart",
				"events", len(batch), "err", err)
		}
	}
}

// Counters are the dispatcher's totals since start: attempts delivered,
// failed (to be retried) and abandoned (failed, window over), and events
// dropped (outbox full).
type Counters struct {
	Delivered, Failed, Abandoned, Dropped uint64
	Owed                                  int // events owed now, all endpoints
	Endpoints                             int
}

// Counters returns the totals.
func (d *Dispatcher) Counters() Counters {
	c := Counters{Delivered: d.delivered.Load(), Failed: d.failed.Load(), Abandoned: d.abandoned.Load(),
		Dropped: d.dropped.Load()}
	d.mu.Lock()
	defer d.mu.Unlock()
	c.Endpoints = len(d.endpoints)
	for _, ep := range d.endpoints {
		c.Owed += len(ep.queue)
	}
	return c
}

// Status returns an endpoint's backlog.
func (d *Dispatcher) Status(id engine.WebhookID) EndpointStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	ep, ok := d.endpoints[id]
	if !ok {
		return EndpointStatus{Unknown: true}
	}
	st := EndpointStatus{Owed: len(ep.queue), Dropped: ep.dropped, Last: ep.last, InFlight: ep.inflight}
	for _, it := range ep.queue {
		at := time.UnixMilli(it.event.At)
		if st.OldestOwed.IsZero() || at.Before(st.OldestOwed) {
			st.OldestOwed = at
		}
		if !it.busy && it.attempt > 0 && (st.NextAttempt.IsZero() || it.next.Before(st.NextAttempt)) {
			st.NextAttempt = it.next
		}
	}
	return st
}
