package engine

import "github.com/oja-exchange/oja/internal/hashindex"

// KeyOp is one Idempotency-Key write Apply made: a quote's key put, or
// forgotten.
type KeyOp struct {
	Quote  *Quote
	Forget bool
}

// keyOpBatch is how many writes DeferKeyWrites hands over at once.
const keyOpBatch = 512

// keyDeferral is where Apply's Idempotency-Key writes go while deferred.
type keyDeferral struct {
	send  func([]KeyOp)
	batch []KeyOp
}

// KeyWriter writes deferred Idempotency-Key writes (DeferKeyWrites) into
// the index: sorted by the index's shard, a shard at a time, when
// finished (hashindex.Writes). A KeyWriter is used by one goroutine at a
// time.
type KeyWriter struct {
	writes *hashindex.Writes[IdempotencyScope, *Quote]
}

// Write takes a batch of writes, in the order Apply made them.
func (w *KeyWriter) Write(batch []KeyOp) {
	for _, op := range batch {
		if op.Forget {
			w.writes.Forget(op.Quote)
		} else {
			w.writes.Put(op.Quote)
		}
	}
}

// Finish writes every batch taken into the index.
func (w *KeyWriter) Finish() { w.writes.Apply(nil) }

// DeferKeyWrites makes Apply hand s's Idempotency-Key writes — a quote
// created with a key, a quote forgotten — to send, keyOpBatch at a time in
// the order made, instead of writing them, until flush, which sends the
// last batch and ends the deferral. The caller gives every batch, in
// order, to the returned KeyWriter and then calls its Finish. For a replay
// of thousands of records: the index's map writes in the order made miss
// the cache once a quote at a million quotes, a fifth of Apply's time;
// sorted by shard (KeyWriter.Finish) they do not, and a caller that owns
// goroutines runs the writer on another core (actors.Replica).
//
// REQUIRES: nothing reads s.Idempotency, or replaces it, until Finish
// returns (Apply does neither; Hash, Reserve and the actors do). The
// writer reads only what never changes of a quote (its client, mode and
// key). flush may be called more than once.
func (s *State) DeferKeyWrites(send func([]KeyOp)) (w *KeyWriter, flush func()) {
	d := &keyDeferral{send: send, batch: make([]KeyOp, 0, keyOpBatch)}
	s.keys = d
	return &KeyWriter{writes: s.Idempotency.Writes()}, func() {
		if s.keys != d {
			return
		}
		s.keys = nil
		if len(d.batch) > 0 {
			d.send(d.batch)
		}
	}
}

// putKey records q, created with an Idempotency-Key, in the index.
func (s *State) putKey(q *Quote) {
	if s.keys == nil {
		s.Idempotency.Put(q)
		return
	}
	s.keys.add(KeyOp{Quote: q})
}

// forgetKey forgets q's Idempotency-Key if it still names q.
func (s *State) forgetKey(q *Quote) {
	if s.keys == nil {
		s.Idempotency.Forget(q)
		return
	}
	s.keys.add(KeyOp{Quote: q, Forget: true})
}

func (d *keyDeferral) add(op KeyOp) {
	d.batch = append(d.batch, op)
	if len(d.batch) == keyOpBatch {
		d.send(d.batch)
		d.batch = make([]KeyOp, 0, keyOpBatch)
	}
}
