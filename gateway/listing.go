package gateway

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

const (
	// quotesPageSizeDefault and quotesPageSizeMax bound a quote listing.
	quotesPageSizeDefault = 20
	quotesPageSizeMax     = 100
	quotesPath            = apiBase + "/partners/marketplace/quotes"
)

// pageLimit reads a listing's limit parameter: def when absent, else a
// whole number from 1 to max (a problem recorded in f otherwise).
func pageLimit(f *fxFields, q map[string]string, def, max int) int {
	raw, ok := q["limit"]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > max {
		f.problem("limit", "must be a whole number from 1 to "+strconv.Itoa(max))
	}
	return n
}

// listQuotes is GET /api/v1/partners/marketplace/quotes?status=&createdGte=
// &createdLt=&limit=&startingAfter=: the caller's quotes of its key's mode
// that the service holds (open, or terminal within --retention), newest
// first, {"data":[Quote…],"hasMore":bool}, cursor pagination by quote id
// (Stripe's list shape).
func (s *Server) listQuotes(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	q, e := queryParams(ctx, "status", "createdGte", "createdLt", "limit", "startingAfter")
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	f := fxFields{}
	var filter actors.QuoteFilter
	if raw, ok := q["status"]; ok {
		for _, st := range engine.Statuses {
			if st.String() == raw {
				filter.Status = st
			}
		}
		if filter.Status == 0 {
			f.problem("status", "must be pending, awaiting_payment, completed, cancelled or expired")
		}
	}
	for _, b := range []struct {
		name string
		into *int64
	}{{"createdGte", &filter.CreatedGte}, {"createdLt", &filter.CreatedLt}} {
		if raw, ok := q[b.name]; ok {
			t, err := time.Parse(time.RFC3339Nano, raw)
			if err != nil || t.UnixMilli() <= 0 {
				f.problem(b.name, "must be an RFC 3339 time, e.g. 2026-11-21T10:00:00.000Z")
				continue
			}
			*b.into = t.UnixMilli()
		}
	}
	filter.Limit = pageLimit(&f, q, quotesPageSizeDefault, quotesPageSizeMax)
	if raw, ok := q["startingAfter"]; ok {
		id, valid := engine.ParseUUID(raw)
		switch {
		case !valid:
			f.problem("startingAfter", "must be a quote id (a UUID)")
		case engine.QuoteID(id).IsZero():
			// The nil UUID is no quote's id: refused like any unknown
			// one, never taken as "from the newest" (spec §15.4).
			f.problem("startingAfter", "names no quote of yours held by the service")
		}
		filter.StartingAfter = engine.QuoteID(id)
	}
	if e := f.err(); e != nil {
		s.writeError(ctx, e)
		return
	}
	page, more, err := svc.quotes.ListQuotes(who.Client, who.Mode, filter)
	if err != nil {
		s.writeError(ctx, fieldError("startingAfter", "names no quote of yours held by the service"))
		return
	}
	now := svc.market.Now().UnixMilli()
	b := make([]byte, 0, 1024*len(page)+32)
	b = append(b, `{"data":[`...)
	for i, quote := range page {
		if i > 0 {
			b = append(b, ',')
		}
		b = s.appendQuote(b, quote, now)
	}
	b = append(b, `],"hasMore":`...)
	b = strconv.AppendBool(b, more)
	s.writeJSON(ctx, fasthttp.StatusOK, append(b, '}'))
}
