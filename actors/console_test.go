package actors_test

import (
	"testing"
	"time"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// TestConsoleReadModels: the console's minute counts record each quote
// reaching a status in the minute it did (creations as pending); the
// largest exposures are what each key's open quotes reserve per pair, of
// the mode asked, none with nothing reserved, the larger first with their
// shares; the quotes awaiting payment come soonest-expiring first, and the
// payments received newest first, a page at a time.
func TestConsoleReadModels(t *testing.T) {
	clk := newClock()
	sys := newNode(t, testConfig(clk)).sys
	ada, bayo := newClient(t, sys, "ada"), newClient(t, sys, "bayo")
	adaKey := admin(t, sys, &actors.CreateKey{Client: ada.ID, Mode: engine.ModeSandbox}).Key.ID
	bayoKey := admin(t, sys, &actors.CreateKey{Client: bayo.ID, Mode: engine.ModeSandbox}).Key.ID
	newPool(t, sys, engine.ModeSandbox, pairNGNUSDT, "lagos", "0.000625", "100000")
	create := func(c *engine.Client, key engine.KeyID) *engine.Quote {
		return mustQuote(t, sys, &actors.CreateQuote{Key: key, Client: c.ID, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
			Direction: engine.DirectionDestination, Amount: amount(t, "10", engine.CurrencyUSDT), Rate: rate(t, "0.0006"),
			Chain: engine.ChainTron})
	}
	a1, a2, a3 := create(ada, adaKey), create(ada, adaKey), create(ada, adaKey)
	b1 := create(bayo, bayoKey)
	clk.Advance(time.Second)
	a2 = mustTransition(t, sys, a2, jsonAccept(t, ada, a2))
	clk.Advance(time.Second)
	a1 = mustTransition(t, sys, a1, jsonAccept(t, ada, a1))
	mustTransition(t, sys, b1, cancelOp)
	clk.Advance(2 * time.Minute)
	mustTransition(t, sys, a3, cancelOp)

	act := sys.Activity(engine.ModeSandbox)
	if len(act) != actors.ActivityMinutes {
		t.Fatalf("%d minutes of activity", len(act))
	}
	now, then := act[len(act)-1], act[len(act)-3]
	if now.Minute != clk.Millis()/60_000 || then.Minute != now.Minute-2 {
		t.Fatalf("minutes %d and %d at %d", then.Minute, now.Minute, clk.Millis()/60_000)
	}
	want := map[engine.Status]int{engine.StatusPending: 4, engine.StatusAwaitingPayment: 2, engine.StatusCancelled: 1}
	for _, st := range engine.Statuses {
		if then.Counts[st] != want[st] {
			t.Errorf("first minute %s: %d, want %d", st, then.Counts[st], want[st])
		}
		if w := map[engine.Status]int{engine.StatusCancelled: 1}[st]; now.Counts[st] != w {
			t.Errorf("last minute %s: %d, want %d", st, now.Counts[st], w)
		}
	}
	if live := sys.Activity(engine.ModeLive); live[len(live)-3].Counts[engine.StatusPending] != 0 {
		t.Fatalf("live activity counted sandbox quotes: %v", live[len(live)-3])
	}

	// ada's two open quotes reserve 20 USDT of NGN/USDT, all of it; bayo
	// holds nothing (cancelled), so is not listed.
	books, err := sys.LargestExposures(engine.ModeSandbox, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ngn actors.BookExposures
	for _, b := range books {
		if b.Pair == pairNGNUSDT {
			ngn = b
		} else if len(b.Keys) != 0 || b.Total != 0 {
			t.Fatalf("%s exposures %+v", b.Pair, b)
		}
	}
	twenty := amount(t, "20", engine.CurrencyUSDT)
	if ngn.Total != twenty || len(ngn.Keys) != 1 {
		t.Fatalf("NGN/USDT exposures %+v", ngn)
	}
	if k := ngn.Keys[0]; k.Key.ID != adaKey || k.Client.Name != "ada" || k.Reserved != twenty || k.Share != actors.ShareScale || k.Open != 2 {
		t.Fatalf("ada's exposure %+v: want 20 USDT, all of the book's, 2 open", k)
	}
	// A second key's quote: the shares split, the larger first.
	create(bayo, bayoKey)
	books, _ = sys.LargestExposures(engine.ModeSandbox, 10)
	for _, b := range books {
		if b.Pair == pairNGNUSDT {
			if len(b.Keys) != 2 || b.Keys[0].Key.ID != adaKey || b.Keys[0].Share != 666_666 || b.Keys[1].Share != 333_333 {
				t.Fatalf("after bayo's quote: %+v", b.Keys)
			}
		}
	}
	live, _ := sys.LargestExposures(engine.ModeLive, 10)
	for _, b := range live {
		if len(b.Keys) != 0 {
			t.Fatalf("live exposures %+v", b)
		}
	}

	page, more := sys.AwaitingPayment(engine.ModeSandbox, engine.QuoteID{}, 1)
	if len(page) != 1 || page[0].ID != a2.ID || !more {
		t.Fatalf("first page %v more %v: want a2 (accepted first, expires first)", page, more)
	}
	page, more = sys.AwaitingPayment(engine.ModeSandbox, page[0].ID, 1)
	if len(page) != 1 || page[0].ID != a1.ID || more {
		t.Fatalf("second page %v more %v: want a1, last", page, more)
	}
	if page, _ := sys.AwaitingPayment(engine.ModeLive, engine.QuoteID{}, 10); len(page) != 0 {
		t.Fatalf("live awaiting %v", page)
	}

	// Payments received, newest first, a page at a time, of the mode.
	for i, q := range []*engine.Quote{a2, a1} {
		clk.Advance(time.Second)
		tx, _ := engine.InboundIdentity(engine.CurrencyNGN, "tx-"+string(rune('a'+i)))
		if r := sys.RecordBankReceipt(q.Mode, q.Reference.String(), amount(t, "1000", engine.CurrencyNGN), tx, nil); r.Err != nil || r.Result != engine.ResultOK {
			t.Fatalf("bank receipt for %s: %v %s", q.Reference, r.Err, r.Result)
		}
	}
	got, more := sys.RecentReceipts(engine.ModeSandbox, 0, 1)
	if len(got) != 1 || got[0].Quote != a1.ID || !more {
		t.Fatalf("newest receipt %v more %v: want a1's", got, more)
	}
	got, more = sys.RecentReceipts(engine.ModeSandbox, 1, 1)
	if len(got) != 1 || got[0].Quote != a2.ID || more {
		t.Fatalf("second receipt %v more %v: want a2's, last", got, more)
	}
	if got, _ := sys.RecentReceipts(engine.ModeLive, 0, 10); len(got) != 0 {
		t.Fatalf("live receipts %v", got)
	}
}
