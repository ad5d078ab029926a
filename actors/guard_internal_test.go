package actors

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
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
// a list of types once), reaches the waiting caller as ErrFault from ask at
// once, not as a timeout; and the system refuses writes.
func TestGuardFault(t *testing.T) {
	as := actor.NewActorSystem(actor.WithDeadLetterThrottleInterval(time.Millisecond),
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	defer as.Shutdown()
	s := &System{cfg: Config{Logger: slog.New(slog.DiscardHandler)}, root: as.Root, repliers: newRepliers(as.ProcessRegistry)}
	pid := as.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &panicker{sys: s} }))
	for _, req := range everyRequest(s, pid) {
		start := time.Now()
		if name, err := req(); !errors.Is(err, ErrFault) {
			t.Errorf("%s: a panic answered %v; want ErrFault", name, err)
		} else if d := time.Since(start); d >= requestTimeout {
			t.Errorf("%s: the fault took %v to answer (the request's timeout)", name, d)
		}
	}
	if !errors.Is(s.Fault(), ErrFault) {
		t.Errorf("after a panic the system's fault is %v, want ErrFault", s.Fault())
	}
}

// TestAskWrongReply: an actor answering a request with another reply type
// than the request declares is a fault (ErrFault), never a panic in the
// caller's type assertion.
func TestAskWrongReply(t *testing.T) {
	as := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	defer as.Shutdown()
	s := &System{cfg: Config{Logger: slog.New(slog.DiscardHandler)}, root: as.Root, repliers: newRepliers(as.ProcessRegistry)}
	pid := as.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*CreateQuote); ok {
			ctx.Respond(&AdminReply{})
		}
	}))
	if reply, err := askPID[*QuoteReply](s, pid, &CreateQuote{}); !errors.Is(err, ErrFault) || reply != nil {
		t.Fatalf("a reply of another type: %v, %v; want nil, ErrFault", reply, err)
	}
}

// everyRequest asks pid each request type of requests.go once; each call
// returns the request's type and ask's error.
func everyRequest(s *System, pid *actor.PID) []func() (string, error) {
	return []func() (string, error){
		asking[*QuoteReply](s, pid, &CreateQuote{}), asking[*QuoteReply](s, pid, &TransitionQuote{}),
		asking[*PoolReply](s, pid, &PoolCommand{}), asking[*PoolReply](s, pid, &poolDeposit{}),
		asking[*exposuresRead](s, pid, &readExposures{}),
		asking[*AccountReply](s, pid, &DepositAccount{}), asking[*AccountReply](s, pid, &WithdrawAccount{}),
		asking[*CreditReply](s, pid, &SetCreditLimit{}), asking[*fundingReply](s, pid, &fundCompletion{}),
		asking[*ReceiptReply](s, pid, &recordReceipt{}), asking[*StatementReply](s, pid, &readStatement{}),
		asking[*UnappliedReply](s, pid, &recordUnapplied{}), asking[*UnappliedReply](s, pid, &settleUnapplied{}),
		asking[*engine.Treasury](s, pid, &treasurySnapshot{}),
		asking[*AdminReply](s, pid, &CreateClient{}), asking[*AdminReply](s, pid, &CreateKey{}),
		asking[*AdminReply](s, pid, &RevokeKey{}), asking[*AdminReply](s, pid, &RollKey{}),
		asking[*AdminReply](s, pid, &CreatePool{}), asking[*AdminReply](s, pid, &CreateWebhook{}),
		asking[*AdminReply](s, pid, &DeleteWebhook{}), asking[*AdminReply](s, pid, &UpdateWebhook{}),
		asking[*AdminReply](s, pid, &RotateWebhookSecret{}),
		asking[*OperatorReply](s, pid, &CreateOperator{}), asking[*OperatorReply](s, pid, &RevokeOperator{}),
		asking[*OperatorReply](s, pid, &RecordAudit{}), asking[*ChainReply](s, pid, &RecordChainProgress{}),
	}
}

func asking[R any](s *System, pid *actor.PID, msg Request[R]) func() (string, error) {
	return func() (string, error) {
		_, err := askPID(s, pid, msg)
		return fmt.Sprintf("%T", msg), err
	}
}
