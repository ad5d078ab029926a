package engine_test

import (
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// TestSuspense: money with nothing to credit is held in suspense (the
// ledger still sums to zero: every apply checks it); its identity is
// taken at once — the same entry again is a repeat, a receipt or another
// entry of that bank id a conflict; applied to a quote it is a receipt of
// that quote in the client's wallet; returned it leaves through clearing
// under the return's reference, which no payout may use again; and all of
// it survives a snapshot.
func TestSuspense(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("ada").Client
	ngn := w.wallet(ada, engine.ModeLive, engine.CurrencyNGN)
	tr := w.state.Treasuries[engine.ModeLive]
	ps := w.state.Payments
	id := func(ref string) engine.Identity { return mustIdentity(engine.InboundIdentity(engine.CurrencyNGN, ref)) }
	hold := func(ref string, amount engine.Amount) *engine.ReceiptUnapplied {
		t.Helper()
		w.now += 1000
		res, ev, prior := tr.DecideUnapplied(ps, engine.UnappliedReceipt{ID: engine.UnappliedID(w.newID()), Currency: engine.CurrencyNGN,
			Amount: amount, Identity: id(ref), Remittance: "fees " + ref, Debtor: "Ada Obi"}, w.now)
		if res != engine.ResultOK || ev == nil || prior != nil {
			t.Fatalf("hold %s: %v %v %v", ref, res, ev, prior)
		}
		w.apply(ev)
		return ev
	}
	a := hold("FT-1", 50_000_00)
	b := hold("ft 2", 7_000_00)
	if tr.Suspense[engine.CurrencyNGN] != 57_000_00 || len(tr.UnappliedList()) != 2 || tr.UnappliedList()[0].ID != b.Receipt.ID {
		t.Fatalf("suspense %d, held %v", tr.Suspense[engine.CurrencyNGN], tr.UnappliedList())
	}
	// The same bank entry again, however spelled: a repeat; another
	// amount: a conflict; a receipt under that bank id: a conflict.
	if res, ev, prior := tr.DecideUnapplied(ps, engine.UnappliedReceipt{ID: engine.UnappliedID(w.newID()), Currency: engine.CurrencyNGN,
		Amount: 50_000_00, Identity: id(" ft-1 ")}, w.now); res != engine.ResultOK || ev != nil || prior == nil {
		t.Errorf("the same entry again: %v %v %v", res, ev, prior)
	}
	if res, _, _ := tr.DecideUnapplied(ps, engine.UnappliedReceipt{ID: engine.UnappliedID(w.newID()), Currency: engine.CurrencyNGN,
		Amount: 1, Identity: id("FT-1")}, w.now); res != engine.ResultReceiptConflict {
		t.Errorf("another amount under the same bank id: %v", res)
	}
	pool := w.createPool(engine.ModeLive, pairNGNUSDT, "lagos", decimalRate(t, "0.000625"))
	w.deposit(pool, 1_000_000_000)
	_, q := w.createQuote(quoteRequest{client: ada, mode: engine.ModeLive, pair: pairNGNUSDT,
		direction: engine.DirectionSource, amount: 50_000_00, rate: decimalRate(t, "0.0006")})
	if q == nil {
		t.Fatal("no quote")
	}
	if res, _, _ := tr.DecideReceipt(ps, q, engine.ReceiptRequest{Method: engine.ReceiptBank, Identity: id("FT-1"), Amount: 50_000_00}, w.now); res != engine.ResultReceiptConflict {
		t.Errorf("a receipt claiming money held in suspense: %v", res)
	}
	// Applied to the quote: a receipt of it, in the client's wallet.
	w.now += 1000
	res, ev := tr.DecideSettle(ps, engine.SettleRequest{Unapplied: a.Receipt.ID, Wallet: ngn.ID, Quote: q.ID}, w.now)
	if res != engine.ResultOK {
		t.Fatalf("apply: %v", res)
	}
	w.apply(ev)
	if ngn.Balance != 50_000_00 || tr.Suspense[engine.CurrencyNGN] != 7_000_00 || len(tr.ReceiptsOf(q.ID)) != 1 {
		t.Fatalf("after applying: wallet %d, suspense %d, receipts %v", ngn.Balance, tr.Suspense[engine.CurrencyNGN], tr.ReceiptsOf(q.ID))
	}
	r := tr.ReceiptsOf(q.ID)[0]
	if got, ok := ps.Receipt(r.ReceiptID()); !ok || got != r || r.Kind != engine.PaymentReceipt || r.Identity != id("FT-1") {
		t.Fatalf("the applied money as a receipt: %+v", r)
	}
	if res, _ := tr.DecideSettle(ps, engine.SettleRequest{Unapplied: a.Receipt.ID, Wallet: ngn.ID}, w.now); res != engine.ResultUnappliedNotFound {
		t.Errorf("applying it twice: %v", res)
	}
	// Returned: it leaves suspense through clearing; the return's
	// reference is taken.
	back := mustIdentity(engine.OutboundIdentity(engine.CurrencyNGN, "RET-7"))
	if res, _ := tr.DecideSettle(ps, engine.SettleRequest{Unapplied: b.Receipt.ID, Return: id("RET-7")}, w.now); res != engine.ResultValidation {
		t.Errorf("a return under an inbound reference: %v", res)
	}
	w.now += 1000
	res, ev = tr.DecideSettle(ps, engine.SettleRequest{Unapplied: b.Receipt.ID, Return: back}, w.now)
	if res != engine.ResultOK {
		t.Fatalf("return: %v", res)
	}
	w.apply(ev)
	if tr.Suspense[engine.CurrencyNGN] != 0 || len(tr.UnappliedList()) != 0 {
		t.Fatalf("after returning: suspense %d, held %v", tr.Suspense[engine.CurrencyNGN], tr.UnappliedList())
	}
	if res, _, _ := tr.DecideWithdrawal(ps, engine.MoneyRequest{Account: ngn.ID, Amount: 1, Reference: back}, nil, w.now); res != engine.ResultReceiptConflict {
		t.Errorf("a payout under the return's reference: %v", res)
	}
	// Everything in a snapshot: a held one too.
	c := hold("FT-3", 3_00)
	decoded, err := engine.DecodeState(engine.EncodeState(w.state))
	if err != nil {
		t.Fatal(err)
	}
	dt := decoded.Treasuries[engine.ModeLive]
	if decoded.Hash() != w.state.Hash() || dt.Suspense[engine.CurrencyNGN] != 3_00 || len(dt.UnappliedList()) != 1 ||
		*dt.UnappliedList()[0] != c.Receipt {
		t.Fatalf("after a snapshot: suspense %d, held %v", dt.Suspense[engine.CurrencyNGN], dt.UnappliedList())
	}
	if res, ev, _ := dt.DecideUnapplied(decoded.Payments, engine.UnappliedReceipt{ID: engine.UnappliedID(w.newID()), Currency: engine.CurrencyNGN,
		Amount: 50_000_00, Identity: id("FT-1")}, w.now); res == engine.ResultOK && ev != nil {
		t.Error("after a snapshot an applied bank id can be held again")
	}
	if res, _ := dt.DecideSettle(decoded.Payments, engine.SettleRequest{Unapplied: c.Receipt.ID, Wallet: ngn.ID}, w.now); res != engine.ResultOK {
		t.Errorf("the held one after a snapshot: %v", res)
	}
}
