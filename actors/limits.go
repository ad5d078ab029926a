package actors

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/oja-exchange/oja/engine"
)

// A key's limits on reserving liquidity, both decided by the pair actor
// with the reservation itself (one writer per book, so the checks and the
// reservation are one step), and both released by it when the quote's
// outcome releases or settles its slices (engine.RouteOutcome's key part,
// bookOutcome), or when its create failed to append:
//
//   - Open quotes (--max-open-quotes, spec §13): one API key may hold at
//     most so many open quotes, across its pairs (openQuotes, shared by
//     the pair actors).
//   - Exposure (--max-key-share, spec §9 EXPOSURE_LIMIT): the open
//     quotes of one API key may reserve at most a share of its pair's pool
//     liquidity in its mode, so one key cannot hold all of a pair's
//     liquidity for a TTL while every other partner is refused (exposure,
//     one per pair actor).
//
// Neither is state: nothing is logged for them, and a start rebuilds both
// from the open quotes.

// openQuotes counts each API key's open quotes across its pairs.
type openQuotes struct {
	max   int64    // 0: unlimited
	byKey sync.Map // engine.KeyID → *atomic.Int64
}

func (o *openQuotes) counter(key engine.KeyID) *atomic.Int64 {
	if v, ok := o.byKey.Load(key); ok {
		return v.(*atomic.Int64)
	}
	v, _ := o.byKey.LoadOrStore(key, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// claim counts one more open quote of key, unless that would pass the cap.
func (o *openQuotes) claim(key engine.KeyID) bool {
	c := o.counter(key)
	if n := c.Add(1); o.max > 0 && n > o.max {
		c.Add(-1)
		return false
	}
	return true
}

// release counts one open quote of key less.
func (o *openQuotes) release(key engine.KeyID) { o.counter(key).Add(-1) }

// count is key's open quotes.
func (o *openQuotes) count(key engine.KeyID) int {
	if v, ok := o.byKey.Load(key); ok {
		return int(v.(*atomic.Int64).Load())
	}
	return 0
}

// The exposure: a pair actor keeps, per key, the destination amount its
// open quotes reserve, and the total all open quotes reserve; the pair's
// liquidity is what is still free in its active pools plus that total.

// ShareScale is the unit of Config.MaxKeyShare: parts per million.
const ShareScale = 1_000_000

// ExposureLimit is the refusal's detail: the limit and the key's figures,
// in the pair's destination currency.
type ExposureLimit struct {
	Pair      engine.Pair
	MaxShare  uint32 // parts per million
	Reserved  engine.Amount
	Requested engine.Amount
}

// exposure is a pair actor's per-key reservations.
type exposure struct {
	maxShare uint32 // parts per million; 0 or ≥ ShareScale: no limit
	byKey    map[engine.KeyID]engine.Amount
	total    engine.Amount // all open quotes of the book
}

func newExposure(maxShare uint32) exposure {
	return exposure{maxShare: maxShare, byKey: make(map[engine.KeyID]engine.Amount)}
}

func (x *exposure) add(key engine.KeyID, amount engine.Amount) {
	x.total += amount
	if v := x.byKey[key] + amount; v != 0 {
		x.byKey[key] = v
	} else {
		delete(x.byKey, key)
	}
}

// refuse reports whether key may not reserve requested more, given the
// liquidity still free in the book's active pools.
func (x *exposure) refuse(key engine.KeyID, requested engine.Amount, book *engine.Book) bool {
	if x.maxShare == 0 || x.maxShare >= ShareScale {
		return false
	}
	liquidity := uint64(x.total)
	for _, e := range book.Entries() {
		if e.Active && e.Available > 0 {
			liquidity += uint64(e.Available)
		}
	}
	// (reserved + requested) × ShareScale > maxShare × liquidity, in 128 bits.
	wantHi, wantLo := bits.Mul64(uint64(x.byKey[key]+requested), ShareScale)
	capHi, capLo := bits.Mul64(uint64(x.maxShare), liquidity)
	return wantHi > capHi || wantHi == capHi && wantLo > capLo
}
