package engine

import (
	"slices"
	"testing"

	"github.com/shopspring/decimal"
)

// testRate parses a rate literal of a test table; a bad literal panics.
func testRate(text string) Rate {
	r, err := RateFromDecimal(decimal.RequireFromString(text))
	if err != nil {
		panic(err)
	}
	return r
}

// testPool is a pool id whose first byte is b, so that ids order as bytes do.
func testPool(b byte) PoolID { return PoolID{b, 0xEE} }

func activeEntry(id byte, rate string, setAt int64, available Amount) BookEntry {
	return BookEntry{Pool: testPool(id), Rate: testRate(rate), RateSetAt: setAt, Active: true, Available: available}
}

func newTestBook(t testing.TB, p Pair, entries ...BookEntry) *Book {
	t.Helper()
	b := NewBook(p)
	for _, e := range entries {
		b.Upsert(e)
		checkBookInvariants(t, b)
	}
	return b
}

// checkBookInvariants checks the order and the index of b.
func checkBookInvariants(t testing.TB, b *Book) {
	t.Helper()
	if len(b.index) != len(b.entries) {
		t.Fatalf("book has %d entries but %d indexed", len(b.entries), len(b.index))
	}
	for i := range b.entries {
		e := &b.entries[i]
		if position, found := b.index[e.Pool]; !found || position != i {
			t.Fatalf("entry %d (pool %v) indexed at %d, %v", i, e.Pool, position, found)
		}
		if e.Available < 0 || e.Rate.IsZero() {
			t.Fatalf("entry %d (pool %v) has available %d, rate %d", i, e.Pool, e.Available, e.Rate)
		}
		if i > 0 && !precedes(&b.entries[i-1], e) {
			t.Fatalf("entry %d (pool %v) is out of priority order", i, e.Pool)
		}
	}
}

// The standard NGN/USDT book of the table tests, in priority order of the
// active pools with liquidity: A, B, C, D.
var (
	bookSuspended = BookEntry{Pool: testPool(0x01), Rate: testRate("0.0007"), RateSetAt: 1, Active: false, Available: 1_000_000_000}
	bookEmpty     = activeEntry(0x02, "0.00069", 1, 0)
	bookA         = activeEntry(0x0A, "0.00064", 100, 100_000_000) // 6.4 micro per kobo, 100 USDT
	bookB         = activeEntry(0x0B, "0.00063", 50, 50_000_000)   // 50 USDT, rate set before C's
	bookC         = activeEntry(0x0C, "0.00063", 60, 1_000_000_000)
	bookD         = activeEntry(0x0D, "0.00062", 10, 10_000_000)
	standardBook  = []BookEntry{bookC, bookSuspended, bookD, bookA, bookEmpty, bookB}
)

func slice(e BookEntry, source, destination Amount) Slice {
	return Slice{Pool: e.Pool, Rate: e.Rate, Source: source, Destination: destination}
}

func TestBookOrder(t *testing.T) {
	tieLate := activeEntry(0x05, "0.00063", 50, 1)  // same rate and time as B, smaller id
	tieEarly := activeEntry(0x30, "0.00063", 49, 1) // same rate as B, earlier
	b := newTestBook(t, pairNGNUSDT, append(slices.Clone(standardBook), tieLate, tieEarly)...)
	want := []PoolID{
		bookSuspended.Pool, bookEmpty.Pool, bookA.Pool,
		tieEarly.Pool, tieLate.Pool, bookB.Pool, bookC.Pool, bookD.Pool,
	}
	var got []PoolID
	for _, e := range b.Entries() {
		got = append(got, e.Pool)
	}
	if !slices.Equal(got, want) {
		t.Errorf("order = %v; want %v", got, want)
	}
	if b.Len() != len(want) || b.Pair() != pairNGNUSDT {
		t.Errorf("Len, Pair = %d, %v; want %d, %v", b.Len(), b.Pair(), len(want), pairNGNUSDT)
	}
}

func outcomeEqual(got, want AllocationOutcome) bool {
	return got.Result == want.Result && slices.Equal(got.Slices, want.Slices) &&
		got.TotalSource == want.TotalSource && got.TotalDestination == want.TotalDestination &&
		got.Fillable == want.Fillable && got.BestRate == want.BestRate && got.HasBestRate == want.HasBestRate
}

func TestAllocate(t *testing.T) {
	// Cases on other books.
	tinyA := activeEntry(0x0A, "0.00064", 1, 5) // 5 micro: less than one kobo buys
	dustX := activeEntry(0x0A, "0.008", 1, 1)   // NGN/GHS: 1 pesewa
	dustY := activeEntry(0x0B, "0.0075", 1, 100_000)
	tieSecond := activeEntry(0x20, "0.00063", 7, 1_000_000)
	tieFirst := activeEntry(0x10, "0.00063", 7, 1_000_000)

	tests := []struct {
		name    string
		pair    Pair
		pools   []BookEntry
		request AllocationRequest
		want    AllocationOutcome
	}{
		{
			name: "source one pool", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionSource, Amount: 1_000_000},
			want: AllocationOutcome{Slices: []Slice{slice(bookA, 1_000_000, 6_400_000)},
				TotalSource: 1_000_000, TotalDestination: 6_400_000, BestRate: bookA.Rate, HasBestRate: true},
		},
		{
			name: "source one kobo rounds down to 6 micro", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionSource, Amount: 1},
			want: AllocationOutcome{Slices: []Slice{slice(bookA, 1, 6)},
				TotalSource: 1, TotalDestination: 6, BestRate: bookA.Rate, HasBestRate: true},
		},
		{
			name: "source exactly exhausts the best pool", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionSource, Amount: 15_625_000},
			want: AllocationOutcome{Slices: []Slice{slice(bookA, 15_625_000, 100_000_000)},
				TotalSource: 15_625_000, TotalDestination: 100_000_000, BestRate: bookA.Rate, HasBestRate: true},
		},
		{
			name: "source spans two pools, equal rates by time", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionSource, Amount: 20_000_000},
			want: AllocationOutcome{Slices: []Slice{slice(bookA, 15_625_000, 100_000_000), slice(bookB, 4_375_000, 27_562_500)},
				TotalSource: 20_000_000, TotalDestination: 127_562_500, BestRate: bookA.Rate, HasBestRate: true},
		},
		{
			// B takes 7936508 kobo: 6.3 × 7936508 = 50000000.4 micro, floored to its 50 USDT.
			name: "source spans three pools, pool limits at the edge", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionSource, Amount: 24_561_508},
			want: AllocationOutcome{Slices: []Slice{
				slice(bookA, 15_625_000, 100_000_000), slice(bookB, 7_936_508, 50_000_000), slice(bookC, 1_000_000, 6_300_000)},
				TotalSource: 24_561_508, TotalDestination: 156_300_000, BestRate: bookA.Rate, HasBestRate: true},
		},
		{
			name: "destination one pool", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionDestination, Amount: 6_400_000},
			want: AllocationOutcome{Slices: []Slice{slice(bookA, 1_000_000, 6_400_000)},
				TotalSource: 1_000_000, TotalDestination: 6_400_000, BestRate: bookA.Rate, HasBestRate: true},
		},
		{
			name: "destination one micro costs a whole kobo", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionDestination, Amount: 1},
			want: AllocationOutcome{Slices: []Slice{slice(bookA, 1, 1)},
				TotalSource: 1, TotalDestination: 1, BestRate: bookA.Rate, HasBestRate: true},
		},
		{
			// 10 USDT at 0.00063 is 15873.015873… naira, rounded up to the kobo.
			name: "destination spans two pools, source rounded up", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionDestination, Amount: 110_000_000},
			want: AllocationOutcome{Slices: []Slice{slice(bookA, 15_625_000, 100_000_000), slice(bookB, 1_587_302, 10_000_000)},
				TotalSource: 17_212_302, TotalDestination: 110_000_000, BestRate: bookA.Rate, HasBestRate: true},
		},
		{
			name: "proposed rate excludes the worse pools", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionSource, Amount: 200_000_000, MinRate: testRate("0.00063")},
			want:    AllocationOutcome{Result: ResultInsufficientLiquidity, Fillable: 182_291_666, BestRate: bookA.Rate, HasBestRate: true},
		},
		{
			name: "proposed rate above every pool", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionSource, Amount: 1_000_000, MinRate: testRate("0.000641")},
			want:    AllocationOutcome{Result: ResultInsufficientLiquidity, BestRate: bookA.Rate, HasBestRate: true},
		},
		{
			// Capacities: A 15625000, B 7936508, C 158730158, D 1612903 kobo.
			name: "source insufficient reports what fills", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionSource, Amount: 200_000_000},
			want:    AllocationOutcome{Result: ResultInsufficientLiquidity, Fillable: 183_904_569, BestRate: bookA.Rate, HasBestRate: true},
		},
		{
			name: "destination insufficient reports what fills", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionDestination, Amount: 1_160_000_001},
			want:    AllocationOutcome{Result: ResultInsufficientLiquidity, Fillable: 1_160_000_000, BestRate: bookA.Rate, HasBestRate: true},
		},
		{
			name: "a rate equal to the proposed rate is eligible", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionDestination, Amount: 200_000_000, MinRate: testRate("0.00063")},
			want: AllocationOutcome{Slices: []Slice{
				slice(bookA, 15_625_000, 100_000_000), slice(bookB, 7_936_508, 50_000_000), slice(bookC, 7_936_508, 50_000_000)},
				TotalSource: 31_498_016, TotalDestination: 200_000_000, BestRate: bookA.Rate, HasBestRate: true},
		},
		{
			// 100 USDT at 10^-18 would cost 10^16 kobo, more than AmountMax.
			name: "a source beyond AmountMax ends the walk", pair: pairNGNUSDT, pools: []BookEntry{bookA, activeEntry(0x50, "0.000000000000000001", 1, 1_000_000_000)},
			request: AllocationRequest{Direction: DirectionDestination, Amount: 200_000_000},
			want:    AllocationOutcome{Result: ResultInsufficientLiquidity, Fillable: 100_000_000, BestRate: bookA.Rate, HasBestRate: true},
		},
		{
			name: "listing restricts to one pool", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionSource, Amount: 1_000_000, Only: bookC.Pool},
			want: AllocationOutcome{Slices: []Slice{slice(bookC, 1_000_000, 6_300_000)},
				TotalSource: 1_000_000, TotalDestination: 6_300_000, BestRate: bookC.Rate, HasBestRate: true},
		},
		{
			name: "listing pool too small", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionDestination, Amount: 10_000_001, Only: bookD.Pool},
			want:    AllocationOutcome{Result: ResultInsufficientLiquidity, Fillable: 10_000_000, BestRate: bookD.Rate, HasBestRate: true},
		},
		{
			name: "listing pool below the proposed rate", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionSource, Amount: 1, Only: bookD.Pool, MinRate: bookC.Rate},
			want:    AllocationOutcome{Result: ResultInsufficientLiquidity, BestRate: bookD.Rate, HasBestRate: true},
		},
		{
			name: "listing pool suspended", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionSource, Amount: 1, Only: bookSuspended.Pool},
			want:    AllocationOutcome{Result: ResultInsufficientLiquidity},
		},
		{
			name: "listing pool empty", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionSource, Amount: 1, Only: bookEmpty.Pool},
			want:    AllocationOutcome{Result: ResultInsufficientLiquidity},
		},
		{
			name: "listing pool unknown", pair: pairNGNUSDT, pools: standardBook,
			request: AllocationRequest{Direction: DirectionSource, Amount: 1, Only: testPool(0x99)},
			want:    AllocationOutcome{Result: ResultInsufficientLiquidity},
		},
		{
			name: "empty book", pair: pairNGNUSDT,
			request: AllocationRequest{Direction: DirectionDestination, Amount: 1},
			want:    AllocationOutcome{Result: ResultInsufficientLiquidity},
		},
		{
			name: "only suspended and empty pools", pair: pairNGNUSDT, pools: []BookEntry{bookSuspended, bookEmpty},
			request: AllocationRequest{Direction: DirectionSource, Amount: 1},
			want:    AllocationOutcome{Result: ResultInsufficientLiquidity},
		},
		{
			name: "equal rate and time: lower pool id first", pair: pairNGNUSDT, pools: []BookEntry{tieSecond, tieFirst},
			request: AllocationRequest{Direction: DirectionDestination, Amount: 1_500_000},
			want: AllocationOutcome{Slices: []Slice{slice(tieFirst, 158_731, 1_000_000), slice(tieSecond, 79_366, 500_000)},
				TotalSource: 238_097, TotalDestination: 1_500_000, BestRate: tieFirst.Rate, HasBestRate: true},
		},
		{
			name: "pool too small for one kobo is skipped", pair: pairNGNUSDT, pools: []BookEntry{tinyA, bookB},
			request: AllocationRequest{Direction: DirectionSource, Amount: 100},
			want: AllocationOutcome{Slices: []Slice{slice(bookB, 100, 630)},
				TotalSource: 100, TotalDestination: 630, BestRate: tinyA.Rate, HasBestRate: true},
		},
		{
			name: "destination takes the small pool's last micro", pair: pairNGNUSDT, pools: []BookEntry{tinyA, bookB},
			request: AllocationRequest{Direction: DirectionDestination, Amount: 11},
			want: AllocationOutcome{Slices: []Slice{slice(tinyA, 1, 5), slice(bookB, 1, 6)},
				TotalSource: 2, TotalDestination: 11, BestRate: tinyA.Rate, HasBestRate: true},
		},
		{
			// X takes 249 kobo for its 1 pesewa; the 51 kobo left buy 0.3825
			// pesewa at Y: dust, skipped, so the quote cannot fill.
			name: "dust slice skipped", pair: pairNGNGHS, pools: []BookEntry{dustX, dustY},
			request: AllocationRequest{Direction: DirectionSource, Amount: 300},
			want:    AllocationOutcome{Result: ResultInsufficientLiquidity, Fillable: 249, BestRate: dustX.Rate, HasBestRate: true},
		},
		{
			name: "without the dust it fills", pair: pairNGNGHS, pools: []BookEntry{dustX, dustY},
			request: AllocationRequest{Direction: DirectionSource, Amount: 383},
			want: AllocationOutcome{Slices: []Slice{slice(dustX, 249, 1), slice(dustY, 134, 1)},
				TotalSource: 383, TotalDestination: 2, BestRate: dustX.Rate, HasBestRate: true},
		},
		{
			name: "amount too small at the best rate", pair: pairNGNGHS, pools: []BookEntry{dustX, dustY},
			request: AllocationRequest{Direction: DirectionSource, Amount: 124},
			want:    AllocationOutcome{Result: ResultAmountTooSmall, BestRate: dustX.Rate, HasBestRate: true},
		},
		{
			name: "smallest amount that is not too small", pair: pairNGNGHS, pools: []BookEntry{dustX, dustY},
			request: AllocationRequest{Direction: DirectionSource, Amount: 125},
			want: AllocationOutcome{Slices: []Slice{slice(dustX, 125, 1)},
				TotalSource: 125, TotalDestination: 1, BestRate: dustX.Rate, HasBestRate: true},
		},
		{
			name: "amount too small judged at the best eligible rate", pair: pairNGNGHS, pools: []BookEntry{dustX, dustY},
			request: AllocationRequest{Direction: DirectionSource, Amount: 133, MinRate: dustY.Rate, Only: dustY.Pool},
			want:    AllocationOutcome{Result: ResultAmountTooSmall, BestRate: dustY.Rate, HasBestRate: true},
		},
		{
			name: "amount too small needs an eligible pool", pair: pairNGNGHS, pools: []BookEntry{dustX, dustY},
			request: AllocationRequest{Direction: DirectionSource, Amount: 1, MinRate: testRate("0.009")},
			want:    AllocationOutcome{Result: ResultInsufficientLiquidity, BestRate: dustX.Rate, HasBestRate: true},
		},
		{
			name: "destination direction is never too small", pair: pairNGNGHS, pools: []BookEntry{dustX, dustY},
			request: AllocationRequest{Direction: DirectionDestination, Amount: 1},
			want: AllocationOutcome{Slices: []Slice{slice(dustX, 125, 1)},
				TotalSource: 125, TotalDestination: 1, BestRate: dustX.Rate, HasBestRate: true},
		},
	}
	buf := make([]Slice, 0, SlicesMax)
	for _, test := range tests {
		b := newTestBook(t, test.pair, test.pools...)
		before := slices.Clone(b.Entries())
		got := b.Allocate(test.request, buf)
		if !outcomeEqual(got, test.want) {
			t.Errorf("%s: Allocate(%+v) =\n\t%+v\nwant\n\t%+v", test.name, test.request, got, test.want)
		}
		if !slices.Equal(b.Entries(), before) {
			t.Errorf("%s: Allocate changed the book", test.name)
		}
	}
}

func TestAllocateSlicesMax(t *testing.T) {
	b := NewBook(pairNGNUSDT)
	for i := range SlicesMax + 1 {
		// Distinct rates, best first by id: 0.000700, 0.000699, …; 1 USDT each.
		b.Upsert(BookEntry{Pool: testPool(byte(i)), Rate: RateFromUnits(700_000_000_000_000 - uint64(i)*1_000_000_000_000), Active: true, Available: 1_000_000})
	}
	checkBookInvariants(t, b)
	buf := make([]Slice, 0, SlicesMax)
	tests := []struct {
		name       string
		amount     Amount
		wantResult Result
		wantSlices int
		wantFill   Amount
	}{
		{"exactly SlicesMax slices", SlicesMax * 1_000_000, ResultOK, SlicesMax, 0},
		{"one micro more needs another slice", SlicesMax*1_000_000 + 1, ResultInsufficientLiquidity, 0, SlicesMax * 1_000_000},
		{"all the book's liquidity", (SlicesMax + 1) * 1_000_000, ResultInsufficientLiquidity, 0, SlicesMax * 1_000_000},
	}
	for _, test := range tests {
		got := b.Allocate(AllocationRequest{Direction: DirectionDestination, Amount: test.amount}, buf)
		if got.Result != test.wantResult || len(got.Slices) != test.wantSlices || got.Fillable != test.wantFill {
			t.Errorf("%s: Allocate(%d) = %v with %d slices, fillable %d; want %v, %d, %d",
				test.name, test.amount, got.Result, len(got.Slices), got.Fillable, test.wantResult, test.wantSlices, test.wantFill)
		}
	}
}

func TestBookReserveRelease(t *testing.T) {
	b := newTestBook(t, pairNGNUSDT, standardBook...)
	buf := make([]Slice, 0, SlicesMax)
	request := AllocationRequest{Direction: DirectionDestination, Amount: 120_000_000}
	first := b.Allocate(request, buf)
	if first.Result != ResultOK || len(first.Slices) != 2 {
		t.Fatalf("first allocation = %+v", first)
	}
	reserved := slices.Clone(first.Slices)
	b.Reserve(reserved)
	checkBookInvariants(t, b)
	for _, want := range []struct {
		pool      PoolID
		available Amount
	}{{bookA.Pool, 0}, {bookB.Pool, 30_000_000}, {bookC.Pool, bookC.Available}} {
		if e, _ := b.Entry(want.pool); e.Available != want.available {
			t.Errorf("after Reserve pool %v available = %d; want %d", want.pool, e.Available, want.available)
		}
	}
	if rate, _, pool, ok := b.BestRate(); !ok || pool != bookB.Pool || rate != bookB.Rate {
		t.Errorf("BestRate after A is exhausted = %d, %v, %v; want B's", rate, pool, ok)
	}
	second := b.Allocate(request, buf)
	if second.Result != ResultOK || second.Slices[0].Pool != bookB.Pool || second.Slices[1].Pool != bookC.Pool {
		t.Errorf("second allocation = %+v; want B then C", second)
	}
	b.Release(reserved)
	checkBookInvariants(t, b)
	for _, e := range standardBook {
		if got, _ := b.Entry(e.Pool); got != e {
			t.Errorf("after Release pool %v = %+v; want %+v", e.Pool, got, e)
		}
	}

	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("Reserve beyond the available liquidity did not panic")
			}
		}()
		b.Reserve([]Slice{slice(bookD, 1, bookD.Available+1)})
	}()
}

func TestBookMutations(t *testing.T) {
	b := newTestBook(t, pairNGNUSDT, standardBook...)
	order := func() []PoolID {
		var ids []PoolID
		for _, e := range b.Entries() {
			ids = append(ids, e.Pool)
		}
		return ids
	}
	steps := []struct {
		name      string
		mutate    func()
		wantOrder []PoolID
		wantBest  PoolID
	}{
		{"start", func() {},
			[]PoolID{bookSuspended.Pool, bookEmpty.Pool, bookA.Pool, bookB.Pool, bookC.Pool, bookD.Pool}, bookA.Pool},
		{"C raises its rate to the top of the active pools", func() { b.SetRate(bookC.Pool, testRate("0.00065"), 200) },
			[]PoolID{bookSuspended.Pool, bookEmpty.Pool, bookC.Pool, bookA.Pool, bookB.Pool, bookD.Pool}, bookC.Pool},
		{"A matches C's rate later: C keeps priority", func() { b.SetRate(bookA.Pool, testRate("0.00065"), 300) },
			[]PoolID{bookSuspended.Pool, bookEmpty.Pool, bookC.Pool, bookA.Pool, bookB.Pool, bookD.Pool}, bookC.Pool},
		{"C re-sets the same rate: now later than A", func() { b.SetRate(bookC.Pool, testRate("0.00065"), 400) },
			[]PoolID{bookSuspended.Pool, bookEmpty.Pool, bookA.Pool, bookC.Pool, bookB.Pool, bookD.Pool}, bookA.Pool},
		{"suspending A keeps its place", func() { b.SetActive(bookA.Pool, false) },
			[]PoolID{bookSuspended.Pool, bookEmpty.Pool, bookA.Pool, bookC.Pool, bookB.Pool, bookD.Pool}, bookC.Pool},
		{"resuming the suspended pool makes it best", func() { b.SetActive(bookSuspended.Pool, true) },
			[]PoolID{bookSuspended.Pool, bookEmpty.Pool, bookA.Pool, bookC.Pool, bookB.Pool, bookD.Pool}, bookSuspended.Pool},
		{"a deposit into the empty pool makes it best", func() { b.AddAvailable(bookEmpty.Pool, 1) },
			[]PoolID{bookSuspended.Pool, bookEmpty.Pool, bookA.Pool, bookC.Pool, bookB.Pool, bookD.Pool}, bookSuspended.Pool},
		{"removing the formerly suspended pool", func() { b.Remove(bookSuspended.Pool) },
			[]PoolID{bookEmpty.Pool, bookA.Pool, bookC.Pool, bookB.Pool, bookD.Pool}, bookEmpty.Pool},
		{"withdrawing the deposit", func() { b.AddAvailable(bookEmpty.Pool, -1) },
			[]PoolID{bookEmpty.Pool, bookA.Pool, bookC.Pool, bookB.Pool, bookD.Pool}, bookC.Pool},
		{"removing an unknown pool is a no-op", func() { b.Remove(testPool(0x99)) },
			[]PoolID{bookEmpty.Pool, bookA.Pool, bookC.Pool, bookB.Pool, bookD.Pool}, bookC.Pool},
		{"upsert replaces D and re-ranks it", func() { b.Upsert(activeEntry(0x0D, "0.001", 500, 7)) },
			[]PoolID{bookD.Pool, bookEmpty.Pool, bookA.Pool, bookC.Pool, bookB.Pool}, bookD.Pool},
		{"upsert at the same priority only updates", func() { b.Upsert(activeEntry(0x0D, "0.001", 500, 0)) },
			[]PoolID{bookD.Pool, bookEmpty.Pool, bookA.Pool, bookC.Pool, bookB.Pool}, bookC.Pool},
		{"lowering the rate moves a pool down", func() { b.SetRate(bookD.Pool, testRate("0.0001"), 600) },
			[]PoolID{bookEmpty.Pool, bookA.Pool, bookC.Pool, bookB.Pool, bookD.Pool}, bookC.Pool},
	}
	for _, step := range steps {
		step.mutate()
		checkBookInvariants(t, b)
		if got := order(); !slices.Equal(got, step.wantOrder) {
			t.Errorf("%s: order = %v; want %v", step.name, got, step.wantOrder)
		}
		_, _, best, ok := b.BestRate()
		if !ok || best != step.wantBest {
			t.Errorf("%s: best pool = %v, %v; want %v", step.name, best, ok, step.wantBest)
		}
		if got := b.Allocate(AllocationRequest{Direction: DirectionDestination, Amount: 1}, nil); got.Slices[0].Pool != step.wantBest {
			t.Errorf("%s: Allocate takes pool %v first; want %v", step.name, got.Slices[0].Pool, step.wantBest)
		}
	}
	if e, found := b.Entry(bookA.Pool); !found || e.Active || e.RateSetAt != 300 {
		t.Errorf("Entry(A) = %+v, %v; want suspended, rate set at 300", e, found)
	}
	if _, found := b.Entry(bookSuspended.Pool); found {
		t.Errorf("Entry of a removed pool was found")
	}
}

func TestBookBestRateEmpty(t *testing.T) {
	b := newTestBook(t, pairNGNGHS, bookSuspended, bookEmpty)
	if rate, setAt, pool, ok := b.BestRate(); ok {
		t.Errorf("BestRate of a book without liquidity = %d, %d, %v, true; want false", rate, setAt, pool)
	}
}

func TestAllocateAllocationFree(t *testing.T) {
	b := newTestBook(t, pairNGNUSDT, standardBook...)
	buf := make([]Slice, 0, SlicesMax)
	requests := []struct {
		name    string
		request AllocationRequest
	}{
		{"source three pools", AllocationRequest{Direction: DirectionSource, Amount: 24_561_508}},
		{"destination two pools", AllocationRequest{Direction: DirectionDestination, Amount: 110_000_000}},
		{"listing", AllocationRequest{Direction: DirectionSource, Amount: 1_000_000, Only: bookC.Pool}},
		{"insufficient", AllocationRequest{Direction: DirectionSource, Amount: 200_000_000}},
	}
	for _, test := range requests {
		var result Result
		allocations := testing.AllocsPerRun(1000, func() { result = b.Allocate(test.request, buf).Result })
		if allocations != 0 {
			t.Errorf("%s: Allocate makes %v allocations (result %v); want 0", test.name, allocations, result)
		}
	}
}

func TestBookPanicsOnMisuse(t *testing.T) {
	tests := []struct {
		name string
		call func(b *Book)
	}{
		{"allocate nothing", func(b *Book) { b.Allocate(AllocationRequest{Direction: DirectionSource}, nil) }},
		{"allocate above AmountMax", func(b *Book) {
			b.Allocate(AllocationRequest{Direction: DirectionSource, Amount: AmountMax + 1}, nil)
		}},
		{"allocate without direction", func(b *Book) { b.Allocate(AllocationRequest{Amount: 1}, nil) }},
		{"upsert a zero rate", func(b *Book) { b.Upsert(BookEntry{Pool: testPool(0x77)}) }},
		{"set the rate of an unknown pool", func(b *Book) { b.SetRate(testPool(0x77), RateFromUnits(1), 0) }},
		{"set a zero rate", func(b *Book) { b.SetRate(bookA.Pool, RateFromUnits(0), 0) }},
		{"suspend an unknown pool", func(b *Book) { b.SetActive(testPool(0x77), false) }},
		{"withdraw below zero", func(b *Book) { b.AddAvailable(bookA.Pool, -bookA.Available-1) }},
		{"release to an unknown pool", func(b *Book) { b.Release([]Slice{{Pool: testPool(0x77), Destination: 1}}) }},
	}
	for _, test := range tests {
		b := newTestBook(t, pairNGNUSDT, standardBook...)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: did not panic", test.name)
				}
			}()
			test.call(b)
		}()
	}
}
