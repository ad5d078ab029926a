package actors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
)

// Log is the durable log the actors write outcome events to. *wal.Log
// implements it; tests may use a fake.
type Log interface {
	// Append makes recs durable and then calls done exactly once, in the
	// order Appends were made. See wal.Log.Append.
	Append(recs [][]byte, done func(firstSeq uint64, err error))
}

// Config holds the service settings the actors need.
type Config struct {
	QuoteTTL      time.Duration // contract §4: default 300 s
	PaymentWindow time.Duration // default 30 min
	Retention     time.Duration // terminal quotes stay readable at least this long
	MaxOpenQuotes int           // per client and mode; 0 = unlimited
	// MaxKeyShare is the share, in parts per million (ShareScale), of a
	// pair's pool liquidity in its mode that one API key's open quotes may
	// reserve (exposure.go); 0 = unlimited.
	MaxKeyShare uint32
	Clock       func() time.Time
	Logger      *slog.Logger
	Random      io.Reader // nil = crypto/rand
	// RateListener, when set, is called by a pair actor each time its
	// consensus rate changes. It runs on the actor's goroutine: it must not
	// block (the rate stream conflates and returns at once).
	RateListener func(key engine.BookKey, ticker *engine.Ticker)
	// Markets is the configured markets (--markets). Start takes the ones
	// in force from the state; a cluster leader records these first
	// (RecordMarkets). Nil: engine.DefaultMarketsConfig.
	Markets *engine.MarketsConfig
}

// Limits of the actor layer.
const (
	// requestTimeout bounds how long a caller waits for an actor's reply;
	// a write waits for its fsync within it.
	requestTimeout = 10 * time.Second
	// mailboxMessagesMax bounds each pair and treasury actor's mailbox; a
	// full mailbox makes senders wait (back-pressure), never drops.
	mailboxMessagesMax = 65536
)

// Errors of the actor layer (operating failures, mapped to 503).
var (
	ErrUnavailable = errors.New("actors: service unavailable")
	ErrFault       = errors.New("actors: internal fault; restart to recover")
)

// System is the running marketplace: the actors and the read registry the
// gateway consults without messaging.
type System struct {
	cfg    Config
	log    Log
	actors *actor.ActorSystem
	root   *actor.RootContext
	// dispatcher runs every mailbox of the system (workerDispatcher).
	dispatcher *workerDispatcher
	repliers   *repliers // where requests' replies go
	ids        *IDSource
	// markets are the markets in force: the state's at Start (RecordMarkets
	// put the configured ones there first). Immutable.
	markets *engine.Markets

	pairs       map[engine.BookKey]*actor.PID                     // immutable after Start
	tickers     map[engine.BookKey]*atomic.Pointer[engine.Ticker] // map immutable after Start; views published by pair actors
	treasuries  map[engine.Mode]*actor.PID                        // immutable after Start
	coordinator *actor.PID
	expiry      *expiryWheel // every open quote's deadline

	mailboxes [kindCount]mailboxGauge
	// quoteCounts[mode][status] counts the quotes in the registry.
	quoteCounts [engine.ModeSandbox + 1][engine.StatusExpired + 1]atomic.Int64

	fault   atomic.Pointer[error] // a panic in an actor: writes refused until restart
	storage atomic.Pointer[error] // the log failed: writes refused until restart
	stopped atomic.Bool

	directory directory         // clients and API keys (auth.go)
	operators operatorDirectory // named operators (operators.go)
	audit     auditTrail        // the audit trail kept (operators.go)
	webhooks  webhookDirectory  // webhook endpoints (webhooks.go)
	quotes    quoteRegistry
	listing   quoteIndex // each client and mode's quotes in creation order (listing.go)
	pools     sync.Map   // engine.PoolID → *poolRef
	accounts  sync.Map   // engine.AccountID → *accountRef
	open      openQuotes // open quotes per API key (limits.go)
	idem      idempotencyIndex
	payIns    payIns // crypto pay-ins: deposit keys, next indexes, by address id (payins.go)
	// receipts are each quote's payments received, published by the
	// treasuries; references finds a quote by its bank reference (funds.go).
	receipts   receiptViews
	references referenceIndex
	activity   activity      // quotes per minute by status, for the console (console.go)
	awaiting   awaitingIndex // the quotes awaiting payment, for the console (console.go)
}

// quoteRef is the registry entry of one quote. view is the latest durable
// state, immutable, published by the quote's owner. pid is the quote's
// actor while it is active (see quoteActor: activated on demand), nil
// otherwise and once terminal. deadline is its slot on the expiry wheel.
type quoteRef struct {
	client engine.ClientID
	mode   engine.Mode
	pid    atomic.Pointer[actor.PID]
	view   atomic.Pointer[engine.Quote]
	mu     sync.Mutex // serialises activation
	// deadline is when the expiry wheel fires the quote (unix ms; 0:
	// disarmed). See expiryWheel.
	deadline atomic.Int64
}

type poolRef struct {
	pid  *actor.PID
	pair *actor.PID
	view atomic.Pointer[engine.Pool]
}

// accountRef is the registry entry of a wallet or pool account; view is
// published by the owning treasury or pool actor.
type accountRef struct {
	view atomic.Pointer[engine.Account]
}

// replyTarget is where an actor sends a reply from outside a Receive.
type replyTarget = *actor.PID

// Start hands the recovered state to a new set of actors and returns the
// running system. The state must not be used by the caller afterwards.
// REQUIRES: every open quote in state is before its deadline (Recover
// expires the others first).
func Start(state *engine.State, log Log, cfg Config) (*System, error) {
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
		markets:    state.Markets,
		pairs:      make(map[engine.BookKey]*actor.PID),
		tickers:    make(map[engine.BookKey]*atomic.Pointer[engine.Ticker]),
		treasuries: make(map[engine.Mode]*actor.PID),
	}
	s.open.max = int64(cfg.MaxOpenQuotes)
	if err := s.payIns.init(state); err != nil {
		return nil, err
	}
	s.quotes.init(len(state.Quotes))
	s.idem.init(state.Idempotency, func(id engine.QuoteID) *engine.Quote {
		if ref, ok := s.quotes.Load(id); ok {
			return ref.view.Load()
		}
		return nil
	}, s.nowMillis)
	s.expiry = newExpiryWheel(s.nowMillis, func(ref *quoteRef) {
		if pid := s.activate(ref); pid != nil {
			s.root.Send(pid, &expiryDue{})
		}
	})
	logger := cfg.Logger
	// protoactor logs every dead letter and lifecycle step at Info; only its
	// warnings and errors are worth an operator's attention.
	quiet := slog.New(minLevelHandler{Handler: logger.Handler(), min: slog.LevelWarn})
	s.actors = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return quiet.With("component", "protoactor")
	}))
	s.root = s.actors.Root
	s.dispatcher = newWorkerDispatcher(mailboxThroughput)
	s.repliers = newRepliers(s.actors.ProcessRegistry)

	s.directory.init(state)
	s.operators.init(state.Operators)
	s.audit.init(state.Audit)
	s.webhooks.init(state)
	for _, m := range engine.Modes {
		t := state.Treasuries[m]
		for id, a := range t.Wallets {
			ref := &accountRef{}
			ref.view.Store(cloneAccount(a))
			s.accounts.Store(id, ref)
		}
		for q, list := range t.ReceiptsByQuote() {
			s.receipts.publish(q, list)
		}
		s.treasuries[m] = s.spawn(&treasuryActor{sys: s, treasury: t, committed: make(engine.Committed),
			receiving: make(map[engine.ReceiptKey][]*actor.PID)}, kindTreasury)
	}
	// The recovered books already rank every pool with its available
	// liquidity; the pair actors only need each pool's name and account.
	infos := make(map[engine.BookKey]map[engine.PoolID]poolInfo, len(state.Books))
	for key := range state.Books {
		infos[key] = make(map[engine.PoolID]poolInfo)
	}
	for _, p := range state.Pools {
		infos[engine.BookKey{Mode: p.Mode, Pair: p.Pair}][p.ID] = poolInfoOf(p)
	}
	// One pass over the quotes (a million of them cost a cache miss each):
	// each key's reservations, the registry, the counters and the expiry
	// wheel, which fires nothing before Start ends (expiry.start).
	exposures := make(map[engine.BookKey]exposure, len(state.Books))
	for key := range state.Books {
		exposures[key] = newExposure(cfg.MaxKeyShare)
	}
	now := s.nowMillis()
	retention := cfg.Retention.Milliseconds()
	refs := make([]quoteRef, 0, len(state.Quotes))
	for id, q := range state.Quotes {
		open := q.Status.Open()
		if open {
			x := exposures[engine.BookKey{Mode: q.Mode, Pair: q.Pair}]
			x.add(q.Key, q.TotalDestination)
			exposures[engine.BookKey{Mode: q.Mode, Pair: q.Pair}] = x
		} else if retention > 0 && q.EndedBefore(now-retention) {
			continue
		}
		refs = append(refs, quoteRef{client: q.Client, mode: q.Mode})
		ref := &refs[len(refs)-1]
		ref.view.Store(q)
		s.quotes.Store(id, ref)
		s.countQuote(q.Mode, 0, q.Status)
		s.awaiting.moved(ref, 0, q.Status)
		if open {
			s.open.counter(q.Key).Add(1)
			s.armExpiry(ref, q.ExpiresAt)
		}
	}
	for key, book := range state.Books {
		ticker := state.Tickers[key]
		view := new(atomic.Pointer[engine.Ticker])
		view.Store(ticker.Clone())
		s.tickers[key] = view
		pa := &pairActor{sys: s, key: key, book: book, ticker: ticker, info: infos[key], exposure: exposures[key]}
		pa.spec, pa.inForce = s.markets.Pair(key.Pair)
		s.pairs[key] = s.spawn(pa, kindPair)
	}
	for _, p := range state.Pools {
		s.startPool(p)
	}
	s.coordinator = s.spawn(&coordinatorActor{sys: s}, kindCoordinator)
	s.expiry.start()
	return s, nil
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

func (g *mailboxGauge) MailboxStarted()     {}
func (g *mailboxGauge) MessagePosted(any)   { g.queued.Add(1) }
func (g *mailboxGauge) MessageReceived(any) { g.queued.Add(-1) }
func (g *mailboxGauge) MailboxEmpty()       {}

// MailboxDepths returns the messages waiting in the mailboxes of each kind
// of actor (summed over the actors of that kind), indexed like ActorKinds.
func (s *System) MailboxDepths() [kindCount]int64 {
	var out [kindCount]int64
	for i := range out {
		out[i] = s.mailboxes[i].queued.Load()
	}
	return out
}

func (s *System) spawn(a actor.Actor, kind int) *actor.PID {
	gauge := &s.mailboxes[kind]
	mailbox := actor.Bounded(mailboxMessagesMax, gauge)
	if kind == kindQuote {
		mailbox = actor.Unbounded(gauge) // a quote gets a handful of messages
	}
	return s.root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a },
		actor.WithMailbox(mailbox), actor.WithDispatcher(s.dispatcher)))
}

func (s *System) startPool(p *engine.Pool) {
	ref := &poolRef{pair: s.pairs[engine.BookKey{Mode: p.Mode, Pair: p.Pair}]}
	ref.view.Store(p.Clone())
	liquidity, proceeds := &accountRef{}, &accountRef{}
	liquidity.view.Store(cloneAccount(&p.Liquidity))
	proceeds.view.Store(cloneAccount(&p.Proceeds))
	s.accounts.Store(p.Liquidity.ID, liquidity)
	s.accounts.Store(p.Proceeds.ID, proceeds)
	ref.pid = s.spawn(&poolActor{sys: s, pool: p, ref: ref, liquidity: liquidity, proceeds: proceeds}, kindPool)
	s.pools.Store(p.ID, ref)
}

// Stop stops every actor. Pending appends still complete (the log is
// closed by the caller afterwards).
func (s *System) Stop() {
	if s.stopped.Swap(true) {
		return
	}
	s.expiry.stop()
	var futures []*actor.Future
	s.quotes.Range(func(_ engine.QuoteID, ref *quoteRef) bool {
		if pid := ref.pid.Load(); pid != nil {
			futures = append(futures, s.root.StopFuture(pid))
		}
		return true
	})
	s.pools.Range(func(_, v any) bool {
		futures = append(futures, s.root.StopFuture(v.(*poolRef).pid))
		return true
	})
	for _, pid := range s.pairs {
		futures = append(futures, s.root.StopFuture(pid))
	}
	for _, pid := range s.treasuries {
		futures = append(futures, s.root.StopFuture(pid))
	}
	futures = append(futures, s.root.StopFuture(s.coordinator))
	for _, f := range futures {
		_ = f.Wait() // a stop that times out leaves nothing to undo
	}
	s.repliers.stop() // requests the stopped actors left unanswered end now (ErrUnavailable)
	s.actors.Shutdown()
	s.dispatcher.stop()
}

// Fault returns the fault that made the system refuse writes, if any.
func (s *System) Fault() error {
	if p := s.fault.Load(); p != nil {
		return *p
	}
	return nil
}

// Ready reports whether the system takes writes (for /readyz).
func (s *System) Ready() error { return s.writable() }

func (s *System) setFault(err error) {
	s.fault.CompareAndSwap(nil, &err)
	s.cfg.Logger.Error("actor fault: writes refused until restart", "err", err)
}

func (s *System) nowMillis() int64 { return s.cfg.Clock().UnixMilli() }

func (s *System) quoteRef(id engine.QuoteID) (*quoteRef, bool) {
	return s.quotes.Load(id)
}

// Request is a request message whose reply has type R. Each request type
// states its reply with a method (its only use is its type), so that ask
// and the methods taking a Request get, checked when compiling, the reply
// the actor answers that request with.
type Request[R any] interface{ answeredWith(R) }

// ask sends msg to pid and waits for its reply. A reply that is an error
// (what guard sends when handling msg panicked) is returned as the error,
// so a caller only ever sees the reply type msg declares.
func ask[R any](s *System, pid *actor.PID, msg Request[R]) (R, error) {
	var none R
	if s.stopped.Load() {
		return none, ErrUnavailable
	}
	res, err := s.repliers.request(s.root, pid, msg, requestTimeout)
	if err != nil {
		return none, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	switch res := res.(type) {
	case error:
		return none, res // a guarded actor's fault (guard.go)
	case R:
		return res, nil
	default:
		return none, fmt.Errorf("%w: %T answered with %T", ErrFault, msg, res)
	}
}

// eventBytesTypical sizes an event's encoding buffer: a QuoteCreated with
// three allocations takes ~400 bytes.
const eventBytesTypical = 512

// appendThen is the one way a durable write finishes: it encodes evs and
// appends them to the log, and once they are durable (err nil) or failed
// it sends the message then(err) returns to the actor it names. The log's
// callback does nothing else — it only enqueues — so every consequence of
// a write (registry entries, spawns, holds, budgets, replies) runs in an
// actor, in that actor's order.
func (s *System) appendThen(then func(err error) (to *actor.PID, msg any), evs ...engine.Event) {
	recs := make([][]byte, len(evs))
	for i, ev := range evs {
		recs[i] = engine.AppendEvent(make([]byte, 0, eventBytesTypical), ev)
	}
	s.log.Append(recs, func(_ uint64, logErr error) {
		var err error
		if logErr != nil {
			if s.storage.CompareAndSwap(nil, &logErr) {
				s.cfg.Logger.Error("log append failed: writes refused until restart", "err", logErr)
			}
			err = fmt.Errorf("%w: %v", ErrUnavailable, logErr)
		}
		to, msg := then(err)
		s.root.Send(to, msg)
	})
}

// writable says whether writes may be attempted.
func (s *System) writable() error {
	if err := s.Fault(); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if p := s.storage.Load(); p != nil {
		return fmt.Errorf("%w: storage failed: %v", ErrUnavailable, *p)
	}
	if s.stopped.Load() {
		return ErrUnavailable
	}
	return nil
}

// Markets are the markets in force: currencies, pairs and their bounds,
// collection accounts and deposit keys.
func (s *System) Markets() *engine.Markets { return s.markets }

// ---- Authentication -------------------------------------------------------

// Authenticate resolves an API key. Unknown, revoked and expired (rolled)
// keys fail alike.
func (s *System) Authenticate(secret string) (Principal, bool) {
	return s.directory.authenticate(secret, s.nowMillis())
}

// Client returns a client by id.
func (s *System) Client(id engine.ClientID) (*engine.Client, bool) { return s.directory.client(id) }

// ---- Quotes ----------------------------------------------------------------

// CreateQuote allocates and reserves a quote, durably. An Idempotency-Key
// seen before with the same request returns the original quote (Replayed);
// with a different request, IDEMPOTENCY_KEY_REUSED.
func (s *System) CreateQuote(cmd *CreateQuote) *QuoteReply {
	if err := s.writable(); err != nil {
		return &QuoteReply{Err: err}
	}
	pid, ok := s.pairs[engine.BookKey{Mode: cmd.Mode, Pair: cmd.Pair}]
	if !ok {
		return &QuoteReply{Result: engine.ResultInvalidCurrencyPair}
	}
	if cmd.IdempotencyKey != "" {
		scope := engine.IdempotencyScope{Client: cmd.Client, Mode: cmd.Mode, Key: cmd.IdempotencyKey}
		reply, claimed := s.idem.claim(scope, cmd.RequestHash)
		if !claimed {
			return reply
		}
		defer s.idem.release(scope)
	}
	reply, err := ask[*QuoteReply](s, pid, cmd)
	if err != nil {
		return &QuoteReply{Err: err}
	}
	return reply
}

// Quote returns the caller's quote. Another client's or mode's quote is
// not found, exactly like a missing one.
func (s *System) Quote(client engine.ClientID, mode engine.Mode, id engine.QuoteID) (*engine.Quote, bool) {
	ref, ok := s.quoteRef(id)
	if !ok || ref.client != client || ref.mode != mode {
		return nil, false
	}
	return ref.view.Load(), true
}

// AnyQuote returns a quote by id whatever its client and mode (an
// operator's look-up), while it is held: open, or terminal within the
// retention.
func (s *System) AnyQuote(id engine.QuoteID) (*engine.Quote, bool) {
	ref, ok := s.quoteRef(id)
	if !ok {
		return nil, false
	}
	return ref.view.Load(), true
}

// OperatorCancel cancels any client's quote, in either mode, for an
// operator: the log records the cancel as the operator's.
func (s *System) OperatorCancel(id engine.QuoteID) *QuoteReply {
	ref, ok := s.quoteRef(id)
	if !ok {
		return &QuoteReply{Result: engine.ResultQuoteNotFound}
	}
	return s.TransitionQuote(ref.client, ref.mode, id, &TransitionQuote{Operation: OperationCancel, ByOperator: true})
}

// ClientKeys returns a client's API keys (never their secrets: only hashes
// are held), revoked ones included, oldest first.
func (s *System) ClientKeys(id engine.ClientID) []engine.Key { return s.directory.clientKeys(id) }

// TransitionQuote accepts, cancels or completes the caller's quote.
func (s *System) TransitionQuote(client engine.ClientID, mode engine.Mode, id engine.QuoteID, cmd *TransitionQuote) *QuoteReply {
	ref, ok := s.quoteRef(id)
	if !ok || ref.client != client || ref.mode != mode {
		return &QuoteReply{Result: engine.ResultQuoteNotFound}
	}
	if err := s.writable(); err != nil {
		return &QuoteReply{Err: err}
	}
	if pid := s.activate(ref); pid != nil {
		reply, err := ask[*QuoteReply](s, pid, cmd)
		if err == nil {
			return reply
		}
		if !errors.Is(err, actor.ErrDeadLetter) || ref.pid.Load() != nil {
			return &QuoteReply{Err: err}
		}
		// The quote turned terminal and its actor stopped while we asked:
		// decide on the final view below.
	}
	return decideTerminal(ref.view.Load(), cmd, s.nowMillis())
}

// decideTerminal answers a transition of a terminal quote. Terminal quotes
// have no actor: no transition from them produces an event, so the pure
// engine decision on a copy is the whole answer.
func decideTerminal(view *engine.Quote, cmd *TransitionQuote, now int64) *QuoteReply {
	res, ev, allowed := decide(view, cmd, now, 0)
	if ev != nil {
		return &QuoteReply{Err: fmt.Errorf("%w: terminal quote %s produced %s", ErrFault, view.ID, ev.Type())}
	}
	reply := &QuoteReply{Result: res, Quote: view}
	if res == engine.ResultInvalidState {
		reply.AllowedFrom = allowed
	}
	return reply
}

// ---- Accounts and pools ----------------------------------------------------

// Account returns an account's latest view.
func (s *System) Account(id engine.AccountID) (*engine.Account, bool) {
	v, ok := s.accounts.Load(id)
	if !ok {
		return nil, false
	}
	return v.(*accountRef).view.Load(), true
}

// ClientAccounts returns the client's accounts in mode m: its wallets, then
// the accounts of the pools it owns (contract §10).
func (s *System) ClientAccounts(client engine.ClientID, m engine.Mode) []*engine.Account {
	c, ok := s.Client(client)
	if !ok {
		return nil
	}
	var out []*engine.Account
	for _, w := range c.Wallets {
		if w.Mode != m {
			continue
		}
		if a, ok := s.Account(w.Account); ok {
			out = append(out, a)
		}
	}
	for _, p := range s.Pools(m) {
		if p.Owner == client {
			out = append(out, cloneAccount(&p.Liquidity), cloneAccount(&p.Proceeds))
		}
	}
	return out
}

// AccountOwnedBy reports whether the account belongs to the client in mode m.
func (s *System) AccountOwnedBy(a *engine.Account, client engine.ClientID, m engine.Mode) bool {
	if a.Mode != m {
		return false
	}
	switch a.Kind {
	case engine.AccountWallet:
		return engine.ClientID(a.Owner) == client
	case engine.AccountLiquidity, engine.AccountProceeds:
		p, ok := s.Pool(engine.PoolID(a.Owner))
		return ok && p.Owner == client && !client.IsZero()
	}
	return false
}

// Pool returns a pool's latest view.
func (s *System) Pool(id engine.PoolID) (*engine.Pool, bool) {
	v, ok := s.pools.Load(id)
	if !ok {
		return nil, false
	}
	return v.(*poolRef).view.Load(), true
}

// Pools returns the pools of mode m (ModeNone: all), in no particular order.
func (s *System) Pools(m engine.Mode) []*engine.Pool {
	var out []*engine.Pool
	s.pools.Range(func(_, v any) bool {
		p := v.(*poolRef).view.Load()
		if m == engine.ModeNone || p.Mode == m {
			out = append(out, p)
		}
		return true
	})
	return out
}

// ChangePool sets a pool's rate or status, or moves liquidity in or out.
func (s *System) ChangePool(cmd *PoolCommand) *PoolReply {
	v, ok := s.pools.Load(cmd.Pool)
	if !ok {
		return &PoolReply{Result: engine.ResultPoolNotFound}
	}
	if err := s.writable(); err != nil {
		return &PoolReply{Err: err}
	}
	// A deposit is decided by the pool actor, which owns the balance it must
	// keep within engine.DepositFits; the rest by the pair actor, which owns
	// the book and the reservation budget.
	target := v.(*poolRef).pair
	if cmd.Deposit > 0 {
		target = v.(*poolRef).pid
	}
	reply, err := ask[*PoolReply](s, target, cmd)
	if err != nil {
		return &PoolReply{Err: err}
	}
	return reply
}

// DepositAccount credits a wallet from clearing (operator).
func (s *System) DepositAccount(cmd *DepositAccount) *AccountReply {
	a, ok := s.Account(cmd.Account)
	if !ok || a.Kind != engine.AccountWallet {
		return &AccountReply{Result: engine.ResultAccountNotFound}
	}
	if err := s.writable(); err != nil {
		return &AccountReply{Err: err}
	}
	reply, err := ask[*AccountReply](s, s.treasuries[a.Mode], cmd)
	if err != nil {
		return &AccountReply{Err: err}
	}
	return reply
}

// LedgerCheck checks contract §3 for mode m over the live sub-ledgers. Each
// sub-ledger is read consistently from its owner; since each sums to zero
// on its own, their total is exact whatever moves between the reads.
func (s *System) LedgerCheck(m engine.Mode) (engine.LedgerReport, error) {
	t, err := ask[*engine.Treasury](s, s.treasuries[m], &treasurySnapshot{})
	if err != nil {
		return engine.LedgerReport{}, err
	}
	var acc engine.LedgerAccumulator
	acc.AddTreasury(t)
	for _, p := range s.Pools(m) {
		acc.AddPool(p)
	}
	return acc.Report(), nil
}

// ClearingBalance is the balance of the clearing account of (m, c).
func (s *System) ClearingBalance(m engine.Mode, c engine.Currency) (engine.Amount, error) {
	t, err := ask[*engine.Treasury](s, s.treasuries[m], &treasurySnapshot{})
	if err != nil {
		return 0, err
	}
	sum := t.Clearing[c]
	for _, p := range s.Pools(m) {
		sum += p.ClearingShard(c)
	}
	return sum, nil
}

// Admin calls the coordinator.
func (s *System) Admin(cmd Request[*AdminReply]) *AdminReply {
	if err := s.writable(); err != nil {
		return &AdminReply{Err: err}
	}
	reply, err := ask(s, s.coordinator, cmd)
	if err != nil {
		return &AdminReply{Err: err}
	}
	return reply
}

func cloneAccount(a *engine.Account) *engine.Account { c := *a; return &c }

// Now is the engine time the actors use.
func (s *System) Now() time.Time { return s.cfg.Clock() }

// Maintain forgets what retention allows: Idempotency-Keys older than 24 h,
// terminal quotes, wallet postings and receipts older than the retention
// (they stay in the log).
// The server calls it periodically.
func (s *System) Maintain() {
	now := s.nowMillis()
	s.idem.prune(now)
	if err := s.RecordKeyUses(); err != nil {
		s.cfg.Logger.Warn("keys' last use not recorded; retried at the next maintenance", "err", err)
	}
	retention := s.cfg.Retention.Milliseconds()
	if retention <= 0 {
		return
	}
	forgotten := make(map[*quoteRef]bool)
	var references []string
	s.quotes.DeleteIf(func(_ engine.QuoteID, ref *quoteRef) bool {
		q := ref.view.Load()
		if ref.pid.Load() == nil && q.EndedBefore(now-retention) {
			s.countQuote(q.Mode, q.Status, 0)
			forgotten[ref] = true
			references = append(references, q.Reference)
			return true
		}
		return false
	})
	if len(forgotten) > 0 {
		s.listing.drop(func(ref *quoteRef) bool { return forgotten[ref] })
		s.references.drop(references)
	}
	for _, pid := range s.treasuries {
		s.root.Send(pid, &forgetFunds{cutoff: now - retention})
	}
}

// Ticker returns the latest rates of (mode, pair): consensus and best maker
// rate with their 24 h histories. nil for an unsupported pair.
func (s *System) Ticker(m engine.Mode, p engine.Pair) *engine.Ticker {
	v, ok := s.tickers[engine.BookKey{Mode: m, Pair: p}]
	if !ok {
		return nil
	}
	return v.Load()
}

// Clients returns every client.
func (s *System) Clients() []*engine.Client { return s.directory.allClients() }

// QuoteCounts counts the quotes held in memory by mode and status.
// Counts are kept as quotes are registered, move and are forgotten, so a
// scrape costs nothing however many quotes there are.
func (s *System) QuoteCounts() map[engine.Mode]map[engine.Status]int {
	out := map[engine.Mode]map[engine.Status]int{}
	for _, m := range engine.Modes {
		out[m] = map[engine.Status]int{}
		for _, st := range engine.Statuses {
			out[m][st] = int(s.quoteCounts[m][st].Load())
		}
	}
	return out
}

// countQuote moves one quote of mode m from status from to status to in
// the counts (0 = not counted).
func (s *System) countQuote(m engine.Mode, from, to engine.Status) {
	if from == to {
		return
	}
	if from != 0 {
		s.quoteCounts[m][from].Add(-1)
	}
	if to != 0 {
		s.quoteCounts[m][to].Add(1)
	}
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
