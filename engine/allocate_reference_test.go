package engine

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/shopspring/decimal"
)

// referenceAllocate is a naive allocator written from spec §5 with
// decimal arithmetic in currency units, independent of Book and of money.go's
// integer code: it sorts a copy of the pools, filters instead of breaking early,
// finds a pool's largest source by binary search on the rounding rule itself,
// and decides AMOUNT_TOO_SMALL before walking.
func referenceAllocate(p Pair, entries []BookEntry, req AllocationRequest) AllocationOutcome {
	pools := slices.Clone(entries)
	sort.SliceStable(pools, func(i, j int) bool {
		if c := decimalOfRate(pools[i].Rate).Cmp(decimalOfRate(pools[j].Rate)); c != 0 {
			return c > 0
		}
		if pools[i].RateSetAt != pools[j].RateSetAt {
			return pools[i].RateSetAt < pools[j].RateSetAt
		}
		return string(pools[i].Pool[:]) < string(pools[j].Pool[:])
	})
	sourcePlaces, destinationPlaces := p.Source.MinorUnits(), p.Destination.MinorUnits()
	sourceUnit := decimal.New(1, -sourcePlaces)
	sourceMax := decimal.New(int64(AmountMax), -sourcePlaces)
	minRate := decimalOfRate(req.MinRate)

	var outcome AllocationOutcome
	var eligible []BookEntry
	for _, pool := range pools {
		if !pool.Active || pool.Available <= 0 || (req.Only != PoolID{} && pool.Pool != req.Only) {
			continue
		}
		if !outcome.HasBestRate {
			outcome.BestRate, outcome.HasBestRate = pool.Rate, true
		}
		if decimalOfRate(pool.Rate).GreaterThanOrEqual(minRate) {
			eligible = append(eligible, pool)
		}
	}

	amountPlaces := sourcePlaces
	if req.Direction == DirectionDestination {
		amountPlaces = destinationPlaces
	}
	amount := decimal.New(int64(req.Amount), -amountPlaces)
	if req.Direction == DirectionSource && len(eligible) > 0 &&
		amount.Mul(decimalOfRate(eligible[0].Rate)).RoundFloor(destinationPlaces).IsZero() {
		outcome.Result = ResultAmountTooSmall
		return outcome
	}

	remaining := amount
	var made []Slice
	var totalSource, totalDestination decimal.Decimal
walk:
	for _, pool := range eligible {
		if remaining.IsZero() {
			break
		}
		rate := decimalOfRate(pool.Rate)
		available := decimal.New(int64(pool.Available), -destinationPlaces)
		var source, destination decimal.Decimal
		switch req.Direction {
		case DirectionSource:
			largest := referenceLargestSource(decimal.Min(available, decimal.New(int64(AmountMax), -destinationPlaces)), rate, sourceUnit, sourceMax, destinationPlaces)
			source = decimal.Min(remaining, largest)
			if !source.IsPositive() {
				continue
			}
			destination = source.Mul(rate).RoundFloor(destinationPlaces)
			if destination.IsZero() {
				continue
			}
		case DirectionDestination:
			destination = decimal.Min(remaining, available)
			quotient, remainder := destination.QuoRem(rate, sourcePlaces)
			if !remainder.IsZero() {
				quotient = quotient.Add(sourceUnit)
			}
			source = quotient
			if source.GreaterThan(sourceMax) {
				break walk
			}
		}
		if len(made) == SlicesMax {
			break
		}
		made = append(made, Slice{Pool: pool.Pool, Rate: pool.Rate,
			Source: Amount(source.Shift(sourcePlaces).IntPart()), Destination: Amount(destination.Shift(destinationPlaces).IntPart())})
		totalSource = totalSource.Add(source)
		totalDestination = totalDestination.Add(destination)
		if req.Direction == DirectionSource {
			remaining = remaining.Sub(source)
		} else {
			remaining = remaining.Sub(destination)
		}
	}
	if remaining.IsZero() {
		outcome.Result = ResultOK
		outcome.Slices = made
		outcome.TotalSource = Amount(totalSource.Shift(sourcePlaces).IntPart())
		outcome.TotalDestination = Amount(totalDestination.Shift(destinationPlaces).IntPart())
		return outcome
	}
	outcome.Result = ResultInsufficientLiquidity
	outcome.Fillable = Amount(amount.Sub(remaining).Shift(amountPlaces).IntPart())
	return outcome
}

// referenceLargestSource is the largest source (a multiple of sourceUnit, at
// most sourceMax) whose destination, rounded down, is within available; found
// by binary search between a source that fits and one that does not.
func referenceLargestSource(available, rate, sourceUnit, sourceMax decimal.Decimal, destinationPlaces int32) decimal.Decimal {
	fits := func(source decimal.Decimal) bool {
		return source.Mul(rate).RoundFloor(destinationPlaces).LessThanOrEqual(available)
	}
	low, _ := available.QuoRem(rate, -sourceUnit.Exponent()) // low × rate <= available
	if low.GreaterThanOrEqual(sourceMax) {
		return sourceMax
	}
	// high × rate exceeds available by a whole destination unit: it does not fit.
	step, _ := decimal.New(1, -destinationPlaces).QuoRem(rate, -sourceUnit.Exponent())
	high := decimal.Min(low.Add(step).Add(sourceUnit.Mul(decimal.NewFromInt(2))), sourceMax)
	if fits(high) {
		return high // only when capped at sourceMax
	}
	// fits(low) and !fits(high): narrow to adjacent units.
	for high.Sub(low).GreaterThan(sourceUnit) {
		middle := low.Add(high).Div(decimal.NewFromInt(2)).RoundFloor(-sourceUnit.Exponent())
		if fits(middle) {
			low = middle
		} else {
			high = middle
		}
	}
	return low
}

// checkAllocationInvariants checks got against the book and the request,
// whatever the reference says.
func checkAllocationInvariants(t *testing.T, b *Book, req AllocationRequest, got AllocationOutcome) {
	t.Helper()
	if len(got.Slices) > SlicesMax {
		t.Fatalf("%d slices, more than SlicesMax", len(got.Slices))
	}
	// BestRate: the best active pool with liquidity, honouring Only.
	var bestRate Rate
	hasBest := false
	for _, e := range b.Entries() {
		if e.Active && e.Available > 0 && (req.Only.IsZero() || e.Pool == req.Only) && (!hasBest || bestRate.Less(e.Rate)) {
			bestRate, hasBest = e.Rate, true
		}
	}
	if got.BestRate != bestRate || got.HasBestRate != hasBest {
		t.Fatalf("BestRate %d, %v; want %d, %v", got.BestRate, got.HasBestRate, bestRate, hasBest)
	}
	if got.Result != ResultOK {
		if len(got.Slices) != 0 || got.TotalSource != 0 || got.TotalDestination != 0 {
			t.Fatalf("refusal %v with slices %v, totals %d, %d", got.Result, got.Slices, got.TotalSource, got.TotalDestination)
		}
		if got.Fillable < 0 || got.Fillable >= req.Amount {
			t.Fatalf("refusal %v with fillable %d of %d", got.Result, got.Fillable, req.Amount)
		}
		return
	}
	var sumSource, sumDestination Amount
	seen := make(map[PoolID]bool)
	for i, s := range got.Slices {
		e, found := b.Entry(s.Pool)
		switch {
		case !found || seen[s.Pool]:
			t.Fatalf("slice %d: pool %v unknown or repeated", i, s.Pool)
		case !e.Active:
			t.Fatalf("slice %d: pool %v is suspended", i, s.Pool)
		case s.Destination <= 0 || s.Source <= 0:
			t.Fatalf("slice %d: %+v is empty or dust", i, s)
		case s.Destination > e.Available:
			t.Fatalf("slice %d: destination %d exceeds available %d", i, s.Destination, e.Available)
		case s.Rate != e.Rate || s.Rate.Less(req.MinRate):
			t.Fatalf("slice %d: rate %d; pool rate %d, proposed %d", i, s.Rate, e.Rate, req.MinRate)
		case !req.Only.IsZero() && s.Pool != req.Only:
			t.Fatalf("slice %d: pool %v is not the listing %v", i, s.Pool, req.Only)
		case i > 0 && !precedes(&BookEntry{Pool: got.Slices[i-1].Pool, Rate: got.Slices[i-1].Rate, RateSetAt: mustEntry(t, b, got.Slices[i-1].Pool).RateSetAt}, &e):
			t.Fatalf("slice %d: pool %v out of priority order", i, s.Pool)
		}
		seen[s.Pool] = true
		// Rounding favours the pool.
		if req.Direction == DirectionSource {
			if want, _ := DestinationAmount(s.Source, s.Rate, b.Pair()); s.Destination != want {
				t.Fatalf("slice %d: destination %d; floor(source × rate) is %d", i, s.Destination, want)
			}
		} else if want, _ := SourceAmount(s.Destination, s.Rate, b.Pair()); s.Source != want {
			t.Fatalf("slice %d: source %d; ceil(destination ÷ rate) is %d", i, s.Source, want)
		}
		sumSource += s.Source
		sumDestination += s.Destination
	}
	if sumSource != got.TotalSource || sumDestination != got.TotalDestination {
		t.Fatalf("totals %d, %d; slices sum to %d, %d", got.TotalSource, got.TotalDestination, sumSource, sumDestination)
	}
	if (req.Direction == DirectionSource && sumSource != req.Amount) ||
		(req.Direction == DirectionDestination && sumDestination != req.Amount) {
		t.Fatalf("slices sum to %d source, %d destination; requested %d %v", sumSource, sumDestination, req.Amount, req.Direction)
	}
}

func mustEntry(t *testing.T, b *Book, id PoolID) BookEntry {
	t.Helper()
	e, found := b.Entry(id)
	if !found {
		t.Fatalf("pool %v not in book", id)
	}
	return e
}

// typicalRates are the rates around which random books are made: the
// default pairs' and the off-ramp's (wideTestPairs), whose rates take more
// than 64 bits.
var typicalRates = map[Pair]Rate{
	pairNGNUSDT:                 RateFromUnits(625_000_000_000_000),
	pairGHSUSDT:                 RateFromUnits(83_333_333_333_333_333),
	pairNGNGHS:                  RateFromUnits(7_500_000_000_000_000),
	{CurrencyUSDT, CurrencyNGN}: RateFromWords(87, 7_633_265_587_269_009_408), // 1612.5
	{CurrencyUSDT, CurrencyGHS}: RateFromUnits(15_200_000_000_000_000_000),    // 15.2
	{CurrencyGHS, CurrencyNGN}:  RateFromWords(5, 17_766_279_631_452_241_920), // 110
}

// randomBookEntries are poolCount pools of p with tied rates, tied times,
// suspended, empty and tiny pools all likely.
func randomBookEntries(rng *rand.Rand, p Pair, poolCount int, availableMax Amount) []BookEntry {
	typical := typicalRates[p]
	entries := make([]BookEntry, 0, poolCount)
	for len(entries) < poolCount {
		var id PoolID
		id[0] = byte(rng.IntN(4)) // shared first bytes: ties decided deeper in the id
		for i := 1; i < len(id); i++ {
			id[i] = byte(rng.Uint32())
		}
		var rate Rate
		switch rng.IntN(10) {
		case 0:
			rate = randomRate(rng)
		case 1:
			rate = addUnits(typical, rng.Uint64N(1_000_000)) // 18th-place differences
		default:
			rate, _ = typical.Scale(uint64(95+rng.IntN(11)), 100) // ±5% in 1% steps: many ties
		}
		var available Amount
		switch rng.IntN(8) {
		case 0:
			available = 0
		case 1:
			available = Amount(rng.IntN(10) + 1)
		case 2:
			available = availableMax
		default:
			available = min(Amount(rng.Int64N(int64(powersOfTen[rng.IntN(13)+1])))+1, availableMax)
		}
		entries = append(entries, BookEntry{
			Pool: id, Rate: rate, RateSetAt: int64(rng.IntN(3)), Active: rng.IntN(8) != 0, Available: available,
		})
		if slices.ContainsFunc(entries[:len(entries)-1], func(e BookEntry) bool { return e.Pool == id }) {
			entries = entries[:len(entries)-1]
		}
	}
	return entries
}

// randomRequest is a request against entries: amounts near the book's
// liquidity or anywhere in range, proposed rates equal to a pool's or not.
func randomRequest(rng *rand.Rand, p Pair, entries []BookEntry) AllocationRequest {
	req := AllocationRequest{Direction: DirectionSource}
	if rng.IntN(2) == 0 {
		req.Direction = DirectionDestination
	}
	var liquidity Amount
	for _, e := range entries {
		liquidity += e.Available
	}
	switch rng.IntN(4) {
	case 0:
		req.Amount = randomAmount(rng)
	case 1:
		req.Amount = Amount(rng.Int64N(1_000) + 1)
	default:
		// Around the book's liquidity: fills, nearly fills, or falls just short.
		near := Amount(float64(max(liquidity, 1)) * (0.2 + 1.1*rng.Float64()))
		if req.Direction == DirectionSource {
			near, _ = SourceAmount(max(near, 1), typicalRates[p], p)
		}
		req.Amount = min(max(near, 1), AmountMax)
	}
	if len(entries) > 0 {
		switch rng.IntN(4) {
		case 0:
			req.MinRate = entries[rng.IntN(len(entries))].Rate
		case 1:
			req.MinRate = typicalRates[p]
		}
		switch rng.IntN(10) {
		case 0:
			req.Only = entries[rng.IntN(len(entries))].Pool
		case 1:
			req.Only = PoolID{0xFF, 1}
		}
	}
	return req
}

// checkAgainstReference runs one case: the book built from entries in random
// order must allocate exactly as the reference does, and honour the
// invariants.
func checkAgainstReference(t *testing.T, rng *rand.Rand, p Pair, entries []BookEntry, req AllocationRequest) {
	t.Helper()
	b := NewBook(p)
	for _, i := range rng.Perm(len(entries)) {
		b.Upsert(entries[i])
	}
	checkBookInvariants(t, b)
	before := slices.Clone(b.Entries())
	buf := make([]Slice, 0, SlicesMax)
	got := b.Allocate(req, buf)
	want := referenceAllocate(p, entries, req)
	if !outcomeEqual(got, want) {
		t.Fatalf("pair %v, request %+v, book %+v:\ngot  %+v\nwant %+v", p, req, entries, got, want)
	}
	checkAllocationInvariants(t, b, req, got)
	if !slices.Equal(b.Entries(), before) {
		t.Fatalf("Allocate changed the book")
	}
}

// TestAllocateMatchesReference runs the differential test on a fixed seed,
// so that plain `go test` checks it: books of 1–20 pools, and books of 60–90
// small pools that run into SlicesMax.
func TestAllocateMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 3_000 {
		p := wideTestPairs()[rng.IntN(len(wideTestPairs()))]
		entries := randomBookEntries(rng, p, rng.IntN(20)+1, AmountMax)
		checkAgainstReference(t, rng, p, entries, randomRequest(rng, p, entries))
	}
	for range 300 {
		p := wideTestPairs()[rng.IntN(len(wideTestPairs()))]
		entries, req := randomSlicesMaxCase(rng, p)
		checkAgainstReference(t, rng, p, entries, req)
	}
}

// randomSlicesMaxCase is a book of 60–90 small active pools and a market
// order for about what the best 60–70 of them hold, so that some quotes need
// exactly SlicesMax slices and some one more.
func randomSlicesMaxCase(rng *rand.Rand, p Pair) ([]BookEntry, AllocationRequest) {
	entries := randomBookEntries(rng, p, 60+rng.IntN(31), 2_000)
	for i := range entries {
		entries[i].Active = true
		entries[i].Available = max(entries[i].Available, Amount(rng.IntN(3)+1))
	}
	req := AllocationRequest{Direction: DirectionSource}
	if rng.IntN(2) == 0 {
		req.Direction = DirectionDestination
	}
	b := NewBook(p)
	for _, e := range entries {
		b.Upsert(e)
	}
	ordered := b.Entries()
	for _, e := range ordered[:min(len(ordered), SlicesMax-4+rng.IntN(9))] {
		if req.Direction == DirectionSource {
			req.Amount += MaxSourceWithin(e.Available, e.Rate, p)
		} else {
			req.Amount += e.Available
		}
	}
	req.Amount = min(max(req.Amount+Amount(rng.IntN(3))-1, 1), AmountMax)
	return entries, req
}

func FuzzAllocate(f *testing.F) {
	f.Add(uint64(1), uint8(1), int64(0), false)
	f.Add(uint64(2), uint8(8), int64(1_000_000), true)
	f.Add(uint64(3), uint8(20), int64(1), false)
	f.Add(uint64(4), uint8(3), int64(AmountMax), true)
	f.Add(uint64(5), uint8(70), int64(0), true)
	f.Fuzz(func(t *testing.T, seed uint64, poolCount uint8, amount int64, destination bool) {
		rng := rand.New(rand.NewPCG(seed, uint64(poolCount)))
		p := wideTestPairs()[rng.IntN(len(wideTestPairs()))]
		var entries []BookEntry
		var req AllocationRequest
		if poolCount >= 64 {
			entries, req = randomSlicesMaxCase(rng, p)
		} else {
			entries = randomBookEntries(rng, p, int(poolCount)%20+1, AmountMax)
			req = randomRequest(rng, p, entries)
		}
		if amount != 0 {
			if amount < 0 {
				amount = -(amount + 1)
			}
			req.Amount = Amount(amount)%AmountMax + 1
		}
		if destination {
			req.Direction = DirectionDestination
		}
		checkAgainstReference(t, rng, p, entries, req)
	})
}

// BenchmarkReferenceAllocate measures the decimal reference on the book of
// BenchmarkAllocate/pools=8/fill=3, for comparison (not named
// BenchmarkAllocate… so that the allocation benchmarks run alone).
func BenchmarkReferenceAllocate(b *testing.B) {
	book, req := benchmarkBook(8, 3, DirectionSource)
	entries := slices.Clone(book.Entries())
	b.ReportAllocs()
	for b.Loop() {
		if referenceAllocate(book.Pair(), entries, req).Result != ResultOK {
			b.Fatal("not filled")
		}
	}
}

// addUnits is r + n units. REQUIRES: no overflow past 128 bits.
func addUnits(r Rate, n uint64) Rate {
	lo, carry := bits.Add64(r.lo, n, 0)
	return Rate{r.hi + carry, lo}
}
