package actors_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/wal"
)

// Crash torture (`make torture TORTURE=10m`): a real System on a wal.Log
// over Pebble's crashable in-memory filesystem takes random commands from
// several goroutines; at a random moment the filesystem is crash-cloned,
// keeping a random share of the data that was written but not synced; the
// clone is recovered (actors.Recover) and started again; and so on, round
// after round, with the engine clock jumping between rounds so that quotes
// also expire during recovery. After every recovery:
//
//   - every acknowledged effect is present: clients, keys and revocations,
//     pools, each acknowledged pool change and wallet move — deposit, bank
//     receipt, payout, credit limit — (as a multiset of log events), each acknowledged quote with the very
//     allocations it was acknowledged with, at least as far along its
//     lifecycle as acknowledged, and exactly in the terminal status
//     acknowledged;
//   - nothing is half-applied: every pool's holds equal its open quotes'
//     slices, every book entry agrees with its pool, every quote fills its
//     amount;
//   - the ledger check passes, on the recovered state and on the started
//     system;
//   - the recovered state hashes equal to a clean replay of the recovered
//     log.
//
// The last round ends with the system quiescent and its published views
// compared with the log before a last clean recovery.

var (
	tortureDuration = flag.Duration("torture", 0,
		"how long TestTorture crashes and recovers (0: a short run of a few seconds)")
	tortureSeed = flag.Uint64("torture-seed", 0, "seed of TestTorture's randomness (0: from the clock)")
)

const (
	tortureShort         = 3 * time.Second // TestTorture's run without -torture
	tortureRoundsMin     = 3
	tortureWorkers       = 4
	tortureRoundWorkMax  = 150 * time.Millisecond // the longest a round runs before its crash
	tortureRoundDeadline = 2 * time.Minute        // a round that takes longer is stuck
	tortureStoreDir      = "store"
	// Caps on what the workers create, so that a long run spends its time
	// on quotes and crashes rather than on restarting ever more actors.
	tortureClientsMax = 24
	tortureKeysMax    = 48
	torturePoolsMax   = 36
)

func TestTorture(t *testing.T) {
	duration := *tortureDuration
	if duration == 0 {
		duration = tortureShort
		if testing.Short() {
			duration = time.Second
		}
	}
	seed := *tortureSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d: rerun with go test ./actors -run TestTorture -torture-seed=%d", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x70b7))
	tt := &torture{t: t, rng: rng, clock: newClock(), acked: newAckedEffects()}
	fs := vfs.NewCrashableMem()
	start := time.Now()
	rounds, crashes := 0, 0
	for ; rounds < tortureRoundsMin || time.Since(start) < duration; rounds++ {
		var crashed bool
		fs, crashed = tt.round(fs, rounds)
		if crashed {
			crashes++
		}
	}
	tt.finish(fs)
	t.Logf("%d rounds (%d crashes) in %s; acknowledged: %s", rounds, crashes, time.Since(start).Round(time.Millisecond),
		tt.acked.summary())
}

// torture is one TestTorture run.
type torture struct {
	t     *testing.T
	rng   *rand.Rand // the main goroutine's; workers get their own
	clock *clock
	acked *ackedEffects
}

// running is one start of the service on a filesystem.
type running struct {
	log   *wal.Log
	sys   *actors.System
	known *knownEntities
}

// start opens the log on fs, recovers, checks the recovered state against
// everything acknowledged so far, and starts the actors.
func (tt *torture) start(fs vfs.FS) *running {
	t := tt.t
	t.Helper()
	log, err := wal.Open(tortureStoreDir, wal.Options{FS: fs, Sync: true})
	if err != nil {
		t.Fatalf("open the log after a crash: %v", err)
	}
	state, _, err := actors.Recover(log, tt.clock.Now())
	if err != nil {
		_ = log.Close()
		t.Fatalf("recover after a crash: %v", err)
	}
	tt.checkRecovered(log, state)
	known := knownFrom(state)
	sys, err := actors.Start(state, log, testConfig(tt.clock))
	if err != nil {
		_ = log.Close()
		t.Fatalf("start: %v", err)
	}
	checkSystemLedger(t, sys)
	return &running{log: log, sys: sys, known: known}
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	r.sys.Stop()
	if err := r.log.Close(); err != nil {
		t.Fatalf("close log: %v", err)
	}
}

// round starts the service on fs, runs workers, and either crashes (returns
// a crash clone) or, now and then, stops cleanly (returns fs itself).
func (tt *torture) round(fs *vfs.MemFS, n int) (*vfs.MemFS, bool) {
	t := tt.t
	watchdog := time.AfterFunc(tortureRoundDeadline, func() {
		panic(fmt.Sprintf("torture round %d is stuck after %s", n, tortureRoundDeadline))
	})
	defer watchdog.Stop()

	r := tt.start(fs)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range tortureWorkers {
		worker := &tortureWorker{t: t, sys: r.sys, known: r.known, acked: tt.acked,
			rng: rand.New(rand.NewPCG(tt.rng.Uint64(), uint64(w)))}
		wg.Go(func() {
			for !stop.Load() {
				worker.step()
			}
		})
	}
	time.Sleep(time.Duration(tt.rng.Int64N(int64(tortureRoundWorkMax))))

	var next *vfs.MemFS
	crash := tt.rng.IntN(4) != 0
	if crash {
		// Everything recorded as acknowledged so far was durable before the
		// clone; what is acknowledged after it happened "after the crash".
		before := tt.acked.clone()
		next = fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: tt.rng.IntN(101),
			RNG: rand.New(rand.NewPCG(tt.rng.Uint64(), 1))})
		stop.Store(true)
		wg.Wait()
		r.stop(t)
		tt.acked = before
	} else {
		stop.Store(true)
		wg.Wait()
		r.stop(t)
		next = fs
	}
	// The clock jumps now and then: pending quotes (TTL 300 s) and accepted
	// ones (payment window 30 min) then expire during the next recovery.
	switch x := tt.rng.IntN(20); {
	case x < 12:
	case x < 16:
		tt.clock.Advance(time.Minute)
	case x < 19:
		tt.clock.Advance(10 * time.Minute)
	default:
		tt.clock.Advance(time.Hour)
	}
	return next, crash
}

// finish recovers once more, runs a last batch of work to quiescence, checks
// that the actors' views converge to the log, and stops.
func (tt *torture) finish(fs *vfs.MemFS) {
	t := tt.t
	r := tt.start(fs)
	worker := &tortureWorker{t: t, sys: r.sys, known: r.known, acked: tt.acked,
		rng: rand.New(rand.NewPCG(tt.rng.Uint64(), 9))}
	for range 200 {
		worker.step()
	}
	waitConverged(t, &node{t: t, log: r.log, sys: r.sys})
	checkSystemLedger(t, r.sys)
	r.stop(t)
	tt.start(fs).stop(t)
}

// ---- What was acknowledged -------------------------------------------------

// ackedEffects is every effect a caller got a success for. Each must survive
// any crash after it was recorded.
type ackedEffects struct {
	mu       sync.Mutex
	clients  map[engine.ClientID]*engine.Client
	keys     map[engine.KeyID]bool // true once a revocation was acknowledged
	pools    map[engine.PoolID]*engine.Pool
	poolOps  map[poolChange]int    // acknowledged pool changes, counted
	deposits map[walletDeposit]int // acknowledged wallet moves (deposits, receipts, payouts, credit limits), counted
	quotes   map[engine.QuoteID]*ackedQuote
}

// poolChange is one acknowledged pool command; value is the rate, the status
// (0 or 1) or the amount.
type poolChange struct {
	pool  engine.PoolID
	kind  engine.EventType
	value uint64
	rate  engine.Rate
}

// walletDeposit is one acknowledged move of a wallet: kind is its event
// (AccountDeposited, PaymentReceived, AccountWithdrawn, CreditLimitSet),
// amount the amount or the limit.
type walletDeposit struct {
	kind    engine.EventType
	account engine.AccountID
	amount  engine.Amount
}

// ackedQuote is a quote as created, and the furthest status acknowledged.
type ackedQuote struct {
	created *engine.Quote
	status  engine.Status
}

func newAckedEffects() *ackedEffects {
	return &ackedEffects{clients: map[engine.ClientID]*engine.Client{}, keys: map[engine.KeyID]bool{},
		pools: map[engine.PoolID]*engine.Pool{}, poolOps: map[poolChange]int{}, deposits: map[walletDeposit]int{},
		quotes: map[engine.QuoteID]*ackedQuote{}}
}

func (a *ackedEffects) clone() *ackedEffects {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := newAckedEffects()
	for k, v := range a.clients {
		c.clients[k] = v
	}
	for k, v := range a.keys {
		c.keys[k] = v
	}
	for k, v := range a.pools {
		c.pools[k] = v
	}
	for k, v := range a.poolOps {
		c.poolOps[k] = v
	}
	for k, v := range a.deposits {
		c.deposits[k] = v
	}
	for k, v := range a.quotes {
		q := *v
		c.quotes[k] = &q
	}
	return c
}

func (a *ackedEffects) summary() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	statuses := map[engine.Status]int{}
	for _, q := range a.quotes {
		statuses[q.status]++
	}
	moves := map[engine.EventType]int{}
	for d, n := range a.deposits {
		moves[d.kind] += n
	}
	return fmt.Sprintf("%d clients, %d keys, %d pools, %d pool changes, wallet moves %v, quotes %v",
		len(a.clients), len(a.keys), len(a.pools), len(a.poolOps), moves, statuses)
}

// statusRank orders statuses along the lifecycle; all terminal ones rank 2.
func statusRank(s engine.Status) int {
	switch s {
	case engine.StatusPending:
		return 0
	case engine.StatusAwaitingPayment:
		return 1
	}
	return 2
}

// quote records an acknowledged view of a quote. A second terminal status
// different from an acknowledged one means a terminal quote changed.
func (a *ackedEffects) quote(t *testing.T, q *engine.Quote) {
	a.mu.Lock()
	defer a.mu.Unlock()
	got, ok := a.quotes[q.ID]
	if !ok {
		a.quotes[q.ID] = &ackedQuote{created: q, status: q.Status}
		return
	}
	switch {
	case statusRank(got.status) == 2 && statusRank(q.Status) == 2 && got.status != q.Status:
		t.Errorf("quote %s acknowledged %s, then %s: a terminal quote changed", q.ID, got.status, q.Status)
	case statusRank(q.Status) > statusRank(got.status):
		got.status = q.Status
	}
}

// ---- Checks after recovery -------------------------------------------------

// checkRecovered checks a recovered state against the acknowledged effects
// and the engine's invariants, and against a clean replay of the log.
func (tt *torture) checkRecovered(log *wal.Log, state *engine.State) {
	t := tt.t
	t.Helper()
	replayed := engine.NewState()
	poolOps := map[poolChange]int{}
	deposits := map[walletDeposit]int{}
	err := log.Replay(0, func(seq uint64, rec []byte) error {
		ev, err := engine.DecodeEvent(rec)
		if err != nil {
			return fmt.Errorf("record %d: %w", seq, err)
		}
		switch ev := ev.(type) {
		case *engine.PoolRateSet:
			poolOps[poolChange{pool: ev.Pool, kind: ev.Type(), rate: ev.Rate}]++
		case *engine.PoolStatusSet:
			poolOps[poolChange{pool: ev.Pool, kind: ev.Type(), value: boolValue(ev.Active)}]++
		case *engine.PoolDeposited:
			poolOps[poolChange{pool: ev.Pool, kind: ev.Type(), value: uint64(ev.Amount)}]++
		case *engine.PoolWithdrawn:
			poolOps[poolChange{pool: ev.Pool, kind: ev.Type(), value: uint64(ev.Amount)}]++
		case *engine.AccountDeposited:
			deposits[walletDeposit{ev.Type(), ev.Account, ev.Amount}]++
		case *engine.PaymentReceived:
			deposits[walletDeposit{ev.Type(), ev.Account, ev.Amount}]++
		case *engine.AccountWithdrawn:
			deposits[walletDeposit{ev.Type(), ev.Account, ev.Amount}]++
		case *engine.CreditLimitSet:
			deposits[walletDeposit{ev.Type(), ev.Account, ev.Limit}]++
		}
		return replayed.Apply(ev)
	})
	if err != nil {
		t.Fatalf("clean replay of the recovered log: %v", err)
	}
	if got, want := state.Hash(), replayed.Hash(); got != want {
		t.Fatalf("recovered state hash %x, a clean replay of its log %x", got, want)
	}
	for _, m := range engine.Modes {
		checkLedger(t, "recovered "+m.String(), state.LedgerCheck(m))
	}
	checkWhole(t, state)

	a := tt.acked
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, want := range a.clients {
		got, ok := state.Clients[id]
		if !ok || got.Name != want.Name || !reflect.DeepEqual(got.Wallets, want.Wallets) {
			t.Fatalf("acknowledged client %s (%s) lost or changed: %+v", id, want.Name, got)
		}
	}
	for id, revoked := range a.keys {
		got, ok := state.Keys[id]
		if !ok || revoked && !got.Revoked {
			t.Fatalf("acknowledged key %s lost, or its acknowledged revocation: %+v", id, got)
		}
	}
	for id, want := range a.pools {
		got, ok := state.Pools[id]
		if !ok || got.Mode != want.Mode || got.Pair != want.Pair || got.Name != want.Name ||
			got.Liquidity.ID != want.Liquidity.ID || got.Proceeds.ID != want.Proceeds.ID {
			t.Fatalf("acknowledged pool %s (%s) lost or changed: %+v", id, want.Name, got)
		}
	}
	for op, n := range a.poolOps {
		if poolOps[op] < n {
			t.Fatalf("%d acknowledged %s of %d on pool %s, the log has %d", n, op.kind, op.value, op.pool, poolOps[op])
		}
	}
	for d, n := range a.deposits {
		if deposits[d] < n {
			t.Fatalf("%d acknowledged %s of %d on %s, the log has %d", n, d.kind, d.amount, d.account, deposits[d])
		}
	}
	for id, want := range a.quotes {
		got := state.Quotes.Get(id)
		if got == nil {
			t.Fatalf("acknowledged quote %s (%s) lost", id, want.status)
		}
		c := want.created
		if got.Client != c.Client || got.Mode != c.Mode || got.Pair != c.Pair || got.Amount != c.Amount ||
			got.Direction != c.Direction || !reflect.DeepEqual(got.Allocations(), c.Allocations()) ||
			got.TotalSource() != c.TotalSource() || got.TotalDestination() != c.TotalDestination() {
			t.Fatalf("acknowledged quote %s differs after recovery:\ngot  %+v\nwant %+v", id, got, c)
		}
		switch {
		case statusRank(want.status) == 2 && got.Status != want.status:
			t.Fatalf("quote %s acknowledged %s, recovered %s", id, want.status, got.Status)
		case statusRank(got.Status) < statusRank(want.status):
			t.Fatalf("quote %s acknowledged %s, recovered %s: an acknowledged transition was lost", id, want.status, got.Status)
		}
	}
}

// checkWhole checks that nothing is half-applied in s: every pool's holds
// are exactly its open quotes' slices and within its balance, its book entry
// agrees with it, and every quote fills its amount.
func checkWhole(t *testing.T, s *engine.State) {
	t.Helper()
	held := map[engine.PoolID]engine.Amount{}
	for q := range s.Quotes.All() {
		id := q.ID
		var source, destination engine.Amount
		for _, a := range q.Allocations() {
			source += a.Source
			destination += a.Destination
			if q.Status.Open() {
				held[a.Pool] += a.Destination
			}
		}
		filled := source
		if q.Direction == engine.DirectionDestination {
			filled = destination
		}
		if filled != q.Amount || source != q.TotalSource() || destination != q.TotalDestination() {
			t.Fatalf("quote %s: amount %d, slices fill %d (source %d, destination %d)", id, q.Amount, filled, source, destination)
		}
	}
	for id, p := range s.Pools {
		if p.Liquidity.Held != held[id] || p.Liquidity.Held < 0 || p.Liquidity.Held > p.Liquidity.Balance {
			t.Fatalf("pool %s: held %d, balance %d, open quotes' slices %d", p.Name, p.Liquidity.Held,
				p.Liquidity.Balance, held[id])
		}
		e, ok := s.Book(p.Mode, p.Pair).Entry(id)
		if !ok || e.Available != p.Liquidity.Available() || e.Rate != p.Rate || e.Active != p.Active {
			t.Fatalf("pool %s: book entry %+v, pool available %d", p.Name, e, p.Liquidity.Available())
		}
	}
}

func boolValue(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// ---- The workers -----------------------------------------------------------

// knownEntities is what the workers of one run can address: everything in
// the recovered state, plus what they create.
type knownEntities struct {
	mu      sync.Mutex
	clients []*engine.Client
	keys    []engine.KeyID
	pools   []*engine.Pool // as created: ids, pair, accounts
	quotes  []*engine.Quote
}

func knownFrom(s *engine.State) *knownEntities {
	k := &knownEntities{}
	for _, c := range s.Clients {
		k.clients = append(k.clients, c)
	}
	for id := range s.Keys {
		k.keys = append(k.keys, id)
	}
	for _, p := range s.Pools {
		k.pools = append(k.pools, p.Clone())
	}
	for q := range s.Quotes.All() {
		k.quotes = append(k.quotes, q.Clone())
	}
	return k
}

// tortureWorker issues random commands and records what is acknowledged.
type tortureWorker struct {
	t     *testing.T
	sys   *actors.System
	known *knownEntities
	acked *ackedEffects
	rng   *rand.Rand
}

// pick returns a random element of list under the lock, and whether there
// was one.
func pick[T any](k *knownEntities, rng *rand.Rand, list *[]T) (T, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var zero T
	if len(*list) == 0 {
		return zero, false
	}
	return (*list)[rng.IntN(len(*list))], true
}

var tortureRates = map[engine.Pair][]engine.Rate{
	pairNGNUSDT: {engine.RateFromUnits(625_000_000_000_000), engine.RateFromUnits(620_000_000_000_000), engine.RateFromUnits(631_000_000_000_000)},
	pairGHSUSDT: {engine.RateFromUnits(80_000_000_000_000_000), engine.RateFromUnits(79_500_000_000_000_000)},
	pairNGNGHS:  {engine.RateFromUnits(9_500_000_000_000_000), engine.RateFromUnits(9_400_000_000_000_000)},
}

// extremeAmount is usually a typical amount in [1, typical], and one time in
// five a bound: the smallest amount, the largest (engine.AmountMax), just
// below it, or half of it plus one — so that sums of acknowledged amounts
// cross AmountMax, and a live decision that replay would refuse shows as a
// failed recovery (live and replay must use one rule).
func extremeAmount(rng *rand.Rand, typical int64) engine.Amount {
	if rng.IntN(5) != 0 {
		return engine.Amount(1 + rng.Int64N(typical))
	}
	return [...]engine.Amount{1, engine.AmountMax, engine.AmountMax - 1, engine.AmountMax/2 + 1}[rng.IntN(4)]
}

// extremeRate is usually one of the pair's typical rates, and one time in
// ten a bound of the engine (the smallest rate, engine.RateMax).
func extremeRate(rng *rand.Rand, pair engine.Pair) engine.Rate {
	if rng.IntN(10) == 0 {
		return [...]engine.Rate{engine.RateFromUnits(1), engine.RateMax}[rng.IntN(2)]
	}
	rates := tortureRates[pair]
	return rates[rng.IntN(len(rates))]
}

func (w *tortureWorker) step() {
	k, rng := w.known, w.rng
	k.mu.Lock()
	clients, keys, pools := len(k.clients), len(k.keys), len(k.pools)
	k.mu.Unlock()
	switch x := rng.IntN(100); {
	case x < 3 && clients < tortureClientsMax || clients == 0:
		w.admin(&actors.CreateClient{Name: fmt.Sprintf("partner-%d", rng.IntN(1000))})
	case x < 5 && keys < tortureKeysMax:
		if c, ok := pick(k, rng, &k.clients); ok {
			w.admin(&actors.CreateKey{Client: c.ID, Mode: engine.Modes[rng.IntN(2)]})
		}
	case x < 6:
		if key, ok := pick(k, rng, &k.keys); ok {
			w.admin(&actors.RevokeKey{Key: key})
		}
	case x < 9 && pools < torturePoolsMax || pools == 0:
		pairs := engine.DefaultMarkets().PairList()
		pair := pairs[rng.IntN(len(pairs))]
		w.admin(&actors.CreatePool{Mode: engine.Modes[rng.IntN(2)], Name: fmt.Sprintf("desk-%d", rng.IntN(1000)),
			Pair: pair, Rate: extremeRate(rng, pair)})
	case x < 20:
		w.changePool()
	case x < 24:
		w.depositWallet()
	case x < 30:
		w.funds()
	case x < 60:
		w.createQuote()
	default:
		w.transition()
	}
}

func (w *tortureWorker) admin(cmd actors.AdminRequest) {
	r := w.sys.Admin(cmd)
	if r.Err != nil || r.Result != engine.ResultOK {
		return
	}
	a, k := w.acked, w.known
	a.mu.Lock()
	switch cmd := cmd.(type) {
	case *actors.CreateClient:
		a.clients[r.Client.ID] = r.Client
	case *actors.CreateKey:
		a.keys[r.Key.ID] = a.keys[r.Key.ID] || r.Key.Revoked
	case *actors.RevokeKey:
		a.keys[cmd.Key] = true
	case *actors.CreatePool:
		a.pools[r.Pool.ID] = r.Pool
	}
	a.mu.Unlock()
	k.mu.Lock()
	switch cmd.(type) {
	case *actors.CreateClient:
		k.clients = append(k.clients, r.Client)
	case *actors.CreateKey:
		k.keys = append(k.keys, r.Key.ID)
	case *actors.CreatePool:
		k.pools = append(k.pools, r.Pool)
	}
	k.mu.Unlock()
}

func (w *tortureWorker) changePool() {
	p, ok := pick(w.known, w.rng, &w.known.pools)
	if !ok {
		return
	}
	cmd := &actors.PoolCommand{Pool: p.ID}
	var change poolChange
	switch x := w.rng.IntN(10); {
	case x < 5:
		cmd.Deposit = extremeAmount(w.rng, 500_000_000)
		change = poolChange{pool: p.ID, kind: engine.EventPoolDeposited, value: uint64(cmd.Deposit)}
	case x < 7:
		cmd.Withdraw = extremeAmount(w.rng, 100_000_000)
		change = poolChange{pool: p.ID, kind: engine.EventPoolWithdrawn, value: uint64(cmd.Withdraw)}
	case x < 9:
		cmd.Rate = extremeRate(w.rng, p.Pair)
		change = poolChange{pool: p.ID, kind: engine.EventPoolRateSet, rate: cmd.Rate}
	default:
		active := w.rng.IntN(4) != 0
		cmd.Status = &active
		change = poolChange{pool: p.ID, kind: engine.EventPoolStatusSet, value: boolValue(active)}
	}
	r := w.sys.ChangePool(cmd)
	if r.Err != nil || r.Result != engine.ResultOK {
		return
	}
	w.acked.mu.Lock()
	w.acked.poolOps[change]++
	w.acked.mu.Unlock()
}

func (w *tortureWorker) depositWallet() {
	c, ok := pick(w.known, w.rng, &w.known.clients)
	if !ok || len(c.Wallets) == 0 {
		return
	}
	account := c.Wallets[w.rng.IntN(len(c.Wallets))].Account
	amount := extremeAmount(w.rng, 1_000_000)
	r := w.sys.DepositAccount(&actors.DepositAccount{MoneyRequest: engine.MoneyRequest{Account: account, Amount: amount}})
	if r.Err != nil || r.Result != engine.ResultOK {
		return
	}
	w.acked.mu.Lock()
	w.acked.deposits[walletDeposit{engine.EventAccountDeposited, account, amount}]++
	w.acked.mu.Unlock()
}

// funds makes a bank receipt for a known quote (by its reference), a
// payout or a credit line (funds first): each acknowledged one must be in
// the recovered log.
func (w *tortureWorker) funds() {
	rng := w.rng
	var move walletDeposit
	switch x := rng.IntN(10); {
	case x < 6:
		q, ok := pick(w.known, rng, &w.known.quotes)
		if !ok {
			return
		}
		txID, _ := engine.InboundIdentity(q.Pair.Source, fmt.Sprintf("BTX-%d", rng.IntN(1000)))
		r := w.sys.RecordBankReceipt(q.Mode, q.Reference.String(), extremeAmount(rng, 50_000_000), txID, nil)
		if r.Err != nil || r.Result != engine.ResultOK || r.Repeated {
			return
		}
		move = walletDeposit{engine.EventPaymentIdentified, r.Receipt.Account, r.Receipt.Amount}
	default:
		c, ok := pick(w.known, rng, &w.known.clients)
		if !ok || len(c.Wallets) == 0 {
			return
		}
		wa := c.Wallets[rng.IntN(len(c.Wallets))]
		amount := extremeAmount(rng, 5_000_000)
		if x < 8 {
			ref, _ := engine.OutboundIdentity(wa.Currency, fmt.Sprintf("PAYOUT-%d", rng.IntN(1000)))
			r := w.sys.WithdrawAccount(&actors.WithdrawAccount{MoneyRequest: engine.MoneyRequest{Account: wa.Account, Amount: amount, Reference: ref}})
			if r.Err != nil || r.Result != engine.ResultOK || r.Repeated {
				return
			}
			move = walletDeposit{engine.EventAccountWithdrawnRef, wa.Account, amount}
		} else {
			if rng.IntN(3) == 0 {
				amount = 0
			}
			r := w.sys.SetCreditLimit(c.ID, wa.Mode, wa.Currency, amount, nil)
			if r.Err != nil || r.Result != engine.ResultOK {
				return
			}
			move = walletDeposit{engine.EventCreditLimitSet, wa.Account, amount}
		}
	}
	w.acked.mu.Lock()
	w.acked.deposits[move]++
	w.acked.mu.Unlock()
}

func (w *tortureWorker) createQuote() {
	rng := w.rng
	c, ok := pick(w.known, rng, &w.known.clients)
	if !ok {
		return
	}
	pairs := engine.DefaultMarkets().PairList()
	pair := pairs[rng.IntN(len(pairs))]
	rates := tortureRates[pair]
	cmd := &actors.CreateQuote{Client: c.ID, Mode: engine.Modes[rng.IntN(2)], Pair: pair,
		Direction: engine.DirectionSource, Amount: extremeAmount(rng, 50_000_000),
		Rate: proposed(rates[rng.IntN(len(rates))], rates[0], rng.IntN(2)), Chain: engine.DefaultMarkets().DefaultChain(pair.Destination)}
	if rng.IntN(2) == 0 {
		cmd.Direction, cmd.Amount = engine.DirectionDestination, extremeAmount(rng, 30_000_000)
	}
	if rng.IntN(20) == 0 {
		cmd.Rate = [...]engine.Rate{engine.RateFromUnits(1), engine.RateMax}[rng.IntN(2)]
	}
	if rng.IntN(4) == 0 {
		cmd.IdempotencyKey = engine.MakeIdemKey(fmt.Sprintf("retry-%d", rng.IntN(20)))
		cmd.RequestHash = [32]byte{byte(cmd.Amount), byte(cmd.Pair.Source), byte(cmd.Direction)}
	}
	r := w.sys.CreateQuote(cmd)
	if r.Err != nil || r.Result != engine.ResultOK {
		return
	}
	w.acked.quote(w.t, r.Quote)
	w.known.mu.Lock()
	w.known.quotes = append(w.known.quotes, r.Quote)
	w.known.mu.Unlock()
}

func (w *tortureWorker) transition() {
	q, ok := pick(w.known, w.rng, &w.known.quotes)
	if !ok {
		return
	}
	var cmd *actors.TransitionQuote
	switch x := w.rng.IntN(10); {
	case x < 4:
		cmd = &actors.TransitionQuote{Operation: actors.OperationAccept, Accept: engine.AcceptQuote{
			Settlement: engine.Settlement{Kind: engine.SettlementBank, AccountName: "Ada", AccountNumber: "0123456789",
				BankCode: "058"}}}
		if q.Pair.Destination.IsToken() {
			cmd.Accept.Settlement = engine.Settlement{Kind: engine.SettlementChain, Address: "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW"}
		}
		if c, ok := w.sys.Client(q.Client); ok {
			for _, wa := range c.Wallets {
				if wa.Mode == q.Mode && wa.Currency == q.Pair.Destination && w.rng.IntN(2) == 0 {
					cmd.Accept = engine.AcceptQuote{NamesPoolAccount: true, PoolAccount: q.Allocations()[0].PoolAccount,
						Settlement: engine.Settlement{Kind: engine.SettlementWallet, Account: wa.Account}}
				}
			}
		}
	case x < 7:
		cmd = completeOp
	default:
		cmd = cancelOp
	}
	r := w.sys.TransitionQuote(q.Client, q.Mode, q.ID, cmd)
	if r.Err != nil {
		if !errors.Is(r.Err, actors.ErrUnavailable) {
			w.t.Errorf("transition of %s: %v", q.ID, r.Err)
		}
		return
	}
	if r.Quote != nil && r.Result != engine.ResultQuoteNotFound {
		// Refusals carry the quote's current, durable view too.
		w.acked.quote(w.t, r.Quote)
	}
}

// proposed is rate, or rate less 1% of reference when lower is 1.
func proposed(rate, reference engine.Rate, lower int) engine.Rate {
	if lower == 0 {
		return rate
	}
	r, _ := rate.Units()
	cut, _ := reference.Units()
	return engine.RateFromUnits(r - cut/100)
}
