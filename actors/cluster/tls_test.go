package cluster

import (
	"crypto/tls"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func freeRaftAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func tlsFile(t *testing.T, ids ...string) *File {
	t.Helper()
	f := &File{}
	for _, id := range ids {
		f.Nodes = append(f.Nodes, Member{ID: id, Raft: freeRaftAddr(t), Public: freeRaftAddr(t), Admin: freeRaftAddr(t)})
	}
	return f
}

// echo serves s: every connection gets back what it sends, once the
// handshake (run by the first read) has passed.
func echo(t *testing.T, s net.Listener) {
	t.Helper()
	go func() {
		for {
			c, err := s.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				_, _ = io.Copy(c, c)
			}()
		}
	}()
}

// roundTrip writes ping on c and reads it back; false when the peer ends
// the connection instead (a refused handshake).
func roundTrip(c net.Conn) bool {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		return false
	}
	buf := make([]byte, 4)
	_, err := io.ReadFull(c, buf)
	return err == nil && string(buf) == "ping"
}

// TestRaftMutualTLS: members with the cluster CA's certificates talk; a
// client without a certificate, with another CA's, or with the CA's for a
// node not in the cluster file is cut off at the handshake, as is plain
// TCP; a node refuses a peer whose certificate names another node than the
// one at the address it dialled, and an address no member has.
func TestRaftMutualTLS(t *testing.T) {
	dir := t.TempDir()
	file := tlsFile(t, "n1", "n2")
	if _, err := WriteCerts(dir, file, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ca-key.pem", "n1-key.pem"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, mode %v; want 0600", name, err, st.Mode().Perm())
		}
	}
	n1, err := LoadTLS(dir, file, "n1")
	if err != nil {
		t.Fatal(err)
	}
	n2, err := LoadTLS(dir, file, "n2")
	if err != nil {
		t.Fatal(err)
	}
	server, err := newTLSStream(file.Nodes[0].Raft, n1)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	echo(t, server)
	client := &tlsStream{t: n2}
	target := raft.ServerAddress(file.Nodes[0].Raft)
	c, err := client.Dial(target, 5*time.Second)
	if err != nil || !roundTrip(c) {
		t.Fatalf("member n2 to n1: %v", err)
	}

	refused := func(what string, cfg *tls.Config) {
		t.Helper()
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", string(target), cfg)
		if err == nil && roundTrip(c) {
			t.Errorf("%s: talked to n1", what)
		}
	}
	refused("no client certificate", &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
	other := t.TempDir()
	if _, err := WriteCerts(other, file, time.Now()); err != nil {
		t.Fatal(err)
	}
	foreign, err := LoadTLS(other, file, "n2")
	if err != nil {
		t.Fatal(err)
	}
	refused("another CA's n2", foreign.ClientConfig("n1"))
	// The right CA, a node the cluster file does not name.
	stranger := t.TempDir()
	for _, name := range []string{"ca.pem", "ca-key.pem"} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		if err := os.WriteFile(filepath.Join(stranger, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	outsider := tlsFile(t, "n9")
	if _, err := WriteCerts(stranger, outsider, time.Now()); err != nil {
		t.Fatal(err)
	}
	n9, err := LoadTLS(stranger, outsider, "n9")
	if err != nil {
		t.Fatal(err)
	}
	refused("the CA's n9, not a member", n9.ClientConfig("n1"))
	plain, err := net.DialTimeout("tcp", string(target), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// What raft would send first (an AppendEntries type byte and a
	// message): not a TLS record, so the handshake fails at once.
	_ = plain.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := plain.Write([]byte("\x00appendEntries term 99")); err == nil {
		if b, err := io.ReadAll(plain); err == nil && strings.Contains(string(b), "appendEntries") {
			t.Errorf("plain TCP was echoed: %q", b)
		}
	}
	_ = plain.Close()

	// n2 listening where the file puts n1: n1 dialling there refuses it.
	impostor, err := newTLSStream(file.Nodes[1].Raft, n2)
	if err != nil {
		t.Fatal(err)
	}
	defer impostor.Close()
	echo(t, impostor)
	fake := *file
	fake.Nodes = []Member{{ID: "n1", Raft: file.Nodes[1].Raft}, file.Nodes[1]}
	fake.Nodes[1].Raft = file.Nodes[0].Raft
	misled := &tlsStream{t: &NodeTLS{cert: n1.cert, cas: n1.cas, file: &fake, self: "n1"}}
	if c, err := misled.Dial(raft.ServerAddress(file.Nodes[1].Raft), 5*time.Second); err == nil {
		if roundTrip(c) {
			t.Error("n1 talked to n2's certificate at the address of n1")
		}
	} else if !strings.Contains(err.Error(), `names "n2"`) {
		t.Errorf("refusal: %v", err)
	}
	if _, err := client.Dial("127.0.0.1:1", time.Second); err == nil || !strings.Contains(err.Error(), "no member") {
		t.Errorf("dial to a non-member address: %v", err)
	}
}

// TestLoadTLSRefuses: a node's certificate for another id, or a missing
// file, stops the start with the path.
func TestLoadTLSRefuses(t *testing.T) {
	dir := t.TempDir()
	file := tlsFile(t, "n1", "n2")
	if _, err := WriteCerts(dir, file, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "n2.pem"), filepath.Join(dir, "n1.pem")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "n2-key.pem"), filepath.Join(dir, "n1-key.pem")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTLS(dir, file, "n1"); err == nil || !strings.Contains(err.Error(), `names node "n2"`) {
		t.Fatalf("n2's certificate as n1's: %v", err)
	}
	if _, err := LoadTLS(t.TempDir(), file, "n1"); err == nil || !strings.Contains(err.Error(), "ca.pem") {
		t.Fatalf("an empty dir: %v", err)
	}
}
