package gateway

import (
	"bytes"
	"cmp"
	"math/big"
	"slices"
	"strconv"

	"github.com/shopspring/decimal"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/client/fxmsg"
	"github.com/oja-exchange/oja/engine"
)

// Market views of the XML FX API (spec §7, rows 8 and 9): listings and
// the best market maker rate, read from the registry and the pair tickers
// without messaging any actor.

// fxListings is row 8: GET /listings?source=&destination=&page=&pageSize=
// → FndPrcgPsptRpt, the caller's mode's active pools, best rate first.
func (s *Server) fxListings(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	q, e := queryParams(ctx, "source", "destination", "page", "pageSize")
	if e != nil {
		s.writeFXError(ctx, e)
		return
	}
	source, destination, e := fxListingFilter(svc.market.Markets(), q["source"], q["destination"])
	if e != nil {
		s.writeFXError(ctx, e)
		return
	}
	f := fxFields{}
	page := fxPageParameter(f, "page", q["page"], 0, 0, listingsPageMax)
	size := fxPageParameter(f, "pageSize", q["pageSize"], listingsPageSizeDefault, 1, listingsPageSizeMax)
	if e := f.err(); e != nil {
		s.writeFXError(ctx, e)
		return
	}
	var pools []*engine.Pool
	for _, p := range svc.market.Pools(who.Mode) {
		if p.Active && (source == engine.CurrencyNone || p.Pair.Source == source) &&
			(destination == engine.CurrencyNone || p.Pair.Destination == destination) {
			pools = append(pools, p)
		}
	}
	slices.SortFunc(pools, fxListingOrder)
	report := &fxmsg.FndPrcgPsptRpt{
		Pgntn:  fxmsg.Pagination{PageNumber: page, PageSize: size, TotalElements: len(pools)},
		OprgMd: who.Mode.String(),
	}
	if page <= (len(pools)-1)/size {
		start := page * size
		for _, p := range pools[start:min(start+size, len(pools))] {
			report.Listgs = append(report.Listgs, fxmsg.Listing{
				Id:         p.ID.String(),
				Nm:         p.Name,
				CcyPair:    p.Pair.String(),
				XchgRate:   fxRate(p.Rate),
				AvlblBal:   fxAmount(p.Liquidity.Available(), p.Pair.Destination),
				TradsCnt:   p.Completed,
				CmpltnRate: fxmsg.Decimal(CompletionRate(p).StringFixed(2)),
			})
		}
	}
	s.writeXML(ctx, fasthttp.StatusOK, report)
}

// fxListingOrder is price-time priority (spec §5): rate descending, then
// the earliest rate-set time, then pool id.
func fxListingOrder(a, b *engine.Pool) int {
	if c := b.Rate.Cmp(a.Rate); c != 0 {
		return c
	}
	if c := cmp.Compare(a.RateSetAt, b.RateSetAt); c != 0 {
		return c
	}
	return bytes.Compare(a.ID[:], b.ID[:])
}

// fxListingFilter reads the optional source and destination filters; an
// empty value is no filter. A currency that is not the source (or
// destination) of a supported pair, or a pair that is not supported, is 400
// INVALID_CURRENCY_PAIR.
func fxListingFilter(m *engine.Markets, source, destination string) (engine.Currency, engine.Currency, *apiError) {
	var src, dst engine.Currency
	if source != "" {
		c, ok := engine.ParseCurrency(source)
		if !ok || !m.IsSource(c) {
			return 0, 0, invalidCurrencyPair(m)
		}
		src = c
	}
	if destination != "" {
		c, ok := engine.ParseCurrency(destination)
		if !ok || !slices.ContainsFunc(m.Pairs, func(p engine.PairSpec) bool {
			return p.Pair.Destination == c && (src == engine.CurrencyNone || p.Pair.Source == src)
		}) {
			return 0, 0, invalidCurrencyPair(m)
		}
		dst = c
	}
	return src, dst, nil
}

// fxPageParameter reads a non-negative decimal integer parameter within
// [least, most], or def when absent.
func fxPageParameter(f fxFields, name, raw string, def, least, most int) int {
	if raw == "" {
		return def
	}
	problem := "must be an integer from " + strconv.Itoa(least) + " to " + strconv.Itoa(most)
	if len(raw) > len(strconv.Itoa(most)) {
		f.problem(name, problem)
		return def
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			f.problem(name, problem)
			return def
		}
	}
	v, err := strconv.Atoi(raw)
	if err != nil || v < least || v > most {
		f.problem(name, problem)
		return def
	}
	return v
}

// fxMakersRate is row 9: GET /rates/makers?from=&to= → FxTradStsAndDtls,
// the best active pool rate with liquidity of the pair in the caller's
// mode, when it was set, and its change over 24 hours.
func (s *Server) fxMakersRate(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	q, e := queryParams(ctx, "from", "to")
	if e != nil {
		s.writeFXError(ctx, e)
		return
	}
	f := fxFields{}
	for _, name := range []string{"from", "to"} {
		if q[name] == "" {
			f.problem(name, "is required")
		}
	}
	if e := f.err(); e != nil {
		s.writeFXError(ctx, e)
		return
	}
	from, fromOK := engine.ParseCurrency(q["from"])
	to, toOK := engine.ParseCurrency(q["to"])
	pair := engine.Pair{Source: from, Destination: to}
	if !fromOK || !toOK || !svc.market.Markets().Supported(pair) {
		s.writeFXError(ctx, invalidCurrencyPair(svc.market.Markets()))
		return
	}
	t := svc.market.Ticker(who.Mode, pair)
	if t == nil {
		s.writeFXError(ctx, invalidCurrencyPair(svc.market.Markets()))
		return
	}
	if !t.HasBest {
		s.writeFXError(ctx, resultError(engine.ResultNoRate))
		return
	}
	now := svc.market.Now().UnixMilli()
	change := decimal.Zero
	if ref, ok := t.BestPast.Reference(now); ok {
		change = percentChange(t.Best, ref.Rate)
	}
	s.writeXML(ctx, fasthttp.StatusOK, &fxmsg.FxTradStsAndDtls{
		SrcCcy:    from.String(),
		TrgtCcy:   to.String(),
		XchgRate:  fxRate(t.Best),
		RateSrc:   fxmsg.RateSourceMarketMaker,
		TmStmp:    fxTime(t.BestSetAt),
		AgeSecs:   max(now-t.BestSetAt, 0) / 1000,
		PctChg24H: fxmsg.Decimal(change.StringFixed(2)),
		OprgMd:    who.Mode.String(),
	})
}

// percentChange is (current − reference) ÷ reference × 100 rounded half to
// even to 2 places, exactly (integer arithmetic on the scaled rates); 0
// when there is no reference.
func percentChange(current, reference engine.Rate) decimal.Decimal {
	if reference.IsZero() {
		return decimal.Zero
	}
	denominator := reference.Decimal().Coefficient() // the scaled integer, exactly
	numerator := current.Decimal().Coefficient()
	numerator.Sub(numerator, denominator)
	numerator.Mul(numerator, big.NewInt(100*100)) // percent, 2 places
	quotient, remainder := new(big.Int).QuoRem(numerator, denominator, new(big.Int))
	twice := remainder.Abs(remainder)
	twice.Lsh(twice, 1)
	if c := twice.Cmp(denominator); c > 0 || c == 0 && quotient.Bit(0) == 1 {
		if numerator.Sign() < 0 {
			quotient.Sub(quotient, big.NewInt(1))
		} else {
			quotient.Add(quotient, big.NewInt(1))
		}
	}
	return decimal.NewFromBigInt(quotient, -2)
}
