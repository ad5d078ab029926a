package cluster

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/internal/poll"
)

// testCluster is three in-process nodes on hashicorp/raft's in-memory
// transport, each Raft store on its own crashable filesystem, so a test
// can partition nodes and cut their power.
type testCluster struct {
	t     *testing.T
	file  *File
	nodes []*testNode
	join  *testNode // open starts this node with Join
	clock func() time.Time
	// markets are the actors' markets (nil: the defaults)
	markets *engine.MarketsConfig
	// faults, when set, is the fault layer every node sends through
	// (faults_test.go).
	faults *faultNet
}

type testNode struct {
	id   string
	addr raft.ServerAddress
	fs   *vfs.MemFS
	// dir is the node's Raft dir: the store under it lives on fs, the
	// snapshots (Raft's file snapshot store) on disk.
	dir   string
	trans *raft.InmemTransport
	node  *Node
	// disk, when set, is fs with slow syncs (faults_test.go).
	disk *slowFS

	mu   sync.Mutex
	term *actors.Term // the node's latest leadership term
	// unreachable makes the node answer no peer's question (testCluster.ask).
	unreachable atomic.Bool
}

// system is n's running actors while its term lasts, else nil.
func (n *testNode) system() *actors.System {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.term == nil || n.term.Ended() {
		return nil
	}
	return n.term.System()
}

const (
	testHeartbeat     = 150 * time.Millisecond
	testSnapshotEvery = 64
	testTrailingLogs  = 16
)

func newTestCluster(t *testing.T) *testCluster {
	t.Helper()
	return newTestClusterClock(t, nil, nil)
}

// newTestClusterClock is newTestCluster with the actors' clock (nil: the
// wall clock) and markets (nil: the defaults).
func newTestClusterClock(t *testing.T, clock func() time.Time, markets *engine.MarketsConfig) *testCluster {
	t.Helper()
	return (&testCluster{t: t, file: &File{}, clock: clock, markets: markets}).start(nil)
}

// start makes c's three nodes (setup, when given, adjusts each before it
// opens), opens them, and closes them when the test ends.
func (c *testCluster) start(setup func(n *testNode)) *testCluster {
	c.t.Helper()
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("n%d", i)
		c.file.Nodes = append(c.file.Nodes, Member{ID: id, Raft: id, Public: "127.0.0.1:1", Admin: "127.0.0.1:1"})
		n := &testNode{id: id, addr: raft.ServerAddress(id), fs: vfs.NewCrashableMem(), dir: c.t.TempDir()}
		if setup != nil {
			setup(n)
		}
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		c.open(n)
	}
	c.t.Cleanup(func() {
		for _, n := range c.nodes {
			if n.node != nil {
				_ = n.node.Close()
			}
		}
	})
	return c
}

// open starts n's node on its filesystem with a new transport connected to
// every other node's.
func (c *testCluster) open(n *testNode) {
	c.t.Helper()
	_, n.trans = raft.NewInmemTransport(n.addr)
	for _, o := range c.nodes {
		if o != n && o.trans != nil {
			n.trans.Connect(o.addr, o.trans)
			o.trans.Connect(n.addr, n.trans)
		}
	}
	var trans interface {
		raft.Transport
		Close() error
	} = n.trans
	if c.faults != nil {
		trans = &faultTransport{InmemTransport: n.trans, net: c.faults, self: n.addr}
	}
	var fs vfs.FS = n.fs
	if n.disk != nil {
		fs = n.disk
	}
	node, err := Open(Config{
		File: c.file, Self: n.id, Dir: n.dir, Sync: true, FS: fs, Join: n == c.join,
		Actors: actors.Config{QuoteTTL: 300 * time.Second, PaymentWindow: 30 * time.Minute, Clock: c.clock,
			Markets: c.markets},
		HeartbeatTimeout: testHeartbeat, ElectionTimeout: testHeartbeat, SnapshotEvery: testSnapshotEvery,
		RaftLogLevel: hclog.Error,
		transport:    trans,
		tuneRaft: func(rc *raft.Config) {
			rc.TrailingLogs = testTrailingLogs
			rc.SnapshotInterval = 50 * time.Millisecond
			rc.CommitTimeout = 5 * time.Millisecond
		},
	})
	if err != nil {
		c.t.Fatal(err)
	}
	n.node = node
	node.Run(func(term *actors.Term) {
		n.mu.Lock()
		n.term = term
		n.mu.Unlock()
	})
}

// ask is the peer asker of in-process nodes: a node answers with its own
// status while it runs, is reachable through the fault layer from the
// asker and is the member asked (id and address).
func (c *testCluster) ask(_ context.Context, m Member) (NodeStatus, bool) {
	for _, n := range c.nodes {
		if n.id != m.ID || string(n.addr) != m.Raft || n.node == nil {
			continue
		}
		select {
		case <-n.node.quit:
			return NodeStatus{}, false
		default:
		}
		if n.unreachable.Load() {
			return NodeStatus{}, false
		}
		return n.node.LocalStatus(), true
	}
	return NodeStatus{}, false
}

// leader waits for a node whose actors serve.
func (c *testCluster) leader(except ...*testNode) *testNode {
	c.t.Helper()
	return poll.For(c.t, 10*time.Second, func() (*testNode, string) {
		for _, n := range c.nodes {
			if n.serves() && !slices.Contains(except, n) {
				return n, ""
			}
		}
		return nil, "no serving leader"
	})
}

// createClients writes count clients through n's actors and returns the
// names acknowledged (a failed write is not acknowledged).
// createClients creates count clients named prefix-0… through n's actors
// and returns the names acknowledged. A write refused because the
// leadership moved meanwhile (ErrUnavailable: not acknowledged) is asked
// again of whichever node serves now, for up to 20 s, so that a healthy
// majority acknowledges every one even when the 150 ms Raft timeouts of
// these tests elect a new leader on a loaded machine. (A write that failed
// after it committed may then exist twice: names need not be unique.)
func (c *testCluster) createClients(n *testNode, prefix string, count int) []string {
	c.t.Helper()
	sys := n.system()
	if sys == nil {
		return nil
	}
	deadline := time.Now().Add(20 * time.Second)
	var acked []string
	for i := 0; i < count; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		for {
			r := sys.Admin(&actors.CreateClient{Name: name})
			if r.Err == nil && r.Result == engine.ResultOK {
				acked = append(acked, name)
				break
			}
			if !errors.Is(r.Err, actors.ErrUnavailable) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond) // a refusal can be fast: no busy loop
			if next := c.serving(); next != nil {
				sys = next
			}
		}
	}
	return acked
}

// serving is the system of a node whose actors serve and whose Raft leads
// now, nil if none does.
func (c *testCluster) serving() *actors.System {
	for _, n := range c.nodes {
		if n.serves() {
			return n.system()
		}
	}
	return nil
}

// serves reports whether n's actors serve and its Raft leads.
func (n *testNode) serves() bool {
	sys := n.system()
	return n.node != nil && sys != nil && sys.Ready() == nil && n.node.raft.State() == raft.Leader
}

// clientNames reads the client names of n's replica.
func clientNames(t *testing.T, n *testNode) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	if err := n.node.fsm.read(func(s *engine.State, _ uint64) error {
		for _, cl := range s.Clients {
			names[cl.Name] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return names
}

// converge waits until every node's replica has the same {seq, hash}.
func (c *testCluster) converge() (uint64, string) {
	c.t.Helper()
	return c.convergeAmong(c.nodes)
}

// convergeAmong waits until the replicas of nodes have the same {seq, hash}.
func (c *testCluster) convergeAmong(nodes []*testNode) (uint64, string) {
	c.t.Helper()
	type at struct {
		seq  uint64
		hash string
	}
	got := poll.For(c.t, 10*time.Second, func() (at, string) {
		var states []string
		seen := map[at]bool{}
		var last at
		for _, n := range nodes {
			s, h, err := n.node.StateHash()
			if err != nil {
				c.t.Fatal(err)
			}
			last = at{s, h}
			seen[last] = true
			states = append(states, fmt.Sprintf("%s:%d:%s", n.id, s, h[:12]))
		}
		if len(seen) != 1 {
			return at{}, fmt.Sprintf("replicas do not converge: %v", states)
		}
		return last, ""
	})
	// StateHash hashes a replica rebuilt from the last snapshot and the
	// entries since: the live replica, at the same record, hashes the same.
	for _, n := range nodes {
		var seq uint64
		var live [32]byte
		if err := n.node.fsm.read(func(s *engine.State, last uint64) error {
			seq, live = last, s.Hash()
			return nil
		}); err != nil {
			c.t.Fatal(err)
		}
		if seq == got.seq && hex.EncodeToString(live[:]) != got.hash {
			c.t.Fatalf("%s: the live replica at %d hashes to %x, StateHash's rebuilt one to %s", n.id, seq, live[:6], got.hash[:12])
		}
	}
	return got.seq, got.hash
}

func (c *testCluster) requireAll(what string, names []string) {
	c.t.Helper()
	for _, n := range c.nodes {
		have := clientNames(c.t, n)
		for _, name := range names {
			if !have[name] {
				c.t.Fatalf("%s: acknowledged client %s missing on %s", what, name, n.id)
			}
		}
	}
}

// isolate cuts n off from the others, both ways; heal reconnects it.
func (c *testCluster) isolate(n *testNode) {
	n.trans.DisconnectAll()
	for _, o := range c.nodes {
		if o != n {
			o.trans.Disconnect(n.addr)
		}
	}
}

func (c *testCluster) heal(n *testNode) {
	for _, o := range c.nodes {
		if o != n {
			n.trans.Connect(o.addr, o.trans)
			o.trans.Connect(n.addr, n.trans)
		}
	}
}

// TestPartitionedLeader: a leader cut off from the others acknowledges
// nothing more; the majority elects a new one and takes writes; once
// healed, the old leader steps down and catches up.
func TestPartitionedLeader(t *testing.T) {
	c := newTestCluster(t)
	old := c.leader()
	acked := c.createClients(old, "before", 20)
	if len(acked) != 20 {
		t.Fatalf("healthy cluster acknowledged %d of 20", len(acked))
	}
	oldSys := old.system()
	c.isolate(old)
	// Writes to the isolated leader's actors: none may be acknowledged (it
	// cannot reach a majority; it steps down after its lease).
	for i := 0; i < 5; i++ {
		if r := oldSys.Admin(&actors.CreateClient{Name: fmt.Sprintf("isolated-%d", i)}); r.Err == nil {
			t.Fatalf("the isolated leader acknowledged client isolated-%d", i)
		}
	}
	newLeader := c.leader(old)
	acked = append(acked, c.createClients(newLeader, "after", 20)...)
	c.heal(old)
	c.converge()
	c.requireAll("after the partition healed", acked)
	if names := clientNames(t, newLeader); names["isolated-0"] {
		t.Fatal("a write the isolated leader refused is in the cluster")
	}
}

// TestPowerLossOfTwo: the leader and a follower lose power at once (each
// keeps only what it fsync'd); after both restart, every acknowledged
// write is there and the replicas agree.
func TestPowerLossOfTwo(t *testing.T) {
	c := newTestCluster(t)
	leader := c.leader()
	acked := c.createClients(leader, "c", 150) // crosses snapshots (every 64 entries)
	var follower *testNode
	for _, n := range c.nodes {
		if n != leader {
			follower = n
			break
		}
	}
	for _, n := range []*testNode{leader, follower} {
		crashed := n.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
		_ = n.node.Close()
		n.node, n.fs = nil, crashed
		n.mu.Lock()
		n.term = nil
		n.mu.Unlock()
	}
	for _, n := range []*testNode{leader, follower} {
		c.open(n)
	}
	l := c.leader()
	acked = append(acked, c.createClients(l, "d", 10)...)
	c.converge()
	c.requireAll("after power loss of two nodes", acked)
}

// TestLaggingFollowerInstallsSnapshot: a follower cut off while the log
// moves past its compaction point catches up from a snapshot.
func TestLaggingFollowerInstallsSnapshot(t *testing.T) {
	c := newTestCluster(t)
	leader := c.leader()
	var lagging *testNode
	for _, n := range c.nodes {
		if n != leader {
			lagging = n
			break
		}
	}
	c.isolate(lagging)
	acked := c.createClients(leader, "while-away", 3*testSnapshotEvery)
	if len(acked) != 3*testSnapshotEvery {
		t.Fatalf("two of three nodes acknowledged %d of %d", len(acked), 3*testSnapshotEvery)
	}
	// The leader's log no longer holds what the follower lacks.
	if err := leader.node.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	first, err := leader.node.store.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	if lag := lagging.node.raft.AppliedIndex(); first <= lag+1 {
		t.Fatalf("the leader's log still starts at %d, the lagging follower applied %d: no snapshot needed", first, lag)
	}
	c.heal(lagging)
	c.converge()
	c.requireAll("after the snapshot install", acked)
	if got := lagging.node.raft.Stats()["last_snapshot_index"]; got == "0" || got == "" {
		t.Fatalf("the lagging follower caught up without installing a snapshot (last_snapshot_index %q)", got)
	}
}

// TestReplaceLostNode: a follower's disk dies (its store and snapshots
// gone); a fresh node under the same id joins without bootstrapping, the
// leader replaces the member, and the new node catches up to the others.
func TestReplaceLostNode(t *testing.T) {
	c := newTestCluster(t)
	leader := c.leader()
	acked := c.createClients(leader, "before", 3*testSnapshotEvery)
	var lost *testNode
	for _, n := range c.nodes {
		if n != leader {
			lost = n
			break
		}
	}
	_ = lost.node.Close()
	lost.node, lost.fs, lost.dir = nil, vfs.NewCrashableMem(), t.TempDir() // a new disk
	c.join = lost
	c.open(lost)
	c.join = nil
	if err := leader.node.Replace(context.Background(), lost.id, c.ask); err != nil {
		t.Fatal(err)
	}
	if err := leader.node.Replace(context.Background(), leader.id, c.ask); err != ErrReplaceLeader {
		t.Fatalf("replacing the leader itself: %v", err)
	}
	acked = append(acked, c.createClients(c.leader(), "after", 10)...)
	c.converge()
	c.requireAll("after replacing a lost node", acked)
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	closed bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { return nil }
func (s *memSink) Close() error  { s.closed = true; return nil }

// TestSnapshotWhileApplying: a snapshot captured at one point and
// persisted after more writes applied holds exactly the state at the
// capture (a replica restored from it has the same hash), and becomes the
// base the next snapshot starts from.
func TestSnapshotWhileApplying(t *testing.T) {
	c := newTestCluster(t)
	leader := c.leader()
	c.createClients(leader, "before", 40)
	f := leader.node.fsm
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	want, seq := "", uint64(0)
	_ = f.read(func(s *engine.State, last uint64) error {
		h := s.Hash()
		want, seq = hex.EncodeToString(h[:]), last
		return nil
	})
	c.createClients(leader, "after", 30) // applied while the snapshot waits
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil || !sink.closed {
		t.Fatalf("persist: %v (closed %v)", err, sink.closed)
	}
	g := newFSM(slog.New(slog.DiscardHandler), 0, nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	_ = g.read(func(s *engine.State, last uint64) error {
		if h := s.Hash(); hex.EncodeToString(h[:]) != want || last != seq {
			t.Errorf("restored replica at %d %x, want %d %s", last, h, seq, want)
		}
		return nil
	})
	// NB: Raft may have taken a snapshot of its own meanwhile (every 64
	// entries here), so the base is at this snapshot or later.
	f.mu.RLock()
	baseSeq := f.baseSeq
	f.mu.RUnlock()
	if baseSeq < seq {
		t.Fatalf("after persisting: base at %d, want %d or later", baseSeq, seq)
	}
}

// TestNewLeaderUsesTheConfiguredClock: what a new leader writes before it
// serves (the markets, overdue expiries) is stamped by the configured
// clock, not the wall clock, as everything its actors write is.
func TestNewLeaderUsesTheConfiguredClock(t *testing.T) {
	at := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	// Markets other than the defaults, so the new leader records them.
	c := newTestClusterClock(t, func() time.Time { return at }, engine.DefaultMarketsConfig().WithoutBounds())
	leader := c.leader()
	if err := leader.node.fsm.read(func(s *engine.State, seq uint64) error {
		if seq == 0 || s.LastAt != at.UnixMilli() {
			t.Errorf("after takeover the replica's last event (seq %d) is at %d, want the clock's %d (%v)", seq, s.LastAt, at.UnixMilli(), at)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestMembershipChanges: two voters with new ids join a cluster of three
// (five members, the configuration carried in Raft), then a follower and
// the leader itself are removed: each removed node knows it is no member
// and serves nothing, the three left elect a leader and take writes, and
// no acknowledged write is lost.
func TestMembershipChanges(t *testing.T) {
	c := newTestCluster(t)
	leader := c.leader()
	acked := c.createClients(leader, "three", 20)
	for i, id := range []string{"n4", "n5"} {
		n := &testNode{id: id, addr: raft.ServerAddress(fmt.Sprintf("10.0.0.%d:7000", 4+i)), fs: vfs.NewCrashableMem(), dir: t.TempDir()}
		c.file.Nodes = append(c.file.Nodes, Member{ID: id, Raft: string(n.addr), Public: "127.0.0.1:1", Admin: "127.0.0.1:1"})
		c.nodes = append(c.nodes, n)
		c.join = n
		c.open(n)
		c.join = nil
		if n.node.IsMember() {
			t.Fatalf("%s is a member before it was added", id)
		}
		if err := leader.node.AddMember(context.Background(), id, string(n.addr), c.ask); err != nil {
			t.Fatal(err)
		}
		if err := leader.node.AddMember(context.Background(), id, string(n.addr), c.ask); err != nil {
			t.Fatalf("adding %s again at the same address: %v, want nothing changed", id, err)
		}
	}
	if err := leader.node.AddMember(context.Background(), "n4", "10.0.0.9:7000", c.ask); !errors.Is(err, ErrMemberExists) {
		t.Fatalf("n4 at another address: %v", err)
	}
	var bad *BadMemberError
	if err := leader.node.AddMember(context.Background(), "n6", "0.0.0.0:7000", c.ask); !errors.As(err, &bad) || bad.Field != "raft" {
		t.Fatalf("a wildcard address: %v", err)
	}
	acked = append(acked, c.createClients(leader, "five", 20)...)
	c.converge()
	c.requireAll("five members", acked)
	unreachable := func(context.Context, Member) (NodeStatus, bool) { return NodeStatus{}, false }
	if st := leader.node.Status(context.Background(), unreachable); len(st.Nodes) != 5 {
		t.Fatalf("the status lists %d members, want 5: %+v", len(st.Nodes), st.Nodes)
	}
	for _, n := range c.nodes {
		if !n.node.IsMember() {
			t.Fatalf("%s is not a member of a cluster of five", n.id)
		}
	}

	var follower *testNode
	for _, n := range c.nodes {
		if n != leader {
			follower = n
			break
		}
	}
	if err := leader.node.RemoveMember(context.Background(), follower.id, c.ask); err != nil {
		t.Fatal(err)
	}
	if err := leader.node.RemoveMember(context.Background(), leader.id, c.ask); err != nil {
		t.Fatalf("the leader removing itself: %v", err)
	}
	if err := leader.node.RemoveMember(context.Background(), "n9", c.ask); !errors.Is(err, ErrUnknownMember) {
		t.Fatalf("removing a stranger: %v", err)
	}
	for _, n := range []*testNode{follower, leader} {
		poll.True(t, 10*time.Second, "removed "+n.id+" no longer takes itself for a member", func() bool { return !n.node.IsMember() })
		if st := n.node.LocalStatus(); st.State != "not a member" {
			t.Fatalf("removed %s says it is %q", n.id, st.State)
		}
	}
	var left []*testNode
	for _, n := range c.nodes {
		if n != leader && n != follower {
			left = append(left, n)
		}
	}
	next := c.leader(leader, follower)
	acked = append(acked, c.createClients(next, "after", 20)...)
	if len(acked) != 60 {
		t.Fatalf("%d of 60 writes acknowledged", len(acked))
	}
	c.convergeAmong(left)
	for _, n := range left {
		have := clientNames(t, n)
		for _, name := range acked {
			if !have[name] {
				t.Fatalf("acknowledged client %s missing on %s", name, n.id)
			}
		}
	}
	if old := leader.node.System(); old != nil {
		t.Fatal("the removed leader still runs its actors")
	}
}

// TestSeedFromBackup: a node started on an empty dir from a backup of a
// cluster's replica leads a cluster of itself alone holding that state
// (same {seq, hash}); restarted with the backup again, or asked to join
// and seed at once, it refuses to start.
func TestSeedFromBackup(t *testing.T) {
	c := newTestCluster(t)
	leader := c.leader()
	acked := c.createClients(leader, "backed-up", 10)
	seq, state, err := leader.node.Backup()
	if err != nil {
		t.Fatal(err)
	}
	_, wantHash, _ := leader.node.StateHash()
	file := &File{Nodes: []Member{{ID: "s1", Raft: "s1", Public: "127.0.0.1:1", Admin: "127.0.0.1:1"}}}
	dir, fs := t.TempDir(), vfs.NewMem()
	open := func(join bool) (*Node, error) {
		_, trans := raft.NewInmemTransport("s1")
		return Open(Config{File: file, Self: "s1", Dir: dir, FS: fs, Join: join, RaftLogLevel: hclog.Error, Sync: true,
			Actors:           actors.Config{QuoteTTL: 300 * time.Second, PaymentWindow: 30 * time.Minute},
			HeartbeatTimeout: testHeartbeat, ElectionTimeout: testHeartbeat, transport: trans,
			FromBackup: func() (uint64, []byte, error) { return seq, state, nil }})
	}
	if _, err := open(true); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("joining and seeding at once: %v", err)
	}
	n, err := open(false)
	if err != nil {
		t.Fatal(err)
	}
	n.Run(nil)
	poll.True(t, 10*time.Second, "the seeded node leads its cluster of one", func() bool { return n.System() != nil })
	gotSeq, gotHash, err := n.StateHash()
	if err != nil || gotSeq != seq || gotHash != wantHash {
		t.Fatalf("the seeded replica is at {%d, %s}, the backup at {%d, %s} (%v)", gotSeq, gotHash, seq, wantHash, err)
	}
	have := clientNames(t, &testNode{node: n})
	for _, name := range acked {
		if !have[name] {
			t.Fatalf("client %s of the backup is missing", name)
		}
	}
	if st := n.Status(context.Background(), nil); len(st.Nodes) != 1 || st.Nodes[0].ID != "s1" {
		t.Fatalf("the seeded cluster's members: %+v", st.Nodes)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := open(false); err == nil || !strings.Contains(err.Error(), "holds a Raft log already") {
		t.Fatalf("seeding a dir that holds a log: %v", err)
	}
}
