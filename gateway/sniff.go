package gateway

import (
	"bytes"
	"crypto/tls"
	"net"
	"sync"
	"syscall"
)

// Which dialect answers a request fasthttp could not parse?
//
// When a request's header block or body is malformed (a repeated
// Content-Length, a NUL in a header, a bad chunk size, headers over 8 KiB),
// fasthttp resets the request before it calls the ErrorHandler, so the
// route is gone; yet every refusal on the XML routes must be a MsgRjct
// (spec §7). sniffConn keeps the start of the bytes read on a
// connection since the last request was handled — the next request line —
// and parseError reads the target from it.
//
// It is exact for requests that are not pipelined (fasthttp reads the next
// request from the socket after answering the previous one). When a client
// pipelines, the next request's first bytes may have been read with the
// previous request; the sniffed line is then not a request line and the
// refusal is answered in JSON, as for any unknown route.

// sniffLineBytesMax bounds what a connection keeps of a request's start.
const sniffLineBytesMax = 512

type sniffListener struct{ net.Listener }

func (l sniffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c}, nil
}

type sniffConn struct {
	net.Conn
	mu    sync.Mutex
	start []byte // the first bytes read since the last mark
	done  bool   // start holds a whole line (or the bound)
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if !c.done {
			room := min(n, sniffLineBytesMax-len(c.start))
			c.start = append(c.start, p[:room]...)
			c.done = len(c.start) >= sniffLineBytesMax || bytes.IndexByte(c.start, '\n') >= 0
		}
		c.mu.Unlock()
	}
	return n, err
}

// mark says a request was handled: what is read next starts a new one.
func (c *sniffConn) mark() {
	c.mu.Lock()
	c.start, c.done = c.start[:0], false
	c.mu.Unlock()
}

// target is the request-target of the sniffed request line, or nil.
func (c *sniffConn) target() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	line, _, _ := bytes.Cut(c.start, []byte("\n"))
	_, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return nil
	}
	target, _, _ := bytes.Cut(rest, []byte(" "))
	return append([]byte(nil), target...)
}

// SyscallConn exposes the socket (SO_SNDBUF for rate streams).
func (c *sniffConn) SyscallConn() (syscall.RawConn, error) {
	conn := c.Conn
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn() // HTTPS: the socket under the TLS session
	}
	if sc, ok := conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, syscall.EINVAL
}
