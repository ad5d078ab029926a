package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// A node's Raft port carries two protocols, told apart by the first byte
// the dialler sends once its connection is up: Raft's RPCs (protoRaft) and
// HTTP between nodes (protoHTTP: requests forwarded to the leader, relayed
// rate streams, peer status). Both ride the same mutual TLS (tls.go), or
// plain TCP with --cluster-insecure, so forwarding is exactly as
// authenticated as Raft, and a node needs no address of a peer but the one
// the Raft configuration carries: membership changes need no other table.
const (
	protoRaft byte = 'R'
	protoHTTP byte = 'H'
	// muxHandshakeTimeout bounds an accepted connection's TLS handshake
	// and first byte: a peer that connects and says nothing is dropped.
	muxHandshakeTimeout = 5 * time.Second
	// peerDialTimeout bounds dialling a peer for HTTP.
	peerDialTimeout = 5 * time.Second
)

// errMuxClosed is what Accept returns once the port is closed.
var errMuxClosed = errors.New("cluster: the raft port is closed")

// mux is a node's Raft port: it accepts connections, runs each one's TLS
// handshake and reads its protocol byte off the accepting goroutine (a slow
// peer delays no other), and hands it to Raft or to the gateway's peer
// HTTP server.
type mux struct {
	ln        net.Listener // TCP
	tls       *NodeTLS     // nil: plain TCP (--cluster-insecure)
	advertise net.Addr
	// idOf names the member at a Raft address (for the TLS check of the
	// node dialled); false: no member has it.
	idOf   func(raft.ServerAddress) (string, bool)
	logger *slog.Logger

	raftConns, httpConns chan net.Conn
	closed               chan struct{}
	closeOnce            sync.Once
	done                 chan struct{} // the accept loop ended
	httpOff              chan struct{} // the peer listener closed
	httpOffOnce          sync.Once
}

func newMux(bind string, t *NodeTLS, idOf func(raft.ServerAddress) (string, bool), logger *slog.Logger) (*mux, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok || addr.IP == nil || addr.IP.IsUnspecified() {
		_ = ln.Close()
		return nil, fmt.Errorf("cluster: raft address %s is not one other nodes can reach", bind)
	}
	m := &mux{ln: ln, tls: t, advertise: addr, idOf: idOf, logger: logger,
		raftConns: make(chan net.Conn), httpConns: make(chan net.Conn),
		closed: make(chan struct{}), done: make(chan struct{}), httpOff: make(chan struct{})}
	go m.accept()
	return m, nil
}

func (m *mux) accept() {
	defer close(m.done)
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.closed:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			m.logger.Error("raft port: accept failed; the port is closed", "err", err)
			return
		}
		go m.sort(c)
	}
}

// sort completes the handshake of an accepted connection and hands it on.
func (m *mux) sort(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(muxHandshakeTimeout))
	if m.tls != nil {
		tc := tls.Server(c, m.tls.ServerConfig())
		if err := tc.Handshake(); err != nil {
			m.logger.Warn("raft port: refused a connection", "remote", c.RemoteAddr().String(), "err", err)
			_ = c.Close()
			return
		}
		c = tc
	}
	var b [1]byte
	if _, err := c.Read(b[:]); err != nil {
		_ = c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	to, off := m.raftConns, (chan struct{})(nil)
	switch b[0] {
	case protoRaft:
	case protoHTTP:
		to, off = m.httpConns, m.httpOff
	default:
		m.logger.Warn("raft port: refused a connection speaking no known protocol", "remote", c.RemoteAddr().String())
		_ = c.Close()
		return
	}
	select {
	case to <- c:
	case <-m.closed:
		_ = c.Close()
	case <-off:
		_ = c.Close()
	}
}

// dial connects to the member at address and says which protocol follows.
func (m *mux) dial(address raft.ServerAddress, timeout time.Duration, proto byte) (net.Conn, error) {
	nd := &net.Dialer{Timeout: timeout}
	var c net.Conn
	var err error
	if m.tls != nil {
		id, ok := m.idOf(address)
		if !ok {
			return nil, fmt.Errorf("cluster TLS: %s is no member's raft address", address)
		}
		c, err = (&tls.Dialer{NetDialer: nd, Config: m.tls.ClientConfig(id)}).Dial("tcp", string(address))
	} else {
		c, err = nd.Dial("tcp", string(address))
	}
	if err != nil {
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{proto}); err != nil {
		_ = c.Close()
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}

func (m *mux) close() error {
	var err error
	m.closeOnce.Do(func() {
		close(m.closed)
		err = m.ln.Close()
		<-m.done
	})
	return err
}

// raftLayer is the raft.StreamLayer of the port.
type raftLayer struct{ m *mux }

func (l raftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.m.raftConns:
		return c, nil
	case <-l.m.closed:
		return nil, errMuxClosed
	}
}

func (l raftLayer) Close() error   { return l.m.close() }
func (l raftLayer) Addr() net.Addr { return l.m.advertise }
func (l raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return l.m.dial(address, timeout, protoRaft)
}

// peerListener is the port's HTTP side, as a net.Listener the gateway
// serves. Closing it stops handing connections to HTTP only: Raft goes on
// until the node closes.
type peerListener struct{ m *mux }

func (l *peerListener) Accept() (net.Conn, error) {
	select {
	case <-l.m.httpOff:
		return nil, net.ErrClosed
	default:
	}
	select {
	case c := <-l.m.httpConns:
		return c, nil
	case <-l.m.httpOff:
		return nil, net.ErrClosed
	case <-l.m.closed:
		return nil, net.ErrClosed
	}
}

func (l *peerListener) Close() error {
	l.m.httpOffOnce.Do(func() { close(l.m.httpOff) })
	return nil
}

func (l *peerListener) Addr() net.Addr { return l.m.advertise }
