package engine

import (
	"cmp"
	"fmt"
	"iter"
	"slices"
)

// Payments is the record of money that crossed the marketplace's edge —
// every receipt, prefund and payout — by identity (identity.go), across
// both modes. It is what makes a payment count once: the decisions below
// refuse a second record of one identity unless it is the same payment
// again (same amount, same wallet, same quote and address), which changes
// nothing.
//
// Payments are kept for ever, unlike statements and quotes (the
// retention): an identity forgotten could be credited again. A payment is
// about 200 bytes in memory.
//
// Receipts recorded before identities (EventPaymentReceived) were
// idempotent only by their text as typed, so an old log may hold one
// identity more than once. State applies them unchanged, indexes each
// under the identity the rules give it now, and keeps every identity met
// more than once (Duplicates) for the operator to reverse the extras
// (ReceiptReversed). A record with an identity (EventPaymentIdentified and
// the others of identity.go) is never a second record of one: replay
// refuses it as a corrupt log.
type Payments struct {
	list     []*Payment              // in log order
	first    map[Identity]*Payment   // each identity's first record
	clashes  map[Identity][]*Payment // identities recorded more than once, every record in log order
	receipts map[ReceiptID]*Payment  // receipts by id
	keys     map[string]*Payment     // prefunds and payouts by the operator's Idempotency-Key
}

// PaymentKind is what a Payment records.
type PaymentKind uint8

const (
	PaymentReceipt PaymentKind = 1 // PaymentReceived: money in for a quote
	PaymentPrefund PaymentKind = 2 // AccountDeposited: money in for a wallet
	PaymentPayout  PaymentKind = 3 // AccountWithdrawn: money out of a wallet
)

func (k PaymentKind) String() string {
	switch k {
	case PaymentReceipt:
		return "receipt"
	case PaymentPrefund:
		return "prefund"
	case PaymentPayout:
		return "payout"
	case PaymentUnapplied:
		return "unapplied"
	case PaymentReturned:
		return "returned"
	case PaymentReturn:
		return "return"
	}
	return ""
}

// Payment is one payment recorded under its identity.
type Payment struct {
	Kind     PaymentKind
	Identity Identity
	// Mode and Seq are the mode and the sequence of the wallet posting
	// that moved the money: one posting, one payment. For a receipt they
	// are its ReceiptID.
	Mode     Mode
	Seq      uint64
	Account  AccountID // the wallet
	Client   ClientID
	Currency Currency
	Amount   Amount // > 0, in the direction Kind says
	At       int64
	Method   ReceiptMethod // receipts
	Quote    QuoteID       // receipts: the quote paid
	Address  AddressID     // crypto receipts: the pay-in address
	// Reference is the payment's reference as recorded: its identity's
	// text, or for a receipt recorded before identities the text as typed.
	Reference string
	// Legacy marks a receipt recorded before identities: its identity is
	// the one the rules give its reference now.
	Legacy bool
	// ReversedAt is when a receipt was taken back (0: it stands).
	ReversedAt int64
	// IdempotencyKey and RequestHash: an operator's prefund or payout
	// sent with an Idempotency-Key.
	IdempotencyKey string
	RequestHash    [32]byte
}

// ReceiptID is the receipt's id.
func (p *Payment) ReceiptID() ReceiptID { return ReceiptID{Mode: p.Mode, Seq: p.Seq} }

// Reversed reports whether a receipt was taken back.
func (p *Payment) Reversed() bool { return p.ReversedAt != 0 }

// sameAs reports whether q is p again: the same kind of payment of the
// same amount, to the same wallet and mode, and for a receipt the same
// quote and address.
func (p *Payment) sameAs(q *Payment) bool {
	return p.Kind == q.Kind && p.Mode == q.Mode && p.Account == q.Account && p.Amount == q.Amount &&
		p.Quote == q.Quote && p.Address == q.Address
}

// ReceiptID names a receipt: its mode and the sequence of its statement
// posting ("rcpt_l00000000000002a"): a receipt and its row share the
// number, and ids of the two modes never collide.
type ReceiptID struct {
	Mode Mode
	Seq  uint64
}

func (id ReceiptID) String() string { return fmt.Sprintf("rcpt_%c%015x", id.Mode.String()[0], id.Seq) }

// IsZero reports whether id names no receipt.
func (id ReceiptID) IsZero() bool { return id.Seq == 0 }

// ParseReceiptID is ReceiptID.String's inverse.
func ParseReceiptID(s string) (ReceiptID, bool) {
	var mode byte
	var seq uint64
	if n, err := fmt.Sscanf(s, "rcpt_%c%x", &mode, &seq); err != nil || n != 2 || seq == 0 {
		return ReceiptID{}, false
	}
	for _, m := range Modes {
		if m.String()[0] == mode {
			if id := (ReceiptID{Mode: m, Seq: seq}); id.String() == s {
				return id, true
			}
		}
	}
	return ReceiptID{}, false
}

// NewPayments returns an empty record.
func NewPayments() *Payments {
	return &Payments{first: map[Identity]*Payment{}, clashes: map[Identity][]*Payment{},
		receipts: map[ReceiptID]*Payment{}, keys: map[string]*Payment{}}
}

// Len is the number of payments recorded.
func (ps *Payments) Len() int { return len(ps.list) }

// All yields every payment in log order.
func (ps *Payments) All() iter.Seq[*Payment] { return slices.Values(ps.list) }

// Lookup is the first payment recorded under id.
func (ps *Payments) Lookup(id Identity) (*Payment, bool) {
	p, ok := ps.first[id]
	return p, ok
}

// Receipt is the receipt id names.
func (ps *Payments) Receipt(id ReceiptID) (*Payment, bool) {
	p, ok := ps.receipts[id]
	return p, ok
}

// ByKey is the prefund or payout an operator's Idempotency-Key made.
func (ps *Payments) ByKey(key string) (*Payment, bool) {
	p, ok := ps.keys[key]
	return p, ok
}

// record indexes p, recorded now (log order).
func (ps *Payments) record(p *Payment) {
	ps.list = append(ps.list, p)
	if first, ok := ps.first[p.Identity]; !ok {
		ps.first[p.Identity] = p
	} else {
		if ps.clashes[p.Identity] == nil {
			ps.clashes[p.Identity] = []*Payment{first}
		}
		ps.clashes[p.Identity] = append(ps.clashes[p.Identity], p)
	}
	if p.Kind == PaymentReceipt {
		ps.receipts[p.ReceiptID()] = p
	}
	if p.IdempotencyKey != "" {
		ps.keys[p.IdempotencyKey] = p
	}
}

// Duplicate is an identity recorded more than once (only receipts
// recorded before identities can be): every record of it, in log order.
type Duplicate struct {
	Identity Identity
	Payments []*Payment
}

// Duplicates lists the identities recorded more than once, in the order
// of their first record.
func (ps *Payments) Duplicates() []Duplicate {
	out := make([]Duplicate, 0, len(ps.clashes))
	for id, list := range ps.clashes {
		out = append(out, Duplicate{Identity: id, Payments: list})
	}
	slices.SortFunc(out, func(a, b Duplicate) int {
		x, y := a.Payments[0], b.Payments[0]
		return cmp.Or(cmp.Compare(x.At, y.At), cmp.Compare(x.Mode, y.Mode), cmp.Compare(x.Seq, y.Seq))
	})
	return out
}

// decide is the rule of every payment: its identity's first record, if
// any, is either the same payment again — ResultOK with that record, and
// nothing is to change — or another one — ResultReceiptConflict. An
// Idempotency-Key already used answers likewise by its request's hash.
// ResultOK with a nil prior: the payment is new.
func (ps *Payments) decide(p *Payment) (Result, *Payment) {
	if p.IdempotencyKey != "" {
		if prior, ok := ps.keys[p.IdempotencyKey]; ok {
			if prior.RequestHash != p.RequestHash {
				return ResultIdempotencyKeyReused, prior
			}
			return ResultOK, prior
		}
	}
	if prior, ok := ps.first[p.Identity]; ok {
		if !prior.sameAs(p) {
			return ResultReceiptConflict, prior
		}
		return ResultOK, prior
	}
	return ResultOK, nil
}
