package actors

import (
	"sync"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/internal/hashindex"
)

// quoteRegistry maps every known quote to its registry entry: a
// hashindex.Index keyed by a 64-bit hash of the quote id, each of its 64
// shards under a read-write lock of its own. Sharded tables rather than a
// sync.Map: a start registers a million quotes in one pass, sorted by
// shard (startRegistering; sync.Map's trie inserts were a quarter of
// actors.Start at 1M quotes), and reads take one uncontended read lock.
// A slot is 16 bytes, the id's hash and the entry: the entry's view holds
// the id, which a lookup checks.
type quoteRegistry struct {
	index *hashindex.Index[engine.QuoteID, *quoteRef]
	locks [hashindex.Shards]sync.RWMutex
}

func refID(ref *quoteRef) engine.QuoteID { return ref.view.Load().ID }

// init presizes the registry for about n quotes.
func (r *quoteRegistry) init(n int) { r.index = hashindex.New(n, refID) }

// lock is the lock of the shard of a hash h.
func (r *quoteRegistry) lock(h uint64) *sync.RWMutex { return &r.locks[hashindex.Shard(h)] }

func (r *quoteRegistry) Load(id engine.QuoteID) (*quoteRef, bool) {
	h := r.index.Hash(id)
	l := r.lock(h)
	l.RLock()
	ref, ok := r.index.GetHashed(h, id)
	l.RUnlock()
	return ref, ok
}

// Store enters ref, whose view must be id's quote.
func (r *quoteRegistry) Store(id engine.QuoteID, ref *quoteRef) {
	h := r.index.Hash(id)
	l := r.lock(h)
	l.Lock()
	r.index.PutHashed(h, ref)
	l.Unlock()
}

// DeleteIf removes every entry for which drop is true; drop runs under
// the entry's shard lock and must not use the registry.
func (r *quoteRegistry) DeleteIf(drop func(id engine.QuoteID, ref *quoteRef) bool) {
	for i := range r.locks {
		r.locks[i].Lock()
		r.index.DeleteIfIn(i, func(ref *quoteRef) bool { return drop(refID(ref), ref) })
		r.locks[i].Unlock()
	}
}

// Range calls fn for every entry until it returns false, one shard at a
// time under its read lock; fn must not change the registry.
func (r *quoteRegistry) Range(fn func(id engine.QuoteID, ref *quoteRef) bool) {
	r.RangeRefs(func(ref *quoteRef) bool { return fn(refID(ref), ref) })
}

// RangeRefs is Range without the ids (each a read through the entry's
// view: a cache miss at a million quotes).
func (r *quoteRegistry) RangeRefs(fn func(ref *quoteRef) bool) {
	for i := range r.locks {
		r.locks[i].RLock()
		for ref := range r.index.ValuesIn(i) {
			if !fn(ref) {
				r.locks[i].RUnlock()
				return
			}
		}
		r.locks[i].RUnlock()
	}
}

// shardLock is shard i's lock, for a bulk load's writes
// (hashindex.Writes.Apply; a start's, startRegistering).
func (r *quoteRegistry) shardLock(i int) sync.Locker { return &r.locks[i] }
