package actors

import (
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// echo answers each int it is sent with the int plus one; a negative int it
// answers late (after the request's timeout) and then once more, as no
// actor here does, to show where a reply nobody waits for goes.
type echo struct {
	root *actor.RootContext // the late replies' sender: an actor's context is not for other goroutines
	late sync.WaitGroup
}

func (e *echo) Receive(ctx actor.Context) {
	n, ok := ctx.Message().(int)
	if !ok {
		return
	}
	if n >= 0 {
		ctx.Respond(n + 1)
		return
	}
	sender := ctx.Sender()
	e.late.Add(1)
	go func() {
		defer e.late.Done()
		time.Sleep(50 * time.Millisecond)
		e.root.Send(sender, n)
		e.root.Send(sender, n-1)
	}()
}

func newEcho(t testing.TB) (*actor.ActorSystem, *actor.PID, *echo) {
	// NB: a short dead-letter throttle, so that its goroutine is gone before
	// the leak check; protoactor's own logging off.
	sys := actor.NewActorSystem(actor.WithDeadLetterThrottleInterval(time.Millisecond),
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	e := &echo{root: sys.Root}
	pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return e }))
	t.Cleanup(func() {
		e.late.Wait()
		sys.Shutdown()
	})
	return sys, pid, e
}

func TestRepliers(t *testing.T) {
	sys, pid, e := newEcho(t)
	rs := newRepliers(sys.ProcessRegistry)
	for i := range 100 {
		got, err := rs.request(sys.Root, pid, i, time.Second)
		if err != nil || got != i+1 {
			t.Fatalf("request %d: %v, %v; want %d", i, got, err, i+1)
		}
	}
	if n := len(rs.free); n != 1 {
		t.Fatalf("%d repliers idle after 100 requests in sequence, want 1 (reused)", n)
	}

	// A request that times out abandons its replier: its late replies reach
	// no later request.
	abandoned := <-rs.free
	rs.free <- abandoned
	if _, err := rs.request(sys.Root, pid, -10, 10*time.Millisecond); !errors.Is(err, actor.ErrTimeout) {
		t.Fatalf("late reply: err %v, want a timeout", err)
	}
	if len(rs.free) != 0 {
		t.Fatal("a timed-out replier went back to the free list")
	}
	if _, ok := sys.ProcessRegistry.Get(abandoned.pid); ok {
		t.Fatal("a timed-out replier is still registered")
	}
	for i := range 20 {
		got, err := rs.request(sys.Root, pid, i, time.Second)
		if err != nil || got != i+1 {
			t.Fatalf("request %d after a timeout: %v, %v; want %d", i, got, err, i+1)
		}
		time.Sleep(5 * time.Millisecond) // across the late replies' arrival
	}
	e.late.Wait()

	// A stopped target answers with a dead letter.
	if err := sys.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.request(sys.Root, pid, 1, time.Second); !errors.Is(err, actor.ErrDeadLetter) {
		t.Fatalf("stopped target: err %v, want a dead letter", err)
	}
}

// BenchmarkRequest compares a request and its reply through a protoactor
// Future with one through a reused replier.
func BenchmarkRequest(b *testing.B) {
	sys, pid, _ := newEcho(b)
	b.Run("future", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := sys.Root.RequestFuture(pid, 1, time.Second).Result(); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	rs := newRepliers(sys.ProcessRegistry)
	b.Run("replier", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := rs.request(sys.Root, pid, 1, time.Second); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// TestRepliersStop: a request whose reply will not come (its actor answers
// only after the request would time out) ends as soon as the repliers stop,
// with errStopped, not at its timeout; later requests end at once too.
func TestRepliersStop(t *testing.T) {
	sys, pid, _ := newEcho(t)
	rs := newRepliers(sys.ProcessRegistry)
	ended := make(chan error, 1)
	go func() {
		_, err := rs.request(sys.Root, pid, -1, time.Minute)
		ended <- err
	}()
	time.Sleep(10 * time.Millisecond) // the request is on its way
	rs.stop()
	select {
	case err := <-ended:
		if !errors.Is(err, errStopped) {
			t.Fatalf("the waiting request ended with %v, want errStopped", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting request did not end when the repliers stopped")
	}
	if _, err := rs.request(sys.Root, pid, -1, time.Minute); !errors.Is(err, errStopped) {
		t.Fatalf("a request after the stop: %v", err)
	}
}
