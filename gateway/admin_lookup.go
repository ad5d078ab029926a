package gateway

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// Operator look-ups (spec §14): clients, one client's keys and accounts,
// and any quote by id with the payments received for it.

const (
	// clientsPageSizeDefault and clientsPageSizeMax bound GET /admin/v1/clients.
	clientsPageSizeDefault = 20
	clientsPageSizeMax     = 100
)

// listClients is GET /admin/v1/clients?limit=&startingAfter=: newest first,
// a page of at most limit, cursor pagination by client id (Stripe's list
// shape: {"data":[…],"hasMore":bool}).
func (s *Server) listClients(ctx *fasthttp.RequestCtx, svc services) {
	q, e := queryParams(ctx, "limit", "startingAfter")
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	f := fxFields{}
	limit := pageLimit(&f, q, clientsPageSizeDefault, clientsPageSizeMax)
	clients := clientsNewestFirst(svc.directory)
	start := 0
	if raw, ok := q["startingAfter"]; ok {
		id, valid := engine.ParseUUID(raw)
		i := slices.IndexFunc(clients, func(c *engine.Client) bool { return c.ID == engine.ClientID(id) })
		switch {
		case !valid:
			f.problem("startingAfter", "must be a client id (a UUID)")
		case i < 0:
			f.problem("startingAfter", "no such client")
		default:
			start = i + 1
		}
	}
	if e := f.err(); e != nil {
		s.writeError(ctx, e)
		return
	}
	page := clients[start:min(start+limit, len(clients))]
	w := jsonWriter{b: make([]byte, 0, 96*len(page)+32)}
	w.open("")
	w.openArray("data")
	for _, c := range page {
		appendClient(&w, c)
	}
	w.closeArray()
	w.boolean("hasMore", start+len(page) < len(clients))
	w.close()
	s.writeJSON(ctx, fasthttp.StatusOK, w.b)
}

// clientsNewestFirst is every client, newest first (ties by id): the
// order both client lists page through.
func clientsNewestFirst(directory directoryService) []*engine.Client {
	clients := directory.Clients()
	slices.SortFunc(clients, func(a, b *engine.Client) int {
		return cmp.Or(cmp.Compare(b.CreatedAt, a.CreatedAt), bytes.Compare(b.ID[:], a.ID[:]))
	})
	return clients
}

func appendClient(w *jsonWriter, c *engine.Client) {
	w.open("")
	w.id("clientId", c.ID)
	w.str("name", c.Name)
	w.time("createdAt", c.CreatedAt)
	w.close()
}

// getClient is GET /admin/v1/clients/{clientId}: the client, its API keys
// (never a secret: only their hashes are held), and its accounts in both
// modes with their balances.
func (s *Server) getClient(ctx *fasthttp.RequestCtx, svc services) {
	raw, ok := s.pathUUID(ctx, "clientId")
	if !ok {
		return
	}
	id := engine.ClientID(raw)
	c, ok := svc.directory.Client(id)
	if !ok {
		s.writeError(ctx, resultError(engine.ResultClientNotFound))
		return
	}
	w := jsonWriter{b: make([]byte, 0, 1024)}
	w.open("")
	w.id("clientId", c.ID)
	w.str("name", c.Name)
	w.time("createdAt", c.CreatedAt)
	w.openArray("keys")
	for _, k := range svc.directory.ClientKeys(id) {
		appendKey(&w, &k, true)
	}
	w.closeArray()
	w.open("accounts")
	for _, m := range engine.Modes {
		w.openArray(m.String())
		for _, a := range svc.money.ClientAccounts(id, m) {
			appendBalance(&w, a)
		}
		w.closeArray()
	}
	w.close()
	w.close()
	s.writeJSON(ctx, fasthttp.StatusOK, w.b)
}

// adminQuote is GET /admin/v1/quotes/{quoteId}: any client's quote in
// either mode, in the partner API's Quote shape (it names its client and
// mode), while it is held (open, or terminal within --retention).
func (s *Server) adminQuote(ctx *fasthttp.RequestCtx, svc services) {
	raw, ok := s.pathUUID(ctx, "quoteId")
	if !ok {
		return
	}
	q, ok := svc.quotes.AnyQuote(engine.QuoteID(raw))
	if !ok {
		s.writeError(ctx, resultError(engine.ResultQuoteNotFound))
		return
	}
	// The quote as its partner sees it, and what was received for it:
	// receivedAmount and each receipt (bank or crypto), oldest first.
	b := s.appendQuote(make([]byte, 0, 2048), q, svc.market.Now().UnixMilli())
	w := jsonWriter{b: b[:len(b)-1], comma: true}
	receipts := svc.money.Receipts(q.ID)
	w.amount("receivedAmount", receivedTotal(receipts), q.Pair.Source)
	w.openArray("receipts")
	for i := range receipts {
		appendReceipt(&w, "", &receipts[i], false)
	}
	w.closeArray()
	w.close()
	s.writeJSON(ctx, fasthttp.StatusOK, w.b)
}

// receivedTotal is what the receipts of one quote add up to.
// A receipt taken back (reversed) adds nothing.
func receivedTotal(receipts []engine.Payment) engine.Amount {
	var total engine.Amount
	for _, r := range receipts {
		if !r.Reversed() {
			total += r.Amount
		}
	}
	return total
}

// operatorCancel is POST /admin/v1/quotes/{quoteId}/cancel: an operator
// cancels any client's open quote; the log records it as the operator's.
// Answers as the partner's cancel does (200 with the quote, 409
// INVALID_STATE from a status that does not allow it).
var operatorCancel = quoteOp(func(svc services, id engine.QuoteID, audit *engine.OperatorActed) *actors.QuoteReply {
	return svc.quotes.OperatorCancel(id, audit)
})

// quoteOp is an operator's change of the quote {quoteId}: write makes it,
// audited; the admin API answers the quote as the partner API would.
func quoteOp(write func(svc services, id engine.QuoteID, audit *engine.OperatorActed) *actors.QuoteReply) adminOp[*actors.QuoteReply] {
	return adminOp[*actors.QuoteReply]{
		do: func(s *Server, ctx *fasthttp.RequestCtx, svc services, _ *object) (*actors.QuoteReply, *apiError) {
			id, e := pathID(ctx, "quoteId")
			if e != nil {
				return nil, e
			}
			reply := write(svc, engine.QuoteID(id), s.auditLine(ctx, fasthttp.StatusOK))
			if reply.Err != nil {
				return reply, s.operatingRefusal(ctx, reply.Err)
			}
			return reply, refusal(reply, nil)
		},
		answer: func(s *Server, ctx *fasthttp.RequestCtx, svc services, reply *actors.QuoteReply) {
			s.quoteReply(ctx, svc.market, reply, nil)
		},
	}
}
