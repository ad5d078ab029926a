package actors_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/internal/poll"
	"github.com/oja-exchange/oja/wal"
)

// The tests here run the real actors on a real *wal.Log in a temporary
// directory and restart them the way `oja serve` does: Stop, Close, Open,
// Recover, Start.

var (
	pairNGNUSDT = engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT}
	pairGHSUSDT = engine.Pair{Source: engine.CurrencyGHS, Destination: engine.CurrencyUSDT}
	pairNGNGHS  = engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyGHS}
)

// clock is a settable engine clock.
type clock struct{ ms atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ms.Store(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC).UnixMilli())
	return c
}

func (c *clock) Now() time.Time          { return time.UnixMilli(c.ms.Load()).UTC() }
func (c *clock) Millis() int64           { return c.ms.Load() }
func (c *clock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }
func (c *clock) Set(unixMillis int64)    { c.ms.Store(unixMillis) }

// node is one run of the service on a data dir.
type node struct {
	t     testing.TB
	dir   string
	cfg   actors.Config
	log   *wal.Log
	sys   *actors.System
	stats actors.RecoveryStats
	// recovered is a second replay of the log after recovery, never handed to
	// Start: what the acknowledged state is, to compare the actors with.
	recovered *engine.State
	stopped   bool
}

func testConfig(c *clock) actors.Config {
	cfg := actors.Config{QuoteTTL: 300 * time.Second, PaymentWindow: 30 * time.Minute, Retention: 168 * time.Hour}
	if c != nil {
		cfg.Clock = c.Now
	}
	return cfg
}

// startNode opens the log in dir, recovers and starts the actors. It checks
// replay equivalence: the state Recover builds hashes equal to the state a
// second, independent replay of the same log builds.
func startNode(t testing.TB, dir string, cfg actors.Config) *node {
	t.Helper()
	log, err := wal.Open(filepath.Join(dir, "store"), wal.Options{Sync: false})
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	now := time.Now()
	if cfg.Clock != nil {
		now = cfg.Clock()
	}
	state, stats, err := actors.Recover(log, now)
	if err != nil {
		_ = log.Close()
		t.Fatalf("recover: %v", err)
	}
	// The actors' tests draw amounts of every size: the default bounds
	// are tested where they apply (TestPairBounds).
	markets := cfg.Markets
	if markets == nil {
		markets = engine.DefaultMarketsConfig().WithoutBounds()
	}
	if _, err := actors.RecordMarkets(state, log, markets, now); err != nil {
		_ = log.Close()
		t.Fatalf("markets: %v", err)
	}
	recoveredHash := state.Hash()
	again := replayLog(t, log)
	// A recovery from a snapshot that forgot ended quotes (the follower's
	// QuoteRetention) equals a full replay that forgets the same.
	again.ForgetEnded(state.ForgottenBefore)
	if got := again.Hash(); got != recoveredHash {
		t.Fatalf("replay equivalence: recovered state hash %x, a second replay of the same log %x", recoveredHash, got)
	}
	for _, m := range engine.Modes {
		checkLedger(t, fmt.Sprintf("recovered %s", m), state.LedgerCheck(m))
	}
	sys, err := actors.Start(state, log, cfg)
	if err != nil {
		_ = log.Close()
		t.Fatalf("start: %v", err)
	}
	n := &node{t: t, dir: dir, cfg: cfg, log: log, sys: sys, stats: stats, recovered: again}
	t.Cleanup(n.stop)
	return n
}

func newNode(t testing.TB, cfg actors.Config) *node { return startNode(t, t.TempDir(), cfg) }

func (n *node) stop() {
	if n.stopped {
		return
	}
	n.stopped = true
	n.sys.Stop()
	if err := n.log.Close(); err != nil {
		n.t.Errorf("close log: %v", err)
	}
}

// restart stops this node and starts a new one on the same data dir.
func (n *node) restart() *node {
	n.t.Helper()
	n.stop()
	return startNode(n.t, n.dir, n.cfg)
}

// replayLog builds an engine.State from every record of log (from the
// snapshot the retained records start at, when retention deleted some).
func replayLog(t testing.TB, log *wal.Log) *engine.State {
	t.Helper()
	s := engine.NewState()
	first, err := log.FirstRetained()
	if err != nil {
		t.Fatal(err)
	}
	if first > 1 {
		err := log.Snapshots(func(seq uint64, data []byte) error {
			if seq == first-1 {
				s, err = engine.DecodeState(data)
			}
			return err
		})
		if err != nil {
			t.Fatalf("base snapshot: %v", err)
		}
	}
	err = log.Replay(first-1, func(seq uint64, rec []byte) error {
		ev, err := engine.DecodeEvent(rec)
		if err != nil {
			return fmt.Errorf("record %d: %w", seq, err)
		}
		return s.Apply(ev)
	})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return s
}

func checkLedger(t testing.TB, what string, r engine.LedgerReport) {
	t.Helper()
	if !r.OK {
		t.Fatalf("%s: ledger check not ok: %v", what, r.Problems)
	}
	for _, c := range engine.DefaultMarkets().CurrencyList() {
		if r.Currencies[c].Sum != 0 {
			t.Fatalf("%s: %s sums to %d", what, c, r.Currencies[c].Sum)
		}
	}
}

// checkSystemLedger runs the live ledger check of both modes.
func checkSystemLedger(t testing.TB, sys *actors.System) {
	t.Helper()
	for _, m := range engine.Modes {
		r, err := sys.LedgerCheck(m)
		if err != nil {
			t.Fatalf("ledger check %s: %v", m, err)
		}
		checkLedger(t, "live "+m.String(), r)
	}
}

func rate(t testing.TB, text string) engine.Rate {
	t.Helper()
	r, err := engine.RateFromDecimal(decimal.RequireFromString(text))
	if err != nil {
		t.Fatalf("rate %s: %v", text, err)
	}
	return r
}

func amount(t testing.TB, text string, c engine.Currency) engine.Amount {
	t.Helper()
	a, err := engine.AmountFromDecimal(decimal.RequireFromString(text), c)
	if err != nil {
		t.Fatalf("amount %s: %v", text, err)
	}
	return a
}

func admin(t testing.TB, sys *actors.System, cmd actors.AdminRequest) *actors.AdminReply {
	t.Helper()
	r := sys.Admin(cmd)
	if r.Err != nil || r.Result != engine.ResultOK {
		t.Fatalf("admin %T: %v %s", cmd, r.Err, r.Result)
	}
	return r
}

func newClient(t testing.TB, sys *actors.System, name string) *engine.Client {
	t.Helper()
	return admin(t, sys, &actors.CreateClient{Name: name}).Client
}

func newPool(t testing.TB, sys *actors.System, m engine.Mode, p engine.Pair, name, r, liquidity string) *engine.Pool {
	t.Helper()
	pool := admin(t, sys, &actors.CreatePool{Mode: m, Name: name, Pair: p, Rate: rate(t, r)}).Pool
	if liquidity != "" {
		pool = changePool(t, sys, &actors.PoolCommand{Pool: pool.ID, Deposit: amount(t, liquidity, p.Destination)})
	}
	return pool
}

func changePool(t testing.TB, sys *actors.System, cmd *actors.PoolCommand) *engine.Pool {
	t.Helper()
	r := sys.ChangePool(cmd)
	if r.Err != nil || r.Result != engine.ResultOK {
		t.Fatalf("change pool: %v %s", r.Err, r.Result)
	}
	return r.Pool
}

func walletOf(t testing.TB, c *engine.Client, m engine.Mode, cur engine.Currency) engine.AccountID {
	t.Helper()
	w, ok := c.Wallet(m, cur)
	if !ok {
		t.Fatalf("client %s has no %s %s wallet", c.Name, m, cur)
	}
	return w
}

func mustQuote(t testing.TB, sys *actors.System, cmd *actors.CreateQuote) *engine.Quote {
	t.Helper()
	r := sys.CreateQuote(cmd)
	if r.Err != nil || r.Result != engine.ResultOK {
		t.Fatalf("create quote %+v: %v %s", cmd, r.Err, r.Result)
	}
	return r.Quote
}

// jsonAccept accepts naming the quote's first pool account, settling to the
// client's wallet in the destination currency (what the JSON API does).
func jsonAccept(t testing.TB, c *engine.Client, q *engine.Quote) *actors.TransitionQuote {
	return &actors.TransitionQuote{Operation: actors.OperationAccept, Accept: engine.AcceptQuote{
		NamesPoolAccount: true, PoolAccount: q.Allocations()[0].PoolAccount,
		Settlement: engine.Settlement{Kind: engine.SettlementWallet, Account: walletOf(t, c, q.Mode, q.Pair.Destination)}}}
}

var (
	cancelOp   = &actors.TransitionQuote{Operation: actors.OperationCancel}
	completeOp = &actors.TransitionQuote{Operation: actors.OperationComplete}
)

func transition(t testing.TB, sys *actors.System, q *engine.Quote, cmd *actors.TransitionQuote) *actors.QuoteReply {
	t.Helper()
	r := sys.TransitionQuote(q.Client, q.Mode, q.ID, cmd)
	if r.Err != nil {
		t.Fatalf("transition %d of %s: %v", cmd.Operation, q.ID, r.Err)
	}
	return r
}

func mustTransition(t testing.TB, sys *actors.System, q *engine.Quote, cmd *actors.TransitionQuote) *engine.Quote {
	t.Helper()
	r := transition(t, sys, q, cmd)
	if r.Result != engine.ResultOK {
		t.Fatalf("transition %d of %s: %s", cmd.Operation, q.ID, r.Result)
	}
	return r.Quote
}

// converged reports how the actors' published views differ from the state
// the log holds (every pool, wallet and registered quote), "" when they
// agree. Consequences of a write (holds, payouts) reach their owners after
// the write is acknowledged, so callers poll it with waitFor.
func converged(t testing.TB, n *node) string {
	t.Helper()
	truth := replayLog(t, n.log)
	for id, want := range truth.Pools {
		got, ok := n.sys.Pool(id)
		if !ok {
			return fmt.Sprintf("pool %s missing", want.Name)
		}
		if *got != *want {
			return fmt.Sprintf("pool %s:\nview %+v\nlog  %+v", want.Name, *got, *want)
		}
	}
	for _, m := range engine.Modes {
		for id, want := range truth.Treasuries[m].Wallets {
			got, ok := n.sys.Account(id)
			if !ok || *got != *want {
				return fmt.Sprintf("wallet %s: view %+v, log %+v", id, got, *want)
			}
		}
	}
	for want := range truth.Quotes.All() {
		id := want.ID
		got, ok := n.sys.Quote(want.Client, want.Mode, id)
		if !ok {
			return fmt.Sprintf("quote %s missing", id)
		}
		if !quotesEqual(got, want) {
			return fmt.Sprintf("quote %s:\nview %+v\nlog  %+v", id, got, want)
		}
	}
	return ""
}

func waitConverged(t testing.TB, n *node) {
	t.Helper()
	poll.Until(t, 10*time.Second, func() string { return converged(t, n) })
}

// views is everything a partner or operator can read, for comparing across
// a restart.
type views struct {
	quotes   map[engine.QuoteID]*engine.Quote
	pools    map[engine.PoolID]*engine.Pool
	accounts map[engine.AccountID]*engine.Account
	ledger   map[engine.Mode]engine.LedgerReport
	clearing map[engine.Mode]map[engine.Currency]engine.Amount
}

func captureViews(t testing.TB, sys *actors.System, clients []*engine.Client, quotes []*engine.Quote) views {
	t.Helper()
	v := views{quotes: make(map[engine.QuoteID]*engine.Quote), pools: make(map[engine.PoolID]*engine.Pool),
		accounts: make(map[engine.AccountID]*engine.Account), ledger: make(map[engine.Mode]engine.LedgerReport),
		clearing: make(map[engine.Mode]map[engine.Currency]engine.Amount)}
	for _, q := range quotes {
		got, ok := sys.Quote(q.Client, q.Mode, q.ID)
		if !ok {
			t.Fatalf("quote %s not readable", q.ID)
		}
		v.quotes[q.ID] = got
	}
	for _, p := range sys.Pools(engine.ModeNone) {
		v.pools[p.ID] = p
	}
	for _, c := range clients {
		for _, m := range engine.Modes {
			for _, a := range sys.ClientAccounts(c.ID, m) {
				v.accounts[a.ID] = a
			}
		}
	}
	for _, m := range engine.Modes {
		r, err := sys.LedgerCheck(m)
		if err != nil {
			t.Fatalf("ledger check: %v", err)
		}
		v.ledger[m] = r
		v.clearing[m] = make(map[engine.Currency]engine.Amount)
		for _, c := range engine.DefaultMarkets().CurrencyList() {
			b, err := sys.ClearingBalance(m, c)
			if err != nil {
				t.Fatalf("clearing balance: %v", err)
			}
			v.clearing[m][c] = b
		}
	}
	return v
}

// quotesEqual compares quotes field by field and their allocations in full
// (DeepEqual of a Quote follows its allocations' pointer to the first).
func quotesEqual(a, b *engine.Quote) bool {
	return reflect.DeepEqual(a, b) && (a == nil || b == nil || reflect.DeepEqual(a.Allocations(), b.Allocations()))
}

func compareViews(t testing.TB, got, want views) {
	t.Helper()
	for id, w := range want.quotes {
		if g := got.quotes[id]; !quotesEqual(g, w) {
			t.Errorf("quote %s after restart:\ngot  %+v\nwant %+v", id, g, w)
		}
	}
	if len(got.pools) != len(want.pools) {
		t.Errorf("pools after restart: %d, want %d", len(got.pools), len(want.pools))
	}
	for id, w := range want.pools {
		if g := got.pools[id]; g == nil || *g != *w {
			t.Errorf("pool %s after restart:\ngot  %+v\nwant %+v", w.Name, g, *w)
		}
	}
	if len(got.accounts) != len(want.accounts) {
		t.Errorf("accounts after restart: %d, want %d", len(got.accounts), len(want.accounts))
	}
	for id, w := range want.accounts {
		if g := got.accounts[id]; g == nil || *g != *w {
			t.Errorf("account %s after restart: got %+v, want %+v", id, g, *w)
		}
	}
	if !reflect.DeepEqual(got.ledger, want.ledger) {
		t.Errorf("ledger after restart:\ngot  %+v\nwant %+v", got.ledger, want.ledger)
	}
	if !reflect.DeepEqual(got.clearing, want.clearing) {
		t.Errorf("clearing after restart: got %v, want %v", got.clearing, want.clearing)
	}
}

// TestRestartKeepsAcknowledgedState: every quote and its status, every
// balance and hold, keys and idempotency records survive a restart, and the
// service carries on from there.
func TestRestartKeepsAcknowledgedState(t *testing.T) {
	clk := newClock()
	n := newNode(t, testConfig(clk))
	sys := n.sys
	ada, bayo := newClient(t, sys, "ada"), newClient(t, sys, "bayo")
	adaKey := admin(t, sys, &actors.CreateKey{Client: ada.ID, Mode: engine.ModeSandbox})
	bayoKey := admin(t, sys, &actors.CreateKey{Client: bayo.ID, Mode: engine.ModeLive})
	revoked := admin(t, sys, &actors.CreateKey{Client: bayo.ID, Mode: engine.ModeSandbox})
	admin(t, sys, &actors.RevokeKey{Key: revoked.Key.ID})

	lagos := newPool(t, sys, engine.ModeSandbox, pairNGNUSDT, "lagos", "0.000625", "100")
	ikeja := newPool(t, sys, engine.ModeSandbox, pairNGNUSDT, "ikeja", "0.00062", "1000")
	accra := newPool(t, sys, engine.ModeSandbox, pairNGNGHS, "accra", "0.0095", "5000")
	live := newPool(t, sys, engine.ModeLive, pairNGNUSDT, "live", "0.0007", "500")
	clk.Advance(time.Second)
	changePool(t, sys, &actors.PoolCommand{Pool: ikeja.ID, Rate: rate(t, "0.000621")})
	suspended := false
	changePool(t, sys, &actors.PoolCommand{Pool: accra.ID, Status: &suspended})
	active := true
	changePool(t, sys, &actors.PoolCommand{Pool: accra.ID, Status: &active})
	changePool(t, sys, &actors.PoolCommand{Pool: accra.ID, Withdraw: amount(t, "1000", engine.CurrencyGHS)})
	waitWallets(t, sys, ada) // NB: see TestClientWalletsReadableOnceCreated
	if r := sys.DepositAccount(&actors.DepositAccount{MoneyRequest: engine.MoneyRequest{Account: walletOf(t, ada, engine.ModeSandbox, engine.CurrencyNGN),
		Amount: amount(t, "250000", engine.CurrencyNGN)}}); r.Err != nil || r.Result != engine.ResultOK {
		t.Fatalf("deposit: %v %s", r.Err, r.Result)
	}

	sandboxUSDT := func(c *engine.Client, dest string, key string) *actors.CreateQuote {
		return &actors.CreateQuote{Client: c.ID, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
			Direction: engine.DirectionDestination, Amount: amount(t, dest, engine.CurrencyUSDT), Rate: rate(t, "0.0006"),
			Chain: engine.ChainTron, IdempotencyKey: engine.MakeIdemKey(key), RequestHash: sha256.Sum256([]byte(dest + key))}
	}
	clk.Advance(time.Second)
	pending := mustQuote(t, sys, sandboxUSDT(ada, "150", "idem-1")) // splits lagos + ikeja
	if len(pending.Allocations()) != 2 {
		t.Fatalf("pending quote: %d slices, want 2", len(pending.Allocations()))
	}
	awaiting := mustQuote(t, sys, &actors.CreateQuote{Client: ada.ID, Mode: engine.ModeSandbox, Pair: pairNGNGHS,
		Direction: engine.DirectionSource, Amount: amount(t, "100000", engine.CurrencyNGN), Rate: rate(t, "0.009"),
		Chat: &engine.Chat{ConversationID: "c-1", ListingID: accra.ID.String()}})
	clk.Advance(10 * time.Second)
	awaiting = mustTransition(t, sys, awaiting, jsonAccept(t, ada, awaiting))
	completed := mustQuote(t, sys, &actors.CreateQuote{Client: bayo.ID, Mode: engine.ModeLive, Pair: pairNGNUSDT,
		Direction: engine.DirectionDestination, Amount: amount(t, "50", engine.CurrencyUSDT), Rate: rate(t, "0.0007"),
		Chain: engine.ChainEthereum})
	mustTransition(t, sys, completed, jsonAccept(t, bayo, completed))
	clk.Advance(time.Minute)
	if r := sys.DepositAccount(&actors.DepositAccount{MoneyRequest: engine.MoneyRequest{Account: walletOf(t, bayo, engine.ModeLive, engine.CurrencyNGN),
		Amount: amount(t, "100000", engine.CurrencyNGN)}}); r.Err != nil || r.Result != engine.ResultOK {
		t.Fatalf("deposit: %v %s", r.Err, r.Result) // funds first: a live completion spends the partner's wallet
	}
	mustTransition(t, sys, completed, completeOp)
	cancelled := mustQuote(t, sys, sandboxUSDT(ada, "10", ""))
	mustTransition(t, sys, cancelled, cancelOp)
	acceptedCancelled := mustQuote(t, sys, &actors.CreateQuote{Client: bayo.ID, Mode: engine.ModeLive, Pair: pairNGNUSDT,
		Direction: engine.DirectionSource, Amount: amount(t, "14000", engine.CurrencyNGN), Rate: rate(t, "0.0007")})
	mustTransition(t, sys, acceptedCancelled, jsonAccept(t, bayo, acceptedCancelled))
	mustTransition(t, sys, acceptedCancelled, cancelOp)
	bank := mustQuote(t, sys, &actors.CreateQuote{Client: ada.ID, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
		Direction: engine.DirectionDestination, Amount: amount(t, "5", engine.CurrencyUSDT), Rate: rate(t, "0.0006"),
		Chain: engine.ChainTron, Channel: engine.ChannelXML})
	mustTransition(t, sys, bank, &actors.TransitionQuote{Operation: actors.OperationAccept, Accept: engine.AcceptQuote{
		Settlement: engine.Settlement{Kind: engine.SettlementChain, Address: "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW"}}})
	mustTransition(t, sys, bank, completeOp)

	all := []*engine.Quote{pending, awaiting, completed, cancelled, acceptedCancelled, bank}
	clients := []*engine.Client{ada, bayo}
	waitConverged(t, n)
	checkSystemLedger(t, sys)
	before := captureViews(t, sys, clients, all)
	wantStatus := map[engine.QuoteID]engine.Status{
		pending.ID: engine.StatusPending, awaiting.ID: engine.StatusAwaitingPayment, completed.ID: engine.StatusCompleted,
		cancelled.ID: engine.StatusCancelled, acceptedCancelled.ID: engine.StatusCancelled, bank.ID: engine.StatusCompleted,
	}
	for id, st := range wantStatus {
		if got := before.quotes[id].Status; got != st {
			t.Fatalf("before restart: quote %s is %s, want %s", id, got, st)
		}
	}
	if got, want := before.accounts[walletOf(t, bayo, engine.ModeLive, engine.CurrencyUSDT)].Balance,
		amount(t, "50", engine.CurrencyUSDT); got != want {
		t.Fatalf("bayo's live USDT wallet: %d, want %d", got, want)
	}

	n = n.restart()
	sys = n.sys
	if n.stats.Expired != 0 {
		t.Errorf("restart expired %d quotes, want 0", n.stats.Expired)
	}
	if n.stats.Events == 0 || n.stats.LastSeq < n.stats.Events {
		t.Errorf("recovery stats %+v", n.stats)
	}
	compareViews(t, captureViews(t, sys, clients, all), before)
	waitConverged(t, n)

	// Keys: the same principals authenticate; the revoked key still fails.
	for _, tc := range []struct {
		secret string
		want   actors.Principal
		ok     bool
	}{
		{adaKey.Secret, actors.Principal{Key: adaKey.Key.ID, Client: ada.ID, Mode: engine.ModeSandbox}, true},
		{bayoKey.Secret, actors.Principal{Key: bayoKey.Key.ID, Client: bayo.ID, Mode: engine.ModeLive}, true},
		{revoked.Secret, actors.Principal{}, false},
		{adaKey.Secret + "x", actors.Principal{}, false},
	} {
		if got, ok := sys.Authenticate(tc.secret); ok != tc.ok || got != tc.want {
			t.Errorf("Authenticate(%.16s…) after restart = %+v %v, want %+v %v", tc.secret, got, ok, tc.want, tc.ok)
		}
	}

	// Idempotency records survive: same key and body replays the original;
	// same key, other body is refused; nothing new is created.
	replay := sys.CreateQuote(sandboxUSDT(ada, "150", "idem-1"))
	if replay.Err != nil || replay.Result != engine.ResultOK || !replay.Replayed || replay.Quote.ID != pending.ID {
		t.Errorf("idempotent replay after restart: %+v", replay)
	}
	reused := sandboxUSDT(ada, "150", "idem-1")
	reused.RequestHash[0] ^= 1
	if r := sys.CreateQuote(reused); r.Result != engine.ResultIdempotencyKeyReused {
		t.Errorf("idempotency key reuse after restart: %s, want %s", r.Result, engine.ResultIdempotencyKeyReused)
	}

	// Safe repeats change nothing; the service carries on.
	if r := transition(t, sys, awaiting, jsonAccept(t, ada, awaiting)); r.Result != engine.ResultOK || !quotesEqual(r.Quote, before.quotes[awaiting.ID]) {
		t.Errorf("repeated accept after restart: %s %+v", r.Result, r.Quote)
	}
	if r := transition(t, sys, completed, completeOp); r.Result != engine.ResultOK || r.Quote.Status != engine.StatusCompleted {
		t.Errorf("repeated complete after restart: %s", r.Result)
	}
	if r := transition(t, sys, cancelled, completeOp); r.Result != engine.ResultInvalidState ||
		!slices.Equal(r.AllowedFrom, engine.Completing.From) {
		t.Errorf("complete of a cancelled quote after restart: %s %v", r.Result, r.AllowedFrom)
	}
	clk.Advance(time.Minute)
	mustTransition(t, sys, awaiting, completeOp)
	mustTransition(t, sys, pending, cancelOp)
	waitConverged(t, n)
	checkSystemLedger(t, sys)
	for _, p := range []*engine.Pool{lagos, ikeja, accra, live} {
		got, _ := sys.Pool(p.ID)
		if got.Liquidity.Held != 0 {
			t.Errorf("pool %s holds %d with no open quote", got.Name, got.Liquidity.Held)
		}
	}
	ghs, _ := sys.Account(walletOf(t, ada, engine.ModeSandbox, engine.CurrencyGHS))
	if want := awaiting.TotalDestination(); ghs.Balance != want {
		t.Errorf("ada's GHS wallet after completing: %d, want %d", ghs.Balance, want)
	}

	// And once more: a second restart rebuilds the same again.
	after := captureViews(t, sys, clients, all)
	n = n.restart()
	compareViews(t, captureViews(t, n.sys, clients, all), after)
}

// TestRecoveryExpiresOverdueQuotes: quotes whose deadline passed while the
// service was down come back expired, with their holds released, before
// any traffic; the expiries are durable.
func TestRecoveryExpiresOverdueQuotes(t *testing.T) {
	clk := newClock()
	n := newNode(t, testConfig(clk))
	ada := newClient(t, n.sys, "ada")
	pool := newPool(t, n.sys, engine.ModeSandbox, pairNGNUSDT, "lagos", "0.000625", "100")
	quote := func(dest string) *engine.Quote {
		return mustQuote(t, n.sys, &actors.CreateQuote{Client: ada.ID, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
			Direction: engine.DirectionDestination, Amount: amount(t, dest, engine.CurrencyUSDT), Rate: pool.Rate})
	}
	t0 := clk.Millis()
	pending := quote("10")
	accepted := quote("20")
	clk.Advance(10 * time.Second)
	mustTransition(t, n.sys, accepted, jsonAccept(t, ada, accepted)) // deadline t0 + 10 s + 30 min
	clk.Set(t0 + 200_000)
	late := quote("30") // deadline t0 + 500 s
	waitConverged(t, n)

	// available probes the pair actor's book: a quote restricted to the pool
	// for more than it holds reports how much it could fill.
	available := func(sys *actors.System) engine.Amount {
		t.Helper()
		p, _ := sys.Pool(pool.ID)
		r := sys.CreateQuote(&actors.CreateQuote{Client: ada.ID, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
			Direction: engine.DirectionDestination, Amount: p.Liquidity.Balance + 1, Rate: pool.Rate, Listing: pool.ID})
		if r.Result != engine.ResultInsufficientLiquidity {
			t.Fatalf("probe: %s %v", r.Result, r.Err)
		}
		return r.Allocation.Fillable
	}
	check := func(sys *actors.System, wantStatus map[*engine.Quote]engine.Status) {
		t.Helper()
		var held engine.Amount
		for q, want := range wantStatus {
			got, ok := sys.Quote(q.Client, q.Mode, q.ID)
			if !ok || got.Status != want {
				t.Fatalf("quote of %d: %v, want %s", q.TotalDestination(), got, want)
			}
			if want.Open() {
				held += q.TotalDestination()
			}
		}
		p, _ := sys.Pool(pool.ID)
		if p.Liquidity.Held != held {
			t.Errorf("pool held %d, want %d", p.Liquidity.Held, held)
		}
		if got, want := available(sys), p.Liquidity.Balance-held; got != want {
			t.Errorf("book available %d, want %d", got, want)
		}
		checkSystemLedger(t, sys)
	}
	check(n.sys, map[*engine.Quote]engine.Status{pending: engine.StatusPending, accepted: engine.StatusAwaitingPayment,
		late: engine.StatusPending})

	// Down across the first TTL deadline only.
	n.stop()
	clk.Set(t0 + 300_000)
	n = startNode(t, n.dir, n.cfg)
	if n.stats.Expired != 1 {
		t.Errorf("recovery expired %d, want 1", n.stats.Expired)
	}
	check(n.sys, map[*engine.Quote]engine.Status{pending: engine.StatusExpired, accepted: engine.StatusAwaitingPayment,
		late: engine.StatusPending})
	if q, _ := n.sys.Quote(ada.ID, engine.ModeSandbox, pending.ID); q.UpdatedAt != t0+300_000 || q.SecondsLeft(clk.Millis()) != 0 {
		t.Errorf("expired at recovery: updated %d ttl %d", q.UpdatedAt, q.SecondsLeft(clk.Millis()))
	}
	if r := transition(t, n.sys, pending, jsonAccept(t, ada, pending)); r.Result != engine.ResultInvalidState ||
		!slices.Equal(r.AllowedFrom, engine.Accepting.From) {
		t.Errorf("accept of a quote expired at recovery: %s %v", r.Result, r.AllowedFrom)
	}

	// Down across both remaining deadlines (the payment window exactly).
	n.stop()
	clk.Set(t0 + 10_000 + 30*60*1000)
	n = startNode(t, n.dir, n.cfg)
	if n.stats.Expired != 2 {
		t.Errorf("recovery expired %d, want 2", n.stats.Expired)
	}
	check(n.sys, map[*engine.Quote]engine.Status{pending: engine.StatusExpired, accepted: engine.StatusExpired,
		late: engine.StatusExpired})

	// The expiries were logged: the next recovery has nothing to do.
	n = n.restart()
	if n.stats.Expired != 0 {
		t.Errorf("second recovery expired %d, want 0", n.stats.Expired)
	}
	check(n.sys, map[*engine.Quote]engine.Status{pending: engine.StatusExpired, accepted: engine.StatusExpired,
		late: engine.StatusExpired})
	if got := n.recovered.Quotes.Get(late.ID).UpdatedAt; got != t0+10_000+30*60*1000 {
		t.Errorf("logged expiry time %d, want the recovery time", got)
	}
}

// TestExpiryWhileRunning: the quote actor's timer expires a quote within a
// second of its deadline (spec §4), pending and accepted alike, and its
// holds are released.
func TestExpiryWhileRunning(t *testing.T) {
	cfg := testConfig(nil) // the real clock: the timers are real
	cfg.QuoteTTL, cfg.PaymentWindow = time.Second, 1500*time.Millisecond
	n := newNode(t, cfg)
	ada := newClient(t, n.sys, "ada")
	pool := newPool(t, n.sys, engine.ModeSandbox, pairGHSUSDT, "accra", "0.08", "100")
	create := func() *engine.Quote {
		return mustQuote(t, n.sys, &actors.CreateQuote{Client: ada.ID, Mode: engine.ModeSandbox, Pair: pairGHSUSDT,
			Direction: engine.DirectionDestination, Amount: amount(t, "10", engine.CurrencyUSDT), Rate: pool.Rate})
	}
	pending, accepted := create(), create()
	accepted = mustTransition(t, n.sys, accepted, jsonAccept(t, ada, accepted))
	for _, q := range []*engine.Quote{pending, accepted} {
		deadline := time.UnixMilli(q.ExpiresAt)
		poll.Until(t, time.Until(deadline)+time.Second, func() string {
			got, _ := n.sys.Quote(q.Client, q.Mode, q.ID)
			if got.Status != engine.StatusExpired {
				return fmt.Sprintf("quote %s is %s, %s after its deadline", q.ID, got.Status, time.Since(deadline))
			}
			return ""
		})
		if time.Now().Before(deadline) {
			t.Errorf("quote expired before its deadline")
		}
	}
	poll.Until(t, 5*time.Second, func() string {
		if p, _ := n.sys.Pool(pool.ID); p.Liquidity.Held != 0 {
			return fmt.Sprintf("pool still holds %d", p.Liquidity.Held)
		}
		return ""
	})
	// All of the liquidity can be quoted again.
	mustQuote(t, n.sys, &actors.CreateQuote{Client: ada.ID, Mode: engine.ModeSandbox, Pair: pairGHSUSDT,
		Direction: engine.DirectionDestination, Amount: amount(t, "100", engine.CurrencyUSDT), Rate: pool.Rate})
	checkSystemLedger(t, n.sys)
}

// TestTransitionsThroughSystem: the lifecycle table of spec §4 through
// the actors, with the 409 details, tenant isolation and not-found.
func TestTransitionsThroughSystem(t *testing.T) {
	clk := newClock()
	n := newNode(t, testConfig(clk))
	sys := n.sys
	ada, bayo := newClient(t, sys, "ada"), newClient(t, sys, "bayo")
	newPool(t, sys, engine.ModeSandbox, pairNGNUSDT, "a", "0.000625", "1000")
	other := newPool(t, sys, engine.ModeSandbox, pairNGNUSDT, "b", "0.000625", "1000")
	// inStatus makes a quote of ada's in the given status.
	inStatus := func(t *testing.T, st engine.Status) *engine.Quote {
		q := mustQuote(t, sys, &actors.CreateQuote{Client: ada.ID, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
			Direction: engine.DirectionDestination, Amount: 1_000_000, Rate: rate(t, "0.0006")})
		switch st {
		case engine.StatusAwaitingPayment:
			mustTransition(t, sys, q, jsonAccept(t, ada, q))
		case engine.StatusCompleted:
			mustTransition(t, sys, q, jsonAccept(t, ada, q))
			mustTransition(t, sys, q, completeOp)
		case engine.StatusCancelled:
			mustTransition(t, sys, q, cancelOp)
		case engine.StatusExpired:
			clk.Advance(301 * time.Second)
			// The quote actor expires it before deciding anything.
			if r := transition(t, sys, q, cancelOp); r.Result != engine.ResultInvalidState {
				t.Fatalf("cancel after the TTL: %s", r.Result)
			}
			waitStatus(t, sys, q, engine.StatusExpired) // NB: see TestRefusalAfterExpiryIsCurrent
		}
		got, _ := sys.Quote(ada.ID, engine.ModeSandbox, q.ID)
		if got.Status != st {
			t.Fatalf("fixture quote is %s, want %s", got.Status, st)
		}
		return got
	}
	foreignAccept := func(t *testing.T, q *engine.Quote) *actors.TransitionQuote {
		cmd := jsonAccept(t, ada, q)
		cmd.Accept.PoolAccount = other.Proceeds.ID
		return cmd
	}
	tests := []struct {
		status      engine.Status
		op          string
		want        engine.Result
		wantStatus  engine.Status
		allowedFrom []engine.Status
	}{
		{engine.StatusPending, "accept", engine.ResultOK, engine.StatusAwaitingPayment, nil},
		{engine.StatusPending, "accept foreign account", engine.ResultInvalidAccount, engine.StatusPending, nil},
		{engine.StatusPending, "cancel", engine.ResultOK, engine.StatusCancelled, nil},
		{engine.StatusPending, "complete", engine.ResultInvalidState, engine.StatusPending, engine.Completing.From},
		{engine.StatusAwaitingPayment, "accept", engine.ResultOK, engine.StatusAwaitingPayment, nil},
		{engine.StatusAwaitingPayment, "accept foreign account", engine.ResultInvalidState, engine.StatusAwaitingPayment, engine.Accepting.From},
		{engine.StatusAwaitingPayment, "cancel", engine.ResultOK, engine.StatusCancelled, nil},
		{engine.StatusAwaitingPayment, "complete", engine.ResultOK, engine.StatusCompleted, nil},
		{engine.StatusCompleted, "accept", engine.ResultInvalidState, engine.StatusCompleted, engine.Accepting.From},
		{engine.StatusCompleted, "cancel", engine.ResultInvalidState, engine.StatusCompleted, engine.Cancelling.From},
		{engine.StatusCompleted, "complete", engine.ResultOK, engine.StatusCompleted, nil},
		{engine.StatusCancelled, "accept", engine.ResultInvalidState, engine.StatusCancelled, engine.Accepting.From},
		{engine.StatusCancelled, "cancel", engine.ResultOK, engine.StatusCancelled, nil},
		{engine.StatusCancelled, "complete", engine.ResultInvalidState, engine.StatusCancelled, engine.Completing.From},
		{engine.StatusExpired, "accept", engine.ResultInvalidState, engine.StatusExpired, engine.Accepting.From},
		{engine.StatusExpired, "cancel", engine.ResultInvalidState, engine.StatusExpired, engine.Cancelling.From},
		{engine.StatusExpired, "complete", engine.ResultInvalidState, engine.StatusExpired, engine.Completing.From},
	}
	for _, tc := range tests {
		t.Run(tc.status.String()+"/"+tc.op, func(t *testing.T) {
			q := inStatus(t, tc.status)
			var cmd *actors.TransitionQuote
			switch tc.op {
			case "accept":
				cmd = jsonAccept(t, ada, q)
			case "accept foreign account":
				cmd = foreignAccept(t, q)
			case "cancel":
				cmd = cancelOp
			case "complete":
				cmd = completeOp
			}
			r := transition(t, sys, q, cmd)
			if r.Result != tc.want {
				t.Errorf("result: got %s, want %s", r.Result, tc.want)
			}
			if !slices.Equal(r.AllowedFrom, tc.allowedFrom) {
				t.Errorf("allowed from: got %v, want %v", r.AllowedFrom, tc.allowedFrom)
			}
			if r.Quote == nil || r.Quote.Status != tc.wantStatus {
				t.Fatalf("reply quote: %+v, want status %s", r.Quote, tc.wantStatus)
			}
			if got, _ := sys.Quote(ada.ID, engine.ModeSandbox, q.ID); got.Status != tc.wantStatus {
				t.Errorf("read back: %s, want %s", got.Status, tc.wantStatus)
			}
			// Another client, the other mode and an unknown id are all
			// "not found", whatever the status.
			for _, who := range []struct {
				client engine.ClientID
				mode   engine.Mode
				id     engine.QuoteID
			}{{bayo.ID, engine.ModeSandbox, q.ID}, {ada.ID, engine.ModeLive, q.ID}, {ada.ID, engine.ModeSandbox, engine.QuoteID{1}}} {
				if r := sys.TransitionQuote(who.client, who.mode, who.id, cmd); r.Result != engine.ResultQuoteNotFound || r.Quote != nil {
					t.Errorf("transition as %v: %s, want %s", who, r.Result, engine.ResultQuoteNotFound)
				}
				if _, ok := sys.Quote(who.client, who.mode, who.id); ok {
					t.Errorf("read as %v: found", who)
				}
			}
		})
	}
	waitConverged(t, n)
	checkSystemLedger(t, sys)
}

// TestMaxOpenQuotes: an API key may hold at most MaxOpenQuotes open quotes
// (every key belongs to one client and one mode, so here a key stands for
// each (client, mode)); refusals and terminal quotes do not count; the count
// survives a restart.
func TestMaxOpenQuotes(t *testing.T) {
	clk := newClock()
	cfg := testConfig(clk)
	cfg.MaxOpenQuotes = 3
	n := newNode(t, cfg)
	ada, bayo := newClient(t, n.sys, "ada"), newClient(t, n.sys, "bayo")
	newPool(t, n.sys, engine.ModeSandbox, pairNGNUSDT, "sandbox", "0.000625", "1000")
	newPool(t, n.sys, engine.ModeLive, pairNGNUSDT, "live", "0.000625", "1000")
	create := func(sys *actors.System, c *engine.Client, m engine.Mode, dest engine.Amount) *actors.QuoteReply {
		key := engine.KeyID(c.ID)
		key[15] ^= byte(m)
		return sys.CreateQuote(&actors.CreateQuote{Key: key, Client: c.ID, Mode: m, Pair: pairNGNUSDT,
			Direction: engine.DirectionDestination, Amount: dest, Rate: rate(t, "0.0006")})
	}
	var open []*engine.Quote
	for i := range 3 {
		r := create(n.sys, ada, engine.ModeSandbox, 1_000_000)
		if r.Result != engine.ResultOK {
			t.Fatalf("quote %d: %s", i, r.Result)
		}
		open = append(open, r.Quote)
	}
	tests := []struct {
		name   string
		client *engine.Client
		mode   engine.Mode
		amount engine.Amount
		want   engine.Result
	}{
		{"fourth", ada, engine.ModeSandbox, 1_000_000, engine.ResultTooManyOpenQuotes},
		{"fourth, unfillable", ada, engine.ModeSandbox, 2_000_000_000, engine.ResultTooManyOpenQuotes},
		{"other mode", ada, engine.ModeLive, 1_000_000, engine.ResultOK},
		{"other client", bayo, engine.ModeSandbox, 1_000_000, engine.ResultOK},
	}
	for _, tc := range tests {
		if r := create(n.sys, tc.client, tc.mode, tc.amount); r.Result != tc.want || r.Err != nil {
			t.Errorf("%s: got %s %v, want %s", tc.name, r.Result, r.Err, tc.want)
		}
	}
	// A refused create does not take a slot: bayo has one open, two more fit
	// after a refusal.
	if r := create(n.sys, bayo, engine.ModeSandbox, 2_000_000_000); r.Result != engine.ResultInsufficientLiquidity {
		t.Fatalf("unfillable: %s", r.Result)
	}
	for i := range 2 {
		if r := create(n.sys, bayo, engine.ModeSandbox, 1_000_000); r.Result != engine.ResultOK {
			t.Errorf("bayo's quote %d after a refusal: %s", i+2, r.Result)
		}
	}
	// The count is rebuilt by recovery.
	n = n.restart()
	if r := create(n.sys, ada, engine.ModeSandbox, 1_000_000); r.Result != engine.ResultTooManyOpenQuotes {
		t.Errorf("after restart: %s, want %s", r.Result, engine.ResultTooManyOpenQuotes)
	}
	// Terminal quotes free their slot: cancelled, completed, expired.
	mustTransition(t, n.sys, open[0], cancelOp)
	if r := create(n.sys, ada, engine.ModeSandbox, 1_000_000); r.Result != engine.ResultOK {
		t.Errorf("after a cancel: %s", r.Result)
	}
	mustTransition(t, n.sys, open[1], jsonAccept(t, ada, open[1]))
	mustTransition(t, n.sys, open[1], completeOp)
	if r := create(n.sys, ada, engine.ModeSandbox, 1_000_000); r.Result != engine.ResultOK {
		t.Errorf("after a completion: %s", r.Result)
	}
	if r := create(n.sys, ada, engine.ModeSandbox, 1_000_000); r.Result != engine.ResultTooManyOpenQuotes {
		t.Errorf("full again: %s", r.Result)
	}
	clk.Advance(301 * time.Second)
	if r := transition(t, n.sys, open[2], cancelOp); r.Result != engine.ResultInvalidState {
		t.Fatalf("cancel after the TTL: %s", r.Result)
	}
	waitStatus(t, n.sys, open[2], engine.StatusExpired) // NB: see TestRefusalAfterExpiryIsCurrent
	if r := create(n.sys, ada, engine.ModeSandbox, 1_000_000); r.Result != engine.ResultOK {
		t.Errorf("after an expiry: %s", r.Result)
	}
}

func waitStatus(t testing.TB, sys *actors.System, q *engine.Quote, want engine.Status) {
	t.Helper()
	poll.Until(t, 5*time.Second, func() string {
		if got, _ := sys.Quote(q.Client, q.Mode, q.ID); got.Status != want {
			return fmt.Sprintf("quote %s is %s, want %s", q.ID, got.Status, want)
		}
		return ""
	})
}

// waitWallets waits until every wallet of c is readable.
func waitWallets(t testing.TB, sys *actors.System, c *engine.Client) {
	t.Helper()
	poll.Until(t, 5*time.Second, func() string {
		for _, w := range c.Wallets {
			if _, ok := sys.Account(w.Account); !ok {
				return fmt.Sprintf("wallet %s of %s not readable", w.Account, c.Name)
			}
		}
		return ""
	})
}

// TestClientWalletsReadableOnceCreated: once CreateClient has answered, the
// client's wallets exist (spec §11: "wallets created in both modes"):
// they can be read, listed and credited at once, by the very next request.
func TestClientWalletsReadableOnceCreated(t *testing.T) {
	n := newNode(t, testConfig(newClock()))
	for i := range 20 {
		c := newClient(t, n.sys, fmt.Sprintf("client-%d", i))
		if got, want := len(c.Wallets), len(engine.Modes)*len(engine.DefaultMarkets().CurrencyList()); got != want {
			t.Fatalf("%d wallets, want %d", got, want)
		}
		for _, w := range c.Wallets {
			if a, ok := n.sys.Account(w.Account); !ok || a.Currency != w.Currency || a.Mode != w.Mode {
				t.Fatalf("client %d: wallet %s %s not readable right after CreateClient: %+v %v", i, w.Mode, w.Currency, a, ok)
			}
		}
		for _, m := range engine.Modes {
			if got := len(n.sys.ClientAccounts(c.ID, m)); got != len(engine.DefaultMarkets().CurrencyList()) {
				t.Fatalf("client %d: %d %s accounts listed right after CreateClient, want %d", i, got, m, len(engine.DefaultMarkets().CurrencyList()))
			}
		}
		w := walletOf(t, c, engine.ModeLive, engine.CurrencyNGN)
		if r := n.sys.DepositAccount(&actors.DepositAccount{MoneyRequest: engine.MoneyRequest{Account: w, Amount: 100}}); r.Err != nil || r.Result != engine.ResultOK {
			t.Fatalf("client %d: deposit right after CreateClient: %v %s", i, r.Err, r.Result)
		}
	}
}

// TestRefusalAfterExpiryIsCurrent: a transition that arrives after the
// deadline but before the timer fired expires the quote first (spec §4)
// and is refused with 409 INVALID_STATE. The refusal must describe the
// quote as it now is (expired, not pending: "pending" is in the allowedFrom
// it carries), the quote must read back as expired, and its open-quote slot
// must be free, all by the time the refusal is answered.
func TestRefusalAfterExpiryIsCurrent(t *testing.T) {
	clk := newClock()
	cfg := testConfig(clk)
	cfg.MaxOpenQuotes = 1
	n := newNode(t, cfg)
	ada := newClient(t, n.sys, "ada")
	pool := newPool(t, n.sys, engine.ModeSandbox, pairNGNUSDT, "p", "0.000625", "1000")
	for i, op := range []*actors.TransitionQuote{cancelOp, completeOp, cancelOp, completeOp, cancelOp} {
		q := mustQuote(t, n.sys, &actors.CreateQuote{Client: ada.ID, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
			Direction: engine.DirectionDestination, Amount: 1_000_000, Rate: pool.Rate})
		clk.Advance(301 * time.Second)
		r := transition(t, n.sys, q, op)
		if r.Result != engine.ResultInvalidState {
			t.Fatalf("round %d: %s after the TTL: %s, want %s", i, r.Quote.Status, r.Result, engine.ResultInvalidState)
		}
		if r.Quote.Status != engine.StatusExpired {
			t.Errorf("round %d: 409 reply describes the quote as %s (allowed from %v), want expired", i, r.Quote.Status, r.AllowedFrom)
		}
		if got, _ := n.sys.Quote(q.Client, q.Mode, q.ID); got.Status != engine.StatusExpired {
			t.Errorf("round %d: read right after the 409: %s, want expired", i, got.Status)
		}
		if r := n.sys.CreateQuote(&actors.CreateQuote{Client: ada.ID, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
			Direction: engine.DirectionDestination, Amount: 1, Rate: pool.Rate}); r.Result == engine.ResultTooManyOpenQuotes {
			t.Errorf("round %d: create right after the 409: %s; the expired quote still holds the only slot", i, r.Result)
		} else if r.Quote != nil {
			mustTransition(t, n.sys, r.Quote, cancelOp)
		}
		waitStatus(t, n.sys, q, engine.StatusExpired)
	}
}

// TestWritesRefusedAfterStop: a stopped system answers writes with an
// operating error (503), not a result, and never blocks.
func TestWritesRefusedAfterStop(t *testing.T) {
	n := newNode(t, testConfig(newClock()))
	ada := newClient(t, n.sys, "ada")
	pool := newPool(t, n.sys, engine.ModeSandbox, pairNGNUSDT, "p", "0.000625", "10")
	q := mustQuote(t, n.sys, &actors.CreateQuote{Client: ada.ID, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
		Direction: engine.DirectionDestination, Amount: 1_000_000, Rate: pool.Rate})
	sys := n.sys
	n.stop()
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"create quote", sys.CreateQuote(&actors.CreateQuote{Client: ada.ID, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
			Direction: engine.DirectionDestination, Amount: 1_000_000, Rate: pool.Rate}).Err},
		{"cancel", sys.TransitionQuote(ada.ID, engine.ModeSandbox, q.ID, cancelOp).Err},
		{"admin", sys.Admin(&actors.CreateClient{Name: "x"}).Err},
		{"pool", sys.ChangePool(&actors.PoolCommand{Pool: pool.ID, Deposit: 1}).Err},
		{"ready", sys.Ready()},
	} {
		if !errors.Is(tc.err, actors.ErrUnavailable) {
			t.Errorf("%s after Stop: %v, want ErrUnavailable", tc.name, tc.err)
		}
	}
}
