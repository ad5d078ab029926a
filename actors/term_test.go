package actors_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/oja-exchange/oja/actors"
)

// termHooks records what the term's dispatcher saw when it was stopped;
// the term calls nothing else of it.
type termHooks struct {
	actors.Webhooks
	term    *actors.Term
	stops   int
	ended   bool  // the term's Done was closed when Stop ran
	running error // the actors' Ready when Stop ran: nil, still running
}

func (h *termHooks) Stop() {
	h.stops++
	h.ended = h.term.Ended()
	h.running = h.term.System().Ready()
}

// TestTermEnds: a term ends once, in its order — Done closes first (the
// gateway stops serving it), the dispatcher stops while the actors still
// run (its settlements are recorded through them), the actors stop, and
// release runs last — and concurrent Ends all return once it has ended.
func TestTermEnds(t *testing.T) {
	n := newNode(t, testConfig(nil))
	hooks := &termHooks{}
	var released []error // the actors' Ready when release ran
	term := actors.NewTerm(n.sys, hooks, func() { released = append(released, n.sys.Ready()) })
	hooks.term = term
	if term.Ended() || term.System() != n.sys || term.Webhooks() != hooks {
		t.Fatal("a new term has ended, or does not hold what it was given")
	}
	select {
	case <-term.Done():
		t.Fatal("a new term's Done is closed")
	default:
	}
	if c := newClient(t, term.System(), "during the term"); c == nil {
		t.Fatal("no client created during the term")
	}

	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			term.End()
			if len(released) != 1 {
				t.Error("End returned before the term had ended")
			}
		}()
	}
	wg.Wait()
	term.End()

	<-term.Done()
	switch {
	case hooks.stops != 1 || len(released) != 1:
		t.Fatalf("dispatcher stopped %d times, release ran %d times; want once each", hooks.stops, len(released))
	case !hooks.ended:
		t.Error("the dispatcher stopped before the term's Done closed: the gateway still served it")
	case hooks.running != nil:
		t.Errorf("the dispatcher stopped after the actors (%v): its last settlements had nowhere to go", hooks.running)
	case !errors.Is(released[0], actors.ErrUnavailable):
		t.Errorf("release ran while the actors still took writes (Ready %v)", released[0])
	}
	if r := n.sys.Admin(&actors.CreateClient{Name: "after the term"}); !errors.Is(r.Err, actors.ErrUnavailable) {
		t.Fatalf("a write after the term ended: %+v, want ErrUnavailable", r)
	}
}
