package actors

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/internal/prefault"
)

// Start hands the recovered state to a new set of actors and returns the
// running system. The state must not be used by the caller afterwards.
// REQUIRES: every open quote in state is before its deadline (Recover
// expires the others first).
//
// It builds the system in steps (builder): the empty system and its actor
// runtime, the read models and directories, the treasuries, one pass over
// the quotes, the pair actors, the pools, the coordinator; the expiry
// wheel fires nothing before the last step.
func Start(state *engine.State, log Log, cfg Config) (*System, error) {
	s, err := newSystem(state.Markets, log, cfg)
	if err != nil {
		return nil, err
	}
	b := &builder{s: s, state: state}
	if err := b.directories(); err != nil {
		s.actors.Shutdown()
		s.dispatcher.stop()
		return nil, err
	}
	b.treasuries()
	exposures := b.quotes()
	b.pairs(exposures)
	for _, p := range state.Pools {
		s.startPool(p)
	}
	s.coordinator = spawn(s, &coordinatorActor{sys: s, rolling: map[engine.KeyID]bool{}, naming: map[string]bool{}}, kindCoordinator)
	s.expiry.start()
	return s, nil
}

// newSystem is a system with no actor yet: its settings, its actor runtime
// (dispatcher, repliers), and the expiry wheel.
func newSystem(markets *engine.Markets, log Log, cfg Config) (*System, error) {
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.QuoteTTL <= 0 || cfg.PaymentWindow <= 0 {
		return nil, fmt.Errorf("actors: quote TTL and payment window must be positive")
	}
	s := &System{
		cfg:        cfg,
		log:        log,
		ids:        NewIDSource(cfg.Random),
		markets:    markets,
		pairs:      make(map[engine.BookKey]address[*pairActor]),
		treasuries: make(map[engine.Mode]address[*treasuryActor]),
	}
	s.tickers = make(map[engine.BookKey]*atomic.Pointer[engine.Ticker])
	s.open.max = int64(cfg.MaxOpenQuotes)
	s.expiry = newExpiryWheel(s.nowMillis, func(ref *quoteRef) {
		if to, ok := s.activate(ref); ok {
			send(s, to, &expiryDue{})
		}
	})
	// protoactor logs every dead letter and lifecycle step at Info; only its
	// warnings and errors are worth an operator's attention.
	quiet := slog.New(minLevelHandler{Handler: cfg.Logger.Handler(), min: slog.LevelWarn})
	s.actors = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return quiet.With("component", "protoactor")
	}))
	s.root = s.actors.Root
	s.dispatcher = newWorkerDispatcher(mailboxThroughput)
	s.repliers = newRepliers(s.actors.ProcessRegistry)
	return s, nil
}

// builder fills a new system from a recovered state, step by step.
type builder struct {
	s     *System
	state *engine.State
}

// directories loads what the state holds besides quotes, books and money:
// pay-in keys, clients and keys, operators, the audit trail, webhooks, and
// the Idempotency-Key index.
func (b *builder) directories() error {
	s, state := b.s, b.state
	if err := s.payIns.init(state); err != nil {
		return err
	}
	s.quotes.init(state.Quotes.Len())
	s.idem.init(state.Idempotency, func(id engine.QuoteID) *engine.Quote {
		if ref, ok := s.quotes.Load(id); ok {
			return ref.view.Load()
		}
		return nil
	}, s.nowMillis)
	s.directory.init(state)
	s.operators.init(state.Operators)
	s.audit.init(state.Audit)
	s.chains.init(state.Chains)
	s.webhooks.init(state)
	return nil
}

// treasuries publishes every wallet and receipt and starts each mode's
// treasury actor.
func (b *builder) treasuries() {
	s := b.s
	for _, m := range engine.Modes {
		t := b.state.Treasuries[m]
		for id, a := range t.Wallets {
			ref := &accountRef{}
			ref.view.Store(cloneAccount(a))
			s.accounts.Store(id, ref)
		}
		for q, list := range t.ReceiptsByQuote() {
			s.receipts.publish(q, list)
		}
		ta := &treasuryActor{sys: s, treasury: t, committed: make(engine.Committed), inFlight: make(map[engine.Identity]*flight)}
		ta.publishUnapplied()
		s.treasuries[m] = spawn(s, ta, kindTreasury)
	}
	s.payments.p = b.state.Payments
}

// quotes makes one pass over the quotes (a million of them cost a cache
// miss each): the registry, the counters, each key's open quotes, the
// expiry wheel, and each book's per-key reservations, which it returns.
// Ended quotes past the retention are left out.
func (b *builder) quotes() map[engine.BookKey]*exposure {
	s, state := b.s, b.state
	exposures := make(map[engine.BookKey]*exposure, len(state.Books))
	for key := range state.Books {
		x := newExposure(s.cfg.MaxKeyShare)
		exposures[key] = &x
	}
	now := s.nowMillis()
	retention := s.cfg.Retention.Milliseconds()
	// NB: refs never grows past its capacity, so a ref's address is
	// stable; a goroutine of its own sorts them by registry shard, a batch
	// at a time, beside this pass, then fills the shards.
	refs := make([]quoteRef, 0, state.Quotes.Len())
	prefault.Slice(refs) // filled whole by the pass: mapped in at once
	registry := startRegistering(&s.quotes)
	sent := 0
	for q := range state.QuotesInOrder() {
		open := q.Status.Open()
		if open {
			exposures[engine.BookKey{Mode: q.Mode, Pair: q.Pair}].add(q.Key, q.TotalDestination())
		} else if retention > 0 && q.EndedBefore(now-retention) {
			continue
		}
		refs = append(refs, quoteRef{})
		ref := &refs[len(refs)-1]
		ref.view.Store(q)
		s.moved(ref, q.Mode, 0, q.Status)
		if open {
			s.open.counter(q.Key).Add(1)
			s.armExpiry(ref, q.ExpiresAt)
		}
		if len(refs)-sent == registerBatchLen {
			registry.in <- refs[sent:]
			sent = len(refs)
		}
	}
	registry.in <- refs[sent:]
	close(registry.in)
	<-registry.done
	return exposures
}

// registerBatchLen is how many refs the start's pass over the quotes hands
// the registering goroutine at once.
const registerBatchLen = 1024

// registering is the input of the goroutine that registers the start's
// quote refs; done closes once it has registered every batch sent before
// the input was closed.
type registering struct {
	in   chan []quoteRef
	done chan struct{}
}

func startRegistering(r *quoteRegistry) registering {
	g := registering{in: make(chan []quoteRef, 16), done: make(chan struct{})}
	go func() {
		defer close(g.done)
		// As Store would one after the other: sorted by shard as they
		// come, then a shard at a time (hashindex.Writes).
		writes := r.index.Writes()
		for batch := range g.in {
			for i := range batch {
				writes.Put(&batch[i])
			}
		}
		writes.Apply(r.shardLock)
	}()
	return g
}

// pairs starts a pair actor per book, with its ticker and its keys'
// reservations. The recovered books already rank every pool with its
// available liquidity; the pair actors only need each pool's name and
// account.
func (b *builder) pairs(exposures map[engine.BookKey]*exposure) {
	s, state := b.s, b.state
	infos := make(map[engine.BookKey]map[engine.PoolID]poolInfo, len(state.Books))
	for key := range state.Books {
		infos[key] = make(map[engine.PoolID]poolInfo)
	}
	for _, p := range state.Pools {
		infos[engine.BookKey{Mode: p.Mode, Pair: p.Pair}][p.ID] = poolInfoOf(p)
	}
	for key, book := range state.Books {
		ticker := state.Tickers[key]
		view := new(atomic.Pointer[engine.Ticker])
		view.Store(ticker.Clone())
		s.tickers[key] = view
		pa := &pairActor{sys: s, key: key, book: book, ticker: ticker, info: infos[key], exposure: *exposures[key]}
		pa.spec, pa.inForce = s.markets.Pair(key.Pair)
		s.pairs[key] = spawn(s, pa, kindPair)
	}
}

// Actor kinds, for the mailbox depth gauges.
const (
	kindPair = iota
	kindPool
	kindQuote
	kindTreasury
	kindCoordinator
	kindCount
)

// ActorKinds names the kinds MailboxDepths reports, in index order.
var ActorKinds = [kindCount]string{"pair", "pool", "quote", "treasury", "coordinator"}

// mailboxGauge counts the messages queued in the mailboxes of one kind of
// actor: posted minus received (a protoactor mailbox middleware).
type mailboxGauge struct{ queued atomic.Int64 }

func (g *mailboxGauge) MailboxStarted() {}

func (g *mailboxGauge) MessagePosted(any) { g.queued.Add(1) }

func (g *mailboxGauge) MessageReceived(any) { g.queued.Add(-1) }

func (g *mailboxGauge) MailboxEmpty() {}

// MailboxDepths returns the messages waiting in the mailboxes of each kind
// of actor (summed over the actors of that kind), indexed like ActorKinds.
func (s *System) MailboxDepths() [kindCount]int64 {
	var out [kindCount]int64
	for i := range out {
		out[i] = s.mailboxes[i].queued.Load()
	}
	return out
}

func (s *System) startPool(p *engine.Pool) {
	ref := &poolRef{pair: s.pairs[engine.BookKey{Mode: p.Mode, Pair: p.Pair}]}
	ref.view.Store(p.Clone())
	liquidity, proceeds := &accountRef{}, &accountRef{}
	liquidity.view.Store(cloneAccount(&p.Liquidity))
	proceeds.view.Store(cloneAccount(&p.Proceeds))
	s.accounts.Store(p.Liquidity.ID, liquidity)
	s.accounts.Store(p.Proceeds.ID, proceeds)
	ref.pool = spawn(s, &poolActor{sys: s, pool: p, ref: ref, liquidity: liquidity, proceeds: proceeds}, kindPool)
	s.pools.Store(p.ID, ref)
}

// minLevelHandler drops records below min.
type minLevelHandler struct {
	slog.Handler
	min slog.Level
}

func (h minLevelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevelHandler{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h minLevelHandler) WithGroup(name string) slog.Handler {
	return minLevelHandler{Handler: h.Handler.WithGroup(name), min: h.min}
}
