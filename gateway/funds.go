package gateway

import (
	"bytes"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// Funds first (contract §4 Complete, §15.1; engine/funds.go): receipts,
// payouts, credit limits, statements and the operator's completion.
//
//	POST /admin/v1/payins/bank                 {reference, amount, bankTransactionId}
//	POST /admin/v1/payins/{addressId}/seen     {amount, txHash} (payins.go)
//	POST /admin/v1/accounts/{accountId}/withdraw {amount}
//	PUT  /admin/v1/clients/{clientId}/credit   {mode, currency, limit}
//	GET  /admin/v1/accounts/{accountId}/transactions?limit=&startingAfter=
//	POST /admin/v1/quotes/{quoteId}/complete
//	GET  /api/v1/partners/accounts/{accountId}/transactions?limit=&startingAfter=

const (
	// statementPageSizeDefault and statementPageSizeMax bound a statement
	// page.
	statementPageSizeDefault = 20
	statementPageSizeMax     = 100
	// bankTransactionIDBytesMax bounds a bank transaction id and
	// bankReferenceBytesMax a quote's bank reference as an operator types it.
	bankTransactionIDBytesMax = engine.ReceiptReferenceBytesMax
	bankReferenceBytesMax     = 64
)

func (s *Server) registerFunds(r *router.Router) {
	r.POST(adminBase+"/payins/bank", s.operator(s.bankReceipt))
	r.POST(adminBase+"/accounts/{accountId}/withdraw", s.operator(s.withdrawAccount))
	r.PUT(adminBase+"/clients/{clientId}/credit", s.operator(s.setCredit))
	r.GET(adminBase+"/accounts/{accountId}/transactions", s.operator(s.adminStatement))
	r.POST(adminBase+"/quotes/{quoteId}/complete", s.operator(s.operatorComplete))
}

func (s *Server) registerPartnerFunds(r *router.Router) {
	r.GET(apiBase+"/partners/accounts/{accountId}/transactions", s.partner(s.partnerStatement))
}

// bankReceipt is POST /admin/v1/payins/bank: a bank transfer that carries a
// quote's bankPayIn.reference credits that quote's client's wallet.
func (s *Server) bankReceipt(ctx *fasthttp.RequestCtx, sys *actors.System) {
	o, ok := s.bodyObject(ctx)
	if !ok {
		return
	}
	reference, refOK := o.str("reference", true, bankReferenceBytesMax)
	if refOK && len(bytes.TrimSpace([]byte(reference))) == 0 {
		o.problem("reference", "must not be empty")
	}
	txID, txOK := o.str("bankTransactionId", true, bankTransactionIDBytesMax)
	if txOK && len(bytes.TrimSpace([]byte(txID))) == 0 {
		o.problem("bankTransactionId", "must not be empty")
	}
	text, _ := o.number("amount", true)
	if e := o.finish(); e != nil {
		s.writeError(ctx, e)
		return
	}
	q, ok := sys.QuoteByReference(reference)
	if !ok {
		s.writeError(ctx, &apiError{status: fasthttp.StatusNotFound, code: codeNotFound,
			message: "no quote has this bank pay-in reference"})
		return
	}
	amount, _ := amountIn(o, "amount", text, q.Pair.Source)
	if e := o.finish(); e != nil {
		s.writeError(ctx, e)
		return
	}
	reply := sys.RecordBankReceipt(reference, amount, txID)
	if s.adminFailed(ctx, reply.Err, reply.Result) {
		return
	}
	w := jsonWriter{}
	appendReceipt(&w, "", reply.Receipt, q)
	s.writeJSON(ctx, fasthttp.StatusOK, w.b)
}

// appendReceipt writes a receipt as an object (named k, "" at top level):
// the quote and client it pays, the wallet credited, the amount and the
// rail's reference.
func appendReceipt(w *jsonWriter, k string, r *engine.PaymentReceived, q *engine.Quote) {
	c := q.Pair.Source
	w.open(k)
	w.id("quoteId", r.Quote)
	w.id("clientId", q.Client)
	w.id("accountId", r.Account)
	w.str("currency", c.String())
	w.amount("amount", r.Amount, c)
	w.str("method", r.Method.String())
	if r.Method == engine.ReceiptBank {
		w.str("bankTransactionId", r.Reference)
	} else {
		w.id("addressId", r.Address)
		w.str("txHash", r.Reference)
	}
	w.time("createdAt", r.At)
	w.close()
}

// wallet reads the {accountId} of the route as a wallet: 400 for a
// malformed id, 404 for anything but a wallet.
func (s *Server) wallet(ctx *fasthttp.RequestCtx, sys *actors.System) (*engine.Account, bool) {
	id, e := pathID(ctx, "accountId")
	if e != nil {
		s.writeError(ctx, e)
		return nil, false
	}
	a, ok := sys.Account(engine.AccountID(id))
	if !ok || a.Kind != engine.AccountWallet {
		s.writeError(ctx, resultError(engine.ResultAccountNotFound))
		return nil, false
	}
	return a, true
}

// withdrawAccount is POST /admin/v1/accounts/{accountId}/withdraw: a payout
// of a wallet's available money (wallet → clearing); more than available
// is 422 INSUFFICIENT_FUNDS; credit is never paid out.
func (s *Server) withdrawAccount(ctx *fasthttp.RequestCtx, sys *actors.System) {
	a, ok := s.wallet(ctx, sys)
	if !ok {
		return
	}
	o, ok := s.bodyObject(ctx)
	if !ok {
		return
	}
	amount, _ := o.amount("amount", a.Currency)
	if e := o.finish(); e != nil {
		s.writeError(ctx, e)
		return
	}
	reply := sys.WithdrawAccount(&actors.WithdrawAccount{Account: a.ID, Amount: amount})
	if reply.Result == engine.ResultInsufficientFunds {
		e := resultError(reply.Result)
		e.message = "the wallet's available balance does not cover the payout"
		e.details = map[string]any{"currency": a.Currency.String(),
			"required":  rawNumber(engine.AppendAmount(nil, amount, a.Currency)),
			"available": rawNumber(engine.AppendAmount(nil, a.Available(), a.Currency))}
		s.writeError(ctx, e)
		return
	}
	if s.adminFailed(ctx, reply.Err, reply.Result) {
		return
	}
	w := jsonWriter{}
	appendBalance(&w, reply.Account)
	s.writeJSON(ctx, fasthttp.StatusOK, w.b)
}

// setCredit is PUT /admin/v1/clients/{clientId}/credit {mode, currency,
// limit}: limit >= 0 (0 removes the line).
func (s *Server) setCredit(ctx *fasthttp.RequestCtx, sys *actors.System) {
	client, e := pathID(ctx, "clientId")
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	o, ok := s.bodyObject(ctx)
	if !ok {
		return
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
		s.writeError(ctx, e)
		return
	}
	reply := sys.SetCreditLimit(engine.ClientID(client), mode, currency, limit)
	if s.adminFailed(ctx, reply.Err, reply.Result) {
		return
	}
	w := jsonWriter{}
	w.open("")
	w.id("clientId", client)
	w.str("mode", mode.String())
	w.str("currency", currency.String())
	w.amount("limit", reply.Limit, currency)
	w.id("accountId", reply.Account.ID)
	w.close()
	s.writeJSON(ctx, fasthttp.StatusOK, w.b)
}

// adminStatement is an operator's read of any wallet's statement.
func (s *Server) adminStatement(ctx *fasthttp.RequestCtx, sys *actors.System) {
	a, ok := s.wallet(ctx, sys)
	if !ok {
		return
	}
	s.statement(ctx, sys, a)
}

// partnerStatement is GET /partners/accounts/{accountId}/transactions:
// the caller's own wallet only (another's answers as a missing one).
func (s *Server) partnerStatement(ctx *fasthttp.RequestCtx, sys *actors.System, who actors.Principal) {
	id, e := pathID(ctx, "accountId")
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	a, ok := sys.Account(engine.AccountID(id))
	if !ok || a.Kind != engine.AccountWallet || !sys.AccountOwnedBy(a, who.Client, who.Mode) {
		s.writeError(ctx, resultError(engine.ResultAccountNotFound))
		return
	}
	s.statement(ctx, sys, a)
}

// statement writes a page of a wallet's statement, newest first:
// {"data":[{id, type, amount, balanceAfter, currency, quoteId?,
// reference?, createdAt}], "hasMore"}.
func (s *Server) statement(ctx *fasthttp.RequestCtx, sys *actors.System, a *engine.Account) {
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
	reply := sys.Statement(a.ID, after, limit)
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
func (s *Server) operatorComplete(ctx *fasthttp.RequestCtx, sys *actors.System) {
	id, e := pathID(ctx, "quoteId")
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	s.quoteReply(ctx, sys, sys.OperatorComplete(engine.QuoteID(id)), nil)
}

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
