package actors_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/wal"
)

// marketsWithout is a markets file of NGN, GHS, USDT and XOF (no minor
// units) with NGN/USDT, NGN/GHS and XOF/USDT: GHS/USDT is gone (GHS keeps
// its collection account, so an open GHS quote can still be paid).
const marketsWithout = `{
 "currencies": [{"code":"NGN","kind":"fiat","minorUnits":%NGN%}, {"code":"GHS","kind":"fiat","minorUnits":2},
   {"code":"USDT","kind":"token","minorUnits":6,"chains":["TRON"]}, {"code":"XOF","kind":"fiat","minorUnits":0}],
 "pairs": [{"source":"NGN","destination":"USDT","minSourceAmount":"1000"}, {"source":"NGN","destination":"GHS"},
   {"source":"XOF","destination":"USDT","minSourceAmount":"500"}],
 "collectionAccounts": {"NGN":{"accountName":"N","accountNumber":"1","bankName":"B"},
   "GHS":{"accountName":"G","accountNumber":"3","bankName":"B"},
   "XOF":{"accountName":"X","accountNumber":"2","bankName":"B"}}
}`

func marketsConfig(t *testing.T, ngnMinorUnits string) *engine.MarketsConfig {
	t.Helper()
	cfg, err := engine.ParseMarketsConfig([]byte(strings.ReplaceAll(marketsWithout, "%NGN%", ngnMinorUnits)))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestMarketsAcrossRestarts: a restart with other markets adds a currency
// (with wallets for the clients that existed before it) and a pair; a pair
// no longer in force takes no new quote while its open one runs its
// course; other minor units for a logged currency are refused.
func TestMarketsAcrossRestarts(t *testing.T) {
	c := newClock()
	n := newNode(t, testConfig(c))
	client := newClient(t, n.sys, "partner")
	ghsUSDT := engine.Pair{Source: engine.CurrencyGHS, Destination: engine.CurrencyUSDT}
	newPool(t, n.sys, engine.ModeSandbox, ghsUSDT, "accra", "0.0625", "100")
	open := mustQuote(t, n.sys, &actors.CreateQuote{Client: client.ID, Mode: engine.ModeSandbox, Pair: ghsUSDT,
		Direction: engine.DirectionSource, Amount: amount(t, "100", engine.CurrencyGHS), Rate: rate(t, "0.06"), Chain: engine.ChainTron})

	cfg := testConfig(c)
	cfg.Markets = marketsConfig(t, "2")
	n.cfg = cfg
	n = n.restart()
	xof, ok := engine.ParseCurrency("XOF")
	if !ok || xof.MinorUnits() != 0 {
		t.Fatalf("XOF: %v %v", xof, ok)
	}
	if got := n.sys.Markets().PairsText(); got != "NGN/USDT, NGN/GHS, XOF/USDT" {
		t.Errorf("pairs in force: %q", got)
	}
	r := n.sys.CreateQuote(&actors.CreateQuote{Client: client.ID, Mode: engine.ModeSandbox, Pair: ghsUSDT,
		Direction: engine.DirectionSource, Amount: amount(t, "100", engine.CurrencyGHS), Rate: rate(t, "0.06"), Chain: engine.ChainTron})
	if r.Err != nil || r.Result != engine.ResultInvalidCurrencyPair {
		t.Errorf("a quote on the removed pair: %v %s, want InvalidCurrencyPair", r.Err, r.Result)
	}
	accepted := mustTransition(t, n.sys, open, jsonAccept(t, client, open))
	if done := mustTransition(t, n.sys, accepted, completeOp); done.Status != engine.StatusCompleted {
		t.Errorf("the open quote of the removed pair: %s, want completed", done.Status)
	}
	for _, m := range engine.Modes {
		var found bool
		for _, a := range n.sys.ClientAccounts(client.ID, m) {
			found = found || a.Currency == xof
		}
		if !found {
			t.Errorf("%s: the client that existed before XOF has no XOF wallet", m)
		}
	}
	newPool(t, n.sys, engine.ModeSandbox, engine.Pair{Source: xof, Destination: engine.CurrencyUSDT}, "dakar", "0.0016", "100")
	xofUSDT := engine.Pair{Source: xof, Destination: engine.CurrencyUSDT}
	small := n.sys.CreateQuote(&actors.CreateQuote{Client: client.ID, Mode: engine.ModeSandbox, Pair: xofUSDT,
		Direction: engine.DirectionSource, Amount: 499, Rate: rate(t, "0.0016"), Chain: engine.ChainTron})
	if small.Result != engine.ResultOutsidePairBounds || small.Bounds.MinSource != 500 {
		t.Errorf("499 XOF: %s %+v, want OutsidePairBounds from 500", small.Result, small.Bounds)
	}
	q := mustQuote(t, n.sys, &actors.CreateQuote{Client: client.ID, Mode: engine.ModeSandbox, Pair: xofUSDT,
		Direction: engine.DirectionSource, Amount: 500, Rate: rate(t, "0.0016"), Chain: engine.ChainTron})
	if q.TotalDestination() != 800_000 {
		t.Errorf("500 XOF at 0.0016: %d micro-USDT, want 800000", q.TotalDestination())
	}
	n = n.restart() // the same markets again: nothing new is logged
	before := n.log.LastSeq()
	n = n.restart()
	if after := n.log.LastSeq(); after != before {
		t.Errorf("a restart with unchanged markets logged %d records", after-before)
	}

	n.stop()
	cfg.Markets = marketsConfig(t, "3")
	log, state := openRecovered(t, n.dir)
	defer log.Close()
	_, err := actors.RecordMarkets(state, log, cfg.Markets, c.Now())
	if err == nil || !strings.Contains(err.Error(), "currency NGN has minorUnits 3 in the markets file, but the log records it with 2") {
		t.Errorf("NGN with 3 minor units: %v", err)
	}
}

// openRecovered opens the log in dir and recovers its state.
func openRecovered(t *testing.T, dir string) (*wal.Log, *engine.State) {
	t.Helper()
	log, err := wal.Open(filepath.Join(dir, "store"), wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	state, _, err := actors.Recover(log, time.Now())
	if err != nil {
		log.Close()
		t.Fatal(err)
	}
	return log, state
}

// TestAcceptWithoutDepositKey: a pending token-source quote whose markets
// no longer configure a deposit key for its chain (a restart without the
// pair) is never accepted without payment instructions: the accept is
// refused (PayInUnavailable, 409) and the quote stays pending with its
// holds; with the key back, it is accepted with an address.
func TestAcceptWithoutDepositKey(t *testing.T) {
	example, err := os.ReadFile("../markets.example.json")
	if err != nil {
		t.Fatal(err)
	}
	withKeys, err := engine.ParseMarketsConfig(example)
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	cfg := testConfig(c)
	cfg.Markets = withKeys
	n := newNode(t, cfg)
	client := newClient(t, n.sys, "desk")
	usdtNGN := engine.Pair{Source: engine.CurrencyUSDT, Destination: engine.CurrencyNGN}
	pool := newPool(t, n.sys, engine.ModeSandbox, usdtNGN, "otc", "1612.5", "1000000")
	pending := mustQuote(t, n.sys, &actors.CreateQuote{Client: client.ID, Mode: engine.ModeSandbox, Pair: usdtNGN,
		Direction: engine.DirectionSource, Amount: amount(t, "100", engine.CurrencyUSDT), Rate: rate(t, "1600"), Chain: engine.ChainTron})

	n.cfg = testConfig(c) // the default markets: no USDT source, no deposit key
	n = n.restart()
	r := n.sys.TransitionQuote(client.ID, engine.ModeSandbox, pending.ID, jsonAccept(t, client, pending))
	if r.Err != nil || r.Result != engine.ResultPayInUnavailable || r.Quote == nil || r.Quote.Status != engine.StatusPending {
		t.Fatalf("accept without a deposit key: %v %s %+v, want PayInUnavailable and pending", r.Err, r.Result, r.Quote)
	}
	if q, _ := n.sys.Quote(client.ID, engine.ModeSandbox, pending.ID); q.Status != engine.StatusPending || q.PayIn != nil {
		t.Errorf("after the refused accept: %s %+v", q.Status, q.PayIn)
	}
	if p, _ := n.sys.Pool(pool.ID); p.Liquidity.Held != pending.TotalDestination() {
		t.Errorf("pool holds %d after the refused accept, want %d", p.Liquidity.Held, pending.TotalDestination())
	}

	n.cfg = cfg
	n = n.restart()
	accepted := mustTransition(t, n.sys, pending, jsonAccept(t, client, pending))
	if accepted.Status != engine.StatusAwaitingPayment || accepted.PayIn == nil || accepted.PayIn.Deposit == "" {
		t.Fatalf("accept with the key back: %s %+v", accepted.Status, accepted.PayIn)
	}
}

// TestAcceptWithoutCollectionAccount: the same for a fiat source whose
// collection account is no longer configured (its pair left the markets):
// refused, pending, holds kept; accepted once the account is back.
func TestAcceptWithoutCollectionAccount(t *testing.T) {
	c := newClock()
	n := newNode(t, testConfig(c))
	client := newClient(t, n.sys, "remit")
	ghsUSDT := engine.Pair{Source: engine.CurrencyGHS, Destination: engine.CurrencyUSDT}
	pool := newPool(t, n.sys, engine.ModeSandbox, ghsUSDT, "accra", "0.0625", "100")
	pending := mustQuote(t, n.sys, &actors.CreateQuote{Client: client.ID, Mode: engine.ModeSandbox, Pair: ghsUSDT,
		Direction: engine.DirectionSource, Amount: amount(t, "100", engine.CurrencyGHS), Rate: rate(t, "0.06"), Chain: engine.ChainTron})

	noGHS, err := engine.ParseMarketsConfig([]byte(`{
 "currencies": [{"code":"NGN","kind":"fiat","minorUnits":2}, {"code":"GHS","kind":"fiat","minorUnits":2},
   {"code":"USDT","kind":"token","minorUnits":6,"chains":["TRON"]}],
 "pairs": [{"source":"NGN","destination":"USDT"}],
 "collectionAccounts": {"NGN":{"accountName":"N","accountNumber":"1","bankName":"B"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(c)
	cfg.Markets = noGHS
	n.cfg = cfg
	n = n.restart()
	r := n.sys.TransitionQuote(client.ID, engine.ModeSandbox, pending.ID, jsonAccept(t, client, pending))
	if r.Err != nil || r.Result != engine.ResultPayInUnavailable || r.Quote == nil || r.Quote.Status != engine.StatusPending {
		t.Fatalf("accept without a collection account: %v %s %+v, want PayInUnavailable and pending", r.Err, r.Result, r.Quote)
	}
	if p, _ := n.sys.Pool(pool.ID); p.Liquidity.Held != pending.TotalDestination() {
		t.Errorf("pool holds %d after the refused accept, want %d", p.Liquidity.Held, pending.TotalDestination())
	}
	n.cfg = testConfig(c)
	n = n.restart()
	if q := mustTransition(t, n.sys, pending, jsonAccept(t, client, pending)); q.Status != engine.StatusAwaitingPayment {
		t.Fatalf("accept with the account back: %s", q.Status)
	}
}
