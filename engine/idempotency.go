package engine

import (
	"hash/maphash"
	"iter"
)

// IdempotencyIndex maps each Idempotency-Key (its scope: client, mode, key)
// to the quote it created; the quote is the record (its RequestHash and
// CreatedAt). It is keyed by a 64-bit hash of the scope, not the scope:
// a million keys cost a 16-byte map slot each instead of 48 (the scope's
// client, mode and string header), and the scope is checked against the
// quote found. The rare scope whose hash another scope already holds goes
// to a map by scope beside it.
//
// Not safe for concurrent use.
type IdempotencyIndex struct {
	seed     maphash.Seed
	byHash   map[uint64]*Quote
	collided map[IdempotencyScope]*Quote
	// hashOf replaces the hash in a test that needs collisions; nil: the
	// seeded hash.
	hashOf func(IdempotencyScope) uint64
}

// NewIdempotencyIndex returns an empty index sized for about n keys.
func NewIdempotencyIndex(n int) *IdempotencyIndex {
	return &IdempotencyIndex{seed: maphash.MakeSeed(), byHash: make(map[uint64]*Quote, n),
		collided: make(map[IdempotencyScope]*Quote)}
}

// ScopeOf is the scope of the Idempotency-Key q was created with.
func ScopeOf(q *Quote) IdempotencyScope { return IdempotencyScope{q.Client, q.Mode, q.IdempotencyKey} }

func (x *IdempotencyIndex) hash(s IdempotencyScope) uint64 {
	if x.hashOf != nil {
		return x.hashOf(s)
	}
	return maphash.Comparable(x.seed, s)
}

// Get returns the quote scope's key created.
func (x *IdempotencyIndex) Get(scope IdempotencyScope) (*Quote, bool) {
	if q, ok := x.byHash[x.hash(scope)]; ok && ScopeOf(q) == scope {
		return q, true
	}
	if len(x.collided) == 0 {
		return nil, false
	}
	q, ok := x.collided[scope]
	return q, ok
}

// Put records q as the quote its Idempotency-Key created (q has one): a
// quote is only ever held under its own scope.
func (x *IdempotencyIndex) Put(q *Quote) {
	scope := ScopeOf(q)
	h := x.hash(scope)
	if held, ok := x.byHash[h]; ok && ScopeOf(held) != scope {
		x.collided[scope] = q
		return
	}
	x.byHash[h] = q
	if len(x.collided) > 0 {
		delete(x.collided, scope) // held there while another scope had h
	}
}

// Forget forgets q's key if it still names q (a key reused after its
// retention names the newer quote).
func (x *IdempotencyIndex) Forget(q *Quote) {
	scope := ScopeOf(q)
	h := x.hash(scope)
	if x.byHash[h] == q {
		delete(x.byHash, h)
	} else if x.collided[scope] == q {
		delete(x.collided, scope)
	}
}

// DeleteIf forgets every key whose quote drop is true for.
func (x *IdempotencyIndex) DeleteIf(drop func(*Quote) bool) {
	for h, q := range x.byHash {
		if drop(q) {
			delete(x.byHash, h)
		}
	}
	for scope, q := range x.collided {
		if drop(q) {
			delete(x.collided, scope)
		}
	}
}

// Len is the number of keys.
func (x *IdempotencyIndex) Len() int { return len(x.byHash) + len(x.collided) }

// All is every key's scope and quote, in no order.
func (x *IdempotencyIndex) All() iter.Seq2[IdempotencyScope, *Quote] {
	return func(yield func(IdempotencyScope, *Quote) bool) {
		for _, q := range x.byHash {
			if !yield(ScopeOf(q), q) {
				return
			}
		}
		for scope, q := range x.collided {
			if !yield(scope, q) {
				return
			}
		}
	}
}

// remapped is a copy of x whose quotes are those quote maps them to
// (Clone: the clone's copies), with the same hashes.
func (x *IdempotencyIndex) remapped(quote func(*Quote) *Quote) *IdempotencyIndex {
	c := &IdempotencyIndex{seed: x.seed, hashOf: x.hashOf, byHash: make(map[uint64]*Quote, len(x.byHash)),
		collided: make(map[IdempotencyScope]*Quote, len(x.collided))}
	for h, q := range x.byHash {
		c.byHash[h] = quote(q)
	}
	for scope, q := range x.collided {
		c.collided[scope] = quote(q)
	}
	return c
}
