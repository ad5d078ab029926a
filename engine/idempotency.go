package engine

import (
	"hash/maphash"
	"iter"
	"sync"
)

// IdempotencyIndex maps each Idempotency-Key (its scope: client, mode, key)
// to the quote it created; the quote is the record (its RequestHash and
// CreatedAt). It is keyed by a 64-bit hash of the scope, not the scope:
// a million keys cost a 16-byte map slot each instead of 48 (the scope's
// client, mode and string header), and the scope is checked against the
// quote found. The rare scope whose hash another scope already holds goes
// to a map by scope beside it, in its shard. The keys are split into 64
// shards by the hash's top bits: a bulk load sorts its writes by shard and
// fills one small map at a time (keyWrites).
//
// Not safe for concurrent use.
type IdempotencyIndex struct {
	seed maphash.Seed
	// shards split the keys by their hash's top bits, so that a bulk load
	// (keyWrites) fills one small map at a time.
	shards [idempotencyShards]idempotencyShard
	// hashOf replaces the hash in a test that needs collisions; nil: the
	// seeded hash.
	hashOf func(IdempotencyScope) uint64
}

// idempotencyShards is the number of shards: a power of two, indexed by
// the top bits of the scope's hash (idempotencyShardShift).
const (
	idempotencyShards     = 64
	idempotencyShardShift = 58 // 64 - log2(idempotencyShards)
)

type idempotencyShard struct {
	byHash   map[uint64]*Quote           // nil until the first key
	collided map[IdempotencyScope]*Quote // nil until the first collision
	hint     int                         // byHash's size when made
}

// NewIdempotencyIndex returns an empty index sized for about n keys.
func NewIdempotencyIndex(n int) *IdempotencyIndex {
	x := &IdempotencyIndex{seed: maphash.MakeSeed()}
	for i := range x.shards {
		x.shards[i].hint = n / idempotencyShards
	}
	return x
}

// ScopeOf is the scope of the Idempotency-Key q was created with.
func ScopeOf(q *Quote) IdempotencyScope { return IdempotencyScope{q.Client, q.Mode, q.IdempotencyKey} }

func (x *IdempotencyIndex) hash(s IdempotencyScope) uint64 {
	if x.hashOf != nil {
		return x.hashOf(s)
	}
	return maphash.Comparable(x.seed, s)
}

func (x *IdempotencyIndex) shard(h uint64) *idempotencyShard {
	return &x.shards[h>>idempotencyShardShift]
}

// Get returns the quote scope's key created.
func (x *IdempotencyIndex) Get(scope IdempotencyScope) (*Quote, bool) {
	h := x.hash(scope)
	sh := x.shard(h)
	if q, ok := sh.byHash[h]; ok && ScopeOf(q) == scope {
		return q, true
	}
	q, ok := sh.collided[scope]
	return q, ok
}

// Put records q as the quote its Idempotency-Key created (q has one): a
// quote is only ever held under its own scope.
func (x *IdempotencyIndex) Put(q *Quote) {
	h := x.hash(ScopeOf(q))
	x.shard(h).put(h, q)
}

func (sh *idempotencyShard) put(h uint64, q *Quote) {
	held, ok := sh.byHash[h]
	if !ok {
		if sh.byHash == nil {
			sh.byHash = make(map[uint64]*Quote, sh.hint)
		}
		sh.byHash[h] = q
		if len(sh.collided) > 0 {
			delete(sh.collided, ScopeOf(q)) // held there while another scope had h
		}
		return
	}
	// NB: q's scope is read only here, so that a bulk load (whose quotes
	// are anywhere in memory) misses the cache for it only when the
	// hash's slot is held.
	scope := ScopeOf(q)
	if ScopeOf(held) != scope {
		if sh.collided == nil {
			sh.collided = make(map[IdempotencyScope]*Quote)
		}
		sh.collided[scope] = q
		return
	}
	sh.byHash[h] = q
	delete(sh.collided, scope) // held there while another scope had h
}

// Forget forgets q's key if it still names q (a key reused after its
// retention names the newer quote).
func (x *IdempotencyIndex) Forget(q *Quote) {
	h := x.hash(ScopeOf(q))
	x.shard(h).forget(h, q)
}

func (sh *idempotencyShard) forget(h uint64, q *Quote) {
	if sh.byHash[h] == q {
		delete(sh.byHash, h)
	} else if len(sh.collided) > 0 {
		if scope := ScopeOf(q); sh.collided[scope] == q {
			delete(sh.collided, scope)
		}
	}
}

// DeleteIf forgets every key whose quote drop is true for.
func (x *IdempotencyIndex) DeleteIf(drop func(*Quote) bool) {
	for i := range x.shards {
		sh := &x.shards[i]
		for h, q := range sh.byHash {
			if drop(q) {
				delete(sh.byHash, h)
			}
		}
		for scope, q := range sh.collided {
			if drop(q) {
				delete(sh.collided, scope)
			}
		}
	}
}

// Len is the number of keys.
func (x *IdempotencyIndex) Len() int {
	n := 0
	for i := range x.shards {
		n += len(x.shards[i].byHash) + len(x.shards[i].collided)
	}
	return n
}

// collisions is the number of keys held beside their hash's slot.
func (x *IdempotencyIndex) collisions() int {
	n := 0
	for i := range x.shards {
		n += len(x.shards[i].collided)
	}
	return n
}

// All is every key's scope and quote, in no order.
func (x *IdempotencyIndex) All() iter.Seq2[IdempotencyScope, *Quote] {
	return func(yield func(IdempotencyScope, *Quote) bool) {
		for i := range x.shards {
			sh := &x.shards[i]
			for _, q := range sh.byHash {
				if !yield(ScopeOf(q), q) {
					return
				}
			}
			for scope, q := range sh.collided {
				if !yield(scope, q) {
					return
				}
			}
		}
	}
}

// remapped is a copy of x whose quotes are those quote maps them to
// (Clone: the clone's copies), with the same hashes.
func (x *IdempotencyIndex) remapped(quote func(*Quote) *Quote) *IdempotencyIndex {
	c := &IdempotencyIndex{seed: x.seed, hashOf: x.hashOf}
	for i := range x.shards {
		sh, csh := &x.shards[i], &c.shards[i]
		csh.hint = sh.hint
		if sh.byHash != nil {
			csh.byHash = make(map[uint64]*Quote, len(sh.byHash))
			for h, q := range sh.byHash {
				csh.byHash[h] = quote(q)
			}
		}
		if len(sh.collided) > 0 {
			csh.collided = make(map[IdempotencyScope]*Quote, len(sh.collided))
			for scope, q := range sh.collided {
				csh.collided[scope] = quote(q)
			}
		}
	}
	return c
}

// keyWrites are a bulk load's writes to an index — keys put, keys
// forgotten — kept sorted by shard in the order made, then applied one
// shard after the other on two goroutines (apply). A shard's map at a
// million keys is a few hundred KB and stays in the core's cache while it
// fills, where the writes in the order made miss it once each.
type keyWrites struct {
	x       *IdempotencyIndex
	pending [idempotencyShards][]keyWrite
}

type keyWrite struct {
	h      uint64
	q      *Quote
	forget bool
}

func newKeyWrites(x *IdempotencyIndex) *keyWrites { return &keyWrites{x: x} }

// add keeps a write: q's key put, or forgotten.
func (w *keyWrites) add(q *Quote, forget bool) {
	h := w.x.hash(ScopeOf(q))
	i := h >> idempotencyShardShift
	w.pending[i] = append(w.pending[i], keyWrite{h, q, forget})
}

// apply makes every write kept, in order within each shard (writes to
// one key are in one shard, so the index ends as the writes in the order
// made would leave it), and forgets them.
func (w *keyWrites) apply() {
	var wg sync.WaitGroup
	for half := range 2 {
		wg.Go(func() {
			for i := half; i < idempotencyShards; i += 2 {
				sh := &w.x.shards[i]
				for _, op := range w.pending[i] {
					if op.forget {
						sh.forget(op.h, op.q)
					} else {
						sh.put(op.h, op.q)
					}
				}
				w.pending[i] = nil
			}
		})
	}
	wg.Wait()
}
