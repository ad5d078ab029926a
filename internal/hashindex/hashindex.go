// Package hashindex is hash tables for a million entries that hold their
// own key: Table, a flat open-addressing table keyed by a 64-bit hash the
// caller computes, and Index, a map keyed by a seeded hash of the key and
// split into shards of one Table each by the hash's top bits, so that a
// bulk load can fill one small table at a time (Writes) and a concurrent
// user can lock one shard at a time.
//
// A value is found by its key's hash and then checked against the key it
// holds (keyOf): a slot costs 8 bytes of hash instead of the key (a
// 16-byte quote id, a 48-byte Idempotency-Key scope). Keys whose hashes
// are equal sit in one run of slots.
//
// The engine's quote table (State.Quotes) is a Table; the engine's
// Idempotency-Key index and the actors' quote registry are each an Index.
// Neither is safe for concurrent use; the registry locks each shard itself
// (Shard, the *In methods).
package hashindex

import (
	"hash/maphash"
	"iter"
	"math/bits"
	"sync"
)

// Shards is the number of shards: a power of two, indexed by the top bits
// of a key's hash.
const Shards = 64

const (
	shardBits  = 6 // log2(Shards)
	shardShift = 64 - shardBits
)

// Shard is the shard of a key whose hash is h.
func Shard(h uint64) int { return int(h >> shardShift) }

// Index maps keys to values that hold them.
type Index[K comparable, V comparable] struct {
	seed  maphash.Seed
	keyOf func(V) K
	// HashOf replaces the hash in a test that needs collisions; nil: the
	// seeded hash of the key.
	HashOf func(K) uint64
	shards [Shards]shard[V]
}

type shard[V comparable] struct {
	table Table[V]
	hint  int // the table's size when made
}

// New returns an empty index sized for about n values, each holding the
// key keyOf reads from it. keyOf must return the same key for a value as
// long as the index holds it.
func New[K comparable, V comparable](n int, keyOf func(V) K) *Index[K, V] {
	x := &Index[K, V]{seed: maphash.MakeSeed(), keyOf: keyOf}
	for i := range x.shards {
		x.shards[i].hint = n / Shards
	}
	return x
}

// Hash is k's hash (Shard(Hash(k)) is its shard).
func (x *Index[K, V]) Hash(k K) uint64 {
	if x.HashOf != nil {
		return x.HashOf(k)
	}
	return maphash.Comparable(x.seed, k)
}

// inShard is the hash h as its shard's table takes it: the bits below the
// shard's, which all of a shard's hashes share, on top.
func inShard(h uint64) uint64 { return bits.RotateLeft64(h, shardBits) }

// Get returns k's value.
func (x *Index[K, V]) Get(k K) (V, bool) { return x.GetHashed(x.Hash(k), k) }

// GetHashed is Get for a key whose hash is h.
func (x *Index[K, V]) GetHashed(h uint64, k K) (V, bool) {
	return x.shards[Shard(h)].table.Get(inShard(h), func(v V) bool { return x.keyOf(v) == k })
}

// Put makes v its key's value.
func (x *Index[K, V]) Put(v V) { x.PutHashed(x.Hash(x.keyOf(v)), v) }

// PutHashed is Put for a value whose key's hash is h.
func (x *Index[K, V]) PutHashed(h uint64, v V) {
	sh := &x.shards[Shard(h)]
	if sh.table.slots == nil {
		sh.table.Init(sh.hint)
	}
	// NB: v's key is read only when a held value's hash is h, so that a
	// bulk load (whose values are anywhere in memory) misses the cache
	// for it only then.
	sh.table.Set(inShard(h), v, func(held V) bool { return x.keyOf(held) == x.keyOf(v) })
}

// Forget removes v if it is its key's value (a key given a newer value
// since keeps it).
func (x *Index[K, V]) Forget(v V) { x.ForgetHashed(x.Hash(x.keyOf(v)), v) }

// ForgetHashed is Forget for a value whose key's hash is h.
func (x *Index[K, V]) ForgetHashed(h uint64, v V) {
	x.shards[Shard(h)].table.Delete(inShard(h), func(held V) bool { return held == v })
}

// DeleteIf removes every value drop is true for.
func (x *Index[K, V]) DeleteIf(drop func(V) bool) {
	for i := range x.shards {
		x.DeleteIfIn(i, drop)
	}
}

// DeleteIfIn is DeleteIf in shard i alone.
func (x *Index[K, V]) DeleteIfIn(i int, drop func(V) bool) { x.shards[i].table.DeleteIf(drop) }

// Len is the number of values.
func (x *Index[K, V]) Len() int {
	n := 0
	for i := range x.shards {
		n += x.shards[i].table.Len()
	}
	return n
}

// All is every key and its value, in no order.
func (x *Index[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for i := range x.shards {
			for v := range x.ValuesIn(i) {
				if !yield(x.keyOf(v), v) {
					return
				}
			}
		}
	}
}

// ValuesIn is every value in shard i, without reading their keys (a
// cache miss each, for values that hold them behind a pointer).
func (x *Index[K, V]) ValuesIn(i int) iter.Seq[V] { return x.shards[i].table.All() }

// Writes are a bulk load's writes to an index — values put, values
// forgotten — kept sorted by shard in the order made, then applied one
// shard after the other on two goroutines (Apply). A shard's table at a
// million values is half a MiB and stays in the core's cache while it
// fills, where the writes in the order made miss it once each.
type Writes[K comparable, V comparable] struct {
	x *Index[K, V]
	// pending are each shard's writes in chunks of writeChunk: appended
	// to without copying what is there (a doubling slice's copies were
	// a tenth of a million-quote replay's CPU).
	pending [Shards][][]write[V]
}

// writeChunk is how many writes a chunk of a shard's pending writes holds.
const writeChunk = 1024

type write[V any] struct {
	h      uint64
	v      V
	forget bool
}

// Writes starts a bulk load's writes to x.
func (x *Index[K, V]) Writes() *Writes[K, V] { return &Writes[K, V]{x: x} }

// Put keeps a Put of v.
func (w *Writes[K, V]) Put(v V) { w.add(v, false) }

// Forget keeps a Forget of v.
func (w *Writes[K, V]) Forget(v V) { w.add(v, true) }

func (w *Writes[K, V]) add(v V, forget bool) {
	h := w.x.Hash(w.x.keyOf(v))
	chunks := &w.pending[Shard(h)]
	if n := len(*chunks); n == 0 || len((*chunks)[n-1]) == writeChunk {
		*chunks = append(*chunks, make([]write[V], 0, writeChunk))
	}
	last := &(*chunks)[len(*chunks)-1]
	*last = append(*last, write[V]{h, v, forget})
}

// Apply makes every write kept and forgets them. The writes to one key
// are in one shard, in order, so the index ends as the writes in the
// order made would leave it. lock, if not nil, is each shard's lock,
// held while the shard's writes apply.
func (w *Writes[K, V]) Apply(lock func(shard int) sync.Locker) {
	var wg sync.WaitGroup
	for half := range 2 {
		wg.Go(func() {
			for i := half; i < Shards; i += 2 {
				if lock != nil {
					lock(i).Lock()
				}
				for _, chunk := range w.pending[i] {
					for _, op := range chunk {
						if op.forget {
							w.x.ForgetHashed(op.h, op.v)
						} else {
							w.x.PutHashed(op.h, op.v)
						}
					}
				}
				if lock != nil {
					lock(i).Unlock()
				}
				w.pending[i] = nil
			}
		})
	}
	wg.Wait()
}
