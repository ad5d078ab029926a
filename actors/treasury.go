package actors

import (
	"maps"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
)

// treasuryActor owns the treasury sub-ledger of one mode: every partner
// wallet and that mode's shard of each clearing account (see
// engine.Treasury).
type treasuryActor struct {
	sys      *System
	treasury *engine.Treasury
	// committed is, per wallet, what completions in flight were promised
	// (funds.go): decided, not yet durable.
	committed engine.Committed
	// inFlight holds, per payment whose append is in flight, who waits
	// for its answer: the requester, then any repeat (funds.go).
	inFlight map[engine.Identity]*flight
}

func (a *treasuryActor) Receive(ctx actor.Context) {
	a.sys.guard(ctx, func() {
		switch msg := ctx.Message().(type) {
		case *clientOpened:
			a.treasury.ApplyClientCreated(msg.event)
			for _, w := range msg.event.Wallets {
				if w.Mode == a.treasury.Mode {
					a.publish(w.Account)
				}
			}
		case *walletsSettled:
			a.settle(ctx, msg)
		case *fundCompletion:
			a.fund(ctx, msg.quote)
		case *fundsReleased:
			a.committed.Release(msg.wallet, msg.amount)
		case *DepositAccount:
			a.deposit(ctx, msg)
		case *WithdrawAccount:
			a.withdraw(ctx, msg)
		case *SetCreditLimit:
			a.setCredit(ctx, msg)
		case *recordReceipt:
			a.receive(ctx, msg)
		case *reverseReceipt:
			a.reverse(ctx, msg)
		case *recordUnapplied:
			a.holdUnapplied(ctx, msg)
		case *settleUnapplied:
			a.settleHeld(ctx, msg)
		case *paymentDurable:
			a.paymentDone(ctx, msg)
		case *readStatement:
			page, more, known := a.treasury.Statement(msg.account, msg.after, msg.limit)
			ctx.Respond(&StatementReply{Postings: page, More: more, Known: known})
		case *readCredit:
			limits := make(map[engine.AccountID]engine.Amount, len(msg.wallets))
			for _, w := range msg.wallets {
				if l := a.treasury.CreditLimit(w); l != 0 {
					limits[w] = l
				}
			}
			ctx.Respond(&creditRead{limits: limits})
		case *forgetFunds:
			a.forget(msg.cutoff)
		case *treasurySnapshot:
			ctx.Respond(a.snapshot())
		}
	})
}

// publish stores a new view of one wallet and returns it.
func (a *treasuryActor) publish(id engine.AccountID) *engine.Account {
	view := cloneAccount(a.treasury.Wallets[id])
	v, _ := a.sys.accounts.LoadOrStore(id, &accountRef{})
	v.(*accountRef).view.Store(view)
	return view
}

// snapshot is a consistent copy of the sub-ledger (balances, clearing
// shards, credit limits) for the ledger check.
func (a *treasuryActor) snapshot() *engine.Treasury {
	t := &engine.Treasury{Mode: a.treasury.Mode, Clearing: a.treasury.Clearing, Suspense: a.treasury.Suspense,
		Wallets: make(map[engine.AccountID]*engine.Account, len(a.treasury.Wallets)),
		Credit:  maps.Clone(a.treasury.Credit)}
	for id, w := range maps.All(a.treasury.Wallets) {
		t.Wallets[id] = cloneAccount(w)
	}
	return t
}
