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
	mu sync.Mutex
	// entries are the keys in flight: claimed, their create not yet
	// released (its quote set once it is durable).
	entries map[engine.IdempotencyScope]*idempotencyEntry
	// created are the keys of the quotes created since the start, each to
	// its quote as created (any version of it: the original view is
	// derived when a replay needs it; its RequestHash and CreatedAt are the
	// key's record): a flat table's 16-byte slot each where an entry in
	// entries took a map slot of some 48 bytes and an entry of its own.
	// They shadow recovered.
	created *engine.IdempotencyIndex
	// recovered are the keys of the state this start recovered, each to
	// the quote it created as the state recovered it (its RequestHash and
	// CreatedAt are the record), used as they are (a million of them
	// rebuilt into entries cost more than a second of the start).
	recovered *engine.IdempotencyIndex
	// quote resolves a recovered key's quote (the registry); nil: gone.
	quote func(engine.QuoteID) *engine.Quote
	now   func() int64
}

type idempotencyEntry struct {
	// quote is the quote the key created (any version of it); nil while
	// in flight.
	quote *engine.Quote
	done  chan struct{} // closed when the in-flight create finished
}

// init starts the index from the recovered keys (taken over, not copied).
func (x *idempotencyIndex) init(recovered *engine.IdempotencyIndex,
	quote func(engine.QuoteID) *engine.Quote, now func() int64) {
	x.entries = make(map[engine.IdempotencyScope]*idempotencyEntry)
	x.created = engine.NewIdempotencyIndex(0)
	x.recovered, x.quote, x.now = recovered, quote, now
}

// lookup returns the entry for scope: one in flight, else a key created
// since the start, else a recovered key whose quote is still known, each
// within its retention.
// REQUIRES: x.mu held.
func (x *idempotencyIndex) lookup(scope engine.IdempotencyScope) (*idempotencyEntry, bool) {
	if e, ok := x.entries[scope]; ok {
		return e, true
	}
	q, ok := x.created.Get(scope)
	if !ok {
		if q, ok = x.recovered.Get(scope); ok {
			q = x.quote(q.ID) // the quote as the registry holds it
		}
	}
	if q == nil || x.now()-q.CreatedAt > engine.IdempotencyRetentionMillis {
		return nil, false
	}
	return &idempotencyEntry{quote: q, done: closedDone}, true
}

// closedDone is the done channel of every entry whose create had finished
// when the entry was made: a recovered key's, or one stored without a
// claim (release never closes a closed channel).
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// claim returns (nil, true) when the caller now owns the key and must create
// the quote, then call release; otherwise the reply to give.
func (x *idempotencyIndex) claim(scope engine.IdempotencyScope, hash [32]byte) (*QuoteReply, bool) {
	deadline := time.After(requestTimeout)
	for {
		x.mu.Lock()
		e, ok := x.lookup(scope)
		if !ok {
			x.entries[scope] = &idempotencyEntry{done: make(chan struct{})}
			x.mu.Unlock()
			return nil, true
		}
		quote, done := e.quote, e.done
		x.mu.Unlock()
		if quote != nil {
			if quote.RequestHash != hash {
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

// store records a created quote (by the pair actor once it is durable):
// on its claim while the claim is held, which release then moves to
// created.
func (x *idempotencyIndex) store(scope engine.IdempotencyScope, quote *engine.Quote) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.entries[scope]; ok && e.quote == nil {
		e.quote = quote
		return
	}
	x.created.Put(quote)
}

// release ends the caller's claim: a create that made its quote leaves the
// key to created, one that made none frees it.
func (x *idempotencyIndex) release(scope engine.IdempotencyScope) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entries[scope]
	if e == nil {
		return
	}
	delete(x.entries, scope)
	if e.quote != nil {
		x.created.Put(e.quote)
	}
	close(e.done)
}

// prune forgets keys older than the retention.
func (x *idempotencyIndex) prune(now int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	old := func(q *engine.Quote) bool { return now-q.CreatedAt > engine.IdempotencyRetentionMillis }
	x.created.DeleteIf(old)
	x.recovered.DeleteIf(old)
}

// originalView is the quote as its create answered it, derived from any
// later version: pending, before any transition (the immutable part,
// CreatedAt and TTL never change).
func originalView(q *engine.Quote) *engine.Quote {
	o := q.Clone()
	o.Status, o.UpdatedAt, o.ExpiresAt = engine.StatusPending, q.CreatedAt, q.CreatedAt+int64(q.TTL)*1000
	o.Accepted = nil
	return o
}
