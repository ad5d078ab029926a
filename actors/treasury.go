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
		case *walletCredited:
			a.treasury.ApplyCredit(msg.credit.Account, msg.credit.Amount)
			a.publish(msg.credit.Account)
			if msg.reply != nil {
				ctx.Send(msg.replyTo, msg.reply)
			}
		case *DepositAccount:
			a.deposit(ctx, msg)
		case *treasurySnapshot:
			ctx.Respond(a.snapshot())
		}
	})
}

func (a *treasuryActor) deposit(ctx actor.Context, cmd *DepositAccount) {
	if err := a.sys.writable(); err != nil {
		ctx.Respond(&AccountReply{Err: err})
		return
	}
	w, ok := a.treasury.Wallets[cmd.Account]
	if !ok {
		ctx.Respond(&AccountReply{Result: engine.ResultAccountNotFound})
		return
	}
	if !engine.DepositFits(w.Balance, cmd.Amount) {
		ctx.Respond(&AccountReply{Result: engine.ResultAmountOutOfRange})
		return
	}
	ev := &engine.AccountDeposited{At: a.sys.nowMillis(), Account: cmd.Account, Amount: cmd.Amount}
	a.treasury.ApplyCredit(cmd.Account, cmd.Amount)
	view := a.publish(cmd.Account)
	replyTo := ctx.Sender()
	a.sys.appendThen(func(err error) (*actor.PID, any) {
		if err != nil {
			return replyTo, &AccountReply{Err: err}
		}
		return replyTo, &AccountReply{Result: engine.ResultOK, Account: view}
	}, ev)
}

// publish stores a new view of one wallet and returns it.
func (a *treasuryActor) publish(id engine.AccountID) *engine.Account {
	view := cloneAccount(a.treasury.Wallets[id])
	v, _ := a.sys.accounts.LoadOrStore(id, &accountRef{})
	v.(*accountRef).view.Store(view)
	return view
}

// snapshot is a consistent copy of the sub-ledger for the ledger check.
func (a *treasuryActor) snapshot() *engine.Treasury {
	t := &engine.Treasury{Mode: a.treasury.Mode, Clearing: a.treasury.Clearing,
		Wallets: make(map[engine.AccountID]*engine.Account, len(a.treasury.Wallets))}
	for id, w := range maps.All(a.treasury.Wallets) {
		t.Wallets[id] = cloneAccount(w)
	}
	return t
}
