package actors

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
)

// Messages between actors. Each is an immutable pointer struct named as a
// command (CreateQuote) or an event (HoldPlaced). Requests that a caller waits
// on carry their own reply type; everything else is fire-and-forget.

// CreateQuote asks a pair actor to allocate and reserve a quote.
// Reply: *QuoteReply.
type CreateQuote struct {
	Key            engine.KeyID // the caller's API key (open-quote cap per key)
	Client         engine.ClientID
	Mode           engine.Mode
	Pair           engine.Pair
	Direction      engine.Direction
	Amount         engine.Amount
	Rate           engine.Rate // the partner's proposed (minimum) rate
	Chain          engine.Chain
	Listing        engine.PoolID // zero: any pool
	Chat           *engine.Chat
	IdempotencyKey engine.IdemKey
	RequestHash    [32]byte
	Channel        engine.Channel
}

// QuoteOperation is a lifecycle command on one quote.
type QuoteOperation uint8

const (
	OperationAccept QuoteOperation = iota + 1
	OperationCancel
	OperationComplete
)

// TransitionQuote asks a quote actor to accept, cancel or complete.
// Reply: *QuoteReply.
type TransitionQuote struct {
	Audited
	Operation QuoteOperation
	Accept    engine.AcceptQuote // OperationAccept only
	// ByOperator: an operator's cancel (the admin API), recorded as such.
	ByOperator bool
}

// QuoteReply answers CreateQuote and TransitionQuote.
type QuoteReply struct {
	Result      engine.Result
	Quote       *engine.Quote // immutable view; nil on refusal of a create
	AllowedFrom []engine.Status
	Allocation  engine.AllocationOutcome // on ResultInsufficientLiquidity: Fillable and BestRate
	Field       string                   // on ResultValidation: the offending request member
	Exposure    *ExposureLimit           // on ResultExposureLimit
	Bounds      engine.PairSpec          // on ResultOutsidePairBounds: the pair and its bounds
	Funding     *engine.Funding          // on ResultInsufficientFunds: what the wallet can spend
	Replayed    bool                     // an Idempotency-Key replay
	// Durable: the answer follows this request's own append, made durable
	// (in a cluster, committed in this leader's term: fenced by it, so the
	// gateway need not confirm the leadership again).
	Durable bool
	Err     error // an operating failure (storage, shutdown): 503
}

// PoolCommand asks a pair actor to change one of its pools. Exactly one of
// the fields is set. Reply: *PoolReply (sent by the pool actor once applied).
type PoolCommand struct {
	Audited
	Pool     engine.PoolID
	Rate     engine.Rate // SetRate when non-zero
	Status   *bool       // SetStatus when non-nil (true = active)
	Deposit  engine.Amount
	Withdraw engine.Amount
}

// poolDeposit is a PoolCommand's deposit: the pool actor decides it, the
// pair actor the rest (System.ChangePool).
type poolDeposit struct{ cmd *PoolCommand }

// PoolReply answers PoolCommand and CreatePool.
type PoolReply struct {
	Result engine.Result
	Pool   *engine.Pool // immutable view
	Err    error
}

// Failure is the reply as one error: Err, else the result when not OK,
// else nil.
func (r *PoolReply) Failure() error { return replyFailure(r.Err, r.Result) }

// poolAdded tells a pair actor about a new pool of its book.
type poolAdded struct {
	entry engine.BookEntry
	info  poolInfo
}

// budgetDeposited tells a pair actor that a deposit its pool actor decided
// is durable: the pool's reservation budget grows by amount, and only then
// the caller gets its answer, so a quote created after it can use it.
type budgetDeposited struct {
	pool    engine.PoolID
	amount  engine.Amount
	view    *engine.Pool // the pool after the deposit, for the reply
	replyTo *actor.PID
	err     error // the append failed: the budget stays, the caller gets err
}

func (m *budgetDeposited) reply(err error) *PoolReply {
	if err != nil {
		return &PoolReply{Err: err}
	}
	return &PoolReply{Result: engine.ResultOK, Pool: m.view}
}

// structuralDurable is the coordinator's write made durable (or failed):
// the coordinator runs onDurable (or onFailed, when set) and replies.
type structuralDurable struct {
	onDurable func() *AdminReply
	onFailed  func()
	replyTo   *actor.PID
	err       error
}

// bookOutcome carries the book's part of a quote outcome (holds released)
// to the pair actor; it applies it with engine.Book.ApplyOutcome.
type bookOutcome struct {
	outcome *engine.Outcome
}

// poolEventApplied carries a durable pool event to the pool actor, which
// applies it and replies to replyTo.
type poolEventApplied struct {
	event   engine.Event
	replyTo replyTarget
}

// sliceEffect carries one pool's part of a durable quote outcome
// (engine.RouteOutcome) to the pool actor, which applies it with
// engine.Pool.ApplySliceEffect.
type sliceEffect struct{ effect engine.SliceEffect }

// clientOpened carries a durable ClientCreated to a treasury actor.
type clientOpened struct{ event *engine.ClientCreated }

// DepositAccount asks a treasury actor to credit a wallet from clearing:
// an operator's prefund under its reference (engine.MoneyRequest).
// Reply: *AccountReply.
type DepositAccount struct {
	Audited
	engine.MoneyRequest
}

// AccountReply answers DepositAccount and WithdrawAccount.
type AccountReply struct {
	Result  engine.Result
	Account *engine.Account
	// Payment is the prefund or payout recorded (a copy): on a repeat
	// (Repeated) or a conflict, the one recorded first.
	Payment  *engine.Payment
	Repeated bool
	Err      error
}

// treasurySnapshot asks a treasury actor for a consistent copy of its
// sub-ledger. Reply: *engine.Treasury.
type treasurySnapshot struct{}

// expiryDue is a quote actor's timer firing.
type expiryDue struct{}

// appendDurable tells a quote actor that one of its log appends finished
// (err == nil: durable). The actor then publishes, sends the consequences and
// replies: the log's committer only enqueues this message, so it is back to
// committing the next group at once.
type appendDurable struct {
	event   engine.Event
	view    *engine.Quote
	replyTo *actor.PID
	err     error
}

// quoteRecorded tells a pair actor that a QuoteCreated it logged finished.
type quoteRecorded struct {
	event   *engine.QuoteCreated
	replyTo *actor.PID
	err     error
}

// Coordinator commands. Reply: *AdminReply.
type CreateClient struct {
	Audited
	Name string
}
type CreateKey struct {
	Audited
	Client engine.ClientID
	Mode   engine.Mode
}
type RevokeKey struct {
	Audited
	Key engine.KeyID
}

// RollKey makes a new key for the client and mode of Key, which must be
// the caller's (Client, Mode) and still work, and has Key stop working
// ExpiresIn from now (0: at once). Reply: AdminReply with the new Key and
// its Secret.
type RollKey struct {
	Client    engine.ClientID
	Mode      engine.Mode
	Key       engine.KeyID
	ExpiresIn time.Duration
}
type CreatePool struct {
	Audited
	Mode  engine.Mode
	Name  string
	Pair  engine.Pair
	Rate  engine.Rate
	Owner engine.ClientID
}

// CreateWebhook registers an endpoint for a client and mode; URL and
// Events are validated by the caller (the gateway decides what URL a
// partner may name).
type CreateWebhook struct {
	Client engine.ClientID
	Mode   engine.Mode
	URL    string
	Events engine.WebhookEvents
}

// RotateWebhookSecret gives one of the client's endpoints in that mode a
// new signing secret; the current one keeps signing (a second v1) for
// PreviousFor. Reply: AdminReply with the new Secret and, in Webhook, the
// registration (its PreviousUntil).
type RotateWebhookSecret struct {
	Client      engine.ClientID
	Mode        engine.Mode
	Webhook     engine.WebhookID
	PreviousFor time.Duration
}

// UpdateWebhook sets one of the client's endpoints' URL and events (an
// empty URL or no events: unchanged). Reply: AdminReply with the
// registration as it is now (no secret).
type UpdateWebhook struct {
	Client  engine.ClientID
	Mode    engine.Mode
	Webhook engine.WebhookID
	URL     string
	Events  engine.WebhookEvents
}

// DeleteWebhook removes one of the client's endpoints in that mode.
type DeleteWebhook struct {
	Client  engine.ClientID
	Mode    engine.Mode
	Webhook engine.WebhookID
}

// AdminReply answers the coordinator's commands.
type AdminReply struct {
	Result  engine.Result
	Client  *engine.Client
	Key     *engine.Key
	Secret  string // CreateKey, CreateWebhook: the secret, shown once
	Pool    *engine.Pool
	Webhook *engine.Webhook // CreateWebhook: the registration
	Err     error
}

// Failure is the reply as one error: Err, else the result when not OK,
// else nil.
func (r *AdminReply) Failure() error { return replyFailure(r.Err, r.Result) }

// replyFailure is a reply's error, else its result when not OK, as an
// error naming it.
func replyFailure(err error, result engine.Result) error {
	if err != nil {
		return err
	}
	if result != engine.ResultOK {
		return fmt.Errorf("actors: %s", result)
	}
	return nil
}
