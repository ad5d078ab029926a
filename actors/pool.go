package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
)

// poolActor owns one liquidity pool: its ledger (liquidity with its holds,
// proceeds, its shards of the clearing accounts), its profile and its trade
// counters. It receives only durable outcomes — its part of each quote
// outcome (engine.RouteOutcome: holds placed and released, acceptances,
// settlements) and pool events decided by its pair actor — applies them with
// the engine's Pool methods and publishes an immutable view after each.
type poolActor struct {
	sys       *System
	pool      *engine.Pool
	ref       *poolRef
	liquidity *accountRef
	proceeds  *accountRef
}

func (a *poolActor) Receive(ctx actor.Context) {
	a.sys.guard(ctx, func() {
		switch msg := ctx.Message().(type) {
		case *sliceEffect:
			a.pool.ApplySliceEffect(msg.effect)
		case *poolEventApplied:
			a.applyEvent(msg.event)
			a.publish()
			a.sys.root.Send(msg.replyTo, &PoolReply{Result: engine.ResultOK, Pool: a.ref.view.Load()})
			return
		default:
			return
		}
		a.publish()
	})
}

func (a *poolActor) applyEvent(ev engine.Event) {
	switch ev := ev.(type) {
	case *engine.PoolRateSet:
		a.pool.ApplyRateSet(ev)
	case *engine.PoolStatusSet:
		a.pool.ApplyStatusSet(ev)
	case *engine.PoolDeposited:
		a.pool.ApplyDeposit(ev.Amount)
	case *engine.PoolWithdrawn:
		a.pool.ApplyWithdraw(ev.Amount)
	}
}

func (a *poolActor) publish() {
	view := a.pool.Clone()
	a.ref.view.Store(view)
	a.liquidity.view.Store(&view.Liquidity)
	a.proceeds.view.Store(&view.Proceeds)
}
