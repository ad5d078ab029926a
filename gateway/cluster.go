package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
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
	Replace(id string) error
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
	// clusterStatusTimeout bounds GET /admin/v1/cluster's questions to peers.
	clusterStatusTimeout = 2 * time.Second
)

var errNoLeader = &apiError{status: fasthttp.StatusServiceUnavailable, code: codeUnavailable,
	message: "no cluster leader is reachable (an election is under way or a majority of nodes is down); retry later"}

// localRoutes are answered by every node itself, leader or not.
var localRoutes = map[string]bool{
	"/livez": true, "/healthz": true, "/readyz": true, "/metrics": true,
	adminBase + "/cluster": true, adminBase + "/cluster/node": true, adminBase + "/state": true,
	adminBase + "/backup": true,
}

// forwarder keeps one connection pool per leader address.
type forwarder struct {
	mu      sync.Mutex
	clients map[string]*fasthttp.HostClient
}

func (f *forwarder) client(addr string) *fasthttp.HostClient {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clients[addr]
	if !ok {
		if f.clients == nil {
			f.clients = make(map[string]*fasthttp.HostClient)
		}
		c = &fasthttp.HostClient{
			Addr: addr, Name: "oja-forward", NoDefaultUserAgentHeader: true,
			ReadTimeout: forwardTimeout, WriteTimeout: forwardTimeout,
			MaxConns: connectionsMax, MaxIdleConnDuration: idleTimeout,
			DisableHeaderNamesNormalizing: false, DisablePathNormalizing: true,
		}
		f.clients[addr] = c
	}
	return c
}

// closeIdle closes the idle connections to every leader this node has
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
		if localRoutes[string(ctx.Path())] {
			next(ctx)
			return
		}
		if s.sys.Load() != nil {
			// A read is answered here only once this node is known to
			// still lead: a paused or partitioned leader that has not
			// noticed its successor must not serve what it holds. A
			// write needs no check: it is acknowledged only once
			// committed in this leader's term.
			if ctx.IsGet() && string(ctx.Path()) != ratesStreamPath {
				if err := s.cfg.Cluster.VerifyLeader(); err != nil {
					s.writeErrorByPath(ctx, errNoLeader)
					return
				}
			}
			next(ctx)
			return
		}
		s.forward(ctx, admin)
	}
}

// forward sends the request to the leader and answers with its answer: the
// same status, headers (the request id included: the leader keeps ours)
// and body. Without a reachable leader it answers 503 UNAVAILABLE with
// Retry-After; a client retries with the same Idempotency-Key.
func (s *Server) forward(ctx *fasthttp.RequestCtx, admin bool) {
	ctx.SetUserValue(router.MatchedRoutePathParam, "forwarded")
	leader, ok := s.otherLeader()
	if !ok || len(ctx.Request.Header.Peek(forwardedHeader)) > 0 {
		s.writeErrorByPath(ctx, errNoLeader)
		return
	}
	if string(ctx.Path()) == ratesStreamPath {
		s.relayStream(ctx, leader.Public)
		return
	}
	addr := leader.Public
	if admin {
		addr = leader.Admin
	}
	id := append([]byte(nil), ctx.Response.Header.Peek("X-Request-Id")...)
	req := &ctx.Request
	req.Header.SetBytesV("X-Request-Id", id)
	req.Header.Set(forwardedHeader, s.forwardMark(s.cfg.Cluster.Self().ID, id))
	req.Header.Del("Connection")
	if err := s.fwd.client(addr).DoTimeout(req, &ctx.Response, forwardTimeout); err != nil {
		s.cfg.Logger.Warn("forwarding to the leader failed", "leader", leader.ID, "addr", addr, "err", err)
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
	if s.cfg.Cluster == nil {
		return false
	}
	_, ok := s.otherLeader()
	return ok
}

// otherLeader is the cluster's leader when one is known and it is not this
// node (a node that leads but holds no system yet is still starting).
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

// registerCluster serves the cluster's admin routes (404 on a single node).
func (s *Server) registerCluster(r *router.Router) {
	r.POST(adminBase+"/cluster/nodes/{nodeId}/replace", s.operator(func(ctx *fasthttp.RequestCtx, _ *actors.System) {
		if s.cfg.Cluster == nil {
			s.writeError(ctx, errNotClustered)
			return
		}
		s.clusterReplace(ctx)
	}))
	for path, h := range map[string]fasthttp.RequestHandler{
		adminBase + "/cluster": s.clusterStatus, adminBase + "/cluster/node": s.clusterNode, adminBase + "/state": s.clusterState,
	} {
		r.GET(path, s.adminAuth(func(ctx *fasthttp.RequestCtx) {
			if s.cfg.Cluster == nil {
				s.writeError(ctx, errNotClustered)
				return
			}
			h(ctx)
		}))
	}
}

func (s *Server) clusterStatus(ctx *fasthttp.RequestCtx) {
	c, cancel := context.WithTimeout(context.Background(), clusterStatusTimeout)
	defer cancel()
	s.writeJSONValue(ctx, s.cfg.Cluster.Status(c, s.askPeer))
}

// askPeer asks member m for its own entry: GET /admin/v1/cluster/node on
// its admin API (clusterNode), with this node's admin token (every node
// shares it), within ctx.
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
	req.SetRequestURI("http://" + m.Admin + adminBase + "/cluster/node")
	req.Header.Set("Authorization", "Bearer "+s.cfg.AdminToken)
	if err := fasthttp.DoTimeout(req, resp, timeout); err != nil || resp.StatusCode() != fasthttp.StatusOK {
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
	err := s.cfg.Cluster.Replace(id)
	switch {
	case err == nil:
		s.clusterStatus(ctx)
	case errors.Is(err, cluster.ErrReplaceLeader):
		s.writeError(ctx, &apiError{status: fasthttp.StatusConflict, code: "CONFLICT", message: err.Error()})
	case errors.Is(err, cluster.ErrUnknownMember):
		s.writeError(ctx, &apiError{status: fasthttp.StatusNotFound, code: codeNotFound, message: err.Error()})
	default:
		s.cfg.Logger.Error("replacing a cluster member", "node", id, "err", err)
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
