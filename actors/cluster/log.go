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

// applyEnqueueTimeout bounds how long an Append waits for Raft to take an
// entry (not for its commit: a commit ends with success or the loss of
// leadership).
const applyEnqueueTimeout = 5 * time.Second

// pendingMax bounds the appends waiting for their commit on one leader.
const pendingMax = 8192

// raftLog is the actors' Log in cluster mode: an Append is one Raft entry,
// and done runs once the entry is committed on a majority (each member
// fsync'd it) and applied to this node's replica — or failed, when
// leadership was lost before that. One goroutine waits for the entries in
// the order they were appended, so done runs in Append order, as
// actors.Log requires.
type raftLog struct {
	r       *raft.Raft
	mu      sync.Mutex // orders Apply and the queue; guards closed
	closed  bool
	pending chan pendingAppend
	stopped chan struct{}
}

type pendingAppend struct {
	f    raft.ApplyFuture
	done func(firstSeq uint64, err error)
}

var _ actors.Log = (*raftLog)(nil)

func newRaftLog(r *raft.Raft) *raftLog {
	l := &raftLog{r: r, pending: make(chan pendingAppend, pendingMax), stopped: make(chan struct{})}
	go l.wait()
	return l
}

// Append proposes recs as one entry.
func (l *raftLog) Append(recs [][]byte, done func(firstSeq uint64, err error)) {
	data := encodeRecords(recs)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		done(0, ErrNotLeader)
		return
	}
	l.pending <- pendingAppend{l.r.Apply(data, applyEnqueueTimeout), done}
}

func (l *raftLog) wait() {
	defer close(l.stopped)
	for p := range l.pending {
		var seq uint64
		err := p.f.Error()
		if err == nil {
			res, _ := p.f.Response().(applied)
			seq, err = res.firstSeq, res.err
		} else if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) ||
			errors.Is(err, raft.ErrLeadershipTransferInProgress) || errors.Is(err, raft.ErrRaftShutdown) {
			err = fmt.Errorf("%w: %w", ErrNotLeader, err)
		}
		p.done(seq, err)
	}
}

// close refuses further appends and waits for the pending ones to end
// (each ends: committed, or failed with the loss of leadership).
func (l *raftLog) close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.pending)
	}
	l.mu.Unlock()
	<-l.stopped
}
