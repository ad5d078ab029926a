package engine_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// owedBacklog builds a state whose one endpoint is owed n quote.created
// events, and returns it with the events' ids in log order.
func owedBacklog(tb testing.TB, n int) (*world, engine.WebhookID, []engine.EventID) {
	w := newWorld(tb)
	ada := w.createClient("ada").Client
	hook := engine.WebhookID(w.newID())
	w.apply(&engine.WebhookCreated{At: w.now, Webhook: hook, Client: ada, Mode: engine.ModeSandbox, URL: "https://a.example/h",
		Events: engine.WebhookQuoteCreated, Secret: "whsec_t"})
	var ids []engine.EventID
	for range n {
		id := engine.QuoteID(w.newID())
		ev := &engine.QuoteCreated{At: w.now, Quote: id, Client: ada, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
			Direction: engine.DirectionSource, Amount: 1, ProposedRate: engine.RateFromUnits(1), Reference: engine.MustRef("OJA-X"),
			ExpiresAt: w.now + 1000}
		// A quote needs a slice of a pool: one pool, ample.
		if len(w.state.Pools) == 0 {
			p := w.createPool(engine.ModeSandbox, pairNGNUSDT, "p", engine.RateFromUnits(1))
			w.deposit(p, engine.AmountMax)
		}
		for _, p := range w.state.Pools {
			ev.Allocations = []engine.Allocation{{ID: engine.AllocationID(w.newID()), Pool: p.ID, PoolAccount: p.Liquidity.ID,
				Rate: engine.RateFromUnits(1), Source: 1, Destination: 1}}
		}
		if err := w.state.Apply(ev); err != nil {
			tb.Fatal(err)
		}
		ids = append(ids, engine.WebhookEventID(id, engine.WebhookQuoteCreated))
	}
	return w, hook, ids
}

// TestWebhookSettleInAnyOrder: settling owed events in any order leaves
// exactly the others, in log order, however the outbox's holes and
// compactions fall; a settled or unknown event settles nothing; the state
// (its hash, its snapshot) does not depend on the holes.
func TestWebhookSettleInAnyOrder(t *testing.T) {
	w, hook, ids := owedBacklog(t, 500)
	rng := rand.New(rand.NewPCG(7, 11))
	order := slices.Clone(ids)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	want := slices.Clone(ids)
	for step, id := range order[:450] {
		w.apply(&engine.WebhookSettled{At: w.now, Webhook: hook, Event: id, Delivered: true})
		w.apply(&engine.WebhookSettled{At: w.now, Webhook: hook, Event: id, Delivered: true}) // again: nothing
		want = slices.DeleteFunc(want, func(e engine.EventID) bool { return e == id })
		h := w.state.Webhooks[hook]
		var got []engine.EventID
		for _, e := range h.OwedEvents() {
			got = append(got, e.ID)
		}
		if !slices.Equal(got, want) || h.OwedCount() != len(want) {
			t.Fatalf("after %d settlements: %d owed, want %d (count %d)", step+1, len(got), len(want), h.OwedCount())
		}
		if step%97 == 0 {
			decoded, err := engine.DecodeState(engine.EncodeState(w.state))
			if err != nil {
				t.Fatal(err)
			}
			if decoded.Hash() != w.state.Hash() {
				t.Fatalf("after %d settlements the outbox's holes change the state's hash", step+1)
			}
		}
	}
}

// BenchmarkWebhookSettle: applying the settlement of every event of a full
// outbox (10,000 owed), in delivery order. Was O(outbox) each.
//
//	go test -run '^$' -bench WebhookSettle ./engine/
func BenchmarkWebhookSettle(b *testing.B) {
	for range b.N {
		b.StopTimer()
		w, hook, ids := owedBacklog(b, engine.WebhookOwedMax)
		b.StartTimer()
		for _, id := range ids {
			if err := w.state.Apply(&engine.WebhookSettled{At: w.now, Webhook: hook, Event: id, Delivered: true}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*engine.WebhookOwedMax), "ns/settlement")
}
