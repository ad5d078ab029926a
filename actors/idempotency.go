package actors

import (
	"sync"
	"time"

	"github.com/oja-exchange/oja/engine"
)

// idempotencyIndex remembers which quote each Idempotency-Key created, per
// client and mode, for engine.IdempotencyRetentionMillis. A key in flight
// (its create not yet answered) makes a concurrent request with the same key
// wait for the first one's outcome, so a retry storm creates one quote.
type idempotencyIndex struct {
	mu      sync.Mutex
	entries map[engine.IdempotencyScope]*idempotencyEntry
}

type idempotencyEntry struct {
	hash [32]byte
	at   int64
	// quote is the quote the key created (any version of it: the original
	// view is derived when a replay needs it); nil while in flight.
	quote *engine.Quote
	done  chan struct{} // closed when the in-flight create finished
}

func (x *idempotencyIndex) init(size int) {
	x.entries = make(map[engine.IdempotencyScope]*idempotencyEntry, size)
}

// closedDone is the done channel of every entry whose create had finished
// before this start: already closed, shared (release never closes a closed
// one), so recovering a million keys makes no million channels.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// preload records the recovered keys in one pass, the entries in one
// allocation. REQUIRES: before any other use.
func (x *idempotencyIndex) preload(state *engine.State, keep func(engine.IdempotencyRecord) bool) {
	entries := make([]idempotencyEntry, 0, len(state.Idempotency))
	for scope, rec := range state.Idempotency {
		// NB: the recovered quote itself, not a registry lookup (the
		// registry holds this same pointer).
		q, ok := state.Quotes[rec.Quote]
		if !ok || !keep(rec) {
			continue
		}
		entries = append(entries, idempotencyEntry{hash: rec.RequestHash, at: rec.At, quote: q, done: closedDone})
		x.entries[scope] = &entries[len(entries)-1]
	}
}

// claim returns (nil, true) when the caller now owns the key and must create
// the quote, then call release; otherwise the reply to give.
func (x *idempotencyIndex) claim(scope engine.IdempotencyScope, hash [32]byte) (*QuoteReply, bool) {
	deadline := time.After(requestTimeout)
	for {
		x.mu.Lock()
		e, ok := x.entries[scope]
		if !ok {
			x.entries[scope] = &idempotencyEntry{hash: hash, done: make(chan struct{})}
			x.mu.Unlock()
			return nil, true
		}
		quote, done := e.quote, e.done
		x.mu.Unlock()
		if quote != nil {
			if e.hash != hash {
				return &QuoteReply{Result: engine.ResultIdempotencyKeyReused}, false
			}
			return &QuoteReply{Result: engine.ResultOK, Quote: originalView(quote), Replayed: true}, false
		}
		select {
		case <-done:
		case <-deadline:
			return &QuoteReply{Err: ErrUnavailable}, false
		}
	}
}

// store records a created quote (by the pair actor once it is durable, or
// at start).
func (x *idempotencyIndex) store(scope engine.IdempotencyScope, rec engine.IdempotencyRecord, quote *engine.Quote) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.entries[scope]; ok && e.quote == nil {
		e.quote, e.at, e.hash = quote, rec.At, rec.RequestHash
		return
	}
	done := make(chan struct{})
	close(done)
	x.entries[scope] = &idempotencyEntry{hash: rec.RequestHash, at: rec.At, quote: quote, done: done}
}

// release ends the caller's claim: a create that made no quote frees the key.
func (x *idempotencyIndex) release(scope engine.IdempotencyScope) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entries[scope]
	if e == nil {
		return
	}
	if e.quote == nil {
		delete(x.entries, scope)
	}
	select {
	case <-e.done:
	default:
		close(e.done)
	}
}

// prune forgets keys older than the retention.
func (x *idempotencyIndex) prune(now int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for scope, e := range x.entries {
		if e.quote != nil && now-e.at > engine.IdempotencyRetentionMillis {
			delete(x.entries, scope)
		}
	}
}

// originalView is the quote as its create answered it, derived from any
// later version: pending, before any transition (the immutable part,
// CreatedAt and TTL never change).
func originalView(q *engine.Quote) *engine.Quote {
	o := q.Clone()
	o.Status, o.UpdatedAt, o.ExpiresAt = engine.StatusPending, q.CreatedAt, q.CreatedAt+q.TTL*1000
	o.AcceptedAt, o.PoolAccount, o.Settlement = 0, engine.AccountID{}, engine.Settlement{}
	return o
}
