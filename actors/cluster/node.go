package cluster

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/actors/chainwatch"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/wal"
)

// Config configures a node.
type Config struct {
	File *File
	Self string // this node's id in File
	Dir  string // where the Raft store and snapshots live (<data>/raft)
	Sync bool   // fsync every Raft write (false: benchmarks only)
	// Join, on a first start (empty Raft dir), skips the bootstrap: the
	// node waits for the leader to add it (Replace), as a replacement for
	// a member whose data was lost.
	Join bool
	FS   vfs.FS // the Raft store's filesystem; nil = disk
	// FromBackup, on a first start (empty Raft dir, not Join), seeds the
	// node from a backup instead of bootstrapping from the file: it
	// returns the backup's state (engine.EncodeState) and the sequence of
	// its last record, which become a Raft snapshot at index 1 whose
	// configuration is this node alone. The others then join (AddMember)
	// and receive the snapshot.
	FromBackup func() (seq uint64, state []byte, err error)
	// Actors configures the actors a leader runs.
	Actors actors.Config
	Logger *slog.Logger
	// RaftLogLevel is the level of hashicorp/raft's own log lines, written
	// through Logger with "component":"raft" (0 = hclog.Info: elections and
	// snapshots). oja serve's Logger carries "node" on every line.
	RaftLogLevel hclog.Level
	// Seed runs on each new leader's system before it serves (demo data;
	// it must be idempotent).
	Seed func(*actors.System) error
	// Webhooks, when set, makes the webhook dispatcher of a leadership
	// term, given its system: the leader feeds it from the replica (every
	// endpoint and owed event, then every change as entries apply) and
	// stops it when the term ends.
	Webhooks func(sys *actors.System) actors.Webhooks
	// TLS, when set, makes the Raft transport mutual TLS (tls.go); nil is
	// plain TCP (--cluster-insecure).
	TLS *NodeTLS
	// Events, when set, is this node's partner event history: its replica
	// feeds it every record's events (see actors.EventSink).
	Events actors.EventSink
	// SnapshotEvery is how many Raft entries pass between snapshots (0 =
	// Raft's default, 8192); the log is compacted behind each one.
	SnapshotEvery uint64
	// HeartbeatTimeout, ElectionTimeout and LeaderLeaseTimeout are Raft's
	// (0 = Raft's defaults: 1 s, 1 s, 500 ms; the lease is at most the
	// heartbeat timeout).
	HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout time.Duration

	// In-process tests: a transport instead of TCP on Member.Raft, and
	// changes to Raft's configuration.
	transport interface {
		raft.Transport
		Close() error
	}
	tuneRaft func(*raft.Config)
}

// Node is one member of a replicated cluster: a hashicorp/raft replica of
// the log and of the state (fsm), and, while it leads, the actors.
type Node struct {
	cfg   Config
	self  Member
	raft  *raft.Raft
	store *wal.RaftStore
	trans interface {
		raft.Transport
		Close() error
	}
	fsm *fsm
	// live is raft once it runs, for the Raft port's goroutines (which
	// start before it).
	live  atomic.Pointer[raft.Raft]
	mux   *mux          // the Raft port (nil with an in-process transport)
	peers *peerListener // its HTTP side

	mu   sync.Mutex   // guards term
	term *actors.Term // this leadership term's service, nil while not leading

	check         leaderCheck
	leaderChanges atomic.Uint64
	// observer tells onLeader of every leader change Raft observes.
	observer   *raft.Observer
	obs        chan raft.Observation
	onLeader   atomic.Pointer[func(Member, bool)]
	onTerm     func(*actors.Term) // Run's argument
	quit, done chan struct{}
	running    bool
	// adding is the member AddMember is adding, nil otherwise: the Raft
	// port may dial it as that member (idAt) before the configuration
	// names it.
	adding atomic.Pointer[Member]
}

// barrierTimeout bounds a new leader's wait for its predecessor's entries
// to apply before it starts its actors.
const barrierTimeout = 30 * time.Second

// Open starts the node: opens its Raft store (bootstrapping the cluster
// from the file on a first start), joins the cluster, and from then on
// runs the actors whenever it is the leader, once Run is called.
func Open(cfg Config) (*Node, error) {
	self, ok := cfg.File.Member(cfg.Self)
	if !ok {
		return nil, fmt.Errorf("cluster: --node %q is not in the cluster file", cfg.Self)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Actors.Logger == nil {
		cfg.Actors.Logger = cfg.Logger
	}
	n := &Node{cfg: cfg, self: self, quit: make(chan struct{}), done: make(chan struct{})}
	n.fsm = newFSM(cfg.Logger, cfg.Actors.Retention, cfg.Events)

	hlog := newRaftLogger(cfg.Logger, cfg.RaftLogLevel)
	var err error
	if n.store, err = wal.OpenRaftStore(filepath.Join(cfg.Dir, "log"), wal.RaftStoreOptions{FS: cfg.FS, Sync: cfg.Sync}); err != nil {
		return nil, err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(cfg.Dir, "snapshots"), 2, hlog)
	if err != nil {
		_ = n.store.Close()
		return nil, fmt.Errorf("cluster: snapshots: %w", err)
	}
	if n.trans = cfg.transport; n.trans == nil {
		if n.mux, err = newMux(self.Raft, cfg.TLS, n.idAt, cfg.Logger); err != nil {
			_ = n.store.Close()
			return nil, fmt.Errorf("cluster: raft transport on %s: %w", self.Raft, err)
		}
		n.peers = &peerListener{m: n.mux}
		// NB: MaxRPCsInFlight 1 turns hashicorp/raft's pipelined
		// replication off. With it on (the default, 2), a follower's
		// refusal (Success=false: after a pause, say) ends the pipeline's
		// decoder while its sender, woken by a trigger, parks on an
		// unbuffered channel the decoder no longer empties; the decoder in
		// turn parks on the channel the ended consumer read. Both wait for
		// the pipeline's Close, which runs only once the sender returns:
		// replication to that follower stops for good, and Raft's
		// Shutdown waits on it for ever (a leader paused 12 s then sent
		// SIGTERM hung 28 minutes in netPipeline.AppendEntries). No read
		// or write deadline can free it: the goroutines wait on channels,
		// not on the connection. Raft's own documentation finds pipelining
		// of little use for throughput or latency beside batching, which
		// the Raft log does (raftLog).
		n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: raftLayer{n.mux}, MaxPool: 3,
			MaxRPCsInFlight: 1, Timeout: 10 * time.Second, Logger: hlog})
	}
	if cfg.TLS != nil {
		allowed := n.mayConnect
		cfg.TLS.member.Store(&allowed)
	}
	rc := raftConfig(cfg, self, hlog)
	n.check.timeout = verifyTimeout(rc.HeartbeatTimeout)
	if err := n.firstState(rc, snaps); err != nil {
		n.closeStores()
		return nil, err
	}
	if n.raft, err = raft.NewRaft(rc, n.fsm, n.store, n.store, snaps, n.trans); err != nil {
		n.closeStores()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	n.live.Store(n.raft)
	n.obs = make(chan raft.Observation, 16)
	n.observer = raft.NewObserver(n.obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.raft.RegisterObserver(n.observer)
	go n.observeLeaders()
	return n, nil
}

// raftConfig is hashicorp/raft's configuration for the node self, with
// cfg's timeouts and snapshot threshold where set (a leader's lease never
// longer than its heartbeat timeout).
func raftConfig(cfg Config, self Member, logger hclog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(self.ID)
	rc.Logger = logger
	if cfg.HeartbeatTimeout > 0 {
		rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	}
	if cfg.ElectionTimeout > 0 {
		rc.ElectionTimeout = cfg.ElectionTimeout
	}
	if cfg.LeaderLeaseTimeout > 0 {
		rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	}
	if rc.LeaderLeaseTimeout > rc.HeartbeatTimeout {
		rc.LeaderLeaseTimeout = rc.HeartbeatTimeout
	}
	if cfg.SnapshotEvery > 0 {
		rc.SnapshotThreshold = cfg.SnapshotEvery
	}
	if cfg.tuneRaft != nil {
		cfg.tuneRaft(rc)
	}
	return rc
}

// firstState gives a node with no Raft state yet its first: a backup's
// snapshot (--from-backup), the cluster file's members (a bootstrap), or
// nothing for a node that joins (the leader adds it). A node with state
// keeps it; a backup for it, or both --join and --from-backup, is refused.
func (n *Node) firstState(rc *raft.Config, snaps raft.SnapshotStore) error {
	cfg, self := n.cfg, n.self
	existing, err := raft.HasExistingState(n.store, n.store, snaps)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if !existing && cfg.Join {
		cfg.Logger.Info("joining: waiting for the leader to add this node (oja admin cluster add " + self.ID + " " + self.Raft + ", or replace " + self.ID + " for a lost member)")
	}
	switch {
	case cfg.Join && cfg.FromBackup != nil:
		return errors.New("cluster: a node either joins or is seeded from a backup, not both")
	case existing && cfg.FromBackup != nil:
		return fmt.Errorf("cluster: %s holds a Raft log already: a backup seeds only a node whose data dir is empty (restart it without --from-backup)", cfg.Dir)
	case !existing && cfg.FromBackup != nil:
		if err := seedSnapshot(snaps, n.trans, self, cfg.FromBackup); err != nil {
			return err
		}
		cfg.Logger.Info("seeded from a backup: a cluster of this node alone; add the other members (oja admin cluster add)")
	case !existing && !cfg.Join:
		var servers []raft.Server
		for _, m := range cfg.File.Nodes {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(m.ID), Address: raft.ServerAddress(m.Raft)})
		}
		if err := raft.BootstrapCluster(rc, n.store, n.store, snaps, n.trans, raft.Configuration{Servers: servers}); err != nil {
			return fmt.Errorf("cluster: bootstrap: %w", err)
		}
		cfg.Logger.Info("cluster bootstrapped from the cluster file", "nodes", len(servers))
	}
	return nil
}

// OnLeaderChange makes fn be told of every change of the leader this node
// observes (ok false: none known), on a goroutine of the node's.
func (n *Node) OnLeaderChange(fn func(leader Member, ok bool)) { n.onLeader.Store(&fn) }

func (n *Node) observeLeaders() {
	for {
		select {
		case <-n.quit:
			return
		case o := <-n.obs:
			lo := o.Data.(raft.LeaderObservation)
			if fn := n.onLeader.Load(); fn != nil {
				(*fn)(Member{ID: string(lo.LeaderID), Raft: string(lo.LeaderAddr)}, lo.LeaderID != "")
			}
		}
	}
}

// seedSnapshot writes the state from backup as the node's first Raft
// snapshot (index 1, term 1), in the FSM's snapshot format, with a
// configuration of self alone.
func seedSnapshot(snaps raft.SnapshotStore, trans raft.Transport, self Member, backup func() (uint64, []byte, error)) error {
	seq, state, err := backup()
	if err != nil {
		return fmt.Errorf("cluster: the backup: %w", err)
	}
	config := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(self.ID), Address: raft.ServerAddress(self.Raft)}}}
	sink, err := snaps.Create(raft.SnapshotVersionMax, 1, 1, config, 1, trans)
	if err != nil {
		return fmt.Errorf("cluster: seeding: %w", err)
	}
	if _, err := sink.Write(append(binary.BigEndian.AppendUint64(nil, seq), state...)); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("cluster: seeding: %w", err)
	}
	return sink.Close()
}

// Run starts serving: from now on, whenever this node leads, its actors
// run, and onTerm is given each leadership term once it serves (the term
// ends — its Done closes — as soon as the leadership is lost). Leadership
// gained before Run is not missed (Raft keeps the latest change).
func (n *Node) Run(onTerm func(*actors.Term)) {
	n.onTerm = onTerm
	n.running = true
	go n.watch()
}

func (n *Node) closeStores() {
	if n.trans != nil {
		_ = n.trans.Close()
	}
	_ = n.store.Close()
}

// watch starts the actors on each gain of leadership and stops them on
// each loss. Raft's leader channel keeps only the latest change, so a
// second "true" means leadership was lost and regained meanwhile: the
// actors restart from the replica either way.
func (n *Node) watch() {
	defer close(n.done)
	for {
		select {
		case <-n.quit:
			n.stopActors()
			return
		case leader := <-n.raft.LeaderCh():
			n.leaderChanges.Add(1)
			n.stopActors()
			if leader {
				if err := n.startActors(); err != nil {
					n.cfg.Logger.Error("could not start serving as leader; handing leadership over", "err", err)
					n.stopActors()
					_ = n.raft.LeadershipTransfer()
				}
			}
		}
	}
}

// startActors makes this new leader serve: a barrier applies every entry
// of earlier terms, the actors start from the replica's state itself (the
// fsm lends it and rebuilds a replica of its own beside them; as recovery
// does from the log, overdue quotes expired first), then the gateway gets
// the term.
func (n *Node) startActors() error {
	began := time.Now()
	if err := n.raft.Barrier(barrierTimeout).Error(); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	barrier := time.Since(began)
	// The actors take the replica's state over; the fsm rebuilds its own.
	state, err := n.fsm.lend()
	if err != nil {
		return err
	}
	lent := time.Since(began) - barrier
	// The configured clock (tests set one), as recovery on a single node
	// is given its now.
	now := time.Now
	if n.cfg.Actors.Clock != nil {
		now = n.cfg.Actors.Clock
	}
	log := newRaftLog(n.raft.Apply, n.writeFailed)
	expired, err := actors.ExpireOverdue(state, log, now())
	if err != nil {
		log.close()
		return err
	}
	markets := n.cfg.Actors.Markets
	if markets == nil {
		markets = engine.DefaultMarketsConfig()
	}
	if _, err := actors.RecordMarkets(state, log, markets, now()); err != nil {
		log.close()
		return err
	}
	quotes := state.Quotes.Len() // Start takes the state over
	startedAt := time.Now()
	sys, err := actors.Start(state, log, n.cfg.Actors)
	if err != nil {
		log.close()
		return err
	}
	var hooks actors.Webhooks
	if n.cfg.Webhooks != nil {
		hooks = n.cfg.Webhooks(sys)
	}
	// The term's chain watchers: only the leader watches.
	term := actors.NewTerm(sys, hooks, log.close).WithChains(chainwatch.Start(sys, sys.Markets(), markets.ChainWatch(), n.cfg.Logger))
	n.mu.Lock()
	n.term = term
	n.mu.Unlock()
	if n.cfg.Seed != nil {
		if err := n.cfg.Seed(sys); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	if hooks != nil {
		// Every endpoint and owed event the replica holds, then every
		// change as entries apply (until stopActors).
		n.fsm.observeWebhooks(hooks)
		hooks.Start()
	}
	// The parts of the start, for the failover's cost: the barrier (the
	// entries of earlier terms applied), the lend of the replica's state
	// (waiting for an earlier lend's rebuild, if one still runs), and the
	// actors' start.
	n.cfg.Logger.Info("leading: serving writes", "term", n.raft.CurrentTerm(), "expired_overdue", expired,
		"quotes", quotes, "start_duration", time.Since(began).String(), "barrier_duration", barrier.String(),
		"lend_duration", lent.String(), "actors_duration", time.Since(startedAt).String())
	if n.onTerm != nil {
		n.onTerm(term)
	}
	return nil
}

// writeFailed hands leadership over after a write failed while this node
// still leads: its actors now refuse writes (a failed write is final for
// them), and a new leader — possibly this node again, with new actors —
// restores service. Runs on the log's goroutine: the transfer is started,
// not awaited.
func (n *Node) writeFailed(err error) {
	n.cfg.Logger.Error("a write failed while leading; handing leadership over so that the actors restart", "err", err)
	go func() {
		if err := n.raft.LeadershipTransfer().Error(); err != nil {
			n.cfg.Logger.Warn("leadership transfer after a failed write", "err", err)
		}
	}()
}

// stopActors ends this node's leadership term (actors.Term.End): the
// gateway forwards from now on and ends the term's streams, the
// dispatcher and the actors stop, and writes still pending end (committed,
// or failed with the lost leadership: never acknowledged unless a majority
// holds them).
func (n *Node) stopActors() {
	n.mu.Lock()
	term := n.term
	n.term = nil
	n.mu.Unlock()
	if term == nil {
		return
	}
	n.fsm.observeWebhooks(nil)
	term.End()
	n.cfg.Logger.Info("not leading: actors stopped")
}

// System returns the running system while this node leads, else nil.
func (n *Node) System() *actors.System {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.term == nil {
		return nil
	}
	return n.term.System()
}

// Bounds of Close: whatever state Raft is in (stopped, partitioned,
// mid-snapshot, a peer paused), a node closes within the two of them and
// the closing of its transport and store.
const (
	// actorsStopMax bounds stopping the actors: their pending writes end
	// when Raft commits or refuses them; past it Raft is shut down under
	// them, which fails what is still pending (never acknowledged).
	actorsStopMax = 4 * time.Second
	// raftShutdownMax bounds Raft's own shutdown: past it, its goroutines
	// are abandoned (the process is about to exit) and the store is left
	// open under them — every write it acknowledged is synced already.
	raftShutdownMax = 4 * time.Second
)

// ErrAbandoned is Close's report of what it could not stop in time.
var ErrAbandoned = errors.New("cluster: abandoned on close")

// Close stops the actors, leaves Raft and closes the store, within
// closeMax. What did not stop in time is abandoned and named in the error
// (ErrAbandoned), and logged: the caller exits the process.
func (n *Node) Close() error {
	select {
	case <-n.quit:
		return nil
	default:
	}
	close(n.quit)
	shutdown := sync.OnceValue(func() raft.Future { return n.raft.Shutdown() })
	var abandoned []string
	if n.running {
		select {
		case <-n.done:
		case <-time.After(actorsStopMax):
			// The actors wait on writes Raft does not end: shut Raft
			// down under them, which fails those writes.
			n.cfg.Logger.Warn("shutdown: the actors' pending writes did not end in time; shutting Raft down under them", "waited", actorsStopMax)
			go shutdown()
			select {
			case <-n.done:
			case <-time.After(raftShutdownMax):
				abandoned = append(abandoned, "the leadership term's actors")
			}
		}
	}
	n.raft.DeregisterObserver(n.observer)
	var err error
	raftDone := make(chan error, 1)
	go func() { raftDone <- shutdown().Error() }()
	select {
	case err = <-raftDone:
	case <-time.After(raftShutdownMax):
		abandoned = append(abandoned, "Raft's goroutines (its shutdown did not finish)")
	}
	if len(abandoned) > 0 {
		// NB: the store stays open under goroutines that may still use
		// it; every record Raft acknowledged is synced, and the process
		// exits next, which releases its lock.
		msg := strings.Join(abandoned, "; ")
		n.cfg.Logger.Error("shutdown: abandoned what did not stop in time; the store is left to the process's exit (every acknowledged write is synced)", "abandoned", msg)
		return errors.Join(fmt.Errorf("%w: %s", ErrAbandoned, msg), n.trans.Close())
	}
	n.fsm.close()
	return errors.Join(err, n.trans.Close(), n.store.Close())
}

// Self is this node's member entry.
func (n *Node) Self() Member { return n.self }

// Leader returns the leader's id and Raft address, if a leader is known.
// (Its public and admin addresses are its own business: nodes reach each
// other only through the Raft port, mux.go.)
func (n *Node) Leader() (Member, bool) {
	addr, id := n.raft.LeaderWithID()
	if id == "" {
		return Member{}, false
	}
	return Member{ID: string(id), Raft: string(addr)}, true
}

// servers is the latest Raft configuration this node holds (empty before
// raft runs, and on a node that waits to be added).
func (n *Node) servers() []raft.Server {
	r := n.live.Load()
	if r == nil {
		return nil
	}
	return r.GetConfiguration().Configuration().Servers
}

// idAt names the member at a Raft address: by the configuration, else
// (before raft runs or while joining) by the cluster file.
func (n *Node) idAt(addr raft.ServerAddress) (string, bool) {
	for _, s := range n.servers() {
		if s.Address == addr {
			return string(s.ID), true
		}
	}
	if m := n.adding.Load(); m != nil && m.Raft == string(addr) {
		return m.ID, true
	}
	for _, m := range n.cfg.File.Nodes {
		if m.Raft == string(addr) {
			return m.ID, true
		}
	}
	return "", false
}

// mayConnect says whether a peer with this node id may connect (tls.go):
// a member of the configuration; before raft runs, of the file; while this
// node holds no configuration (it waits to be added), any node the CA
// certified, since the leader adding it is the one that dials first.
func (n *Node) mayConnect(id string) bool {
	if n.live.Load() == nil {
		_, ok := n.cfg.File.Member(id)
		return ok
	}
	servers := n.servers()
	if len(servers) == 0 {
		return true
	}
	for _, s := range servers {
		if string(s.ID) == id {
			return true
		}
	}
	return false
}

// IsMember reports whether this node is a voter of the configuration it
// holds. One that is not — started with --join and not added yet, or
// removed — serves nothing (the gateway answers 503 and /readyz fails).
func (n *Node) IsMember() bool {
	for _, s := range n.servers() {
		if string(s.ID) == n.self.ID {
			return s.Suffrage == raft.Voter
		}
	}
	return false
}

// DialPeer opens an HTTP connection to member m over the Raft port (mux.go):
// mutual TLS when the node has it, checked against m's id; the dial and
// the handshake within timeout (at most peerDialTimeout; a paused peer
// accepts the TCP connection but never answers the handshake).
func (n *Node) DialPeer(m Member, timeout time.Duration) (net.Conn, error) {
	if n.mux == nil {
		return nil, errors.New("cluster: this node has no Raft port (in-process transport)")
	}
	if id, ok := n.idAt(raft.ServerAddress(m.Raft)); !ok || id != m.ID {
		return nil, fmt.Errorf("cluster: %s is not %s's raft address", m.Raft, m.ID)
	}
	if timeout <= 0 || timeout > peerDialTimeout {
		timeout = peerDialTimeout
	}
	return n.mux.dial(raft.ServerAddress(m.Raft), timeout, protoHTTP)
}

// PeerListener is the HTTP side of the Raft port, which the gateway serves
// (nil with an in-process transport). Closing it leaves Raft running.
func (n *Node) PeerListener() net.Listener {
	if n.peers == nil {
		return nil
	}
	return n.peers
}

// NodeStatus is one node in the cluster status.
type NodeStatus struct {
	ID           string `json:"id"`
	Raft         string `json:"raft"`  // its Raft address, as the configuration holds it
	State        string `json:"state"` // leader, follower, candidate, shutdown, unreachable, not a member
	AppliedIndex uint64 `json:"appliedIndex"`
}

// Status is GET /admin/v1/cluster.
type Status struct {
	Leader *string      `json:"leader"` // null while no leader is known
	Term   uint64       `json:"term"`
	Nodes  []NodeStatus `json:"nodes"`
}

// LocalStatus is this node's own entry.
func (n *Node) LocalStatus() NodeStatus {
	st := NodeStatus{ID: n.self.ID, Raft: n.self.Raft, State: strings.ToLower(n.raft.State().String()), AppliedIndex: n.raft.AppliedIndex()}
	if !n.IsMember() {
		st.State = "not a member" // Raft shuts down on a removed node (ShutdownOnRemove)
	}
	return st
}

// peerTimeout bounds the cluster status's question to each peer.
const peerTimeout = time.Second

// PeerAsker asks member m for its own status entry (the gateway does it
// over m's admin API); ok false: no answer.
type PeerAsker func(ctx context.Context, m Member) (st NodeStatus, ok bool)

// Status asks every peer for its own entry with ask, in parallel, each
// bounded by peerTimeout (or ctx, if sooner); a peer that does not answer
// is "unreachable". The cluster package does no HTTP of its own: how a
// peer is asked is the gateway's (it serves what is asked).
func (n *Node) Status(ctx context.Context, ask PeerAsker) Status {
	servers := n.servers()
	st := Status{Term: n.raft.CurrentTerm(), Nodes: make([]NodeStatus, len(servers))}
	if leader, ok := n.Leader(); ok {
		st.Leader = &leader.ID
	}
	var wg sync.WaitGroup
	for i, s := range servers {
		m := Member{ID: string(s.ID), Raft: string(s.Address)}
		if m.ID == n.self.ID {
			st.Nodes[i] = n.LocalStatus()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(ctx, peerTimeout)
			defer cancel()
			got, ok := ask(c, m)
			if !ok || got.ID != m.ID {
				got = NodeStatus{ID: m.ID, State: "unreachable"}
			}
			got.Raft = m.Raft
			st.Nodes[i] = got
		}()
	}
	wg.Wait()
	if !n.IsMember() {
		st.Nodes = append(st.Nodes, n.LocalStatus()) // a removed or joining node still shows itself
	}
	return st
}

// Backup returns this node's replica as of its last applied record —
// committed, as every applied entry is — encoded as an engine snapshot
// (engine.AppendState), with that record's sequence. The encoding is
// rebuilt beside the replica, as a Raft snapshot is, so applies never wait
// for it.
func (n *Node) Backup() (seq uint64, state []byte, err error) {
	d, err := n.fsm.delta()
	if err != nil {
		return 0, nil, err
	}
	data, err := d.encode()
	if err != nil {
		return 0, nil, err
	}
	return d.seq, data[8:], nil
}

// StateHash is GET /admin/v1/state: the last record this node applied and
// the hash of its replica's state after it (engine.State.Hash), so an
// operator can see that replicas agree. NB: it hashes that state as Backup
// encodes it, rebuilt from the last snapshot and the entries applied since
// (taken under the read lock, a slice header copy), never the live
// replica: hashing a million quotes takes seconds, for which the live
// replica's read lock would hold back every apply.
func (n *Node) StateHash() (seq uint64, hash string, err error) {
	d, err := n.fsm.delta()
	if err != nil {
		return 0, "", err
	}
	r, err := d.rebuild()
	if err != nil {
		return 0, "", err
	}
	h := r.State().Hash()
	return d.seq, hex.EncodeToString(h[:]), nil
}

// Metrics are the figures /metrics exposes for the cluster.
type Metrics struct {
	Term, CommitIndex, AppliedIndex, LastIndex uint64
	LeaderChanges                              uint64
	Leading                                    bool
	// LastContact is how long ago a follower last heard from its leader
	// (0 on the leader).
	LastContact time.Duration
}

// Metrics reads the node's Raft figures.
func (n *Node) Metrics() Metrics {
	m := Metrics{
		Term: n.raft.CurrentTerm(), CommitIndex: n.raft.CommitIndex(), AppliedIndex: n.raft.AppliedIndex(),
		LastIndex: n.raft.LastIndex(), LeaderChanges: n.leaderChanges.Load(), Leading: n.raft.State() == raft.Leader,
	}
	if !m.Leading {
		if c := n.raft.LastContact(); !c.IsZero() {
			m.LastContact = time.Since(c)
		}
	}
	return m
}

// VerifyLeader confirms, with a round of heartbeats answered by a
// majority, that this node still leads: a read served after it reflects
// every write acknowledged before the read began, even on a leader that
// was paused or partitioned without knowing it yet. Concurrent callers
// share rounds (each waits for a round that started after it called).
func (n *Node) VerifyLeader() error { return n.check.verify(n.raft) }

// leaderCheck coalesces VerifyLeader calls into rounds.
type leaderCheck struct {
	mu      sync.Mutex
	next    *verifyRound // the round the next callers join; it starts after the running one
	running bool
	// timeout bounds a round (verifyTimeout): hashicorp/raft may leave a
	// verification unanswered when its leader steps down (seen when the
	// leader removed itself: DELETE …/cluster/nodes/<leader> never
	// answered), so a round that takes longer is taken as lost
	// leadership and its future is abandoned.
	timeout time.Duration
}

// ErrVerifyTimeout is a leadership check Raft did not answer in time.
var ErrVerifyTimeout = errors.New("cluster: the leadership check was not answered in time: taken as not leading")

// verifyTimeout is a round's bound for heartbeats of heartbeat: a round
// takes about one heartbeat round trip; several are allowed.
func verifyTimeout(heartbeat time.Duration) time.Duration { return max(3*time.Second, 4*heartbeat) }

type verifyRound struct {
	done chan struct{}
	err  error
}

func (c *leaderCheck) verify(r *raft.Raft) error {
	c.mu.Lock()
	if c.next == nil {
		c.next = &verifyRound{done: make(chan struct{})}
	}
	round := c.next
	if !c.running {
		c.running = true
		go c.run(r)
	}
	c.mu.Unlock()
	<-round.done
	return round.err
}

// verifyOnce runs one verification within c.timeout.
func (c *leaderCheck) verifyOnce(r *raft.Raft) error {
	f := r.VerifyLeader()
	if c.timeout <= 0 {
		return f.Error()
	}
	answer := make(chan error, 1)
	go func() { answer <- f.Error() }() // NB: left to end on its own if Raft never answers
	t := time.NewTimer(c.timeout)
	defer t.Stop()
	select {
	case err := <-answer:
		return err
	case <-t.C:
		return ErrVerifyTimeout
	}
}

func (c *leaderCheck) run(r *raft.Raft) {
	for {
		c.mu.Lock()
		round := c.next
		c.next = nil
		if round == nil {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		round.err = c.verifyOnce(r)
		close(round.done)
	}
}

// Membership errors.
var (
	// ErrUnreachable: a member to add does not answer, as that member,
	// over the Raft port (mutual TLS: no certificate of that id).
	ErrUnreachable = errors.New("cluster: the member is not reachable as that member over the raft port")
	// ErrNoQuorum: the change would leave fewer than a quorum of the
	// voters reachable.
	ErrNoQuorum = errors.New("cluster: the change would leave fewer than a quorum of the voters reachable")
	// ErrNotCaughtUp: the member added as a non-voter did not catch up
	// with the leader in time; it was removed again.
	ErrNotCaughtUp   = errors.New("cluster: the new member did not catch up with the leader in time; it was removed and the configuration is as before")
	ErrUnknownMember = errors.New("cluster: no such member in the cluster's configuration")
	ErrReplaceLeader = errors.New("cluster: the leader cannot replace itself; stop it (another node takes over) and ask the new leader")
	ErrMemberExists  = errors.New("cluster: a member has this id or this raft address already")
	ErrClusterFull   = fmt.Errorf("cluster: a cluster has at most %d members", membersMax)
	ErrLastMember    = errors.New("cluster: the last member cannot be removed")
)

// member finds id in the configuration.
func (n *Node) member(id string) (raft.Server, bool) {
	for _, s := range n.servers() {
		if string(s.ID) == id {
			return s, true
		}
	}
	return raft.Server{}, false
}

// Replace swaps member id for a fresh node at the same address: the
// leader removes it from the Raft configuration, then adds it back as a
// voter; the fresh node (started with Join on an empty data dir) then
// receives a snapshot and the log from the leader. This is how a member
// whose disk died rejoins: under its old identity with an empty log it
// could vote twice in one term, so it must first leave the configuration.
// Only the leader replaces.
//
// The fresh node must answer as that member first (ErrUnreachable), and
// it comes back as AddMember adds: a non-voter until it has caught up,
// then a voter. If it does not catch up within ctx it stays removed
// (ErrNotCaughtUp): its old data is gone either way, and a cluster without
// it commits with the others.
func (n *Node) Replace(ctx context.Context, id string, ask PeerAsker) error {
	s, ok := n.member(id)
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownMember, id)
	}
	if id == n.self.ID {
		return ErrReplaceLeader
	}
	m := Member{ID: id, Raft: string(s.Address)}
	if st, ok := ask(ctx, m); !ok || st.ID != id {
		return fmt.Errorf("%w: %s at %s (start the fresh node with --join first)", ErrUnreachable, id, s.Address)
	}
	if err := n.RemoveMember(ctx, id, ask); err != nil {
		return err
	}
	servers, voters := n.servers(), 0
	for _, o := range servers {
		if o.Suffrage == raft.Voter {
			voters++
		}
	}
	return n.addLearnerFirst(ctx, m, servers, voters, ask)
}

// AddMember adds a voter with a new id at a Raft address, the way etcd
// adds a learner first (its --strict-reconfig-check): the node runs with
// --join, a certificate of the cluster CA for id, and waits. In order:
//
//  1. the member must answer ask as that member (over the Raft port: with
//     mutual TLS, a handshake as id), else ErrUnreachable;
//  2. with it, a quorum of the voters it makes must answer, else
//     ErrNoQuorum (adding a voter while a member is down must not leave
//     the cluster unable to commit);
//  3. it joins as a non-voter (Raft's AddNonvoter): it takes no part in
//     elections or commits while it receives a snapshot and the log;
//  4. once its applied index reaches the leader's at the time it joined
//     (asked of it with ask), it becomes a voter (AddVoter).
//
// Each change is committed before the next. Nothing past step 2 outlives
// ctx: a member that did not catch up in time, or a change that failed, is
// removed again (ErrNotCaughtUp), so the configuration is as before.
// Adding the member that is there already, as a voter at the same
// address, changes nothing. Only the leader adds.
func (n *Node) AddMember(ctx context.Context, id, raftAddr string, ask PeerAsker) error {
	if !idPattern.MatchString(id) {
		return &BadMemberError{Field: "id", Problem: "must be 1 to 64 letters, digits, '-' or '_'"}
	}
	if err := checkAddr(raftAddr); err != nil {
		return &BadMemberError{Field: "raft", Problem: err.Error()}
	}
	servers := n.servers()
	voters := 0
	for _, s := range servers {
		switch {
		case string(s.ID) == id && string(s.Address) == raftAddr && s.Suffrage == raft.Voter:
			return nil
		case string(s.ID) == id || string(s.Address) == raftAddr:
			return fmt.Errorf("%w: %s at %s", ErrMemberExists, s.ID, s.Address)
		}
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	if len(servers) >= membersMax {
		return ErrClusterFull
	}
	return n.addLearnerFirst(ctx, Member{ID: id, Raft: raftAddr}, servers, voters, ask)
}

// addLearnerFirst is AddMember's steps 1 to 4 for m, not in servers (the
// configuration, with voters voters).
func (n *Node) addLearnerFirst(ctx context.Context, m Member, servers []raft.Server, voters int, ask PeerAsker) error {
	id, raftAddr := m.ID, m.Raft
	n.adding.Store(&m) // the Raft port may dial it, as id, from now on
	defer n.adding.Store(nil)
	if st, ok := ask(ctx, m); !ok || st.ID != id {
		return fmt.Errorf("%w: %s at %s", ErrUnreachable, id, raftAddr)
	}
	if reachable, quorum := n.reachableVoters(ctx, servers, ask)+1, (voters+1)/2+1; reachable < quorum {
		return fmt.Errorf("%w: %d of %d voters would answer, a quorum is %d", ErrNoQuorum, reachable, voters+1, quorum)
	}
	if err := n.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, barrierTimeout).Error(); err != nil {
		n.undoAdd(id)
		return fmt.Errorf("cluster: adding %s as a non-voter: %w", id, err)
	}
	target := n.raft.AppliedIndex()
	n.cfg.Logger.Info("member added as a non-voter; waiting until it catches up", "member", id, "raft", raftAddr, "index", target)
	if err := n.awaitCaughtUp(ctx, m, target, ask); err != nil {
		n.undoAdd(id)
		return fmt.Errorf("%w (%v)", ErrNotCaughtUp, err)
	}
	voter := n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, barrierTimeout)
	if err := awaitCommit(voter, func() { n.raft.Barrier(commitNudge) }, barrierTimeout); err != nil {
		n.undoAdd(id)
		return fmt.Errorf("cluster: making %s a voter: %w", id, err)
	}
	n.cfg.Logger.Info("member added: a voter, caught up with this leader", "member", id, "raft", raftAddr)
	return nil
}

// commitNudge is how long a new voter's configuration entry may wait to
// commit before the leader appends an entry behind it (awaitCommit).
const commitNudge = 200 * time.Millisecond

// awaitCommit waits for f, a configuration change adding a voter, at most
// limit, and calls nudge each commitNudge it waits; nudge appends an entry.
//
// NB: hashicorp/raft (v1.8.0, Raft.appendConfigurationEntry) wakes the
// replicators for a configuration entry before it counts the voters the
// entry adds. A new voter that acknowledges the entry in between is
// counted at index 0 until it acknowledges a later entry, and where its
// vote is needed for a quorum (a member is down) the entry commits only
// once another follows: on an idle cluster, never. Any entry appended
// after the change counts the new voter. The future ends when the entry
// commits, the leadership is lost or Raft shuts down; limit bounds the
// wait for a quorum that stays away without the leader noticing.
func awaitCommit(f raft.Future, nudge func(), limit time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	t := time.NewTicker(commitNudge)
	defer t.Stop()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-t.C:
			nudge()
		case <-deadline.C:
			return fmt.Errorf("the change did not commit within %s", limit)
		}
	}
}

// reachableVoters counts the voters of servers, this node aside, that
// answer ask within peerTimeout, in parallel.
func (n *Node) reachableVoters(ctx context.Context, servers []raft.Server, ask PeerAsker) int {
	var reachable atomic.Int32
	var wg sync.WaitGroup
	for _, s := range servers {
		if s.Suffrage != raft.Voter || string(s.ID) == n.self.ID {
			continue
		}
		m := Member{ID: string(s.ID), Raft: string(s.Address)}
		wg.Go(func() {
			c, cancel := context.WithTimeout(ctx, peerTimeout)
			defer cancel()
			if st, ok := ask(c, m); ok && st.ID == m.ID {
				reachable.Add(1)
			}
		})
	}
	wg.Wait()
	if n.IsMember() {
		reachable.Add(1)
	}
	return int(reachable.Load())
}

// catchUpPoll is how often AddMember asks a non-voter how far it is.
const catchUpPoll = 100 * time.Millisecond

// awaitCaughtUp waits until m's applied index reaches target, within ctx.
func (n *Node) awaitCaughtUp(ctx context.Context, m Member, target uint64, ask PeerAsker) error {
	t := time.NewTicker(catchUpPoll)
	defer t.Stop()
	last := uint64(0)
	for {
		c, cancel := context.WithTimeout(ctx, peerTimeout)
		st, ok := ask(c, m)
		cancel()
		if ok && st.ID == m.ID {
			if st.AppliedIndex >= target {
				return nil
			}
			last = st.AppliedIndex
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("at index %d of %d when the time ran out", last, target)
		case <-t.C:
		}
	}
}

// undoAdd removes a member AddMember added, so that the configuration is
// as before; a failure is logged (the operator removes it by hand).
func (n *Node) undoAdd(id string) {
	if _, ok := n.member(id); !ok {
		return
	}
	if err := n.raft.RemoveServer(raft.ServerID(id), 0, barrierTimeout).Error(); err != nil {
		n.cfg.Logger.Error("undoing an add: the member could not be removed again; remove it with oja admin cluster remove", "member", id, "err", err)
		return
	}
	n.cfg.Logger.Info("add undone: the member was removed again", "member", id)
}

// BadMemberError is an id or address AddMember cannot take.
type BadMemberError struct{ Field, Problem string }

func (e *BadMemberError) Error() string { return "cluster: " + e.Field + ": " + e.Problem }

// RemoveMember removes member id from the configuration; from then on it
// takes no part in elections or commits, its certificate is refused by the
// others, and it serves nothing. The leader may remove itself: it steps
// down once the change commits, and the others elect a leader. Only the
// leader removes.
//
// A removal that would leave fewer than a quorum of the remaining voters
// reachable (asked with ask) is refused: ErrNoQuorum. Removing the member
// that is down is what heals a cluster; removing one that answers while
// another is down would leave it unable to commit.
func (n *Node) RemoveMember(ctx context.Context, id string, ask PeerAsker) error {
	s, ok := n.member(id)
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownMember, id)
	}
	servers := n.servers()
	if len(servers) == 1 {
		return ErrLastMember
	}
	if s.Suffrage == raft.Voter {
		var rest []raft.Server
		for _, o := range servers {
			if o.ID != s.ID {
				rest = append(rest, o)
			}
		}
		voters := 0
		for _, o := range rest {
			if o.Suffrage == raft.Voter {
				voters++
			}
		}
		reachable := n.reachableVoters(ctx, rest, ask)
		if id == n.self.ID { // the leader leaving does not count itself
			reachable--
		}
		if quorum := voters/2 + 1; reachable < quorum {
			return fmt.Errorf("%w: %d of the %d voters left would answer, a quorum is %d", ErrNoQuorum, reachable, voters, quorum)
		}
	}
	if err := n.raft.RemoveServer(s.ID, 0, barrierTimeout).Error(); err != nil {
		return fmt.Errorf("cluster: removing %s: %w", id, err)
	}
	n.cfg.Logger.Info("member removed", "member", id)
	return nil
}
