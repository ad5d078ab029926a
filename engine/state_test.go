package engine_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/engine"
)

// The tests of this file (and the scenario driver) build States only from
// events the engine itself decided: Book.Allocate for QuoteCreated, the
// Quote decision methods for the lifecycle, Pool.Withdraw for withdrawals.
// world is that driver: it keeps the clock, makes ids, applies each event
// and checks the ledger invariants after every one.

const (
	worldQuoteTTLMillis      = 300_000
	worldPaymentWindowMillis = 1_800_000
	worldStart               = 1_763_712_000_000 // 2025-11-21T08:00:00Z
)

var (
	pairNGNUSDT = engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT}
	pairGHSUSDT = engine.Pair{Source: engine.CurrencyGHS, Destination: engine.CurrencyUSDT}
	pairNGNGHS  = engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyGHS}
)

type world struct {
	t      testing.TB
	state  *engine.State
	now    int64
	serial int
	events []engine.Event
	// deposited is, per pool, the liquidity put in minus taken out (deposits,
	// withdrawals), for the "holds never exceed what came in" check.
	deposited map[engine.PoolID]engine.Amount
	// observer, when set, is handed the webhook effects of each event
	// applied (observe).
	observer engine.WebhookObserver
}

// observe seeds o with the state's endpoints and owed events and hands it
// the webhook effects of every event applied from now on, as the log
// follower does.
func (w *world) observe(o engine.WebhookObserver) {
	w.state.TellWebhooks(o)
	w.observer = o
	w.state.CollectEffects(true, false)
}

func newWorld(t testing.TB) *world {
	return &world{t: t, state: engine.NewState(), now: worldStart,
		deposited: make(map[engine.PoolID]engine.Amount)}
}

// idOf is a deterministic, random-looking id for a name, so that id order
// differs from creation order.
func idOf(name string) [16]byte {
	sum := sha256.Sum256([]byte("oja-test/" + name))
	var id [16]byte
	copy(id[:], sum[:16])
	return id
}

func (w *world) newID() [16]byte {
	w.serial++
	return idOf(fmt.Sprintf("#%d", w.serial))
}

// decimalRate parses a rate such as "0.000625".
func decimalRate(t testing.TB, text string) engine.Rate {
	t.Helper()
	r, err := engine.RateFromDecimal(decimal.RequireFromString(text))
	if err != nil {
		t.Fatalf("rate %q: %v", text, err)
	}
	return r
}

// decimalAmount parses an amount in units of c, such as "12.5".
func decimalAmount(t testing.TB, text string, c engine.Currency) engine.Amount {
	t.Helper()
	a, err := engine.AmountFromDecimal(decimal.RequireFromString(text), c)
	if err != nil {
		t.Fatalf("amount %q %s: %v", text, c, err)
	}
	return a
}

// apply applies ev, which must fit, records it and checks every invariant.
func (w *world) apply(ev engine.Event) {
	w.t.Helper()
	if err := w.state.Apply(ev); err != nil {
		w.t.Fatalf("apply %s: %v", ev.Type(), err)
	}
	if w.observer != nil {
		w.state.Effects().Tell(w.observer)
		w.state.ClearEffects()
	}
	w.events = append(w.events, ev)
	checkStateInvariants(w.t, w.state, w.deposited)
}

// checkStateInvariants checks spec §3 and §5 on s: per mode and currency
// the ledger sums to zero and the check is ok; every pool's holds are within
// its balance and equal the open quotes' slices on it; every book entry's
// available equals its pool's; no pool holds more than was put into it.
func checkStateInvariants(t testing.TB, s *engine.State, deposited map[engine.PoolID]engine.Amount) {
	t.Helper()
	for _, m := range engine.Modes {
		report := s.LedgerCheck(m)
		if !report.OK {
			t.Fatalf("ledger check of %s not ok: %v", m, report.Problems)
		}
		for _, c := range engine.DefaultMarkets().CurrencyList() {
			if got := report.Currencies[c].Sum; got != 0 {
				t.Fatalf("ledger of %s %s sums to %d, want 0", m, c, got)
			}
			var accounts engine.Amount
			for _, p := range s.Pools {
				if p.Mode == m {
					if p.Liquidity.Currency == c {
						accounts += p.Liquidity.Balance
					}
					if p.Proceeds.Currency == c {
						accounts += p.Proceeds.Balance
					}
				}
			}
			for _, a := range s.Treasuries[m].Wallets {
				if a.Currency == c {
					accounts += a.Balance
				}
			}
			accounts += s.Treasuries[m].Suspense[c]
			if got := s.ClearingBalance(m, c); got != -accounts {
				t.Fatalf("clearing %s %s = %d, want %d (minus every other account)", m, c, got, -accounts)
			}
		}
	}
	held := make(map[engine.PoolID]engine.Amount)
	for q := range s.Quotes.All() {
		if !q.Status.Open() {
			continue
		}
		for _, a := range q.Allocations() {
			held[a.Pool] += a.Destination
		}
	}
	for id, p := range s.Pools {
		if p.Liquidity.Held < 0 || p.Liquidity.Held > p.Liquidity.Balance {
			t.Fatalf("pool %s: held %d outside [0, balance %d]", p.Name, p.Liquidity.Held, p.Liquidity.Balance)
		}
		if p.Liquidity.Held != held[id] {
			t.Fatalf("pool %s: held %d, want %d (open quotes' slices)", p.Name, p.Liquidity.Held, held[id])
		}
		if p.Proceeds.Held != 0 {
			t.Fatalf("pool %s: proceeds held %d", p.Name, p.Proceeds.Held)
		}
		e, ok := s.Book(p.Mode, p.Pair).Entry(id)
		if !ok {
			t.Fatalf("pool %s missing from its book", p.Name)
		}
		if e.Available != p.Liquidity.Available() || e.Rate != p.Rate || e.Active != p.Active || e.RateSetAt != p.RateSetAt {
			t.Fatalf("pool %s: book entry %+v, pool available %d rate %d active %v", p.Name, e,
				p.Liquidity.Available(), p.Rate, p.Active)
		}
		if deposited != nil && p.Liquidity.Held > deposited[id] {
			t.Fatalf("pool %s: held %d over deposited %d", p.Name, p.Liquidity.Held, deposited[id])
		}
	}
}

func (w *world) createClient(name string) *engine.ClientCreated {
	w.t.Helper()
	ev := &engine.ClientCreated{At: w.now, Client: engine.ClientID(w.newID()), Name: name}
	for _, m := range engine.Modes {
		for _, c := range engine.DefaultMarkets().CurrencyList() {
			ev.Wallets = append(ev.Wallets, engine.WalletAccount{Mode: m, Currency: c, Account: engine.AccountID(w.newID())})
		}
	}
	w.apply(ev)
	return ev
}

func (w *world) createPool(m engine.Mode, p engine.Pair, name string, r engine.Rate) *engine.Pool {
	w.t.Helper()
	ev := &engine.PoolCreated{At: w.now, Pool: engine.PoolID(w.newID()), Mode: m, Name: name, Pair: p, Rate: r,
		LiquidityAccount: engine.AccountID(w.newID()), ProceedsAccount: engine.AccountID(w.newID())}
	w.apply(ev)
	return w.state.Pools[ev.Pool]
}

func (w *world) deposit(p *engine.Pool, amount engine.Amount) {
	w.t.Helper()
	w.apply(&engine.PoolDeposited{At: w.now, Pool: p.ID, Amount: amount})
	w.deposited[p.ID] += amount
}

// withdraw withdraws when the pool allows it and reports the decision.
func (w *world) withdraw(p *engine.Pool, amount engine.Amount) engine.Result {
	w.t.Helper()
	res := p.Withdraw(amount)
	if res == engine.ResultOK {
		w.apply(&engine.PoolWithdrawn{At: w.now, Pool: p.ID, Amount: amount})
		w.deposited[p.ID] -= amount
	}
	return res
}

func (w *world) wallet(client engine.ClientID, m engine.Mode, c engine.Currency) *engine.Account {
	w.t.Helper()
	a, ok := w.state.Treasuries[m].Wallet(client, c)
	if !ok {
		w.t.Fatalf("client %s has no %s %s wallet", client, m, c)
	}
	return a
}

// quoteRequest is a quote as a partner asks for it.
type quoteRequest struct {
	client    engine.ClientID
	mode      engine.Mode
	pair      engine.Pair
	direction engine.Direction
	amount    engine.Amount
	rate      engine.Rate
	listing   engine.PoolID
}

// createQuote allocates with the book and, when it fills, applies the
// QuoteCreated that records the slices.
func (w *world) createQuote(req quoteRequest) (engine.AllocationOutcome, *engine.Quote) {
	w.t.Helper()
	book := w.state.Book(req.mode, req.pair)
	out := book.Allocate(engine.AllocationRequest{Direction: req.direction, Amount: req.amount,
		MinRate: req.rate, Only: req.listing}, nil)
	if out.Result != engine.ResultOK {
		return out, nil
	}
	ev := &engine.QuoteCreated{At: w.now, Quote: engine.QuoteID(w.newID()), Client: req.client, Mode: req.mode,
		Pair: req.pair, Direction: req.direction, Amount: req.amount, ProposedRate: req.rate,
		Chain: engine.DefaultMarkets().DefaultChain(req.pair.Destination), Reference: engine.MustRef(fmt.Sprintf("OJA-%08d", w.serial)),
		ExpiresAt: w.now + worldQuoteTTLMillis}
	for _, s := range out.Slices {
		p := w.state.Pools[s.Pool]
		ev.Allocations = append(ev.Allocations, engine.Allocation{ID: engine.AllocationID(w.newID()), Pool: s.Pool,
			PoolAccount: p.Liquidity.ID, PoolName: p.Name, Rate: s.Rate, Source: s.Source,
			Destination: s.Destination, Reference: engine.MustRef(fmt.Sprintf("ALC-%010d", w.serial))})
	}
	w.apply(ev)
	return out, w.state.Quotes.Get(ev.Quote)
}

// walletAccept is the JSON accept: the quote's first pool account, settled
// to the partner's wallet in the destination currency.
func (w *world) walletAccept(q *engine.Quote) engine.AcceptQuote {
	return engine.AcceptQuote{NamesPoolAccount: true, PoolAccount: q.Allocations()[0].PoolAccount, Settlement: engine.Settlement{
		Kind: engine.SettlementWallet, Account: w.wallet(q.Client, q.Mode, q.Pair.Destination).ID},
		OwnerWallets: w.state.Clients[q.Client].Wallets}
}

func (w *world) accept(q *engine.Quote, cmd engine.AcceptQuote) engine.Result {
	w.t.Helper()
	res, ev := q.Accept(cmd, w.now, worldPaymentWindowMillis)
	if ev != nil {
		w.apply(ev)
	}
	return res
}

func (w *world) cancel(q *engine.Quote) engine.Result {
	w.t.Helper()
	res, ev := q.Cancel(w.now)
	if ev != nil {
		w.apply(ev)
	}
	return res
}

func (w *world) complete(q *engine.Quote) engine.Result {
	w.t.Helper()
	res, ev := q.Complete(w.now)
	if ev != nil {
		w.apply(ev)
	}
	return res
}

// expireDue applies every expiry due now and returns them.
func (w *world) expireDue() []*engine.QuoteExpired {
	w.t.Helper()
	due := w.state.Expired(w.now)
	for _, ev := range due {
		w.apply(ev)
	}
	return due
}

// poolSnapshot is the part of a pool a quote moves.
type poolSnapshot struct {
	balance, held, proceeds, available engine.Amount
	accepted, completed                uint64
}

func snapshotPool(s *engine.State, p *engine.Pool) poolSnapshot {
	e, _ := s.Book(p.Mode, p.Pair).Entry(p.ID)
	return poolSnapshot{balance: p.Liquidity.Balance, held: p.Liquidity.Held, proceeds: p.Proceeds.Balance,
		available: e.Available, accepted: p.Accepted, completed: p.Completed}
}

// TestStateLifecycleSequence drives a realistic day: partners, pools in both
// modes, quotes in both directions split across pools, and every way a quote
// ends; the invariants are checked after every event (world.apply).
func TestStateLifecycleSequence(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("ada").Client
	bayo := w.createClient("bayo").Client
	p1 := w.createPool(engine.ModeSandbox, pairNGNUSDT, "lagos-1", decimalRate(t, "0.000625"))
	p2 := w.createPool(engine.ModeSandbox, pairNGNUSDT, "lagos-2", decimalRate(t, "0.00062"))
	p3 := w.createPool(engine.ModeSandbox, pairNGNGHS, "accra-1", decimalRate(t, "0.0095"))
	live := w.createPool(engine.ModeLive, pairNGNUSDT, "live-1", decimalRate(t, "0.000625"))
	w.deposit(p1, decimalAmount(t, "100", engine.CurrencyUSDT))
	w.deposit(p2, decimalAmount(t, "1000", engine.CurrencyUSDT))
	w.deposit(p3, decimalAmount(t, "5000", engine.CurrencyGHS))
	w.deposit(live, decimalAmount(t, "50", engine.CurrencyUSDT))
	w.apply(&engine.AccountDeposited{At: w.now, Account: w.wallet(ada, engine.ModeSandbox, engine.CurrencyNGN).ID,
		Amount: decimalAmount(t, "250000", engine.CurrencyNGN)})

	// A quote for 150 USDT takes all of lagos-1 (best rate) and 50 of lagos-2.
	w.now += 1_000
	before1, before2 := snapshotPool(w.state, p1), snapshotPool(w.state, p2)
	out, split := w.createQuote(quoteRequest{client: ada, mode: engine.ModeSandbox, pair: pairNGNUSDT,
		direction: engine.DirectionDestination, amount: decimalAmount(t, "150", engine.CurrencyUSDT),
		rate: decimalRate(t, "0.0006")})
	if out.Result != engine.ResultOK {
		t.Fatalf("split quote: %s", out.Result)
	}
	if got := len(split.Allocations()); got != 2 {
		t.Fatalf("split quote: %d allocations, want 2", got)
	}
	if got, want := split.Allocations()[0].Destination, decimalAmount(t, "100", engine.CurrencyUSDT); got != want {
		t.Errorf("split quote first slice: got %d, want %d", got, want)
	}
	if got, want := split.TotalDestination(), decimalAmount(t, "150", engine.CurrencyUSDT); got != want {
		t.Errorf("split quote total destination: got %d, want %d", got, want)
	}
	if got, want := snapshotPool(w.state, p1).available, before1.available-split.Allocations()[0].Destination; got != want {
		t.Errorf("lagos-1 available after hold: got %d, want %d", got, want)
	}
	if got, want := snapshotPool(w.state, p2).held, before2.held+split.Allocations()[1].Destination; got != want {
		t.Errorf("lagos-2 held after hold: got %d, want %d", got, want)
	}

	// Nothing left at lagos-1: a quote restricted to it is refused and holds nothing.
	out, refused := w.createQuote(quoteRequest{client: bayo, mode: engine.ModeSandbox, pair: pairNGNUSDT,
		direction: engine.DirectionSource, amount: decimalAmount(t, "1600", engine.CurrencyNGN),
		rate: decimalRate(t, "0.0006"), listing: p1.ID})
	if out.Result != engine.ResultInsufficientLiquidity || refused != nil {
		t.Fatalf("quote on an empty listing: got %s, want %s", out.Result, engine.ResultInsufficientLiquidity)
	}

	// Accept and complete the split quote: the wallet gets the whole
	// destination, each pool its slice's source as proceeds.
	w.now += 10_000
	if res := w.accept(split, w.walletAccept(split)); res != engine.ResultOK {
		t.Fatalf("accept: %s", res)
	}
	if got, want := split.ExpiresAt, w.now+worldPaymentWindowMillis; got != want {
		t.Errorf("accepted ExpiresAt: got %d, want %d", got, want)
	}
	usdt := w.wallet(ada, engine.ModeSandbox, engine.CurrencyUSDT)
	usdtBefore := usdt.Balance
	before1, before2 = snapshotPool(w.state, p1), snapshotPool(w.state, p2)
	w.now += 60_000
	if res := w.complete(split); res != engine.ResultOK {
		t.Fatalf("complete: %s", res)
	}
	if got, want := usdt.Balance-usdtBefore, split.TotalDestination(); got != want {
		t.Errorf("wallet credited %d, want the total destination %d", got, want)
	}
	for i, pair := range []struct {
		pool   *engine.Pool
		before poolSnapshot
	}{{p1, before1}, {p2, before2}} {
		a := split.Allocations()[i]
		got := snapshotPool(w.state, pair.pool)
		want := pair.before
		want.balance -= a.Destination
		want.held -= a.Destination
		want.proceeds += a.Source
		want.completed++
		if got != want {
			t.Errorf("pool %s after completion: got %+v, want %+v", pair.pool.Name, got, want)
		}
	}
	if got, want := w.state.ClearingBalance(engine.ModeSandbox, engine.CurrencyNGN),
		-(p1.Proceeds.Balance + p2.Proceeds.Balance + p3.Proceeds.Balance + w.wallet(ada, engine.ModeSandbox, engine.CurrencyNGN).Balance); got != want {
		t.Errorf("NGN clearing: got %d, want %d", got, want)
	}

	// Cancel releases: book available and holds are back where they were.
	before3 := snapshotPool(w.state, p3)
	_, cross := w.createQuote(quoteRequest{client: bayo, mode: engine.ModeSandbox, pair: pairNGNGHS,
		direction: engine.DirectionSource, amount: decimalAmount(t, "100000", engine.CurrencyNGN),
		rate: decimalRate(t, "0.009")})
	if cross == nil {
		t.Fatal("NGN/GHS quote refused")
	}
	if res := w.cancel(cross); res != engine.ResultOK {
		t.Fatalf("cancel: %s", res)
	}
	if got := snapshotPool(w.state, p3); got != before3 {
		t.Errorf("accra-1 after cancel: got %+v, want %+v", got, before3)
	}

	// Expiry releases both a pending quote (TTL) and an accepted one
	// (payment window), each at its own deadline.
	beforeLive := snapshotPool(w.state, live)
	_, pending := w.createQuote(quoteRequest{client: bayo, mode: engine.ModeLive, pair: pairNGNUSDT,
		direction: engine.DirectionDestination, amount: decimalAmount(t, "20", engine.CurrencyUSDT),
		rate: decimalRate(t, "0.0006")})
	_, accepted := w.createQuote(quoteRequest{client: ada, mode: engine.ModeLive, pair: pairNGNUSDT,
		direction: engine.DirectionDestination, amount: decimalAmount(t, "30", engine.CurrencyUSDT),
		rate: decimalRate(t, "0.0006")})
	if pending == nil || accepted == nil {
		t.Fatal("live quotes refused")
	}
	w.accept(accepted, w.walletAccept(accepted))
	if got := snapshotPool(w.state, live).available; got != 0 {
		t.Fatalf("live pool available with two open quotes: %d, want 0", got)
	}
	w.now = pending.ExpiresAt - 1
	if due := w.expireDue(); len(due) != 0 {
		t.Fatalf("expired %d quotes a millisecond early", len(due))
	}
	w.now = pending.ExpiresAt
	if due := w.expireDue(); len(due) != 1 || due[0].Quote != pending.ID {
		t.Fatalf("at the TTL deadline: expired %v, want just the pending quote", due)
	}
	if pending.Status != engine.StatusExpired || accepted.Status != engine.StatusAwaitingPayment {
		t.Fatalf("statuses after TTL: %s, %s", pending.Status, accepted.Status)
	}
	w.now = accepted.ExpiresAt
	w.expireDue()
	if accepted.Status != engine.StatusExpired {
		t.Fatalf("accepted quote after the payment window: %s", accepted.Status)
	}
	beforeLive.accepted++ // the accept is counted even though payment never came
	if got := snapshotPool(w.state, live); got != beforeLive {
		t.Errorf("live pool after expiries: got %+v, want %+v", got, beforeLive)
	}

	// Withdrawal is limited to available liquidity, holds included.
	_, hold := w.createQuote(quoteRequest{client: ada, mode: engine.ModeSandbox, pair: pairNGNUSDT,
		direction: engine.DirectionDestination, amount: decimalAmount(t, "800", engine.CurrencyUSDT),
		rate: decimalRate(t, "0.0006")})
	if hold == nil {
		t.Fatal("800 USDT quote refused")
	}
	available := snapshotPool(w.state, p2).available
	if res := w.withdraw(p2, available+1); res != engine.ResultInsufficientFunds {
		t.Errorf("withdraw over available: got %s, want %s", res, engine.ResultInsufficientFunds)
	}
	if res := w.withdraw(p2, available); res != engine.ResultOK {
		t.Errorf("withdraw all available: got %s, want OK", res)
	}
	if got := snapshotPool(w.state, p2).available; got != 0 {
		t.Errorf("available after withdrawing it all: %d", got)
	}
}

// TestStateApplyRefusesInconsistentEvents: an event that does not fit the
// state (a corrupt or foreign log) is refused with an error, never a panic,
// and leaves the state as it was.
func TestStateApplyRefusesInconsistentEvents(t *testing.T) {
	// fixture: two clients, a funded pool per mode, one quote in each status
	// the lifecycle cases need.
	type fixture struct {
		w                                      *world
		ada, bayo                              engine.ClientID
		key                                    engine.KeyID
		pool, livePool, ghsPool                *engine.Pool
		pending, awaiting, completed, canceled *engine.Quote
	}
	build := func(t *testing.T) *fixture {
		w := newWorld(t)
		f := &fixture{w: w}
		f.ada = w.createClient("ada").Client
		f.bayo = w.createClient("bayo").Client
		f.key = engine.KeyID(w.newID())
		w.apply(&engine.KeyCreated{At: w.now, Key: f.key, Client: f.ada, Mode: engine.ModeSandbox, Hash: sha256.Sum256([]byte("k"))})
		f.pool = w.createPool(engine.ModeSandbox, pairNGNUSDT, "sandbox-1", decimalRate(t, "0.000625"))
		f.livePool = w.createPool(engine.ModeLive, pairNGNUSDT, "live-1", decimalRate(t, "0.000625"))
		f.ghsPool = w.createPool(engine.ModeSandbox, pairGHSUSDT, "ghs-1", decimalRate(t, "0.08"))
		w.deposit(f.pool, 1_000_000_000)
		w.deposit(f.livePool, 1_000_000_000)
		w.deposit(f.ghsPool, 1_000_000_000)
		req := quoteRequest{client: f.ada, mode: engine.ModeSandbox, pair: pairNGNUSDT,
			direction: engine.DirectionDestination, amount: 10_000_000, rate: decimalRate(t, "0.0006")}
		_, f.pending = w.createQuote(req)
		_, f.awaiting = w.createQuote(req)
		_, f.completed = w.createQuote(req)
		_, f.canceled = w.createQuote(req)
		w.accept(f.awaiting, w.walletAccept(f.awaiting))
		w.accept(f.completed, w.walletAccept(f.completed))
		w.complete(f.completed)
		w.cancel(f.canceled)
		return f
	}
	// quote is a QuoteCreated of 10 USDT from the sandbox pool, to adjust.
	quote := func(f *fixture) *engine.QuoteCreated {
		return &engine.QuoteCreated{At: f.w.now, Quote: engine.QuoteID(f.w.newID()), Client: f.ada,
			Mode: engine.ModeSandbox, Pair: pairNGNUSDT, Direction: engine.DirectionDestination, Amount: 10_000_000,
			ProposedRate: f.pool.Rate, Reference: engine.MustRef("OJA-X"), ExpiresAt: f.w.now + worldQuoteTTLMillis,
			Allocations: []engine.Allocation{{ID: engine.AllocationID(f.w.newID()), Pool: f.pool.ID,
				PoolAccount: f.pool.Liquidity.ID, PoolName: f.pool.Name, Rate: f.pool.Rate, Source: 16_000_00,
				Destination: 10_000_000}}}
	}
	walletSettlement := func(f *fixture) engine.Settlement {
		return engine.Settlement{Kind: engine.SettlementWallet, Account: f.w.wallet(f.ada, engine.ModeSandbox, engine.CurrencyUSDT).ID}
	}
	tests := []struct {
		name  string
		event func(f *fixture) engine.Event
	}{
		{"client/duplicate id", func(f *fixture) engine.Event {
			return &engine.ClientCreated{At: f.w.now, Client: f.ada, Name: "again"}
		}},
		{"client/wallet id of another client", func(f *fixture) engine.Event {
			return &engine.ClientCreated{At: f.w.now, Client: engine.ClientID(f.w.newID()), Name: "copycat",
				Wallets: []engine.WalletAccount{{Mode: engine.ModeSandbox, Currency: engine.CurrencyUSDT,
					Account: f.w.wallet(f.ada, engine.ModeSandbox, engine.CurrencyUSDT).ID}}}
		}},
		{"key/unknown client", func(f *fixture) engine.Event {
			return &engine.KeyCreated{At: f.w.now, Key: engine.KeyID(f.w.newID()), Client: engine.ClientID(f.w.newID()), Mode: engine.ModeLive}
		}},
		{"key/duplicate id", func(f *fixture) engine.Event {
			return &engine.KeyCreated{At: f.w.now, Key: f.key, Client: f.bayo, Mode: engine.ModeLive, Hash: sha256.Sum256([]byte("other"))}
		}},
		{"key revoke/unknown key", func(f *fixture) engine.Event {
			return &engine.KeyRevoked{At: f.w.now, Key: engine.KeyID(f.w.newID())}
		}},
		{"key roll/unknown key", func(f *fixture) engine.Event {
			return &engine.KeyRolled{At: f.w.now, Old: engine.KeyID(f.w.newID()), Key: engine.KeyID(f.w.newID()), ExpiresAt: f.w.now}
		}},
		{"key roll/new id taken", func(f *fixture) engine.Event {
			return &engine.KeyRolled{At: f.w.now, Old: f.key, Key: f.key, ExpiresAt: f.w.now}
		}},
		{"key roll/expiry before the roll", func(f *fixture) engine.Event {
			return &engine.KeyRolled{At: f.w.now, Old: f.key, Key: engine.KeyID(f.w.newID()), ExpiresAt: f.w.now - 1}
		}},
		{"pool/duplicate id", func(f *fixture) engine.Event {
			return &engine.PoolCreated{At: f.w.now, Pool: f.pool.ID, Mode: engine.ModeSandbox, Name: "again", Pair: pairNGNUSDT,
				Rate: f.pool.Rate, LiquidityAccount: engine.AccountID(f.w.newID()), ProceedsAccount: engine.AccountID(f.w.newID())}
		}},
		{"pool/unsupported pair", func(f *fixture) engine.Event {
			return &engine.PoolCreated{At: f.w.now, Pool: engine.PoolID(f.w.newID()), Mode: engine.ModeSandbox, Name: "x",
				Pair: engine.Pair{Source: engine.CurrencyGHS, Destination: engine.CurrencyNGN}, Rate: f.pool.Rate,
				LiquidityAccount: engine.AccountID(f.w.newID()), ProceedsAccount: engine.AccountID(f.w.newID())}
		}},
		{"pool/no mode", func(f *fixture) engine.Event {
			return &engine.PoolCreated{At: f.w.now, Pool: engine.PoolID(f.w.newID()), Name: "x", Pair: pairNGNUSDT, Rate: f.pool.Rate,
				LiquidityAccount: engine.AccountID(f.w.newID()), ProceedsAccount: engine.AccountID(f.w.newID())}
		}},
		{"pool/zero rate", func(f *fixture) engine.Event {
			return &engine.PoolCreated{At: f.w.now, Pool: engine.PoolID(f.w.newID()), Mode: engine.ModeSandbox, Name: "x",
				Pair: pairNGNUSDT, LiquidityAccount: engine.AccountID(f.w.newID()), ProceedsAccount: engine.AccountID(f.w.newID())}
		}},
		{"pool/account id of another pool", func(f *fixture) engine.Event {
			return &engine.PoolCreated{At: f.w.now, Pool: engine.PoolID(f.w.newID()), Mode: engine.ModeSandbox, Name: "x",
				Pair: pairNGNUSDT, Rate: f.pool.Rate, LiquidityAccount: f.pool.Liquidity.ID, ProceedsAccount: engine.AccountID(f.w.newID())}
		}},
		{"rate set/unknown pool", func(f *fixture) engine.Event {
			return &engine.PoolRateSet{At: f.w.now, Pool: engine.PoolID(f.w.newID()), Rate: f.pool.Rate}
		}},
		{"rate set/zero rate", func(f *fixture) engine.Event {
			return &engine.PoolRateSet{At: f.w.now, Pool: f.pool.ID}
		}},
		{"status set/unknown pool", func(f *fixture) engine.Event {
			return &engine.PoolStatusSet{At: f.w.now, Pool: engine.PoolID(f.w.newID())}
		}},
		{"deposit/unknown pool", func(f *fixture) engine.Event {
			return &engine.PoolDeposited{At: f.w.now, Pool: engine.PoolID(f.w.newID()), Amount: 1}
		}},
		{"deposit/negative amount over available", func(f *fixture) engine.Event {
			return &engine.PoolDeposited{At: f.w.now, Pool: f.pool.ID, Amount: -2_000_000_000}
		}},
		{"deposit/negative amount", func(f *fixture) engine.Event {
			return &engine.PoolDeposited{At: f.w.now, Pool: f.pool.ID, Amount: -1}
		}},
		{"withdraw/unknown pool", func(f *fixture) engine.Event {
			return &engine.PoolWithdrawn{At: f.w.now, Pool: engine.PoolID(f.w.newID()), Amount: 1}
		}},
		{"withdraw/over available", func(f *fixture) engine.Event {
			return &engine.PoolWithdrawn{At: f.w.now, Pool: f.pool.ID, Amount: f.pool.Liquidity.Available() + 1}
		}},
		{"withdraw/negative amount", func(f *fixture) engine.Event {
			return &engine.PoolWithdrawn{At: f.w.now, Pool: f.pool.ID, Amount: -1}
		}},
		{"account deposit/unknown wallet", func(f *fixture) engine.Event {
			return &engine.AccountDeposited{At: f.w.now, Account: engine.AccountID(f.w.newID()), Amount: 1}
		}},
		{"account deposit/pool account", func(f *fixture) engine.Event {
			return &engine.AccountDeposited{At: f.w.now, Account: f.pool.Liquidity.ID, Amount: 1}
		}},
		{"account deposit/zero amount", func(f *fixture) engine.Event {
			return &engine.AccountDeposited{At: f.w.now, Account: f.w.wallet(f.ada, engine.ModeLive, engine.CurrencyNGN).ID}
		}},
		{"account deposit/negative amount", func(f *fixture) engine.Event {
			return &engine.AccountDeposited{At: f.w.now, Account: f.w.wallet(f.ada, engine.ModeLive, engine.CurrencyNGN).ID, Amount: -5}
		}},
		{"quote/duplicate id", func(f *fixture) engine.Event {
			ev := quote(f)
			ev.Quote = f.pending.ID
			return ev
		}},
		{"quote/unknown pool", func(f *fixture) engine.Event {
			ev := quote(f)
			ev.Allocations[0].Pool = engine.PoolID(f.w.newID())
			return ev
		}},
		{"quote/slice over available", func(f *fixture) engine.Event {
			ev := quote(f)
			ev.Allocations[0].Destination = f.pool.Liquidity.Available() + 1
			return ev
		}},
		{"quote/two slices of one pool over available together", func(f *fixture) engine.Event {
			ev := quote(f)
			half := f.pool.Liquidity.Available()/2 + 1
			ev.Allocations[0].Destination = half
			second := ev.Allocations[0]
			second.ID = engine.AllocationID(f.w.newID())
			ev.Allocations = append(ev.Allocations, second)
			return ev
		}},
		{"quote/slice of a pool of the other mode", func(f *fixture) engine.Event {
			ev := quote(f)
			ev.Allocations[0].Pool, ev.Allocations[0].PoolAccount = f.livePool.ID, f.livePool.Liquidity.ID
			return ev
		}},
		{"quote/slice of a pool of another pair", func(f *fixture) engine.Event {
			ev := quote(f)
			ev.Allocations[0].Pool, ev.Allocations[0].PoolAccount = f.ghsPool.ID, f.ghsPool.Liquidity.ID
			return ev
		}},
		{"quote/unsupported pair", func(f *fixture) engine.Event {
			ev := quote(f)
			ev.Pair = engine.Pair{Source: engine.CurrencyUSDT, Destination: engine.CurrencyNGN}
			return ev
		}},
		{"quote/negative slice", func(f *fixture) engine.Event {
			ev := quote(f)
			ev.Allocations[0].Destination = -10_000_000
			return ev
		}},
		{"quote/unknown client", func(f *fixture) engine.Event {
			ev := quote(f)
			ev.Client = engine.ClientID(f.w.newID())
			return ev
		}},
		{"accept/unknown quote", func(f *fixture) engine.Event {
			return &engine.QuoteAccepted{At: f.w.now, Quote: engine.QuoteID(f.w.newID()), Settlement: walletSettlement(f),
				ExpiresAt: f.w.now + worldPaymentWindowMillis}
		}},
		{"accept/from awaiting_payment", func(f *fixture) engine.Event {
			return &engine.QuoteAccepted{At: f.w.now, Quote: f.awaiting.ID, Settlement: walletSettlement(f),
				ExpiresAt: f.w.now + worldPaymentWindowMillis}
		}},
		{"accept/from cancelled", func(f *fixture) engine.Event {
			return &engine.QuoteAccepted{At: f.w.now, Quote: f.canceled.ID, Settlement: walletSettlement(f),
				ExpiresAt: f.w.now + worldPaymentWindowMillis}
		}},
		{"accept/pool account not of the quote", func(f *fixture) engine.Event {
			return &engine.QuoteAccepted{At: f.w.now, Quote: f.pending.ID, PoolAccount: f.livePool.Liquidity.ID,
				Settlement: walletSettlement(f), ExpiresAt: f.w.now + worldPaymentWindowMillis}
		}},
		{"complete/from pending", func(f *fixture) engine.Event {
			return &engine.QuoteCompleted{At: f.w.now, Quote: f.pending.ID}
		}},
		{"complete/from completed", func(f *fixture) engine.Event {
			return &engine.QuoteCompleted{At: f.w.now, Quote: f.completed.ID}
		}},
		{"complete/unknown settlement wallet", func(f *fixture) engine.Event {
			// Accepted with a wallet that does not exist; the completion
			// cannot settle.
			ev := &engine.QuoteAccepted{At: f.w.now, Quote: f.pending.ID, PoolAccount: f.pending.Allocations()[0].PoolAccount,
				Settlement: engine.Settlement{Kind: engine.SettlementWallet, Account: engine.AccountID(f.w.newID())},
				ExpiresAt:  f.w.now + worldPaymentWindowMillis}
			if err := f.w.state.Apply(ev); err != nil {
				f.w.t.Skipf("accept naming an unknown wallet is refused already: %v", err)
			}
			return &engine.QuoteCompleted{At: f.w.now, Quote: f.pending.ID}
		}},
		{"cancel/from cancelled", func(f *fixture) engine.Event {
			return &engine.QuoteCancelled{At: f.w.now, Quote: f.canceled.ID}
		}},
		{"cancel/from completed", func(f *fixture) engine.Event {
			return &engine.QuoteCancelled{At: f.w.now, Quote: f.completed.ID}
		}},
		{"cancel/unknown quote", func(f *fixture) engine.Event {
			return &engine.QuoteCancelled{At: f.w.now, Quote: engine.QuoteID(f.w.newID())}
		}},
		{"expire/from completed", func(f *fixture) engine.Event {
			return &engine.QuoteExpired{At: f.w.now, Quote: f.completed.ID}
		}},
		{"expire/from cancelled", func(f *fixture) engine.Event {
			return &engine.QuoteExpired{At: f.w.now, Quote: f.canceled.ID}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := build(t)
			ev := tc.event(f)
			before := f.w.state.Hash()
			panicked, err := applyRecovering(f.w.state, ev)
			if panicked != nil {
				t.Fatalf("Apply(%s) panicked: %v; want an error", ev.Type(), panicked)
			}
			if err == nil {
				t.Fatalf("Apply(%s) = nil error; want a refusal", ev.Type())
			}
			if after := f.w.state.Hash(); after != before {
				t.Errorf("Apply(%s) refused (%v) but changed the state", ev.Type(), err)
			}
		})
	}
}

// applyRecovering applies ev and turns a panic into a value.
func applyRecovering(s *engine.State, ev engine.Event) (panicked any, err error) {
	defer func() { panicked = recover() }()
	return nil, s.Apply(ev)
}

// TestStateExpired: exactly the open quotes at or past their deadline, in
// quote id order.
func TestStateExpired(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("ada").Client
	p := w.createPool(engine.ModeSandbox, pairNGNUSDT, "p", decimalRate(t, "0.000625"))
	w.deposit(p, 1_000_000_000)
	req := quoteRequest{client: ada, mode: engine.ModeSandbox, pair: pairNGNUSDT,
		direction: engine.DirectionDestination, amount: 1_000_000, rate: p.Rate}
	var quotes []*engine.Quote
	for i := range 12 {
		w.now = worldStart + int64(i)*10_000
		_, q := w.createQuote(req)
		quotes = append(quotes, q)
	}
	// Quotes 0-3 stay pending; 4-5 are accepted (payment window); 6-7
	// cancelled; 8 completed; 9-11 pending, created last.
	w.now = worldStart + 200_000
	for _, q := range quotes[4:6] {
		w.accept(q, w.walletAccept(q))
	}
	for _, q := range quotes[6:8] {
		w.cancel(q)
	}
	w.accept(quotes[8], w.walletAccept(quotes[8]))
	w.complete(quotes[8])

	// ids returns the ids of qs sorted, as Expired must list them.
	ids := func(qs ...*engine.Quote) []engine.QuoteID {
		out := []engine.QuoteID{}
		for _, q := range qs {
			out = append(out, q.ID)
		}
		slices.SortFunc(out, func(a, b engine.QuoteID) int { return bytes.Compare(a[:], b[:]) })
		return out
	}
	tests := []struct {
		name string
		now  int64
		want []engine.QuoteID
	}{
		{"before any deadline", quotes[0].ExpiresAt - 1, ids()},
		{"at the first deadline", quotes[0].ExpiresAt, ids(quotes[0])},
		{"a millisecond after the second", quotes[1].ExpiresAt + 1, ids(quotes[0], quotes[1])},
		{"every TTL passed", quotes[11].ExpiresAt, ids(quotes[0], quotes[1], quotes[2], quotes[3], quotes[9], quotes[10], quotes[11])},
		{"payment windows passed too", quotes[5].ExpiresAt, ids(quotes[0], quotes[1], quotes[2], quotes[3],
			quotes[4], quotes[5], quotes[9], quotes[10], quotes[11])},
		{"far future", quotes[5].ExpiresAt + 365*24*3600*1000, ids(quotes[0], quotes[1], quotes[2], quotes[3],
			quotes[4], quotes[5], quotes[9], quotes[10], quotes[11])},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := []engine.QuoteID{}
			for _, ev := range w.state.Expired(tc.now) {
				if ev.At != tc.now {
					t.Errorf("expiry of %s at %d, want %d", ev.Quote, ev.At, tc.now)
				}
				got = append(got, ev.Quote)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Expired(%d):\ngot  %v\nwant %v", tc.now, got, tc.want)
			}
		})
	}
	// Applying them expires exactly those, releases every hold of them, and
	// a second call finds nothing.
	w.now = quotes[5].ExpiresAt
	w.expireDue()
	for i, q := range quotes {
		want := map[int]engine.Status{6: engine.StatusCancelled, 7: engine.StatusCancelled, 8: engine.StatusCompleted}[i]
		if want == 0 {
			want = engine.StatusExpired
		}
		if q.Status != want {
			t.Errorf("quote %d: status %s, want %s", i, q.Status, want)
		}
	}
	if got := w.state.Pools[p.ID].Liquidity.Held; got != 0 {
		t.Errorf("held after every expiry: %d, want 0", got)
	}
	if due := w.state.Expired(w.now + 1); len(due) != 0 {
		t.Errorf("Expired after applying them: %d more", len(due))
	}
}

// randomWorld drives w with n random operations decided by the engine, from
// the rng's seed: pools and clients appear, liquidity moves, quotes are made
// in both directions and modes and end in every way.
func randomWorld(t testing.TB, rng *rand.Rand, n int) *world {
	w := newWorld(t)
	rates := map[engine.Pair][]string{
		pairNGNUSDT: {"0.000625", "0.00062", "0.000631", "0.0006125"},
		pairGHSUSDT: {"0.08", "0.0795", "0.081"},
		pairNGNGHS:  {"0.0095", "0.0094", "0.00951"},
	}
	var clients []engine.ClientID
	var pools []*engine.Pool
	var open []*engine.Quote
	clients = append(clients, w.createClient("c0").Client)
	for _, m := range engine.Modes {
		for _, p := range engine.DefaultMarkets().PairList() {
			pool := w.createPool(m, p, fmt.Sprintf("%s-%s-0", m, p), decimalRate(t, rates[p][0]))
			pools = append(pools, pool)
			w.deposit(pool, engine.Amount(rng.Int64N(500_000_000)+1))
		}
	}
	pick := func(n int) int { return rng.IntN(n) }
	for range n {
		w.now += rng.Int64N(20_000)
		switch op := rng.IntN(100); {
		case op < 2:
			clients = append(clients, w.createClient(fmt.Sprintf("c%d", len(clients))).Client)
		case op < 4:
			m, p := engine.Modes[pick(2)], engine.DefaultMarkets().PairList()[pick(3)]
			pool := w.createPool(m, p, fmt.Sprintf("%s-%s-%d", m, p, len(pools)), decimalRate(t, rates[p][pick(len(rates[p]))]))
			pools = append(pools, pool)
		case op < 10:
			w.deposit(pools[pick(len(pools))], engine.Amount(rng.Int64N(200_000_000)+1))
		case op < 13:
			p := pools[pick(len(pools))]
			if a := p.Liquidity.Available(); a > 0 {
				w.withdraw(p, engine.Amount(rng.Int64N(int64(a))+1))
			}
		case op < 15:
			p := pools[pick(len(pools))]
			w.apply(&engine.PoolRateSet{At: w.now, Pool: p.ID, Rate: decimalRate(t, rates[p.Pair][pick(len(rates[p.Pair]))])})
		case op < 17:
			p := pools[pick(len(pools))]
			w.apply(&engine.PoolStatusSet{At: w.now, Pool: p.ID, Active: rng.IntN(3) > 0})
		case op < 20:
			c := clients[pick(len(clients))]
			w.apply(&engine.AccountDeposited{At: w.now, Account: w.wallet(c, engine.Modes[pick(2)], engine.DefaultMarkets().CurrencyList()[pick(3)]).ID,
				Amount: engine.Amount(rng.Int64N(1_000_000) + 1)})
		case op < 55:
			p := engine.DefaultMarkets().PairList()[pick(3)]
			req := quoteRequest{client: clients[pick(len(clients))], mode: engine.Modes[pick(2)], pair: p,
				rate: decimalRate(t, rates[p][pick(len(rates[p]))])}
			if rng.IntN(2) == 0 {
				req.direction, req.amount = engine.DirectionDestination, engine.Amount(rng.Int64N(100_000_000)+1)
			} else {
				req.direction, req.amount = engine.DirectionSource, engine.Amount(rng.Int64N(50_000_000)+1)
			}
			if rng.IntN(5) == 0 {
				req.listing = pools[pick(len(pools))].ID
			}
			if _, q := w.createQuote(req); q != nil {
				open = append(open, q)
			}
		case op < 70 && len(open) > 0:
			q := open[pick(len(open))]
			cmd := w.walletAccept(q)
			if rng.IntN(3) == 0 {
				cmd = engine.AcceptQuote{Settlement: engine.Settlement{Kind: engine.SettlementBank,
					AccountName: "Ada", AccountNumber: fmt.Sprint(rng.IntN(1e9)), BankCode: "058"}}
				if q.Pair.Destination.IsToken() {
					cmd.Settlement = engine.Settlement{Kind: engine.SettlementChain, Address: "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW"}
				}
			}
			w.accept(q, cmd)
		case op < 82 && len(open) > 0:
			w.complete(open[pick(len(open))])
		case op < 92 && len(open) > 0:
			w.cancel(open[pick(len(open))])
		default:
			w.now += rng.Int64N(2 * worldPaymentWindowMillis)
			w.expireDue()
		}
		open = slices.DeleteFunc(open, func(q *engine.Quote) bool { return !q.Status.Open() })
	}
	return w
}

// TestStateReplayEquivalence: the events of a random run, encoded, decoded
// and applied to a fresh State, rebuild the same state (equal Hash).
func TestStateReplayEquivalence(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			w := randomWorld(t, rand.New(rand.NewPCG(seed, 0x0a)), 600)
			var quotes, completed int
			for q := range w.state.Quotes.All() {
				quotes++
				if q.Status == engine.StatusCompleted {
					completed++
				}
			}
			if quotes < 20 || completed == 0 {
				t.Fatalf("random run too thin to mean anything: %d quotes, %d completed", quotes, completed)
			}
			var log [][]byte
			for _, ev := range w.events {
				log = append(log, engine.AppendEvent(nil, ev))
			}
			replayed := engine.NewState()
			for i, rec := range log {
				ev, err := engine.DecodeEvent(rec)
				if err != nil {
					t.Fatalf("decode event %d: %v", i, err)
				}
				if err := replayed.Apply(ev); err != nil {
					t.Fatalf("replay event %d: %v", i, err)
				}
			}
			checkStateInvariants(t, replayed, w.deposited)
			if got, want := replayed.Hash(), w.state.Hash(); got != want {
				t.Fatalf("replayed hash %x, want %x", got, want)
			}
			if got, want := replayed.LastAt, w.state.LastAt; got != want {
				t.Errorf("replayed LastAt %d, want %d", got, want)
			}
			for q := range w.state.Quotes.All() {
				id := q.ID
				if got := replayed.Quotes.Get(id); got == nil || !quotesEqual(got, q) {
					t.Fatalf("quote %s differs after replay:\ngot  %+v\nwant %+v", id, got, q)
				}
			}
			for id, p := range w.state.Pools {
				if got := *replayed.Pools[id]; got != *p {
					t.Fatalf("pool %s differs after replay:\ngot  %+v\nwant %+v", p.Name, got, *p)
				}
			}
		})
	}
}

// quotesEqual compares quotes field by field and their allocations in full
// (DeepEqual of a Quote follows its allocations' pointer to the first).
func quotesEqual(a, b *engine.Quote) bool {
	return reflect.DeepEqual(a, b) && reflect.DeepEqual(a.Allocations(), b.Allocations())
}

// TestStateHash: equal states hash equal whatever the order they were built
// in, and any one balance, hold or status that differs changes the hash.
func TestStateHash(t *testing.T) {
	t.Run("order independent", func(t *testing.T) {
		var independent []engine.Event
		for i, name := range []string{"a", "b", "c"} {
			ev := &engine.ClientCreated{At: worldStart + int64(i), Client: engine.ClientID(idOf("client " + name)), Name: name}
			for _, m := range engine.Modes {
				for _, c := range engine.DefaultMarkets().CurrencyList() {
					ev.Wallets = append(ev.Wallets, engine.WalletAccount{Mode: m, Currency: c,
						Account: engine.AccountID(idOf(name + m.String() + c.String()))})
				}
			}
			independent = append(independent, ev)
		}
		var pools, deposits []engine.Event
		for i, name := range []string{"p", "q", "r", "s"} {
			id := engine.PoolID(idOf("pool " + name))
			pools = append(pools, &engine.PoolCreated{At: worldStart, Pool: id, Mode: engine.ModeSandbox, Name: name,
				Pair: pairNGNUSDT, Rate: decimalRate(t, "0.000625"), LiquidityAccount: engine.AccountID(idOf(name + " liquidity")),
				ProceedsAccount: engine.AccountID(idOf(name + " proceeds"))})
			deposits = append(deposits, &engine.PoolDeposited{At: worldStart + 5, Pool: id, Amount: engine.Amount(1000 * (i + 1))})
		}
		forward := slices.Concat(independent, pools, deposits)
		backward := slices.Concat(independent, pools, deposits)
		slices.Reverse(backward[:3])
		slices.Reverse(backward[3:7])
		slices.Reverse(backward[7:])
		a, b := engine.NewState(), engine.NewState()
		for i := range forward {
			if err := a.Apply(forward[i]); err != nil {
				t.Fatal(err)
			}
			if err := b.Apply(backward[i]); err != nil {
				t.Fatal(err)
			}
		}
		if a.Hash() != b.Hash() {
			t.Errorf("same events in another order: hashes differ")
		}
	})

	t.Run("sensitive", func(t *testing.T) {
		w := randomWorld(t, rand.New(rand.NewPCG(42, 7)), 300)
		s := w.state
		var pool *engine.Pool
		for _, p := range s.Pools {
			if pool == nil || bytes.Compare(p.ID[:], pool.ID[:]) < 0 {
				pool = p
			}
		}
		var wallet *engine.Account
		for _, a := range s.Treasuries[engine.ModeLive].Wallets {
			if wallet == nil || bytes.Compare(a.ID[:], wallet.ID[:]) < 0 {
				wallet = a
			}
		}
		var quote *engine.Quote
		for q := range s.Quotes.All() {
			if quote == nil || bytes.Compare(q.ID[:], quote.ID[:]) < 0 {
				quote = q
			}
		}
		book := s.Book(pool.Mode, pool.Pair)
		// Each mutation changes one value by one unit; undo restores it.
		amount := func(a *engine.Amount) (func(), func()) { return func() { *a++ }, func() { *a-- } }
		type mutation struct {
			name         string
			mutate, undo func()
		}
		var tests []mutation
		add := func(name string, do, undo func()) { tests = append(tests, mutation{name, do, undo}) }
		for _, c := range []struct {
			name string
			a    *engine.Amount
		}{
			{"pool liquidity balance", &pool.Liquidity.Balance},
			{"pool liquidity held", &pool.Liquidity.Held},
			{"pool proceeds balance", &pool.Proceeds.Balance},
			{"pool clearing source shard", &pool.ClearingSource},
			{"pool clearing destination shard", &pool.ClearingDestination},
			{"wallet balance", &wallet.Balance},
			{"wallet held", &wallet.Held},
			{"live treasury clearing NGN", &s.Treasuries[engine.ModeLive].Clearing[engine.CurrencyNGN]},
			{"sandbox treasury clearing USDT", &s.Treasuries[engine.ModeSandbox].Clearing[engine.CurrencyUSDT]},
		} {
			do, undo := amount(c.a)
			add(c.name, do, undo)
		}
		add("book available", func() { book.AddAvailable(pool.ID, 1) }, func() { book.AddAvailable(pool.ID, -1) })
		add("pool rate", func() { pool.Rate, _ = pool.Rate.Scale(2, 1) }, func() { pool.Rate, _ = pool.Rate.Scale(1, 2) })
		add("pool status", func() { pool.Active = !pool.Active }, func() { pool.Active = !pool.Active })
		add("pool completed count", func() { pool.Completed++ }, func() { pool.Completed-- })
		status, other := quote.Status, engine.StatusCancelled
		if status == other {
			other = engine.StatusExpired
		}
		add("quote status", func() { quote.Status = other }, func() { quote.Status = status })
		add("quote deadline", func() { quote.ExpiresAt++ }, func() { quote.ExpiresAt-- })
		base := s.Hash()
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				tc.mutate()
				changed := s.Hash()
				tc.undo()
				if changed == base {
					t.Errorf("%s changed by one unit: hash unchanged", tc.name)
				}
				if again := s.Hash(); again != base {
					t.Errorf("%s restored: hash %x, want %x", tc.name, again, base)
				}
			})
		}
	})
}

// TestStateHashCoversWholeState: Hash is documented as "a digest of the
// whole state", and replay-equivalence tests rely on it: state that survives
// a restart (idempotency records, settlement details, ownership, a quote's
// amounts) must change the hash too when it differs.
func TestStateHashCoversWholeState(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("ada").Client
	p := w.createPool(engine.ModeLive, pairNGNGHS, "p", decimalRate(t, "0.0075"))
	w.deposit(p, 100_000_000)
	_, q := w.createQuote(quoteRequest{client: ada, mode: engine.ModeLive, pair: pairNGNGHS,
		direction: engine.DirectionDestination, amount: 10_000_000, rate: p.Rate})
	if res := w.accept(q, engine.AcceptQuote{Settlement: engine.Settlement{Kind: engine.SettlementBank,
		AccountName: "Ada Obi", AccountNumber: "0123456789", BankCode: "058"}}); res != engine.ResultOK {
		t.Fatalf("fixture: bank accept %v", res)
	}
	s := w.state
	scope := engine.IdempotencyScope{Client: ada, Mode: engine.ModeLive, Key: engine.MakeIdemKey("k")}
	var keyed engine.Quote // the quote the idempotency record mutation keys
	tests := []struct {
		name         string
		mutate, undo func()
	}{
		{"idempotency record", func() { keyed = *q; keyed.IdempotencyKey = scope.Key; s.Idempotency.Put(&keyed) },
			func() { s.Idempotency.Forget(&keyed) }},
		{"settlement bank code", func() { q.Accepted.Settlement.BankCode = "044" }, func() { q.Accepted.Settlement.BankCode = "058" }},
		{"settlement account name", func() { q.Accepted.Settlement.AccountName = "Eve" }, func() { q.Accepted.Settlement.AccountName = "Ada Obi" }},
		{"acceptance time", func() { q.Accepted.At++ }, func() { q.Accepted.At-- }},
		{"pool owner", func() { p.Owner = ada }, func() { p.Owner = engine.ClientID{} }},
		{"quote amount", func() { q.Amount++ }, func() { q.Amount-- }},
	}
	base := s.Hash()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.mutate()
			changed := s.Hash()
			tc.undo()
			if changed == base {
				t.Errorf("states differing in %s hash equal", tc.name)
			}
			if again := s.Hash(); again != base {
				t.Errorf("%s restored: hash differs", tc.name)
			}
		})
	}
}

// TestLedgerCheckReportsProblems: the check itself can fail (a test that
// asserts ok on a check that never fails proves nothing).
func TestLedgerCheckReportsProblems(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("ada").Client
	p := w.createPool(engine.ModeLive, pairNGNGHS, "p", decimalRate(t, "0.0095"))
	w.deposit(p, 100_00)
	tests := []struct {
		name    string
		corrupt func() func()
		mode    engine.Mode
		problem string
	}{
		{"sum off by one", func() func() {
			p.Liquidity.Balance++
			return func() { p.Liquidity.Balance-- }
		}, engine.ModeLive, "GHS sums to 1"},
		{"hold over balance", func() func() {
			p.Liquidity.Held = p.Liquidity.Balance + 1
			return func() { p.Liquidity.Held = 0 }
		}, engine.ModeLive, "held 10001"},
		{"negative wallet", func() func() {
			a := w.wallet(ada, engine.ModeSandbox, engine.CurrencyUSDT)
			s := &w.state.Treasuries[engine.ModeSandbox].Clearing[engine.CurrencyUSDT]
			a.Balance, *s = -5, 5
			return func() { a.Balance, *s = 0, 0 }
		}, engine.ModeSandbox, "balance -5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			undo := tc.corrupt()
			defer undo()
			r := w.state.LedgerCheck(tc.mode)
			if r.OK {
				t.Fatalf("LedgerCheck ok on a corrupt ledger")
			}
			if !strings.Contains(strings.Join(r.Problems, "; "), tc.problem) {
				t.Errorf("problems %q do not mention %q", r.Problems, tc.problem)
			}
		})
	}
	for _, m := range engine.Modes {
		if r := w.state.LedgerCheck(m); !r.OK {
			t.Errorf("%s ledger after undoing: %v", m, r.Problems)
		}
	}
}
