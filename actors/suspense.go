package actors

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
)

// Money held in suspense (engine/suspense.go): the treasury actor of a mode
// decides, under the payments' lock (the bank id is one identity in both
// modes), holding an unapplied receipt and settling one — applied to a
// wallet or returned — and publishes the receipts it holds, newest first,
// for readers (the gateway's listing, the console).

// unappliedViews are each mode's receipts held in suspense, newest first:
// an immutable slice swapped whole by the mode's treasury actor.
type unappliedViews [engine.ModeSandbox + 1]atomic.Pointer[[]engine.UnappliedReceipt]

// publishUnapplied publishes the receipts t holds.
func (a *treasuryActor) publishUnapplied() {
	list := a.treasury.UnappliedList()
	view := make([]engine.UnappliedReceipt, len(list))
	for i, u := range list {
		view[i] = *u
	}
	a.sys.unapplied[a.treasury.Mode].Store(&view)
}

// UnappliedList is mode m's receipts held in suspense, newest first. The
// slice is shared: do not modify it.
func (s *System) UnappliedList(m engine.Mode) []engine.UnappliedReceipt {
	if v := s.unapplied[m].Load(); v != nil {
		return *v
	}
	return nil
}

// Unapplied finds a receipt held in suspense, in either mode.
func (s *System) Unapplied(id engine.UnappliedID) (engine.UnappliedReceipt, bool) {
	for _, m := range engine.Modes {
		for _, u := range s.UnappliedList(m) {
			if u.ID == id {
				return u, true
			}
		}
	}
	return engine.UnappliedReceipt{}, false
}

// Payment is the first payment recorded under id (a copy), if any: what
// a bank statement's import asks of an entry before anything else.
func (s *System) Payment(id engine.Identity) (engine.Payment, bool) {
	s.payments.mu.Lock()
	defer s.payments.mu.Unlock()
	if p, ok := s.payments.p.Lookup(id); ok {
		return *p, true
	}
	return engine.Payment{}, false
}

// Suspense requests of a mode's treasury actor. Reply: *UnappliedReply.
type (
	recordUnapplied struct {
		Audited
		receipt engine.UnappliedReceipt
	}
	settleUnapplied struct {
		Audited
		req engine.SettleRequest
	}
)

// UnappliedReply answers RecordUnapplied and SettleUnapplied.
type UnappliedReply struct {
	Result engine.Result
	// Unapplied is the receipt held (recorded, or settled now).
	Unapplied *engine.UnappliedReceipt
	// Payment is the record under its identity: for a repeat the one
	// recorded first (which may have been applied or returned since); for
	// an application the receipt it became.
	Payment  *engine.Payment
	Repeated bool
	Err      error
}

// Failure is the reply as one error.
func (r *UnappliedReply) Failure() error { return replyFailure(r.Err, r.Result) }

// RecordUnapplied holds money that arrived with nothing to credit in mode
// m's suspense (a bank statement's entry with no open quote): durable
// before it answers; the same bank entry again is a repeat.
func (s *System) RecordUnapplied(m engine.Mode, u engine.UnappliedReceipt, audit *engine.OperatorActed) *UnappliedReply {
	if u.ID.IsZero() {
		u.ID = engine.UnappliedID(s.ids.UUID())
	}
	return s.suspenseRequest(m, &recordUnapplied{Audited: Audited{audit}, receipt: u})
}

// SettleUnapplied applies a receipt held in suspense to a wallet (of the
// quote it pays, if any) or returns it under req.Return.
func (s *System) SettleUnapplied(req engine.SettleRequest, audit *engine.OperatorActed) *UnappliedReply {
	for _, m := range engine.Modes {
		for _, u := range s.UnappliedList(m) {
			if u.ID == req.Unapplied {
				return s.suspenseRequest(m, &settleUnapplied{Audited: Audited{audit}, req: req})
			}
		}
	}
	return &UnappliedReply{Result: engine.ResultUnappliedNotFound}
}

func (s *System) suspenseRequest(m engine.Mode, cmd request[*UnappliedReply, *treasuryActor]) *UnappliedReply {
	if err := s.writable(); err != nil {
		return &UnappliedReply{Err: err}
	}
	reply, err := ask(s, s.treasuries[m], cmd)
	if err != nil {
		return &UnappliedReply{Err: err}
	}
	return reply
}

// holdUnapplied decides, applies and logs holding money in suspense.
func (a *treasuryActor) holdUnapplied(ctx actor.Context, cmd *recordUnapplied) {
	if err := a.sys.writable(); err != nil {
		ctx.Respond(&UnappliedReply{Err: err})
		return
	}
	ps := &a.sys.payments
	ps.mu.Lock()
	res, ev, prior := a.treasury.DecideUnapplied(ps.p, cmd.receipt, a.sys.nowMillis())
	var c engine.Payment
	if ev != nil {
		a.treasury.ApplyUnapplied(ps.p, ev)
	} else if prior != nil {
		c = *prior
	}
	ps.mu.Unlock()
	switch {
	case ev == nil && res == engine.ResultOK:
		a.repeat(ctx, prior, func(err error, repeated bool) any {
			if err != nil {
				return &UnappliedReply{Err: err}
			}
			return &UnappliedReply{Result: engine.ResultOK, Payment: &c, Repeated: true}
		})
		return
	case ev == nil:
		reply := &UnappliedReply{Result: res}
		if prior != nil {
			reply.Payment = &c
		}
		ctx.Respond(reply)
		return
	}
	a.publishUnapplied()
	held := ev.Receipt
	a.recordPayment(ctx, held.Identity, func(err error, repeated bool) any {
		if err != nil {
			return &UnappliedReply{Err: err}
		}
		return &UnappliedReply{Result: engine.ResultOK, Unapplied: &held, Repeated: repeated}
	}, a.sys.audited(cmd.Audit, held.Currency, ev)...)
}

// settleHeld decides, applies and logs applying or returning money held
// in suspense.
func (a *treasuryActor) settleHeld(ctx actor.Context, cmd *settleUnapplied) {
	if err := a.sys.writable(); err != nil {
		ctx.Respond(&UnappliedReply{Err: err})
		return
	}
	held, ok := a.treasury.Unapplied(cmd.req.Unapplied)
	if !ok {
		ctx.Respond(&UnappliedReply{Result: engine.ResultUnappliedNotFound})
		return
	}
	u := *held
	ps := &a.sys.payments
	ps.mu.Lock()
	res, ev := a.treasury.DecideSettle(ps.p, cmd.req, a.sys.nowMillis())
	var c engine.Payment
	if ev != nil {
		c = *a.treasury.ApplySettle(ps.p, ev)
	}
	ps.mu.Unlock()
	if ev == nil {
		ctx.Respond(&UnappliedReply{Result: res, Unapplied: &u})
		return
	}
	a.publishUnapplied()
	if !ev.Returned() {
		a.publish(ev.Account)
		if !ev.Quote.IsZero() {
			a.sys.receipts.publish(ev.Quote, a.treasury.ReceiptsOf(ev.Quote))
		}
	}
	replyTo := ctx.Sender()
	a.sys.appendThen(func(err error) delivery {
		if err != nil {
			return replyWith(replyTo, &UnappliedReply{Err: err})
		}
		return replyWith(replyTo, &UnappliedReply{Result: engine.ResultOK, Unapplied: &u, Payment: &c})
	}, a.sys.audited(cmd.Audit, u.Currency, ev)...)
}
