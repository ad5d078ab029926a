package actors

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// replier is where one request's reply goes: a protoactor Process
// registered once and reused, in place of a Future per request (which
// registers and removes a process, formats an id, and starts a timer and a
// condition variable each time — 6% of a create's CPU).
//
// A replier is reused only after its request got its reply, so a reply can
// never reach a later request as long as each request gets one reply, which
// protoactor's request contract and every actor here keep. A request that
// times out abandons its replier (removed from the registry, never reused):
// a late reply goes to it and is dropped.
type replier struct {
	pid   *actor.PID
	reply chan any // capacity 1
	timer *time.Timer
}

var _ actor.Process = (*replier)(nil)

// SendUserMessage takes the reply. Never blocks the replying actor.
func (r *replier) SendUserMessage(_ *actor.PID, message any) {
	_, msg, _ := actor.UnwrapEnvelope(message)
	select {
	case r.reply <- msg:
	default: // abandoned after a timeout, and already holding a late reply
	}
}

func (r *replier) SendSystemMessage(*actor.PID, any) {}
func (r *replier) Stop(*actor.PID)                   {}

// repliers is the system's free list of repliers.
type repliers struct {
	registry *actor.ProcessRegistryValue
	free     chan *replier
	// stopped closes when the system has stopped: a request still waiting
	// then gets no reply (its actor is gone, its write's outcome is
	// unknown) and ends at once instead of at its timeout.
	stopped   chan struct{}
	closeOnce sync.Once
}

// errStopped ends a request the stopped system will never answer.
var errStopped = errors.New("the system stopped before answering")

func (rs *repliers) stop() { rs.closeOnce.Do(func() { close(rs.stopped) }) }

// repliersFreeMax bounds the idle repliers kept: more requests in flight
// than this register a replier each and remove it after.
const repliersFreeMax = 1024

func newRepliers(registry *actor.ProcessRegistryValue) *repliers {
	return &repliers{registry: registry, free: make(chan *replier, repliersFreeMax), stopped: make(chan struct{})}
}

func (rs *repliers) get() *replier {
	select {
	case r := <-rs.free:
		return r
	default:
	}
	r := &replier{reply: make(chan any, 1), timer: time.NewTimer(time.Hour)}
	r.timer.Stop()
	pid, ok := rs.registry.Add(r, "reply"+rs.registry.NextId())
	if !ok { // ids come from one counter: a clash is a bug
		panic(fmt.Sprintf("actors: replier id %s taken", pid.Id))
	}
	r.pid = pid
	return r
}

func (rs *repliers) put(r *replier) {
	select {
	case rs.free <- r:
	default:
		rs.registry.Remove(r.pid)
	}
}

// request sends msg to pid with r as its sender and waits up to timeout for
// the reply. A dead target answers with a dead letter.
func (rs *repliers) request(root *actor.RootContext, pid *actor.PID, msg any, timeout time.Duration) (any, error) {
	r := rs.get()
	r.timer.Reset(timeout)
	root.RequestWithCustomSender(pid, msg, r.pid)
	select {
	case res := <-r.reply:
		r.timer.Stop()
		rs.put(r)
		if _, dead := res.(*actor.DeadLetterResponse); dead {
			return nil, actor.ErrDeadLetter
		}
		return res, nil
	case <-r.timer.C:
		rs.registry.Remove(r.pid) // abandoned: a late reply must reach no later request
		return nil, actor.ErrTimeout
	case <-rs.stopped:
		r.timer.Stop()
		rs.registry.Remove(r.pid)
		return nil, errStopped
	}
}
