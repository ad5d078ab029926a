package engine

import (
	"math"
	"unsafe"
)

// Status is a quote's state (spec §4).
type Status uint8

const (
	StatusPending         Status = iota + 1 // allocated, liquidity held, awaits accept (XML NEWT)
	StatusAwaitingPayment                   // accepted, awaits payment (XML SETT)
	StatusCompleted                         // settled (XML COMP)
	StatusCancelled                         // cancelled by the partner (XML CANC)
	StatusExpired                           // TTL or payment window ran out (XML CANC + EXPD)
)

func (s Status) String() string {
	switch s {
	case StatusPending:
		return "pending"
	case StatusAwaitingPayment:
		return "awaiting_payment"
	case StatusCompleted:
		return "completed"
	case StatusCancelled:
		return "cancelled"
	case StatusExpired:
		return "expired"
	}
	return ""
}

// Open reports whether s still holds liquidity and has a deadline.
func (s Status) Open() bool { return s == StatusPending || s == StatusAwaitingPayment }

// Statuses lists every status in lifecycle order.
var Statuses = []Status{StatusPending, StatusAwaitingPayment, StatusCompleted, StatusCancelled, StatusExpired}

// Transition is one row of the quote lifecycle's table (spec §4): the
// statuses an operation moves a quote from, and the status it moves it to.
// A quote already in To takes the same request again as a safe repeat (no
// event; an accept only with the same input). The table below is the one
// statement of the lifecycle: the decisions (Accept, Cancel, Complete,
// ExpireIfDue), Apply's checks, replay's (State.Apply) and the 409 details
// (the statuses an operation is allowed from) all read it.
type Transition struct {
	From []Status
	To   Status
}

// Allows reports whether the operation moves a quote in status s.
func (t *Transition) Allows(s Status) bool {
	for _, f := range t.From {
		if f == s {
			return true
		}
	}
	return false
}

// The quote lifecycle.
var (
	Accepting  = Transition{From: []Status{StatusPending}, To: StatusAwaitingPayment}
	Cancelling = Transition{From: []Status{StatusPending, StatusAwaitingPayment}, To: StatusCancelled}
	Completing = Transition{From: []Status{StatusAwaitingPayment}, To: StatusCompleted}
	// Expiring is the deadline's: every open status (Status.Open).
	Expiring = Transition{From: []Status{StatusPending, StatusAwaitingPayment}, To: StatusExpired}
)

// transitionOf is the row of a lifecycle event; nil for any other event.
func transitionOf(ev Event) *Transition {
	switch ev.(type) {
	case *QuoteAccepted:
		return &Accepting
	case *QuoteCancelled:
		return &Cancelling
	case *QuoteCompleted:
		return &Completing
	case *QuoteExpired:
		return &Expiring
	}
	return nil
}

// Quote is one quote (= one XML trade). After creation its immutable part
// (ids, amounts, allocations) never changes; the transitions below change
// Status, deadlines and settlement only. Owned by its quote actor while open.
//
// NB: a quote — a million of them in memory — is 224 bytes: the one-byte
// fields come together (Status among them), so it carries no padding for
// them, and what only an accept sets (Accepted) is a pointer, nil while
// the quote is pending.
type Quote struct {
	ID        QuoteID
	Client    ClientID
	Mode      Mode
	Pair      Pair
	Direction Direction
	Chain     Chain
	Channel   Channel
	Status    Status // the mutable part's, placed here for the padding
	// forgotten marks a quote ForgetEnded dropped, in its slab (State.slabs).
	forgotten bool

	Amount       Amount
	ProposedRate Rate
	Reference    Ref
	// allocs is the first of the quote's allocations (Allocations): a
	// pointer and a count (nallocs, beside TTL) take 9 bytes of the quote
	// where a slice header takes 24.
	allocs         *Allocation
	Chat           *Chat // shared, never modified
	IdempotencyKey IdemKey
	RequestHash    [32]byte
	Key            KeyID // the API key that created it

	CreatedAt int64
	UpdatedAt int64
	ExpiresAt int64 // the current deadline (TTL, then payment window); meaningless when terminal
	TTL       int32 // seconds of the quote TTL given at creation
	nallocs   uint8
	// Accepted is what the accept set (nil before: a pending quote
	// carries none of it), immutable: shared by the quote's versions.
	Accepted *Acceptance
	// PayIn is the crypto pay-in issued at acceptance (a token source),
	// immutable: a sighting replaces it with a changed copy.
	PayIn *PayIn
}

// NewQuote builds the pending quote an event created.
func NewQuote(ev *QuoteCreated) *Quote {
	q := new(Quote)
	q.init(ev)
	return q
}

// init makes q the quote ev creates (NewQuote, and DecodeState into its
// slab of quotes).
func (q *Quote) init(ev *QuoteCreated) {
	*q = Quote{
		ID: ev.Quote, Client: ev.Client, Mode: ev.Mode, Pair: ev.Pair, Direction: ev.Direction,
		Amount: ev.Amount, ProposedRate: ev.ProposedRate, Chain: ev.Chain, Reference: ev.Reference,
		Channel: ev.Channel, Chat: ev.Chat,
		IdempotencyKey: ev.IdempotencyKey, RequestHash: ev.RequestHash, Key: ev.Key,
		Status: StatusPending, CreatedAt: ev.At, UpdatedAt: ev.At, ExpiresAt: ev.ExpiresAt,
		TTL: ttlSeconds(ev.At, ev.ExpiresAt),
	}
	q.setAllocations(ev.Allocations)
}

// Allocations are the quote's allocations (1 to SlicesMax), shared, never
// modified.
func (q *Quote) Allocations() []Allocation { return unsafe.Slice(q.allocs, q.nallocs) }

// setAllocations makes as the quote's allocations. A valid quote has at
// most SlicesMax; a list the count cannot hold panics rather than being
// cut short (an event encoded from such a quote would decode as valid).
func (q *Quote) setAllocations(as []Allocation) {
	if len(as) > math.MaxUint8 {
		assert(false, "quote %s has %d allocations", q.ID, len(as))
	}
	q.allocs, q.nallocs = unsafe.SliceData(as), uint8(len(as))
}

// TotalSource is the sum of the allocations' source amounts: what the
// partner pays. (Summed when asked, not stored: a quote has at most
// SlicesMax allocations, and a million quotes held 16 MB of totals.)
func (q *Quote) TotalSource() Amount {
	var t Amount
	as := q.Allocations()
	for i := range as {
		t += as[i].Source
	}
	return t
}

// TotalDestination is the sum of the allocations' destination amounts:
// what the partner receives.
func (q *Quote) TotalDestination() Amount {
	var t Amount
	as := q.Allocations()
	for i := range as {
		t += as[i].Destination
	}
	return t
}

// ttlSeconds is the TTL of a quote created at at that expires at
// expiresAt (unix ms), in whole seconds.
func ttlSeconds(at, expiresAt int64) int32 { return int32((expiresAt - at) / 1000) }

// EndedBefore reports whether q ended (completed, cancelled or expired)
// before cutoff (unix ms): the retention rule the service, its log
// follower and the cluster's replicas forget quotes by.
func (q *Quote) EndedBefore(cutoff int64) bool { return !q.Status.Open() && q.UpdatedAt < cutoff }

// Clone returns a copy safe to hand to readers: the shared parts are
// immutable.
func (q *Quote) Clone() *Quote { c := *q; return &c }

// Acceptance is what an accept sets on a quote.
type Acceptance struct {
	At          int64
	PoolAccount AccountID // the accountId of a JSON accept; zero for XML
	Settlement  Settlement
}

// AcceptanceOrZero is what the accept set, all zero (SettlementNone)
// before the quote is accepted.
func (q *Quote) AcceptanceOrZero() Acceptance {
	if q.Accepted == nil {
		return Acceptance{}
	}
	return *q.Accepted
}

// SettlementOrZero is where the quote settles (AcceptanceOrZero's).
func (q *Quote) SettlementOrZero() Settlement { return q.AcceptanceOrZero().Settlement }

// SecondsLeft is the seconds until the current deadline, rounded up (a
// quote created with a 300 s TTL shows 300, not 299, in its create
// response), 0 when terminal or past due.
func (q *Quote) SecondsLeft(now int64) int64 {
	if !q.Status.Open() || now >= q.ExpiresAt {
		return 0
	}
	return (q.ExpiresAt - now + 999) / 1000
}

// WeightedAverageRate is total destination ÷ total source, half-even to 18
// places.
func (q *Quote) WeightedAverageRate() Rate {
	return WeightedAverageRate(q.TotalSource(), q.TotalDestination(), q.Pair)
}

// HasPoolAccount reports whether id is the liquidity account of one of the
// quote's allocations.
func (q *Quote) HasPoolAccount(id AccountID) bool {
	as := q.Allocations()
	for i := range as {
		if as[i].PoolAccount == id {
			return true
		}
	}
	return false
}

// ExpireIfDue returns the expiry event when the deadline has passed.
func (q *Quote) ExpireIfDue(now int64) *QuoteExpired {
	if Expiring.Allows(q.Status) && now >= q.ExpiresAt {
		return &QuoteExpired{At: now, Quote: q.ID}
	}
	return nil
}

// AcceptQuote is an accept command. A JSON accept names a PoolAccount
// (NamesPoolAccount) and settles to the partner's wallet; an XML accept
// names only the Settlement.
type AcceptQuote struct {
	NamesPoolAccount bool
	PoolAccount      AccountID
	Settlement       Settlement
	// OwnerWallets are the wallets of the quote's client, for a wallet
	// settlement: it must be one of them (CheckSettlement). The quote actor
	// fills them in; they are context for the decision, not part of the
	// event.
	OwnerWallets []WalletAccount
}

// Accept decides an accept at time now (REQUIRES: ExpireIfDue was applied).
// A repeat with the same input returns ResultOK and no event.
func (q *Quote) Accept(cmd AcceptQuote, now, paymentWindowMillis int64) (Result, *QuoteAccepted) {
	switch {
	case Accepting.Allows(q.Status):
		if p := CheckSettlement(q, cmd.Settlement, cmd.OwnerWallets); p != SettlementLegal {
			return p.Result(), nil
		}
		if cmd.NamesPoolAccount && !q.HasPoolAccount(cmd.PoolAccount) {
			return ResultInvalidAccount, nil
		}
		return ResultOK, &QuoteAccepted{At: now, Quote: q.ID, PoolAccount: cmd.PoolAccount,
			Settlement: cmd.Settlement, ExpiresAt: now + paymentWindowMillis}
	case q.Status == Accepting.To && cmd.PoolAccount == q.AcceptanceOrZero().PoolAccount && cmd.Settlement == q.SettlementOrZero():
		return ResultOK, nil
	}
	return ResultInvalidState, nil
}

// Cancel decides a cancel. Cancelling a cancelled quote is a safe repeat.
func (q *Quote) Cancel(now int64) (Result, *QuoteCancelled) {
	switch {
	case Cancelling.Allows(q.Status):
		return ResultOK, &QuoteCancelled{At: now, Quote: q.ID}
	case q.Status == Cancelling.To:
		return ResultOK, nil
	}
	return ResultInvalidState, nil
}

// Complete decides a completion. Completing a completed quote is a safe
// repeat.
func (q *Quote) Complete(now int64) (Result, *QuoteCompleted) {
	switch {
	case Completing.Allows(q.Status):
		return ResultOK, &QuoteCompleted{At: now, Quote: q.ID}
	case q.Status == Completing.To:
		return ResultOK, nil
	}
	return ResultInvalidState, nil
}

// Apply moves the quote by one of its lifecycle events and reports whether
// the quote's holds must now be released (cancel, expiry).
// REQUIRES: the event was decided by the methods above on this state.
func (q *Quote) Apply(ev Event) (release bool) {
	if ev, ok := ev.(*PayInSeen); ok {
		seen := *q.PayIn
		seen.SeenAmount, seen.SeenTx, seen.SeenAt = ev.Amount, ev.TxHash, ev.At
		q.PayIn, q.UpdatedAt = &seen, ev.At
		return false
	}
	t := transitionOf(ev)
	if t == nil || !t.Allows(q.Status) {
		assert(false, "quote cannot apply %T from %s", ev, q.Status)
	}
	q.Status, q.UpdatedAt = t.To, ev.Time()
	if acc, ok := ev.(*QuoteAccepted); ok {
		q.ExpiresAt, q.PayIn = acc.ExpiresAt, acc.PayIn
		q.Accepted = &Acceptance{At: acc.At, PoolAccount: acc.PoolAccount, Settlement: acc.Settlement}
	}
	return t == &Cancelling || t == &Expiring
}
