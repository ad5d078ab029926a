package actors

import (
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
)

// Funds first (engine/funds.go): the treasury actor of a mode owns every
// wallet of that mode, so it alone decides what a wallet may spend.
//
//  1. A completion: the quote actor decides the transition (the quote must
//     await payment), then asks the treasury (fundCompletion, a request):
//     the treasury decides the funding with engine.Treasury.DecideFunding
//     against the wallet less what it has already promised to completions
//     in flight (committed), and promises this one's share. The quote actor
//     logs the funded QuoteCompleted; once durable the debit reaches the
//     treasury with the rest of the outcome (walletsSettled), which turns
//     the promise into the posting; if the append fails, fundsReleased
//     withdraws the promise.
//  2. Receipts, payouts and credit limits are the treasury's own writes:
//     decided (against committed too), applied, logged — as a deposit is.
//  3. Reads of statements go through the treasury's mailbox (consistent);
//     receipts per quote are published (receiptViews) for the gateway's
//     quote and pay-in views, which read without messaging.

// fundCompletion asks a treasury actor to fund the completion of quote.
// Reply: *fundingReply.
type fundCompletion struct{ quote *engine.Quote }

// fundingReply answers fundCompletion: on ResultOK the treasury has
// promised Funding's share of the wallet to this completion.
type fundingReply struct {
	result  engine.Result
	funding engine.Funding
	err     error // the treasury failed (a fault): nothing promised
}

// fundsReleased withdraws a promise whose completion was not logged.
type fundsReleased struct {
	wallet engine.AccountID
	amount engine.Amount
}

// walletsSettled carries a durable completion's wallet parts (debit of the
// source wallet, credit of a destination wallet; either may be nil) to the
// treasury actor, which applies them and then sends reply (if any) to
// replyTo: a partner that reads its balances after the completion's 200
// sees both.
type walletsSettled struct {
	debit   *engine.WalletDebit
	credit  *engine.WalletCredit
	replyTo *actor.PID
	reply   *QuoteReply
}

// WithdrawAccount asks a treasury actor to pay a wallet's money out
// (wallet → clearing). Reply: *AccountReply.
type WithdrawAccount struct {
	Account engine.AccountID
	Amount  engine.Amount
}

// SetCreditLimit asks a treasury actor to set a wallet's credit limit.
// Reply: *CreditReply.
type SetCreditLimit struct {
	Account engine.AccountID
	Limit   engine.Amount
}

// CreditReply answers SetCreditLimit.
type CreditReply struct {
	Result  engine.Result
	Account *engine.Account
	Limit   engine.Amount
	Err     error
}

// recordReceipt asks a treasury actor to credit a payment received for
// quote. Reply: *ReceiptReply.
type recordReceipt struct {
	quote     *engine.Quote
	method    engine.ReceiptMethod
	address   engine.AddressID
	amount    engine.Amount
	reference string
}

// ReceiptReply answers a receipt: the receipt recorded (a new one, or the
// one recorded before under the same key: Repeated).
type ReceiptReply struct {
	Result   engine.Result
	Receipt  *engine.PaymentReceived
	Repeated bool
	Err      error
}

// readStatement asks a treasury actor for a page of a wallet's statement.
// Reply: *StatementReply.
type readStatement struct {
	account engine.AccountID
	after   uint64
	limit   int
}

// StatementReply answers a statement read. Known is false when the
// cursor names no posting of the wallet (unknown, or forgotten).
type StatementReply struct {
	Postings []engine.Posting
	More     bool
	Known    bool
	Err      error
}

// forgetFunds tells a treasury actor to forget postings and receipts older
// than cutoff (System.Maintain).
type forgetFunds struct{ cutoff int64 }

// receiptViews publishes each quote's receipts for readers: quote id →
// []*engine.PaymentReceived, a new slice each time (never modified).
type receiptViews struct{ m sync.Map }

func (r *receiptViews) of(q engine.QuoteID) []*engine.PaymentReceived {
	v, ok := r.m.Load(q)
	if !ok {
		return nil
	}
	return v.([]*engine.PaymentReceived)
}

// publish replaces q's receipts with the treasury's list.
func (r *receiptViews) publish(q engine.QuoteID, list []*engine.PaymentReceived) {
	if len(list) == 0 {
		r.m.Delete(q)
		return
	}
	r.m.Store(q, append([]*engine.PaymentReceived(nil), list...))
}

// fund decides a completion's funding (step 1 above).
func (a *treasuryActor) fund(ctx actor.Context, q *engine.Quote) {
	res, f := a.treasury.DecideFunding(q, a.committed)
	if res == engine.ResultOK {
		a.committed.Promise(f.Wallet.ID, f.Reserved())
	}
	ctx.Respond(&fundingReply{result: res, funding: f})
}

// settle applies a durable completion's wallet parts.
func (a *treasuryActor) settle(ctx actor.Context, msg *walletsSettled) {
	if d := msg.debit; d != nil {
		a.committed.Release(d.Account, d.Amount-d.Simulated)
		a.treasury.ApplyDebit(d)
		a.publish(d.Account)
	}
	if c := msg.credit; c != nil {
		a.treasury.ApplyCredit(c)
		a.publish(c.Account)
	}
	if msg.reply != nil {
		ctx.Send(msg.replyTo, msg.reply)
	}
}

// withdraw decides, applies and logs an operator's payout.
func (a *treasuryActor) withdraw(ctx actor.Context, cmd *WithdrawAccount) {
	if err := a.sys.writable(); err != nil {
		ctx.Respond(&AccountReply{Err: err})
		return
	}
	res, ev := a.treasury.DecideWithdrawal(cmd.Account, cmd.Amount, a.committed, a.sys.nowMillis())
	if ev == nil {
		ctx.Respond(&AccountReply{Result: res})
		return
	}
	a.treasury.ApplyWithdrawal(ev)
	a.logged(ctx, ev, cmd.Account)
}

// logged appends ev, already applied to the wallet account, and answers
// the requester with the wallet once it is durable.
func (a *treasuryActor) logged(ctx actor.Context, ev engine.Event, account engine.AccountID) {
	view := a.publish(account)
	replyTo := ctx.Sender()
	a.sys.appendThen(func(err error) (*actor.PID, any) {
		if err != nil {
			return replyTo, &AccountReply{Err: err}
		}
		return replyTo, &AccountReply{Result: engine.ResultOK, Account: view}
	}, ev)
}

// setCredit decides, applies and logs a credit limit.
func (a *treasuryActor) setCredit(ctx actor.Context, cmd *SetCreditLimit) {
	if err := a.sys.writable(); err != nil {
		ctx.Respond(&CreditReply{Err: err})
		return
	}
	res, ev := a.treasury.DecideCreditLimit(cmd.Account, cmd.Limit, a.committed, a.sys.nowMillis())
	if ev == nil {
		ctx.Respond(&CreditReply{Result: res})
		return
	}
	a.treasury.ApplyCreditLimit(ev)
	view := a.publish(cmd.Account)
	replyTo := ctx.Sender()
	a.sys.appendThen(func(err error) (*actor.PID, any) {
		if err != nil {
			return replyTo, &CreditReply{Err: err}
		}
		return replyTo, &CreditReply{Result: engine.ResultOK, Account: view, Limit: ev.Limit}
	}, ev)
}

// receive decides, applies and logs a payment received.
func (a *treasuryActor) receive(ctx actor.Context, cmd *recordReceipt) {
	if err := a.sys.writable(); err != nil {
		ctx.Respond(&ReceiptReply{Err: err})
		return
	}
	res, ev := a.treasury.DecideReceipt(cmd.quote, cmd.method, cmd.address, cmd.amount, cmd.reference, a.sys.nowMillis())
	key := engine.ReceiptKey{Method: cmd.method, Address: cmd.address, Reference: cmd.reference}
	if waiting, inFlight := a.receiving[key]; inFlight && ev == nil && res == engine.ResultOK {
		a.receiving[key] = append(waiting, ctx.Sender()) // a repeat: answered once the first is durable
		return
	}
	if ev == nil {
		reply := &ReceiptReply{Result: res}
		if res == engine.ResultOK {
			reply.Receipt, _ = a.treasury.Receipt(key)
			reply.Repeated = true
		}
		ctx.Respond(reply)
		return
	}
	a.treasury.ApplyReceipt(ev)
	a.publish(ev.Account)
	a.sys.receipts.publish(ev.Quote, a.treasury.ReceiptsOf(ev.Quote))
	a.receiving[key] = []*actor.PID{ctx.Sender()}
	self := ctx.Self()
	a.sys.appendThen(func(err error) (*actor.PID, any) {
		return self, &receiptDurable{key: key, receipt: ev, err: err}
	}, ev)
}

// receiptDurable finishes a receipt's append: its requester and every
// repeat that came while it was in flight get the answer now, so no 2xx
// reports a receipt that is not yet on disk.
type receiptDurable struct {
	key     engine.ReceiptKey
	receipt *engine.PaymentReceived
	err     error
}

func (a *treasuryActor) receiptDone(ctx actor.Context, msg *receiptDurable) {
	reply := &ReceiptReply{Result: engine.ResultOK, Receipt: msg.receipt}
	if msg.err != nil {
		reply = &ReceiptReply{Err: msg.err}
	}
	for i, to := range a.receiving[msg.key] {
		r := *reply
		r.Repeated = i > 0 && msg.err == nil
		ctx.Send(to, &r)
	}
	delete(a.receiving, msg.key)
}

// forget drops what the retention allows and republishes the receipts of
// the quotes it touched.
func (a *treasuryActor) forget(cutoff int64) {
	_, touched := a.treasury.Forget(cutoff)
	for _, q := range touched {
		a.sys.receipts.publish(q, a.treasury.ReceiptsOf(q))
	}
}

// ---- System: the funds API ------------------------------------------------

// fundCompletion asks q's treasury to fund its completion (called by q's
// actor; the treasury never waits on a quote actor, so this cannot
// deadlock).
func (s *System) fundCompletion(q *engine.Quote) (*fundingReply, error) {
	reply, err := ask[*fundingReply](s, s.treasuries[q.Mode], &fundCompletion{quote: q})
	if err != nil {
		return nil, err
	}
	if reply.err != nil {
		return nil, reply.err
	}
	return reply, nil
}

// treasuryOfWallet finds a wallet's treasury; ok is false for an account
// that is not a wallet.
func (s *System) treasuryOfWallet(id engine.AccountID) (*actor.PID, bool) {
	a, ok := s.Account(id)
	if !ok || a.Kind != engine.AccountWallet {
		return nil, false
	}
	return s.treasuries[a.Mode], true
}

// WithdrawAccount pays a wallet's available money out (operator).
func (s *System) WithdrawAccount(cmd *WithdrawAccount) *AccountReply {
	pid, ok := s.treasuryOfWallet(cmd.Account)
	if !ok {
		return &AccountReply{Result: engine.ResultAccountNotFound}
	}
	if err := s.writable(); err != nil {
		return &AccountReply{Err: err}
	}
	reply, err := ask[*AccountReply](s, pid, cmd)
	if err != nil {
		return &AccountReply{Err: err}
	}
	return reply
}

// SetCreditLimit sets the credit limit of a client's wallet in a mode and
// currency (operator).
func (s *System) SetCreditLimit(client engine.ClientID, m engine.Mode, c engine.Currency, limit engine.Amount) *CreditReply {
	wallet, ok := s.wallet(client, m, c)
	if !ok {
		return &CreditReply{Result: engine.ResultClientNotFound}
	}
	if err := s.writable(); err != nil {
		return &CreditReply{Err: err}
	}
	reply, err := ask[*CreditReply](s, s.treasuries[m], &SetCreditLimit{Account: wallet, Limit: limit})
	if err != nil {
		return &CreditReply{Err: err}
	}
	return reply
}

// wallet finds a client's wallet in mode m and currency c.
func (s *System) wallet(client engine.ClientID, m engine.Mode, c engine.Currency) (engine.AccountID, bool) {
	cl, ok := s.Client(client)
	if !ok {
		return engine.AccountID{}, false
	}
	for _, w := range cl.Wallets {
		if w.Mode == m && w.Currency == c {
			return w.Account, true
		}
	}
	return engine.AccountID{}, false
}

// CreditLimit is the credit limit of a wallet, read through its treasury.
func (s *System) CreditLimit(wallet engine.AccountID) (engine.Amount, error) {
	pid, ok := s.treasuryOfWallet(wallet)
	if !ok {
		return 0, nil
	}
	t, err := ask[*engine.Treasury](s, pid, &treasurySnapshot{})
	if err != nil {
		return 0, err
	}
	return t.CreditLimit(wallet), nil
}

// RecordCryptoReceipt credits a deposit seen on chain to a pay-in
// address (an operator's POST /admin/v1/payins/{addressId}/seen),
// whatever its quote's status: money received is never orphaned.
func (s *System) RecordCryptoReceipt(address engine.AddressID, amount engine.Amount, txHash string) *ReceiptReply {
	q, ok := s.PayInQuote(address)
	if !ok || q.PayIn == nil {
		return &ReceiptReply{Result: engine.ResultPayInNotFound}
	}
	return s.recordReceipt(&recordReceipt{quote: q, method: engine.ReceiptCrypto, address: address, amount: amount, reference: txHash})
}

// RecordBankReceipt credits a bank transfer carrying a quote's reference
// (an operator's POST /admin/v1/payins/bank). ResultQuoteNotFound when no
// held quote of a fiat source has that reference.
func (s *System) RecordBankReceipt(reference string, amount engine.Amount, bankTransactionID string) *ReceiptReply {
	q, ok := s.QuoteByReference(reference)
	if !ok {
		return &ReceiptReply{Result: engine.ResultQuoteNotFound}
	}
	return s.recordReceipt(&recordReceipt{quote: q, method: engine.ReceiptBank, amount: amount, reference: bankTransactionID})
}

// QuoteByReference finds a held quote of a fiat source by its bank pay-in
// reference.
func (s *System) QuoteByReference(reference string) (*engine.Quote, bool) {
	id, ok := s.references.lookup(reference, &s.quotes)
	if !ok {
		return nil, false
	}
	q, ok := s.AnyQuote(id)
	if !ok || q.Pair.Source.IsToken() {
		return nil, false
	}
	return q, true
}

func (s *System) recordReceipt(cmd *recordReceipt) *ReceiptReply {
	if err := s.writable(); err != nil {
		return &ReceiptReply{Err: err}
	}
	reply, err := ask[*ReceiptReply](s, s.treasuries[cmd.quote.Mode], cmd)
	if err != nil {
		return &ReceiptReply{Err: err}
	}
	return reply
}

// Receipts returns the payments received for a quote, oldest first.
func (s *System) Receipts(q engine.QuoteID) []*engine.PaymentReceived { return s.receipts.of(q) }

// Statement reads a page of a wallet's statement, newest first, after the
// posting with sequence after (0: from the newest).
func (s *System) Statement(wallet engine.AccountID, after uint64, limit int) *StatementReply {
	pid, ok := s.treasuryOfWallet(wallet)
	if !ok {
		return &StatementReply{}
	}
	reply, err := ask[*StatementReply](s, pid, &readStatement{account: wallet, after: after, limit: limit})
	if err != nil {
		return &StatementReply{Err: err}
	}
	return reply
}

// OperatorComplete completes any client's quote for an operator, under
// the same funding rule as the partner's completion.
func (s *System) OperatorComplete(id engine.QuoteID) *QuoteReply {
	ref, ok := s.quoteRef(id)
	if !ok {
		return &QuoteReply{Result: engine.ResultQuoteNotFound}
	}
	client, mode := ref.owner()
	return s.TransitionQuote(client, mode, id, &TransitionQuote{Operation: OperationComplete})
}

// referenceIndex finds a quote by its bank pay-in reference, for bank
// receipts. Built on first use from one pass over the registry (a start
// with a million quotes builds nothing; an operator's first bank receipt
// pays the pass) and kept from then on, as the listing index is.
type referenceIndex struct {
	built atomic.Bool
	mu    sync.Mutex
	m     map[string]engine.QuoteID
}

// add indexes a newly registered quote once the index is built.
// REQUIRES: the quote is in the registry already (see lookup's NB).
func (x *referenceIndex) add(q *engine.Quote) {
	if !x.built.Load() || q.Reference == "" {
		return
	}
	x.mu.Lock()
	x.m[q.Reference] = q.ID
	x.mu.Unlock()
}

// drop removes the references of quotes the registry forgot.
func (x *referenceIndex) drop(refs []string) {
	if !x.built.Load() {
		return
	}
	x.mu.Lock()
	for _, r := range refs {
		delete(x.m, r)
	}
	x.mu.Unlock()
}

func (x *referenceIndex) lookup(reference string, registry *quoteRegistry) (engine.QuoteID, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.built.Load() {
		x.m = make(map[string]engine.QuoteID)
		// NB: built is set before the pass: a quote registered from now on
		// adds itself (waiting on mu), and one registered before is in the
		// registry for the pass to find.
		x.built.Store(true)
		registry.Range(func(id engine.QuoteID, ref *quoteRef) bool {
			if r := ref.view.Load().Reference; r != "" {
				x.m[r] = id
			}
			return true
		})
	}
	id, ok := x.m[reference]
	return id, ok
}
