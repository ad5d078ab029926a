package engine

import (
	"encoding/binary"
	"iter"
	"math/bits"

	"github.com/oja-exchange/oja/internal/prefault"
)

// QuoteIndex is State.Quotes: the state's quotes by id, in one flat table
// of {hash, quote} slots, found by linear probing from the slot the hash's
// top bits name (open addressing; a delete shifts the slots after it back
// instead of leaving a tombstone).
//
// It replaces a Go map because a replay's hottest lookup is the miss that
// proves a new quote's id unused. In a Go map of a million quotes that miss
// follows three dependent pointers (directory, table, group) and then
// reads the group's control word and slots: about 330 ns a lookup on the
// development machine, which put the check that a created quote is new at
// 0.45 s of a 1.66 s replay of ojabench's 1M log. Here it reads one slot,
// usually one cache line, and a hit compares the quote's own id (the
// quote is read next anyway).
//
// The table stays at most three quarters full and doubles past that, so an
// unsuccessful probe reads a few adjacent slots; NewQuoteIndex(n) sizes it
// for n quotes without a doubling. A slot is 16 bytes: a million quotes
// take 32 MiB (2^21 slots); a Go map of a million 16-byte ids to pointers
// takes 53 MiB of heap (runtime.MemStats, presized or not).
//
// Not safe for concurrent use.
type QuoteIndex struct {
	slots []quoteSlot
	shift uint8 // 64 - log2(len(slots)): a hash's top bits are its home slot
	n     int
	// ahead are the hashes queued for warm; warmed sums what warm reads,
	// so that the reads are kept.
	ahead  []uint64
	warmed uint64
	// hashOf replaces the hash in tests that need collisions.
	hashOf func(QuoteID) uint64
}

type quoteSlot struct {
	h uint64 // the id's hash, never 0; 0: the slot is free
	q *Quote
}

// quoteIndexMin is the fewest slots a table has.
const quoteIndexMin = 8

// NewQuoteIndex returns an empty index sized for n quotes.
func NewQuoteIndex(n int) *QuoteIndex {
	x := &QuoteIndex{}
	x.resize(slotsFor(n))
	return x
}

// slotsFor is the table length that holds n quotes at most three quarters
// full: a power of two.
func slotsFor(n int) int {
	need := max(quoteIndexMin, (n*4+2)/3)
	return 1 << bits.Len(uint(need-1))
}

func (x *QuoteIndex) hash(id QuoteID) uint64 {
	if x.hashOf != nil {
		return x.hashOf(id) | 1
	}
	// One 64×64→128-bit multiply of the id's halves, each mixed with a
	// seed first (wyhash's mum): a few instructions that inline, where
	// maphash's generic Comparable is a call chain. Quote ids are random
	// UUIDs the service makes (tests use counters, which this spreads as
	// well): nobody else chooses them, so fixed constants (wyhash's) do
	// as a secret seed would, and the engine takes no randomness.
	lo := binary.LittleEndian.Uint64(id[:8]) ^ 0xa0761d6478bd642f
	hi := binary.LittleEndian.Uint64(id[8:]) ^ 0xe7037ed1a0b428db
	p, q := bits.Mul64(lo, hi)
	return (p ^ q) | 1
}

func (x *QuoteIndex) home(h uint64) int { return int(h >> x.shift) }

// Len is the number of quotes held.
func (x *QuoteIndex) Len() int { return x.n }

// Get returns the quote with id, nil if none.
func (x *QuoteIndex) Get(id QuoteID) *Quote {
	if x.n == 0 {
		return nil
	}
	h, mask := x.hash(id), len(x.slots)-1
	for i := x.home(h); ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.h == h && s.q.ID == id {
			return s.q
		}
		if s.h == 0 {
			return nil
		}
	}
}

// readAhead queues id's slot for the next warm.
func (x *QuoteIndex) readAhead(id QuoteID) { x.ahead = append(x.ahead, x.hash(id)) }

// warm reads the slots readAhead queued, where their probes start, so that
// lookups made next find them in the cache (State.Warm). The loop only
// loads: its iterations do not depend on each other's loads.
func (x *QuoteIndex) warm() {
	if len(x.slots) > 0 {
		var sum uint64
		for _, h := range x.ahead {
			sum += x.slots[x.home(h)].h
		}
		x.warmed += sum
	}
	x.ahead = x.ahead[:0]
}

// Put adds q under its id, and reports false, changing nothing, if the
// index already holds a quote with that id.
func (x *QuoteIndex) Put(q *Quote) bool {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.resize(2 * max(len(x.slots), quoteIndexMin/2))
	}
	h, mask := x.hash(q.ID), len(x.slots)-1
	for i := x.home(h); ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.h == 0 {
			*s = quoteSlot{h, q}
			x.n++
			return true
		}
		if s.h == h && s.q.ID == q.ID {
			return false
		}
	}
}

// Delete removes the quote with id, and reports whether there was one.
func (x *QuoteIndex) Delete(id QuoteID) bool {
	if x.n == 0 {
		return false
	}
	h, mask := x.hash(id), len(x.slots)-1
	i := x.home(h)
	for ; ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.h == h && s.q.ID == id {
			break
		}
		if s.h == 0 {
			return false
		}
	}
	// Backward shift: each slot after the gap whose probe from its home
	// passed the gap moves into it, and its own slot becomes the gap, up
	// to the first free slot. A lookup never meets a hole it cannot
	// explain.
	for j := i; ; {
		j = (j + 1) & mask
		s := x.slots[j]
		if s.h == 0 {
			break
		}
		if (j-x.home(s.h))&mask >= (j-i)&mask {
			x.slots[i] = s
			i = j
		}
	}
	x.slots[i] = quoteSlot{}
	x.n--
	return true
}

// All yields every quote held, in the table's order (which depends on the
// order of the puts and forgets: no order a caller may rely on). The caller must not change
// the index while it runs.
func (x *QuoteIndex) All() iter.Seq[*Quote] {
	return func(yield func(*Quote) bool) {
		for i := range x.slots {
			if s := &x.slots[i]; s.h != 0 && !yield(s.q) {
				return
			}
		}
	}
}

// resize moves the quotes to a table of length slots (a power of two) by
// the hashes the slots hold: no quote is read.
func (x *QuoteIndex) resize(slots int) {
	old := x.slots
	x.slots = make([]quoteSlot, slots)
	prefault.Slice(x.slots) // a load fills it
	x.shift = uint8(64 - bits.TrailingZeros(uint(slots)))
	mask := slots - 1
	for _, s := range old {
		if s.h == 0 {
			continue
		}
		i := x.home(s.h)
		for x.slots[i].h != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = s
	}
}
