package actors_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// Sizes are chosen so that the package's tests finish well within a minute
// under -race on two cores.
const (
	scarceWorkers         = 64
	scarceQuotesPerWorker = 50
)

// intent is what a worker decided to do with a quote it got.
type intent uint8

const (
	intentLeaveOpen intent = iota
	intentCancel
	intentComplete
	intentAcceptCancel
	intentAcceptOnly
)

// createdQuote is one quote a worker made, with where it should end.
type createdQuote struct {
	quote  *engine.Quote
	intent intent
	client *engine.Client
}

// TestScarceLiquidity: many partners race for little liquidity on two pairs,
// in both directions, and cancel, accept and complete as they go, while an
// operator deposits and withdraws. Spec §5: the holds on a pool never
// exceed its balance and no quote is ever partly reserved; spec §3: the ledger
// sums to zero per currency in both modes.
func TestScarceLiquidity(t *testing.T) {
	n := newNode(t, testConfig(newClock()))
	sys := n.sys
	var clients []*engine.Client
	for i := range 4 {
		c := newClient(t, sys, fmt.Sprintf("partner-%d", i))
		waitWallets(t, sys, c)
		clients = append(clients, c)
	}
	type poolSpec struct {
		pair             engine.Pair
		name, rate, usdt string
	}
	specs := []poolSpec{
		{pairNGNUSDT, "lagos", "0.000625", "80"},
		{pairNGNUSDT, "ikeja", "0.00062", "60"},
		{pairNGNUSDT, "lekki", "0.00063", "40.5"},
		{pairGHSUSDT, "accra", "0.08", "50"},
	}
	// deposited is an upper bound of each pool's deposits less withdrawals:
	// a deposit is counted before it is asked for, a withdrawal once it is
	// acknowledged.
	deposited := make(map[engine.PoolID]*atomic.Int64)
	pools := make(map[engine.PoolID]*engine.Pool)
	var poolList []*engine.Pool
	for _, s := range specs {
		p := newPool(t, sys, engine.ModeSandbox, s.pair, s.name, s.rate, s.usdt)
		pools[p.ID], deposited[p.ID] = p, new(atomic.Int64)
		deposited[p.ID].Store(int64(p.Liquidity.Balance))
		poolList = append(poolList, p)
	}
	rates := map[engine.Pair][]engine.Rate{
		pairNGNUSDT: {rate(t, "0.0006"), rate(t, "0.000625"), rate(t, "0.00063")},
		pairGHSUSDT: {rate(t, "0.075"), rate(t, "0.08")},
	}

	// created is every quote whose create was answered OK, readable by the
	// monitor while the workers run. A quote's intent is changed only by the
	// worker that made it.
	var (
		mu      sync.Mutex
		created []*createdQuote
	)
	var refused, tooSmall atomic.Int64
	var wg sync.WaitGroup
	for w := range scarceWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 0x5ca4ce))
			c := clients[w%len(clients)]
			// held are this worker's quotes kept open (pending or accepted);
			// it releases the oldest when it holds too many or is refused,
			// so liquidity is reserved over and over.
			var held []*createdQuote
			release := func() bool {
				cq := held[0]
				held = held[1:]
				if r := sys.TransitionQuote(cq.quote.Client, cq.quote.Mode, cq.quote.ID, cancelOp); r.Err != nil || r.Result != engine.ResultOK {
					t.Errorf("release %s: %v %s", cq.quote.ID, r.Err, r.Result)
					return false
				}
				if cq.intent == intentLeaveOpen {
					cq.intent = intentCancel
				} else {
					cq.intent = intentAcceptCancel
				}
				return true
			}
			for range scarceQuotesPerWorker {
				pair := pairNGNUSDT
				if rng.IntN(4) == 0 {
					pair = pairGHSUSDT
				}
				cmd := &actors.CreateQuote{Client: c.ID, Mode: engine.ModeSandbox, Pair: pair,
					Rate: rates[pair][rng.IntN(len(rates[pair]))], Chain: engine.ChainTron}
				switch {
				case rng.IntN(2) == 0: // up to 8 USDT
					cmd.Direction, cmd.Amount = engine.DirectionDestination, engine.Amount(rng.Int64N(8_000_000)+1)
				case pair == pairNGNUSDT: // up to ~8 USDT of NGN
					cmd.Direction, cmd.Amount = engine.DirectionSource, engine.Amount(rng.Int64N(1_300_000)+100)
				default: // up to ~8 USDT of GHS
					cmd.Direction, cmd.Amount = engine.DirectionSource, engine.Amount(rng.Int64N(10_000)+1)
				}
				r := sys.CreateQuote(cmd)
				if r.Err != nil {
					t.Errorf("create: %v", r.Err)
					return
				}
				switch r.Result {
				case engine.ResultOK:
				case engine.ResultInsufficientLiquidity:
					refused.Add(1)
					if r.Quote != nil || r.Allocation.Fillable >= cmd.Amount || len(r.Allocation.Slices) != 0 {
						t.Errorf("refusal with a quote or slices: %+v", r)
					}
					if len(held) > 0 && !release() {
						return
					}
					continue
				case engine.ResultAmountTooSmall:
					tooSmall.Add(1)
					continue
				default:
					t.Errorf("create %+v: %s", cmd, r.Result)
					continue
				}
				q := r.Quote
				checkAllocation(t, cmd, q, pools)
				cq := &createdQuote{quote: q, intent: pickIntent(rng), client: c}
				mu.Lock()
				created = append(created, cq)
				mu.Unlock()
				if !runIntent(t, sys, cq) {
					return
				}
				switch cq.intent {
				case intentLeaveOpen, intentAcceptOnly:
					held = append(held, cq)
				case intentComplete:
					// The market maker tops up what was paid out, mostly.
					if rng.IntN(10) < 7 {
						for _, a := range q.Allocations() {
							deposited[a.Pool].Add(int64(a.Destination))
							if r := sys.ChangePool(&actors.PoolCommand{Pool: a.Pool, Deposit: a.Destination}); r.Err != nil || r.Result != engine.ResultOK {
								t.Errorf("top up: %v %s", r.Err, r.Result)
								return
							}
						}
					}
				}
				if len(held) > 2 && !release() {
					return
				}
			}
		}()
	}

	// The operator moves liquidity in and out while the partners trade.
	done := make(chan struct{})
	var deposits, withdrawals, withdrawalsRefused atomic.Int64
	operatorDone := make(chan struct{})
	go func() {
		defer close(operatorDone)
		rng := rand.New(rand.NewPCG(99, 99))
		for {
			select {
			case <-done:
				return
			default:
			}
			time.Sleep(time.Millisecond)
			p := poolList[rng.IntN(len(poolList))]
			a := engine.Amount(rng.Int64N(5_000_000) + 1)
			if rng.IntN(3) > 0 {
				deposited[p.ID].Add(int64(a))
				if r := sys.ChangePool(&actors.PoolCommand{Pool: p.ID, Deposit: a}); r.Err != nil || r.Result != engine.ResultOK {
					t.Errorf("deposit: %v %s", r.Err, r.Result)
					return
				}
				deposits.Add(1)
				continue
			}
			r := sys.ChangePool(&actors.PoolCommand{Pool: p.ID, Withdraw: a})
			switch {
			case r.Err != nil:
				t.Errorf("withdraw: %v", r.Err)
				return
			case r.Result == engine.ResultOK:
				deposited[p.ID].Add(-int64(a))
				withdrawals.Add(1)
			case r.Result == engine.ResultInsufficientFunds:
				withdrawalsRefused.Add(1)
			default:
				t.Errorf("withdraw: %s", r.Result)
			}
		}
	}()

	// The monitor samples the published views while the workers run.
	var samples atomic.Int64
	monitorDone := make(chan struct{})
	go func() {
		defer close(monitorDone)
		for {
			select {
			case <-done:
				return
			default:
			}
			checkHoldsWithinBalance(t, sys, pools)
			mu.Lock()
			snapshot := created[:len(created):len(created)]
			mu.Unlock()
			checkReservedWithinDeposited(t, sys, snapshot, deposited)
			samples.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	close(done)
	<-monitorDone
	<-operatorDone
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d quotes created, %d refused for liquidity, %d too small; %d deposits, %d withdrawals, %d refused; %d monitor samples",
		len(created), refused.Load(), tooSmall.Load(), deposits.Load(), withdrawals.Load(), withdrawalsRefused.Load(), samples.Load())
	// NB: whether a withdrawal wins the race for the scarce liquidity
	// depends on scheduling (without -race the partners often drain the
	// pools first); what matters is that the operator raced them.
	if refused.Load() < 50 || len(created) < scarceWorkers*scarceQuotesPerWorker/8 ||
		withdrawals.Load()+withdrawalsRefused.Load() == 0 || samples.Load() < 3 {
		t.Fatalf("the run did not contend: %d created, %d refused, %d samples", len(created), refused.Load(), samples.Load())
	}

	waitConverged(t, n)
	checkSystemLedger(t, sys)
	final := make(map[engine.PoolID]engine.Amount)
	for id, d := range deposited {
		final[id] = engine.Amount(d.Load())
	}
	checkPoolsAgainstQuotes(t, sys, pools, final, created)
	for _, c := range clients {
		var want engine.Amount
		for _, cq := range created {
			if cq.client == c && cq.intent == intentComplete {
				want += cq.quote.TotalDestination()
			}
		}
		a, _ := sys.Account(walletOf(t, c, engine.ModeSandbox, engine.CurrencyUSDT))
		if a.Balance != want || a.Held != 0 {
			t.Errorf("%s's USDT wallet: balance %d held %d, want %d (its completed quotes)", c.Name, a.Balance, a.Held, want)
		}
	}

	// Cancel everything still open: nothing may stay held, and the book's
	// available liquidity is the whole balance again.
	for _, cq := range created {
		got, _ := sys.Quote(cq.quote.Client, cq.quote.Mode, cq.quote.ID)
		if got.Status.Open() {
			mustTransition(t, sys, got, cancelOp)
		}
	}
	waitConverged(t, n)
	checkSystemLedger(t, sys)
	for id, p := range pools {
		view, _ := sys.Pool(id)
		if view.Liquidity.Held != 0 {
			t.Errorf("pool %s holds %d with every quote terminal", p.Name, view.Liquidity.Held)
		}
		if got := bookAvailable(t, sys, clients[0], view); got != view.Liquidity.Balance {
			t.Errorf("pool %s: book available %d, balance %d", p.Name, got, view.Liquidity.Balance)
		}
	}

	// The log agrees: a restart rebuilds the same pools (replay equivalence
	// is checked by startNode).
	before := captureViews(t, sys, clients, nil)
	n = n.restart()
	compareViews(t, captureViews(t, n.sys, clients, nil), before)
}

// pickIntent: most quotes end releasing their liquidity, so that it is
// reserved over and over; some keep it (open, accepted) or consume it.
func pickIntent(rng *rand.Rand) intent {
	switch r := rng.IntN(100); {
	case r < 10:
		return intentLeaveOpen
	case r < 55:
		return intentCancel
	case r < 70:
		return intentComplete
	case r < 95:
		return intentAcceptCancel
	default:
		return intentAcceptOnly
	}
}

// runIntent carries out what the worker decided; false when it must stop.
func runIntent(t *testing.T, sys *actors.System, cq *createdQuote) bool {
	q := cq.quote
	steps := map[intent][]*actors.TransitionQuote{
		intentCancel:       {cancelOp},
		intentComplete:     {jsonAccept(t, cq.client, q), completeOp},
		intentAcceptCancel: {jsonAccept(t, cq.client, q), cancelOp},
		intentAcceptOnly:   {jsonAccept(t, cq.client, q)},
	}[cq.intent]
	for _, op := range steps {
		r := sys.TransitionQuote(q.Client, q.Mode, q.ID, op)
		if r.Err != nil || r.Result != engine.ResultOK {
			t.Errorf("transition %d of %s: %v %s", op.Operation, q.ID, r.Err, r.Result)
			return false
		}
	}
	return true
}

// checkAllocation checks one created quote against its request: all or
// nothing, exact sums, eligible pools, rounding in favour of the pool.
func checkAllocation(t *testing.T, cmd *actors.CreateQuote, q *engine.Quote, pools map[engine.PoolID]*engine.Pool) {
	if q.Status != engine.StatusPending || q.Amount != cmd.Amount || q.Direction != cmd.Direction || q.Pair != cmd.Pair {
		t.Errorf("created quote %+v for %+v", q, cmd)
	}
	if len(q.Allocations()) == 0 {
		t.Errorf("quote %s has no allocations", q.ID)
		return
	}
	var source, destination engine.Amount
	seen := make(map[engine.PoolID]bool)
	for _, a := range q.Allocations() {
		p, ok := pools[a.Pool]
		switch {
		case !ok || p.Pair != q.Pair:
			t.Errorf("quote %s: slice of pool %s, not of its pair", q.ID, a.Pool)
			continue
		case seen[a.Pool]:
			t.Errorf("quote %s: two slices of pool %s", q.ID, p.Name)
		case a.PoolAccount != p.Liquidity.ID:
			t.Errorf("quote %s: slice of %s names account %s, not its liquidity account", q.ID, p.Name, a.PoolAccount)
		case a.Rate.Less(cmd.Rate):
			t.Errorf("quote %s: slice at %s below the proposed %s", q.ID, engine.AppendRate(nil, a.Rate), engine.AppendRate(nil, cmd.Rate))
		case a.Source <= 0 || a.Destination <= 0:
			t.Errorf("quote %s: empty slice %+v", q.ID, a)
		}
		seen[a.Pool] = true
		if cmd.Direction == engine.DirectionSource {
			if d, _ := engine.DestinationAmount(a.Source, a.Rate, q.Pair); d != a.Destination {
				t.Errorf("quote %s: slice %d source at %d gives %d destination, want floor %d", q.ID, a.Source, a.Rate, a.Destination, d)
			}
		} else if s, _ := engine.SourceAmount(a.Destination, a.Rate, q.Pair); s != a.Source {
			t.Errorf("quote %s: slice %d destination at %d costs %d source, want ceiling %d", q.ID, a.Destination, a.Rate, a.Source, s)
		}
		source += a.Source
		destination += a.Destination
	}
	if cmd.Direction == engine.DirectionSource && source != cmd.Amount {
		t.Errorf("quote %s: slices' sources sum to %d, want exactly %d", q.ID, source, cmd.Amount)
	}
	if cmd.Direction == engine.DirectionDestination && destination != cmd.Amount {
		t.Errorf("quote %s: slices' destinations sum to %d, want exactly %d", q.ID, destination, cmd.Amount)
	}
	if q.TotalSource() != source || q.TotalDestination() != destination {
		t.Errorf("quote %s: totals %d/%d, slices sum to %d/%d", q.ID, q.TotalSource(), q.TotalDestination(), source, destination)
	}
}

// checkHoldsWithinBalance checks every pool view: 0 <= held <= balance.
func checkHoldsWithinBalance(t *testing.T, sys *actors.System, pools map[engine.PoolID]*engine.Pool) {
	for id := range pools {
		p, _ := sys.Pool(id)
		if p.Liquidity.Held < 0 || p.Liquidity.Held > p.Liquidity.Balance || p.Liquidity.Balance < 0 {
			t.Errorf("pool %s over-allocated: held %d, balance %d", p.Name, p.Liquidity.Held, p.Liquidity.Balance)
		}
	}
}

// checkReservedWithinDeposited: the quotes created before this check began,
// read one by one, that are open or completed were all reserved or consumed
// at the instant the check began (a quote only leaves those statuses by
// releasing its hold), so their slices never sum to more than a pool's
// deposits. Reading them one at a time is therefore a sound check, not a
// racy one.
func checkReservedWithinDeposited(t *testing.T, sys *actors.System, quotes []*createdQuote, deposited map[engine.PoolID]*atomic.Int64) {
	reserved := make(map[engine.PoolID]engine.Amount)
	for _, cq := range quotes {
		q, _ := sys.Quote(cq.quote.Client, cq.quote.Mode, cq.quote.ID)
		if q.Status.Open() || q.Status == engine.StatusCompleted {
			for _, a := range q.Allocations() {
				reserved[a.Pool] += a.Destination
			}
		}
	}
	for id, r := range reserved {
		if d := engine.Amount(deposited[id].Load()); r > d {
			t.Errorf("pool %s: open and completed quotes hold %d, more than the %d deposited", id, r, d)
		}
	}
}

// checkPoolsAgainstQuotes: once quiet, each pool's accounts are exactly
// what its quotes say: holds of the open ones, balance less and proceeds
// from the completed ones, and the trade counters.
func checkPoolsAgainstQuotes(t *testing.T, sys *actors.System, pools map[engine.PoolID]*engine.Pool,
	deposited map[engine.PoolID]engine.Amount, created []*createdQuote) {
	type totals struct {
		held, paid, proceeds engine.Amount
		accepted, completed  uint64
	}
	want := make(map[engine.PoolID]*totals)
	for id := range pools {
		want[id] = &totals{}
	}
	wantStatus := map[intent]engine.Status{
		intentLeaveOpen: engine.StatusPending, intentCancel: engine.StatusCancelled, intentComplete: engine.StatusCompleted,
		intentAcceptCancel: engine.StatusCancelled, intentAcceptOnly: engine.StatusAwaitingPayment,
	}
	for _, cq := range created {
		q, _ := sys.Quote(cq.quote.Client, cq.quote.Mode, cq.quote.ID)
		if q.Status != wantStatus[cq.intent] {
			t.Errorf("quote %s: %s, want %s", q.ID, q.Status, wantStatus[cq.intent])
		}
		for _, a := range q.Allocations() {
			w := want[a.Pool]
			if q.Accepted != nil {
				w.accepted++
			}
			switch {
			case q.Status.Open():
				w.held += a.Destination
			case q.Status == engine.StatusCompleted:
				w.paid += a.Destination
				w.proceeds += a.Source
				w.completed++
			}
		}
	}
	for id, p := range pools {
		view, _ := sys.Pool(id)
		w := want[id]
		got := totals{held: view.Liquidity.Held, paid: deposited[id] - view.Liquidity.Balance,
			proceeds: view.Proceeds.Balance, accepted: view.Accepted, completed: view.Completed}
		if got != *w {
			t.Errorf("pool %s: got %+v, want %+v", p.Name, got, *w)
		}
	}
}

// bookAvailable reads the pair actor's available liquidity of pool p: a
// quote restricted to p for more than its balance is refused with what it
// could fill.
func bookAvailable(t *testing.T, sys *actors.System, c *engine.Client, p *engine.Pool) engine.Amount {
	t.Helper()
	r := sys.CreateQuote(&actors.CreateQuote{Client: c.ID, Mode: p.Mode, Pair: p.Pair, Direction: engine.DirectionDestination,
		Amount: p.Liquidity.Balance + 1, Rate: p.Rate, Listing: p.ID})
	if r.Err != nil || r.Result != engine.ResultInsufficientLiquidity {
		t.Fatalf("probe of %s: %v %s", p.Name, r.Err, r.Result)
	}
	return r.Allocation.Fillable
}

// TestConcurrentTransitionsOnOneQuote: partners racing to cancel and
// complete the same accepted quote get consistent answers: exactly one of
// cancel and complete takes effect; every other call is a safe repeat (200)
// or a conflict (409) that agrees with the outcome; none fails with an
// operating error, however the calls interleave with the quote turning
// terminal.
func TestConcurrentTransitionsOnOneQuote(t *testing.T) {
	n := newNode(t, testConfig(newClock()))
	sys := n.sys
	ada := newClient(t, sys, "ada")
	waitWallets(t, sys, ada)
	pool := newPool(t, sys, engine.ModeSandbox, pairNGNUSDT, "p", "0.000625", "1000")
	const rounds, racers, callsPerRacer = 24, 8, 4
	for round := range rounds {
		q := mustQuote(t, sys, &actors.CreateQuote{Client: ada.ID, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
			Direction: engine.DirectionDestination, Amount: 1_000_000, Rate: pool.Rate})
		mustTransition(t, sys, q, jsonAccept(t, ada, q))
		type answer struct {
			op     actors.QuoteOperation
			result engine.Result
			status engine.Status
			err    error
		}
		answers := make(chan answer, racers*callsPerRacer)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for r := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := range callsPerRacer {
					op := cancelOp
					if (r+i+round)%2 == 0 {
						op = completeOp
					}
					reply := sys.TransitionQuote(q.Client, q.Mode, q.ID, op)
					a := answer{op: op.Operation, result: reply.Result, err: reply.Err}
					if reply.Quote != nil {
						a.status = reply.Quote.Status
					}
					answers <- a
				}
			}()
		}
		close(start)
		wg.Wait()
		close(answers)
		final, _ := sys.Quote(q.Client, q.Mode, q.ID)
		if final.Status != engine.StatusCancelled && final.Status != engine.StatusCompleted {
			t.Fatalf("round %d: final status %s", round, final.Status)
		}
		winner := actors.OperationCancel
		if final.Status == engine.StatusCompleted {
			winner = actors.OperationComplete
		}
		failed := 0
		for a := range answers {
			switch {
			case a.err != nil:
				failed++
				t.Errorf("round %d: operation %d failed: %v", round, a.op, a.err)
			case a.op == winner && (a.result != engine.ResultOK || a.status != final.Status):
				t.Errorf("round %d: the winning operation %d answered %s with status %s", round, a.op, a.result, a.status)
			case a.op != winner && (a.result != engine.ResultInvalidState || a.status != final.Status):
				t.Errorf("round %d: the losing operation %d answered %s with status %s, want INVALID_STATE and %s",
					round, a.op, a.result, a.status, final.Status)
			}
		}
		if failed > 0 {
			// Each such failure may be a request timeout: stop here to bound
			// the test's time.
			t.Fatalf("round %d: %d of %d calls failed with operating errors", round, failed, racers*callsPerRacer)
		}
	}
	waitConverged(t, n)
	checkSystemLedger(t, sys)
	if p, _ := sys.Pool(pool.ID); p.Liquidity.Held != 0 {
		t.Errorf("pool holds %d after every quote ended", p.Liquidity.Held)
	}
}
