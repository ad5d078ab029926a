package actors

import (
	"hash/maphash"
	"sync"

	"github.com/oja-exchange/oja/engine"
)

// quoteRegistryShards is the number of shards of the quote registry: a
// power of two, indexed by the top bits of the quote id's hash.
const quoteRegistryShards = 64

// quoteRegistry maps every known quote to its registry entry. Sharded
// plain maps under read-write locks rather than a sync.Map: a start
// registers a million quotes in one pass into presized shards (sync.Map's
// trie inserts were a quarter of actors.Start at 1M quotes), and reads
// take one uncontended read lock.
//
// A shard's map is keyed by a 64-bit hash of the quote id rather than the
// id: a slot is 16 bytes instead of 24, and at a million quotes (tables
// half full, Go's maps growing in powers of two) that took ojabench's
// memory section from 602 to 583 MB of heap in use. The entry's view
// holds the id, so a lookup checks it; the rare id whose hash another id
// already holds is kept in collided, keyed by the id itself.
type quoteRegistry struct {
	seed   maphash.Seed
	shards [quoteRegistryShards]registryShard
	// hashOf replaces the hash in a test that needs collisions; nil: the
	// seeded hash of the id.
	hashOf func(engine.QuoteID) uint64
}

type registryShard struct {
	mu       sync.RWMutex
	m        map[uint64]*quoteRef
	collided map[engine.QuoteID]*quoteRef
}

// init presizes the shards for about n quotes.
func (r *quoteRegistry) init(n int) {
	r.seed = maphash.MakeSeed()
	for i := range r.shards {
		r.shards[i].m = make(map[uint64]*quoteRef, n/quoteRegistryShards)
		r.shards[i].collided = nil
	}
}

// locate is id's hash and its shard.
func (r *quoteRegistry) locate(id engine.QuoteID) (uint64, *registryShard) {
	var h uint64
	if r.hashOf != nil {
		h = r.hashOf(id)
	} else {
		h = maphash.Comparable(r.seed, id)
	}
	return h, &r.shards[h>>58] // 58 = 64 - log2(quoteRegistryShards)
}

func (r *quoteRegistry) Load(id engine.QuoteID) (*quoteRef, bool) {
	h, sh := r.locate(id)
	sh.mu.RLock()
	ref, ok := sh.m[h]
	if ok && ref.view.Load().ID != id {
		ref, ok = sh.collided[id]
	}
	sh.mu.RUnlock()
	return ref, ok
}

// Store enters ref, whose view must be id's quote.
func (r *quoteRegistry) Store(id engine.QuoteID, ref *quoteRef) {
	h, sh := r.locate(id)
	sh.mu.Lock()
	sh.store(h, ref)
	sh.mu.Unlock()
}

// store enters ref under hash h, its id's. REQUIRES: sh.mu held.
func (sh *registryShard) store(h uint64, ref *quoteRef) {
	held, ok := sh.m[h]
	if !ok {
		sh.m[h] = ref
		return
	}
	// NB: the id is read only here, so that a bulk store (whose refs'
	// quotes are anywhere in memory) misses the cache for it only when
	// the hash's slot is held.
	id := ref.view.Load().ID
	if held.view.Load().ID == id {
		sh.m[h] = ref
		return
	}
	if sh.collided == nil {
		sh.collided = make(map[engine.QuoteID]*quoteRef)
	}
	sh.collided[id] = ref
}

// bulkStore registers many refs at once (a start's), as Store would one
// after the other: it sorts them by shard first, then fills one shard at a
// time on two goroutines. A shard's map at a million quotes is a few
// hundred KB and stays in the core's cache while it fills, where the refs
// in quote order missed the cache once each, in any of 64 maps.
type bulkStore struct {
	r       *quoteRegistry
	pending [quoteRegistryShards][]hashedRef
}

type hashedRef struct {
	h   uint64
	ref *quoteRef
}

// add sorts refs into their shards' pending lists.
func (b *bulkStore) add(refs []quoteRef) {
	for i := range refs {
		ref := &refs[i]
		h, _ := b.r.locate(ref.view.Load().ID)
		shard := h >> 58
		b.pending[shard] = append(b.pending[shard], hashedRef{h, ref})
	}
}

// flush stores every pending ref, in the order added within each shard
// (an id's later ref replaces its earlier one, as Store does).
func (b *bulkStore) flush() {
	var wg sync.WaitGroup
	for half := range 2 {
		wg.Go(func() {
			for i := half; i < quoteRegistryShards; i += 2 {
				sh := &b.r.shards[i]
				sh.mu.Lock()
				for _, p := range b.pending[i] {
					sh.store(p.h, p.ref)
				}
				sh.mu.Unlock()
				b.pending[i] = nil
			}
		})
	}
	wg.Wait()
}

// DeleteIf removes every entry for which drop is true; drop runs under
// the entry's shard lock and must not use the registry. An id whose slot
// is freed while a colliding id waits in collided moves into the slot, so
// that collided only ever holds ids whose slot is taken.
func (r *quoteRegistry) DeleteIf(drop func(id engine.QuoteID, ref *quoteRef) bool) {
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		for h, ref := range sh.m {
			if drop(ref.view.Load().ID, ref) {
				delete(sh.m, h)
			}
		}
		for id, ref := range sh.collided {
			if drop(id, ref) {
				delete(sh.collided, id)
				continue
			}
			if h, _ := r.locate(id); sh.m[h] == nil {
				sh.m[h] = ref
				delete(sh.collided, id)
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
		for _, ref := range sh.m {
			if !fn(ref.view.Load().ID, ref) {
				sh.mu.RUnlock()
				return
			}
		}
		for id, ref := range sh.collided {
			if !fn(id, ref) {
				sh.mu.RUnlock()
				return
			}
		}
		sh.mu.RUnlock()
	}
}
