package gateway

import (
	"regexp"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// Crypto pay-ins: a token-source quote gets a deposit address when
// accepted (metadata.cryptoPayIn); an operator watching the chain records
// each deposit it sees with POST /admin/v1/payins/{addressId}/seen
// {"amount","txHash"}, which credits the partner's wallet in the token
// (funds first, contract §15.1; engine/funds.go) whatever the quote's
// status: money received is never orphaned. Any amount > 0; several
// deposits with different hashes each credit; the same hash again with the
// same amount answers 200 and changes nothing; with another amount 409
// CONFLICT. Both routes answer the operator's view of the pay-in (its
// quote, client, mode, receivedAmount and the deposits); 404 NOT_FOUND for
// an unknown address.

func (s *Server) registerPayIns(r *router.Router) {
	r.GET(adminBase+"/payins/{addressId}", s.operator(s.payInGet))
	r.POST(adminBase+"/payins/{addressId}/seen", s.operator(s.payInSeen))
}

// txHashPattern is a transaction hash as TRON and the EVM chains write it:
// 64 hex digits, 0x-prefixed or not.
var txHashPattern = regexp.MustCompile(`^(0x)?[0-9a-fA-F]{64}$`)

// payInOf finds the quote of the route's {addressId}; it answers the
// request itself (400, 404) when there is none.
func (s *Server) payInOf(ctx *fasthttp.RequestCtx, sys *actors.System) (*engine.Quote, bool) {
	raw, e := pathID(ctx, "addressId")
	if e != nil {
		s.writeError(ctx, e)
		return nil, false
	}
	q, ok := sys.PayInQuote(engine.AddressID(raw))
	if !ok || q.PayIn == nil {
		s.writeError(ctx, resultError(engine.ResultPayInNotFound))
		return nil, false
	}
	return q, true
}

func (s *Server) payInSeen(ctx *fasthttp.RequestCtx, sys *actors.System) {
	q, ok := s.payInOf(ctx, sys)
	if !ok {
		return
	}
	o, ok := s.bodyObject(ctx)
	if !ok {
		return
	}
	amount, _ := o.amount("amount", q.PayIn.Currency)
	txHash, txOK := o.str("txHash", true, engine.PayInTxHashMax)
	if txOK && !txHashPattern.MatchString(txHash) {
		o.problem("txHash", "must be a transaction hash: 64 hex digits, 0x-prefixed or not")
	}
	if e := o.finish(); e != nil {
		s.writeError(ctx, e)
		return
	}
	reply := sys.RecordCryptoReceipt(q.PayIn.Address, amount, txHash)
	if s.adminFailed(ctx, reply.Err, reply.Result) {
		return
	}
	if view, ok := sys.AnyQuote(q.ID); ok {
		q = view
	}
	s.writeJSON(ctx, fasthttp.StatusOK, appendPayIn(nil, q, sys.Receipts(q.ID)))
}

// payInGet is GET /admin/v1/payins/{addressId}: the pay-in as the operator
// needs it — its quote, client and mode, and the deposits credited.
func (s *Server) payInGet(ctx *fasthttp.RequestCtx, sys *actors.System) {
	q, ok := s.payInOf(ctx, sys)
	if !ok {
		return
	}
	s.writeJSON(ctx, fasthttp.StatusOK, appendPayIn(nil, q, sys.Receipts(q.ID)))
}

// appendPayIn renders an operator's view of q's pay-in: the partner's
// cryptoPayIn members, the quote it belongs to, receivedAmount and the
// deposits credited (receipts), oldest first. A deposit recorded before
// funds first (which credited nothing) shows as "deposit".
func appendPayIn(b []byte, q *engine.Quote, receipts []*engine.PaymentReceived) []byte {
	w := jsonWriter{b: b}
	w.open("")
	appendCryptoPayIn(&w, q, len(receipts) > 0)
	w.id("quoteId", q.ID)
	w.str("quoteStatus", q.Status.String())
	w.id("clientId", q.Client)
	w.str("mode", q.Mode.String())
	var received engine.Amount
	for _, r := range receipts {
		received += r.Amount
	}
	w.amount("receivedAmount", received, q.PayIn.Currency)
	w.openArray("deposits")
	for _, r := range receipts {
		w.open("")
		w.amount("amount", r.Amount, q.PayIn.Currency)
		w.str("txHash", r.Reference)
		w.time("createdAt", r.At)
		w.close()
	}
	w.closeArray()
	if p := q.PayIn; p.SeenAt != 0 {
		w.open("deposit")
		w.amount("amount", p.SeenAmount, p.Currency)
		w.str("txHash", p.SeenTx)
		w.time("seenAt", p.SeenAt)
		w.close()
	}
	w.close()
	return w.b
}
