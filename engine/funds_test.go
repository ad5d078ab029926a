package engine_test

import (
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
