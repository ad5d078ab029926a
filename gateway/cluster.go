package gateway

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors/cluster"
)

// ClusterNode is what the gateway needs of this node's place in a cluster
// (*cluster.Node). With one, a node that does not hold the running system
// (it is not the leader) forwards every request but its own health,
// metrics and cluster routes to the leader, and answers with the leader's
// answer; a rate stream is relayed (cluster_stream.go).
type ClusterNode interface {
	Self() cluster.Member
	Leader() (cluster.Member, bool)
	Status(ctx context.Context, ask cluster.PeerAsker) cluster.Status
	LocalStatus() cluster.NodeStatus
	StateHash() (seq uint64, hash string, err error)
	// VerifyLeader confirms that this node still leads (a heartbeat round
	// answered by a majority), before it answers a read itself.
	VerifyLeader() error
	// Replace removes member id from the Raft configuration and adds it
	// back, for a fresh node started with --join (leader only).
	Replace(ctx context.Context, id string, ask cluster.PeerAsker) error
	// AddMember and RemoveMember change the configuration (leader only).
	// Each asks the members it needs with ask; AddMember waits within ctx
	// for the new member to catch up.
	AddMember(ctx context.Context, id, raft string, ask cluster.PeerAsker) error
	RemoveMember(ctx context.Context, id string, ask cluster.PeerAsker) error
	// IsMember: this node is a voter of the configuration it holds; one
	// that is not (removed, or waiting to be added) serves nothing.
	IsMember() bool
	// DialPeer connects to member m for HTTP (mutual TLS when the cluster
	// has it); PeerListener is where peers' connections to this node
	// arrive (nil: none), served like the public and admin listeners.
	DialPeer(m cluster.Member, timeout time.Duration) (net.Conn, error)
	PeerListener() net.Listener
}

const (
	// forwardedHeader marks a request one node forwarded to the leader
	// (forwardMark: the forwarding node's id, signed): a node never
	// forwards such a request again (two nodes that each think the other
	// leads must not bounce it). A mark that does not verify is removed
	// before the request is routed, so a client cannot send one.
	forwardedHeader = "Oja-Forwarded-By"
	// forwardTimeout bounds a forwarded request: the leader's own bound on
	// a write (10 s, fsyncs included) plus the hop.
	forwardTimeout = 12 * time.Second
	// clusterFieldBytesMax bounds a member's id and address in a request.
	clusterFieldBytesMax = 256
	// clusterStatusTimeout bounds GET /admin/v1/cluster's questions to peers.
	clusterStatusTimeout = 2 * time.Second
)

var errNotMember = &apiError{status: fasthttp.StatusServiceUnavailable, code: codeUnavailable,
	message: "this node is not a member of the cluster's configuration (removed, or started with --join and not added yet): use another node"}

var errNoLeader = &apiError{status: fasthttp.StatusServiceUnavailable, code: codeUnavailable,
	message: "no cluster leader is reachable (an election is under way or a majority of nodes is down); retry later"}

// localRoutes are answered by every node itself, leader or not.
var localRoutes = map[string]bool{
	"/livez": true, "/healthz": true, "/readyz": true, "/metrics": true,
	adminBase + "/cluster": true, adminBase + "/cluster/node": true, adminBase + "/state": true,
	adminBase + "/backup": true,
}

// consoleLocal: the console's files, and its live rates, which a follower
// refuses at once (it holds no session, they live on the leader, and a
// forwarded stream would be held whole until the forward's timeout); the
// pages are forwarded like the admin API.
func consoleLocal(path []byte) bool {
	return bytes.HasPrefix(path, []byte(consoleBase+"/static/")) || string(path) == consoleBase+"/rates"
}

// forwarder keeps one connection pool per peer (id and Raft address),
// each connection opened through the cluster's Raft port (DialPeer).
type forwarder struct {
	mu      sync.Mutex
	clients map[cluster.Member]*fasthttp.HostClient
}

func (f *forwarder) client(node ClusterNode, m cluster.Member) *fasthttp.HostClient {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clients[m]
	if !ok {
		if f.clients == nil {
			f.clients = make(map[cluster.Member]*fasthttp.HostClient)
		}
		c = &fasthttp.HostClient{
			Addr: m.ID, Name: "oja-forward", NoDefaultUserAgentHeader: true,
			ReadTimeout: forwardTimeout, WriteTimeout: forwardTimeout,
			MaxConns: connectionsMax, MaxIdleConnDuration: idleTimeout,
			DisableHeaderNamesNormalizing: false, DisablePathNormalizing: true,
			// NB: DialTimeout, not Dial, so that a request's timeout
			// bounds the dial and TLS handshake too (a paused peer
			// accepts the TCP connection and never answers).
			DialTimeout: func(_ string, timeout time.Duration) (net.Conn, error) { return node.DialPeer(m, timeout) },
		}
		f.clients[m] = c
	}
	return c
}

// closeIdle closes the idle connections to every peer this node has
// forwarded to (on Shutdown). Each pool's cleaner goroutine notices on its
// next wake-up, within idleTimeout.
func (f *forwarder) closeIdle() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.clients {
		c.CloseIdleConnections()
	}
}

// clustered wraps a listener's router: on a node that is not serving as
// leader, a request for any route but the local ones is forwarded.
func (s *Server) clustered(admin bool, next fasthttp.RequestHandler) fasthttp.RequestHandler {
	if s.cfg.Cluster == nil {
		return next
	}
	return func(ctx *fasthttp.RequestCtx) {
		if mark := ctx.Request.Header.Peek(forwardedHeader); len(mark) > 0 && !s.validForwardMark(mark, ctx.Request.Header.Peek("X-Request-Id")) {
			ctx.Request.Header.Del(forwardedHeader)
		}
		if localRoutes[string(ctx.Path())] || admin && consoleLocal(ctx.Path()) {
			next(ctx)
			return
		}
		// A node that is no member serves partners nothing; its admin
		// listener still forwards, so that an operator can ask the node
		// just started with --join to have itself added or replaced.
		_, serving := s.served()
		if !admin && !serving && !s.cfg.Cluster.IsMember() {
			s.writeErrorByPath(ctx, errNotMember)
			return
		}
		if serving {
			// A read is answered here only once this node is known to
			// still lead: a paused or partitioned leader that has not
			// noticed its successor must not serve what it holds.
			if ctx.IsGet() && string(ctx.Path()) != ratesStreamPath {
				if err := s.cfg.Cluster.VerifyLeader(); err != nil {
					s.writeErrorByPath(ctx, errNoLeader)
					return
				}
			}
			next(ctx)
			// A write's answer is checked after it: one that committed is
			// fenced by its term already, but a refusal (404, 409…), an
			// idempotent replay or a repeated cancel is decided from what
			// this node holds, which a deposed leader holds stale. A
			// majority answering a heartbeat after the answer was decided
			// proves no later term had begun: the answer stands.
			// Otherwise it becomes 503 (the outcome unknown; the client
			// retries with its Idempotency-Key, as after any 503). An
			// answer its handler marked fenced (markFenced: it follows
			// this request's own commit) skips the round.
			if !ctx.IsGet() && !ctx.IsHead() && ctx.Response.StatusCode() < 500 && ctx.UserValue(fencedValue{}) == nil {
				if err := s.cfg.Cluster.VerifyLeader(); err != nil {
					id := append([]byte(nil), ctx.Response.Header.Peek("X-Request-Id")...)
					ctx.Response.Reset()
					ctx.Response.Header.SetBytesV("X-Request-Id", id)
					s.writeErrorByPath(ctx, errNoLeader)
				}
			}
			return
		}
		s.forward(ctx)
	}
}

// fencedValue is the user-value key a handler sets (markFenced) when its
// answer follows the request's own durable append: in a cluster that
// append committed in this leader's term, which fences the answer.
type fencedValue struct{}

func markFenced(ctx *fasthttp.RequestCtx, durable bool) {
	if durable {
		ctx.SetUserValue(fencedValue{}, true)
	}
}

// forward sends the request to the leader and answers with its answer: the
// same status, headers (the request id included: the leader keeps ours)
// and body. Without a reachable leader it answers 503 UNAVAILABLE with
// Retry-After; a client retries with the same Idempotency-Key.
func (s *Server) forward(ctx *fasthttp.RequestCtx) {
	ctx.SetUserValue(router.MatchedRoutePathParam, "forwarded")
	leader, ok := s.otherLeader()
	if !ok || len(ctx.Request.Header.Peek(forwardedHeader)) > 0 {
		s.writeErrorByPath(ctx, errNoLeader)
		return
	}
	if string(ctx.Path()) == ratesStreamPath {
		s.relayStream(ctx, leader)
		return
	}
	id := append([]byte(nil), ctx.Response.Header.Peek("X-Request-Id")...)
	req := &ctx.Request
	req.Header.SetBytesV("X-Request-Id", id)
	req.Header.Set(forwardedHeader, s.forwardMark(s.cfg.Cluster.Self().ID, id))
	req.Header.Del("Connection")
	if err := s.fwd.client(s.cfg.Cluster, leader).DoTimeout(req, &ctx.Response, forwardTimeout); err != nil {
		s.cfg.Logger.Warn("forwarding to the leader failed", "leader", leader.ID, "raft", leader.Raft, "err", err)
		ctx.Response.Reset()
		ctx.Response.Header.SetBytesV("X-Request-Id", id)
		s.writeErrorByPath(ctx, errNoLeader)
		return
	}
	ctx.Response.Header.ResetConnectionClose()
}

// clusterReady is /readyz on a node that does not lead: ready while it
// knows a leader to forward to.
func (s *Server) clusterReady() bool {
	if s.cfg.Cluster == nil || !s.cfg.Cluster.IsMember() {
		return false
	}
	_, ok := s.otherLeader()
	return ok
}

// otherLeader is the cluster's leader when one is known and it is not this
// node (a node that leads but serves no term yet is still starting).
// forwardMark is forwardedHeader's value on a request this node forwards:
// "<node id> <hex HMAC-SHA256>", the MAC over the node id and the request
// id under a key derived from the admin token, which every node of a
// cluster holds (serve refuses a cluster without one: forwarded admin
// calls are authorized by it). The header never reaches a client: the
// leader does not echo request headers.
func (s *Server) forwardMark(node string, requestID []byte) string {
	return node + " " + hex.EncodeToString(s.forwardMAC(node, requestID))
}

// validForwardMark reports whether mark is one a node of this cluster
// made for this request.
func (s *Server) validForwardMark(mark, requestID []byte) bool {
	node, sum, ok := strings.Cut(string(mark), " ")
	if !ok || s.cfg.AdminToken == "" {
		return false
	}
	got, err := hex.DecodeString(sum)
	return err == nil && hmac.Equal(got, s.forwardMAC(node, requestID))
}

func (s *Server) forwardMAC(node string, requestID []byte) []byte {
	key := hmac.New(sha256.New, []byte(s.cfg.AdminToken))
	key.Write([]byte("oja forwarded-by v1"))
	mac := hmac.New(sha256.New, key.Sum(nil))
	mac.Write([]byte(node))
	mac.Write([]byte{0})
	mac.Write(requestID)
	return mac.Sum(nil)
}

func (s *Server) otherLeader() (cluster.Member, bool) {
	leader, ok := s.cfg.Cluster.Leader()
	return leader, ok && leader.ID != s.cfg.Cluster.Self().ID
}

var errNotClustered = &apiError{status: fasthttp.StatusNotFound, code: codeNotFound,
	message: "this server is not a cluster node (it was started without --cluster)"}

func (s *Server) clusterStatus(ctx *fasthttp.RequestCtx) {
	c, cancel := context.WithTimeout(context.Background(), clusterStatusTimeout)
	defer cancel()
	s.writeJSONValue(ctx, s.cfg.Cluster.Status(c, s.askPeer))
}

// askPeer asks member m for its own entry: GET /admin/v1/cluster/node
// over the Raft port (clusterNode), with this node's admin token (every
// node shares it), within ctx.
func (s *Server) askPeer(ctx context.Context, m cluster.Member) (cluster.NodeStatus, bool) {
	timeout := clusterStatusTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if timeout <= 0 {
		return cluster.NodeStatus{}, false
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + m.ID + adminBase + "/cluster/node")
	req.Header.Set("Authorization", "Bearer "+s.cfg.AdminToken)
	if err := s.fwd.client(s.cfg.Cluster, m).DoTimeout(req, resp, timeout); err != nil || resp.StatusCode() != fasthttp.StatusOK {
		return cluster.NodeStatus{}, false
	}
	var got cluster.NodeStatus
	if err := json.Unmarshal(resp.Body(), &got); err != nil {
		return cluster.NodeStatus{}, false
	}
	return got, true
}

// clusterReplace is POST /admin/v1/cluster/nodes/{nodeId}/replace, served
// by the leader (a follower forwards it like any admin write).
func (s *Server) clusterReplace(ctx *fasthttp.RequestCtx) {
	id, _ := ctx.UserValue("nodeId").(string)
	c, cancel := context.WithTimeout(context.Background(), membershipTimeoutDefault)
	defer cancel()
	s.clusterChanged(ctx, id, s.cfg.Cluster.Replace(c, id, s.askPeer))
}

// Bounds of a membership change: how long an add waits for the new member
// to catch up (timeoutSeconds), by default and at most.
const (
	membershipTimeoutDefault = 60 * time.Second
	membershipTimeoutMax     = 600 * time.Second
)

// clusterAdd is POST /admin/v1/cluster/nodes {"id","raft","timeoutSeconds"?}:
// a new voter (the node runs with --join and waits), added the safe way
// (cluster.Node.AddMember: reachable as that member, a quorum left, a
// non-voter until it catches up), served by the leader.
func (s *Server) clusterAdd(ctx *fasthttp.RequestCtx) {
	o, ok := s.bodyObject(ctx)
	if !ok {
		return
	}
	id, _ := o.str("id", true, clusterFieldBytesMax)
	addr, _ := o.str("raft", true, clusterFieldBytesMax)
	timeout := membershipTimeoutDefault
	if secs, ok := o.integer("timeoutSeconds", false, 1, int64(membershipTimeoutMax/time.Second)); ok {
		timeout = time.Duration(secs) * time.Second
	}
	if e := o.finish(); e != nil {
		s.writeError(ctx, e)
		return
	}
	c, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s.clusterChanged(ctx, id, s.cfg.Cluster.AddMember(c, id, addr, s.askPeer))
}

// clusterChanged answers a membership change: the cluster's status once
// it is done, or what stopped it.
func (s *Server) clusterChanged(ctx *fasthttp.RequestCtx, id string, err error) {
	var bad *cluster.BadMemberError
	switch {
	case err == nil:
		// The change committed (Raft's future answered): the answer is
		// fenced by that commit, even from a leader that removed itself
		// and leads no more (its leadership checked again would refuse it).
		markFenced(ctx, true)
		s.clusterStatus(ctx)
	case errors.As(err, &bad):
		s.writeError(ctx, fieldError(bad.Field, bad.Problem))
	case errors.Is(err, cluster.ErrReplaceLeader), errors.Is(err, cluster.ErrMemberExists),
		errors.Is(err, cluster.ErrClusterFull), errors.Is(err, cluster.ErrLastMember),
		errors.Is(err, cluster.ErrUnreachable), errors.Is(err, cluster.ErrNoQuorum), errors.Is(err, cluster.ErrNotCaughtUp):
		s.writeError(ctx, &apiError{status: fasthttp.StatusConflict, code: "CONFLICT", message: err.Error()})
	case errors.Is(err, cluster.ErrUnknownMember):
		s.writeError(ctx, &apiError{status: fasthttp.StatusNotFound, code: codeNotFound, message: err.Error()})
	default:
		s.cfg.Logger.Error("changing the cluster's membership", "member", id, "err", err)
		s.writeError(ctx, errNoLeader)
	}
}

func (s *Server) clusterNode(ctx *fasthttp.RequestCtx) {
	s.writeJSONValue(ctx, s.cfg.Cluster.LocalStatus())
}

func (s *Server) clusterState(ctx *fasthttp.RequestCtx) {
	seq, hash, err := s.cfg.Cluster.StateHash()
	if err != nil {
		s.cfg.Logger.Error("state hash", "err", err)
		s.writeError(ctx, errInternal)
		return
	}
	s.writeJSON(ctx, fasthttp.StatusOK, []byte(`{"seq":`+strconv.FormatUint(seq, 10)+`,"hash":"`+hash+`"}`))
}

func (s *Server) writeJSONValue(ctx *fasthttp.RequestCtx, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.writeError(ctx, errInternal)
		return
	}
	s.writeJSON(ctx, fasthttp.StatusOK, b)
}

// clusterOnly is h on a cluster's node; on a single node every cluster
// route is refused with errNotClustered.
func (s *Server) clusterOnly(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if s.cfg.Cluster == nil {
			s.writeError(ctx, errNotClustered)
			return
		}
		h(ctx)
	}
}

// clusterOperator is clusterOnly for an operator's membership change.
func (s *Server) clusterOperator(h fasthttp.RequestHandler) operatorHandler {
	only := s.clusterOnly(h)
	return func(ctx *fasthttp.RequestCtx, _ services) { only(ctx) }
}

// clusterRemove is DELETE /admin/v1/cluster/nodes/{nodeId}.
func (s *Server) clusterRemove(ctx *fasthttp.RequestCtx) {
	id, _ := ctx.UserValue("nodeId").(string)
	c, cancel := context.WithTimeout(context.Background(), membershipTimeoutDefault)
	defer cancel()
	s.clusterChanged(ctx, id, s.cfg.Cluster.RemoveMember(c, id, s.askPeer))
}
