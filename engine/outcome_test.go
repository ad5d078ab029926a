package engine_test

import (
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// RouteOutcome sends each quote event's effects to the right owners: one
// slice effect per allocation, the book's delta only on create and release,
// a credit only for a completion settled to a wallet.
func TestRouteOutcome(t *testing.T) {
	q := newTestQuote(t, engine.StatusAwaitingPayment) // accepted to the partner's wallet
	var o engine.Outcome
	check := func(ev engine.Event, kind engine.SliceEffectKind, delta int8, credit bool) {
		t.Helper()
		engine.RouteOutcome(q, ev, &o)
		if len(o.Slices) != len(q.Allocations()) {
			t.Fatalf("%s: %d slice effects for %d allocations", ev.Type(), len(o.Slices), len(q.Allocations()))
		}
		for i, e := range o.Slices {
			a := q.Allocations()[i]
			if e != (engine.SliceEffect{Pool: a.Pool, Kind: kind, Source: a.Source, Destination: a.Destination}) {
				t.Errorf("%s: slice %d effect %+v", ev.Type(), i, e)
			}
		}
		if o.BookDelta != delta || o.Book != (engine.BookKey{Mode: q.Mode, Pair: q.Pair}) {
			t.Errorf("%s: book %+v delta %d, want delta %d", ev.Type(), o.Book, o.BookDelta, delta)
		}
		if (o.Credit != nil) != credit {
			t.Errorf("%s: credit %+v, want credit %v", ev.Type(), o.Credit, credit)
		}
	}
	check(&engine.QuoteCreated{Quote: q.ID}, engine.SliceHold, -1, false)
	check(&engine.QuoteAccepted{Quote: q.ID}, engine.SliceAccepted, 0, false)
	check(&engine.QuoteCancelled{Quote: q.ID}, engine.SliceRelease, +1, false)
	check(&engine.QuoteExpired{Quote: q.ID}, engine.SliceRelease, +1, false)
	check(&engine.QuoteCompleted{Quote: q.ID}, engine.SliceSettle, 0, true)
	if st := q.SettlementOrZero(); o.Credit.Account != st.Account || o.Credit.Amount != q.TotalDestination() || o.Credit.Mode != q.Mode {
		t.Errorf("completion credit %+v, want %v to wallet %s", o.Credit, q.TotalDestination(), st.Account)
	}
	q.Accepted = &engine.Acceptance{At: q.Accepted.At, Settlement: engine.Settlement{Kind: engine.SettlementBank}}
	check(&engine.QuoteCompleted{Quote: q.ID}, engine.SliceSettle, 0, false) // paid out via clearing
}
