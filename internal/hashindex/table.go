package hashindex

import (
	"iter"
	"math/bits"

	"github.com/oja-exchange/oja/internal/prefault"
)

// Table is a flat table of {hash, value} slots for values that hold their
// own key, found by linear probing from the slot the hash scales to (its
// home: the high word of hash × length, so that any length will do and
// slots run in the order of their hashes; open addressing; a delete
// shifts the slots after it back instead of leaving a tombstone). The
// caller hashes the key and says which held value is the one it means
// (is): values whose hashes are equal simply sit in the same run of slots.
//
// It replaces a Go map where a lookup's cost matters: a miss in a Go map
// of a million entries follows three dependent pointers (directory, table,
// group) and then reads the group's control word and slots — about 330 ns
// on the development machine, which put the check that a replayed quote's
// id is new at 0.45 s of a 1.66 s replay of ojabench's 1M log. Here it
// reads one slot, usually one cache line.
//
// The table stays at most three quarters full and grows by half past that,
// so an unsuccessful probe reads a few adjacent slots and a grown table is
// half to three quarters full (a million values grown to take 1.51 M
// slots); Init(n) sizes it for n values two thirds full, so that they fit
// without growing. A slot is 16 bytes for a pointer value: a million
// values take 24 MB sized by Init (1.5 M slots); a Go map of a million
// 16-byte keys to pointers takes 53 MiB of heap (runtime.MemStats,
// presized or not).
//
// The zero Table is empty and ready. Not safe for concurrent use.
type Table[V comparable] struct {
	slots []slot[V]
	n     int
	// ahead are the hashes queued for Warm; warmed sums what Warm reads,
	// so that the reads are kept.
	ahead  []uint64
	warmed uint64
}

type slot[V comparable] struct {
	h uint64 // the key's hash with its low bit set: never 0; 0: the slot is free
	v V
}

// tableMin is the fewest slots a table has.
const tableMin = 8

// Init empties t and sizes it for n values, two thirds full.
func (t *Table[V]) Init(n int) {
	*t = Table[V]{}
	t.resize(slotsFor(n))
}

// slotsFor is the table length that holds n values two thirds full.
func slotsFor(n int) int { return max(tableMin, n+(n+1)/2) }

// home is the slot where the probe for hash h starts.
func (t *Table[V]) home(h uint64) int {
	hi, _ := bits.Mul64(h, uint64(len(t.slots)))
	return int(hi)
}

// next is the slot after i, the first after the last.
func (t *Table[V]) next(i int) int {
	if i++; i == len(t.slots) {
		return 0
	}
	return i
}

// Len is the number of values held.
func (t *Table[V]) Len() int { return t.n }

// find is the slot holding the value of hash h (stored form) that is is
// true for, or the free slot that ends its run, and whether it was found.
// The table must have slots.
func (t *Table[V]) find(h uint64, is func(V) bool) (int, bool) {
	for i := t.home(h); ; i = t.next(i) {
		if s := &t.slots[i]; s.h == h && is(s.v) {
			return i, true
		} else if s.h == 0 {
			return i, false
		}
	}
}

// Get returns the value of hash h that is is true for.
func (t *Table[V]) Get(h uint64, is func(V) bool) (v V, ok bool) {
	if t.n == 0 {
		return v, false
	}
	if i, ok := t.find(h|1, is); ok {
		return t.slots[i].v, true
	}
	return v, false
}

// First returns the first value of hash h, and false if the table holds
// none: Get without is, for a caller that checks the value's key itself
// and asks Get when it is another key of the same hash (the rare case;
// First is a direct call where is is an indirect one per slot read).
func (t *Table[V]) First(h uint64) (v V, ok bool) {
	h |= 1
	for i := t.home(h); t.n > 0; i = t.next(i) {
		if s := &t.slots[i]; s.h == h {
			return s.v, true
		} else if s.h == 0 {
			break
		}
	}
	return v, false
}

// Add adds v under hash h, and reports false, changing nothing, if the
// table holds a value of hash h that is is true for.
func (t *Table[V]) Add(h uint64, v V, is func(V) bool) bool {
	t.grow()
	i, found := t.find(h|1, is)
	if found {
		return false
	}
	t.slots[i] = slot[V]{h | 1, v}
	t.n++
	return true
}

// Set makes v the value of hash h in place of the one is is true for, or
// adds it.
func (t *Table[V]) Set(h uint64, v V, is func(V) bool) {
	t.grow()
	i, found := t.find(h|1, is)
	if !found {
		t.n++
	}
	t.slots[i] = slot[V]{h | 1, v}
}

func (t *Table[V]) grow() {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(max(len(t.slots)+len(t.slots)/2, tableMin))
	}
}

// Delete removes the value of hash h that is is true for, and reports
// whether there was one.
func (t *Table[V]) Delete(h uint64, is func(V) bool) bool {
	if t.n == 0 {
		return false
	}
	i, found := t.find(h|1, is)
	if !found {
		return false
	}
	// Backward shift: each slot after the gap whose probe from its home
	// passed the gap moves into it, and its own slot becomes the gap, up
	// to the first free slot. A lookup never meets a hole it cannot
	// explain.
	for j := i; ; {
		j = t.next(j)
		s := t.slots[j]
		if s.h == 0 {
			break
		}
		if t.distance(t.home(s.h), j) >= t.distance(i, j) {
			t.slots[i] = s
			i = j
		}
	}
	t.slots[i] = slot[V]{}
	t.n--
	return true
}

// distance is how many slots a probe moves from slot from to slot to,
// past the last slot to the first if it must.
func (t *Table[V]) distance(from, to int) int {
	if d := to - from; d >= 0 {
		return d
	}
	return to - from + len(t.slots)
}

// DeleteIf removes every value drop is true for, calling it once for each
// value held.
func (t *Table[V]) DeleteIf(drop func(V) bool) {
	var dropped []slot[V]
	for _, s := range t.slots {
		if s.h != 0 && drop(s.v) {
			dropped = append(dropped, s)
		}
	}
	for _, d := range dropped {
		t.Delete(d.h, func(v V) bool { return v == d.v })
	}
}

// All yields every value held, in the table's order (which depends on the
// order of the writes: no order a caller may rely on). The caller must not
// change the table while it runs.
func (t *Table[V]) All() iter.Seq[V] {
	return func(yield func(V) bool) {
		for i := range t.slots {
			if s := &t.slots[i]; s.h != 0 && !yield(s.v) {
				return
			}
		}
	}
}

// ReadAhead queues the slot of hash h for the next Warm.
func (t *Table[V]) ReadAhead(h uint64) { t.ahead = append(t.ahead, h) }

// Warm reads the slots ReadAhead queued, where their probes start, so that
// lookups made next find them in the cache. The loop only loads: its
// iterations do not depend on each other's loads.
func (t *Table[V]) Warm() {
	if len(t.slots) > 0 {
		var sum uint64
		for _, h := range t.ahead {
			sum += t.slots[t.home(h)].h
		}
		t.warmed += sum
	}
	t.ahead = t.ahead[:0]
}

// resize moves the values to a table of length slots by the hashes the
// slots hold: no value is read.
func (t *Table[V]) resize(slots int) {
	old := t.slots
	t.slots = make([]slot[V], slots)
	prefault.Slice(t.slots) // a load fills it
	for _, s := range old {
		if s.h == 0 {
			continue
		}
		i := t.home(s.h)
		for t.slots[i].h != 0 {
			i = t.next(i)
		}
		t.slots[i] = s
	}
}
