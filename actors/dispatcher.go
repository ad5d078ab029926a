package actors

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// workerDispatcher runs the system's mailboxes on goroutines that outlive
// one mailbox run. Protoactor's default dispatcher starts a new goroutine
// each time an idle mailbox gets a message; under load that is once per
// create for the pair actor, and each new goroutine starts on a small stack
// that the quote path (decide, encode, append) then grows by copying. A
// worker here keeps its grown stack: when it finishes a run it waits, up to
// workerIdleMax, to be handed the next one.
//
// Never a bound on concurrency: with no worker idle, Schedule starts a new
// one, so an actor that blocks (an append waiting for log space) cannot
// starve the others, as a fixed pool could.
type workerDispatcher struct {
	throughput int
	handoff    chan func() // unbuffered: a send succeeds only to an idle worker
	done       chan struct{}
	stopOnce   sync.Once
}

// mailboxThroughput is how many messages a mailbox run takes before it
// yields the processor (protoactor's default).
const mailboxThroughput = 300

// workerIdleMax is how long a worker waits for the next run before it ends.
const workerIdleMax = 2 * time.Second

var _ actor.Dispatcher = (*workerDispatcher)(nil)

func newWorkerDispatcher(throughput int) *workerDispatcher {
	return &workerDispatcher{throughput: throughput, handoff: make(chan func()), done: make(chan struct{})}
}

func (d *workerDispatcher) Schedule(fn func()) {
	select {
	case d.handoff <- fn:
	default:
		go d.work(fn)
	}
}

func (d *workerDispatcher) Throughput() int { return d.throughput }

func (d *workerDispatcher) work(fn func()) {
	idle := time.NewTimer(workerIdleMax)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(workerIdleMax)
		select {
		case fn = <-d.handoff:
		case <-idle.C:
			return
		case <-d.done:
			return
		}
	}
}

// stop ends the idle workers now (a run in progress finishes first); a
// Schedule after stop still runs its mailbox, on a goroutine of its own.
func (d *workerDispatcher) stop() { d.stopOnce.Do(func() { close(d.done) }) }
