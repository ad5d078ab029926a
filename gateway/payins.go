package gateway

import (
	"regexp"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// Crypto pay-ins (issue 14): a token-source quote gets a deposit address
// when accepted (metadata.cryptoPayIn); an operator watching the chain
// records the deposit it sees with POST /admin/v1/payins/{addressId}/seen
// {"amount","txHash"}, which makes the pay-in pending. Answers as the
// operator's cancel does: 200 with the quote; 404 NOT_FOUND for an unknown
// address; 409 INVALID_STATE once the quote no longer awaits payment or
// another deposit was recorded (the same report again is 200, unchanged).
// GET /admin/v1/payins/{addressId} shows a pay-in with its quote, client
// and the deposit recorded.

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
	s.quoteReply(ctx, sys, sys.RecordPayIn(q.PayIn.Address, amount, txHash), nil)
}

// payInGet is GET /admin/v1/payins/{addressId}: the pay-in as the operator
// needs it — its quote, client and mode, and the deposit recorded, if any.
func (s *Server) payInGet(ctx *fasthttp.RequestCtx, sys *actors.System) {
	q, ok := s.payInOf(ctx, sys)
	if !ok {
		return
	}
	s.writeJSON(ctx, fasthttp.StatusOK, appendPayIn(nil, q))
}

// appendPayIn renders an operator's view of q's pay-in: the partner's
// cryptoPayIn members, the quote it belongs to, and the deposit seen.
func appendPayIn(b []byte, q *engine.Quote) []byte {
	w := jsonWriter{b: b}
	w.open("")
	appendCryptoPayIn(&w, q)
	w.id("quoteId", q.ID)
	w.str("quoteStatus", q.Status.String())
	w.id("clientId", q.Client)
	w.str("mode", q.Mode.String())
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
