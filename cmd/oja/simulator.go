package main

import (
	"cmp"
	"log/slog"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// The market simulator of --demo (spec §13): while the service runs, it
// moves every active sandbox pool's rate a little each second, so that the
// rate stream (spec §8) has something to say. Each move is an ordinary durable
// rate change (System.ChangePool, a PoolRateSet event), exactly as an
// operator's PUT /admin/v1/pools/{id}/rate would make it.
//
// The walk is bounded and reproducible:
//
//  1. Each pool has an anchor: its rate in the demo seed table (demoPools),
//     else its rate when the simulator first saw it. A rate that someone
//     else set since the simulator's last move (an operator) becomes the
//     new anchor.
//  2. A rate is kept in quanta of 10^-k chosen so that the anchor has
//     simulatorDigits significant digits; all arithmetic is on integers.
//  3. Each step adds a uniform whole number of quanta within
//     ±simulatorStepPPM of the anchor, then clamps the result to
//     ±simulatorBandPPM of the anchor.
//  4. Pools are visited in a fixed order (pair, name, id) and every draw
//     comes from one PCG generator seeded with simulatorSeed: the same seed
//     and the same pools give the same sequence of rates.

// Limits and settings of the simulator.
const (
	// simulatorInterval is the time between two steps.
	simulatorInterval = time.Second
	// simulatorStepPPM bounds one step: ±0.05 % of the anchor.
	simulatorStepPPM = 500
	// simulatorBandPPM bounds the walk: ±2 % of the anchor.
	simulatorBandPPM = 20_000
	// simulatorDigits is the number of significant digits of a simulated
	// rate (0.0006271234, not 0.000627123456789012).
	simulatorDigits = 7
	// simulatorSeed seeds the demo's walk.
	simulatorSeed = 1
	// simulatorStopMax bounds how long Stop waits for a change in flight.
	simulatorStopMax = 2 * time.Second
)

// market is what the simulator needs of the running system.
type market interface {
	Pools(engine.Mode) []*engine.Pool
	ChangePool(*actors.PoolCommand) *actors.PoolReply
}

// marketWalk is the simulator's deterministic core: no clock, no IO.
type marketWalk struct {
	random *rand.Rand
	walks  map[engine.PoolID]*poolWalk
}

// poolWalk is the state of one pool's walk, in quanta.
type poolWalk struct {
	quantum int    // one quantum is 10^quantum rate units
	anchor  uint64 // band centre
	step    uint64 // largest move of one step
	band    uint64 // largest distance from the anchor
	current uint64 // the rate the simulator last set
}

func newMarketWalk(seed uint64) *marketWalk {
	return &marketWalk{
		random: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		walks:  make(map[engine.PoolID]*poolWalk),
	}
}

// step returns the next rate of each active pool among pools, in the walk's
// fixed order. The caller applies them and reports each with moved.
func (w *marketWalk) step(pools []*engine.Pool) []actors.PoolCommand {
	ordered := slices.Clone(pools)
	slices.SortFunc(ordered, func(a, b *engine.Pool) int {
		return cmp.Or(
			engine.ComparePairs(a.Pair, b.Pair),
			cmp.Compare(a.Name, b.Name),
			slices.Compare(a.ID[:], b.ID[:]))
	})
	var out []actors.PoolCommand
	for _, p := range ordered {
		if !p.Active || p.Rate.IsZero() {
			continue
		}
		pw := w.walks[p.ID]
		if pw == nil || pw.rate(pw.current) != p.Rate {
			anchor := p.Rate
			if pw == nil {
				if seeded, ok := demoRate(p); ok {
					anchor = seeded
				}
			}
			pw = newPoolWalk(anchor, p.Rate)
			w.walks[p.ID] = pw
		}
		next := w.draw(pw)
		if next == pw.current {
			continue
		}
		out = append(out, actors.PoolCommand{Pool: p.ID, Rate: pw.rate(next)})
	}
	return out
}

// moved records that pool's rate is now rate (the change was applied).
func (w *marketWalk) moved(pool engine.PoolID, rate engine.Rate) {
	if pw := w.walks[pool]; pw != nil {
		if position, ok := rate.RoundPow10(pw.quantum); ok && pw.rate(position) == rate {
			pw.current = position
		}
	}
}

// rate is the rate at position (in quanta).
func (pw *poolWalk) rate(position uint64) engine.Rate {
	r, _ := engine.RateTimesPow10(position, pw.quantum) // a position never exceeds 2 × the anchor
	return r
}

// draw is the next position of pw: a uniform move of at most pw.step
// quanta, clamped to the band. It draws exactly one number.
func (w *marketWalk) draw(pw *poolWalk) uint64 {
	span := 2*pw.step + 1
	offset, _ := bits.Mul64(w.random.Uint64(), span) // uniform in [0, span)
	next := pw.current + offset
	low, high := pw.anchor-pw.band, pw.anchor+pw.band
	switch {
	case next < pw.step+low:
		next = low
	case next-pw.step > high:
		next = high
	default:
		next -= pw.step
	}
	return next
}

// newPoolWalk starts a walk around anchor from the pool's current rate
// (rounded to the walk's quantum and clamped into its band).
func newPoolWalk(anchor, current engine.Rate) *poolWalk {
	quantum := max(anchor.Digits()-simulatorDigits, 0)
	pw := &poolWalk{quantum: quantum}
	pw.anchor, _ = anchor.RoundPow10(quantum) // at most simulatorDigits+1 digits
	pw.step = max(pw.anchor*simulatorStepPPM/1_000_000, 1)
	pw.band = min(pw.anchor*simulatorBandPPM/1_000_000, pw.anchor-1)
	position, ok := current.RoundPow10(quantum)
	if !ok {
		position = pw.anchor + pw.band
	}
	pw.current = min(max(position, pw.anchor-pw.band), pw.anchor+pw.band)
	return pw
}

// demoRate is the seed rate of a demo pool of that pair and name.
func demoRate(p *engine.Pool) (engine.Rate, bool) {
	for _, d := range demoPools {
		if d.pair == p.Pair && d.name == p.Name {
			r, err := engine.RateFromDecimal(decimal.RequireFromString(d.rate))
			return r, err == nil
		}
	}
	return engine.Rate{}, false
}

// marketSimulator runs a marketWalk against the system every interval.
type marketSimulator struct {
	market   market
	walk     *marketWalk
	interval time.Duration
	logger   *slog.Logger
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
}

// startMarketSimulator starts moving the sandbox rates of m.
func startMarketSimulator(m market, seed uint64, interval time.Duration, logger *slog.Logger) *marketSimulator {
	s := &marketSimulator{market: m, walk: newMarketWalk(seed), interval: interval, logger: logger,
		stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	logger.Info("demo market simulator started", "interval", interval.String(), "seed", seed)
	return s
}

// Stop ends the simulator and waits, at most simulatorStopMax, for its
// last change to finish (a change waits for its fsync; a hung disk must not
// hold up the shutdown).
func (s *marketSimulator) Stop() {
	s.once.Do(func() { close(s.stop) })
	select {
	case <-s.done:
	case <-time.After(simulatorStopMax):
		s.logger.Warn("demo market simulator: a rate change is still in flight; not waiting for it")
	}
}

func (s *marketSimulator) run() {
	defer close(s.done)
	ticker := time.NewTicker(s.interval)
	defer ticker.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-ticker.C:
		}
		for _, cmd := range s.walk.step(s.market.Pools(engine.ModeSandbox)) {
			select {
			case <-s.stop:
				return
			default:
			}
			reply := s.market.ChangePool(&cmd)
			if reply.Err != nil {
				// Unavailable (stopping, storage failing): try again next step.
				s.logger.Warn("demo market simulator: rate change failed", "err", reply.Err)
				break
			}
			if reply.Result == engine.ResultOK {
				s.walk.moved(cmd.Pool, cmd.Rate)
			}
		}
	}
}
