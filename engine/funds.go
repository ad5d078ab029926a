package engine

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"slices"
)

// Funds first (spec §4 Complete, §15.1): money arrives before it moves.
//
// A partner's wallet in a quote's source currency is where its pay-in lands
// and what its completion spends:
//
//  1. Receipts are postings. A crypto deposit to a quote's pay-in address or
//     a bank transfer carrying its reference credits the partner's wallet at
//     once (PaymentReceived: clearing → wallet), whatever the quote's status:
//     money received is never orphaned. An operator's deposit
//     (AccountDeposited) is a prefunding.
//  2. A completion spends. A live completion (QuoteCompleted with a Wallet)
//     debits the source wallet by the quote's total source amount (wallet →
//     clearing, in the treasury) while each pool takes its slice into
//     proceeds (clearing → proceeds, in the pool) — so the source money the
//     pools receive is money that reached the marketplace. It is allowed only
//     when the wallet's available balance plus its credit limit covers the
//     total (DecideFunding); a sandbox completion the wallet cannot cover
//     first records a simulated pay-in of the shortfall, in the same event.
//  3. Payouts: AccountWithdrawn (wallet → clearing), at most the available
//     balance; credit is never paid out.
//  4. Credit: CreditLimitSet lets a wallet go down to −limit on completion.
//
// Completions written before this rule (QuoteCompleted without a Wallet,
// tag 14) replay as they were: clearing → proceeds, nothing debited.
//
// Every wallet posting is kept in its statement (Treasury.History) until
// the retention forgets it (Treasury.Forget), with the balance after it.

// ReceiptMethod is how a payment reached the marketplace.
type ReceiptMethod uint8

const (
	ReceiptCrypto ReceiptMethod = iota + 1 // a deposit to a quote's pay-in address
	ReceiptBank                            // a bank transfer carrying a quote's reference
)

func (m ReceiptMethod) String() string {
	switch m {
	case ReceiptCrypto:
		return "crypto"
	case ReceiptBank:
		return "bank"
	}
	return ""
}

// Limits of receipts.
const (
	// ReceiptReferenceBytesMax bounds a receipt's transaction hash or bank
	// transaction id as recorded before identities (a log record's check).
	ReceiptReferenceBytesMax = 128
	// ReversalReasonBytesMax bounds the reason an operator gives for a
	// reversal.
	ReversalReasonBytesMax = 512
	// IdempotencyKeyBytesMax bounds an Idempotency-Key (spec §6).
	IdempotencyKeyBytesMax = 255
)

// PaymentReceived: a payment for a quote arrived and is credited to the
// partner's wallet in the quote's source currency and mode (clearing →
// wallet). Identity is what makes it one payment (identity.go, Payments):
// the same identity is never credited twice. A receipt recorded before
// identities has none (EventPaymentReceived): State derives it.
type PaymentReceived struct {
	At        int64
	Method    ReceiptMethod
	Quote     QuoteID
	Account   AccountID // the wallet credited
	Amount    Amount
	Reference string    // the identity's text: the transaction hash (crypto) or bank transaction id
	Address   AddressID // crypto: the pay-in address it was sent to; zero for bank
	Identity  Identity
}

// ReceiptKey is what a receipt's webhook event id is derived from
// (ReceiptEventID): its method, address and reference as recorded.
type ReceiptKey struct {
	Method    ReceiptMethod
	Address   AddressID
	Reference string
}

// Key is the receipt's event key.
func (ev *PaymentReceived) Key() ReceiptKey {
	return ReceiptKey{Method: ev.Method, Address: ev.Address, Reference: ev.Reference}
}

// AccountWithdrawn: an operator's payout, wallet → clearing. Reference is
// the payout's identity in the outbound namespace (zero in a payout
// recorded before identities); IdempotencyKey and RequestHash as
// AccountDeposited's.
type AccountWithdrawn struct {
	At             int64
	Account        AccountID
	Amount         Amount
	Reference      Identity
	IdempotencyKey string
	RequestHash    [32]byte
}

// ReceiptReversed: an operator takes a receipt back (wallet → clearing), a
// duplicate found among receipts recorded before identities, or money
// returned to its sender. Receipt names it; Account and Amount are its.
type ReceiptReversed struct {
	At      int64
	Receipt ReceiptID
	Account AccountID
	Amount  Amount
	Reason  string
}

// CreditLimitSet: a wallet may go down to −Limit on completion.
type CreditLimitSet struct {
	At      int64
	Account AccountID // the wallet (client, mode and currency)
	Limit   Amount    // >= 0
}

func (e *PaymentReceived) Type() EventType {
	if !e.Identity.IsZero() {
		return EventPaymentIdentified
	}
	return EventPaymentReceived
}
func (e *AccountWithdrawn) Type() EventType {
	if !e.Reference.IsZero() {
		return EventAccountWithdrawnRef
	}
	return EventAccountWithdrawn
}
func (*ReceiptReversed) Type() EventType { return EventReceiptReversed }
func (*CreditLimitSet) Type() EventType  { return EventCreditLimitSet }

func (e *PaymentReceived) Time() int64  { return e.At }
func (e *AccountWithdrawn) Time() int64 { return e.At }
func (e *ReceiptReversed) Time() int64  { return e.At }
func (e *CreditLimitSet) Time() int64   { return e.At }

// PostingType is what a wallet posting was (the statement's type).
type PostingType uint8

const (
	PostingDeposit        PostingType = iota + 1 // an operator's prefunding
	PostingPayIn                                 // a receipt: crypto deposit or bank transfer
	PostingSimulatedPayIn                        // sandbox: the shortfall a completion simulated
	PostingSettlement                            // a completion: source debited, or destination credited
	PostingWithdrawal                            // an operator's payout
	PostingReversal                              // a receipt taken back
	postingTypeEnd
)

var postingTypeNames = [postingTypeEnd]string{"", "deposit", "payin", "simulated_payin", "settlement", "withdrawal", "reversal"}

func (t PostingType) String() string {
	if t >= postingTypeEnd {
		return ""
	}
	return postingTypeNames[t]
}

// Posting is one line of a wallet's statement.
type Posting struct {
	// Seq numbers the postings of one treasury (mode) in log order: the
	// statement's id and cursor (PostingID).
	Seq          uint64
	Type         PostingType
	Amount       Amount // signed: + into the wallet, − out of it
	BalanceAfter Amount
	Quote        QuoteID // zero for deposits and withdrawals
	// Reference is the quote's reference, a receipt's transaction hash or
	// bank transaction id, or a prefund's or payout's reference.
	Reference string
	At        int64
	// Of is, on a reversal, the sequence of the receipt's posting it takes
	// back (with the mode, its ReceiptID); 0 otherwise.
	Of uint64
}

// ReceiptID is the receipt a payin posting credited or a reversal took
// back; zero for other postings.
func (p *Posting) ReceiptID(m Mode) ReceiptID {
	switch p.Type {
	case PostingPayIn:
		return ReceiptID{Mode: m, Seq: p.Seq}
	case PostingReversal:
		return ReceiptID{Mode: m, Seq: p.Of}
	}
	return ReceiptID{}
}

// PostingID renders a posting's id: "txn_", the mode's letter and the
// sequence, so ids of the two modes never collide.
func PostingID(m Mode, seq uint64) string {
	return fmt.Sprintf("txn_%c%015x", m.String()[0], seq)
}

// ParsePostingID is PostingID's inverse.
func ParsePostingID(m Mode, id string) (uint64, bool) {
	var mode byte
	var seq uint64
	if n, err := fmt.Sscanf(id, "txn_%c%x", &mode, &seq); err != nil || n != 2 || mode != m.String()[0] || PostingID(m, seq) != id {
		return 0, false
	}
	return seq, true
}

// post moves amount between the wallet and this sub-ledger's clearing
// shard (amount > 0: clearing → wallet) and records the posting.
func (t *Treasury) post(w *Account, typ PostingType, amount Amount, quote QuoteID, reference string, at int64) *Posting {
	t.Clearing[w.Currency] -= amount
	w.Balance += amount
	t.PostingSeq++
	h := appendPosting(t.History[w.ID], Posting{Seq: t.PostingSeq, Type: typ, Amount: amount,
		BalanceAfter: w.Balance, Quote: quote, Reference: reference, At: at})
	t.History[w.ID] = h
	return &h[len(h)-1]
}

// appendPosting appends p to a statement, doubling its capacity when it is
// full and long. NB: append grows a long slice by about a quarter, so a
// busy wallet's statement was copied whole every few thousand postings: a
// tenth of a replay's State.Apply at a million quotes. The retention
// (Forget) bounds a statement, and with it the slack.
func appendPosting(h []Posting, p Posting) []Posting {
	if len(h) == cap(h) && len(h) >= 1024 {
		h = slices.Grow(h, len(h))
	}
	return append(h, p)
}

// wallet returns a wallet this treasury holds; it asserts that it exists.
func (t *Treasury) wallet(id AccountID) *Account {
	w := t.Wallets[id]
	if w == nil {
		assert(false, "posting to unknown wallet %s", id)
	}
	return w
}

// payment is the Payment a posting to wallet w records.
func (t *Treasury) payment(kind PaymentKind, w *Account, amount Amount, at int64) *Payment {
	return &Payment{Kind: kind, Mode: t.Mode, Seq: t.PostingSeq, Account: w.ID, Client: ClientID(w.Owner),
		Currency: w.Currency, Amount: amount, At: at}
}

// ApplyDeposit posts an operator's prefunding (clearing → wallet) and
// records it under its reference, if it has one.
func (t *Treasury) ApplyDeposit(ps *Payments, ev *AccountDeposited) {
	w := t.wallet(ev.Account)
	t.post(w, PostingDeposit, ev.Amount, QuoteID{}, ev.Reference.Text(), ev.At)
	if !ev.Reference.IsZero() {
		p := t.payment(PaymentPrefund, w, ev.Amount, ev.At)
		p.Identity, p.Reference, p.IdempotencyKey, p.RequestHash = ev.Reference, ev.Reference.Text(), ev.IdempotencyKey, ev.RequestHash
		ps.record(p)
	}
}

// ApplyWithdrawal posts an operator's payout (wallet → clearing) and
// records it under its reference, if it has one.
func (t *Treasury) ApplyWithdrawal(ps *Payments, ev *AccountWithdrawn) {
	w := t.wallet(ev.Account)
	t.post(w, PostingWithdrawal, -ev.Amount, QuoteID{}, ev.Reference.Text(), ev.At)
	if !ev.Reference.IsZero() {
		p := t.payment(PaymentPayout, w, ev.Amount, ev.At)
		p.Identity, p.Reference, p.IdempotencyKey, p.RequestHash = ev.Reference, ev.Reference.Text(), ev.IdempotencyKey, ev.RequestHash
		ps.record(p)
	}
}

// ApplyReceipt posts a payment received (clearing → wallet) and records it
// under id: ev's identity, or for a receipt recorded before identities the
// one State derived (legacy).
func (t *Treasury) ApplyReceipt(ps *Payments, ev *PaymentReceived, id Identity) *Payment {
	w := t.wallet(ev.Account)
	t.post(w, PostingPayIn, ev.Amount, ev.Quote, ev.Reference, ev.At)
	p := t.payment(PaymentReceipt, w, ev.Amount, ev.At)
	p.Identity, p.Method, p.Quote, p.Address, p.Reference, p.Legacy = id, ev.Method, ev.Quote, ev.Address, ev.Reference, ev.Identity.IsZero()
	ps.record(p)
	if ev.At >= t.receiptsFrom {
		t.receiptsOf[ev.Quote] = append(t.receiptsOf[ev.Quote], p)
	}
	return p
}

// ApplyReversal takes a receipt back: wallet → clearing, the receipt
// marked reversed.
func (t *Treasury) ApplyReversal(ps *Payments, ev *ReceiptReversed) {
	r, _ := ps.Receipt(ev.Receipt)
	posting := t.post(t.wallet(ev.Account), PostingReversal, -ev.Amount, r.Quote, r.Reference, ev.At)
	posting.Of = r.Seq
	r.ReversedAt = ev.At
}

// ApplyCreditLimit sets a wallet's credit limit.
func (t *Treasury) ApplyCreditLimit(ev *CreditLimitSet) {
	if ev.Limit == 0 {
		delete(t.Credit, ev.Account)
		return
	}
	t.Credit[ev.Account] = ev.Limit
}

// ApplyCredit posts a completion's payout into the partner's wallet
// (clearing → wallet).
func (t *Treasury) ApplyCredit(c *WalletCredit) {
	t.post(t.wallet(c.Account), PostingSettlement, c.Amount, c.Quote, c.Reference, c.At)
}

// ApplyDebit posts a funded completion's spending: the simulated pay-in
// first (sandbox), then wallet → clearing of the total source amount.
func (t *Treasury) ApplyDebit(d *WalletDebit) {
	w := t.wallet(d.Account)
	if d.Simulated > 0 {
		t.post(w, PostingSimulatedPayIn, d.Simulated, d.Quote, d.Reference, d.At)
	}
	t.post(w, PostingSettlement, -d.Amount, d.Quote, d.Reference, d.At)
}

// CreditLimit is the credit limit of a wallet (0 if none was set).
func (t *Treasury) CreditLimit(wallet AccountID) Amount { return t.Credit[wallet] }

// ReceiptsOf returns the receipts credited for quote q within the
// retention, in log order.
func (t *Treasury) ReceiptsOf(q QuoteID) []*Payment { return t.receiptsOf[q] }

// ReceiptsByQuote yields each quote that has receipts within the
// retention with them (no quote twice).
func (t *Treasury) ReceiptsByQuote() iter.Seq2[QuoteID, []*Payment] {
	return maps.All(t.receiptsOf)
}

// Statement returns up to limit postings of a wallet, newest first,
// starting after the posting with sequence after (0: from the newest), and
// whether more follow. ok is false when after names no posting of it.
func (t *Treasury) Statement(wallet AccountID, after uint64, limit int) (page []Posting, more, ok bool) {
	h := t.History[wallet]
	end := len(h) // postings [0, end) are older than the cursor
	if after != 0 {
		i, found := slices.BinarySearchFunc(h, after, func(p Posting, seq uint64) int { return cmp.Compare(p.Seq, seq) })
		if !found {
			return nil, false, false
		}
		end = i
	}
	for i := end - 1; i >= 0 && len(page) < limit; i-- {
		page = append(page, h[i])
	}
	return page, end-len(page) > 0, true
}

// Forget drops the postings older than cutoff (unix ms), and the receipts
// older than it from the quotes' views (ReceiptsOf): the retention rule of
// State.ForgetEnded. The payments themselves are kept (Payments). It
// returns how many postings and views it dropped and the quotes whose
// receipts it dropped (their ReceiptsOf changed).
func (t *Treasury) Forget(cutoff int64) (dropped int, touched []QuoteID) {
	for id, h := range t.History {
		i := 0
		for i < len(h) && h[i].At < cutoff {
			i++
		}
		switch {
		case i == len(h):
			delete(t.History, id)
		case i > 0:
			t.History[id] = slices.Clone(h[i:])
		}
		dropped += i
	}
	t.receiptsFrom = max(t.receiptsFrom, cutoff)
	for q, rs := range t.receiptsOf {
		kept := slices.DeleteFunc(rs, func(r *Payment) bool { return r.At < cutoff })
		switch {
		case len(kept) == len(rs):
			continue
		case len(kept) == 0:
			delete(t.receiptsOf, q)
		default:
			t.receiptsOf[q] = kept
		}
		dropped += len(rs) - len(kept)
		touched = append(touched, q)
	}
	return dropped, touched
}

// Committed is what a live treasury has promised, per wallet, to
// completions in flight (decided, not yet durable): the decisions below
// take it from the wallet's available balance. Replay has none (nil).
type Committed map[AccountID]Amount

// Promise commits amount of wallet to a completion in flight.
func (c Committed) Promise(wallet AccountID, amount Amount) { c[wallet] += amount }

// Release takes a promise back (its completion was applied, or failed).
func (c Committed) Release(wallet AccountID, amount Amount) {
	if left := c[wallet] - amount; left > 0 {
		c[wallet] = left
		return
	}
	delete(c, wallet)
}

// Funding is how a completion is paid from the partner's source wallet.
type Funding struct {
	Wallet    *Account
	Required  Amount // the quote's total source amount
	Available Amount // the wallet's available balance less what is committed in flight
	Credit    Amount // the wallet's credit limit
	Simulated Amount // sandbox: the shortfall simulated as a pay-in
}

// Spendable is what the wallet may spend on a completion: its available
// balance plus its credit limit.
func (f *Funding) Spendable() Amount { return f.Available + f.Credit }

// Reserved is what the completion takes from the wallet's own money (the
// total less the simulated part): what the live treasury promises.
func (f *Funding) Reserved() Amount { return f.Required - f.Simulated }

// DecideFunding decides whether the completion of q can be paid from the
// client's wallet in q's source currency: the rule of spec §4
// Complete, shared by the live treasury actor, replay's check and the
// tests, against the wallet less what is committed to other completions. A sandbox
// completion the wallet cannot cover is funded by a simulated pay-in of
// the shortfall; a live one is refused with ResultInsufficientFunds.
func (t *Treasury) DecideFunding(q *Quote, committed Committed) (Result, Funding) {
	w, ok := t.Wallet(q.Client, q.Pair.Source)
	if !ok {
		return ResultAccountNotFound, Funding{}
	}
	f := Funding{Wallet: w, Required: q.TotalSource(), Available: w.Available() - committed[w.ID], Credit: t.Credit[w.ID]}
	if short := f.Required - f.Spendable(); short > 0 {
		if q.Mode != ModeSandbox {
			return ResultInsufficientFunds, f
		}
		f.Simulated = short
	}
	return ResultOK, f
}

// CompleteFunded decides a completion of q paid from the partner's wallet:
// q.Complete's decision, with the funding (DecideFunding) recorded in the
// event. A safe repeat or a refused transition is q.Complete's answer.
func (t *Treasury) CompleteFunded(q *Quote, committed Committed, now int64) (Result, *QuoteCompleted, Funding) {
	res, ev := q.Complete(now)
	if ev == nil {
		return res, nil, Funding{}
	}
	res, f := t.DecideFunding(q, committed)
	if res != ResultOK {
		return res, nil, f
	}
	ev.Wallet, ev.Simulated = f.Wallet.ID, f.Simulated
	return ResultOK, ev, f
}

// Reserved is what a funded completion takes from the wallet's own money
// while it is in flight (the total less the simulated part).
func (ev *QuoteCompleted) Reserved(q *Quote) Amount { return q.TotalSource() - ev.Simulated }

// DecideCreditLimit decides a new credit limit: refused (ResultCreditInUse)
// when the wallet already spends more credit than the new limit allows
// (available less committed below −limit), so that no completion decided
// under the old limit is left uncovered.
func (t *Treasury) DecideCreditLimit(wallet AccountID, limit Amount, committed Committed, now int64) (Result, *CreditLimitSet) {
	w, ok := t.Wallets[wallet]
	switch {
	case !ok:
		return ResultAccountNotFound, nil
	case limit < 0 || limit > AmountMax:
		return ResultAmountOutOfRange, nil
	case w.Available()-committed[wallet] < -limit:
		return ResultCreditInUse, nil
	}
	return ResultOK, &CreditLimitSet{At: now, Account: wallet, Limit: limit}
}

// DecideWithdrawal decides an operator's payout from a wallet: at most its
// available balance less what is committed in flight (credit is not paid
// out), under its reference's identity (Payments: the same payout again
// changes nothing). A payout recorded before identities has none (zero
// ref: replay's check alone).
func (t *Treasury) DecideWithdrawal(ps *Payments, req MoneyRequest, committed Committed, now int64) (Result, *AccountWithdrawn, *Payment) {
	w, ok := t.Wallets[req.Account]
	switch {
	case !ok:
		return ResultAccountNotFound, nil, nil
	case req.Amount <= 0 || req.Amount > AmountMax:
		return ResultAmountOutOfRange, nil, nil
	}
	if !req.Reference.IsZero() {
		p := t.payment(PaymentPayout, w, req.Amount, now)
		p.Identity, p.IdempotencyKey, p.RequestHash = req.Reference, req.IdempotencyKey, req.RequestHash
		if res, prior := ps.decide(p); res != ResultOK || prior != nil {
			return res, nil, prior
		}
	}
	if req.Amount > w.Available()-committed[req.Account] {
		return ResultInsufficientFunds, nil, nil
	}
	return ResultOK, &AccountWithdrawn{At: now, Account: req.Account, Amount: req.Amount, Reference: req.Reference,
		IdempotencyKey: req.IdempotencyKey, RequestHash: req.RequestHash}, nil
}

// DecideDeposit decides an operator's prefund of a wallet under its
// reference's identity (inbound: the bank's or chain's id of the transfer,
// which no receipt may credit again).
func (t *Treasury) DecideDeposit(ps *Payments, req MoneyRequest, now int64) (Result, *AccountDeposited, *Payment) {
	w, ok := t.Wallets[req.Account]
	switch {
	case !ok:
		return ResultAccountNotFound, nil, nil
	case !DepositFits(w.Balance, req.Amount):
		return ResultAmountOutOfRange, nil, nil
	}
	if !req.Reference.IsZero() {
		p := t.payment(PaymentPrefund, w, req.Amount, now)
		p.Identity, p.IdempotencyKey, p.RequestHash = req.Reference, req.IdempotencyKey, req.RequestHash
		if res, prior := ps.decide(p); res != ResultOK || prior != nil {
			return res, nil, prior
		}
	}
	return ResultOK, &AccountDeposited{At: now, Account: req.Account, Amount: req.Amount, Reference: req.Reference,
		IdempotencyKey: req.IdempotencyKey, RequestHash: req.RequestHash}, nil
}

// MoneyRequest is an operator's prefund or payout of a wallet.
type MoneyRequest struct {
	Account   AccountID
	Amount    Amount
	Reference Identity // inbound for a prefund, outbound for a payout
	// IdempotencyKey and RequestHash: the operator's Idempotency-Key, if
	// one was sent, and the hash of the request it came with.
	IdempotencyKey string
	RequestHash    [32]byte
}

// ReceiptRequest is a payment received for a quote.
type ReceiptRequest struct {
	Method   ReceiptMethod
	Identity Identity
	Address  AddressID // crypto: the pay-in address
	Amount   Amount
}

// DecideReceipt decides a payment received for q: under its identity, the
// same payment again (same amount, quote, address and mode) is a safe
// repeat — ResultOK, no event, the payment first recorded — and another
// is ResultReceiptConflict (Payments).
func (t *Treasury) DecideReceipt(ps *Payments, q *Quote, req ReceiptRequest, now int64) (Result, *PaymentReceived, *Payment) {
	w, ok := t.Wallet(q.Client, q.Pair.Source)
	if !ok {
		return ResultAccountNotFound, nil, nil
	}
	p := t.payment(PaymentReceipt, w, req.Amount, now)
	p.Identity, p.Quote, p.Address = req.Identity, q.ID, req.Address
	if res, prior := ps.decide(p); res != ResultOK || prior != nil {
		return res, nil, prior
	}
	if !DepositFits(w.Balance, req.Amount) {
		return ResultAmountOutOfRange, nil, nil
	}
	return ResultOK, &PaymentReceived{At: now, Method: req.Method, Quote: q.ID, Account: w.ID, Amount: req.Amount,
		Reference: req.Identity.Text(), Address: req.Address, Identity: req.Identity}, nil
}

// DecideReversal decides taking a receipt of this treasury's mode back: at
// most what the wallet may spend (its available balance less what is
// committed, plus its credit limit); a receipt reversed already is
// ResultReceiptReversed.
func (t *Treasury) DecideReversal(ps *Payments, id ReceiptID, reason string, committed Committed, now int64) (Result, *ReceiptReversed, *Payment) {
	r, ok := ps.Receipt(id)
	switch {
	case !ok || r.Mode != t.Mode:
		return ResultReceiptNotFound, nil, nil
	case r.Reversed():
		return ResultReceiptReversed, nil, r
	case len(reason) > ReversalReasonBytesMax:
		return ResultValidation, nil, r
	}
	w := t.wallet(r.Account)
	if r.Amount > w.Available()-committed[w.ID]+t.Credit[w.ID] {
		return ResultInsufficientFunds, nil, r
	}
	return ResultOK, &ReceiptReversed{At: now, Receipt: id, Account: r.Account, Amount: r.Amount, Reason: reason}, r
}

// checkFunds is replay's check of the money events and of a funded
// completion: each must be what the decisions above would have made.
func (s *State) checkFunds(ev Event) error {
	switch ev := ev.(type) {
	case *PaymentReceived:
		return s.checkReceipt(ev)
	case *AccountDeposited:
		t, ok := s.walletTreasury(ev.Account)
		if !ok {
			return fmt.Errorf("unknown wallet %s", ev.Account)
		}
		if err := s.checkReference(ev.Reference, IdentityInbound, t.Wallets[ev.Account], ev.IdempotencyKey); err != nil {
			return err
		}
		req := MoneyRequest{Account: ev.Account, Amount: ev.Amount, Reference: ev.Reference, IdempotencyKey: ev.IdempotencyKey, RequestHash: ev.RequestHash}
		if res, decided, _ := t.DecideDeposit(s.Payments, req, ev.At); decided == nil {
			return fmt.Errorf("deposit of %d to %s refused (%s)", ev.Amount, ev.Account, res)
		}
	case *AccountWithdrawn:
		t, ok := s.walletTreasury(ev.Account)
		if !ok {
			return fmt.Errorf("unknown wallet %s", ev.Account)
		}
		if err := s.checkReference(ev.Reference, IdentityOutbound, t.Wallets[ev.Account], ev.IdempotencyKey); err != nil {
			return err
		}
		req := MoneyRequest{Account: ev.Account, Amount: ev.Amount, Reference: ev.Reference, IdempotencyKey: ev.IdempotencyKey, RequestHash: ev.RequestHash}
		if res, decided, _ := t.DecideWithdrawal(s.Payments, req, nil, ev.At); decided == nil {
			return fmt.Errorf("withdrawal of %d from %s refused (%s)", ev.Amount, ev.Account, res)
		}
	case *ReceiptReversed:
		r, ok := s.Payments.Receipt(ev.Receipt)
		if !ok {
			return fmt.Errorf("reversal of unknown receipt %s", ev.Receipt)
		}
		if r.Account != ev.Account || r.Amount != ev.Amount {
			return fmt.Errorf("reversal of receipt %s names another wallet or amount", ev.Receipt)
		}
		if res, decided, _ := s.Treasuries[r.Mode].DecideReversal(s.Payments, ev.Receipt, ev.Reason, nil, ev.At); decided == nil {
			return fmt.Errorf("reversal of receipt %s refused (%s)", ev.Receipt, res)
		}
	case *CreditLimitSet:
		t, ok := s.walletTreasury(ev.Account)
		if !ok {
			return fmt.Errorf("unknown wallet %s", ev.Account)
		}
		if res, _ := t.DecideCreditLimit(ev.Account, ev.Limit, nil, ev.At); res != ResultOK {
			return fmt.Errorf("credit limit %d on %s refused (%s)", ev.Limit, ev.Account, res)
		}
	case *QuoteCompleted:
		q := s.Quotes.Get(ev.Quote)
		res, f := s.Treasuries[q.Mode].DecideFunding(q, nil)
		switch {
		case res == ResultAccountNotFound || f.Wallet.ID != ev.Wallet:
			return fmt.Errorf("completion of quote %s debits %s, not its source wallet", q.ID, ev.Wallet)
		case ev.Simulated < 0 || ev.Simulated > 0 && q.Mode != ModeSandbox:
			return fmt.Errorf("completion of quote %s simulates %d in %s", q.ID, ev.Simulated, q.Mode)
		case f.Spendable()+ev.Simulated < q.TotalSource():
			return fmt.Errorf("completion of quote %s needs %d, wallet %s can spend %d", q.ID, q.TotalSource(), ev.Wallet, f.Spendable()+ev.Simulated)
		}
	}
	return nil
}

// checkReference checks a prefund's or payout's reference: none (a record
// from before identities, which had no key either), or a well-formed
// identity of kind in the wallet's currency.
func (s *State) checkReference(id Identity, kind IdentityKind, w *Account, key string) error {
	switch {
	case id.IsZero() && key == "":
		return nil
	case id.Kind != kind || !id.valid() || id.Currency != w.Currency:
		return fmt.Errorf("reference %q is not a %v identity in %s", id, kind, w.Currency)
	case len(key) > IdempotencyKeyBytesMax:
		return fmt.Errorf("idempotency key of %d bytes", len(key))
	}
	return nil
}

// checkReceipt is replay's check of a receipt: to a wallet of its quote's
// client and mode, at the quote's pay-in for crypto, and — for a receipt
// with an identity — a well-formed one of its method, chain or currency,
// never recorded before.
func (s *State) checkReceipt(ev *PaymentReceived) error {
	q, t, ok := s.receiptQuote(ev)
	if !ok {
		return fmt.Errorf("receipt to unknown wallet %s", ev.Account)
	}
	switch {
	case ev.Method != ReceiptCrypto && ev.Method != ReceiptBank:
		return fmt.Errorf("receipt method %d", ev.Method)
	case (ev.Method == ReceiptCrypto) != (ev.Address != AddressID{}):
		return fmt.Errorf("a crypto receipt names its pay-in address, a bank receipt none")
	case q.Mode != t.Mode:
		return fmt.Errorf("receipt for a %s quote to a %s wallet", q.Mode, t.Mode)
	case ev.Method == ReceiptCrypto && q.PayIn != nil && q.PayIn.Address != ev.Address:
		return fmt.Errorf("receipt to address %s, not quote %s's pay-in", ev.Address, q.ID)
	}
	id := ev.Identity
	if id.IsZero() {
		if ev.Reference == "" || len(ev.Reference) > ReceiptReferenceBytesMax {
			return fmt.Errorf("receipt reference of %d bytes", len(ev.Reference))
		}
		id = s.legacyReceiptIdentity(ev, t)
	} else if err := s.checkReceiptIdentity(ev, t); err != nil {
		return err
	}
	res, decided, prior := t.DecideReceipt(s.Payments, q, ReceiptRequest{Method: ev.Method, Identity: id, Address: ev.Address, Amount: ev.Amount}, ev.At)
	switch {
	case prior != nil && ev.Identity.IsZero():
		return nil // a receipt from before identities, recorded again under its identity of now
	case res != ResultOK || decided == nil || decided.Account != ev.Account:
		return fmt.Errorf("receipt %s for quote %s refused (%s)", ev.Reference, q.ID, res)
	}
	return nil
}

// checkReceiptIdentity checks that a receipt's identity is well formed, of
// its method (a chain transfer on its pay-in's chain; money in by bank in
// its wallet's currency) and spelled as its reference.
func (s *State) checkReceiptIdentity(ev *PaymentReceived, t *Treasury) error {
	id := ev.Identity
	w := t.Wallets[ev.Account]
	switch {
	case !id.valid() || id.Text() != ev.Reference:
		return fmt.Errorf("receipt identity %q is malformed", id)
	case ev.Method == ReceiptBank && (id.Kind != IdentityInbound || id.Currency != w.Currency):
		return fmt.Errorf("bank receipt identity %q is not money in by bank in %s", id, w.Currency)
	case ev.Method == ReceiptCrypto && id.Kind != IdentityChain:
		return fmt.Errorf("crypto receipt identity %q is not a chain transfer", id)
	case ev.Method == ReceiptCrypto && id.Chain != s.payInChain(ev.Address):
		return fmt.Errorf("crypto receipt identity %q is not on its pay-in's chain", id)
	}
	return nil
}

// payInChain is the chain of a pay-in address (ChainNone if its quote is
// forgotten: then any chain is taken).
func (s *State) payInChain(address AddressID) Chain {
	if q := s.Quotes.Get(s.PayIns[address]); q != nil && q.PayIn != nil {
		return q.PayIn.Chain
	}
	return ChainNone
}

// legacyReceiptIdentity is the identity a receipt recorded before
// identities has by the rules of now.
func (s *State) legacyReceiptIdentity(ev *PaymentReceived, t *Treasury) Identity {
	return legacyIdentity(ev.Method, s.payInChain(ev.Address), t.Wallets[ev.Account].Currency, ev.Reference)
}

// applyFunds applies a checked money event.
func (s *State) applyFunds(ev Event) {
	switch ev := ev.(type) {
	case *PaymentReceived:
		t, _ := s.walletTreasury(ev.Account)
		id := ev.Identity
		if id.IsZero() {
			id = s.legacyReceiptIdentity(ev, t)
		}
		t.ApplyReceipt(s.Payments, ev, id)
		s.oweReceipt(t, ev)
	case *AccountDeposited:
		t, _ := s.walletTreasury(ev.Account)
		t.ApplyDeposit(s.Payments, ev)
	case *AccountWithdrawn:
		t, _ := s.walletTreasury(ev.Account)
		t.ApplyWithdrawal(s.Payments, ev)
	case *ReceiptReversed:
		r, _ := s.Payments.Receipt(ev.Receipt)
		s.Treasuries[r.Mode].ApplyReversal(s.Payments, ev)
	case *CreditLimitSet:
		t, _ := s.walletTreasury(ev.Account)
		t.ApplyCreditLimit(ev)
	}
}

// receiptQuote is the quote a receipt pays and the treasury of its wallet.
// A quote this state has forgotten (ended longer than the retention ago:
// the live registry may still have held it when the receipt came, as it
// forgets by another clock) stands in as what the wallet says of it — its
// client, mode and source currency — so a late transfer is still the
// partner's, and replay takes it.
func (s *State) receiptQuote(ev *PaymentReceived) (*Quote, *Treasury, bool) {
	t, ok := s.walletTreasury(ev.Account)
	if !ok {
		return nil, nil, false
	}
	if q := s.Quotes.Get(ev.Quote); q != nil {
		return q, t, true
	}
	q := receiptSubject(t, ev)
	return &q, t, true
}
