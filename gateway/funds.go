package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// Funds first (spec §4 Complete, §15.1; engine/funds.go): receipts,
// prefunds, payouts, reversals, credit limits, statements and the
// operator's completion. Every payment is recorded under its identity
// (engine/identity.go): the same payment again answers 200 and changes
// nothing; the same identity for another amount, wallet, quote or mode is
// 409 CONFLICT.
//
//	POST /admin/v1/payins/bank                   {reference, amount, bankTransactionId, mode?}
//	POST /admin/v1/payins/{addressId}/seen       {amount, txHash, logIndex?} (payins.go)
//	GET  /admin/v1/payins/duplicates
//	POST /admin/v1/payins/{receiptId}/reverse    {reason}
//	POST /admin/v1/accounts/{accountId}/deposit  {amount, reference}
//	POST /admin/v1/accounts/{accountId}/withdraw {amount, reference}
//	PUT  /admin/v1/clients/{clientId}/credit     {mode, currency, limit}
//	GET  /admin/v1/accounts/{accountId}/transactions?limit=&startingAfter=
//	POST /admin/v1/quotes/{quoteId}/complete
//	GET  /api/v1/partners/accounts/{accountId}/transactions?limit=&startingAfter=

const (
	// statementPageSizeDefault and statementPageSizeMax bound a statement
	// page.
	statementPageSizeDefault = 20
	statementPageSizeMax     = 100
	// referenceBytesMax bounds a bank transaction id or a prefund's or
	// payout's reference as typed (its canonical form is at most
	// engine.ReferenceCharsMax characters), and bankReferenceBytesMax a
	// quote's bank reference as an operator types it.
	referenceBytesMax     = 512
	bankReferenceBytesMax = 64
)

// referenceMember reads a required reference member (a bank transaction
// id, a prefund's or payout's reference) into its identity of kind in
// currency c: 400 naming the member when it is not one.
func referenceMember(o *object, member string, c engine.Currency, outbound bool) engine.Identity {
	raw, ok := o.str(member, true, referenceBytesMax)
	if !ok {
		return engine.Identity{}
	}
	identity := engine.InboundIdentity
	if outbound {
		identity = engine.OutboundIdentity
	}
	id, err := identity(c, raw)
	if err != nil {
		o.problem(member, err.Error())
	}
	return id
}

// bankReceipt is POST /admin/v1/payins/bank: a bank transfer that carries a
// quote's bankPayIn.reference (any case, padded) credits that quote's
// client's wallet. mode (default live) is the quote's: a reference of the
// other mode is 404.
var bankReceipt = adminOp[*actors.ReceiptReply]{body: true, do: doBankReceipt,
	answer: func(s *Server, ctx *fasthttp.RequestCtx, _ services, reply *actors.ReceiptReply) {
		w := jsonWriter{}
		appendReceipt(&w, "", reply.Receipt, reply.Repeated)
		s.writeJSON(ctx, fasthttp.StatusOK, w.b)
	},
}

func doBankReceipt(s *Server, ctx *fasthttp.RequestCtx, svc services, o *object) (*actors.ReceiptReply, *apiError) {
	reference, refOK := o.str("reference", true, bankReferenceBytesMax)
	if refOK && len(bytes.TrimSpace([]byte(reference))) == 0 {
		o.problem("reference", "must not be empty")
	}
	txText, txOK := o.str("bankTransactionId", true, referenceBytesMax)
	if txOK {
		if _, err := engine.CanonicalReference(txText); err != nil {
			o.problem("bankTransactionId", err.Error())
		}
	}
	mode := engine.ModeLive
	if raw, ok := o.str("mode", false, enumBytesMax); ok {
		if mode, ok = engine.ParseMode(raw); !ok {
			o.problem("mode", `must be "live" or "sandbox"`)
		}
	}
	text, _ := o.number("amount", true)
	if e := o.finish(); e != nil {
		return nil, e
	}
	q, ok := svc.quotes.QuoteByReference(mode, reference)
	if !ok {
		return nil, &apiError{status: fasthttp.StatusNotFound, code: codeNotFound,
			message: "no quote of this mode (" + mode.String() + ") has this bank pay-in reference"}
	}
	amount, _ := amountIn(o, "amount", text, q.Pair.Source)
	if e := o.finish(); e != nil {
		return nil, e
	}
	txID, _ := engine.InboundIdentity(q.Pair.Source, txText)
	reply := svc.money.RecordBankReceipt(mode, reference, amount, txID, s.auditLine(ctx, fasthttp.StatusOK))
	return reply, s.receiptRefusal(ctx, reply)
}

// receiptFailed answers a receipt's or reversal's failure; it reports
// whether there was one.
func (s *Server) receiptFailed(ctx *fasthttp.RequestCtx, reply *actors.ReceiptReply) bool {
	if e := s.receiptRefusal(ctx, reply); e != nil {
		s.writeError(ctx, e)
		return true
	}
	return false
}

// receiptRefusal is a receipt's or reversal's failure; a conflict names
// the payment first recorded under the identity.
func (s *Server) receiptRefusal(ctx *fasthttp.RequestCtx, reply *actors.ReceiptReply) *apiError {
	if reply.Err == nil && reply.Result == engine.ResultReceiptConflict && reply.Receipt != nil {
		return paymentConflict(reply.Receipt)
	}
	return s.adminRefusal(ctx, reply.Err, reply.Result)
}

// paymentConflict is the 409 of an identity recorded before as another
// payment: its details name that payment.
func paymentConflict(p *engine.Payment) *apiError {
	e := resultError(engine.ResultReceiptConflict)
	e.message = "this payment's identity (" + p.Identity.String() + ") was recorded before for another amount, wallet, quote or mode"
	d := map[string]any{"identity": p.Identity.String(), "kind": p.Kind.String(), "mode": p.Mode.String(),
		"amount": rawNumber(engine.AppendAmount(nil, p.Amount, p.Currency)), "currency": p.Currency.String()}
	if p.Kind == engine.PaymentReceipt {
		d["receiptId"] = p.ReceiptID().String()
	}
	e.details = d
	return e
}

// appendReceipt writes a receipt as an object (named k, "" at top level):
// its id, the quote and client it pays, the wallet credited, the amount
// and the rail's reference; repeated when the request recorded nothing
// (the same payment again).
func appendReceipt(w *jsonWriter, k string, r *engine.Payment, repeated bool) {
	c := r.Currency
	w.open(k)
	w.str("receiptId", r.ReceiptID().String())
	w.id("quoteId", r.Quote)
	w.id("clientId", r.Client)
	w.id("accountId", r.Account)
	w.str("mode", r.Mode.String())
	w.str("currency", c.String())
	w.amount("amount", r.Amount, c)
	w.str("method", r.Method.String())
	w.str("identity", r.Identity.String())
	if r.Method == engine.ReceiptBank {
		w.str("bankTransactionId", r.Identity.Text())
	} else {
		w.id("addressId", r.Address)
		w.str("chain", r.Identity.Chain.String())
		w.str("txHash", r.Identity.Text())
		w.integer("logIndex", int64(r.Identity.LogIndex))
	}
	if r.Reversed() {
		w.time("reversedAt", r.ReversedAt)
	}
	if repeated {
		w.boolean("repeated", true)
	}
	w.time("createdAt", r.At)
	w.close()
}

// duplicateReceipts is GET /admin/v1/payins/duplicates: the receipts
// recorded before identities whose identities of now collide, a group per
// identity, each receipt with whether it was reversed.
func (s *Server) duplicateReceipts(ctx *fasthttp.RequestCtx, svc services) {
	if _, e := queryParams(ctx); e != nil {
		s.writeError(ctx, e)
		return
	}
	groups := svc.money.Duplicates()
	s.writeObject(ctx, fasthttp.StatusOK, func(w *jsonWriter) {
		w.openArray("data")
		for _, g := range groups {
			w.open("")
			w.str("identity", g.Identity.String())
			w.openArray("receipts")
			for i := range g.Payments {
				p := &g.Payments[i]
				w.open("")
				w.str("receiptId", p.ReceiptID().String())
				w.id("quoteId", p.Quote)
				w.id("clientId", p.Client)
				w.str("mode", p.Mode.String())
				w.amount("amount", p.Amount, p.Currency)
				w.str("currency", p.Currency.String())
				w.str("reference", p.Reference)
				w.boolean("reversed", p.Reversed())
				w.time("createdAt", p.At)
				w.close()
			}
			w.closeArray()
			w.close()
		}
		w.closeArray()
	})
}

// reverseReceipt is POST /admin/v1/payins/{receiptId}/reverse {reason}:
// the receipt's amount goes back from the wallet to clearing (a reversal
// row); more than the wallet can spend is 422 INSUFFICIENT_FUNDS, a
// receipt reversed already 409.
func (s *Server) reverseReceipt(ctx *fasthttp.RequestCtx, svc services) {
	raw, _ := ctx.UserValue("receiptId").(string)
	id, ok := engine.ParseReceiptID(raw)
	if !ok {
		s.writeError(ctx, fieldError("receiptId", "must be a receipt id (rcpt_…)"))
		return
	}
	o, ok := s.bodyObject(ctx)
	if !ok {
		return
	}
	reason, _ := o.str("reason", true, engine.ReversalReasonBytesMax)
	if e := o.finish(); e != nil {
		s.writeError(ctx, e)
		return
	}
	reply := svc.money.ReverseReceipt(id, reason, s.auditLine(ctx, fasthttp.StatusOK))
	if reply.Result == engine.ResultInsufficientFunds && reply.Receipt != nil {
		r := reply.Receipt
		e := resultError(reply.Result)
		e.message = "the wallet cannot cover taking this receipt back"
		e.details = map[string]any{"currency": r.Currency.String(), "required": rawNumber(engine.AppendAmount(nil, r.Amount, r.Currency))}
		if a, ok := svc.money.Account(r.Account); ok {
			e.details["available"] = rawNumber(engine.AppendAmount(nil, a.Available(), r.Currency))
		}
		s.writeError(ctx, e)
		return
	}
	if s.receiptFailed(ctx, reply) {
		return
	}
	w := jsonWriter{}
	appendReceipt(&w, "", reply.Receipt, false)
	s.writeJSON(ctx, fasthttp.StatusOK, w.b)
}

// wallet reads the {accountId} of the route as a wallet: 400 for a
// malformed id, 404 for anything but a wallet.
func (s *Server) wallet(ctx *fasthttp.RequestCtx, money moneyService) (*engine.Account, bool) {
	id, ok := s.pathUUID(ctx, "accountId")
	if !ok {
		return nil, false
	}
	a, ok := money.Account(engine.AccountID(id))
	if !ok || a.Kind != engine.AccountWallet {
		s.writeError(ctx, resultError(engine.ResultAccountNotFound))
		return nil, false
	}
	return a, true
}

// moveMoney is POST /admin/v1/accounts/{accountId}/deposit (in: a
// prefund) or …/withdraw (out: a payout of the wallet's available money;
// more is 422 INSUFFICIENT_FUNDS, credit is never paid out), each with the
// bank's or chain's reference of the transfer. The same payment again
// (same reference, amount and wallet) answers 200 and changes nothing; an
// Idempotency-Key is honoured as on create (Idempotent-Replayed: true; the
// same key with another body: 422 IDEMPOTENCY_KEY_REUSED).
func (s *Server) moveMoney(in bool) operatorHandler {
	return func(ctx *fasthttp.RequestCtx, svc services) {
		a, ok := s.wallet(ctx, svc.money)
		if !ok {
			return
		}
		key, e := idempotencyKey(ctx)
		if e != nil {
			s.writeError(ctx, e)
			return
		}
		o, ok := s.bodyObject(ctx)
		if !ok {
			return
		}
		amount, _ := o.amount("amount", a.Currency)
		ref := referenceMember(o, "reference", a.Currency, !in)
		if e := o.finish(); e != nil {
			s.writeError(ctx, e)
			return
		}
		req := engine.MoneyRequest{Account: a.ID, Amount: amount, Reference: ref, IdempotencyKey: key}
		if key != "" {
			req.RequestHash = moneyRequestHash(in, &req)
		}
		var reply *actors.AccountReply
		if in {
			reply = svc.money.DepositAccount(&actors.DepositAccount{Audited: actors.Audited{Audit: s.auditLine(ctx, fasthttp.StatusOK)}, MoneyRequest: req})
		} else {
			reply = svc.money.WithdrawAccount(&actors.WithdrawAccount{Audited: actors.Audited{Audit: s.auditLine(ctx, fasthttp.StatusOK)}, MoneyRequest: req})
		}
		switch {
		case reply.Err != nil:
		case reply.Result == engine.ResultInsufficientFunds:
			e := resultError(reply.Result)
			e.message = "the wallet's available balance does not cover the payout"
			e.details = map[string]any{"currency": a.Currency.String(),
				"required":  rawNumber(engine.AppendAmount(nil, amount, a.Currency)),
				"available": rawNumber(engine.AppendAmount(nil, reply.Account.Available(), a.Currency))}
			s.writeError(ctx, e)
			return
		case reply.Result == engine.ResultReceiptConflict && reply.Payment != nil:
			s.writeError(ctx, paymentConflict(reply.Payment))
			return
		}
		if s.adminFailed(ctx, reply.Err, reply.Result) {
			return
		}
		if reply.Repeated && key != "" {
			ctx.Response.Header.Set("Idempotent-Replayed", "true")
		}
		s.writeObject(ctx, fasthttp.StatusOK, func(w *jsonWriter) {
			appendBalanceMembers(w, reply.Account)
			w.str("reference", ref.Text())
			if reply.Repeated {
				w.boolean("repeated", true)
			}
		})
	}
}

// moneyRequestHash is an operator's prefund or payout as its
// Idempotency-Key remembers it: the route, the wallet, the amount and the
// reference's identity.
func moneyRequestHash(in bool, req *engine.MoneyRequest) [32]byte {
	h := sha256.New()
	if in {
		h.Write([]byte("deposit\x00"))
	} else {
		h.Write([]byte("withdraw\x00"))
	}
	h.Write(req.Account[:])
	h.Write(binary.AppendVarint(nil, int64(req.Amount)))
	h.Write([]byte(req.Reference.String()))
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// setCredit is PUT /admin/v1/clients/{clientId}/credit {mode, currency,
// limit}: limit >= 0 (0 removes the line).
var setCredit = adminOp[creditSet]{body: true, do: doSetCredit,
	answer: func(s *Server, ctx *fasthttp.RequestCtx, _ services, c creditSet) {
		s.writeObject(ctx, fasthttp.StatusOK, func(w *jsonWriter) {
			w.id("clientId", c.client)
			w.str("mode", c.mode.String())
			w.str("currency", c.currency.String())
			w.amount("limit", c.reply.Limit, c.currency)
			w.id("accountId", c.reply.Account.ID)
		})
	},
}

// creditSet is a credit limit set: the request and the treasury's reply.
type creditSet struct {
	client   engine.ClientID
	mode     engine.Mode
	currency engine.Currency
	reply    *actors.CreditReply
}

func doSetCredit(s *Server, ctx *fasthttp.RequestCtx, svc services, o *object) (creditSet, *apiError) {
	client, e := pathID(ctx, "clientId")
	if e != nil {
		return creditSet{}, e
	}
	mode := parseModeMember(o)
	var currency engine.Currency
	if raw, ok := o.str("currency", true, enumBytesMax); ok {
		if currency, ok = engine.ParseCurrency(raw); !ok {
			o.problem("currency", "must be a currency of the markets in force")
		}
	}
	text, _ := o.number("limit", true)
	var limit engine.Amount
	if currency.Valid() && len(text) > 0 && len(bytes.TrimLeft(text, "0.")) > 0 {
		limit, _ = amountIn(o, "limit", text, currency) // positive; "0" or "0.00" is no credit
	}
	if e := o.finish(); e != nil {
		return creditSet{}, e
	}
	reply := svc.money.SetCreditLimit(engine.ClientID(client), mode, currency, limit, s.auditLine(ctx, fasthttp.StatusOK))
	return creditSet{engine.ClientID(client), mode, currency, reply}, s.adminRefusal(ctx, reply.Err, reply.Result)
}

// adminStatement is an operator's read of any wallet's statement.
func (s *Server) adminStatement(ctx *fasthttp.RequestCtx, svc services) {
	a, ok := s.wallet(ctx, svc.money)
	if !ok {
		return
	}
	s.statement(ctx, svc, a)
}

// partnerStatement is GET /partners/accounts/{accountId}/transactions:
// the caller's own wallet only (another's answers as a missing one).
func (s *Server) partnerStatement(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	id, ok := s.pathUUID(ctx, "accountId")
	if !ok {
		return
	}
	a, ok := svc.money.Account(engine.AccountID(id))
	if !ok || a.Kind != engine.AccountWallet || !svc.money.AccountOwnedBy(a, who.Client, who.Mode) {
		s.writeError(ctx, resultError(engine.ResultAccountNotFound))
		return
	}
	s.statement(ctx, svc, a)
}

// statement writes a page of a wallet's statement, newest first:
// {"data":[{id, type, amount, balanceAfter, currency, quoteId?,
// reference?, createdAt}], "hasMore"}.
func (s *Server) statement(ctx *fasthttp.RequestCtx, svc services, a *engine.Account) {
	q, e := queryParams(ctx, "limit", "startingAfter")
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	f := fxFields{}
	limit := pageLimit(&f, q, statementPageSizeDefault, statementPageSizeMax)
	var after uint64
	raw, cursor := q["startingAfter"]
	if cursor {
		seq, ok := engine.ParsePostingID(a.Mode, raw)
		if !ok || seq == 0 {
			f.problem("startingAfter", "must be a transaction id of this account")
		}
		after = seq
	}
	if e := f.err(); e != nil {
		s.writeError(ctx, e)
		return
	}
	reply := svc.money.Statement(a.ID, after, limit)
	if reply.Err != nil {
		s.operatingError(ctx, reply.Err)
		return
	}
	if !reply.Known {
		f.problem("startingAfter", "names no transaction of this account (unknown, or older than the retention)")
		s.writeError(ctx, f.err())
		return
	}
	w := jsonWriter{b: make([]byte, 0, 256+200*len(reply.Postings))}
	w.open("")
	w.openArray("data")
	for i := range reply.Postings {
		p := &reply.Postings[i]
		w.open("")
		w.str("id", engine.PostingID(a.Mode, p.Seq))
		w.str("type", p.Type.String())
		w.amount("amount", p.Amount, a.Currency)
		w.amount("balanceAfter", p.BalanceAfter, a.Currency)
		w.str("currency", a.Currency.String())
		if !p.Quote.IsZero() {
			w.id("quoteId", p.Quote)
		}
		if p.Reference != "" {
			w.str("reference", p.Reference)
		}
		if r := p.ReceiptID(a.Mode); !r.IsZero() {
			w.str("receiptId", r.String())
		}
		w.time("createdAt", p.At)
		w.close()
	}
	w.closeArray()
	w.boolean("hasMore", reply.More)
	w.close()
	s.writeJSON(ctx, fasthttp.StatusOK, w.b)
}

// operatorComplete is POST /admin/v1/quotes/{quoteId}/complete: an
// operator completes any client's quote, under the partner's rule (the
// wallet must cover it; sandbox simulates the shortfall).
var operatorComplete = quoteOp(func(svc services, id engine.QuoteID, audit *engine.OperatorActed) *actors.QuoteReply {
	return svc.quotes.OperatorComplete(id, audit)
})

// fundsDetails are INSUFFICIENT_FUNDS's details on a completion.
func fundsDetails(q *engine.Quote, f *engine.Funding) map[string]any {
	c := q.Pair.Source
	return map[string]any{
		"currency":    c.String(),
		"required":    rawNumber(engine.AppendAmount(nil, f.Required, c)),
		"available":   rawNumber(engine.AppendAmount(nil, f.Available, c)),
		"creditLimit": rawNumber(engine.AppendAmount(nil, f.Credit, c)),
	}
}
