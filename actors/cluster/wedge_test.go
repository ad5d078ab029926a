package cluster

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-metrics"
	"github.com/hashicorp/raft"
)

// The membership changes an operator's typo made fatal (Node.AddMember,
// RemoveMember): each case leaves the cluster committing writes and the
// configuration as it was, where adding a voter straight away (Raft's
// AddVoter, as AddMember did) left four voters with two alive and no
// leader able to commit.
func TestMembershipCannotWedge(t *testing.T) {
	t.Run("an unreachable member added while a node is down", func(t *testing.T) {
		c, leader, down := wedgeCluster(t)
		stop(down)
		err := leader.node.AddMember(context.Background(), "n4", "127.0.0.1:19051", c.ask)
		if !errors.Is(err, ErrUnreachable) {
			t.Fatalf("add: %v, want ErrUnreachable", err)
		}
		requireVoters(t, leader, 3)
		c.createClients(c.leader(down), "after", 5)
	})
	t.Run("an unreachable member added with every node up", func(t *testing.T) {
		c, leader, _ := wedgeCluster(t)
		if err := leader.node.AddMember(context.Background(), "n4", "127.0.0.1:19051", c.ask); !errors.Is(err, ErrUnreachable) {
			t.Fatalf("add: %v, want ErrUnreachable", err)
		}
		requireVoters(t, leader, 3)
		c.createClients(c.leader(), "after", 5)
	})
	t.Run("a reachable member added while a node is down", func(t *testing.T) {
		c, leader, down := wedgeCluster(t)
		stop(down)
		n4 := joinNode(c, "n4", "10.0.0.4:7000")
		if err := leader.node.AddMember(context.Background(), n4.id, string(n4.addr), c.ask); err != nil {
			t.Fatalf("add: %v", err)
		}
		requireVoters(t, leader, 4)
		c.createClients(c.leader(down), "after", 5) // three of four voters answer
	})
	t.Run("a member that does not catch up is removed again", func(t *testing.T) {
		c, leader, _ := wedgeCluster(t)
		n4 := joinNode(c, "n4", "10.0.0.4:7000")
		c.faults.partition(leader.addr, n4.addr) // it answers its peers' questions, Raft reaches it not
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		if err := leader.node.AddMember(ctx, n4.id, string(n4.addr), c.ask); !errors.Is(err, ErrNotCaughtUp) {
			t.Fatalf("add: %v, want ErrNotCaughtUp", err)
		}
		if _, ok := leader.node.member(n4.id); ok {
			t.Fatal("the member that did not catch up is still in the configuration")
		}
		requireVoters(t, leader, 3)
		c.createClients(c.leader(), "after", 5)
	})
	t.Run("removing a live member while another is down", func(t *testing.T) {
		c, leader, down := wedgeCluster(t)
		stop(down)
		var live *testNode
		for _, n := range c.nodes {
			if n != leader && n != down {
				live = n
			}
		}
		if err := leader.node.RemoveMember(context.Background(), live.id, c.ask); !errors.Is(err, ErrNoQuorum) {
			t.Fatalf("remove: %v, want ErrNoQuorum", err)
		}
		requireVoters(t, leader, 3)
		// Removing the one that is down is what heals it.
		if err := leader.node.RemoveMember(context.Background(), down.id, c.ask); err != nil {
			t.Fatalf("removing the member that is down: %v", err)
		}
		requireVoters(t, leader, 2)
		c.createClients(c.leader(down), "after", 5)
	})
}

// wedgeCluster is a three-node cluster on the fault layer, its leader and
// a follower.
func wedgeCluster(t *testing.T) (c *testCluster, leader, follower *testNode) {
	t.Helper()
	c = (&testCluster{t: t, file: &File{}, faults: newFaultNet()}).start(nil)
	leader = c.leader()
	c.createClients(leader, "before", 5)
	for _, n := range c.nodes {
		if n != leader {
			return c, leader, n
		}
	}
	return nil, nil, nil
}

// joinNode starts a node that waits to be added.
func joinNode(c *testCluster, id, addr string) *testNode {
	c.t.Helper()
	n := &testNode{id: id, addr: raft.ServerAddress(addr), fs: vfs.NewCrashableMem(), dir: c.t.TempDir()}
	c.file.Nodes = append(c.file.Nodes, Member{ID: id, Raft: addr, Public: "127.0.0.1:1", Admin: "127.0.0.1:1"})
	c.nodes = append(c.nodes, n)
	c.join = n
	c.open(n)
	c.join = nil
	return n
}

// stop closes n (it answers nothing from now on).
func stop(n *testNode) { _ = n.node.Close() }

// requireVoters fails unless leader's configuration holds want voters and
// no non-voter.
func requireVoters(t *testing.T, leader *testNode, want int) {
	t.Helper()
	voters := 0
	for _, s := range leader.node.servers() {
		if s.Suffrage != raft.Voter {
			t.Fatalf("a non-voter is left in the configuration: %+v", leader.node.servers())
		}
		voters++
	}
	if voters != want {
		t.Fatalf("%d voters, want %d: %+v", voters, want, leader.node.servers())
	}
}

// nudgedFuture is a raft.Future that ends, with err, only once it has been
// nudged: a configuration entry that commits only behind a later entry.
type nudgedFuture struct {
	nudged chan struct{}
	err    error
}

func (f *nudgedFuture) Error() error {
	<-f.nudged
	return f.err
}

// TestAwaitCommitNudges: a configuration change that waits for a later
// entry gets one (awaitCommit calls nudge) and its result is returned; one
// that commits at once is not nudged; one that never commits is given up
// at the limit.
func TestAwaitCommitNudges(t *testing.T) {
	want := errors.New("leadership lost")
	f := &nudgedFuture{nudged: make(chan struct{}), err: want}
	var nudges int
	var once sync.Once
	err := awaitCommit(f, func() { nudges++; once.Do(func() { close(f.nudged) }) }, time.Minute)
	if !errors.Is(err, want) || nudges < 1 {
		t.Fatalf("awaitCommit = %v after %d nudges, want %v after at least one", err, nudges, want)
	}

	done := &nudgedFuture{nudged: make(chan struct{})}
	close(done.nudged)
	nudges = 0
	if err := awaitCommit(done, func() { nudges++ }, time.Minute); err != nil || nudges != 0 {
		t.Fatalf("awaitCommit of a committed change = %v after %d nudges, want nil after none", err, nudges)
	}

	never := &nudgedFuture{nudged: make(chan struct{})}
	defer close(never.nudged) // ends awaitCommit's waiter
	start := time.Now()
	if err := awaitCommit(never, func() {}, 2*commitNudge); err == nil || time.Since(start) > time.Minute {
		t.Fatalf("awaitCommit of a change that never commits = %v after %v, want an error at the limit", err, time.Since(start))
	}
}

// slowDispatch is a go-metrics sink that, while armed, holds the Raft
// leader's goroutine where hashicorp/raft samples "dispatchLog": after it
// has woken the replicators for new entries and before, for a
// configuration entry, it counts the voters the entry adds. A replicator
// on the in-memory transport has its acknowledgement back by then.
type slowDispatch struct {
	metrics.BlackholeSink
	armed atomic.Bool
}

func (s *slowDispatch) AddSample(key []string, _ float32) { s.hold(key) }

func (s *slowDispatch) AddSampleWithLabels(key []string, _ float32, _ []metrics.Label) { s.hold(key) }

func (s *slowDispatch) hold(key []string) {
	if s.armed.Load() && slices.Contains(key, "dispatchLog") {
		time.Sleep(30 * time.Millisecond)
	}
}

// TestNewVoterAcknowledgingEarlyIsCounted: a member added while another is
// down, whose acknowledgement of its own voter entry arrives before the
// leader counts it as a voter (slowDispatch holds the leader there) while
// the other live voter's arrives after (its link is slowed), is still
// added: the leader appends an entry behind the change (awaitCommit),
// which the new voter's next acknowledgement counts. Without it the add
// waited for ever on the otherwise idle cluster.
func TestNewVoterAcknowledgingEarlyIsCounted(t *testing.T) {
	sink := &slowDispatch{}
	conf := metrics.DefaultConfig("")
	conf.EnableHostname, conf.EnableRuntimeMetrics = false, false
	if _, err := metrics.NewGlobal(conf, sink); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = metrics.NewGlobal(conf, &metrics.BlackholeSink{}) })

	c, leader, down := wedgeCluster(t)
	stop(down)
	n4 := joinNode(c, "n4", "10.0.0.4:7000")
	var live *testNode
	for _, n := range c.nodes {
		if n != leader && n != down && n != n4 {
			live = n
		}
	}
	// 60 to 120 ms a request: after the 30 ms hold, and within the live
	// follower's heartbeat timeout (testHeartbeat).
	c.faults.set(leader.addr, live.addr, faultRule{delay: 60 * time.Millisecond})
	sink.armed.Store(true)
	added := make(chan error, 1)
	go func() { added <- leader.node.AddMember(context.Background(), n4.id, string(n4.addr), c.ask) }()
	select {
	case err := <-added:
		sink.armed.Store(false)
		c.faults.heal()
		if err != nil {
			t.Fatalf("add: %v", err)
		}
	case <-time.After(30 * time.Second):
		sink.armed.Store(false)
		c.faults.heal()
		t.Fatal("the add has not returned in 30 s: the new voter's entry did not commit")
	}
	requireVoters(t, leader, 4)
	c.createClients(c.leader(down), "after", 5)
}
