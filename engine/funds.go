package engine

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"slices"
)

// Funds first (contract §4 Complete, §15.1): money arrives before it moves.
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
	// transaction id.
	ReceiptReferenceBytesMax = 128
)

// PaymentReceived: a payment for a quote arrived and is credited to the
// partner's wallet in the quote's source currency and mode (clearing →
// wallet). Idempotent by ReceiptKey: the same key is never credited twice.
type PaymentReceived struct {
	At        int64
	Method    ReceiptMethod
	Quote     QuoteID
	Account   AccountID // the wallet credited
	Amount    Amount
	Reference string    // the transaction hash (crypto) or bank transaction id
	Address   AddressID // crypto: the pay-in address it was sent to; zero for bank
}

// ReceiptKey identifies a receipt for idempotency: a bank transaction id is
// unique per mode; a transaction hash per pay-in address (one transaction
// may pay several addresses).
type ReceiptKey struct {
	Method    ReceiptMethod
	Address   AddressID
	Reference string
}

// Key is the receipt's idempotency key.
func (ev *PaymentReceived) Key() ReceiptKey {
	return ReceiptKey{Method: ev.Method, Address: ev.Address, Reference: ev.Reference}
}

// AccountWithdrawn: an operator's payout, wallet → clearing.
type AccountWithdrawn struct {
	At      int64
	Account AccountID
	Amount  Amount
}

// CreditLimitSet: a wallet may go down to −Limit on completion.
type CreditLimitSet struct {
	At      int64
	Account AccountID // the wallet (client, mode and currency)
	Limit   Amount    // >= 0
}

func (*PaymentReceived) Type() EventType  { return EventPaymentReceived }
func (*AccountWithdrawn) Type() EventType { return EventAccountWithdrawn }
func (*CreditLimitSet) Type() EventType   { return EventCreditLimitSet }

func (e *PaymentReceived) Time() int64  { return e.At }
func (e *AccountWithdrawn) Time() int64 { return e.At }
func (e *CreditLimitSet) Time() int64   { return e.At }

// PostingType is what a wallet posting was (the statement's type).
type PostingType uint8

const (
	PostingDeposit        PostingType = iota + 1 // an operator's prefunding
	PostingPayIn                                 // a receipt: crypto deposit or bank transfer
	PostingSimulatedPayIn                        // sandbox: the shortfall a completion simulated
	PostingSettlement                            // a completion: source debited, or destination credited
	PostingWithdrawal                            // an operator's payout
	postingTypeEnd
)

var postingTypeNames = [postingTypeEnd]string{"", "deposit", "payin", "simulated_payin", "settlement", "withdrawal"}

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
	Reference    string  // the quote's reference, a transaction hash or a bank transaction id
	At           int64
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
func (t *Treasury) post(w *Account, typ PostingType, amount Amount, quote QuoteID, reference string, at int64) {
	t.Clearing[w.Currency] -= amount
	w.Balance += amount
	t.PostingSeq++
	t.History[w.ID] = appendPosting(t.History[w.ID], Posting{Seq: t.PostingSeq, Type: typ, Amount: amount,
		BalanceAfter: w.Balance, Quote: quote, Reference: reference, At: at})
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

// ApplyDeposit posts an operator's prefunding: clearing → wallet.
func (t *Treasury) ApplyDeposit(ev *AccountDeposited) {
	t.post(t.wallet(ev.Account), PostingDeposit, ev.Amount, QuoteID{}, "", ev.At)
}

// ApplyWithdrawal posts an operator's payout: wallet → clearing.
func (t *Treasury) ApplyWithdrawal(ev *AccountWithdrawn) {
	t.post(t.wallet(ev.Account), PostingWithdrawal, -ev.Amount, QuoteID{}, "", ev.At)
}

// ApplyReceipt posts a payment received (clearing → wallet) and indexes it.
func (t *Treasury) ApplyReceipt(ev *PaymentReceived) {
	t.post(t.wallet(ev.Account), PostingPayIn, ev.Amount, ev.Quote, ev.Reference, ev.At)
	t.Receipts[ev.Key()] = ev
	t.receiptsOf[ev.Quote] = append(t.receiptsOf[ev.Quote], ev)
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

// ReceiptsOf returns the receipts credited for quote q, in log order.
func (t *Treasury) ReceiptsOf(q QuoteID) []*PaymentReceived { return t.receiptsOf[q] }

// ReceiptsByQuote yields each quote that has receipts with them, in log
// order (no quote twice).
func (t *Treasury) ReceiptsByQuote() iter.Seq2[QuoteID, []*PaymentReceived] {
	return maps.All(t.receiptsOf)
}

// Receipt returns the receipt recorded under key, if any.
func (t *Treasury) Receipt(key ReceiptKey) (*PaymentReceived, bool) {
	r, ok := t.Receipts[key]
	return r, ok
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

// Forget drops the postings and receipts older than cutoff (unix ms): the
// retention rule of State.ForgetEnded. It returns how many it dropped and
// the quotes whose receipts it dropped (their ReceiptsOf changed).
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
	for key, r := range t.Receipts {
		if r.At < cutoff {
			delete(t.Receipts, key)
			dropped++
		}
	}
	for q, rs := range t.receiptsOf {
		kept := slices.DeleteFunc(rs, func(r *PaymentReceived) bool { return r.At < cutoff })
		switch {
		case len(kept) == len(rs):
			continue
		case len(kept) == 0:
			delete(t.receiptsOf, q)
		default:
			t.receiptsOf[q] = kept
		}
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
// client's wallet in q's source currency: the rule of contract §4
// Complete, shared by the live treasury actor, replay's check and the
// tests, against the wallet less what is committed to other completions. A sandbox
// completion the wallet cannot cover is funded by a simulated pay-in of
// the shortfall; a live one is refused with ResultInsufficientFunds.
func (t *Treasury) DecideFunding(q *Quote, committed Committed) (Result, Funding) {
	w, ok := t.Wallet(q.Client, q.Pair.Source)
	if !ok {
		return ResultAccountNotFound, Funding{}
	}
	f := Funding{Wallet: w, Required: q.TotalSource, Available: w.Available() - committed[w.ID], Credit: t.Credit[w.ID]}
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
func (ev *QuoteCompleted) Reserved(q *Quote) Amount { return q.TotalSource - ev.Simulated }

// DecideWithdrawal decides an operator's payout from a wallet: at most its
// available balance less what is committed in flight; credit is not paid
// out.
func (t *Treasury) DecideWithdrawal(wallet AccountID, amount Amount, committed Committed, now int64) (Result, *AccountWithdrawn) {
	w, ok := t.Wallets[wallet]
	switch {
	case !ok:
		return ResultAccountNotFound, nil
	case amount <= 0 || amount > AmountMax:
		return ResultAmountOutOfRange, nil
	case amount > w.Available()-committed[wallet]:
		return ResultInsufficientFunds, nil
	}
	return ResultOK, &AccountWithdrawn{At: now, Account: wallet, Amount: amount}
}

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

// DecideReceipt decides a payment received for q: the same key again with
// the same amount is a safe repeat (ResultOK, no event, the receipt
// recorded); with another amount ResultReceiptConflict.
func (t *Treasury) DecideReceipt(q *Quote, method ReceiptMethod, address AddressID, amount Amount, reference string, now int64) (Result, *PaymentReceived) {
	key := ReceiptKey{Method: method, Address: address, Reference: reference}
	if r, ok := t.Receipts[key]; ok {
		if r.Amount == amount && r.Quote == q.ID {
			return ResultOK, nil
		}
		return ResultReceiptConflict, nil
	}
	w, ok := t.Wallet(q.Client, q.Pair.Source)
	switch {
	case !ok:
		return ResultAccountNotFound, nil
	case !DepositFits(w.Balance, amount):
		return ResultAmountOutOfRange, nil
	case reference == "" || len(reference) > ReceiptReferenceBytesMax:
		return ResultValidation, nil
	}
	return ResultOK, &PaymentReceived{At: now, Method: method, Quote: q.ID, Account: w.ID, Amount: amount,
		Reference: reference, Address: address}
}

// checkFunds is replay's check of the money events and of a funded
// completion: each must be what the decisions above would have made.
func (s *State) checkFunds(ev Event) error {
	switch ev := ev.(type) {
	case *PaymentReceived:
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
		res, decided := t.DecideReceipt(q, ev.Method, ev.Address, ev.Amount, ev.Reference, ev.At)
		if res != ResultOK || decided == nil || decided.Account != ev.Account {
			return fmt.Errorf("receipt %s for quote %s refused (%s)", ev.Reference, q.ID, res)
		}
	case *AccountWithdrawn:
		t, ok := s.walletTreasury(ev.Account)
		if !ok {
			return fmt.Errorf("unknown wallet %s", ev.Account)
		}
		if res, _ := t.DecideWithdrawal(ev.Account, ev.Amount, nil, ev.At); res != ResultOK {
			return fmt.Errorf("withdrawal of %d from %s refused (%s)", ev.Amount, ev.Account, res)
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
		case f.Spendable()+ev.Simulated < q.TotalSource:
			return fmt.Errorf("completion of quote %s needs %d, wallet %s can spend %d", q.ID, q.TotalSource, ev.Wallet, f.Spendable()+ev.Simulated)
		}
	}
	return nil
}

// applyFunds applies a checked money event.
func (s *State) applyFunds(ev Event) {
	switch ev := ev.(type) {
	case *PaymentReceived:
		t, _ := s.walletTreasury(ev.Account)
		t.ApplyReceipt(ev)
		s.oweReceipt(t, ev)
	case *AccountWithdrawn:
		t, _ := s.walletTreasury(ev.Account)
		t.ApplyWithdrawal(ev)
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
