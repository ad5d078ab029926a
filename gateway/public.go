package gateway

import (
	"crypto/sha256"
	"encoding/binary"
	"sync"

	"github.com/shopspring/decimal"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

const apiBase = "/api/v1"

// partnerHandler handles one authenticated partner request.
type partnerHandler func(ctx *fasthttp.RequestCtx, svc services, who actors.Principal)

// partner authenticates the API key, applies the per-key rate limit and
// refuses while the service is not ready, answering refusals in JSON.
func (s *Server) partner(h partnerHandler) fasthttp.RequestHandler {
	return s.authenticated(s.writeError, h)
}

// authenticated is the one partner gate of both dialects (JSON and the XML
// FX API): the bearer credential, readiness, the key, the access log's
// client and the rate limit, in that order; fail writes a refusal in the
// caller's dialect.
func (s *Server) authenticated(fail func(*fasthttp.RequestCtx, *apiError), h partnerHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		token, ok := bearer(ctx)
		if !ok {
			fail(ctx, errUnauthorized)
			return
		}
		svc, ok := s.served()
		if !ok || s.closing.Load() {
			fail(ctx, errUnavailable)
			return
		}
		who, ok := svc.directory.Authenticate(token)
		if !ok {
			fail(ctx, errUnauthorized)
			return
		}
		if s.cfg.AccessLog {
			ctx.SetUserValue(clientValue{}, who.Client)
		}
		if !s.limiter.allow(ctx, who.Key) {
			fail(ctx, errRateLimited)
			return
		}
		h(ctx, svc, who)
	}
}

// ---- Quotes ----------------------------------------------------------------

func (s *Server) createQuote(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	if !requireJSON(ctx) {
		s.writeError(ctx, errMediaJSON)
		return
	}
	cmd, e := createCommand(ctx, svc.market.Markets(), who, engine.ChannelJSON, parseCreateQuote)
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	reply := svc.quotes.CreateQuote(cmd)
	s.quoteReply(ctx, svc.market, reply, cmd)
}

// createCommand builds a create from a request of either API: the
// Idempotency-Key, the body (parsed by parse), the caller and the request's
// hash. JSON create and XML initiate share it, so both keep the same checks
// in the same order.
func createCommand(ctx *fasthttp.RequestCtx, markets *engine.Markets, who actors.Principal, channel engine.Channel,
	parse func(body []byte, markets *engine.Markets) (*actors.CreateQuote, *apiError)) (*actors.CreateQuote, *apiError) {
	key, e := idempotencyKey(ctx)
	if e != nil {
		return nil, e
	}
	cmd, e := parse(ctx.PostBody(), markets)
	if e != nil {
		return nil, e
	}
	cmd.Key, cmd.Client, cmd.Mode, cmd.IdempotencyKey, cmd.Channel = who.Key, who.Client, who.Mode, engine.MakeIdemKey(key), channel
	cmd.RequestHash = requestHash(cmd)
	return cmd, nil
}

func idempotencyKey(ctx *fasthttp.RequestCtx) (string, *apiError) {
	raw := ctx.Request.Header.Peek("Idempotency-Key")
	if raw == nil {
		return "", nil
	}
	if len(raw) == 0 || len(raw) > idempotencyKeyBytesMax || !printableASCII(raw) {
		return "", fieldError("Idempotency-Key", "must be 1 to 255 printable ASCII characters")
	}
	return string(raw), nil
}

// parseCreateQuote validates a create request (spec §5, §6).
func parseCreateQuote(body []byte, markets *engine.Markets) (*actors.CreateQuote, *apiError) {
	o, e := parseObject(body)
	if e != nil {
		return nil, e
	}
	cmd := &actors.CreateQuote{}
	source, sourceOK := o.str("sourceCurrency", true, enumBytesMax)
	destination, destinationOK := o.str("destinationCurrency", true, enumBytesMax)
	direction, directionOK := o.str("amountDirection", true, enumBytesMax)
	amount, amountOK := o.number("amount", true)
	cmd.Rate, _ = o.rate("rate")
	if chain, ok := o.str("chain", false, enumBytesMax); ok {
		if cmd.Chain, ok = engine.ParseChain(chain); !ok {
			o.problem("chain", "must be one of TRON, ETHEREUM, BSC, POLYGON, SOLANA")
		}
	}
	if listing, ok := o.str("listingId", false, idBytesMax); ok {
		id, ok := engine.ParseUUID(listing)
		switch {
		case !ok:
			o.problem("listingId", "must be a UUID")
		case id == [16]byte{}:
			// The nil UUID names no pool; taken as "not given" it lifted
			// the listing restriction the partner asked for.
			o.problem("listingId", "does not name a listing of this pair and mode")
		}
		cmd.Listing = engine.PoolID(id)
	}
	if chat, ok := o.child("chatMetadata"); ok {
		cmd.Chat = parseChat(chat)
	}
	terms := createTerms{markets: markets, source: source, sourceOK: sourceOK, destination: destination, destinationOK: destinationOK,
		amount: amount, amountOK: amountOK, amountField: "amount", anyNumberSyntax: true}
	if directionOK {
		switch direction {
		case "source":
			terms.direction = engine.DirectionSource
		case "destination":
			terms.direction = engine.DirectionDestination
		default:
			o.problem("amountDirection", `must be "source" or "destination"`)
		}
	}
	if e := terms.meaning(cmd, o); e != nil {
		return nil, e
	}
	if cmd.Chain != engine.ChainNone && markets.Supported(cmd.Pair) {
		token := tokenSide(cmd.Pair)
		switch {
		case token == engine.CurrencyNone:
			o.problem("chain", "applies only when one side is a token")
		case !markets.ChainAllowed(token, cmd.Chain):
			o.problem("chain", chainsText(markets, token))
		}
	}
	if e := o.finish(); e != nil {
		return nil, e
	}
	if cmd.Chain == engine.ChainNone {
		cmd.Chain = defaultChain(markets, cmd.Pair)
	}
	return cmd, nil
}

func parseChat(o *object) *engine.Chat {
	c := &engine.Chat{}
	c.ConversationID, _ = o.str("conversationId", false, chatFieldBytesMax)
	c.ChatQuoteID, _ = o.str("chatQuoteId", false, chatFieldBytesMax)
	c.ListingID, _ = o.str("listingId", false, chatFieldBytesMax)
	c.NegotiationStartedAt = o.timestamp("negotiationStartedAt")
	c.QuoteSentAt = o.timestamp("quoteSentAt")
	o.unknown()
	return c
}

// requestHash digests a create request's meaning (not its bytes), so a
// retry with the same members in another order or spacing is "the same
// body" for Idempotency-Key.
func requestHash(cmd *actors.CreateQuote) [32]byte {
	h := sha256.New()
	var b []byte
	b = append(b, byte(cmd.Pair.Source), byte(cmd.Pair.Destination), byte(cmd.Direction), byte(cmd.Chain), byte(cmd.Channel))
	b = binary.AppendVarint(b, int64(cmd.Amount))
	b = engine.AppendRateUvarint(b, cmd.Rate) // a rate below 2^64 units hashes as before
	b = append(b, cmd.Listing[:]...)
	if c := cmd.Chat; c != nil {
		for _, s := range []string{c.ConversationID, c.ChatQuoteID, c.ListingID, c.NegotiationStartedAt, c.QuoteSentAt} {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
	}
	h.Write(b)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// refusal is the error of a quote operation the engine refused, with the
// details each result carries, for both dialects; nil when it succeeded.
// create is the request of a create, nil for a transition.
func refusal(reply *actors.QuoteReply, create *actors.CreateQuote) *apiError {
	if reply.Result == engine.ResultOK {
		return nil
	}
	e := resultError(reply.Result)
	switch reply.Result {
	case engine.ResultInvalidState:
		allowed := make([]string, len(reply.AllowedFrom))
		for i, st := range reply.AllowedFrom {
			allowed[i] = st.String()
		}
		status := ""
		if reply.Quote != nil {
			status = reply.Quote.Status.String()
		}
		e.details = map[string]any{"status": status, "allowedFrom": allowed}
	case engine.ResultInsufficientFunds:
		if reply.Funding != nil && reply.Quote != nil {
			e.message = "the partner's wallet does not hold the quote's total source amount: the pay-in has not arrived"
			e.details = fundsDetails(reply.Quote, reply.Funding)
		}
	case engine.ResultInsufficientLiquidity:
		if create != nil {
			e.details = liquidityDetails(create, reply.Allocation)
		}
	case engine.ResultValidation:
		if reply.Field != "" {
			e = fieldError(reply.Field, "does not name a listing of this pair and mode")
		}
	case engine.ResultOutsidePairBounds:
		c := reply.Bounds.Pair.Source
		e.details = map[string]any{
			"minimum":  rawNumber(engine.AppendAmount(nil, reply.Bounds.MinSource, c)),
			"maximum":  rawNumber(engine.AppendAmount(nil, reply.Bounds.MaxSource, c)),
			"currency": c.String(),
		}
	case engine.ResultExposureLimit:
		if x := reply.Exposure; x != nil {
			c := x.Pair.Destination
			e.details = map[string]any{
				"pair":      x.Pair.String(),
				"maxShare":  rawNumber(shareText(x.MaxShare)),
				"reserved":  rawNumber(engine.AppendAmount(nil, x.Reserved, c)),
				"requested": rawNumber(engine.AppendAmount(nil, x.Requested, c)),
			}
		}
	}
	return e
}

// shareText writes a share in parts per million as a decimal: 500000 → 0.5.
func shareText(ppm uint32) []byte {
	return []byte(decimal.New(int64(ppm), -6).String())
}

// quoteReply answers a quote operation.
func (s *Server) quoteReply(ctx *fasthttp.RequestCtx, market marketService, reply *actors.QuoteReply, create *actors.CreateQuote) {
	if reply.Err != nil {
		s.operatingError(ctx, reply.Err)
		return
	}
	if e := refusal(reply, create); e != nil {
		s.writeError(ctx, e)
		return
	}
	now := market.Now().UnixMilli()
	if reply.Replayed {
		now = reply.Quote.CreatedAt
		ctx.Response.Header.Set("Idempotent-Replayed", "true")
	}
	markFenced(ctx, reply.Durable)
	s.writeQuote(ctx, reply.Quote, now)
}

func liquidityDetails(cmd *actors.CreateQuote, a engine.AllocationOutcome) map[string]any {
	c := cmd.Pair.Source
	if cmd.Direction == engine.DirectionDestination {
		c = cmd.Pair.Destination
	}
	d := map[string]any{
		"requested": rawNumber(engine.AppendAmount(nil, cmd.Amount, c)),
		"fillable":  rawNumber(engine.AppendAmount(nil, a.Fillable, c)),
		"bestRate":  nil,
	}
	if a.HasBestRate {
		d["bestRate"] = rawNumber(engine.AppendRate(nil, a.BestRate))
	}
	return d
}

// quoteID parses the {id} path parameter.
func quoteID(ctx *fasthttp.RequestCtx) (engine.QuoteID, *apiError) {
	raw, _ := ctx.UserValue("id").(string)
	id, ok := engine.ParseUUID(raw)
	if !ok {
		return engine.QuoteID{}, fieldError("id", "must be a UUID")
	}
	return engine.QuoteID(id), nil
}

func (s *Server) getQuote(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	id, e := quoteID(ctx)
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	q, ok := svc.quotes.Quote(who.Client, who.Mode, id)
	if !ok {
		s.writeError(ctx, resultError(engine.ResultQuoteNotFound))
		return
	}
	s.writeQuote(ctx, q, svc.market.Now().UnixMilli())
}

func (s *Server) acceptQuote(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	id, e := quoteID(ctx)
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	o, ok := s.jsonRequest(ctx)
	if !ok {
		return
	}
	raw, ok := o.str("accountId", true, idBytesMax)
	account, valid := engine.ParseUUID(raw)
	if ok && !valid {
		o.problem("accountId", "must be a UUID")
	}
	if e := o.finish(); e != nil {
		s.writeError(ctx, e)
		return
	}
	q, found := svc.quotes.Quote(who.Client, who.Mode, id)
	if !found {
		s.writeError(ctx, resultError(engine.ResultQuoteNotFound))
		return
	}
	settlement, e := walletSettlement(svc.directory, who, q.Pair.Destination)
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	reply := svc.quotes.TransitionQuote(who.Client, who.Mode, id, &actors.TransitionQuote{
		Operation: actors.OperationAccept,
		Accept: engine.AcceptQuote{NamesPoolAccount: true, PoolAccount: engine.AccountID(account),
			Settlement: settlement},
	})
	s.quoteReply(ctx, svc.market, reply, nil)
}

// walletSettlement settles to the partner's own wallet in currency c.
func walletSettlement(directory directoryService, who actors.Principal, c engine.Currency) (engine.Settlement, *apiError) {
	client, ok := directory.Client(who.Client)
	if !ok {
		return engine.Settlement{}, errUnauthorized
	}
	account, ok := client.Wallet(who.Mode, c)
	if !ok {
		return engine.Settlement{}, resultError(engine.ResultInvalidAccount)
	}
	return engine.Settlement{Kind: engine.SettlementWallet, Account: account}, nil
}

func (s *Server) transition(op actors.QuoteOperation) partnerHandler {
	return func(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
		id, e := quoteID(ctx)
		if e != nil {
			s.writeError(ctx, e)
			return
		}
		if len(ctx.PostBody()) > 0 && !requireJSON(ctx) {
			s.writeError(ctx, errMediaJSON)
			return
		}
		reply := svc.quotes.TransitionQuote(who.Client, who.Mode, id, &actors.TransitionQuote{Operation: op})
		s.quoteReply(ctx, svc.market, reply, nil)
	}
}

// responseBuffers recycles the buffers quote responses are rendered into
// (SetBody copies into fasthttp's own pooled buffer).
var responseBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// writeQuote answers 200 with the quote's JSON as of time now.
func (s *Server) writeQuote(ctx *fasthttp.RequestCtx, q *engine.Quote, now int64) {
	buf := responseBuffers.Get().(*[]byte)
	*buf = s.appendQuote((*buf)[:0], q, now)
	s.writeJSON(ctx, fasthttp.StatusOK, *buf)
	responseBuffers.Put(buf)
}

// appendSettlement renders where an accepted quote's destination funds go:
// the partner's wallet, a bank account or a chain address.
func appendSettlement(w *jsonWriter, q *engine.Quote) {
	st := q.SettlementOrZero()
	switch st.Kind {
	case engine.SettlementWallet:
		w.open("settlement")
		w.str("type", "wallet")
		w.id("accountId", st.Account)
	case engine.SettlementBank:
		w.open("settlement")
		w.str("type", "bank")
		w.str("accountName", st.AccountName)
		w.str("accountNumber", st.AccountNumber)
		w.str("bankCode", st.BankCode)
	case engine.SettlementChain:
		w.open("settlement")
		w.str("type", "chain")
		w.str("chain", q.Chain.String())
		w.str("address", st.Address)
	default:
		return
	}
	w.close()
}

// appendQuote renders the spec's Quote JSON (spec §6) as of time now.
func (s *Server) appendQuote(b []byte, q *engine.Quote, now int64) []byte {
	return appendQuoteIn(b, q, now, s.markets(), s.received(q))
}

// appendQuoteIn is appendQuote with the markets in force (their
// collection accounts) and whether a deposit to q's pay-in was credited
// given, not read from the running system.
func appendQuoteIn(b []byte, q *engine.Quote, now int64, markets *engine.Markets, received bool) []byte {
	src, dst := q.Pair.Source, q.Pair.Destination
	amountCurrency := src
	if q.Direction == engine.DirectionDestination {
		amountCurrency = dst
	}
	w := jsonWriter{b: b}
	w.open("")
	w.id("quoteId", q.ID)
	w.str("status", q.Status.String())
	w.str("source", src.String())
	w.str("destination", dst.String())
	if q.Chain != engine.ChainNone {
		w.str("chain", q.Chain.String())
	}
	w.amount("amount", q.Amount, amountCurrency)
	w.amount("totalSourceAmount", q.TotalSource(), src)
	w.amount("totalDestinationAmount", q.TotalDestination(), dst)
	w.id("clientId", q.Client)
	w.str("mode", q.Mode.String())
	w.integer("ttl", q.SecondsLeft(now))
	appendAllocationResult(&w, q)
	appendPayInMetadata(&w, q, markets, received)
	appendSettlement(&w, q)
	if q.Chat != nil {
		appendChatMetadata(&w, q)
	}
	w.time("createdAt", q.CreatedAt)
	w.time("updatedAt", q.UpdatedAt)
	if q.Status.Open() {
		w.time("expiresAt", q.ExpiresAt)
	}
	w.close()
	return w.b
}

// appendAllocationResult writes q's allocationResult: its totals, its
// weighted average rate and each allocation.
func appendAllocationResult(w *jsonWriter, q *engine.Quote) {
	src, dst := q.Pair.Source, q.Pair.Destination
	w.open("allocationResult")
	w.amount("totalSourceAmount", q.TotalSource(), src)
	w.rate("weightedAverageRate", q.WeightedAverageRate())
	w.amount("totalDestinationAmount", q.TotalDestination(), dst)
	w.openArray("allocations")
	pair := q.Pair.String()
	as := q.Allocations()
	for i := range as {
		a := &as[i]
		w.open("")
		w.id("id", a.ID)
		w.id("clientId", q.Client)
		w.id("poolId", a.Pool)
		w.id("poolAccountId", a.PoolAccount)
		w.amount("allocatedAmount", a.Destination, dst)
		w.amount("sourceAmount", a.Source, src)
		w.rate("rate", a.Rate)
		w.ref("reference", &a.Reference)
		w.open("metadata")
		w.str("poolName", a.PoolName)
		w.str("pair", pair)
		w.close()
		w.close()
	}
	w.closeArray()
	w.close()
}

// appendPayInMetadata writes how to pay q in, once there is a way: the
// bank account to credit (an accepted quote in a market with a collection
// account) and the crypto deposit address issued at acceptance. A quote
// with neither has no metadata member.
func appendPayInMetadata(w *jsonWriter, q *engine.Quote, markets *engine.Markets, received bool) {
	bank, hasBank := markets.CollectionAccount(q.Mode, q.Pair.Source)
	hasBank = hasBank && q.Accepted != nil
	if !hasBank && q.PayIn == nil {
		return
	}
	w.open("metadata")
	if hasBank {
		w.open("bankPayIn")
		w.str("accountName", bank.AccountName)
		w.str("accountNumber", bank.AccountNumber)
		w.str("bankName", bank.BankName)
		w.ref("reference", &q.Reference)
		w.close()
	}
	if q.PayIn != nil {
		w.open("cryptoPayIn")
		appendCryptoPayIn(w, q, received)
		w.close()
	}
	w.close()
}

// appendChatMetadata writes the chat negotiation's members of q (which
// has a chat): those given, and when it was accepted.
func appendChatMetadata(w *jsonWriter, q *engine.Quote) {
	c := q.Chat
	w.open("chatMetadata")
	optional := func(k, v string) {
		if v != "" {
			w.str(k, v)
		}
	}
	optional("conversationId", c.ConversationID)
	optional("chatQuoteId", c.ChatQuoteID)
	optional("listingId", c.ListingID)
	if !c.InitialListingRate.IsZero() {
		w.key("initialListingRate")
		w.b = appendString(w.b, string(engine.AppendRate(nil, c.InitialListingRate)))
	}
	optional("negotiationStartedAt", c.NegotiationStartedAt)
	optional("quoteSentAt", c.QuoteSentAt)
	if q.Accepted != nil {
		w.time("acceptedAt", q.Accepted.At)
	}
	w.close()
}

// ---- Balances ----------------------------------------------------------------

func (s *Server) balances(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	source := ctx.Request.Header.Peek("x-service-source")
	if len(source) == 0 {
		s.writeError(ctx, &apiError{status: fasthttp.StatusBadRequest, code: codeMissingHeader,
			message: "the x-service-source header is required"})
		return
	}
	if len(source) > serviceSourceBytesMax || !printableASCII(source) {
		s.writeError(ctx, fieldError("x-service-source", "must be at most 128 printable ASCII characters"))
		return
	}
	s.writeBalances(ctx, svc.money.ClientAccounts(who.Client, who.Mode))
}

func (s *Server) balance(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	raw, _ := ctx.UserValue("accountId").(string)
	id, ok := engine.ParseUUID(raw)
	if !ok {
		s.writeError(ctx, fieldError("accountId", "must be a UUID"))
		return
	}
	a, ok := svc.money.Account(engine.AccountID(id))
	if !ok || !svc.money.AccountOwnedBy(a, who.Client, who.Mode) {
		s.writeError(ctx, resultError(engine.ResultAccountNotFound))
		return
	}
	s.writeBalances(ctx, []*engine.Account{a})
}

func (s *Server) balancesByCurrency(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	raw, _ := ctx.UserValue("currency").(string)
	c, ok := engine.ParseCurrency(raw)
	if !ok {
		e := resultError(engine.ResultInvalidCurrency)
		e.message = "unknown currency; known currencies are GHS, NGN and USDT"
		s.writeError(ctx, e)
		return
	}
	var out []*engine.Account
	for _, a := range svc.money.ClientAccounts(who.Client, who.Mode) {
		if a.Currency == c {
			out = append(out, a)
		}
	}
	s.writeBalances(ctx, out)
}

func (s *Server) writeBalances(ctx *fasthttp.RequestCtx, accounts []*engine.Account) {
	w := jsonWriter{b: make([]byte, 0, 128*len(accounts)+2)}
	w.b = append(w.b, '[')
	for _, a := range accounts {
		appendBalance(&w, a)
	}
	w.b = append(w.b, ']')
	s.writeJSON(ctx, fasthttp.StatusOK, w.b)
}

func appendBalance(w *jsonWriter, a *engine.Account) {
	w.open("")
	appendBalanceMembers(w, a)
	w.close()
}

// appendBalanceMembers writes a Balance's members into an open object.
func appendBalanceMembers(w *jsonWriter, a *engine.Account) {
	w.id("accountId", a.ID)
	w.str("currency", a.Currency.String())
	w.amount("balance", a.Balance, a.Currency)
	w.amount("availableBalance", a.Available(), a.Currency)
}

// received reports whether a deposit to q's pay-in was credited.
func (s *Server) received(q *engine.Quote) bool {
	svc, ok := s.served()
	return q.PayIn != nil && ok && len(svc.money.Receipts(q.ID)) > 0
}

// appendCryptoPayIn writes the members of q's CryptoPayInDetails
// (spec §6): the address issued at acceptance and what to send to it.
// expiresAt is the end of the payment window.
func appendCryptoPayIn(w *jsonWriter, q *engine.Quote, received bool) {
	p := q.PayIn
	w.id("addressId", p.Address)
	w.str("address", p.Deposit)
	w.str("chain", p.Chain.String())
	w.str("token", p.Currency.String())
	w.str("addressType", "hd_deposit")
	w.amount("expectedAmount", q.TotalSource(), p.Currency)
	w.ref("externalReference", &q.Reference)
	w.str("status", q.PayInStatus(received))
	w.time("createdAt", p.CreatedAt)
	w.time("expiresAt", q.ExpiresAt)
	w.str("virtualAccountId", engine.VirtualAccountID(q.Client, p.Currency))
	w.integer("derivationIndex", int64(p.Index))
	w.str("warningMessage", engine.PayInWarning(p.Currency, p.Chain))
}
