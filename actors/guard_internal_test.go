package actors

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// panicker handles every message under guard by panicking.
type panicker struct{ sys *System }

func (p *panicker) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(actor.SystemMessage); ok {
		return
	}
	if _, ok := ctx.Message().(*actor.Started); ok {
		return
	}
	p.sys.guard(ctx, func() { panic("boom") })
}

// TestGuardFault: a panic while handling any request, whatever reply type
// the request expects (webhooks and the treasury's snapshot were missed by
// a list of types once), reaches the waiting caller as ErrFault from
// System.request at once, not as a reply of the wrong type (which panicked
// again in the gateway) nor as a timeout; and the system refuses writes.
func TestGuardFault(t *testing.T) {
	as := actor.NewActorSystem(actor.WithDeadLetterThrottleInterval(time.Millisecond),
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	defer as.Shutdown()
	s := &System{cfg: Config{Logger: slog.New(slog.DiscardHandler)}, root: as.Root, repliers: newRepliers(as.ProcessRegistry)}
	pid := as.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &panicker{sys: s} }))
	for _, msg := range []any{&CreateQuote{}, &TransitionQuote{}, &PoolCommand{}, &CreateWebhook{}, &DeleteWebhook{},
		&treasurySnapshot{}, &WithdrawAccount{}, &SetCreditLimit{}, &recordReceipt{}, &readStatement{}, &fundCompletion{}} {
		start := time.Now()
		res, err := s.request(pid, msg)
		if !errors.Is(err, ErrFault) || res != nil {
			t.Errorf("%T: a panic answered %v, %v; want nil, ErrFault", msg, res, err)
		}
		if d := time.Since(start); d >= requestTimeout {
			t.Errorf("%T: the fault took %v to answer (the request's timeout)", msg, d)
		}
	}
	if !errors.Is(s.Fault(), ErrFault) {
		t.Errorf("after a panic the system's fault is %v, want ErrFault", s.Fault())
	}
}
