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
				// The error itself: ask returns an error reply
				// as its error, whatever reply type the request expects,
				// so no list of request types can miss one.
				ctx.Respond(err)
			}
		}
	}()
	handle()
}
