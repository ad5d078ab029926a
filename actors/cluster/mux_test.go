package cluster

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestRaftPortSortsConnections: on one port (plain TCP here, as with
// --cluster-insecure), a connection that starts with the Raft byte reaches
// Raft and one that starts with the HTTP byte reaches the peer listener,
// each with the bytes after the first; one that says neither reaches
// neither and is closed; closing the HTTP side leaves Raft running.
func TestRaftPortSortsConnections(t *testing.T) {
	m, err := newMux(freeRaftAddr(t), nil, func(raft.ServerAddress) (string, bool) { return "", false }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	layer, peers := raftLayer{m}, &peerListener{m: m}
	echo(t, layer)
	echo(t, peers)
	addr := raft.ServerAddress(m.advertise.String())
	for _, proto := range []byte{protoRaft, protoHTTP} {
		c, err := m.dial(addr, 5*time.Second, proto)
		if err != nil || !roundTrip(c) {
			t.Fatalf("protocol %q: %v", proto, err)
		}
	}
	stranger, err := net.DialTimeout("tcp", string(addr), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = stranger.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := stranger.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// Closed with unread bytes, the connection may end in a reset.
	if b, err := io.ReadAll(stranger); len(b) > 0 || err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a connection speaking no known protocol got %q, %v; want it closed", b, err)
	}
	_ = stranger.Close()
	_ = peers.Close()
	if _, err := peers.Accept(); err == nil {
		t.Fatal("a closed peer listener accepted")
	}
	c, err := m.dial(addr, 5*time.Second, protoRaft)
	if err != nil || !roundTrip(c) {
		t.Fatalf("raft after the peer listener closed: %v", err)
	}
}
