package gateway

import (
	"io"
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
	s.relay.open.Add(1)
	ctx.SetBodyStream(&relayBody{src: resp.BodyStream(), conn: ctx.Conn(), stallMax: s.streams.stallMax,
		end: func() {
			s.relay.open.Add(-1)
			release()
		}}, -1)
}

// relayBody is a relayed rate stream as the response's body stream. It is
// written on the connection goroutine (WriteTo: no second goroutine, no
// pipe), each piece read from the leader
// is one chunk flushed to the client, and it owns the connection's write
// deadline, moved before each chunk: the server's 15 s WriteTimeout would
// otherwise cut every relayed stream 15 s after it opened (its client then
// reconnected), and a client that stops reading is still disconnected
// after stallMax.
type relayBody struct {
	src      interface{ Read([]byte) (int, error) } // the leader's response body
	conn     net.Conn
	stallMax time.Duration
	end      func() // runs once, when fasthttp closes the body
	once     sync.Once
}

// SupportsBodyWriteTo tells fasthttp to call WriteTo rather than Read.
func (b *relayBody) SupportsBodyWriteTo() bool { return true }

// WriteTo copies the leader's stream to w until the leader ends it, dies
// or goes silent past relayIdleMax (relayConn), or the client leaves.
func (b *relayBody) WriteTo(w io.Writer) (int64, error) {
	buf := make([]byte, 4096)
	var written int64
	for {
		n, err := b.src.Read(buf)
		if n > 0 {
			_ = b.conn.SetWriteDeadline(time.Now().Add(b.stallMax))
			m, werr := w.Write(buf[:n])
			written += int64(m)
			if werr != nil {
				return written, werr // the client left or stalled
			}
		}
		if err == io.EOF {
			return written, nil
		}
		if err != nil {
			return written, err
		}
	}
}

// Read serves fasthttp paths that do not use WriteTo.
func (b *relayBody) Read(p []byte) (int, error) {
	n, err := b.src.Read(p)
	if n > 0 {
		_ = b.conn.SetWriteDeadline(time.Now().Add(b.stallMax))
	}
	return n, err
}

// Close releases the leader's response (fasthttp calls it when the
// response ends for any reason).
func (b *relayBody) Close() error {
	b.once.Do(b.end)
	return nil
}
