package actors

import (
	"sync"

	"github.com/oja-exchange/oja/engine"
)

// quoteRegistryShards is the number of shards of the quote registry: a
// power of two, indexed by a byte of the (random) quote id.
const quoteRegistryShards = 64

// quoteRegistry maps every known quote to its registry entry. Sharded
// plain maps under read-write locks rather than a sync.Map: a start
// registers a million quotes in one pass into presized shards (sync.Map's
// trie inserts were a quarter of actors.Start at 1M quotes), and reads
// take one uncontended read lock.
type quoteRegistry struct {
	shards [quoteRegistryShards]struct {
		mu sync.RWMutex
		m  map[engine.QuoteID]*quoteRef
	}
}

// init presizes the shards for about n quotes.
func (r *quoteRegistry) init(n int) {
	for i := range r.shards {
		r.shards[i].m = make(map[engine.QuoteID]*quoteRef, n/quoteRegistryShards)
	}
}

func (r *quoteRegistry) shard(id engine.QuoteID) int { return int(id[15]) % quoteRegistryShards }

func (r *quoteRegistry) Load(id engine.QuoteID) (*quoteRef, bool) {
	sh := &r.shards[r.shard(id)]
	sh.mu.RLock()
	ref, ok := sh.m[id]
	sh.mu.RUnlock()
	return ref, ok
}

func (r *quoteRegistry) Store(id engine.QuoteID, ref *quoteRef) {
	sh := &r.shards[r.shard(id)]
	sh.mu.Lock()
	sh.m[id] = ref
	sh.mu.Unlock()
}

// DeleteIf removes every entry for which drop is true; drop runs under
// the entry's shard lock and must not use the registry.
func (r *quoteRegistry) DeleteIf(drop func(id engine.QuoteID, ref *quoteRef) bool) {
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		for id, ref := range sh.m {
			if drop(id, ref) {
				delete(sh.m, id)
			}
		}
		sh.mu.Unlock()
	}
}

// Range calls fn for every entry until it returns false, one shard at a
// time under its read lock; fn must not change the registry.
func (r *quoteRegistry) Range(fn func(id engine.QuoteID, ref *quoteRef) bool) {
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		for id, ref := range sh.m {
			if !fn(id, ref) {
				sh.mu.RUnlock()
				return
			}
		}
		sh.mu.RUnlock()
	}
}
