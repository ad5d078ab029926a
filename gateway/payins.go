package gateway

import (
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/engine"
)

// Crypto pay-ins: a token-source quote gets a deposit address when
// accepted (metadata.cryptoPayIn); the chain watcher (actors/chainwatch)
// credits each confirmed deposit, and an operator can record one with
// POST /admin/v1/payins/{addressId}/seen
// {"amount","txHash","logIndex"?}, which credits the partner's wallet in
// the token (funds first, spec §15.1; engine/funds.go) whatever the
// quote's status: money received is never orphaned. Any amount > 0; the
// deposit's identity is (the pay-in's chain, txHash however spelled,
// logIndex: default 0) — several deposits with different identities each
// credit; the same identity again with the same amount answers 200 and
// changes nothing; with another amount or address 409 CONFLICT. Both
// routes answer the operator's view of the pay-in (its quote, client,
// mode, receivedAmount and the deposits, each with its receiptId); 404
// NOT_FOUND for an unknown address.

// txHashBytesMax bounds a txHash member as typed (64 hex digits, 0x and
// white space around them).
const txHashBytesMax = 128

// payInOf finds the quote of the route's {addressId}; it answers the
// request itself (400, 404) when there is none.
func (s *Server) payInOf(ctx *fasthttp.RequestCtx, quotes quoteService) (*engine.Quote, bool) {
	raw, ok := s.pathUUID(ctx, "addressId")
	if !ok {
		return nil, false
	}
	q, ok := quotes.PayInQuote(engine.AddressID(raw))
	if !ok || q.PayIn == nil {
		s.writeError(ctx, resultError(engine.ResultPayInNotFound))
		return nil, false
	}
	return q, true
}

func (s *Server) payInSeen(ctx *fasthttp.RequestCtx, svc services) {
	q, ok := s.payInOf(ctx, svc.quotes)
	if !ok {
		return
	}
	o, ok := s.bodyObject(ctx)
	if !ok {
		return
	}
	amount, _ := o.amount("amount", q.PayIn.Currency)
	var hash string
	if raw, ok := o.str("txHash", true, txHashBytesMax); ok {
		var err error
		if hash, err = engine.CanonicalTxHash(raw); err != nil {
			o.problem("txHash", err.Error())
		}
	}
	logIndex, _ := o.integer("logIndex", false, 0, engine.LogIndexMax)
	if e := o.finish(); e != nil {
		s.writeError(ctx, e)
		return
	}
	reply := svc.money.RecordCryptoReceipt(q.PayIn.Address, amount, hash, uint32(logIndex), s.auditLine(ctx, fasthttp.StatusOK))
	if s.receiptFailed(ctx, reply) {
		return
	}
	if view, ok := svc.quotes.AnyQuote(q.ID); ok {
		q = view
	}
	s.writeJSON(ctx, fasthttp.StatusOK, appendPayIn(nil, q, svc.money.Receipts(q.ID)))
}

// payInGet is GET /admin/v1/payins/{addressId}: the pay-in as the operator
// needs it — its quote, client and mode, and the deposits credited.
func (s *Server) payInGet(ctx *fasthttp.RequestCtx, svc services) {
	q, ok := s.payInOf(ctx, svc.quotes)
	if !ok {
		return
	}
	s.writeJSON(ctx, fasthttp.StatusOK, appendPayIn(nil, q, svc.money.Receipts(q.ID)))
}

// appendPayIn renders an operator's view of q's pay-in: the partner's
// cryptoPayIn members, the quote it belongs to, receivedAmount and the
// deposits credited (receipts), oldest first. A deposit recorded before
// funds first (which credited nothing) shows as "deposit".
func appendPayIn(b []byte, q *engine.Quote, receipts []engine.Payment) []byte {
	w := jsonWriter{b: b}
	w.open("")
	appendCryptoPayIn(&w, q, len(receipts) > 0)
	w.id("quoteId", q.ID)
	w.str("quoteStatus", q.Status.String())
	w.id("clientId", q.Client)
	w.str("mode", q.Mode.String())
	w.amount("receivedAmount", receivedTotal(receipts), q.PayIn.Currency)
	w.openArray("deposits")
	for _, r := range receipts {
		w.open("")
		w.str("receiptId", r.ReceiptID().String())
		w.amount("amount", r.Amount, q.PayIn.Currency)
		w.str("txHash", r.Identity.Text())
		w.integer("logIndex", int64(r.Identity.LogIndex))
		if r.Reversed() {
			w.time("reversedAt", r.ReversedAt)
		}
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
