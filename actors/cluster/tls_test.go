package cluster

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/oja-exchange/oja/wal"
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

// newTLSStream is the Raft side of a Raft port with n's TLS, its members
// those of n's file.
func newTLSStream(bind string, n *NodeTLS) (raftLayer, error) {
	m, err := newMux(bind, n, fileIDs(n.file), slog.New(slog.DiscardHandler))
	return raftLayer{m}, err
}

// tlsStream dials as a node with t's TLS would, for Raft.
type tlsStream struct{ t *NodeTLS }

func (s *tlsStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return (&mux{tls: s.t, idOf: fileIDs(s.t.file)}).dial(addr, timeout, protoRaft)
}

func fileIDs(f *File) func(raft.ServerAddress) (string, bool) {
	return func(addr raft.ServerAddress) (string, bool) {
		for _, m := range f.Nodes {
			if m.Raft == string(addr) {
				return m.ID, true
			}
		}
		return "", false
	}
}

// raftDial is a TLS dial with cfg that says it speaks Raft, as a node does.
func raftDial(addr string, cfg *tls.Config) (net.Conn, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte{protoRaft}); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
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
	if _, err := WriteCerts(dir, file.Nodes, time.Now()); err != nil {
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
		c, err := raftDial(string(target), cfg)
		if err == nil && roundTrip(c) {
			t.Errorf("%s: talked to n1", what)
		}
	}
	refused("no client certificate", &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
	other := t.TempDir()
	if _, err := WriteCerts(other, file.Nodes, time.Now()); err != nil {
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
	if _, err := WriteCerts(stranger, outsider.Nodes, time.Now()); err != nil {
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
	// NB: tls.Dialer.Dial completes the handshake, so the refusal is its
	// error.
	if c, err := misled.Dial(raft.ServerAddress(file.Nodes[1].Raft), 5*time.Second); err == nil {
		_ = c.Close()
		t.Error("n1 completed a handshake with n2's certificate at the address of n1")
	} else if !strings.Contains(err.Error(), `names "n2"`) {
		t.Errorf("refusal: %v", err)
	}
	if _, err := client.Dial("127.0.0.1:1", time.Second); err == nil || !strings.Contains(err.Error(), "no member") {
		t.Errorf("dial to a non-member address: %v", err)
	}

	// Rotation as docs/cluster.md tells it. Renewed node certificates (the same
	// CA) talk to the old ones.
	renewed := t.TempDir()
	for _, name := range []string{"ca.pem", "ca-key.pem"} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		if err := os.WriteFile(filepath.Join(renewed, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := WriteCerts(renewed, file.Nodes, time.Now()); err != nil {
		t.Fatal(err)
	}
	n2new, err := LoadTLS(renewed, file, "n2")
	if err != nil {
		t.Fatal(err)
	}
	if n2new.cert.Leaf.SerialNumber.Cmp(n2.cert.Leaf.SerialNumber) == 0 {
		t.Fatal("the renewed certificate is the old one")
	}
	if c, err := (&tlsStream{t: n2new}).Dial(target, 5*time.Second); err != nil || !roundTrip(c) {
		t.Fatalf("a renewed n2 to n1 on its old certificate: %v", err)
	}
	// A new CA: once both CAs are in every ca.pem, a node on the old CA and
	// one on the new talk; before that, they do not (refused above).
	oldCA, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	newCA, _ := os.ReadFile(filepath.Join(other, "ca.pem"))
	withBoth := func(from, id string) *NodeTLS {
		t.Helper()
		d := t.TempDir()
		files := map[string][]byte{"ca.pem": append(append([]byte(nil), oldCA...), newCA...)}
		for _, name := range []string{id + ".pem", id + "-key.pem"} {
			files[name], _ = os.ReadFile(filepath.Join(from, name))
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(d, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		n, err := LoadTLS(d, file, id)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n1both := withBoth(dir, "n1")
	bridged, err := newTLSStream(freeRaftAddr(t), n1both)
	if err != nil {
		t.Fatal(err)
	}
	defer bridged.Close()
	echo(t, bridged)
	c, err = raftDial(bridged.Addr().String(), withBoth(other, "n2").ClientConfig("n1"))
	if err != nil || !roundTrip(c) {
		t.Fatalf("the new CA's n2 to n1 on the old CA, both trusting both: %v", err)
	}
}

// TestLoadTLSRefuses: a node's certificate for another id, or a missing
// file, stops the start with the path.
func TestLoadTLSRefuses(t *testing.T) {
	dir := t.TempDir()
	file := tlsFile(t, "n1", "n2")
	if _, err := WriteCerts(dir, file.Nodes, time.Now()); err != nil {
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

// TestLogSourceNumbersFromSnapshot: a node's Raft log compacted behind a
// snapshot is read from that snapshot on: its records are numbered after
// the snapshot's sequence, entries that are not commands count none, a
// replay from before is refused as truncated, and the snapshot's state is
// what LatestSnapshot and Snapshots give.
func TestLogSourceNumbersFromSnapshot(t *testing.T) {
	dir := t.TempDir()
	store, err := wal.OpenRaftStore(filepath.Join(dir, "log"), wal.RaftStoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	logs := []*raft.Log{
		{Index: 5, Term: 2, Type: raft.LogCommand, Data: encodeRecords([][]byte{[]byte("r11"), []byte("r12")})},
		{Index: 6, Term: 2, Type: raft.LogNoop},
		{Index: 7, Term: 3, Type: raft.LogCommand, Data: encodeRecords([][]byte{[]byte("r13")})},
	}
	if err := store.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(dir, "snapshots"), 2, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	sink, err := snaps.Create(raft.SnapshotVersionMax, 4, 2, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write(append(binary.BigEndian.AppendUint64(nil, 10), "state@10"...)); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}

	src, err := OpenLogSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if first, _ := src.FirstRetained(); first != 11 {
		t.Fatalf("first retained %d, want 11", first)
	}
	var got []string
	if err := src.Replay(10, func(seq uint64, rec []byte) error {
		got = append(got, fmt.Sprintf("%d=%s", seq, rec))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "11=r11 12=r12 13=r13" {
		t.Fatalf("records %v", got)
	}
	var te *wal.TruncatedError
	if err := src.Replay(3, func(uint64, []byte) error { return nil }); !errors.As(err, &te) || te.FirstRetained != 11 {
		t.Fatalf("a replay from seq 3: %v", err)
	}
	if seq, data, ok, err := src.LatestSnapshot(); err != nil || !ok || seq != 10 || string(data) != "state@10" {
		t.Fatalf("latest snapshot %d %q %v %v", seq, data, ok, err)
	}
	if st, err := src.Stats(); err != nil || st.Records != 3 || st.FirstSeq != 11 || st.LastSeq != 13 || st.Snapshots != 1 {
		t.Fatalf("stats %+v, %v", st, err)
	}
}
