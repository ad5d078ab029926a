package gateway

import (
	"bufio"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors/cluster"
)

// streamProxy relays rate streams a follower is asked for from the leader:
// the leader authenticates, limits and serves the stream; the follower
// copies its bytes as they come. Its connections to the leader are its
// own, so Shutdown can end every relayed stream by closing them.
type streamProxy struct {
	mu    sync.Mutex
	conns map[*relayConn]struct{}
	open  atomic.Int64
	// clients, one per leader (streams need no timeout on the whole
	// response: relayConn bounds each read instead).
	clients map[cluster.Member]*fasthttp.HostClient
}

// relayIdleMax bounds a relayed stream's silence: the leader sends a
// heartbeat every --sse-heartbeat (15 s by default), so a leader that went
// silent this long is gone and the stream ends (the client reconnects).
const relayIdleMax = 60 * time.Second

// relayConn is a connection to the leader that bounds each read.
type relayConn struct {
	net.Conn
	p      *streamProxy
	leader cluster.Member // the leader it relays from
}

func (c *relayConn) Read(b []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(relayIdleMax))
	return c.Conn.Read(b)
}

func (c *relayConn) Close() error {
	c.p.mu.Lock()
	delete(c.p.conns, c)
	c.p.mu.Unlock()
	return c.Conn.Close()
}

func (p *streamProxy) client(node ClusterNode, m cluster.Member) *fasthttp.HostClient {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clients == nil {
		p.clients = make(map[cluster.Member]*fasthttp.HostClient)
		p.conns = make(map[*relayConn]struct{})
	}
	c, ok := p.clients[m]
	if !ok {
		c = &fasthttp.HostClient{
			Addr: m.ID, Name: "oja-relay", NoDefaultUserAgentHeader: true,
			StreamResponseBody: true, MaxConns: sseSubscribersMax, MaxIdleConnDuration: time.Second,
			WriteTimeout: forwardTimeout, DisablePathNormalizing: true,
			DialTimeout: func(_ string, timeout time.Duration) (net.Conn, error) {
				conn, err := node.DialPeer(m, timeout)
				if err != nil {
					return nil, err
				}
				rc := &relayConn{Conn: conn, p: p, leader: m}
				p.mu.Lock()
				p.conns[rc] = struct{}{}
				p.mu.Unlock()
				return rc, nil
			},
		}
		p.clients[m] = c
	}
	return c
}

// closeAll ends every relayed stream (at Shutdown).
func (p *streamProxy) closeAll() { p.closeFrom(func(cluster.Member) bool { return true }) }

// closeFrom ends the relayed streams whose leader matches.
func (p *streamProxy) closeFrom(match func(cluster.Member) bool) int {
	p.mu.Lock()
	conns := make([]*relayConn, 0, len(p.conns))
	for c := range p.conns {
		if match(c.leader) {
			conns = append(conns, c)
		}
	}
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Conn.Close()
	}
	return len(conns)
}

// LeaderChanged is told of every change of the cluster's leader (ok false:
// none known). A term has ended: the streams relayed from any other leader
// end now, so their clients reconnect and are served by the new one,
// instead of waiting relayIdleMax for a deposed leader's silence (a
// partitioned one never closes them itself).
func (s *Server) LeaderChanged(leader cluster.Member, ok bool) {
	if n := s.relay.closeFrom(func(m cluster.Member) bool { return !ok || m != leader }); n > 0 {
		s.cfg.Logger.Info("the leader changed: relayed rate streams ended", "streams", n, "leader", leader.ID)
	}
}

// relayStream answers a rate stream request on a follower with the
// leader's stream. A refusal by the leader (401, 429, 503…) is relayed as
// it is.
func (s *Server) relayStream(ctx *fasthttp.RequestCtx, leader cluster.Member) {
	if s.relay.open.Load() >= sseSubscribersMax || s.closing.Load() {
		s.writeError(ctx, errStreamsFull)
		return
	}
	req := fasthttp.AcquireRequest()
	ctx.Request.CopyTo(req)
	resp := fasthttp.AcquireResponse()
	release := func() {
		_ = resp.CloseBodyStream()
		fasthttp.ReleaseResponse(resp)
	}
	err := s.relay.client(s.cfg.Cluster, leader).Do(req, resp)
	fasthttp.ReleaseRequest(req)
	if err != nil {
		release()
		s.cfg.Logger.Warn("relaying a rate stream from the leader failed", "leader", leader.ID, "err", err)
		s.writeError(ctx, errNoLeader)
		return
	}
	resp.Header.CopyTo(&ctx.Response.Header)
	ctx.Response.Header.ResetConnectionClose()
	if resp.StatusCode() != fasthttp.StatusOK {
		body, _ := resp.BodyUncompressed()
		ctx.SetBody(append([]byte(nil), body...))
		release()
		return
	}
	ctx.Response.Header.Del("Content-Length")
	ctx.Response.Header.Del("Transfer-Encoding")
	stream := resp.BodyStream()
	s.relay.open.Add(1)
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.relay.open.Add(-1)
		defer release()
		buf := make([]byte, 4096)
		for {
			n, err := stream.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return
				}
				if w.Flush() != nil {
					return // the client left
				}
			}
			if err != nil {
				return // the leader ended it, died or went silent
			}
		}
	})
}
