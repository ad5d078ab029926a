package engine

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/google/uuid"
)

// Unapplied receipts (spec §16.3): money that reached a collection account
// with nothing to credit — no quote reference, an ended or unknown quote's,
// another currency — is held in the mode's suspense account for its
// currency, in the treasury's sub-ledger (clearing → suspense), so the
// ledger still sums to zero and the money is accounted for. An operator
// then applies it to a quote or a client's wallet (suspense → wallet: a
// receipt like any other, with the bank's identity) or returns it to its
// sender (suspense → clearing, with the return transfer's reference).
//
// Its identity (the bank's transaction id, canonical) is recorded in
// Payments at once, as a PaymentUnapplied: the same bank entry imported
// again is a duplicate, and no receipt or prefund can claim that money a
// second time. Applied, the record becomes that receipt; returned, it is
// marked so and the return's reference is recorded as a PaymentReturn.

// UnappliedID identifies an unapplied receipt (a UUID).
type UnappliedID [16]byte

func (id UnappliedID) String() string { return uuid.UUID(id).String() }

// IsZero reports whether id names nothing.
func (id UnappliedID) IsZero() bool { return id == UnappliedID{} }

// Bounds of an unapplied receipt's texts, as the bank gave them.
const (
	// RemittanceBytesMax bounds the remittance text kept (the entries'
	// RmtInf/Ustrd, joined): four of ISO 20022's Max140Text.
	RemittanceBytesMax = 560
	// DebtorBytesMax bounds the payer's name kept (Max140Text).
	DebtorBytesMax = 140
	// UnappliedReasonBytesMax bounds why an operator returned one.
	UnappliedReturnReasonBytesMax = ReversalReasonBytesMax
)

// UnappliedReceipt is money held in suspense.
type UnappliedReceipt struct {
	ID         UnappliedID
	Mode       Mode
	Currency   Currency
	Amount     Amount
	Identity   Identity // the bank's transaction id (IdentityInbound)
	Remittance string   // the remittance text, as the bank sent it
	Debtor     string   // the payer's name, when the bank gave it
	At         int64
}

// ReceiptUnapplied: money arrived with nothing to credit; it is held in
// suspense (clearing → suspense).
type ReceiptUnapplied struct {
	At      int64
	Receipt UnappliedReceipt
}

// UnappliedSettled: money held in suspense leaves it — applied to Account,
// a wallet of its mode and currency (suspense → wallet, a receipt; of
// Quote when set), or, with Account zero, returned to its sender under the
// return transfer's reference Return (suspense → clearing).
type UnappliedSettled struct {
	At        int64
	Mode      Mode
	Unapplied UnappliedID
	Amount    Amount // the receipt's, as held
	Account   AccountID
	Quote     QuoteID
	Return    Identity // IdentityOutbound, when returned
}

func (*ReceiptUnapplied) Type() EventType  { return EventReceiptUnapplied }
func (e *ReceiptUnapplied) Time() int64    { return e.At }
func (*UnappliedSettled) Type() EventType  { return EventUnappliedSettled }
func (e *UnappliedSettled) Time() int64    { return e.At }
func (e *UnappliedSettled) Returned() bool { return e.Account.IsZero() }
func (e *ReceiptUnapplied) String() string { return "unapplied " + e.Receipt.ID.String() }
func (e *UnappliedSettled) String() string { return "settled " + e.Unapplied.String() }

// Payment kinds of money held in suspense.
const (
	// PaymentUnapplied: money in, held in suspense (ReceiptUnapplied).
	PaymentUnapplied PaymentKind = 4
	// PaymentReturned: money in that was held in suspense and returned.
	PaymentReturned PaymentKind = 5
	// PaymentReturn: money out, an unapplied receipt returned to its
	// sender, under the return transfer's reference.
	PaymentReturn PaymentKind = 6
)

// Unapplied is an unapplied receipt this treasury holds.
func (t *Treasury) Unapplied(id UnappliedID) (*UnappliedReceipt, bool) {
	u, ok := t.unapplied[id]
	return u, ok
}

// UnappliedList is the receipts held in suspense, newest first.
func (t *Treasury) UnappliedList() []*UnappliedReceipt {
	out := make([]*UnappliedReceipt, 0, len(t.unapplied))
	for _, u := range t.unapplied {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b *UnappliedReceipt) int {
		return cmp.Or(cmp.Compare(b.At, a.At), slices.Compare(b.ID[:], a.ID[:]))
	})
	return out
}

// DecideUnapplied decides holding money that arrived with nothing to
// credit: under its identity, the same money again (same amount, mode and
// currency, still held) is a repeat — ResultOK, no event, the record — and
// anything else recorded under it is ResultReceiptConflict.
func (t *Treasury) DecideUnapplied(ps *Payments, u UnappliedReceipt, now int64) (Result, *ReceiptUnapplied, *Payment) {
	switch {
	case u.Identity.Kind != IdentityInbound || !u.Identity.valid() || u.Identity.Currency != u.Currency || u.Currency.IsToken():
		return ResultValidation, nil, nil
	case u.Amount <= 0 || u.Amount > AmountMax || !DepositFits(t.Suspense[u.Currency], u.Amount):
		return ResultAmountOutOfRange, nil, nil
	case len(u.Remittance) > RemittanceBytesMax || len(u.Debtor) > DebtorBytesMax || u.ID.IsZero():
		return ResultValidation, nil, nil
	}
	p := &Payment{Kind: PaymentUnapplied, Mode: t.Mode, Currency: u.Currency, Amount: u.Amount, Identity: u.Identity}
	if res, prior := ps.decide(p); res != ResultOK || prior != nil {
		return res, nil, prior
	}
	u.Mode, u.At = t.Mode, now
	return ResultOK, &ReceiptUnapplied{At: now, Receipt: u}, nil
}

// SettleRequest is where an operator sends money held in suspense: a
// wallet (and the quote it pays, if any), or back to its sender under a
// return reference.
type SettleRequest struct {
	Unapplied UnappliedID
	Wallet    AccountID // zero: return it
	Quote     QuoteID
	Return    Identity
}

// DecideSettle decides applying or returning an unapplied receipt of this
// treasury: ResultNotFound when it holds none of that id (never held, or
// settled already); the wallet must be one of this mode in the receipt's
// currency; a return's reference a new outbound identity in it.
func (t *Treasury) DecideSettle(ps *Payments, req SettleRequest, now int64) (Result, *UnappliedSettled) {
	u, ok := t.unapplied[req.Unapplied]
	if !ok {
		return ResultUnappliedNotFound, nil
	}
	ev := &UnappliedSettled{At: now, Mode: t.Mode, Unapplied: u.ID, Amount: u.Amount, Account: req.Wallet, Quote: req.Quote, Return: req.Return}
	if !req.Wallet.IsZero() {
		w, ok := t.Wallets[req.Wallet]
		switch {
		case !ok || w.Currency != u.Currency:
			return ResultAccountNotFound, nil
		case !DepositFits(w.Balance, u.Amount):
			return ResultAmountOutOfRange, nil
		}
		ev.Return = Identity{}
		return ResultOK, ev
	}
	if req.Return.Kind != IdentityOutbound || !req.Return.valid() || req.Return.Currency != u.Currency || !req.Quote.IsZero() {
		return ResultValidation, nil
	}
	if res, prior := ps.decide(&Payment{Kind: PaymentReturn, Mode: t.Mode, Currency: u.Currency, Amount: u.Amount, Identity: req.Return}); res != ResultOK || prior != nil {
		return ResultReceiptConflict, nil
	}
	return ResultOK, ev
}

// ApplyUnapplied holds u in suspense (clearing → suspense) and records it.
func (t *Treasury) ApplyUnapplied(ps *Payments, ev *ReceiptUnapplied) {
	u := ev.Receipt
	t.Clearing[u.Currency] -= u.Amount
	t.Suspense[u.Currency] += u.Amount
	p := &Payment{Kind: PaymentUnapplied, Mode: t.Mode, Currency: u.Currency, Amount: u.Amount, At: ev.At,
		Identity: u.Identity, Reference: u.Identity.Text(), Method: ReceiptBank}
	ps.record(p)
	t.unapplied[u.ID] = &u
	t.unappliedPayment[u.ID] = p
}

// ApplySettle moves an unapplied receipt out of suspense: into the
// wallet, where it is a receipt (a payin posting, of the quote if named;
// the record becomes that receipt), or back to clearing, returned.
func (t *Treasury) ApplySettle(ps *Payments, ev *UnappliedSettled) *Payment {
	u, p := t.unapplied[ev.Unapplied], t.unappliedPayment[ev.Unapplied]
	delete(t.unapplied, ev.Unapplied)
	delete(t.unappliedPayment, ev.Unapplied)
	t.Suspense[u.Currency] -= u.Amount
	if ev.Returned() {
		t.Clearing[u.Currency] += u.Amount
		p.Kind, p.ReversedAt = PaymentReturned, ev.At
		ps.record(&Payment{Kind: PaymentReturn, Mode: t.Mode, Currency: u.Currency, Amount: u.Amount, At: ev.At,
			Identity: ev.Return, Reference: ev.Return.Text()})
		return p
	}
	// The suspense shard is this sub-ledger's, as the clearing shard is:
	// the posting's two legs stay in it.
	t.Clearing[u.Currency] += u.Amount
	w := t.wallet(ev.Account)
	t.post(w, PostingPayIn, u.Amount, ev.Quote, u.Identity.Text(), ev.At)
	p.Kind, p.Seq, p.Account, p.Client, p.Quote, p.At = PaymentReceipt, t.PostingSeq, w.ID, ClientID(w.Owner), ev.Quote, ev.At
	ps.promote(p)
	if !ev.Quote.IsZero() && ev.At >= t.receiptsFrom {
		t.receiptsOf[ev.Quote] = append(t.receiptsOf[ev.Quote], p)
	}
	return p
}

// promote indexes a record that became a receipt.
func (ps *Payments) promote(p *Payment) { ps.receipts[p.ReceiptID()] = p }

func (s *State) checkSuspense(ev Event) error {
	switch ev := ev.(type) {
	case *ReceiptUnapplied:
		t := s.Treasuries[ev.Receipt.Mode]
		if t == nil {
			return fmt.Errorf("unapplied receipt in mode %d", ev.Receipt.Mode)
		}
		if _, dup := t.unapplied[ev.Receipt.ID]; dup {
			return fmt.Errorf("unapplied receipt %s held already", ev.Receipt.ID)
		}
		if res, decided, _ := t.DecideUnapplied(s.Payments, ev.Receipt, ev.At); decided == nil {
			return fmt.Errorf("unapplied receipt %s refused (%s)", ev.Receipt.ID, res)
		}
	case *UnappliedSettled:
		t := s.Treasuries[ev.Mode]
		if t == nil {
			return fmt.Errorf("settlement in mode %d", ev.Mode)
		}
		res, decided := t.DecideSettle(s.Payments, SettleRequest{Unapplied: ev.Unapplied, Wallet: ev.Account, Quote: ev.Quote, Return: ev.Return}, ev.At)
		if res != ResultOK || decided.Amount != ev.Amount {
			return fmt.Errorf("settling unapplied receipt %s refused (%s, amount %d)", ev.Unapplied, res, ev.Amount)
		}
		if !ev.Quote.IsZero() {
			q := s.Quotes.Get(ev.Quote)
			if q != nil && (q.Mode != ev.Mode || ClientID(t.Wallets[ev.Account].Owner) != q.Client || q.Pair.Source != t.unapplied[ev.Unapplied].Currency) {
				return fmt.Errorf("unapplied receipt %s applied to quote %s of another client, mode or currency", ev.Unapplied, ev.Quote)
			}
		}
	}
	return nil
}

func (s *State) applySuspense(ev Event) {
	switch ev := ev.(type) {
	case *ReceiptUnapplied:
		s.Treasuries[ev.Receipt.Mode].ApplyUnapplied(s.Payments, ev)
	case *UnappliedSettled:
		t := s.Treasuries[ev.Mode]
		p := t.ApplySettle(s.Payments, ev)
		if !ev.Returned() && !ev.Quote.IsZero() {
			s.oweReceipt(t, &PaymentReceived{At: ev.At, Method: ReceiptBank, Quote: ev.Quote, Account: ev.Account,
				Amount: p.Amount, Reference: p.Reference, Identity: p.Identity})
		}
	}
}

func (e *encoder) unapplied(u *UnappliedReceipt) {
	e.id(u.ID)
	e.byte1(uint8(u.Mode))
	e.byte1(uint8(u.Currency))
	e.amount(u.Amount)
	e.identity(u.Identity)
	e.str(u.Remittance)
	e.str(u.Debtor)
	e.varint(u.At)
}

func (d *decoder) unapplied() UnappliedReceipt {
	u := UnappliedReceipt{ID: d.id(), Mode: d.mode(), Currency: d.currency(), Amount: d.amount(), Identity: d.identity(),
		Remittance: d.str(), Debtor: d.str(), At: d.varint()}
	if len(u.Remittance) > RemittanceBytesMax || len(u.Debtor) > DebtorBytesMax {
		d.fail()
	}
	return u
}
