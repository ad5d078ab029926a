package wal

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"
)

func raftEntry(i uint64) *raft.Log {
	return &raft.Log{Index: i, Term: 1 + i/10, Type: raft.LogCommand,
		Data: fmt.Appendf(nil, "entry %d", i), AppendedAt: time.Unix(1700000000, int64(i))}
}

// TestRaftStore checks the LogStore and StableStore contracts hashicorp/raft
// relies on: first/last index, not-found errors, ranges deleted inclusively,
// and stable values.
func TestRaftStore(t *testing.T) {
	s, err := OpenRaftStore(t.TempDir(), RaftStoreOptions{FS: vfs.NewMem(), Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if first, _ := s.FirstIndex(); first != 0 {
		t.Fatalf("empty store: first index %d", first)
	}
	var got raft.Log
	if err := s.GetLog(1, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog on empty store: %v", err)
	}
	var batch []*raft.Log
	for i := uint64(1); i <= 30; i++ {
		batch = append(batch, raftEntry(i))
	}
	if err := s.StoreLogs(batch); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLog(&raft.Log{Index: 31, Term: 4, Type: raft.LogNoop}); err != nil {
		t.Fatal(err)
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first != 1 || last != 31 {
		t.Fatalf("first %d last %d, want 1 31", first, last)
	}
	if err := s.GetLog(17, &got); err != nil {
		t.Fatal(err)
	}
	want := raftEntry(17)
	if got.Index != 17 || got.Term != want.Term || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) || !got.AppendedAt.Equal(want.AppendedAt) {
		t.Fatalf("entry 17 read back as %+v, want %+v", got, want)
	}
	if err := s.DeleteRange(1, 10); err != nil {
		t.Fatal(err)
	}
	if first, _ = s.FirstIndex(); first != 11 {
		t.Fatalf("after deleting 1..10: first %d", first)
	}
	if err := s.GetLog(10, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("deleted entry 10: %v", err)
	}
	if err := s.DeleteRange(25, 31); err != nil { // a conflicting suffix
		t.Fatal(err)
	}
	if last, _ = s.LastIndex(); last != 24 {
		t.Fatalf("after deleting 25..31: last %d", last)
	}

	if _, err := s.Get([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing stable key: %v (raft compares the text with \"not found\")", err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 0 {
		t.Fatalf("missing stable number: %d, %v", v, err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("n2")); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.GetUint64([]byte("CurrentTerm")); v != 7 {
		t.Fatalf("CurrentTerm %d", v)
	}
	if v, _ := s.Get([]byte("LastVoteCand")); string(v) != "n2" {
		t.Fatalf("LastVoteCand %q", v)
	}
}

// TestRaftStoreSurvivesCrash: what StoreLogs and Set returned is durable
// (the crash keeps synced data only), what follows is the store's state.
func TestRaftStoreSurvivesCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s, err := OpenRaftStore("raft", RaftStoreOptions{FS: fs, Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 200; i++ {
		if err := s.StoreLogs([]*raft.Log{raftEntry(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 9); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	_ = s.Close()

	s, err = OpenRaftStore("raft", RaftStoreOptions{FS: crashed, Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if last, _ := s.LastIndex(); last != 200 {
		t.Fatalf("after the crash: last index %d, want 200", last)
	}
	var got raft.Log
	for i := uint64(1); i <= 200; i++ {
		if err := s.GetLog(i, &got); err != nil || !bytes.Equal(got.Data, raftEntry(i).Data) {
			t.Fatalf("entry %d after the crash: %v %q", i, err, got.Data)
		}
	}
	if v, _ := s.GetUint64([]byte("CurrentTerm")); v != 9 {
		t.Fatalf("CurrentTerm after the crash: %d", v)
	}
}
