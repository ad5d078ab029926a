package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
)

// poolActor owns one liquidity pool: its ledger (liquidity with its holds,
// proceeds, its shards of the clearing accounts), its profile and its trade
// counters. It decides deposits (the balance is its own: engine.DepositFits)
// and otherwise receives only durable outcomes — its part of each quote
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
		case *poolDeposit:
			a.deposit(ctx, msg.cmd)
			return
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

// deposit decides a deposit into the pool's liquidity with the rule replay
// checks (engine.DepositFits), applies it at once (so the next deposit sees
// it) and appends it; once durable, the pair actor's budget grows by the
// amount and only then the caller gets its answer, so a quote created after
// the 200 can use it. A failed append fails the log and every later write.
func (a *poolActor) deposit(ctx actor.Context, cmd *PoolCommand) {
	if err := a.sys.writable(); err != nil {
		ctx.Respond(&PoolReply{Err: err})
		return
	}
	if !engine.DepositFits(a.pool.Liquidity.Balance, cmd.Deposit) {
		ctx.Respond(&PoolReply{Result: engine.ResultAmountOutOfRange})
		return
	}
	ev := &engine.PoolDeposited{At: a.sys.nowMillis(), Pool: a.pool.ID, Amount: cmd.Deposit}
	a.pool.ApplyDeposit(cmd.Deposit)
	a.publish()
	replyTo, view, pair := ctx.Sender(), a.ref.view.Load(), a.ref.pair
	a.sys.appendThen(func(err error) delivery {
		return deliver(pair, &budgetDeposited{pool: ev.Pool, amount: ev.Amount, view: view, replyTo: replyTo, err: err})
	}, a.sys.audited(cmd.Audit, a.pool.Pair.Destination, ev)...)
}

func (a *poolActor) applyEvent(ev engine.Event) {
	switch ev := ev.(type) {
	case *engine.PoolRateSet:
		a.pool.ApplyRateSet(ev)
	case *engine.PoolStatusSet:
		a.pool.ApplyStatusSet(ev)
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
