package gateway

import (
	"net"
	"syscall"
	"testing"
)

// A stream's socket gets a bounded send buffer, through the listener's
// connection wrapper too (a probe found a subscriber that never reads was
// dropped only after ~2 MB of kernel buffers filled).
func TestStreamSendBufferBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	wrapped := sniffListener{ln}
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := wrapped.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	sndbuf := func() int {
		raw, err := server.(syscall.Conn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var v int
		var gerr error
		if err := raw.Control(func(fd uintptr) {
			v, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
		}); err != nil || gerr != nil {
			t.Fatal(err, gerr)
		}
		return v
	}
	before := sndbuf()
	boundSendBuffer(server, sseSendBufferBytes)
	after := sndbuf()
	// Linux doubles the value set (socket(7)); the kernel's floor is 4608.
	if after > 2*sseSendBufferBytes || after >= before {
		t.Fatalf("SO_SNDBUF %d after bounding (was %d), want at most %d", after, before, 2*sseSendBufferBytes)
	}
}
