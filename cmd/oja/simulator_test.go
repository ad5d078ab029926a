package main

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/internal/poll"
)

// simulatedPools are the demo pools as views, with fixed ids, plus one
// suspended pool and one pool outside the demo table.
func simulatedPools(t testing.TB) []*engine.Pool {
	t.Helper()
	var pools []*engine.Pool
	for i, d := range demoPools {
		r, err := engine.RateFromDecimal(decimal.RequireFromString(d.rate))
		if err != nil {
			t.Fatal(err)
		}
		pools = append(pools, &engine.Pool{ID: engine.PoolID{byte(i + 1)}, Mode: engine.ModeSandbox,
			Name: d.name, Pair: d.pair, Rate: r, Active: true})
	}
	pools = append(pools,
		&engine.Pool{ID: engine.PoolID{100}, Mode: engine.ModeSandbox, Name: "Suspended", Pair: engine.DefaultMarkets().PairList()[0],
			Rate: engine.RateFromUnits(625_000_000_000_000), Active: false},
		&engine.Pool{ID: engine.PoolID{101}, Mode: engine.ModeSandbox, Name: "Operator's own", Pair: engine.DefaultMarkets().PairList()[2],
			Rate: engine.RateFromUnits(9_400_000_000_000_000), Active: true})
	return pools
}

// walkSteps runs steps of a walk seeded with seed over pools, applying each
// change to the views as the system would, and returns every rate set.
func walkSteps(pools []*engine.Pool, seed uint64, steps int) [][]actors.PoolCommand {
	w := newMarketWalk(seed)
	byID := map[engine.PoolID]*engine.Pool{}
	for _, p := range pools {
		byID[p.ID] = p
	}
	var out [][]actors.PoolCommand
	for range steps {
		// The system lists pools in no particular order.
		shuffled := slices.Clone(pools)
		slices.Reverse(shuffled)
		cmds := w.step(shuffled)
		for _, c := range cmds {
			byID[c.Pool].Rate = c.Rate
			w.moved(c.Pool, c.Rate)
		}
		out = append(out, cmds)
	}
	return out
}

func TestMarketWalkIsReproducible(t *testing.T) {
	a := walkSteps(simulatedPools(t), 7, 200)
	b := walkSteps(simulatedPools(t), 7, 200)
	if !slices.EqualFunc(a, b, slices.Equal) {
		t.Fatal("the same seed gave two different walks")
	}
	c := walkSteps(simulatedPools(t), 8, 200)
	if slices.EqualFunc(a, c, slices.Equal) {
		t.Fatal("seeds 7 and 8 gave the same walk")
	}
	moves := 0
	for _, step := range a {
		moves += len(step)
		for _, cmd := range step {
			if cmd.Pool == (engine.PoolID{100}) {
				t.Fatal("a suspended pool was moved")
			}
		}
	}
	if moves < 200*len(demoPools)/2 {
		t.Fatalf("only %d moves in 200 steps of %d pools", moves, len(demoPools)+1)
	}
}

func TestMarketWalkBounds(t *testing.T) {
	pools := simulatedPools(t)
	anchors := map[engine.PoolID]decimal.Decimal{}
	last := map[engine.PoolID]decimal.Decimal{}
	for _, p := range pools {
		anchors[p.ID] = p.Rate.Decimal()
		last[p.ID] = p.Rate.Decimal()
	}
	stepMax := decimal.RequireFromString("0.0005") // ±0.05 % of the anchor
	bandMax := decimal.RequireFromString("0.02")   // ±2 % of the anchor
	lowest, highest := map[engine.PoolID]decimal.Decimal{}, map[engine.PoolID]decimal.Decimal{}
	for i, step := range walkSteps(pools, 1, 10_000) {
		for _, cmd := range step {
			anchor, rate := anchors[cmd.Pool], cmd.Rate.Decimal()
			// One quantum (7 significant digits) of rounding is allowed.
			quantum := anchor.Mul(decimal.RequireFromString("0.000001"))
			if move := rate.Sub(last[cmd.Pool]).Abs(); move.GreaterThan(anchor.Mul(stepMax).Add(quantum)) {
				t.Fatalf("step %d: pool %v moved %s from %s (anchor %s)", i, cmd.Pool[0], move, last[cmd.Pool], anchor)
			}
			if away := rate.Sub(anchor).Abs(); away.GreaterThan(anchor.Mul(bandMax).Add(quantum)) {
				t.Fatalf("step %d: pool %v at %s, %s from its anchor %s", i, cmd.Pool[0], rate, away, anchor)
			}
			if digits := len(strings.TrimRight(rate.Coefficient().String(), "0")); digits > simulatorDigits {
				t.Fatalf("step %d: rate %s has %d significant digits", i, rate, digits)
			}
			last[cmd.Pool] = rate
			if l, ok := lowest[cmd.Pool]; !ok || rate.LessThan(l) {
				lowest[cmd.Pool] = rate
			}
			if h, ok := highest[cmd.Pool]; !ok || rate.GreaterThan(h) {
				highest[cmd.Pool] = rate
			}
		}
	}
	// The walk goes somewhere, and the band stops it: some pools reach its
	// edges (a fixed seed, so this is not a matter of luck).
	atEdge := 0
	for id, anchor := range anchors {
		if id == (engine.PoolID{100}) {
			continue
		}
		if highest[id].Sub(lowest[id]).LessThan(anchor.Mul(decimal.RequireFromString("0.01"))) {
			t.Errorf("pool %v ranged only %s..%s around %s", id[0], lowest[id], highest[id], anchor)
		}
		edge := anchor.Mul(decimal.RequireFromString("0.0199"))
		if anchor.Sub(lowest[id]).GreaterThan(edge) || highest[id].Sub(anchor).GreaterThan(edge) {
			atEdge++
		}
	}
	if atEdge < 3 {
		t.Errorf("only %d pools reached an edge of the band", atEdge)
	}
}

func TestMarketWalkFollowsOperator(t *testing.T) {
	pools := simulatedPools(t)[:1]
	w := newMarketWalk(1)
	for range 10 {
		for _, c := range w.step(pools) {
			pools[0].Rate = c.Rate
			w.moved(c.Pool, c.Rate)
		}
	}
	// An operator sets a rate far outside the band: it becomes the anchor.
	pools[0].Rate = engine.RateFromUnits(700_000_000_000_000) // 0.0007
	for range 100 {
		for _, c := range w.step(pools) {
			if d := c.Rate.Decimal().Sub(decimal.RequireFromString("0.0007")).Abs(); d.GreaterThan(decimal.RequireFromString("0.000014")) {
				t.Fatalf("rate %s left the band around the operator's 0.0007", c.Rate.Decimal())
			}
			pools[0].Rate = c.Rate
			w.moved(c.Pool, c.Rate)
		}
	}
}

// fakeMarket records rate changes and applies them to its pool views.
type fakeMarket struct {
	mu      sync.Mutex
	pools   []*engine.Pool
	changes []actors.PoolCommand
}

func (m *fakeMarket) Pools(mode engine.Mode) []*engine.Pool {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*engine.Pool
	for _, p := range m.pools {
		if p.Mode == mode {
			c := *p
			out = append(out, &c)
		}
	}
	return out
}

func (m *fakeMarket) ChangePool(cmd *actors.PoolCommand) *actors.PoolReply {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.changes = append(m.changes, *cmd)
	for _, p := range m.pools {
		if p.ID == cmd.Pool {
			p.Rate = cmd.Rate
			c := *p
			return &actors.PoolReply{Result: engine.ResultOK, Pool: &c}
		}
	}
	return &actors.PoolReply{Result: engine.ResultPoolNotFound}
}

func (m *fakeMarket) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.changes)
}

func TestMarketSimulatorRunsAndStops(t *testing.T) {
	pools := simulatedPools(t)
	live := &engine.Pool{ID: engine.PoolID{200}, Mode: engine.ModeLive, Name: demoPools[0].name,
		Pair: demoPools[0].pair, Rate: pools[0].Rate, Active: true}
	m := &fakeMarket{pools: append(pools, live)}
	sim := startMarketSimulator(m, 1, 10*time.Millisecond, slog.New(slog.DiscardHandler))
	t.Cleanup(sim.Stop) // stopping twice is harmless: the test stops it below
	poll.Until(t, 5*time.Second, func() string {
		if n := m.count(); n < 3*len(demoPools) {
			return fmt.Sprintf("%d changes", n)
		}
		return ""
	})
	started := time.Now()
	sim.Stop()
	sim.Stop() // idempotent
	if took := time.Since(started); took > time.Second {
		t.Fatalf("Stop took %s", took)
	}
	// No change after Stop: its goroutine, the only one making changes,
	// has ended by the time Stop returns.
	select {
	case <-sim.done:
	default:
		t.Fatal("Stop returned while the simulator still runs")
	}
	for _, c := range m.changes {
		if c.Pool == live.ID {
			t.Fatal("a live pool was moved")
		}
		if c.Rate.IsZero() || c.Status != nil || c.Deposit != 0 || c.Withdraw != 0 {
			t.Fatalf("change %+v is not a rate change", c)
		}
	}
	// The same seed against the same pools: the same first changes as the
	// pure walk.
	want := walkSteps(simulatedPools(t), 1, 1)[0]
	if got := m.changes[:len(want)]; !slices.Equal(got, want) {
		t.Fatalf("first step %v; want %v", got, want)
	}
}
