package engine

// The order book of one pair, and allocation (spec §5).
//
// A Book holds the pools of one pair and one mode as matching sees them
// (BookEntry: rate, when it was set, status, available destination liquidity)
// in price-time priority order:
//
//  1. higher Rate first (a higher rate is better for the partner);
//  2. equal rates: earlier RateSetAt first (the pool that offered the rate first);
//  3. then Pool id bytes ascending, so that the order is total and replay of the
//     same events yields the same order, byte for byte.
//
// Invariants (checked by the tests after every mutation):
//
//   - entries is sorted by that order and index[entries[i].Pool] == i for every i;
//   - every entry's Available is >= 0 and its Rate is > 0.
//
// Ownership: a Book is not safe for concurrent use. One actor (the pair's) owns
// it; Allocate is pure. The live caller Reserves the slices at once, before the
// QuoteCreated event that carries them is durable, so that the next quote
// cannot be matched against liquidity already promised; it gives them back
// (AddAvailable) if the append fails, and answers the partner only after the
// event is durable.
// Replay re-applies the recorded slices and never re-runs matching against a
// book that may differ.
//
// Allocation walks the entries in priority order and fills greedily (spec
// §5). A pool is eligible when it is active, has Available > 0, its Rate is at
// least the partner's proposed rate, and (for a listing quote) it is the named
// pool. Rounding favours the pool (money.go): with DirectionSource each slice's
// destination is floor(source × rate) and the slices' sources sum exactly to
// the amount; with DirectionDestination each slice's source is
// ceil(destination ÷ rate) and the slices' destinations sum exactly to the
// amount. A slice never takes more than its pool's Available, and a slice
// whose destination would round to zero (dust) is skipped. The quote is all or
// nothing: if the walk cannot cover the amount, within SlicesMax slices, the
// result is a refusal and no slice is returned.
//
// Why a sorted slice and integers: the walk touches a few contiguous entries and
// does one or two 128-bit multiply-divides per slice, with no map lookups and no
// allocation (BenchmarkAllocate/pools=8/fill=3: about 50 ns). The rejected
// alternatives: a heap or a tree re-ranks in O(log n) instead of O(n) but makes
// the walk chase pointers, and re-ranking (a rate change) is rare next to
// quotes; decimal.Decimal arithmetic allocates on every operation (money.go:
// the decimal reference allocator takes about 7 µs and 256 allocations for the
// same quote).

import "bytes"

// BookEntry is one pool as matching sees it.
type BookEntry struct {
	Pool      PoolID
	Rate      Rate
	RateSetAt int64  // unix milliseconds when Rate was set; earlier wins ties
	Active    bool   // status active (suspended pools are skipped)
	Available Amount // destination-currency liquidity that may still be reserved
}

// SlicesMax bounds the pools one quote may be split across; a quote that needs
// more is not fillable (ResultInsufficientLiquidity). It bounds the size of a
// QuoteCreated event and of every response that lists allocations.
const SlicesMax = 64

// Slice is one pool's part of an allocation.
type Slice struct {
	Pool        PoolID
	Rate        Rate   // the pool's rate at allocation time
	Source      Amount // source minor units
	Destination Amount // destination minor units (allocatedAmount)
}

// AllocationRequest is what a quote asks of a book.
type AllocationRequest struct {
	Direction Direction // DirectionSource or DirectionDestination
	Amount    Amount    // in the source currency if DirectionSource, else destination
	MinRate   Rate      // the partner's proposed rate: only pools with Rate >= MinRate are eligible
	Only      PoolID    // non-zero: only this pool is eligible (listingId)
}

// AllocationOutcome is the outcome of Book.Allocate.
//
// NB: named AllocationOutcome, not Allocation, because Allocation (event.go) is
// the spec's per-pool allocation record of a created quote.
type AllocationOutcome struct {
	// Result is ResultOK, ResultInsufficientLiquidity or ResultAmountTooSmall.
	Result Result
	// Slices are appended to the caller's buf[:0] in priority order; valid only
	// when Result == ResultOK (otherwise empty).
	Slices []Slice
	// TotalSource and TotalDestination are the sums over Slices (zero unless
	// Result == ResultOK).
	TotalSource      Amount
	TotalDestination Amount
	// Fillable is, on ResultInsufficientLiquidity, how much of the request the
	// greedy walk could cover, in the request's Amount currency.
	Fillable Amount
	// BestRate is the best rate among active pools with Available > 0, ignoring
	// MinRate but honouring Only; HasBestRate is false when there is none.
	BestRate    Rate
	HasBestRate bool
}

// Book is the order book of one pair. Not safe for concurrent use: one owner
// (an actor) at a time. The zero Book is not usable; call NewBook.
type Book struct {
	pair     Pair
	exponent int            // scaleExponent(pair), computed once
	entries  []BookEntry    // priority order
	index    map[PoolID]int // position of each pool in entries
}

// NewBook returns an empty book for p.
func NewBook(p Pair) *Book {
	return &Book{pair: p, exponent: scaleExponent(p), index: make(map[PoolID]int)}
}

// Pair is the pair of b.
func (b *Book) Pair() Pair { return b.pair }

// Len is the number of pools in b, suspended and empty ones included.
func (b *Book) Len() int { return len(b.entries) }

// Entries are b's pools in priority order. The slice is b's own: the caller
// must not modify it, and it is valid only until b's next mutation.
func (b *Book) Entries() []BookEntry { return b.entries }

// Entry is the pool id's entry, if b has it.
func (b *Book) Entry(id PoolID) (BookEntry, bool) {
	position, found := b.index[id]
	if !found {
		return BookEntry{}, false
	}
	return b.entries[position], true
}

// Upsert inserts e, or replaces the entry of the same pool, at its priority
// position.
// REQUIRES: e.Rate > 0, e.Available >= 0.
func (b *Book) Upsert(e BookEntry) {
	if e.Rate.IsZero() || e.Available < 0 {
		assert(false, "Upsert of pool %v with rate %v, available %d", e.Pool, e.Rate, e.Available)
	}
	if position, found := b.index[e.Pool]; found {
		current := &b.entries[position]
		if current.Rate == e.Rate && current.RateSetAt == e.RateSetAt {
			*current = e // same priority: same position
			return
		}
		b.removeAt(position)
	}
	b.insert(e)
}

// Remove removes the pool id from b; removing a pool b does not have is a
// no-op.
func (b *Book) Remove(id PoolID) {
	if position, found := b.index[id]; found {
		b.removeAt(position)
	}
}

// SetRate sets the pool id's rate, set at unix milliseconds at, and re-ranks it.
// REQUIRES: b has the pool; r > 0.
func (b *Book) SetRate(id PoolID, r Rate, at int64) {
	if r.IsZero() {
		assert(false, "SetRate of pool %v to zero", id)
	}
	entry := b.entries[b.position(id)]
	entry.Rate, entry.RateSetAt = r, at
	b.Upsert(entry)
}

// SetActive sets the pool id's status (suspended pools are skipped by
// allocation but keep their place).
// REQUIRES: b has the pool.
func (b *Book) SetActive(id PoolID, active bool) {
	b.entries[b.position(id)].Active = active
}

// AddAvailable adds delta (which may be negative) to the pool id's available
// liquidity: deposits, withdrawals, settlements.
// REQUIRES: b has the pool; the result is >= 0.
func (b *Book) AddAvailable(id PoolID, delta Amount) {
	entry := &b.entries[b.position(id)]
	if entry.Available+delta < 0 {
		assert(false, "pool %v available %d + %d < 0", id, entry.Available, delta)
	}
	entry.Available += delta
}

// Reserve subtracts each slice's Destination from its pool's Available: the
// holds of a created quote.
// REQUIRES: b has every slice's pool, and each pool's Available covers its
// slices (always so for the slices of an Allocate on the same book state).
func (b *Book) Reserve(slices []Slice) {
	for i := range slices {
		slice := &slices[i]
		if slice.Destination < 0 {
			assert(false, "Reserve of negative slice %d", slice.Destination)
		}
		b.AddAvailable(slice.Pool, -slice.Destination)
	}
}

// Release adds each slice's Destination back to its pool's Available: a quote
// cancelled or expired.
// REQUIRES: b has every slice's pool.
func (b *Book) Release(slices []Slice) {
	for i := range slices {
		slice := &slices[i]
		if slice.Destination < 0 {
			assert(false, "Release of negative slice %d", slice.Destination)
		}
		b.AddAvailable(slice.Pool, slice.Destination)
	}
}

// BestRate is the best active pool with Available > 0: its rate, the unix
// milliseconds its rate was set, and its id. ok is false when there is none.
func (b *Book) BestRate() (rate Rate, setAt int64, pool PoolID, ok bool) {
	for i := range b.entries {
		entry := &b.entries[i]
		if entry.Active && entry.Available > 0 {
			return entry.Rate, entry.RateSetAt, entry.Pool, true
		}
	}
	return Rate{}, 0, PoolID{}, false
}

// Allocate splits req across b's pools by price-time priority (spec §5)
// and appends the slices to buf[:0]. It is pure: b is not changed; the caller
// calls Reserve with the slices once the quote is recorded. It does not
// allocate when cap(buf) >= SlicesMax.
//
// The result is, in order of precedence:
//
//  1. ResultOK: the slices cover req.Amount exactly (sources with
//     DirectionSource, destinations with DirectionDestination).
//  2. ResultAmountTooSmall: DirectionSource, some pool is eligible, and the
//     whole amount at the best eligible rate rounds to zero destination.
//  3. ResultInsufficientLiquidity, with Fillable: the eligible pools cannot
//     cover the amount within SlicesMax slices (or a slice's source would
//     exceed AmountMax, which ends the walk).
//
// REQUIRES: 0 < req.Amount <= AmountMax; req.Direction is DirectionSource or
// DirectionDestination.
func (b *Book) Allocate(req AllocationRequest, buf []Slice) AllocationOutcome {
	if req.Amount <= 0 || req.Amount > AmountMax ||
		(req.Direction != DirectionSource && req.Direction != DirectionDestination) {
		assert(false, "Allocate of %d in direction %d", req.Amount, req.Direction)
	}
	outcome := AllocationOutcome{Slices: buf[:0]}
	entries := b.entries
	if !req.Only.IsZero() {
		// One lookup before the walk, never in it: the walk covers one entry.
		position, found := b.index[req.Only]
		if !found {
			position = len(entries)
		}
		entries = entries[position:min(position+1, len(entries))]
	}
	exponent := b.exponent
	made := buf[:0]
	remaining := req.Amount
	var totalSource, totalDestination Amount
	var bestEligible Rate
	eligible := false
	for i := range entries {
		entry := &entries[i]
		if !entry.Active || entry.Available <= 0 {
			continue
		}
		if !outcome.HasBestRate {
			outcome.BestRate, outcome.HasBestRate = entry.Rate, true
		}
		if entry.Rate.Less(req.MinRate) {
			break // every later entry has a rate at most this one's
		}
		if !eligible {
			bestEligible, eligible = entry.Rate, true
		}
		var source, destination Amount
		if req.Direction == DirectionSource {
			// source = min(remaining, MaxSourceWithin(available)); remaining
			// fits exactly when its own destination does, which spares the
			// last slice a division.
			available := min(entry.Available, AmountMax)
			whole, ok := destinationAmount(remaining, entry.Rate, exponent)
			if ok && whole <= available {
				source, destination = remaining, whole
			} else {
				source = maxSourceWithin(available, entry.Rate, exponent)
				if source == 0 {
					continue
				}
				destination, _ = destinationAmount(source, entry.Rate, exponent)
			}
			if destination == 0 {
				continue // dust
			}
		} else {
			destination = min(remaining, entry.Available)
			var ok bool
			source, ok = sourceAmount(destination, entry.Rate, exponent)
			if !ok {
				break // a source above AmountMax cannot be paid: not fillable
			}
		}
		if len(made) == SlicesMax {
			break
		}
		made = append(made, Slice{Pool: entry.Pool, Rate: entry.Rate, Source: source, Destination: destination})
		totalSource += source
		totalDestination += destination
		if req.Direction == DirectionSource {
			remaining -= source
		} else {
			remaining -= destination
		}
		if remaining == 0 {
			outcome.Result = ResultOK
			outcome.Slices = made
			outcome.TotalSource, outcome.TotalDestination = totalSource, totalDestination
			return outcome
		}
	}
	if req.Direction == DirectionSource && eligible {
		// A filled quote has a slice with destination > 0, so this is only
		// reachable when the walk fell short.
		if whole, ok := destinationAmount(req.Amount, bestEligible, exponent); ok && whole == 0 {
			outcome.Result = ResultAmountTooSmall
			return outcome
		}
	}
	outcome.Result = ResultInsufficientLiquidity
	outcome.Fillable = req.Amount - remaining
	return outcome
}

// position is the index of the pool id in entries. REQUIRES: b has the pool.
func (b *Book) position(id PoolID) int {
	position, found := b.index[id]
	if !found {
		assert(false, "pool %v is not in the %v book", id, b.pair)
	}
	return position
}

// insert puts e at its priority position. REQUIRES: b does not have e.Pool.
func (b *Book) insert(e BookEntry) {
	low, high := 0, len(b.entries)
	for low < high {
		middle := int(uint(low+high) >> 1)
		if precedes(&b.entries[middle], &e) {
			low = middle + 1
		} else {
			high = middle
		}
	}
	b.entries = append(b.entries, BookEntry{})
	copy(b.entries[low+1:], b.entries[low:])
	b.entries[low] = e
	b.reindex(low)
}

// removeAt removes the entry at position.
func (b *Book) removeAt(position int) {
	delete(b.index, b.entries[position].Pool)
	copy(b.entries[position:], b.entries[position+1:])
	b.entries[len(b.entries)-1] = BookEntry{}
	b.entries = b.entries[:len(b.entries)-1]
	b.reindex(position)
}

// reindex records the positions of entries[from:].
func (b *Book) reindex(from int) {
	for i := from; i < len(b.entries); i++ {
		b.index[b.entries[i].Pool] = i
	}
}

// precedes reports whether a comes before b in price-time priority.
func precedes(a, b *BookEntry) bool {
	if a.Rate != b.Rate {
		return b.Rate.Less(a.Rate)
	}
	if a.RateSetAt != b.RateSetAt {
		return a.RateSetAt < b.RateSetAt
	}
	return bytes.Compare(a.Pool[:], b.Pool[:]) < 0
}
