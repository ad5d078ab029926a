package engine_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// TestStatementPagesAndRetention: a wallet's statement pages newest first
// by cursor; the retention forgets postings and receipts older than its
// cutoff (a cursor naming one is unknown then), the balance after each
// kept posting unchanged; forgetting is in snapshots too.
func TestStatementPagesAndRetention(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("ada").Client
	wallet := w.wallet(ada, engine.ModeLive, engine.CurrencyNGN)
	for i := range 5 {
		w.now += 1000
		w.apply(&engine.AccountDeposited{At: w.now, Account: wallet.ID, Amount: engine.Amount(100 * (i + 1))})
	}
	tr := w.state.Treasuries[engine.ModeLive]
	page, more, ok := tr.Statement(wallet.ID, 0, 2)
	if !ok || !more || len(page) != 2 || page[0].Amount != 500 || page[0].BalanceAfter != 1500 || page[1].Amount != 400 {
		t.Fatalf("first page: %+v more %v ok %v", page, more, ok)
	}
	page, more, ok = tr.Statement(wallet.ID, page[1].Seq, 10)
	if !ok || more || len(page) != 3 || page[2].Amount != 100 || page[2].BalanceAfter != 100 {
		t.Fatalf("second page: %+v more %v ok %v", page, more, ok)
	}
	oldest := page[2].Seq
	id := engine.PostingID(engine.ModeLive, oldest)
	if seq, ok := engine.ParsePostingID(engine.ModeLive, id); !ok || seq != oldest {
		t.Errorf("ParsePostingID(%q) = %d %v", id, seq, ok)
	}
	for _, bad := range []string{"", "txn_", "txn_s000000000000001", "txn_l1", "txn_l00000000000001g", id + "0"} {
		if _, ok := engine.ParsePostingID(engine.ModeLive, bad); ok {
			t.Errorf("ParsePostingID(%q) accepted", bad)
		}
	}

	// Forget what is older than the third deposit.
	cutoff := int64(worldStart + 3000)
	if dropped := w.state.ForgetEnded(cutoff); dropped != 2 {
		t.Errorf("forgot %d, want the 2 postings before the cutoff", dropped)
	}
	if _, _, ok := tr.Statement(wallet.ID, oldest, 10); ok {
		t.Error("a cursor naming a forgotten posting is still known")
	}
	page, more, _ = tr.Statement(wallet.ID, 0, 10)
	if more || len(page) != 3 || page[2].Amount != 300 || page[2].BalanceAfter != 600 {
		t.Errorf("after the retention: %+v", page)
	}
	if wallet.Balance != 1500 {
		t.Errorf("forgetting postings changed the balance: %d", wallet.Balance)
	}
	decoded, err := engine.DecodeState(engine.EncodeState(w.state))
	if err != nil {
		t.Fatal(err)
	}
	if decoded.Hash() != w.state.Hash() {
		t.Error("the snapshot of a state with forgotten postings differs")
	}
}

// TestReceiptForAForgottenQuote: a receipt for a quote the state has
// forgotten (the live registry forgets by another clock) still replays,
// credited to the wallet it names, and owes its payin.received; a receipt
// naming the wallet of another mode than its quote's is refused.
func TestReceiptForAForgottenQuote(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("ada").Client
	hook := engine.WebhookID(w.newID())
	w.apply(&engine.WebhookCreated{At: w.now, Webhook: hook, Client: ada, Mode: engine.ModeLive, URL: "https://a.example/h",
		Events: engine.WebhookPayInReceived, Secret: "whsec_t"})
	pool := w.createPool(engine.ModeLive, pairNGNUSDT, "lagos", decimalRate(t, "0.000625"))
	w.deposit(pool, decimalAmount(t, "100", engine.CurrencyUSDT))
	_, q := w.createQuote(quoteRequest{client: ada, mode: engine.ModeLive, pair: pairNGNUSDT, direction: engine.DirectionSource,
		amount: decimalAmount(t, "16000", engine.CurrencyNGN), rate: decimalRate(t, "0.0006")})
	w.cancel(q)
	live := w.wallet(ada, engine.ModeLive, engine.CurrencyNGN)
	sandbox := w.wallet(ada, engine.ModeSandbox, engine.CurrencyNGN)
	w.now += 10_000
	if w.state.ForgetEnded(w.now) == 0 {
		t.Fatal("the cancelled quote was not forgotten")
	}
	late := &engine.PaymentReceived{At: w.now, Method: engine.ReceiptBank, Quote: q.ID, Account: live.ID,
		Amount: decimalAmount(t, "16000", engine.CurrencyNGN), Reference: "NIP-LATE"}
	w.apply(late)
	if live.Balance != late.Amount {
		t.Errorf("late receipt: wallet %d, want %d", live.Balance, late.Amount)
	}
	if owed := w.state.Webhooks[hook].OwedEvents(); len(owed) != 1 || owed[0].Receipt != late || owed[0].Quote.Client != ada {
		t.Errorf("owed after the late receipt: %+v", owed)
	}
	other := *late
	other.Reference, other.Account = "NIP-OTHER", sandbox.ID
	_, q2 := w.createQuote(quoteRequest{client: ada, mode: engine.ModeLive, pair: pairNGNUSDT, direction: engine.DirectionSource,
		amount: decimalAmount(t, "16000", engine.CurrencyNGN), rate: decimalRate(t, "0.0006")})
	other.Quote = q2.ID
	before := w.state.Hash()
	if err := w.state.Apply(&other); err == nil || w.state.Hash() != before {
		t.Errorf("a receipt for a live quote into the sandbox wallet: %v", err)
	}
	// A receipt for a held quote too, then a snapshot holding both owed
	// payin.received events decodes to the same state.
	held := &engine.PaymentReceived{At: w.now, Method: engine.ReceiptBank, Quote: q2.ID, Account: live.ID,
		Amount: decimalAmount(t, "1", engine.CurrencyNGN), Reference: "NIP-HELD"}
	w.apply(held)
	decoded, err := engine.DecodeState(engine.EncodeState(w.state))
	if err != nil {
		t.Fatal(err)
	}
	if decoded.Hash() != w.state.Hash() {
		t.Error("a snapshot with owed payin.received events decodes to another state")
	}
	if owed := decoded.Webhooks[hook].OwedEvents(); len(owed) != 2 || owed[1].Receipt.Reference != "NIP-HELD" || owed[1].Quote.ID != q2.ID ||
		owed[0].Quote.Client != ada || owed[0].Quote.Mode != engine.ModeLive {
		t.Errorf("owed after the snapshot: %+v", owed)
	}
}

// TestTreasuryForgetTouched: Forget names exactly the quotes whose
// receipts it dropped (the treasury actor republishes their views from
// it), and keeps a quote's younger receipts.
func TestTreasuryForgetTouched(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("ada").Client
	live := w.wallet(ada, engine.ModeLive, engine.CurrencyNGN)
	q1, q2, q3 := engine.QuoteID(w.newID()), engine.QuoteID(w.newID()), engine.QuoteID(w.newID())
	tr := w.state.Treasuries[engine.ModeLive]
	receipt := func(q engine.QuoteID, ref string, at int64) {
		id, _ := engine.InboundIdentity(engine.CurrencyNGN, ref)
		tr.ApplyReceipt(w.state.Payments, &engine.PaymentReceived{At: at, Method: engine.ReceiptBank, Quote: q, Account: live.ID,
			Amount: 1, Reference: id.Text(), Identity: id}, id)
	}
	receipt(q1, "old-1", 10)
	receipt(q2, "old-2", 10)
	receipt(q2, "young-2", 30)
	receipt(q3, "young-3", 30)
	dropped, touched := tr.Forget(20)
	slices.SortFunc(touched, func(a, b engine.QuoteID) int { return bytes.Compare(a[:], b[:]) })
	want := []engine.QuoteID{q1, q2}
	slices.SortFunc(want, func(a, b engine.QuoteID) int { return bytes.Compare(a[:], b[:]) })
	if !slices.Equal(touched, want) {
		t.Fatalf("touched %v, want %v", touched, want)
	}
	if len(tr.ReceiptsOf(q1)) != 0 || len(tr.ReceiptsOf(q2)) != 1 || tr.ReceiptsOf(q2)[0].Reference != "young-2" || len(tr.ReceiptsOf(q3)) != 1 {
		t.Fatalf("after Forget: q1 %v, q2 %v, q3 %v", tr.ReceiptsOf(q1), tr.ReceiptsOf(q2), tr.ReceiptsOf(q3))
	}
	if dropped != 4 { // two receipts and their two postings
		t.Fatalf("dropped %d, want 4", dropped)
	}
}
