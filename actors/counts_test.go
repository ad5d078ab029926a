package actors_test

import (
	"testing"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// TestQuoteCountsFollowTransitions: the per-status counts behind /metrics
// are kept incrementally; they must equal a count of the quotes themselves
// after creates, transitions and a restart.
func TestQuoteCountsFollowTransitions(t *testing.T) {
	clk := newClock()
	n := newNode(t, testConfig(clk))
	c := newClient(t, n.sys, "counted")
	pool := newPool(t, n.sys, engine.ModeSandbox, pairNGNUSDT, "p", "0.000625", "1000")
	var ids []engine.QuoteID
	for range 6 {
		r := n.sys.CreateQuote(&actors.CreateQuote{Client: c.ID, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
			Direction: engine.DirectionDestination, Amount: 1_000_000, Rate: rate(t, "0.0006")})
		if r.Err != nil || r.Result != engine.ResultOK {
			t.Fatalf("create: %v %s", r.Err, r.Result)
		}
		ids = append(ids, r.Quote.ID)
	}
	wallet := walletOf(t, c, engine.ModeSandbox, engine.CurrencyUSDT)
	accept := &actors.TransitionQuote{Operation: actors.OperationAccept, Accept: engine.AcceptQuote{
		NamesPoolAccount: true, PoolAccount: pool.Liquidity.ID,
		Settlement: engine.Settlement{Kind: engine.SettlementWallet, Account: wallet}}}
	for i, op := range []*actors.TransitionQuote{
		accept, accept, {Operation: actors.OperationCancel}, {Operation: actors.OperationCancel},
	} {
		if r := n.sys.TransitionQuote(c.ID, engine.ModeSandbox, ids[i], op); r.Err != nil || r.Result != engine.ResultOK {
			t.Fatalf("transition %d: %v %s", i, r.Err, r.Result)
		}
	}
	if r := n.sys.TransitionQuote(c.ID, engine.ModeSandbox, ids[0], &actors.TransitionQuote{Operation: actors.OperationComplete}); r.Err != nil || r.Result != engine.ResultOK {
		t.Fatalf("complete: %v %s", r.Err, r.Result)
	}
	want := map[engine.Status]int{engine.StatusPending: 2, engine.StatusAwaitingPayment: 1,
		engine.StatusCompleted: 1, engine.StatusCancelled: 2}
	check := func(sys *actors.System, when string) {
		t.Helper()
		got := sys.QuoteCounts()
		for _, st := range engine.Statuses {
			if got[engine.ModeSandbox][st] != want[st] {
				t.Errorf("%s: %s quotes = %d, want %d", when, st, got[engine.ModeSandbox][st], want[st])
			}
			if got[engine.ModeLive][st] != 0 {
				t.Errorf("%s: live %s quotes = %d, want 0", when, st, got[engine.ModeLive][st])
			}
		}
	}
	check(n.sys, "live")
	n = n.restart()
	check(n.sys, "after a restart")
}
