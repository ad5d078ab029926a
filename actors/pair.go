package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
)

// pairActor is the rate pair actor of one (mode, pair): it owns that pair's
// order book — which pools may be reserved from, in price-time priority, and
// how much of each pool's liquidity is still unreserved. Every reservation
// of the pair's liquidity happens here, one message at a time, which is what
// makes allocation all-or-nothing and over-allocation impossible under any
// concurrency.
//
// NB: the alternative — each pool actor deciding its own reservations —
// needs a two-phase reservation across pools for a split quote: either
// another quote can observe (and be refused because of) a half-made
// reservation, or every quote costs 2k+1 messages. Instead the pool actors
// own their ledgers and the pair actor owns the reservation budget, which
// never exceeds the pool's available liquidity: it is decreased here before
// a reservation is logged and increased only when a release or deposit is
// durable.
//
// Pool changes that move available liquidity or priority (rate, status,
// deposit, withdrawal) are decided here too, logged, and then forwarded to
// the pool actor, which applies them to its ledger and answers the caller.
type pairActor struct {
	sys    *System
	key    engine.BookKey
	book   *engine.Book
	ticker *engine.Ticker
	info   map[engine.PoolID]poolInfo
	// spec is the pair's bounds; inForce false means the markets no longer
	// list the pair: it takes no new quote. Both fixed at Start (the
	// markets in force are immutable for a System's life).
	spec    engine.PairSpec
	inForce bool
	slice   [engine.SlicesMax]engine.Slice
	// exposure is each API key's reservations in this book (limits.go).
	exposure exposure
}

// observe recomputes the pair's rates after a book change and, when they
// moved, publishes a new view and tells the rate listener.
func (a *pairActor) observe() {
	before := *a.ticker
	consensusChanged := a.ticker.Observe(a.book, a.sys.nowMillis())
	if !consensusChanged && before.Best == a.ticker.Best && before.BestSetAt == a.ticker.BestSetAt &&
		before.HasBest == a.ticker.HasBest {
		return
	}
	view := a.ticker.Clone()
	a.sys.tickers[a.key].Store(view)
	if consensusChanged && a.sys.cfg.RateListener != nil {
		a.sys.cfg.RateListener(a.key, view)
	}
}

// poolInfo is what the pair actor needs of a pool beyond its book entry.
type poolInfo struct {
	name             string
	liquidityAccount engine.AccountID
}

func poolInfoOf(p *engine.Pool) poolInfo {
	return poolInfo{name: p.Name, liquidityAccount: p.Liquidity.ID}
}

func (a *pairActor) Receive(ctx actor.Context) {
	a.sys.guard(ctx, func() {
		switch msg := ctx.Message().(type) {
		case *CreateQuote:
			a.createQuote(ctx, msg)
		case *quoteRecorded:
			a.quoteRecorded(ctx, msg)
		case *PoolCommand:
			a.changePool(ctx, msg)
		case *poolAdded:
			a.book.Upsert(msg.entry)
			a.info[msg.entry.Pool] = msg.info
			a.observe()
		case *bookOutcome:
			o := msg.outcome
			a.book.ApplyOutcome(o)
			a.exposure.add(o.Key, engine.Amount(o.KeyDelta)*o.Reserved)
			if o.KeyDelta < 0 {
				a.sys.open.release(o.Key)
			}
			if o.BookDelta != 0 {
				a.observe()
			}
		case *readExposures:
			ctx.Respond(a.exposure.largest(msg.n))
		case *budgetDeposited:
			if msg.err == nil {
				a.book.AddAvailable(msg.pool, msg.amount)
				a.observe()
			}
			ctx.Send(msg.replyTo, msg.reply(msg.err))
		}
	})
}

func (a *pairActor) createQuote(ctx actor.Context, cmd *CreateQuote) {
	if err := a.sys.writable(); err != nil {
		ctx.Respond(&QuoteReply{Err: err})
		return
	}
	if !a.sys.open.claim(cmd.Key) {
		ctx.Respond(&QuoteReply{Result: engine.ResultTooManyOpenQuotes})
		return
	}
	if !a.reserve(ctx, cmd) {
		a.sys.open.release(cmd.Key) // refused: no quote
	}
}

// reserve decides cmd and, when it allocates, reserves its liquidity and
// appends its QuoteCreated; it reports whether it did (else it answered
// the refusal).
func (a *pairActor) reserve(ctx actor.Context, cmd *CreateQuote) bool {
	spec := a.spec
	if !a.inForce {
		ctx.Respond(&QuoteReply{Result: engine.ResultInvalidCurrencyPair})
		return false
	}
	var listingRate engine.Rate
	listing := cmd.Listing
	if !listing.IsZero() {
		e, ok := a.book.Entry(listing)
		if !ok {
			ctx.Respond(&QuoteReply{Result: engine.ResultValidation, Field: "listingId"})
			return false
		}
		listingRate = e.Rate
	} else if cmd.Chat != nil {
		if id, ok := engine.ParseUUID(cmd.Chat.ListingID); ok {
			if e, ok := a.book.Entry(engine.PoolID(id)); ok {
				listingRate = e.Rate
			}
		}
	}
	if cmd.Direction == engine.DirectionSource && !spec.Within(cmd.Amount) {
		ctx.Respond(&QuoteReply{Result: engine.ResultOutsidePairBounds, Bounds: spec})
		return false
	}
	alloc := a.book.Allocate(engine.AllocationRequest{
		Direction: cmd.Direction, Amount: cmd.Amount, MinRate: cmd.Rate, Only: listing,
	}, a.slice[:0])
	if alloc.Result != engine.ResultOK {
		ctx.Respond(&QuoteReply{Result: alloc.Result, Allocation: alloc})
		return false
	}
	reserved := alloc.TotalDestination
	if !spec.Within(alloc.TotalSource) {
		ctx.Respond(&QuoteReply{Result: engine.ResultOutsidePairBounds, Bounds: spec})
		return false
	}
	if a.exposure.refuse(cmd.Key, reserved, a.book) {
		ctx.Respond(&QuoteReply{Result: engine.ResultExposureLimit, Exposure: &ExposureLimit{
			Pair: a.key.Pair, MaxShare: a.exposure.maxShare, Reserved: a.exposure.byKey[cmd.Key], Requested: reserved}})
		return false
	}
	now := a.sys.nowMillis()
	ids := a.sys.ids
	ev := &engine.QuoteCreated{
		At: now, Quote: engine.QuoteID(ids.UUID()), Client: cmd.Client, Mode: cmd.Mode, Pair: cmd.Pair,
		Direction: cmd.Direction, Amount: cmd.Amount, ProposedRate: cmd.Rate, Chain: cmd.Chain,
		Reference: ids.Reference("OJA-", 10), ExpiresAt: now + a.sys.cfg.QuoteTTL.Milliseconds(),
		Allocations:    make([]engine.Allocation, len(alloc.Slices)),
		IdempotencyKey: cmd.IdempotencyKey, RequestHash: cmd.RequestHash, Channel: cmd.Channel, Key: cmd.Key,
	}
	for i, sl := range alloc.Slices {
		info := a.info[sl.Pool]
		ev.Allocations[i] = engine.Allocation{
			ID: engine.AllocationID(ids.UUID()), Pool: sl.Pool, PoolAccount: info.liquidityAccount,
			PoolName: info.name, Rate: sl.Rate, Source: sl.Source, Destination: sl.Destination,
			Reference: ids.Reference("ALC-", 12),
		}
	}
	if cmd.Chat != nil {
		chat := *cmd.Chat
		chat.InitialListingRate = listingRate
		ev.Chat = &chat
	}
	a.book.Reserve(alloc.Slices)
	a.exposure.add(cmd.Key, reserved)
	a.observe()
	replyTo, self := ctx.Sender(), addressOf(ctx, a)
	a.sys.appendThen(func(err error) delivery {
		return deliver(self, &quoteRecorded{event: ev, replyTo: replyTo, err: err})
	}, ev)
	return true
}

// quoteRecorded finishes a create once its event is durable: holds go to the
// pools, the quote actor starts, the registry and the idempotency index learn
// the quote, and only then the caller gets its reply.
func (a *pairActor) quoteRecorded(ctx actor.Context, msg *quoteRecorded) {
	sys, ev := a.sys, msg.event
	if msg.err != nil {
		var reserved engine.Amount
		for i := range ev.Allocations {
			a.book.AddAvailable(ev.Allocations[i].Pool, ev.Allocations[i].Destination)
			reserved += ev.Allocations[i].Destination
		}
		a.exposure.add(ev.Key, -reserved)
		a.sys.open.release(ev.Key)
		ctx.Send(msg.replyTo, &QuoteReply{Err: msg.err})
		return
	}
	q := engine.NewQuote(ev)
	o := new(engine.Outcome)
	engine.RouteOutcome(q, ev, o)
	// The book's and the key's parts (the slices taken from available
	// liquidity, the key's exposure) were applied when the quote was
	// decided, before the append: only the pools get theirs now.
	o.BookDelta, o.KeyDelta = 0, 0
	sys.routeOutcome(o, nil, nil)
	ref := &quoteRef{}
	ref.view.Store(q)
	sys.armExpiry(ref, q.ExpiresAt)
	sys.quotes.Store(q.ID, ref)
	sys.listing.add(q, ref)
	sys.references.add(q)
	sys.moved(ref, q.Mode, 0, q.Status)
	sys.activity.note(q.Mode, q.Status, q.CreatedAt)
	if !ev.IdempotencyKey.IsZero() {
		sys.idem.store(engine.IdempotencyScope{Client: q.Client, Mode: q.Mode, Key: ev.IdempotencyKey}, q)
	}
	ctx.Send(msg.replyTo, &QuoteReply{Result: engine.ResultOK, Quote: q, Durable: true})
}

func (a *pairActor) changePool(ctx actor.Context, cmd *PoolCommand) {
	if err := a.sys.writable(); err != nil {
		ctx.Respond(&PoolReply{Err: err})
		return
	}
	entry, ok := a.book.Entry(cmd.Pool)
	if !ok {
		ctx.Respond(&PoolReply{Result: engine.ResultPoolNotFound})
		return
	}
	now := a.sys.nowMillis()
	var ev engine.Event
	switch {
	case !cmd.Rate.IsZero():
		ev = &engine.PoolRateSet{At: now, Pool: cmd.Pool, Rate: cmd.Rate}
		a.book.SetRate(cmd.Pool, cmd.Rate, now)
	case cmd.Status != nil:
		ev = &engine.PoolStatusSet{At: now, Pool: cmd.Pool, Active: *cmd.Status}
		a.book.SetActive(cmd.Pool, *cmd.Status)
	case cmd.Withdraw > 0:
		if cmd.Withdraw > entry.Available {
			ctx.Respond(&PoolReply{Result: engine.ResultInsufficientFunds})
			return
		}
		ev = &engine.PoolWithdrawn{At: now, Pool: cmd.Pool, Amount: cmd.Withdraw}
		a.book.AddAvailable(cmd.Pool, -cmd.Withdraw)
	default:
		ctx.Respond(&PoolReply{Result: engine.ResultValidation})
		return
	}
	a.observe()
	// NB: the book moved before the append. A failed append fails the log
	// and every later write with it (until a restart rebuilds from the log),
	// so the book is never used for a write again and nothing is undone.
	sys, replyTo := a.sys, ctx.Sender()
	v, ok := sys.pools.Load(cmd.Pool)
	if !ok { // a pool in the book is registered before it is added to it
		sys.setFault(ErrFault)
		ctx.Respond(&PoolReply{Err: ErrUnavailable})
		return
	}
	pool := v.(*poolRef).pool
	sys.appendThen(func(err error) delivery {
		if err != nil {
			return replyWith(replyTo, &PoolReply{Err: err})
		}
		return deliver(pool, &poolEventApplied{event: ev, replyTo: replyTo})
	}, sys.audited(cmd.Audit, a.key.Pair.Destination, ev)...)
}
