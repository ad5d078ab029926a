package engine

import "github.com/oja-exchange/oja/internal/hashindex"

// keyIndexer takes a bulk load's Idempotency-Key writes on a goroutine of
// its own, in the order Apply made them, and applies them when the load
// settles (State.IndexKeysAside).
type keyIndexer struct {
	writes *hashindex.Writes[IdempotencyScope, *Quote]
	ops    chan []keyOp
	batch  []keyOp
	done   chan struct{}
}

// keyOp is one write: a quote's key put, or forgotten.
type keyOp struct {
	q      *Quote
	forget bool
}

// keyOpBatch is how many writes go to the indexer at once.
const keyOpBatch = 512

// IndexKeysAside makes s's Idempotency-Key writes — a quote created with a
// key, a quote forgotten — go to a goroutine of their own, in order, until
// settle is called, which applies them (hashindex.Writes: sorted by the
// index's shard first, a shard at a time) and waits for them to be done. For a
// replay of thousands of records: the index's map writes in the order made
// miss the cache once a quote at a million quotes, a fifth of Apply's
// time, and sorting them takes another core a fraction of that.
//
// REQUIRES: nothing reads s.Idempotency, or replaces it, until settle
// returns (Apply does neither; Hash, Reserve and the actors do).
// The indexer reads only what never changes of a quote (its client, mode
// and key). settle may be called more than once.
func (s *State) IndexKeysAside() (settle func()) {
	k := &keyIndexer{writes: s.Idempotency.Writes(), ops: make(chan []keyOp, 16),
		batch: make([]keyOp, 0, keyOpBatch), done: make(chan struct{})}
	go func() {
		defer close(k.done)
		for batch := range k.ops {
			for _, op := range batch {
				if op.forget {
					k.writes.Forget(op.q)
				} else {
					k.writes.Put(op.q)
				}
			}
		}
		k.writes.Apply(nil)
	}()
	s.keys = k
	return func() {
		if s.keys != k {
			return
		}
		s.keys = nil
		k.ops <- k.batch
		close(k.ops)
		<-k.done
	}
}

// putKey records q, created with an Idempotency-Key, in the index.
func (s *State) putKey(q *Quote) {
	if s.keys == nil {
		s.Idempotency.Put(q)
		return
	}
	s.keys.add(keyOp{q: q})
}

// forgetKey forgets q's Idempotency-Key if it still names q.
func (s *State) forgetKey(q *Quote) {
	if s.keys == nil {
		s.Idempotency.Forget(q)
		return
	}
	s.keys.add(keyOp{q: q, forget: true})
}

func (k *keyIndexer) add(op keyOp) {
	k.batch = append(k.batch, op)
	if len(k.batch) == keyOpBatch {
		k.ops <- k.batch
		k.batch = make([]keyOp, 0, keyOpBatch)
	}
}
