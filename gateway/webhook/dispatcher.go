package webhook

import (
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oja-exchange/oja/actors"
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
//
// Each endpoint is on its own: its own lock, queue and worker, so one
// endpoint's backlog or outage never slows another's. An endpoint's work
// is O(log n) per attempt and O(1) amortised per settlement in its n owed
// events: its queue is a chain per quote (a quote's events go out in
// order, the next only once the one before is settled) and a heap of the
// chains' heads by when they are next due. Retries wait RetryMin doubling
// to RetryMax, stretched by up to a quarter at random (jitter), and an
// endpoint whose last two attempts failed pauses as a whole for as long:
// a dead endpoint with a full outbox costs a few requests per pause, not
// one per owed event, and after a restart its retries do not all fall due
// at once.
type Dispatcher struct {
	cfg    Config
	client *http.Client
	logger *slog.Logger

	// ctx is cancelled by Stop: it ends every worker and request.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex // guards endpoints and started
	endpoints map[engine.WebhookID]*endpoint
	started   bool
	workers   sync.WaitGroup
	settleCh  chan *engine.WebhookSettled
	settled   chan struct{} // closed when the settling goroutine ends

	delivered, failed, abandoned, dropped atomic.Uint64
}

// endpoint is one registered endpoint, its queue and its delivery state.
// id, wake, ctx and cancel are fixed; sign is atomic; the rest is guarded
// by mu.
type endpoint struct {
	id   engine.WebhookID
	wake chan struct{} // cap 1
	// ctx is cancelled when the endpoint is deleted or the dispatcher
	// stops: its worker and requests end.
	ctx    context.Context
	cancel context.CancelFunc
	// sign holds where deliveries go and the signing secrets (an update
	// or a rotation replaces it; read by every delivery without the lock).
	sign atomic.Pointer[signing]

	mu sync.Mutex
	// chains are the owed events of each quote in log order: [0] is the
	// only one that may be attempted.
	chains map[engine.QuoteID][]*item
	queued map[engine.EventID]struct{}
	// ready holds the chains' heads not in flight, earliest due first.
	ready readyHeap
	// order is every owed event in log order (settled ones are holes,
	// skipped at the front and compacted once they are half): its front
	// is the oldest owed event, the next to outlive the retry window.
	order       []*item
	front       int // order[:front] are holes
	holes       int // settled events still in order
	owed        int
	seq         uint64 // events queued so far (the heap's tie-break: log order)
	inflight    int
	dropped     uint64
	failures    int       // consecutive failed attempts
	pausedUntil time.Time // no attempt before (after failures in a row)
	last        actors.WebhookAttempt
	testing     bool // a Test delivery is in flight
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
	busy    bool      // an attempt is in flight
	done    bool      // settled: a hole in endpoint.order
	seq     uint64    // log order within the endpoint
	heapAt  int       // index in endpoint.ready; -1: not in it
}

// readyHeap orders items by next, then log order (container/heap).
type readyHeap []*item

func (h readyHeap) Len() int { return len(h) }
func (h readyHeap) Less(i, j int) bool {
	if !h[i].next.Equal(h[j].next) {
		return h[i].next.Before(h[j].next)
	}
	return h[i].seq < h[j].seq
}
func (h readyHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapAt, h[j].heapAt = i, j
}
func (h *readyHeap) Push(x any) {
	it := x.(*item)
	it.heapAt = len(*h)
	*h = append(*h, it)
}
func (h *readyHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.heapAt = -1
	return it
}

// add queues it at the end of its quote's chain. REQUIRES: ep.mu held.
func (ep *endpoint) add(it *item) {
	ep.seq++
	it.seq, it.heapAt = ep.seq, -1
	q := it.event.Quote.ID
	chain := ep.chains[q]
	ep.chains[q] = append(chain, it)
	if len(chain) == 0 {
		heap.Push(&ep.ready, it)
	}
	ep.order = append(ep.order, it)
	ep.queued[it.event.ID] = struct{}{}
	ep.owed++
}

// remove drops it, the head of its chain, once settled, and makes the next
// event of its quote ready. REQUIRES: ep.mu held.
func (ep *endpoint) remove(it *item) {
	if it.heapAt >= 0 {
		heap.Remove(&ep.ready, it.heapAt)
	}
	q := it.event.Quote.ID
	chain := ep.chains[q]
	if len(chain) <= 1 {
		delete(ep.chains, q)
	} else {
		chain[0] = nil
		chain = chain[1:]
		ep.chains[q] = chain
		heap.Push(&ep.ready, chain[0])
	}
	delete(ep.queued, it.event.ID)
	it.done = true
	ep.owed--
	ep.holes++
	ep.skipHoles()
	if ep.holes >= compactAfterHoles && ep.holes*2 >= len(ep.order)-ep.front {
		kept := ep.order[:0]
		for _, x := range ep.order[ep.front:] {
			if !x.done {
				kept = append(kept, x)
			}
		}
		clear(ep.order[len(kept):])
		ep.order, ep.front, ep.holes = kept, 0, 0
	}
}

// compactAfterHoles is the fewest holes a compaction of order is worth (a
// tuning of memory against copying, not a limit anyone meets).
const compactAfterHoles = 64

// skipHoles moves front past settled events. REQUIRES: ep.mu held.
func (ep *endpoint) skipHoles() {
	for ep.front < len(ep.order) && ep.order[ep.front].done {
		ep.order[ep.front] = nil
		ep.front++
		ep.holes--
	}
	if ep.front == len(ep.order) {
		ep.order, ep.front = ep.order[:0], 0
	}
}

// oldest is the oldest owed event (nil: none). REQUIRES: ep.mu held.
func (ep *endpoint) oldest() *item {
	ep.skipHoles()
	if ep.front < len(ep.order) {
		return ep.order[ep.front]
	}
	return nil
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
	logger := cmp.Or(cfg.Logger, slog.Default())
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
	ep := &endpoint{id: w.ID, chains: make(map[engine.QuoteID][]*item), queued: make(map[engine.EventID]struct{}),
		wake: make(chan struct{}, 1)}
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

// endpoint returns the endpoint id (nil: unknown).
func (d *Dispatcher) endpoint(id engine.WebhookID) *endpoint {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.endpoints[id]
}

// Owed queues an event (once: an event already queued is skipped, as when
// a replica restored from a snapshot tells of its outbox again).
func (d *Dispatcher) Owed(w *engine.Webhook, e *engine.OwedEvent) {
	ep := d.endpoint(w.ID)
	if ep == nil {
		return
	}
	ep.mu.Lock()
	_, dup := ep.queued[e.ID]
	if !dup {
		ep.add(&item{event: *e})
	}
	ep.mu.Unlock()
	if !dup {
		ep.poke()
	}
}

// Dropped counts an event the outbox had no room for.
func (d *Dispatcher) Dropped(w *engine.Webhook, _ *engine.OwedEvent) {
	d.dropped.Add(1)
	if ep := d.endpoint(w.ID); ep != nil {
		ep.mu.Lock()
		ep.dropped++
		ep.mu.Unlock()
	}
	d.logger.Warn("webhook outbox full: event dropped", "webhook", w.ID.String(), "owed_max", engine.WebhookOwedMax)
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

// launch abandons the owed events past the retry window, starts the
// deliveries that are due, within the endpoint's concurrency and unless
// it is paused, and returns how long until the next is due (0: none).
func (d *Dispatcher) launch(ep *endpoint, inflight *sync.WaitGroup) time.Duration {
	ep.mu.Lock()
	now := d.cfg.Clock()
	var abandoned []*engine.WebhookSettled
	// Events past the retry window are abandoned once tried, or untried
	// while the endpoint is failing: every event gets an attempt unless
	// its endpoint is down. NB: the oldest owed event is its quote's chain
	// head (an earlier event of the quote would be older), so abandoning
	// it keeps order.
	for it := ep.oldest(); it != nil && d.expired(ep, it, now); it = ep.oldest() {
		d.abandoned.Add(1)
		abandoned = append(abandoned, &engine.WebhookSettled{At: now.UnixMilli(), Webhook: ep.id, Event: it.event.ID})
		ep.remove(it)
	}
	var next time.Time
	if ep.pausedUntil.After(now) {
		next = ep.pausedUntil
	} else {
		for ep.inflight < d.cfg.Concurrency && ep.ready.Len() > 0 {
			it := ep.ready[0]
			if it.next.After(now) {
				next = it.next
				break
			}
			heap.Pop(&ep.ready)
			it.busy = true
			it.attempt++
			ep.inflight++
			inflight.Add(1)
			go func() {
				defer inflight.Done()
				d.deliver(ep, it)
			}()
		}
	}
	if it := ep.oldest(); it != nil && !it.busy && (it.attempt > 0 || ep.failures >= pauseAfterFailures) {
		if due := time.UnixMilli(it.event.At).Add(d.cfg.Window); next.IsZero() || due.Before(next) {
			next = due
		}
	}
	ep.mu.Unlock()
	if len(abandoned) > 0 {
		d.logger.Warn("webhook events abandoned: retry window over, never delivered", "webhook", ep.id.String(),
			"events", len(abandoned))
		for _, s := range abandoned {
			d.settleCh <- s
		}
	}
	if next.IsZero() {
		return 0
	}
	return max(next.Sub(now), time.Millisecond)
}

// expired reports whether it may be abandoned unattempted now: past the
// retry window, not in flight, and tried before or its endpoint failing.
// REQUIRES: ep.mu held.
func (d *Dispatcher) expired(ep *endpoint, it *item, now time.Time) bool {
	return !it.busy && (it.attempt > 0 || ep.failures >= pauseAfterFailures) &&
		now.Sub(time.UnixMilli(it.event.At)) >= d.cfg.Window
}

// deliver makes one attempt and books its outcome.
func (d *Dispatcher) deliver(ep *endpoint, it *item) {
	if it.body == nil {
		it.body = d.cfg.Render(&it.event)
	}
	status, problem := d.post(ep, it)
	now := d.cfg.Clock()
	var settle *engine.WebhookSettled
	ep.mu.Lock()
	it.busy = false
	ep.inflight--
	if ep.ctx.Err() != nil {
		ep.mu.Unlock()
		return // deleted or stopping: the event stays owed
	}
	ep.last = actors.WebhookAttempt{At: now, Event: it.event.ID, Status: status, Error: problem, Attempts: it.attempt}
	switch {
	case problem == "":
		d.delivered.Add(1)
		ep.failures, ep.pausedUntil = 0, time.Time{}
		settle = &engine.WebhookSettled{At: now.UnixMilli(), Webhook: ep.id, Event: it.event.ID, Delivered: true}
	case now.Sub(time.UnixMilli(it.event.At)) >= d.cfg.Window:
		d.abandoned.Add(1)
		settle = &engine.WebhookSettled{At: now.UnixMilli(), Webhook: ep.id, Event: it.event.ID}
	default:
		d.failed.Add(1)
		ep.failures++
		it.next = now.Add(jitter(d.backoff(it.attempt)))
		heap.Push(&ep.ready, it)
		if ep.failures >= pauseAfterFailures {
			ep.pausedUntil = now.Add(jitter(d.backoff(ep.failures - 1)))
		}
	}
	if settle != nil {
		ep.remove(it)
	}
	ep.mu.Unlock()
	ep.poke()
	if settle != nil {
		if !settle.Delivered {
			d.logger.Warn("webhook event abandoned: retry window over", "webhook", ep.id.String(),
				"event", it.event.ID.String(), "attempts", it.attempt, "last_error", problem)
		}
		d.settleCh <- settle
	}
}

// pauseAfterFailures is how many failed attempts in a row pause an
// endpoint: one failure may be the event's, two say the endpoint is down.
const pauseAfterFailures = 2

// jitter stretches a wait by up to a quarter at random, never shortens it
// (a retry is never earlier than its backoff), so that retries scheduled
// together — every owed event after a restart — spread out.
func jitter(wait time.Duration) time.Duration {
	return wait + time.Duration(rand.Int64N(int64(wait)/4+1))
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

// Counters returns the totals.
func (d *Dispatcher) Counters() actors.WebhookCounters {
	c := actors.WebhookCounters{Delivered: d.delivered.Load(), Failed: d.failed.Load(), Abandoned: d.abandoned.Load(),
		Dropped: d.dropped.Load()}
	d.mu.Lock()
	eps := make([]*endpoint, 0, len(d.endpoints))
	for _, ep := range d.endpoints {
		eps = append(eps, ep)
	}
	d.mu.Unlock()
	c.Endpoints = len(eps)
	for _, ep := range eps {
		ep.mu.Lock()
		c.Owed += ep.owed
		ep.mu.Unlock()
	}
	return c
}

// Status returns an endpoint's backlog.
func (d *Dispatcher) Status(id engine.WebhookID) actors.WebhookStatus {
	ep := d.endpoint(id)
	if ep == nil {
		return actors.WebhookStatus{Unknown: true}
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	st := actors.WebhookStatus{Owed: ep.owed, Dropped: ep.dropped, Last: ep.last, InFlight: ep.inflight}
	if it := ep.oldest(); it != nil {
		st.OldestOwed = time.UnixMilli(it.event.At)
	}
	// The next retry: the earliest failed event's, or the end of a pause.
	for _, it := range ep.ready {
		if it.attempt > 0 && (st.NextAttempt.IsZero() || it.next.Before(st.NextAttempt)) {
			st.NextAttempt = it.next
		}
	}
	if !st.NextAttempt.IsZero() && ep.pausedUntil.After(st.NextAttempt) {
		st.NextAttempt = ep.pausedUntil
	}
	return st
}
