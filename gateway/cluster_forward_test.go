package gateway_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oja-exchange/oja/actors/cluster"
	"github.com/oja-exchange/oja/gateway"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// followerNode is a cluster node that follows whichever member leader
// holds (set once both servers listen). Its peers reach it on peers, a
// loopback listener; it dials a peer at the member's Raft address.
type followerNode struct {
	self   cluster.Member
	leader atomic.Pointer[cluster.Member]
	peers  net.Listener
}

func (n *followerNode) AddMember(context.Context, string, string, cluster.PeerAsker) error {
	return cluster.ErrMemberExists
}
func (n *followerNode) RemoveMember(context.Context, string, cluster.PeerAsker) error {
	return cluster.ErrUnknownMember
}
func (n *followerNode) IsMember() bool             { return true }
func (n *followerNode) PeerListener() net.Listener { return n.peers }
func (n *followerNode) DialPeer(m cluster.Member, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", m.Raft, timeout)
}

func (n *followerNode) Self() cluster.Member { return n.self }
func (n *followerNode) Leader() (cluster.Member, bool) {
	if l := n.leader.Load(); l != nil {
		return *l, true
	}
	return cluster.Member{}, false
}
func (n *followerNode) Status(context.Context, cluster.PeerAsker) cluster.Status {
	return cluster.Status{}
}
func (n *followerNode) LocalStatus() cluster.NodeStatus {
	return cluster.NodeStatus{ID: n.self.ID, State: "follower"}
}
func (n *followerNode) StateHash() (uint64, string, error) { return 0, "", nil }
func (n *followerNode) VerifyLeader() error                { return nil }
func (n *followerNode) Replace(context.Context, string, cluster.PeerAsker) error {
	return cluster.ErrUnknownMember
}

func startFollower(t *testing.T, id string) (*gateway.Server, *followerNode) {
	t.Helper()
	return startFollowerConfig(t, id, gateway.Config{})
}

// startFollowerConfig is startFollower with cfg's settings (its listeners,
// token and cluster are set here).
func startFollowerConfig(t *testing.T, id string, cfg gateway.Config) (*gateway.Server, *followerNode) {
	t.Helper()
	peers, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	node := &followerNode{self: cluster.Member{ID: id, Raft: peers.Addr().String()}, peers: peers}
	cfg.Listen, cfg.AdminListen, cfg.AdminToken, cfg.Cluster = "127.0.0.1:0", "127.0.0.1:0", gatewaytest.AdminToken, node
	srv := gateway.New(cfg)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return srv, node
}

// TestForwardedByFromAClient: an Oja-Forwarded-By header sent by a client
// (any value, a node's id or a forged mark) is removed by the follower,
// which forwards the request to the leader as any other; a mark a node
// made is honoured, so two nodes that each think the other leads answer
// 503 at once instead of bouncing the request between them.
func TestForwardedByFromAClient(t *testing.T) {
	leader := gatewaytest.Start(t, gatewaytest.Options{})
	follower, node := startFollower(t, "n2")
	// The leader is a single server: its admin listener stands for its
	// Raft port (only admin routes are asked here).
	node.leader.Store(&cluster.Member{ID: "n1", Raft: strings.TrimPrefix(leader.Admin, "http://")})

	for _, mark := range []string{"", "n1", "n3", "n2 " + strings.Repeat("00", 32), "n1 not-hex"} {
		req, err := http.NewRequest(http.MethodGet, "http://"+follower.AdminAddr()+"/admin/v1/pools", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+gatewaytest.AdminToken)
		if mark != "" {
			req.Header.Set("Oja-Forwarded-By", mark)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("Oja-Forwarded-By %q from a client: the follower answered %d, want the leader's 200", mark, resp.StatusCode)
		}
	}

	// Two followers, each taking the other for the leader.
	a, aNode := startFollower(t, "na")
	b, bNode := startFollower(t, "nb")
	aNode.leader.Store(&bNode.self)
	bNode.leader.Store(&aNode.self)
	start := time.Now()
	req, err := http.NewRequest(http.MethodGet, "http://"+a.AdminAddr()+"/admin/v1/pools", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+gatewaytest.AdminToken)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("two nodes that each think the other leads: %v (bounced?)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("two nodes that each think the other leads answered %d, want 503", resp.StatusCode)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the 503 took %v: the request bounced", d)
	}
	// One hop: a forwarded it, b answered it (and nothing else).
	if hops := forwardedCount(t, a) + forwardedCount(t, b); hops != 2 {
		t.Errorf("the request passed through the two nodes %d times, want 2 (a forwarding, b refusing): it bounced", hops)
	}
}

// forwardedCount is how many admin requests srv handled as forwarded
// (its oja_http_requests_total{route="forwarded"}).
func forwardedCount(t *testing.T, srv *gateway.Server) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+srv.AdminAddr()+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+gatewaytest.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics answered %d", resp.StatusCode)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "oja_http_requests_total{") || !strings.Contains(line, `route="forwarded"`) {
			continue
		}
		n, err := strconv.Atoi(line[strings.LastIndexByte(line, ' ')+1:])
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		total += n
	}
	return total
}

// TestRelayEndsOnLeaderChange: a follower relays the leader's rate stream;
// told that another node leads now (a term ended), it ends the stream at
// once, so the client reconnects to whoever serves, instead of hearing a
// deposed leader's silence until relayIdleMax; told of the same leader
// again, it keeps it.
func TestRelayEndsOnLeaderChange(t *testing.T) {
	leader := gatewaytest.Start(t, gatewaytest.Options{SSEHeartbeat: 50 * time.Millisecond})
	follower, node := startFollower(t, "n2")
	n1, s := openRelayed(t, leader, follower, node)
	s.heartbeat("relayed")
	follower.LeaderChanged(n1, true)
	for range len(s.lines) {
		<-s.lines // what came before the notice
	}
	s.heartbeat("told of the same leader")
	follower.LeaderChanged(cluster.Member{ID: "n3", Raft: "127.0.0.1:1"}, true)
	select {
	case <-s.ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the relayed stream did not end within 5 s of the leader change")
	}
}

// TestRelayOutlivesWriteTimeout: a relayed stream lives as long as its
// client reads, past the server's write timeout (which cut every relayed
// stream 15 s after it opened, when the relay wrote through fasthttp's
// body stream writer), like a local one.
func TestRelayOutlivesWriteTimeout(t *testing.T) {
	leader := gatewaytest.Start(t, gatewaytest.Options{SSEHeartbeat: 50 * time.Millisecond})
	const writeTimeout = 300 * time.Millisecond
	follower, node := startFollowerConfig(t, "n2", gateway.Config{WriteTimeout: writeTimeout})
	_, s := openRelayed(t, leader, follower, node)
	for began := time.Now(); time.Since(began) < 5*writeTimeout; {
		s.heartbeat("relayed, " + time.Since(began).Round(time.Millisecond).String() + " after it opened")
	}
}

// relayedStream is a rate stream a follower relays, read line by line.
type relayedStream struct {
	t     *testing.T
	lines chan string
	ended chan error
}

// openRelayed makes leader the leader follower's node knows and opens a
// rate stream on follower, which relays it. (The leader is a single
// server: its public listener stands for its Raft port.)
func openRelayed(t *testing.T, leader *gatewaytest.Server, follower *gateway.Server, node *followerNode) (cluster.Member, *relayedStream) {
	t.Helper()
	p := leader.NewPartner(t, "relayed")
	n1 := cluster.Member{ID: "n1", Raft: strings.TrimPrefix(leader.URL, "http://")}
	node.leader.Store(&n1)
	req, err := http.NewRequest(http.MethodGet, "http://"+follower.Addr()+streamPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.SandboxKey)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := streamHTTP(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("relayed stream: %d", resp.StatusCode)
	}
	s := &relayedStream{t: t, lines: make(chan string, 1024), ended: make(chan error, 1)}
	go func() {
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				s.ended <- err
				return
			}
			s.lines <- line
		}
	}()
	return n1, s
}

// heartbeat waits for the next heartbeat event the leader sends through
// the relay (every 50 ms): the stream is alive.
func (s *relayedStream) heartbeat(what string) {
	s.t.Helper()
	for deadline := time.After(5 * time.Second); ; {
		select {
		case l := <-s.lines:
			if strings.HasPrefix(l, "event: heartbeat") {
				return
			}
		case err := <-s.ended:
			s.t.Fatalf("%s: the stream ended (%v)", what, err)
		case <-deadline:
			s.t.Fatalf("%s: no heartbeat within 5 s", what)
		}
	}
}
