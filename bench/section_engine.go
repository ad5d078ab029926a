package bench

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/oja-exchange/oja/engine"
)

// EngineCase is one allocation benchmark's figures.
type EngineCase struct {
	// Name is the stable Go benchmark name of the same case in
	// engine/allocate_bench_test.go (BenchmarkAllocate/pools=N/fill=W, with
	// /dir=destination for the destination direction).
	Name      string `json:"name"`
	Pools     int    `json:"pools"`
	Fill      int    `json:"fill"`
	Direction string `json:"direction"`
	// NsPerOp is the median over rounds of one Book.Allocate's time.
	NsPerOp float64 `json:"ns_per_op"`
	// QuotesPerSecond is 1e9 / NsPerOp: allocations one core decides per
	// second.
	QuotesPerSecond float64 `json:"quotes_allocated_per_second"`
	// HeapAllocsPerOp and HeapBytesPerOp are the worst round's.
	HeapAllocsPerOp int64     `json:"heap_allocs_per_op"`
	HeapBytesPerOp  int64     `json:"heap_bytes_per_op"`
	RoundsNsPerOp   []float64 `json:"rounds_ns_per_op"`
}

// EngineReport is section 1: Book.Allocate by book depth and fill width.
type EngineReport struct {
	BenchTime string       `json:"bench_time"` // testing.Benchmark's -benchtime per case and round
	Cases     []EngineCase `json:"cases"`
}

// benchmarkName is the engine's stable name of a shape.
func (s EngineShape) benchmarkName() string {
	name := fmt.Sprintf("BenchmarkAllocate/pools=%d/fill=%d", s.Pools, s.Fill)
	if s.Destination {
		name += "/dir=destination"
	}
	return name
}

func (s EngineShape) direction() engine.Direction {
	if s.Destination {
		return engine.DirectionDestination
	}
	return engine.DirectionSource
}

// allocateBook builds the book and request of a shape, exactly as
// engine/allocate_bench_test.go's benchmarkBook does (that one is
// unexported test code): pools active NGN/USDT pools of 1,000 USDT at
// distinct rates from 0.00065 down in steps of 0.00000001, and a request
// the first fill of them cover (the last in part) with a proposed rate
// below every pool's.
func allocateBook(pools, fill int, direction engine.Direction) (*engine.Book, engine.AllocationRequest) {
	const available engine.Amount = 1_000_000_000
	book := engine.NewBook(pairNGNUSDT)
	entries := make([]engine.BookEntry, pools)
	for i := range entries {
		entries[i] = engine.BookEntry{
			Pool:      engine.PoolID{0xBE, byte(i >> 8), byte(i)},
			Rate:      engine.RateFromUnits(650_000_000_000_000 - uint64(i)*10_000_000_000),
			RateSetAt: int64(i),
			Active:    true,
			Available: available,
		}
		book.Upsert(entries[i])
	}
	req := engine.AllocationRequest{Direction: direction, MinRate: lowerRate(entries[len(entries)-1].Rate)}
	for i, e := range entries[:fill] {
		part := e.Available
		if i == fill-1 {
			part = e.Available / 2
		}
		if direction == engine.DirectionSource {
			req.Amount += engine.MaxSourceWithin(part, e.Rate, pairNGNUSDT)
		} else {
			req.Amount += part
		}
	}
	return book, req
}

// allocateBenchmark is the body of one case, for testing.Benchmark.
func allocateBenchmark(s EngineShape) func(b *testing.B) {
	return func(b *testing.B) {
		book, req := allocateBook(s.Pools, s.Fill, s.direction())
		buf := make([]engine.Slice, 0, engine.SlicesMax)
		if got := book.Allocate(req, buf); got.Result != engine.ResultOK || len(got.Slices) != s.Fill {
			b.Fatalf("Allocate = %v with %d slices; want OK with %d", got.Result, len(got.Slices), s.Fill)
		}
		b.ReportAllocs()
		for b.Loop() {
			buf = book.Allocate(req, buf).Slices
		}
	}
}

// withBenchTime runs fn with testing.Benchmark's -benchtime set to d.
//
// NB: testing.Benchmark reads the package's -test.benchtime flag, which
// exists only once testing.Init has registered it (in a test binary it
// already has). The previous value is restored, so a test binary's own
// -bench runs are unaffected.
func withBenchTime(d time.Duration, fn func()) error {
	if flag.Lookup("test.benchtime") == nil {
		testing.Init()
	}
	previous := flag.Lookup("test.benchtime").Value.String()
	if err := flag.Set("test.benchtime", d.String()); err != nil {
		return fmt.Errorf("bench: setting benchtime: %w", err)
	}
	defer func() { _ = flag.Set("test.benchtime", previous) }()
	fn()
	return nil
}

func (r *run) engineSection(ctx context.Context) error {
	cfg := r.cfg
	rep := &EngineReport{BenchTime: cfg.EngineBenchTime.String()}
	r.report.Engine = rep
	cases := make([]EngineCase, len(cfg.EngineCases))
	allocs := make([][]testing.BenchmarkResult, len(cfg.EngineCases))
	var failure error
	err := withBenchTime(cfg.EngineBenchTime, func() {
		for round := range cfg.Rounds {
			for i, s := range cfg.EngineCases {
				if ctx.Err() != nil {
					failure = ctx.Err()
					return
				}
				if s.Fill < 1 || s.Fill > s.Pools || s.Fill > engine.SlicesMax {
					failure = fmt.Errorf("bench: engine case %+v: fill must be 1..min(pools, %d)", s, engine.SlicesMax)
					return
				}
				r.progress.set("engine: round %d/%d: %s", round+1, cfg.Rounds, s.benchmarkName())
				res := testing.Benchmark(allocateBenchmark(s))
				if res.N == 0 {
					failure = fmt.Errorf("bench: %s failed", s.benchmarkName())
					return
				}
				allocs[i] = append(allocs[i], res)
			}
		}
		if r.cfg.Profile {
			// The headline case again, under the CPU profiler.
			s := EngineShape{Pools: 8, Fill: 3}
			failure = r.profileCPU("engine", func() error {
				testing.Benchmark(allocateBenchmark(s))
				return nil
			})
		}
	})
	if err != nil {
		return err
	}
	if failure != nil {
		return failure
	}
	for i, s := range cfg.EngineCases {
		c := EngineCase{Name: s.benchmarkName(), Pools: s.Pools, Fill: s.Fill, Direction: s.direction().String()}
		for _, res := range allocs[i] {
			c.RoundsNsPerOp = append(c.RoundsNsPerOp, round3(float64(res.T.Nanoseconds())/float64(res.N)))
			c.HeapAllocsPerOp = max(c.HeapAllocsPerOp, res.AllocsPerOp())
			c.HeapBytesPerOp = max(c.HeapBytesPerOp, res.AllocedBytesPerOp())
		}
		c.NsPerOp = round3(median(c.RoundsNsPerOp))
		if c.NsPerOp > 0 {
			c.QuotesPerSecond = float64(int64(1e9 / c.NsPerOp))
		}
		cases[i] = c
	}
	rep.Cases = cases
	return nil
}

// lowerRate is r less one unit (10^−18). REQUIRES: 0 < r < 2^64 units.
func lowerRate(r engine.Rate) engine.Rate {
	units, _ := r.Units()
	return engine.RateFromUnits(units - 1)
}
