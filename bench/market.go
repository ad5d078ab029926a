package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/wal"
)

// The market every section trades on: one partner with a sandbox key, and
// marketPools NGN/USDT pools at distinct rates (as --demo seeds), each
// deep enough that no run of the harness drains it. A quote sells
// quoteAmount kobo (1,000 NGN, about 0.62 USDT) at a proposed rate of
// 0.0006 USDT per NGN, below every pool's, so it fills from the best pool.

var (
	pairNGNUSDT = engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT}
	// marketRates are the pools' rates (×10¹⁸), best first: 0.000627 … 0.000622.
	marketRates = []engine.Rate{
		engine.RateFromUnits(627_000_000_000_000), engine.RateFromUnits(626_000_000_000_000),
		engine.RateFromUnits(625_000_000_000_000), engine.RateFromUnits(624_000_000_000_000),
		engine.RateFromUnits(623_000_000_000_000), engine.RateFromUnits(622_000_000_000_000),
		engine.RateFromUnits(621_000_000_000_000), engine.RateFromUnits(620_000_000_000_000),
	}
	// proposedRate is every quote's minimum rate: 0.0006.
	proposedRate = engine.RateFromUnits(600_000_000_000_000)
)

const (
	// marketPools is how many pools the market has.
	marketPools = 8
	// poolLiquidity is each pool's deposit: 10,000,000 USDT in micro-USDT,
	// enough for 16 million open quotes across the market.
	poolLiquidity engine.Amount = 10_000_000_000_000
	// quoteAmount is a quote's source amount: 1,000 NGN in kobo.
	quoteAmount engine.Amount = 100_000
	// quoteTTL and paymentWindow are the service defaults.
	quoteTTL      = 300 * time.Second
	paymentWindow = 30 * time.Minute
	retention     = 168 * time.Hour
)

// market is a running actors.System on a real log, seeded through the
// actors exactly as an operator would seed it.
type market struct {
	log    *wal.Log
	sys    *actors.System
	client engine.ClientID
	key    engine.KeyID
	secret string
}

// startMarket opens a log in dir, recovers (an empty log: nothing to
// replay), starts the actors and seeds the partner and pools.
func startMarket(dir string, sync bool) (*market, error) {
	log, err := wal.Open(dir, wal.Options{Sync: sync})
	if err != nil {
		return nil, err
	}
	state, _, err := actors.Recover(log, time.Now())
	if err != nil {
		return nil, errors.Join(err, log.Close())
	}
	sys, err := actors.Start(state, log, actorsConfig())
	if err != nil {
		return nil, errors.Join(err, log.Close())
	}
	m := &market{log: log, sys: sys}
	if err := m.seed(); err != nil {
		m.stop()
		return nil, err
	}
	return m, nil
}

func actorsConfig() actors.Config {
	return actors.Config{QuoteTTL: quoteTTL, PaymentWindow: paymentWindow, Retention: retention}
}

func (m *market) seed() error {
	c := m.sys.Admin(&actors.CreateClient{Name: "bench"})
	if err := c.Failure(); err != nil {
		return fmt.Errorf("bench: create client: %w", err)
	}
	k := m.sys.Admin(&actors.CreateKey{Client: c.Client.ID, Mode: engine.ModeSandbox})
	if err := k.Failure(); err != nil {
		return fmt.Errorf("bench: create key: %w", err)
	}
	m.client, m.key, m.secret = c.Client.ID, k.Key.ID, k.Secret
	for i := range marketPools {
		p := m.sys.Admin(&actors.CreatePool{Mode: engine.ModeSandbox, Name: fmt.Sprintf("Bench Desk %d", i+1),
			Pair: pairNGNUSDT, Rate: marketRates[i]})
		if err := p.Failure(); err != nil {
			return fmt.Errorf("bench: create pool: %w", err)
		}
		if err := m.sys.ChangePool(&actors.PoolCommand{Pool: p.Pool.ID, Deposit: poolLiquidity}).Failure(); err != nil {
			return fmt.Errorf("bench: deposit: %w", err)
		}
	}
	return nil
}

// createQuote is the command every actor-path caller sends.
func (m *market) createQuote() *actors.CreateQuote {
	return &actors.CreateQuote{
		Key: m.key, Client: m.client, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
		Direction: engine.DirectionSource, Amount: quoteAmount, Rate: proposedRate,
		Chain: engine.ChainTron, Channel: engine.ChannelJSON,
	}
}

// stop stops the actors, then closes the log (which syncs).
func (m *market) stop() error {
	m.sys.Stop()
	return m.log.Close()
}

// ---- Generated logs ----------------------------------------------------------

// generator builds a realistic event history with the engine alone — no
// actors, no HTTP — applying each event to its own engine.State as it goes
// (so every event is one the service could have written, and the final
// state is at hand for a snapshot). Quotes are allocated by Book.Allocate,
// and transitions decided by the Quote methods, exactly as the actors do.
//
// The history: the partner, its key, the pools and their deposits, then
// quotes. With a lifecycle mix, of every ten quotes one is accepted and
// completed and one cancelled, and eight stay open (partners mostly let
// quotes lapse); without it every quote stays open. Every create carries an
// Idempotency-Key, as a careful partner's do. Deadlines lie an hour or more
// ahead, so a recovery right after expires nothing.
type generator struct {
	state   *engine.State
	rng     *rand.Rand
	ids     *actors.IDSource // ids and references as the service makes them, from a seeded stream
	at      int64            // engine time of the next event, unix ms
	client  engine.ClientID
	key     engine.KeyID
	wallet  engine.AccountID // the partner's sandbox USDT wallet
	pools   map[engine.PoolID]generatedPool
	slices  []engine.Slice
	events  int
	created int
}

type generatedPool struct {
	name      string
	liquidity engine.AccountID
}

// generatorLeadMillis is how far in the past the history starts; quote
// deadlines are their creation plus generatorTTLMillis, so every quote is
// still open an hour after the run.
const (
	generatorLeadMillis = 60 * 60 * 1000
	generatorTTLMillis  = 3 * 60 * 60 * 1000
)

func newGenerator(seed uint64) *generator {
	return &generator{
		state: engine.NewState(),
		rng:   rand.New(rand.NewPCG(seed, 0x6f6a61)),
		ids:   actors.NewIDSource(rand.NewChaCha8(seedBytes(seed))),
		at:    time.Now().UnixMilli() - generatorLeadMillis,
		pools: make(map[engine.PoolID]generatedPool),
	}
}

// seedBytes spreads seed over a ChaCha8 seed.
func seedBytes(seed uint64) (b [32]byte) {
	binary.LittleEndian.PutUint64(b[:], seed)
	return b
}

// apply applies ev to the generator's state and hands it to emit.
func (g *generator) apply(ev engine.Event, emit func(engine.Event) error) error {
	if err := g.state.Apply(ev); err != nil {
		return fmt.Errorf("bench: generated event: %w", err)
	}
	g.events++
	return emit(ev)
}

// setup emits the partner, its key and the funded pools.
func (g *generator) setup(emit func(engine.Event) error) error {
	g.client, g.key = engine.ClientID(g.ids.UUID()), engine.KeyID(g.ids.UUID())
	created := &engine.ClientCreated{At: g.at, Client: g.client, Name: "bench"}
	for _, m := range engine.Modes {
		for _, c := range engine.DefaultMarkets().CurrencyList() {
			w := engine.WalletAccount{Mode: m, Currency: c, Account: engine.AccountID(g.ids.UUID())}
			if m == engine.ModeSandbox && c == engine.CurrencyUSDT {
				g.wallet = w.Account
			}
			created.Wallets = append(created.Wallets, w)
		}
	}
	if err := g.apply(created, emit); err != nil {
		return err
	}
	if err := g.apply(&engine.KeyCreated{At: g.at, Key: g.key, Client: g.client, Mode: engine.ModeSandbox,
		Hash: actors.HashKey("oja_bench_generated")}, emit); err != nil {
		return err
	}
	for i := range marketPools {
		p := &engine.PoolCreated{At: g.at, Pool: engine.PoolID(g.ids.UUID()), Mode: engine.ModeSandbox,
			Name: fmt.Sprintf("Bench Desk %d", i+1), Pair: pairNGNUSDT, Rate: marketRates[i],
			LiquidityAccount: engine.AccountID(g.ids.UUID()), ProceedsAccount: engine.AccountID(g.ids.UUID())}
		g.pools[p.Pool] = generatedPool{name: p.Name, liquidity: p.LiquidityAccount}
		if err := g.apply(p, emit); err != nil {
			return err
		}
		if err := g.apply(&engine.PoolDeposited{At: g.at, Pool: p.Pool, Amount: poolLiquidity}, emit); err != nil {
			return err
		}
	}
	return nil
}

// quote emits one quote's creation and, with lifecycle, its transitions.
func (g *generator) quote(lifecycle bool, emit func(engine.Event) error) error {
	g.at++
	// Amounts vary a little, as partners' do: 1,000 to 1,099 NGN.
	amount := quoteAmount + engine.Amount(g.rng.IntN(100))*100
	alloc := g.state.Book(engine.ModeSandbox, pairNGNUSDT).Allocate(engine.AllocationRequest{
		Direction: engine.DirectionSource, Amount: amount, MinRate: proposedRate}, g.slices[:0])
	if alloc.Result != engine.ResultOK {
		return fmt.Errorf("bench: generated quote not allocated: %v", alloc.Result)
	}
	g.slices = alloc.Slices
	ev := &engine.QuoteCreated{
		At: g.at, Quote: engine.QuoteID(g.ids.UUID()), Client: g.client, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
		Direction: engine.DirectionSource, Amount: amount, ProposedRate: proposedRate, Chain: engine.ChainTron,
		Reference: g.ids.Reference("OJA-", 10), ExpiresAt: g.at + generatorTTLMillis,
		Allocations:    make([]engine.Allocation, len(alloc.Slices)),
		IdempotencyKey: engine.MakeIdemKey(engine.QuoteID(g.ids.UUID()).String()), Channel: engine.ChannelJSON, Key: g.key,
	}
	a, b, c, d := g.rng.Uint64(), g.rng.Uint64(), g.rng.Uint64(), g.rng.Uint64()
	for i := range 8 {
		ev.RequestHash[i], ev.RequestHash[8+i], ev.RequestHash[16+i], ev.RequestHash[24+i] =
			byte(a>>(8*i)), byte(b>>(8*i)), byte(c>>(8*i)), byte(d>>(8*i))
	}
	for i, s := range alloc.Slices {
		p := g.pools[s.Pool]
		ev.Allocations[i] = engine.Allocation{ID: engine.AllocationID(g.ids.UUID()), Pool: s.Pool,
			PoolAccount: p.liquidity, PoolName: p.name, Rate: s.Rate, Source: s.Source,
			Destination: s.Destination, Reference: g.ids.Reference("ALC-", 12)}
	}
	if err := g.apply(ev, emit); err != nil {
		return err
	}
	g.created++
	if !lifecycle {
		return nil
	}
	q := g.state.Quotes.Get(ev.Quote)
	switch g.created % 10 {
	case 3: // accepted to the partner's wallet, then completed (funds first)
		g.at++
		res, accepted := q.Accept(engine.AcceptQuote{NamesPoolAccount: true, PoolAccount: ev.Allocations[0].PoolAccount,
			Settlement:   engine.Settlement{Kind: engine.SettlementWallet, Account: g.wallet},
			OwnerWallets: g.state.Clients[g.client].Wallets},
			g.at, paymentWindow.Milliseconds())
		if res != engine.ResultOK || accepted == nil {
			return fmt.Errorf("bench: generated accept: %v", res)
		}
		if err := g.apply(accepted, emit); err != nil {
			return err
		}
		g.at++
		// Funded as the treasury funds it (sandbox: the shortfall simulated).
		res, completed, _ := g.state.Treasuries[q.Mode].CompleteFunded(q, nil, g.at)
		if res != engine.ResultOK || completed == nil {
			return fmt.Errorf("bench: generated complete: %v", res)
		}
		return g.apply(completed, emit)
	case 7: // cancelled
		g.at++
		res, cancelled := q.Cancel(g.at)
		if res != engine.ResultOK || cancelled == nil {
			return fmt.Errorf("bench: generated cancel: %v", res)
		}
		return g.apply(cancelled, emit)
	}
	return nil
}

// generateState builds a state of quotes open quotes without a log (the
// memory section's input).
func generateState(seed uint64, quotes int) (*engine.State, error) {
	g := newGenerator(seed)
	none := func(engine.Event) error { return nil }
	if err := g.setup(none); err != nil {
		return nil, err
	}
	for range quotes {
		if err := g.quote(false, none); err != nil {
			return nil, err
		}
	}
	return g.state, nil
}

// logWriter appends encoded events to a log in chunks, without waiting for
// each: the committer's queue bound (wal.QueueRecordsMax) is the only
// back-pressure.
type logWriter struct {
	log      *wal.Log
	chunk    [][]byte
	pending  chan error // one result per Append in flight
	inFlight int
	err      error
}

// logChunkRecords is the records of one Append while generating.
const logChunkRecords = 1024

func newLogWriter(l *wal.Log) *logWriter {
	return &logWriter{log: l, pending: make(chan error, wal.QueueRecordsMax/logChunkRecords+2)}
}

func (w *logWriter) emit(ev engine.Event) error {
	w.chunk = append(w.chunk, engine.AppendEvent(nil, ev))
	if len(w.chunk) == logChunkRecords {
		return w.flush()
	}
	return nil
}

func (w *logWriter) flush() error {
	if len(w.chunk) == 0 {
		return w.err
	}
	// Collect finished results first so pending never fills.
	for w.inFlight >= cap(w.pending)-1 {
		if err := <-w.pending; err != nil && w.err == nil {
			w.err = err
		}
		w.inFlight--
	}
	recs := w.chunk
	w.chunk = make([][]byte, 0, logChunkRecords)
	w.inFlight++
	w.log.Append(recs, func(_ uint64, err error) { w.pending <- err })
	return w.err
}

// wait flushes and waits for every Append.
func (w *logWriter) wait() error {
	if err := w.flush(); err != nil {
		return err
	}
	for ; w.inFlight > 0; w.inFlight-- {
		if err := <-w.pending; err != nil && w.err == nil {
			w.err = err
		}
	}
	return w.err
}

// generateLog writes a history of quotes quotes (with the lifecycle mix)
// to a new log in dir with Sync false, closes it (which syncs), and returns
// the final state and the number of events.
func generateLog(dir string, seed uint64, quotes int, progress func(done int)) (*engine.State, int, error) {
	l, err := wal.Open(dir, wal.Options{Sync: false})
	if err != nil {
		return nil, 0, err
	}
	w := newLogWriter(l)
	g := newGenerator(seed)
	if err := g.setup(w.emit); err != nil {
		return nil, 0, errors.Join(err, w.wait(), l.Close())
	}
	for i := range quotes {
		if err := g.quote(true, w.emit); err != nil {
			return nil, 0, errors.Join(err, w.wait(), l.Close())
		}
		if progress != nil && i%max(quotes/10, 1) == 0 {
			progress(i)
		}
	}
	if err := errors.Join(w.wait(), l.Close()); err != nil {
		return nil, 0, err
	}
	return g.state, g.events, nil
}
