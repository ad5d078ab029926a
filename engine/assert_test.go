package engine

import (
	"strings"
	"testing"
)

// A pool's holds and releases still assert what they guard, and allocate
// nothing when the guard holds (assert's arguments, boxed before the call,
// were an allocation each on replay's path).
func TestPoolHoldAsserts(t *testing.T) {
	p := NewPool(&PoolCreated{Pool: PoolID{1}, Mode: ModeSandbox, Name: "p", Pair: Pair{CurrencyUSDT, CurrencyNGN}})
	p.Liquidity.Balance = 100
	if n := testing.AllocsPerRun(100, func() { p.ApplyHold(60); p.ApplyRelease(60) }); n != 0 {
		t.Errorf("a hold and its release allocate %.0f times", n)
	}
	mustPanic(t, "over-allocated", func() { p.ApplyHold(101) })
	p.Liquidity.Held = 0
	mustPanic(t, "released more than held", func() { p.ApplyRelease(1) })
	p.Liquidity.Held = 0
	mustPanic(t, "over available", func() { p.ApplyWithdraw(101) })
}

func mustPanic(t *testing.T, want string, fn func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if r := recover(); r == nil || !strings.Contains(r.(string), want) {
			t.Errorf("panic %v, want one saying %q", r, want)
		}
	}()
	fn()
}

// A long statement doubles its capacity when full instead of growing by a
// quarter (append's rule for long slices), so appending to it copies it
// whole only a few times: 100,000 postings move at most 22 times (about
// 30 by append's growth) and keep every posting in order.
func TestStatementGrowsByDoubling(t *testing.T) {
	var h []Posting
	moves := 0
	for i := range 100_000 {
		before := cap(h)
		h = appendPosting(h, Posting{Seq: uint64(i + 1)})
		if cap(h) != before {
			moves++
		}
	}
	if moves > 22 {
		t.Errorf("100,000 postings moved the statement %d times", moves)
	}
	for i, p := range h {
		if p.Seq != uint64(i+1) {
			t.Fatalf("posting %d holds seq %d", i, p.Seq)
		}
	}
}
