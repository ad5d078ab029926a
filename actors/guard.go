package actors

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
)

// guard runs one message's handling. A panic is a programmer bug: the actor's
// state may be half-updated, so the system stops taking writes (restart
// rebuilds every actor from the log) and the waiting caller gets an error
// reply at once instead of a timeout.
//
// NB: protoactor's default supervision restarts a panicking actor with a
// fresh instance, losing its in-memory state silently; for state that is
// money that is the wrong default, hence this guard.
func (s *System) guard(ctx actor.Context, handle func()) {
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("%w: panic handling %T: %v", ErrFault, ctx.Message(), r)
			s.setFault(err)
			if ctx.Sender() != nil {
				ctx.Respond(faultReply(ctx.Message(), err))
			}
		}
	}()
	handle()
}

// faultReply is the reply type a request expects, carrying err.
func faultReply(msg any, err error) any {
	switch msg.(type) {
	case *CreateQuote, *TransitionQuote:
		return &QuoteReply{Err: err}
	case *PoolCommand:
		return &PoolReply{Err: err}
	case *DepositAccount, *WithdrawAccount:
		return &AccountReply{Err: err}
	case *SetCreditLimit:
		return &CreditReply{Err: err}
	case *recordReceipt:
		return &ReceiptReply{Err: err}
	case *readStatement:
		return &StatementReply{Err: err}
	case *fundCompletion:
		return &fundingReply{err: err}
	case *CreateClient, *CreateKey, *RevokeKey, *CreatePool:
		return &AdminReply{Err: err}
	}
	return err
}
