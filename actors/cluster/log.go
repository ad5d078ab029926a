package cluster

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/oja-exchange/oja/actors"
)

// ErrNotLeader is a write's failure on a node that is not (or no longer)
// the leader: the write is not acknowledged. A retry with the same
// Idempotency-Key through any node finds it if it was committed after all.
var ErrNotLeader = errors.New("cluster: not the leader")

const (
	// applyEnqueueTimeout bounds how long a Raft Apply waits for Raft to
	// take an entry (not for its commit: a commit ends with success or the
	// loss of leadership).
	applyEnqueueTimeout = 5 * time.Second
	// entriesInFlightMax bounds the entries proposed and not yet
	// committed; appends made meanwhile gather into the next entry (group
	// commit), which is what makes a busy leader write few, large entries.
	entriesInFlightMax = 4
	// entryRecordsMax and entryBytesMax bound one entry.
	entryRecordsMax = 2048
	entryBytesMax   = 1 << 20
)

// raftLog is the actors' Log in cluster mode. Appends queue up; one
// goroutine proposes what is queued as one Raft entry whenever fewer than
// entriesInFlightMax entries await their commit, and another waits for the
// entries in order and runs each append's done once its entry is committed
// on a majority (each member fsync'd it) and applied to this node's
// replica — or failed, when leadership was lost first. So done runs in
// Append order, as actors.Log requires.
type raftLog struct {
	// apply proposes one entry (raft.Raft.Apply).
	apply func(cmd []byte, timeout time.Duration) raft.ApplyFuture
	// failed is told of a write that failed for any reason but the loss of
	// leadership (an enqueue timeout, a replica that diverged): the
	// actors refuse writes from then on, so the node must hand leadership
	// over for them to restart (node.go).
	failed func(error)

	mu     sync.Mutex
	work   sync.Cond // signalled when queue grows or closed is set
	queue  []queuedAppend
	closed bool

	inFlight chan struct{} // a slot per entry awaiting its commit
	proposed chan proposedEntry
	stopped  chan struct{} // closed when every done has run
}

type queuedAppend struct {
	recs [][]byte
	done func(firstSeq uint64, err error)
}

type proposedEntry struct {
	f       raft.ApplyFuture
	appends []queuedAppend
}

var _ actors.Log = (*raftLog)(nil)

func newRaftLog(apply func([]byte, time.Duration) raft.ApplyFuture, failed func(error)) *raftLog {
	l := &raftLog{
		apply:    apply,
		failed:   failed,
		inFlight: make(chan struct{}, entriesInFlightMax),
		proposed: make(chan proposedEntry, entriesInFlightMax),
		stopped:  make(chan struct{}),
	}
	l.work.L = &l.mu
	go l.propose()
	go l.wait()
	return l
}

// Append queues recs for the next entry.
func (l *raftLog) Append(recs [][]byte, done func(firstSeq uint64, err error)) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		done(0, ErrNotLeader)
		return
	}
	l.queue = append(l.queue, queuedAppend{recs, done})
	l.mu.Unlock()
	l.work.Signal()
}

// propose turns what is queued into entries, at most entriesInFlightMax
// awaiting their commit at a time.
func (l *raftLog) propose() {
	defer close(l.proposed)
	for {
		l.inFlight <- struct{}{} // wait for a slot before taking the queue
		l.mu.Lock()
		for len(l.queue) == 0 && !l.closed {
			l.work.Wait()
		}
		if len(l.queue) == 0 { // closed and drained
			l.mu.Unlock()
			return
		}
		n, records, size := 0, 0, 0
		for ; n < len(l.queue); n++ {
			r, b := len(l.queue[n].recs), recsSize(l.queue[n].recs)
			if n > 0 && (records+r > entryRecordsMax || size+b > entryBytesMax) {
				break
			}
			records, size = records+r, size+b
		}
		batch := l.queue[:n:n]
		l.queue = append([]queuedAppend(nil), l.queue[n:]...)
		l.mu.Unlock()

		recs := make([][]byte, 0, records)
		for _, a := range batch {
			recs = append(recs, a.recs...)
		}
		l.proposed <- proposedEntry{l.apply(encodeRecords(recs), applyEnqueueTimeout), batch}
	}
}

func recsSize(recs [][]byte) int {
	n := 0
	for _, r := range recs {
		n += len(r)
	}
	return n
}

// wait runs the dones of each entry, in order, once it ended.
func (l *raftLog) wait() {
	defer close(l.stopped)
	for p := range l.proposed {
		var seq uint64
		err := p.f.Error()
		if err == nil {
			res, _ := p.f.Response().(applied)
			seq, err = res.firstSeq, res.err
		} else if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) ||
			errors.Is(err, raft.ErrLeadershipTransferInProgress) || errors.Is(err, raft.ErrRaftShutdown) {
			err = fmt.Errorf("%w: %w", ErrNotLeader, err)
		}
		if err != nil && !errors.Is(err, ErrNotLeader) && l.failed != nil {
			l.failed(err)
		}
		<-l.inFlight
		for _, a := range p.appends {
			a.done(seq, err)
			seq += uint64(len(a.recs))
		}
	}
}

// close refuses further appends and waits until every queued one has
// ended (committed, or failed with the loss of leadership).
func (l *raftLog) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.work.Broadcast()
	<-l.stopped
}
