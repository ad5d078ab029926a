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
// (wallet → clearing) under the payout's reference. Reply: *AccountReply.
type WithdrawAccount struct {
	Audited
	engine.MoneyRequest
}

// SetCreditLimit asks a treasury actor to set a wallet's credit limit.
// Reply: *CreditReply.
type SetCreditLimit struct {
	Audited
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
	Audited
	quote   *engine.Quote
	request engine.ReceiptRequest
}

// ReceiptReply answers a receipt and a reversal: the receipt recorded (a
// copy; on a repeat — Repeated — or a conflict, the one recorded first
// under its identity).
type ReceiptReply struct {
	Result   engine.Result
	Receipt  *engine.Payment
	Repeated bool
	Err      error
}

// reverseReceipt asks the treasury actor of a receipt's mode to take it
// back. Reply: *ReceiptReply (the receipt, reversed).
type reverseReceipt struct {
	Audited
	receipt engine.ReceiptID
	reason  string
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
// []engine.Payment, copies made each time (never modified).
type receiptViews struct{ m sync.Map }

func (r *receiptViews) of(q engine.QuoteID) []engine.Payment {
	v, ok := r.m.Load(q)
	if !ok {
		return nil
	}
	return v.([]engine.Payment)
}

// publish replaces q's receipts with copies of the treasury's list.
func (r *receiptViews) publish(q engine.QuoteID, list []*engine.Payment) {
	if len(list) == 0 {
		r.m.Delete(q)
		return
	}
	out := make([]engine.Payment, len(list))
	for i, p := range list {
		out[i] = *p
	}
	r.m.Store(q, out)
}

// payments is the record of payments (engine.Payments), shared by the two
// treasury actors: a bank transfer's identity is one across both modes, so
// each decides against, and records in, the same record, under mu — a
// decision and its record are one step. Readers (the duplicates listing)
// take mu too.
type payments struct {
	mu sync.Mutex
	p  *engine.Payments
}

// flight is a payment whose append is in flight: who waits for its answer
// (the requester, then each repeat that came meanwhile) and the answer.
type flight struct {
	waiters []*actor.PID
	answer  func(err error, repeated bool) any
}

// paymentDurable finishes a payment's append: its requester and every
// repeat that came while it was in flight get the answer now, so no 2xx
// reports a payment that is not yet on disk.
type paymentDurable struct {
	identity engine.Identity
	err      error
}

// recordPayment appends a decided payment's events (with the operator's
// audit line) and answers its requester once durable.
func (a *treasuryActor) recordPayment(ctx actor.Context, id engine.Identity, answer func(error, bool) any, evs ...engine.Event) {
	a.inFlight[id] = &flight{waiters: []*actor.PID{ctx.Sender()}, answer: answer}
	self := addressOf(ctx, a)
	a.sys.appendThen(func(err error) delivery {
		return deliver(self, &paymentDurable{identity: id, err: err})
	}, evs...)
}

// repeat answers a payment decided as a repeat of prior: once prior is
// durable, if its append is in flight; at once otherwise.
func (a *treasuryActor) repeat(ctx actor.Context, prior *engine.Payment, answer func(error, bool) any) {
	if f, ok := a.inFlight[prior.Identity]; ok && prior.Mode == a.treasury.Mode {
		f.waiters = append(f.waiters, ctx.Sender())
		return
	}
	ctx.Respond(answer(nil, true))
}

func (a *treasuryActor) paymentDone(ctx actor.Context, msg *paymentDurable) {
	f := a.inFlight[msg.identity]
	delete(a.inFlight, msg.identity)
	for i, to := range f.waiters {
		ctx.Send(to, f.answer(msg.err, i > 0))
	}
}

// copyOf is a copy of p for a reply (nil for none), read under the
// record's lock.
func (a *treasuryActor) copyOf(p *engine.Payment) *engine.Payment {
	if p == nil {
		return nil
	}
	a.sys.payments.mu.Lock()
	c := *p
	a.sys.payments.mu.Unlock()
	return &c
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
	ps := &a.sys.payments
	ps.mu.Lock()
	res, ev, prior := a.treasury.DecideWithdrawal(ps.p, cmd.MoneyRequest, a.committed, a.sys.nowMillis())
	var made engine.Event // nil, not a nil *AccountWithdrawn, when nothing is made
	if ev != nil {
		a.treasury.ApplyWithdrawal(ps.p, ev)
		made = ev
	}
	ps.mu.Unlock()
	a.moneyMoved(ctx, cmd.Account, cmd.Audit, res, made, prior)
}

// deposit decides, applies and logs an operator's prefund.
func (a *treasuryActor) deposit(ctx actor.Context, cmd *DepositAccount) {
	if err := a.sys.writable(); err != nil {
		ctx.Respond(&AccountReply{Err: err})
		return
	}
	ps := &a.sys.payments
	ps.mu.Lock()
	res, ev, prior := a.treasury.DecideDeposit(ps.p, cmd.MoneyRequest, a.sys.nowMillis())
	var made engine.Event // nil, not a nil *AccountDeposited, when nothing is made
	if ev != nil {
		a.treasury.ApplyDeposit(ps.p, ev)
		made = ev
	}
	ps.mu.Unlock()
	a.moneyMoved(ctx, cmd.Account, cmd.Audit, res, made, prior)
}

// moneyMoved answers a prefund or payout decided (ev applied, or a repeat
// or refusal) and logs ev with its audit line.
func (a *treasuryActor) moneyMoved(ctx actor.Context, account engine.AccountID, audit *engine.OperatorActed,
	res engine.Result, ev engine.Event, prior *engine.Payment) {
	view := a.publish(account)
	answer := func(err error, repeated bool) any {
		if err != nil {
			return &AccountReply{Err: err}
		}
		return &AccountReply{Result: engine.ResultOK, Account: view, Repeated: repeated, Payment: a.paymentOf(ev, prior)}
	}
	switch {
	case ev == nil && res == engine.ResultOK && prior != nil:
		a.repeat(ctx, prior, answer)
	case ev == nil:
		ctx.Respond(&AccountReply{Result: res, Account: view, Payment: a.copyOf(prior)})
	default:
		id := paymentIdentity(ev)
		if id.IsZero() { // no reference: answered on its own
			replyTo := ctx.Sender()
			a.sys.appendThen(func(err error) delivery { return replyWith(replyTo, answer(err, false)) },
				a.sys.audited(audit, view.Currency, ev)...)
			return
		}
		a.recordPayment(ctx, id, answer, a.sys.audited(audit, view.Currency, ev)...)
	}
}

// paymentOf is the payment ev recorded (or prior, for a repeat), copied.
func (a *treasuryActor) paymentOf(ev engine.Event, prior *engine.Payment) *engine.Payment {
	if prior != nil {
		return a.copyOf(prior)
	}
	if id := paymentIdentity(ev); !id.IsZero() {
		a.sys.payments.mu.Lock()
		p, _ := a.sys.payments.p.Lookup(id)
		a.sys.payments.mu.Unlock()
		return a.copyOf(p)
	}
	return nil
}

// paymentIdentity is the identity a prefund or payout event records
// (zero: none).
func paymentIdentity(ev engine.Event) engine.Identity {
	switch ev := ev.(type) {
	case *engine.AccountDeposited:
		return ev.Reference
	case *engine.AccountWithdrawn:
		return ev.Reference
	}
	return engine.Identity{}
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
	a.sys.appendThen(func(err error) delivery {
		if err != nil {
			return replyWith(replyTo, &CreditReply{Err: err})
		}
		return replyWith(replyTo, &CreditReply{Result: engine.ResultOK, Account: view, Limit: ev.Limit})
	}, a.sys.audited(cmd.Audit, view.Currency, ev)...)
}

// receive decides, applies and logs a payment received.
func (a *treasuryActor) receive(ctx actor.Context, cmd *recordReceipt) {
	if err := a.sys.writable(); err != nil {
		ctx.Respond(&ReceiptReply{Err: err})
		return
	}
	ps := &a.sys.payments
	ps.mu.Lock()
	res, ev, prior := a.treasury.DecideReceipt(ps.p, cmd.quote, cmd.request, a.sys.nowMillis())
	var recorded *engine.Payment
	if ev != nil {
		recorded = a.treasury.ApplyReceipt(ps.p, ev, ev.Identity)
		prior = recorded
	}
	var c engine.Payment
	if prior != nil {
		c = *prior
	}
	ps.mu.Unlock()
	answer := func(err error, repeated bool) any {
		if err != nil {
			return &ReceiptReply{Err: err}
		}
		return &ReceiptReply{Result: engine.ResultOK, Receipt: &c, Repeated: repeated}
	}
	switch {
	case ev == nil && res == engine.ResultOK:
		a.repeat(ctx, prior, answer)
		return
	case ev == nil:
		reply := &ReceiptReply{Result: res}
		if prior != nil {
			reply.Receipt = &c
		}
		ctx.Respond(reply)
		return
	}
	a.publish(ev.Account)
	a.sys.receipts.publish(ev.Quote, a.treasury.ReceiptsOf(ev.Quote))
	a.recordPayment(ctx, ev.Identity, answer, a.sys.audited(cmd.Audit, c.Currency, ev)...)
}

// reverse decides, applies and logs taking a receipt back.
func (a *treasuryActor) reverse(ctx actor.Context, cmd *reverseReceipt) {
	if err := a.sys.writable(); err != nil {
		ctx.Respond(&ReceiptReply{Err: err})
		return
	}
	ps := &a.sys.payments
	ps.mu.Lock()
	res, ev, r := a.treasury.DecideReversal(ps.p, cmd.receipt, cmd.reason, a.committed, a.sys.nowMillis())
	if ev != nil {
		a.treasury.ApplyReversal(ps.p, ev)
	}
	var c engine.Payment
	if r != nil {
		c = *r
	}
	ps.mu.Unlock()
	if ev == nil {
		reply := &ReceiptReply{Result: res}
		if r != nil {
			reply.Receipt = &c
		}
		ctx.Respond(reply)
		return
	}
	a.publish(ev.Account)
	a.sys.receipts.publish(c.Quote, a.treasury.ReceiptsOf(c.Quote))
	replyTo := ctx.Sender()
	a.sys.appendThen(func(err error) delivery {
		if err != nil {
			return replyWith(replyTo, &ReceiptReply{Err: err})
		}
		return replyWith(replyTo, &ReceiptReply{Result: engine.ResultOK, Receipt: &c})
	}, a.sys.audited(cmd.Audit, c.Currency, ev)...)
}

// forget drops what the retention allows and republishes the receipts of
// the quotes it touched.
func (a *treasuryActor) forget(cutoff int64) {
	a.sys.payments.mu.Lock() // the views read the payments
	defer a.sys.payments.mu.Unlock()
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
func (s *System) treasuryOfWallet(id engine.AccountID) (address[*treasuryActor], bool) {
	a, ok := s.Account(id)
	if !ok || a.Kind != engine.AccountWallet {
		return address[*treasuryActor]{}, false
	}
	return s.treasuries[a.Mode], true
}

// WithdrawAccount pays a wallet's available money out (operator).
func (s *System) WithdrawAccount(cmd *WithdrawAccount) *AccountReply {
	return s.moveMoney(cmd.Account, cmd)
}

// DepositAccount credits a wallet from clearing (operator's prefund).
func (s *System) DepositAccount(cmd *DepositAccount) *AccountReply {
	return s.moveMoney(cmd.Account, cmd)
}

func (s *System) moveMoney(wallet engine.AccountID, cmd request[*AccountReply, *treasuryActor]) *AccountReply {
	to, ok := s.treasuryOfWallet(wallet)
	if !ok {
		return &AccountReply{Result: engine.ResultAccountNotFound}
	}
	if err := s.writable(); err != nil {
		return &AccountReply{Err: err}
	}
	reply, err := ask(s, to, cmd)
	if err != nil {
		return &AccountReply{Err: err}
	}
	return reply
}

// SetCreditLimit sets the credit limit of a client's wallet in a mode and
// currency (operator).
func (s *System) SetCreditLimit(client engine.ClientID, m engine.Mode, c engine.Currency, limit engine.Amount, audit *engine.OperatorActed) *CreditReply {
	wallet, ok := s.wallet(client, m, c)
	if !ok {
		return &CreditReply{Result: engine.ResultClientNotFound}
	}
	if err := s.writable(); err != nil {
		return &CreditReply{Err: err}
	}
	reply, err := ask[*CreditReply](s, s.treasuries[m], &SetCreditLimit{Audited: Audited{audit}, Account: wallet, Limit: limit})
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
	return cl.Wallet(m, c)
}

// readCredit asks a treasury actor for the credit limits of some of its
// wallets. Reply: *creditRead.
type readCredit struct{ wallets []engine.AccountID }

// creditRead answers readCredit: each wallet's limit (absent: none).
type creditRead struct {
	limits map[engine.AccountID]engine.Amount
}

// CreditLimits reads the credit limits of wallets of mode m (a client's
// page in the console).
func (s *System) CreditLimits(m engine.Mode, wallets []engine.AccountID) (map[engine.AccountID]engine.Amount, error) {
	to, ok := s.treasuries[m]
	if !ok {
		return nil, nil
	}
	r, err := ask[*creditRead](s, to, &readCredit{wallets: wallets})
	if err != nil {
		return nil, err
	}
	return r.limits, nil
}

// CreditLimit is the credit limit of a wallet, read through its treasury.
func (s *System) CreditLimit(wallet engine.AccountID) (engine.Amount, error) {
	to, ok := s.treasuryOfWallet(wallet)
	if !ok {
		return 0, nil
	}
	t, err := ask[*engine.Treasury](s, to, &treasurySnapshot{})
	if err != nil {
		return 0, err
	}
	return t.CreditLimit(wallet), nil
}

// RecordCryptoReceipt credits a deposit seen on chain to a pay-in
// address (an operator's POST /admin/v1/payins/{addressId}/seen, or the
// chain watcher), whatever its quote's status: money received is never
// orphaned. Its identity is (the pay-in's chain, hash, logIndex).
func (s *System) RecordCryptoReceipt(address engine.AddressID, amount engine.Amount, hash string, logIndex uint32, audit *engine.OperatorActed) *ReceiptReply {
	q, ok := s.PayInQuote(address)
	if !ok || q.PayIn == nil {
		return &ReceiptReply{Result: engine.ResultPayInNotFound}
	}
	return s.recordReceipt(&recordReceipt{Audited: Audited{audit}, quote: q, request: engine.ReceiptRequest{
		Method: engine.ReceiptCrypto, Address: address, Amount: amount,
		Identity: engine.ChainIdentity(q.PayIn.Chain, hash, logIndex)}})
}

// RecordBankReceipt credits a bank transfer carrying the reference of a
// quote of mode m (an operator's POST /admin/v1/payins/bank).
// ResultQuoteNotFound when no held quote of a fiat source in m has that
// reference. Its identity is (the quote's source currency, the bank
// transaction id, canonical).
func (s *System) RecordBankReceipt(m engine.Mode, reference string, amount engine.Amount, bankTransactionID engine.Identity, audit *engine.OperatorActed) *ReceiptReply {
	q, ok := s.QuoteByReference(m, reference)
	if !ok {
		return &ReceiptReply{Result: engine.ResultQuoteNotFound}
	}
	return s.recordReceipt(&recordReceipt{Audited: Audited{audit}, quote: q, request: engine.ReceiptRequest{
		Method: engine.ReceiptBank, Amount: amount, Identity: bankTransactionID}})
}

// QuoteByReference finds a held quote of a fiat source in mode m by its
// bank pay-in reference, as a bank or an operator writes it (any case,
// padded).
func (s *System) QuoteByReference(m engine.Mode, reference string) (*engine.Quote, bool) {
	id, ok := s.references.lookup(engine.CanonicalPayInReference(reference), &s.quotes)
	if !ok {
		return nil, false
	}
	q, ok := s.AnyQuote(id)
	if !ok || q.Pair.Source.IsToken() || q.Mode != m {
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

// ReverseReceipt takes a receipt back (POST
// /admin/v1/payins/{receiptId}/reverse): wallet → clearing, a reversal
// statement row.
func (s *System) ReverseReceipt(id engine.ReceiptID, reason string, audit *engine.OperatorActed) *ReceiptReply {
	pid, ok := s.treasuries[id.Mode]
	if !ok {
		return &ReceiptReply{Result: engine.ResultReceiptNotFound}
	}
	if err := s.writable(); err != nil {
		return &ReceiptReply{Err: err}
	}
	reply, err := ask[*ReceiptReply](s, pid, &reverseReceipt{Audited: Audited{audit}, receipt: id, reason: reason})
	if err != nil {
		return &ReceiptReply{Err: err}
	}
	return reply
}

// Receipt is the receipt id names (a copy).
func (s *System) Receipt(id engine.ReceiptID) (engine.Payment, bool) {
	s.payments.mu.Lock()
	defer s.payments.mu.Unlock()
	p, ok := s.payments.p.Receipt(id)
	if !ok {
		return engine.Payment{}, false
	}
	return *p, true
}

// Duplicates lists the identities recorded more than once (receipts
// recorded before identities), each with copies of its payments.
func (s *System) Duplicates() []Duplicate {
	s.payments.mu.Lock()
	defer s.payments.mu.Unlock()
	var out []Duplicate
	for _, d := range s.payments.p.Duplicates() {
		g := Duplicate{Identity: d.Identity}
		for _, p := range d.Payments {
			g.Payments = append(g.Payments, *p)
		}
		out = append(out, g)
	}
	return out
}

// Duplicate is an identity recorded more than once, with copies of its
// payments in log order.
type Duplicate struct {
	Identity engine.Identity
	Payments []engine.Payment
}

// Receipts returns the payments received for a quote, oldest first.
func (s *System) Receipts(q engine.QuoteID) []engine.Payment { return s.receipts.of(q) }

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
func (s *System) OperatorComplete(id engine.QuoteID, audit *engine.OperatorActed) *QuoteReply {
	ref, ok := s.quoteRef(id)
	if !ok {
		return &QuoteReply{Result: engine.ResultQuoteNotFound}
	}
	client, mode := ref.owner()
	return s.TransitionQuote(client, mode, id, &TransitionQuote{Audited: Audited{audit}, Operation: OperationComplete})
}

// referenceIndex finds a quote by its bank pay-in reference, for bank
// receipts. Built on first use from one pass over the registry (a start
// with a million quotes builds nothing; an operator's first bank receipt
// pays the pass) and kept from then on, as the listing index is.
type referenceIndex struct {
	built atomic.Bool
	mu    sync.Mutex
	m     map[engine.Ref]engine.QuoteID
}

// payInKey is the index's key of a quote's reference: its canonical form
// (engine.CanonicalPayInReference), false if it has none.
func payInKey(r engine.Ref) (engine.Ref, bool) {
	if r.IsZero() {
		return r, false
	}
	return engine.MakeRef(engine.CanonicalPayInReference(r.String()))
}

// add indexes a newly registered quote once the index is built.
// REQUIRES: the quote is in the registry already (see lookup's NB).
func (x *referenceIndex) add(q *engine.Quote) {
	if !x.built.Load() {
		return
	}
	if k, ok := payInKey(q.Reference); ok {
		x.mu.Lock()
		x.m[k] = q.ID
		x.mu.Unlock()
	}
}

// drop removes the references of quotes the registry forgot.
func (x *referenceIndex) drop(refs []engine.Ref) {
	if !x.built.Load() {
		return
	}
	x.mu.Lock()
	for _, r := range refs {
		if k, ok := payInKey(r); ok {
			delete(x.m, k)
		}
	}
	x.mu.Unlock()
}

// lookup finds the quote whose reference is reference, in canonical form.
func (x *referenceIndex) lookup(reference string, registry *quoteRegistry) (engine.QuoteID, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.built.Load() {
		x.m = make(map[engine.Ref]engine.QuoteID)
		// NB: built is set before the pass: a quote registered from now on
		// adds itself (waiting on mu), and one registered before is in the
		// registry for the pass to find.
		x.built.Store(true)
		registry.Range(func(id engine.QuoteID, ref *quoteRef) bool {
			if k, ok := payInKey(ref.view.Load().Reference); ok {
				x.m[k] = id
			}
			return true
		})
	}
	k, ok := engine.MakeRef(reference)
	if !ok {
		return engine.QuoteID{}, false
	}
	id, ok := x.m[k]
	return id, ok
}
