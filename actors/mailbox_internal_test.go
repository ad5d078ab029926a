package actors

import (
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// TestBoundedMailboxWaits: a sender to a full mailbox waits until the
// actor has received a message, and every message is delivered once, in
// order (back-pressure, never a drop); the gauge counts what waits.
func TestBoundedMailboxWaits(t *testing.T) {
	as := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	defer as.Shutdown()
	const max, messages = 2, 7
	release := make(chan struct{})
	received := make(chan int, messages)
	var gauge mailboxGauge
	pid := as.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if n, ok := ctx.Message().(int); ok {
			<-release
			received <- n
		}
	}, actor.WithMailbox(boundedMailbox(max, &gauge))))
	sent := make(chan int, messages)
	go func() {
		for n := range messages {
			as.Root.Send(pid, n)
			sent <- n
		}
	}()
	// The first message is being received (its token held until it has
	// been), max-1 more wait: the sender gets max sends through, then waits.
	deadline := time.After(10 * time.Second)
	for range max {
		select {
		case <-sent:
		case <-deadline:
			t.Fatal("the sender could not post up to the bound")
		}
	}
	select {
	case n := <-sent:
		t.Fatalf("message %d was posted to a full mailbox", n)
	case <-time.After(100 * time.Millisecond):
	}
	if q := gauge.queued.Load(); q != max {
		t.Fatalf("gauge says %d queued, want %d", q, max)
	}
	for want := range messages {
		release <- struct{}{}
		select {
		case n := <-received:
			if n != want {
				t.Fatalf("received %d, want %d", n, want)
			}
		case <-deadline:
			t.Fatalf("message %d never arrived", want)
		}
	}
	for range messages - max {
		select {
		case <-sent:
		case <-deadline:
			t.Fatal("the sender stayed blocked after the actor drained its mailbox")
		}
	}
}
