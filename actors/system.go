package actors

import (
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
	QuoteTTL      time.Duration // spec §4: default 300 s
	PaymentWindow time.Duration // default 30 min
	Retention     time.Duration // terminal quotes stay readable at least this long
	MaxOpenQuotes int           // per API key (limits.go); 0 = unlimited
	// MaxKeyShare is the share, in parts per million (ShareScale), of a
	// pair's pool liquidity in its mode that one API key's open quotes may
	// reserve (limits.go); 0 = unlimited.
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

// System is the running marketplace: the actors, the requests that reach
// them (typed, requests.go), the one durable-write path (appendThen), and
// the read models they publish (reads.go). Start builds it (build.go).
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

	pairs       map[engine.BookKey]address[*pairActor]  // immutable after Start
	treasuries  map[engine.Mode]address[*treasuryActor] // immutable after Start
	coordinator address[*coordinatorActor]
	expiry      *expiryWheel // every open quote's deadline
	// activating serialises the activation of quote actors, a lock for
	// each value of a quote id's last byte: activation is rare (a quote's
	// first command or timer after a start) and brief, and a lock in every
	// quote's ref was 8 bytes a quote.
	activating [256]sync.Mutex

	mailboxes [kindCount]mailboxGauge

	fault   atomic.Pointer[error] // a panic in an actor: writes refused until restart
	storage atomic.Pointer[error] // the log failed: writes refused until restart
	stopped atomic.Bool

	// payments is the record of payments both treasury actors decide
	// against (funds.go).
	payments payments

	open   openQuotes // open quotes per API key (limits.go)
	idem   idempotencyIndex
	payIns payIns     // crypto pay-ins: deposit keys, next indexes, by address id (payins.go)
	chains chainsView // watched chains' cursors (chains.go)

	readModels // what the actors publish for readers (reads.go)
}

// replyTarget is where an actor sends a reply from outside a Receive.
type replyTarget = *actor.PID

// Stop stops every actor. Pending appends still complete (the log is
// closed by the caller afterwards).
func (s *System) Stop() {
	if s.stopped.Swap(true) {
		return
	}
	s.expiry.stop()
	var futures []*actor.Future
	s.quotes.RangeRefs(func(ref *quoteRef) bool {
		if pid := ref.pid.Load(); pid != nil {
			futures = append(futures, s.root.StopFuture(pid))
		}
		return true
	})
	s.pools.Range(func(_, v any) bool {
		futures = append(futures, s.root.StopFuture(v.(*poolRef).pool.pid))
		return true
	})
	for _, to := range s.pairs {
		futures = append(futures, s.root.StopFuture(to.pid))
	}
	for _, to := range s.treasuries {
		futures = append(futures, s.root.StopFuture(to.pid))
	}
	futures = append(futures, s.root.StopFuture(s.coordinator.pid))
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

// Request is a request message whose reply has type R. Each request type
// states its reply with a method (its only use is its type), so that ask
// and the methods taking a Request get, checked when compiling, the reply
// the actor answers that request with.
type Request[R any] interface{ answeredWith(R) }

// ask sends msg to the actor at to and waits for its reply. A reply that
// is an error (what guard sends when handling msg panicked) is returned as
// the error, so a caller only ever sees the reply type msg declares.
func ask[R any, A actor.Actor](s *System, to address[A], msg request[R, A]) (R, error) {
	return askPID(s, to.pid, msg)
}

// askPID is ask to a PID of any actor, for a test's stand-in actor.
func askPID[R any](s *System, pid *actor.PID, msg Request[R]) (R, error) {
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
// three allocations takes ~560 bytes.
const eventBytesTypical = 640

// appendThen is the one way a durable write finishes: it encodes evs and
// appends them to the log, and once they are durable (err nil) or failed
// it sends the message then(err) returns to the actor it names. The log's
// callback does nothing else — it only enqueues — so every consequence of
// a write (registry entries, spawns, holds, budgets, replies) runs in an
// actor, in that actor's order.
func (s *System) appendThen(then func(err error) delivery, evs ...engine.Event) {
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
		if err == nil {
			s.audit.add(evs) // the audit line written with its write (audit.go)
		}
		d := then(err)
		s.root.Send(d.to, d.msg)
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

// ---- Quotes ----------------------------------------------------------------

// CreateQuote allocates and reserves a quote, durably. An Idempotency-Key
// seen before with the same request returns the original quote (Replayed);
// with a different request, IDEMPOTENCY_KEY_REUSED.
func (s *System) CreateQuote(cmd *CreateQuote) *QuoteReply {
	if err := s.writable(); err != nil {
		return &QuoteReply{Err: err}
	}
	pair, ok := s.pairs[engine.BookKey{Mode: cmd.Mode, Pair: cmd.Pair}]
	if !ok {
		return &QuoteReply{Result: engine.ResultInvalidCurrencyPair}
	}
	if !cmd.IdempotencyKey.IsZero() {
		scope := engine.IdempotencyScope{Client: cmd.Client, Mode: cmd.Mode, Key: cmd.IdempotencyKey}
		reply, claimed := s.idem.claim(scope, cmd.RequestHash)
		if !claimed {
			return reply
		}
		defer s.idem.release(scope)
	}
	reply, err := ask[*QuoteReply](s, pair, cmd)
	if err != nil {
		return &QuoteReply{Err: err}
	}
	return reply
}

// OperatorCancel cancels any client's quote, in either mode, for an
// operator: the log records the cancel as the operator's.
func (s *System) OperatorCancel(id engine.QuoteID, audit *engine.OperatorActed) *QuoteReply {
	ref, ok := s.quoteRef(id)
	if !ok {
		return &QuoteReply{Result: engine.ResultQuoteNotFound}
	}
	client, mode := ref.owner()
	return s.TransitionQuote(client, mode, id, &TransitionQuote{Audited: Audited{audit}, Operation: OperationCancel, ByOperator: true})
}

// TransitionQuote accepts, cancels or completes the caller's quote.
func (s *System) TransitionQuote(client engine.ClientID, mode engine.Mode, id engine.QuoteID, cmd *TransitionQuote) *QuoteReply {
	ref, ok := s.quoteRef(id)
	if ok {
		_, ok = ref.viewOf(client, mode)
	}
	if !ok {
		return &QuoteReply{Result: engine.ResultQuoteNotFound}
	}
	if err := s.writable(); err != nil {
		return &QuoteReply{Err: err}
	}
	if to, ok := s.activate(ref); ok {
		reply, err := ask[*QuoteReply](s, to, cmd)
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
	var reply *PoolReply
	var err error
	if ref := v.(*poolRef); cmd.Deposit > 0 {
		reply, err = ask[*PoolReply](s, ref.pool, &poolDeposit{cmd})
	} else {
		reply, err = ask[*PoolReply](s, ref.pair, cmd)
	}
	if err != nil {
		return &PoolReply{Err: err}
	}
	return reply
}

// LedgerCheck checks spec §3 for mode m over the live sub-ledgers. Each
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
func (s *System) Admin(cmd AdminRequest) *AdminReply {
	if err := s.writable(); err != nil {
		return &AdminReply{Err: err}
	}
	reply, err := ask(s, s.coordinator, cmd)
	if err != nil {
		return &AdminReply{Err: err}
	}
	return reply
}

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
	var references []engine.Ref
	s.quotes.DeleteIf(func(_ engine.QuoteID, ref *quoteRef) bool {
		q := ref.view.Load()
		if ref.pid.Load() == nil && q.EndedBefore(now-retention) {
			s.moved(ref, q.Mode, q.Status, 0)
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
	for _, to := range s.treasuries {
		send(s, to, &forgetFunds{cutoff: now - retention})
	}
}
