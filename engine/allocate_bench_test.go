package engine

import (
	"fmt"
	"testing"
)

// Allocation benchmarks. Measure with
//
//	go test -run '^$' -bench 'BenchmarkAllocate' -count 5 ./engine/
//
// BenchmarkAllocate/pools=N/fill=W allocates a source-direction quote on an
// NGN/USDT book of N active pools at distinct rates, sized so that exactly W
// pools fill it (the first W−1 in full, the W-th in part); the partner's
// proposed rate is below every pool's, so the walk stops because the quote is
// filled. BenchmarkAllocate/pools=N/fill=W/dir=destination is the same in the
// destination direction. The allocation target is pools=8/fill=3 at no more
// than 200 ns and 0 allocs/op.
//
// BenchmarkAllocateMarketWalk/levels=N is a market order (source direction,
// no proposed rate) on a book of exactly N pools at N distinct rates, for an
// amount that empties every level to the last minor unit.

// benchmarkPoolAvailable is each benchmark pool's liquidity: 1,000 USDT.
const benchmarkPoolAvailable Amount = 1_000_000_000

// benchmarkEntries are n active NGN/USDT pools at distinct rates from
// 0.00065 down in steps of 0.00000001, best first.
func benchmarkEntries(n int) []BookEntry {
	entries := make([]BookEntry, n)
	for i := range entries {
		entries[i] = BookEntry{
			Pool:      PoolID{0xBE, byte(i >> 8), byte(i)},
			Rate:      RateFromUnits(650_000_000_000_000 - uint64(i)*10_000_000_000),
			RateSetAt: int64(i),
			Active:    true,
			Available: benchmarkPoolAvailable,
		}
	}
	return entries
}

// benchmarkBook is a book of pools pools and a request in direction that
// exactly fill of them cover.
func benchmarkBook(pools, fill int, direction Direction) (*Book, AllocationRequest) {
	book := NewBook(pairNGNUSDT)
	entries := benchmarkEntries(pools)
	for _, e := range entries {
		book.Upsert(e)
	}
	lowest, _ := entries[len(entries)-1].Rate.Units()
	req := AllocationRequest{Direction: direction, MinRate: RateFromUnits(lowest - 1)}
	for _, e := range entries[:fill-1] {
		if direction == DirectionSource {
			req.Amount += MaxSourceWithin(e.Available, e.Rate, pairNGNUSDT)
		} else {
			req.Amount += e.Available
		}
	}
	last := entries[fill-1]
	if direction == DirectionSource {
		req.Amount += MaxSourceWithin(last.Available/2, last.Rate, pairNGNUSDT)
	} else {
		req.Amount += last.Available / 2
	}
	return book, req
}

func BenchmarkAllocate(b *testing.B) {
	for _, size := range []struct{ pools, fill int }{
		{1, 1},
		{8, 1}, {8, 3}, {8, 8},
		{64, 1}, {64, 3}, {64, 8}, {64, 64},
		{1000, 1}, {1000, 3}, {1000, 8}, {1000, 64},
	} {
		for _, direction := range []Direction{DirectionSource, DirectionDestination} {
			name := fmt.Sprintf("pools=%d/fill=%d", size.pools, size.fill)
			if direction == DirectionDestination {
				name += "/dir=destination"
			}
			b.Run(name, func(b *testing.B) {
				book, req := benchmarkBook(size.pools, size.fill, direction)
				buf := make([]Slice, 0, SlicesMax)
				if got := book.Allocate(req, buf); got.Result != ResultOK || len(got.Slices) != size.fill {
					b.Fatalf("Allocate = %v with %d slices; want OK with %d", got.Result, len(got.Slices), size.fill)
				}
				b.ReportAllocs()
				for b.Loop() {
					buf = book.Allocate(req, buf).Slices
				}
			})
		}
	}
}

func BenchmarkAllocateMarketWalk(b *testing.B) {
	for _, levels := range []int{1, 3, 10} {
		b.Run(fmt.Sprintf("levels=%d", levels), func(b *testing.B) {
			book := NewBook(pairNGNUSDT)
			req := AllocationRequest{Direction: DirectionSource}
			for _, e := range benchmarkEntries(levels) {
				// Each level holds exactly what 150,000 naira buy at its rate,
				// so the order empties it to the last micro.
				const levelSource Amount = 15_000_000
				e.Available, _ = DestinationAmount(levelSource, e.Rate, pairNGNUSDT)
				book.Upsert(e)
				req.Amount += levelSource
			}
			buf := make([]Slice, 0, SlicesMax)
			got := book.Allocate(req, buf)
			if got.Result != ResultOK || len(got.Slices) != levels {
				b.Fatalf("Allocate = %v with %d slices; want OK with %d", got.Result, len(got.Slices), levels)
			}
			for _, s := range got.Slices {
				if e, _ := book.Entry(s.Pool); s.Destination != e.Available {
					b.Fatalf("level %v not taken in full: %d of %d", s.Pool, s.Destination, e.Available)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				buf = book.Allocate(req, buf).Slices
			}
		})
	}
}
