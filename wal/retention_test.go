package wal

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Truncate deletes the records up to a snapshot and the snapshots before
// it; reads before the retained start are told apart from holes, and the
// log reopens with the mark.
func TestTruncate(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "db", true)
	for i := range 100 {
		if _, err := l.AppendWait(fmt.Appendf(nil, "rec%d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Truncate(40); err == nil {
		t.Fatal("Truncate to a seq without a snapshot succeeded")
	}
	for _, seq := range []uint64{20, 40, 90} {
		if err := l.SaveSnapshot(seq, fmt.Appendf(nil, "state@%d", seq)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Truncate(40); err != nil {
		t.Fatal(err)
	}
	check := func(l *Log) {
		t.Helper()
		first, err := l.FirstRetained()
		if err != nil || first != 41 {
			t.Fatalf("FirstRetained = %d, %v; want 41", first, err)
		}
		var te *TruncatedError
		if err := l.Replay(0, func(uint64, []byte) error { return nil }); !errors.As(err, &te) || te.FirstRetained != 41 {
			t.Fatalf("Replay(0) after truncation = %v, want a TruncatedError at 41", err)
		}
		if _, err := l.Record(40); !errors.As(err, &te) {
			t.Fatalf("Record(40) = %v, want a TruncatedError", err)
		}
		n := 0
		if err := l.Replay(40, func(seq uint64, rec []byte) error {
			if string(rec) != fmt.Sprintf("rec%d", seq) {
				return fmt.Errorf("seq %d holds %q", seq, rec)
			}
			n++
			return nil
		}); err != nil || n != 60 {
			t.Fatalf("Replay(40) = %d records, %v; want 60", n, err)
		}
		seqs, err := l.SnapshotSeqs()
		if err != nil || fmt.Sprint(seqs) != "[40 90]" {
			t.Fatalf("snapshots after truncation = %v (%v), want [40 90]", seqs, err)
		}
		st, err := l.Stats()
		if err != nil || st.FirstSeq != 41 || st.FirstRetained != 41 || st.Records != 60 || st.LastSeq != 100 {
			t.Fatalf("stats after truncation = %+v, %v", st, err)
		}
	}
	check(l)
	if err := l.Truncate(20); err != nil { // before the mark: nothing to do
		t.Fatal(err)
	}
	closeLog(t, l)
	l = openLog(t, fs, "db", true)
	defer closeLog(t, l)
	check(l)
	if rec, err := l.Record(77); err != nil || string(rec) != "rec77" {
		t.Fatalf("Record(77) = %q, %v", rec, err)
	}
}

// Snapshot data lives in files the keys refer to: a file no key names (a
// crash between the file and its key) and a leftover temporary file are
// removed by the next writable open; a referenced one stays, and a missing
// one is a corrupt snapshot that the next older one replaces.
func TestSnapshotFiles(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "db", true)
	for i := range 10 {
		if _, err := l.AppendWait(fmt.Appendf(nil, "rec%d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	for _, seq := range []uint64{4, 8} {
		if err := l.SaveSnapshot(seq, fmt.Appendf(nil, "state@%d", seq)); err != nil {
			t.Fatal(err)
		}
	}
	closeLog(t, l)
	orphan, tmp := "db/snapshots/00000000000000000009.snap", "db/snapshots/00000000000000000010.snap.tmp"
	for _, path := range []string{orphan, tmp} {
		f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	l = openLog(t, fs, "db", true)
	names, _ := fs.List("db/snapshots")
	slices.Sort(names)
	if fmt.Sprint(names) != "[00000000000000000004.snap 00000000000000000008.snap]" {
		t.Errorf("snapshot files after a writable open: %v", names)
	}
	if err := fs.Remove(l.snapshotPath(8)); err != nil {
		t.Fatal(err)
	}
	seq, data, ok, err := l.LatestSnapshot()
	if err != nil || !ok || seq != 4 || string(data) != "state@4" || fmt.Sprint(l.CorruptSnapshots()) != "[8]" {
		t.Errorf("latest with the newest file missing: %d %q %v %v, skipped %v", seq, data, ok, err, l.CorruptSnapshots())
	}
	st, err := l.Stats()
	if err != nil || st.DiskBytes == 0 || st.Snapshots != 2 {
		t.Errorf("stats: %+v %v", st, err)
	}
	closeLog(t, l)
}

// TestSeed: a seeded log starts after its snapshot: it reopens with the
// snapshot at seq, no record, seq+1 as its first retained and next
// sequence; a log that is not empty is not seeded.
func TestSeed(t *testing.T) {
	fs := vfs.NewMem()
	if err := Seed("seeded", 41, []byte("state@41"), Options{FS: fs, Sync: true}); err != nil {
		t.Fatal(err)
	}
	l := openLog(t, fs, "seeded", true)
	seq, data, ok, err := l.LatestSnapshot()
	if err != nil || !ok || seq != 41 || string(data) != "state@41" {
		t.Fatalf("snapshot %d %q %v %v", seq, data, ok, err)
	}
	if first, err := l.FirstRetained(); err != nil || first != 42 || l.LastSeq() != 41 {
		t.Fatalf("first retained %d (%v), last seq %d; want 42 and 41", first, err, l.LastSeq())
	}
	if got, err := l.AppendWait([]byte("next")); err != nil || got != 42 {
		t.Fatalf("the first append got seq %d (%v), want 42", got, err)
	}
	closeLog(t, l)
	if err := Seed("seeded", 41, []byte("again"), Options{FS: fs, Sync: true}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("seeding a log with records: %v", err)
	}
}
