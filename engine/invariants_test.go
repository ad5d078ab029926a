package engine

import (
	"strings"
	"testing"
)

// TestInvariantsHook: with `-tags invariants`, State.Apply panics at the
// first event after which the state breaks an invariant; without the tag it
// does not look. The state is corrupted behind Apply's back (as a bug in an
// entity method would), then a harmless event is applied.
func TestInvariantsHook(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(s *State, p *Pool)
		want    string
	}{
		{"hold over balance", func(_ *State, p *Pool) { p.Liquidity.Held = p.Liquidity.Balance + 1 }, "ledger of sandbox"},
		{"money from nowhere", func(s *State, _ *Pool) { s.Treasuries[ModeLive].Clearing[CurrencyNGN]-- }, "ledger of live"},
		{"hold without a quote", func(_ *State, p *Pool) { p.Liquidity.Held++ }, "open quotes' slices"},
		{"book drifted from pool", func(s *State, p *Pool) { s.Book(p.Mode, p.Pair).AddAvailable(p.ID, -1) }, "book entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewState()
			pool := &PoolCreated{At: 1, Pool: PoolID{1}, Mode: ModeSandbox, Name: "p", Pair: DefaultMarkets().PairList()[0], Rate: RateFromUnits(9_000_000_000_000_000_000),
				LiquidityAccount: AccountID{2}, ProceedsAccount: AccountID{3}}
			for _, ev := range []Event{pool, &PoolDeposited{At: 2, Pool: pool.Pool, Amount: 1000}} {
				if err := s.Apply(ev); err != nil {
					t.Fatal(err)
				}
			}
			tc.corrupt(s, s.Pools[pool.Pool])
			var panicked any
			func() {
				defer func() { panicked = recover() }()
				_ = s.Apply(&PoolRateSet{At: 3, Pool: pool.Pool, Rate: RateFromUnits(6_000_000_000_000_000_000)})
			}()
			switch {
			case !InvariantsEnabled && panicked != nil:
				t.Fatalf("without -tags invariants Apply panicked: %v", panicked)
			case InvariantsEnabled && panicked == nil:
				t.Fatal("with -tags invariants Apply did not notice the broken state")
			case InvariantsEnabled && !strings.Contains(panicked.(string), tc.want):
				t.Fatalf("panic %q does not mention %q", panicked, tc.want)
			}
		})
	}
}
