package actors

import (
	"math/bits"

	"github.com/oja-exchange/oja/engine"
)

// Exposure limit (--max-key-share, contract §9 EXPOSURE_LIMIT): the open
// quotes of one API key may reserve at most a share of its pair's pool
// liquidity in its mode, so one key cannot hold all of a pair's liquidity
// for a TTL while every other partner is refused.
//
// The pair actor decides it, with the reservation itself (one writer per
// book, so the check and the reservation are one step). It keeps, per key,
// the destination amount its open quotes reserve, and the total all open
// quotes reserve; the pair's liquidity is what is still free in its active
// pools plus that total. A key's reservation grows when the pair reserves a
// quote and shrinks when the quote's outcome releases or settles its slices
// (engine.RouteOutcome's key part). It is a policy, not state: nothing is
// logged for it, and a start rebuilds it from the open quotes.

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
