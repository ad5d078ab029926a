package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
)

// quoteActor owns one open quote: its status and deadline. Accept, cancel,
// complete and expiry come here; the quote's consequences for pools (holds
// released or settled) and wallets are sent to their owners once the
// quote's event is durable. The actor stops when the quote turns terminal;
// its final view stays in the registry.
//
// Quote actors are virtual (as Orleans grains or protoactor's cluster
// grains): a quote is created without one, its durable state published in
// the registry, and the actor is activated from that state by the first
// message that needs it (System.activate). Most quotes are never touched
// again before they expire or are cancelled, so creating a quote costs no
// spawn, and a million open quotes cost a registry entry and a slot on the
// expiry wheel each (expiry.go) rather than an actor's mailbox and context.
type quoteActor struct {
	sys   *System
	quote *engine.Quote
	ref   *quoteRef

	// inFlight counts this actor's appends not yet durable; waiting holds
	// replies that acknowledge state (safe repeats) until it drops to zero,
	// so no 2xx ever reports a change that is not yet on disk.
	inFlight int
	waiting  []pendingReply
	linger   *time.Timer // set once terminal: stops the actor later
}

// quoteLinger is how long a terminal quote's actor stays alive to answer
// requests already addressed to it.
const quoteLinger = 2 * time.Second

type pendingReply struct {
	to    *actor.PID
	reply *QuoteReply
}

func (a *quoteActor) Receive(ctx actor.Context) {
	a.sys.guard(ctx, func() {
		switch msg := ctx.Message().(type) {
		case *actor.Stopping:
			if a.linger != nil {
				a.linger.Stop()
			}
		case *TransitionQuote:
			a.transition(ctx, msg)
		case *expiryDue:
			a.expireIfDue(ctx)
			if a.quote.Status.Open() {
				a.sys.armExpiry(a.ref, a.quote.ExpiresAt) // fired early (clock skew): again
			}
		case *appendDurable:
			a.durable(ctx, msg)
		}
	})
}

// expireIfDue expires the quote when its deadline has passed. Every command
// calls it first, so a command never acts on a quote that is already dead.
func (a *quoteActor) expireIfDue(ctx actor.Context) {
	if ev := a.quote.ExpireIfDue(a.sys.nowMillis()); ev != nil {
		a.apply(ctx, nil, ev, nil)
	}
}

func (a *quoteActor) transition(ctx actor.Context, cmd *TransitionQuote) {
	if err := a.sys.writable(); err != nil {
		ctx.Respond(&QuoteReply{Err: err})
		return
	}
	a.expireIfDue(ctx)
	if cmd.Operation == OperationAccept && cmd.Accept.OwnerWallets == nil {
		// The engine decides whether the settlement is legal; a wallet
		// must be the quote's owner's.
		if c, ok := a.sys.Client(a.quote.Client); ok {
			withWallets := *cmd
			withWallets.Accept.OwnerWallets = c.Wallets
			cmd = &withWallets
		}
	}
	res, ev, allowed := decide(a.quote, cmd, a.sys.nowMillis(), a.sys.cfg.PaymentWindow.Milliseconds())
	switch ev := ev.(type) {
	case *engine.QuoteAccepted:
		payIn, err := a.sys.payIns.issue(a.quote, ev.At, a.sys.ids)
		if err != nil {
			ctx.Respond(&QuoteReply{Err: err})
			return
		}
		_, collection := a.sys.markets.Collection[a.quote.Pair.Source]
		if source := a.quote.Pair.Source; source.IsToken() && payIn == nil || !source.IsToken() && !collection {
			// No deposit key for a token source's chain, or no collection
			// account for a fiat source (the markets changed): never
			// awaiting_payment without instructions. Nothing held changes:
			// the quote stays pending.
			ctx.Respond(&QuoteReply{Result: engine.ResultPayInUnavailable, Quote: a.quote.Clone()})
			return
		}
		ev.PayIn = payIn
	case *engine.QuoteCompleted:
		// Funds first: the treasury decides and promises the money.
		funding, err := a.sys.fundCompletion(a.quote)
		if err != nil {
			ctx.Respond(&QuoteReply{Err: err})
			return
		}
		if funding.result != engine.ResultOK {
			f := funding.funding
			ctx.Respond(&QuoteReply{Result: funding.result, Quote: a.quote.Clone(), Funding: &f})
			return
		}
		ev.Wallet, ev.Simulated = funding.funding.Wallet.ID, funding.funding.Simulated
	}
	if ev != nil {
		var line []engine.Event
		if cmd.Audit != nil {
			d := engine.AuditDetailsOf(ev, engine.CurrencyNone)
			if c, ok := ev.(*engine.QuoteCompleted); ok {
				d.Amount, d.Currency, d.Account = a.quote.TotalSource(), a.quote.Pair.Source, c.Wallet
			}
			line = a.sys.auditedWith(cmd.Audit, d)
		}
		a.apply(ctx, line, ev, ctx.Sender())
		return
	}
	reply := &QuoteReply{Result: res, Quote: a.quote.Clone()}
	if res == engine.ResultInvalidState {
		reply.AllowedFrom = allowed
	}
	// NB: the reply describes the quote as this actor now has it; when an
	// append is still in flight (an expiry just decided, say), the reply
	// waits for it, so it never reports a state that is not yet durable.
	if a.inFlight > 0 {
		a.waiting = append(a.waiting, pendingReply{to: ctx.Sender(), reply: reply})
		return
	}
	ctx.Respond(reply)
}

// apply moves the quote by ev now (so the next command sees it) and makes ev
// durable, with an operator's audit line if any (one append); once it is,
// the view is published, the consequences are sent to the pools, pair and
// treasury, and replyTo (if any) gets the answer.
func (a *quoteActor) apply(ctx actor.Context, audit []engine.Event, ev engine.Event, replyTo *actor.PID) {
	a.quote.Apply(ev)
	view := a.quote.Clone()
	if _, ok := ev.(*engine.QuoteAccepted); ok {
		a.sys.armExpiry(a.ref, a.quote.ExpiresAt)
	}
	a.inFlight++
	self := addressOf(ctx, a)
	a.sys.appendThen(func(err error) delivery {
		return deliver(self, &appendDurable{event: ev, view: view, replyTo: replyTo, err: err})
	}, append([]engine.Event{ev}, audit...)...)
}

// durable finishes one append: on success it publishes the view, sends the
// event's consequences to their owners and replies; then it flushes the
// replies that waited for the quote's appends to be durable.
func (a *quoteActor) durable(ctx actor.Context, msg *appendDurable) {
	a.inFlight--
	sys, view := a.sys, msg.view
	if msg.err != nil {
		if c, ok := msg.event.(*engine.QuoteCompleted); ok && c.Funded() {
			send(sys, sys.treasuries[view.Mode], &fundsReleased{wallet: c.Wallet, amount: c.Reserved(view)})
		}
		if msg.replyTo != nil {
			ctx.Send(msg.replyTo, &QuoteReply{Err: msg.err})
		}
	} else {
		previous := a.ref.view.Swap(view)
		sys.moved(a.ref, view.Mode, previous.Status, view.Status)
		if previous.Status != view.Status {
			sys.activity.note(view.Mode, view.Status, view.UpdatedAt)
		}
		if !view.Status.Open() {
			sys.expiry.disarm(a.ref)
			a.ref.pid.Store(nil)
		}
		var reply *QuoteReply
		if msg.replyTo != nil {
			reply = &QuoteReply{Result: engine.ResultOK, Quote: view, Durable: true}
		}
		if acc, ok := msg.event.(*engine.QuoteAccepted); ok && acc.PayIn != nil {
			sys.payIns.put(acc.PayIn, view.ID)
		}
		if !sys.quoteConsequences(view, msg.event, msg.replyTo, reply) && reply != nil {
			ctx.Send(msg.replyTo, reply)
		}
	}
	if a.inFlight == 0 {
		for _, p := range a.waiting {
			ctx.Send(p.to, p.reply)
		}
		a.waiting = a.waiting[:0]
		if !a.quote.Status.Open() && a.linger == nil {
			// The registry no longer points here, but a request that read
			// the pid just before may still be on its way: stop only after
			// quoteLinger, with a poison pill queued behind such requests.
			// Anything sent later is dead-lettered and answered from the
			// final view (System.TransitionQuote).
			self, root := ctx.Self(), sys.root
			a.linger = time.AfterFunc(quoteLinger, func() { root.Poison(self) })
		}
	}
}

// quoteConsequences routes a durable quote event's outcome
// (engine.RouteOutcome, the route replay applies too) to the actors that
// own its parts: each slice's pool, the pair's book, the treasury of a
// wallet it pays. Called by the quote actor once the event is durable, in
// log order, so effects arrive in log order.
// It reports whether it took over sending reply to replyTo: a completion
// that debits or credits a wallet is answered by the treasury once both
// are applied, so the partner's next balance read includes them.
func (s *System) quoteConsequences(q *engine.Quote, ev engine.Event, replyTo *actor.PID, reply *QuoteReply) (replied bool) {
	o := new(engine.Outcome)
	engine.RouteOutcome(q, ev, o)
	return s.routeOutcome(o, replyTo, reply)
}

// routeOutcome forwards each part of a routed outcome to its owner.
func (s *System) routeOutcome(o *engine.Outcome, replyTo *actor.PID, reply *QuoteReply) (replied bool) {
	for _, e := range o.Slices {
		s.sendPool(e.Pool, &sliceEffect{effect: e})
	}
	if o.BookDelta != 0 || o.KeyDelta != 0 {
		send(s, s.pairs[o.Book], &bookOutcome{outcome: o})
	}
	if o.Credit != nil || o.Debit != nil {
		mode := o.Book.Mode
		send(s, s.treasuries[mode], &walletsSettled{debit: o.Debit, credit: o.Credit, replyTo: replyTo, reply: reply})
		replied = reply != nil
	}
	return replied
}

func (s *System) sendPool(id engine.PoolID, msg message[*poolActor]) {
	v, ok := s.pools.Load(id)
	if !ok {
		s.setFault(ErrFault)
		return
	}
	send(s, v.(*poolRef).pool, msg)
}

// activate returns the address of the quote's actor, spawning it from the
// published (durable) state if it is not running; false for a terminal
// quote, which needs no actor (see decideTerminal).
func (s *System) activate(ref *quoteRef) (address[*quoteActor], bool) {
	if pid := ref.pid.Load(); pid != nil {
		return address[*quoteActor]{pid}, true
	}
	mu := &s.activating[ref.view.Load().ID[15]] // the id never changes
	mu.Lock()
	defer mu.Unlock()
	if pid := ref.pid.Load(); pid != nil {
		return address[*quoteActor]{pid}, true
	}
	q := ref.view.Load()
	if !q.Status.Open() || s.stopped.Load() {
		return address[*quoteActor]{}, false
	}
	to := spawn(s, &quoteActor{sys: s, quote: q.Clone(), ref: ref}, kindQuote)
	ref.pid.Store(to.pid)
	return to, true
}

// armExpiry (re)sets the quote's expiry for deadline (unix ms): the expiry
// wheel then activates the quote's actor if needed and tells it the
// deadline is due (the actor checks the deadline itself, so a repeated
// firing is harmless).
func (s *System) armExpiry(ref *quoteRef, deadline int64) { s.expiry.arm(ref, deadline) }

// decide asks the engine for cmd's outcome on q without changing q: the
// result, the event to apply (nil for a refusal or a safe repeat) and the
// statuses the operation is allowed from (the 409 details).
func decide(q *engine.Quote, cmd *TransitionQuote, now, paymentWindowMillis int64) (engine.Result, engine.Event, []engine.Status) {
	switch cmd.Operation {
	case OperationAccept:
		res, ev := q.Accept(cmd.Accept, now, paymentWindowMillis)
		return res, engine.EventOf(ev), engine.Accepting.From
	case OperationCancel:
		res, ev := q.Cancel(now)
		if ev != nil {
			ev.ByOperator = cmd.ByOperator
		}
		return res, engine.EventOf(ev), engine.Cancelling.From
	case OperationComplete:
		res, ev := q.Complete(now)
		return res, engine.EventOf(ev), engine.Completing.From
	}
	return engine.ResultValidation, nil, nil
}
