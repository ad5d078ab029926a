package cluster

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// fakeFuture is an ApplyFuture the test completes by hand.
type fakeFuture struct {
	done chan struct{}
	err  error
	resp any
}

func (f *fakeFuture) Error() error  { <-f.done; return f.err }
func (f *fakeFuture) Response() any { return f.resp }
func (f *fakeFuture) Index() uint64 { return 0 }

// fakeRaft records proposed entries and hands out futures.
type fakeRaft struct {
	mu      sync.Mutex
	entries [][]byte
	futures []*fakeFuture
	seq     uint64
}

func (r *fakeRaft) apply(cmd []byte, _ time.Duration) raft.ApplyFuture {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	_ = forEachRecord(cmd, func([]byte) error { n++; return nil })
	f := &fakeFuture{done: make(chan struct{}), resp: applied{firstSeq: r.seq + 1}}
	r.seq += uint64(n)
	r.entries = append(r.entries, cmd)
	r.futures = append(r.futures, f)
	return f
}

func (r *fakeRaft) future(i int) *fakeFuture {
	for deadline := time.Now().Add(10 * time.Second); ; {
		if time.Now().After(deadline) {
			panic(fmt.Sprintf("fakeRaft: no Apply number %d within 10 s", i))
		}
		r.mu.Lock()
		if i < len(r.futures) {
			f := r.futures[i]
			r.mu.Unlock()
			return f
		}
		r.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
}

// TestRaftLogGroupsAndOrders: appends made while entriesInFlightMax
// entries await their commit go out as one entry, and every done runs in
// Append order with its own first sequence.
func TestRaftLogGroupsAndOrders(t *testing.T) {
	r := &fakeRaft{}
	l := newRaftLog(r.apply, func(err error) { t.Errorf("failed(%v) on a healthy log", err) })
	var mu sync.Mutex
	var order []string
	done := func(name string) func(uint64, error) {
		return func(seq uint64, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			order = append(order, fmt.Sprintf("%s@%d", name, seq))
		}
	}
	for i := range entriesInFlightMax {
		l.Append([][]byte{[]byte("a")}, done(fmt.Sprint("first", i)))
		r.future(i) // proposed: its own entry
	}
	for i := range 6 {
		l.Append([][]byte{[]byte("b"), []byte("c")}, done(fmt.Sprint("later", i)))
	}
	for i := range entriesInFlightMax {
		close(r.future(i).done)
	}
	close(r.future(entriesInFlightMax).done)
	l.close()
	if len(r.entries) != entriesInFlightMax+1 {
		t.Fatalf("%d entries proposed, want %d (the six later appends as one)", len(r.entries), entriesInFlightMax+1)
	}
	want := []string{"first0@1", "first1@2", "first2@3", "first3@4", "later0@5", "later1@7", "later2@9", "later3@11", "later4@13", "later5@15"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("dones ran as %v, want %v", order, want)
	}
	l.Append([][]byte{[]byte("x")}, func(_ uint64, err error) {
		if !errors.Is(err, ErrNotLeader) {
			t.Errorf("an append after close: %v, want ErrNotLeader", err)
		}
	})
}

// TestRaftLogFailures: a lost leadership fails the write with ErrNotLeader
// and nothing else; any other failure is also reported to failed, so the
// node hands leadership over.
func TestRaftLogFailures(t *testing.T) {
	r := &fakeRaft{}
	var failures []error
	l := newRaftLog(r.apply, func(err error) { failures = append(failures, err) })
	results := make(chan error, 2)
	l.Append([][]byte{[]byte("a")}, func(_ uint64, err error) { results <- err })
	f := r.future(0)
	f.err = raft.ErrLeadershipLost
	close(f.done)
	if err := <-results; !errors.Is(err, ErrNotLeader) || !errors.Is(err, raft.ErrLeadershipLost) {
		t.Fatalf("lost leadership: %v", err)
	}
	l.Append([][]byte{[]byte("b")}, func(_ uint64, err error) { results <- err })
	f = r.future(1)
	f.err = raft.ErrEnqueueTimeout
	close(f.done)
	if err := <-results; !errors.Is(err, raft.ErrEnqueueTimeout) || errors.Is(err, ErrNotLeader) {
		t.Fatalf("enqueue timeout: %v", err)
	}
	l.close()
	if len(failures) != 1 || !errors.Is(failures[0], raft.ErrEnqueueTimeout) {
		t.Fatalf("failed was told %v, want the enqueue timeout only", failures)
	}
}
