package cluster

import (
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"
	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/internal/lincheck"
)

// ---- The fault layer --------------------------------------------------------

// faultNet is the test-only fault layer between in-process nodes: every
// node's Raft transport sends through it, and a rule per ordered pair
// (from, to) drops what from sends to to, delays it, or delivers it twice.
// A reply travels back on its request's path, so a one-way cut "from does
// not reach to" is: from's requests to to dropped, and to's requests to
// from delivered with their replies dropped.
type faultNet struct {
	mu    sync.Mutex
	rules map[[2]raft.ServerAddress]faultRule
	rng   *rand.Rand
	// What the layer did, so a scenario can show its fault took effect.
	dropped, duplicated, delayed atomic.Int64
}

type faultRule struct {
	drop      bool          // the request never arrives
	dropReply bool          // it arrives, its reply never does
	delay     time.Duration // each request waits this long, up to twice as long
	dup       float64       // the chance that a request is delivered twice
}

func newFaultNet() *faultNet {
	return &faultNet{rules: map[[2]raft.ServerAddress]faultRule{}, rng: rand.New(rand.NewPCG(1, 2))}
}

func (f *faultNet) set(from, to raft.ServerAddress, r faultRule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules[[2]raft.ServerAddress{from, to}] = r
}

// cut stops a reaching b (one way).
func (f *faultNet) cut(a, b raft.ServerAddress) {
	f.set(a, b, faultRule{drop: true})
	f.set(b, a, faultRule{dropReply: true})
}

// partition cuts a and b both ways.
func (f *faultNet) partition(a, b raft.ServerAddress) {
	f.set(a, b, faultRule{drop: true})
	f.set(b, a, faultRule{drop: true})
}

func (f *faultNet) heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.rules)
}

// plan is what happens to one request from → to.
func (f *faultNet) plan(from, to raft.ServerAddress) (r faultRule, wait time.Duration, twice bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r = f.rules[[2]raft.ServerAddress{from, to}]
	if r.delay > 0 {
		wait = r.delay + time.Duration(f.rng.Int64N(int64(r.delay)))
	}
	return r, wait, r.dup > 0 && f.rng.Float64() < r.dup
}

var errFaultDropped = fmt.Errorf("fault layer: dropped")

// faultTransport is a node's transport through the fault layer.
type faultTransport struct {
	*raft.InmemTransport
	net  *faultNet
	self raft.ServerAddress
}

// send runs one request through the rule of self → target; call delivers
// it (into resp when fresh is false, else into a throwaway reply).
func (t *faultTransport) send(target raft.ServerAddress, call func(fresh bool) error) error {
	r, wait, twice := t.net.plan(t.self, target)
	if wait > 0 {
		t.net.delayed.Add(1)
		time.Sleep(wait)
	}
	if r.drop {
		t.net.dropped.Add(1)
		return errFaultDropped
	}
	if twice {
		t.net.duplicated.Add(1)
		_ = call(true)
	}
	err := call(false)
	if r.dropReply {
		t.net.dropped.Add(1)
		return errFaultDropped
	}
	return err
}

// AppendEntriesPipeline is refused, so every AppendEntries passes send.
func (t *faultTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

func (t *faultTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	return t.send(target, func(fresh bool) error {
		if fresh {
			return t.InmemTransport.AppendEntries(id, target, args, &raft.AppendEntriesResponse{})
		}
		return t.InmemTransport.AppendEntries(id, target, args, resp)
	})
}

func (t *faultTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return t.send(target, func(fresh bool) error {
		if fresh {
			return t.InmemTransport.RequestVote(id, target, args, &raft.RequestVoteResponse{})
		}
		return t.InmemTransport.RequestVote(id, target, args, resp)
	})
}

func (t *faultTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.send(target, func(fresh bool) error {
		if fresh {
			return t.InmemTransport.RequestPreVote(id, target, args, &raft.RequestPreVoteResponse{})
		}
		return t.InmemTransport.RequestPreVote(id, target, args, resp)
	})
}

// InstallSnapshot is never duplicated (its data is a stream read once).
func (t *faultTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	return t.send(target, func(fresh bool) error {
		if fresh {
			return nil
		}
		return t.InmemTransport.InstallSnapshot(id, target, args, resp, data)
	})
}

func (t *faultTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return t.send(target, func(fresh bool) error {
		if fresh {
			return nil
		}
		return t.InmemTransport.TimeoutNow(id, target, args, resp)
	})
}

// slowFS is a node's disk whose syncs take delay (a slow or failing disk:
// every Raft write waits for its fsync).
type slowFS struct {
	vfs.FS
	delay  atomic.Int64 // nanoseconds
	slowed atomic.Int64 // syncs delayed
}

type slowFile struct {
	vfs.File
	fs *slowFS
}

func (f *slowFS) wrap(file vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &slowFile{File: file, fs: f}, nil
}

func (f *slowFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return f.wrap(f.FS.Create(name, c))
}

func (f *slowFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return f.wrap(f.FS.OpenReadWrite(name, c, opts...))
}

func (f *slowFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return f.wrap(f.FS.ReuseForWrite(oldname, newname, c))
}

func (f *slowFile) wait() {
	if d := f.fs.delay.Load(); d > 0 {
		f.fs.slowed.Add(1)
		time.Sleep(time.Duration(d))
	}
}

func (f *slowFile) Sync() error     { f.wait(); return f.File.Sync() }
func (f *slowFile) SyncData() error { f.wait(); return f.File.SyncData() }
func (f *slowFile) SyncTo(n int64) (bool, error) {
	f.wait()
	return f.File.SyncTo(n)
}

// ---- Quote lifecycles under faults -----------------------------------------

// market is what the workload trades with: a client and a pool deep enough
// for every quote.
type market struct {
	client engine.ClientID
	pair   engine.Pair
}

func setUpMarket(t *testing.T, c *testCluster) market {
	t.Helper()
	leader := c.leader()
	sys := leader.node.System()
	cl := sys.Admin(&actors.CreateClient{Name: "desk"})
	if err := cl.Failure(); err != nil {
		t.Fatal(err)
	}
	pair := engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT}
	rate, _ := engine.RateFromDecimal(decimal.RequireFromString("0.0006"))
	pool := sys.Admin(&actors.CreatePool{Mode: engine.ModeSandbox, Name: "deep", Pair: pair, Rate: rate})
	if err := pool.Failure(); err != nil {
		t.Fatal(err)
	}
	liquidity, _ := engine.AmountFromDecimal(decimal.RequireFromString("100000000"), engine.CurrencyUSDT)
	if err := sys.ChangePool(&actors.PoolCommand{Pool: pool.Pool.ID, Deposit: liquidity}).Failure(); err != nil {
		t.Fatal(err)
	}
	return market{client: cl.Client.ID, pair: pair}
}

// lifecycles drives quote lifecycles (create with an Idempotency-Key,
// then gets and cancels) through whichever node serves, as the gateway
// would (a read only after VerifyLeader), from workers until stop closes,
// and returns the history.
func lifecycles(t *testing.T, c *testCluster, m market, workers int, stop <-chan struct{}) (history []porcupine.Operation, created []engine.QuoteID) {
	var mu sync.Mutex
	record := func(worker int, in lincheck.Input, call int64, out lincheck.Output) {
		ret := time.Now().UnixNano()
		if out.Unknown && in.Op != "get" {
			ret = lincheck.Unanswered
		}
		mu.Lock()
		history = append(history, porcupine.Operation{ClientId: worker, Input: in, Call: call, Output: out, Return: ret})
		mu.Unlock()
	}
	serving := func(rng *rand.Rand) (*testNode, *actors.System) {
		for range 400 {
			n := c.nodes[rng.IntN(len(c.nodes))]
			if sys := n.system(); sys != nil {
				return n, sys
			}
			select {
			case <-stop:
				return nil, nil
			case <-time.After(5 * time.Millisecond):
			}
		}
		return nil, nil
	}
	amount, _ := engine.AmountFromDecimal(decimal.RequireFromString("16000"), engine.CurrencyNGN)
	rate, _ := engine.RateFromDecimal(decimal.RequireFromString("0.0006"))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				idem := fmt.Sprintf("w%d-%d", w, i)
				var id engine.QuoteID
				for attempt := 0; id.IsZero() && attempt < 100; attempt++ {
					n, sys := serving(rng)
					if sys == nil {
						return
					}
					call := time.Now().UnixNano()
					r := sys.CreateQuote(&actors.CreateQuote{Client: m.client, Mode: engine.ModeSandbox, Pair: m.pair,
						Direction: engine.DirectionSource, Amount: amount, Rate: rate, Chain: engine.ChainTron,
						IdempotencyKey: engine.MakeIdemKey(idem), RequestHash: sha256.Sum256([]byte(idem))})
					in := lincheck.Input{Key: idem, Op: "create"}
					switch {
					case r.Err != nil || n.node.VerifyLeader() != nil:
						record(w, in, call, lincheck.Output{Unknown: true})
					case r.Result != engine.ResultOK:
						t.Errorf("create %s: %s", idem, r.Result)
						return
					default:
						id = r.Quote.ID
						record(w, in, call, lincheck.Output{Status: "pending"})
						mu.Lock()
						created = append(created, id)
						mu.Unlock()
					}
				}
				for j := 0; j < 4 && !id.IsZero(); j++ {
					n, sys := serving(rng)
					if sys == nil {
						return
					}
					call := time.Now().UnixNano()
					if rng.IntN(3) == 0 {
						r := sys.TransitionQuote(m.client, engine.ModeSandbox, id, &actors.TransitionQuote{Operation: actors.OperationCancel})
						// As the gateway answers a write on a leader:
						// only once a heartbeat round after the answer
						// confirms the leadership (else 503).
						out := lincheck.Output{Unknown: r.Err != nil || n.node.VerifyLeader() != nil}
						switch {
						case out.Unknown:
						case r.Result == engine.ResultOK:
							out.Status = "ok"
						case r.Result == engine.ResultQuoteNotFound:
							out.Status = "not found" // an acknowledged quote: the check fails
						default:
							out.Status = "refused"
						}
						record(w, lincheck.Input{Key: idem, Op: "cancel"}, call, out)
						continue
					}
					if n.node.VerifyLeader() != nil {
						continue // a read that was not answered says nothing
					}
					out := lincheck.Output{Status: "not found"}
					if q, ok := sys.Quote(m.client, engine.ModeSandbox, id); ok {
						out.Status = q.Status.String()
					}
					record(w, lincheck.Input{Key: idem, Op: "get"}, call, out)
				}
			}
		}()
	}
	wg.Wait()
	return history, created
}

// faultScenario runs the workload on a new three-node cluster, applies
// fault once it has run a while, heals, lets it run on, then requires a
// linearizable history, replicas that converge to one {seq, hash}, every
// acknowledged quote on every replica, and ledgers that sum to zero.
func faultScenario(t *testing.T, fault func(c *testCluster, leader *testNode, followers []*testNode)) {
	c := (&testCluster{t: t, file: &File{}, faults: newFaultNet()}).start(func(n *testNode) { n.disk = &slowFS{FS: n.fs} })
	m := setUpMarket(t, c)
	stop := make(chan struct{})
	type result struct {
		history []porcupine.Operation
		created []engine.QuoteID
	}
	done := make(chan result)
	go func() {
		h, cr := lifecycles(t, c, m, 6, stop)
		done <- result{h, cr}
	}()
	time.Sleep(300 * time.Millisecond)
	leader := c.leader()
	var followers []*testNode
	for _, n := range c.nodes {
		if n != leader {
			followers = append(followers, n)
		}
	}
	began := time.Now()
	fault(c, leader, followers)
	c.faults.heal()
	for _, n := range c.nodes {
		n.disk.delay.Store(0)
	}
	faulted := time.Since(began)
	c.leader() // service is back
	t.Logf("fault %v, service back after %v more", faulted.Round(time.Millisecond), (time.Since(began) - faulted).Round(time.Millisecond))
	time.Sleep(300 * time.Millisecond)
	close(stop)
	r := <-done

	res, report := lincheck.Check(r.history, 30*time.Second, filepath.Join(t.TempDir(), "history.html"))
	t.Logf("%d operations over %d quotes (%d acknowledged): %s", len(r.history), len(lincheck.Model.Partition(r.history)), len(r.created), res)
	if res != porcupine.Ok {
		t.Fatalf("the history is not linearizable (%s):\n%s", res, report)
	}
	if len(r.created) < 20 {
		t.Fatalf("only %d quotes acknowledged: the workload barely ran", len(r.created))
	}
	seq, hash := c.converge()
	t.Logf("replicas at {%d, %s}", seq, hash[:16])
	for _, n := range c.nodes {
		if err := n.node.fsm.read(func(s *engine.State, _ uint64) error {
			for _, id := range r.created {
				if s.Quotes.Get(id) == nil {
					return fmt.Errorf("acknowledged quote %s is missing", id)
				}
			}
			for _, mode := range []engine.Mode{engine.ModeSandbox, engine.ModeLive} {
				if rep := s.LedgerCheck(mode); !rep.OK {
					return fmt.Errorf("the %s ledger: %v", mode, rep.Problems)
				}
			}
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", n.id, err)
		}
	}
}

// faultWindow is how long each fault lasts: several election timeouts.
const faultWindow = 1200 * time.Millisecond

// TestFaults drives quote lifecycles through a three-node cluster while
// the fault layer does what kill -9 cannot (Jepsen's bank test is the
// model: a history checked for linearizability, then every replica's
// state and ledger).
func TestFaults(t *testing.T) {
	scenarios := []struct {
		name  string
		fault func(c *testCluster, leader *testNode, followers []*testNode)
	}{
		{"leader partitioned from both followers", func(c *testCluster, l *testNode, f []*testNode) {
			c.faults.partition(l.addr, f[0].addr)
			c.faults.partition(l.addr, f[1].addr)
			began := time.Now()
			nl := c.leader(l) // the majority elects another and serves
			c.t.Logf("%s leads %v into the partition of %s", nl.id, time.Since(began).Round(time.Millisecond), l.id)
			time.Sleep(faultWindow)
		}},
		{"one-way partitions", func(c *testCluster, l *testNode, f []*testNode) {
			// The leader's messages stop reaching the followers (theirs
			// still reach it): they elect another.
			c.faults.cut(l.addr, f[0].addr)
			c.faults.cut(l.addr, f[1].addr)
			nl := c.leader(l)
			time.Sleep(faultWindow)
			c.faults.heal()
			// Then a follower stops reaching the new leader: the leader
			// and the other follower go on committing.
			for _, n := range c.nodes {
				if n != nl {
					c.faults.cut(n.addr, nl.addr)
					break
				}
			}
			time.Sleep(faultWindow)
		}},
		{"flapping link, delays and duplicates", func(c *testCluster, l *testNode, f []*testNode) {
			rng := rand.New(rand.NewPCG(3, 4))
			for end := time.Now().Add(2 * faultWindow); time.Now().Before(end); {
				c.faults.heal()
				for _, a := range c.nodes {
					for _, b := range c.nodes {
						if a != b {
							c.faults.set(a.addr, b.addr, faultRule{delay: 5 * time.Millisecond, dup: 0.2})
						}
					}
				}
				if rng.IntN(2) == 0 {
					c.faults.partition(l.addr, f[0].addr)
				}
				time.Sleep(time.Duration(50+rng.IntN(200)) * time.Millisecond)
			}
			if c.faults.dropped.Load() == 0 || c.faults.duplicated.Load() == 0 || c.faults.delayed.Load() == 0 {
				c.t.Fatalf("the layer dropped %d, duplicated %d, delayed %d requests: the fault did not happen",
					c.faults.dropped.Load(), c.faults.duplicated.Load(), c.faults.delayed.Load())
			}
		}},
		{"slow disk on the leader", func(c *testCluster, l *testNode, _ []*testNode) {
			l.disk.delay.Store(int64(80 * time.Millisecond))
			time.Sleep(2 * faultWindow)
			if l.disk.slowed.Load() == 0 {
				c.t.Fatal("no sync on the leader's disk was slowed")
			}
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { faultScenario(t, sc.fault) })
	}
}

// TestFaultLayer: the layer does what it says — a dropped request never
// arrives, a dropped reply's request does, a duplicated one arrives twice.
func TestFaultLayer(t *testing.T) {
	net := newFaultNet()
	_, a := raft.NewInmemTransport("a")
	_, b := raft.NewInmemTransport("b")
	a.Connect("b", b)
	fa := &faultTransport{InmemTransport: a, net: net, self: "a"}
	var got atomic.Int32
	go func() {
		for rpc := range b.Consumer() {
			got.Add(1)
			rpc.Respond(&raft.RequestVoteResponse{Granted: true}, nil)
		}
	}()
	vote := func() error {
		return fa.RequestVote("b", "b", &raft.RequestVoteRequest{}, &raft.RequestVoteResponse{})
	}
	net.set("a", "b", faultRule{drop: true})
	if err := vote(); err == nil || got.Load() != 0 {
		t.Fatalf("dropped: %v, %d arrived", err, got.Load())
	}
	net.set("a", "b", faultRule{dropReply: true})
	if err := vote(); err == nil || got.Load() != 1 {
		t.Fatalf("reply dropped: %v, %d arrived", err, got.Load())
	}
	net.set("a", "b", faultRule{dup: 1})
	if err := vote(); err != nil || got.Load() != 3 {
		t.Fatalf("duplicated: %v, %d arrived in all", err, got.Load())
	}
	_ = b.Close()
}
