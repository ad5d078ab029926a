package engine

import (
	"encoding/binary"
	"iter"
	"math/bits"

	"github.com/oja-exchange/oja/internal/hashindex"
)

// QuoteIndex is State.Quotes: the state's quotes by id, in one flat
// hashindex.Table (open addressing, linear probing). A replay's hottest
// lookup is the miss that proves a new quote's id unused, which the table
// answers from one slot, usually one cache line, where a Go map follows
// three dependent pointers; a hit compares the quote's own id (the quote
// is read next anyway). The Table's doc has the measurements.
//
// Not safe for concurrent use.
type QuoteIndex struct {
	table hashindex.Table[*Quote]
	// hashOf replaces the hash in tests that need collisions.
	hashOf func(QuoteID) uint64
}

// NewQuoteIndex returns an empty index sized for n quotes.
func NewQuoteIndex(n int) *QuoteIndex {
	x := &QuoteIndex{}
	x.table.Init(n)
	return x
}

func (x *QuoteIndex) hash(id QuoteID) uint64 {
	if x.hashOf != nil {
		return x.hashOf(id)
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
	return p ^ q
}

func quoteIs(id QuoteID) func(*Quote) bool { return func(q *Quote) bool { return q.ID == id } }

// Len is the number of quotes held.
func (x *QuoteIndex) Len() int { return x.table.Len() }

// Get returns the quote with id, nil if none.
func (x *QuoteIndex) Get(id QuoteID) *Quote {
	h := x.hash(id)
	q, ok := x.table.First(h)
	if ok && q.ID != id {
		q, _ = x.table.Get(h, quoteIs(id))
	}
	return q
}

// readAhead queues id's slot for the next warm.
func (x *QuoteIndex) readAhead(id QuoteID) { x.table.ReadAhead(x.hash(id)) }

// warm reads the slots readAhead queued, so that lookups made next find
// them in the cache (State.Warm).
func (x *QuoteIndex) warm() { x.table.Warm() }

// Put adds q under its id, and reports false, changing nothing, if the
// index already holds a quote with that id.
func (x *QuoteIndex) Put(q *Quote) bool { return x.table.Add(x.hash(q.ID), q, quoteIs(q.ID)) }

// Delete removes the quote with id, and reports whether there was one.
func (x *QuoteIndex) Delete(id QuoteID) bool { return x.table.Delete(x.hash(id), quoteIs(id)) }

// All yields every quote held, in the table's order (which depends on the
// order of the puts and forgets: no order a caller may rely on). The
// caller must not change the index while it runs.
func (x *QuoteIndex) All() iter.Seq[*Quote] { return x.table.All() }
