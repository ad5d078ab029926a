package wal

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A measurement of damage, at the log level: 300 synced records, 64 bytes
// flipped inside the WAL. Pebble used to stop reading there and open with
// the records before it (98 of 300); the damage is now refused, read-write
// and read-only alike, naming the file, the offset and the last intact
// record, because every WAL's chunks carry the offset synced so far.
func TestDamagedWALRefused(t *testing.T) {
	for _, at := range []float64{1.0 / 3, 0.5, 2.0 / 3} {
		dir := t.TempDir()
		path := storeOf300(t, dir)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		off := int(float64(len(b)) * at)
		for i := range 64 {
			b[off+i] ^= 0xa5
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, readOnly := range []bool{false, true} {
			l, err := Open(dir, Options{Sync: true, ReadOnly: readOnly})
			if err == nil {
				last := l.LastSeq()
				_ = l.Close()
				t.Fatalf("flip at %.0f%% (read-only %v): opened with %d of 300 acknowledged records", at*100, readOnly, last)
			}
			var d *DamagedError
			if !errors.As(err, &d) {
				t.Fatalf("flip at %.0f%%: %v, want a DamagedError", at*100, err)
			}
			if d.File != filepath.Base(path) || d.Offset <= 0 || d.Offset > int64(off) ||
				d.LastIntactSeq == 0 || d.LastIntactSeq >= 300 {
				t.Errorf("flip at byte %d: %+v", off, d)
			}
			if !strings.Contains(err.Error(), filepath.Base(path)) || !strings.Contains(err.Error(), "not a torn tail") {
				t.Errorf("message does not say where and what: %v", err)
			}
		}
	}
}

// Damage to the last group commits before a stop has nothing after it to
// vouch for it, so Pebble reads it as a torn tail; the acknowledgement
// mark refuses it, after a clean stop and after a crash (a crash clone
// keeping only synced data, taken before Close) alike. A second start
// after a refused one refuses again; a store without a mark (from before
// marks) is judged by Pebble alone.
func TestDamagedTailRefusedByAckMark(t *testing.T) {
	for _, crash := range []bool{false, true} {
		fs := vfs.NewCrashableMem()
		l, err := Open("store", Options{FS: fs, Sync: true})
		if err != nil {
			t.Fatal(err)
		}
		payload := []byte(strings.Repeat("an encoded quote event with its allocations ", 4))
		for range 300 {
			if _, err := l.AppendWait(payload); err != nil {
				t.Fatal(err)
			}
		}
		stopped := fs
		if crash {
			stopped = fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if seq, ok, err := readAckMark(stopped, "store"); err != nil || !ok || seq != 300 {
			t.Fatalf("crash %v: mark %d %v %v, want 300", crash, seq, ok, err)
		}
		wals, err := walFiles(stopped, "store")
		if err != nil || len(wals) == 0 {
			t.Fatalf("no WAL file: %v", err)
		}
		path := stopped.PathJoin("store", wals[len(wals)-1].name)
		f, err := stopped.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		info, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(make([]byte, 600), info.Size()-600); err != nil { // the last synced chunks, zeroed
			t.Fatal(err)
		}
		f.Close()
		for range 2 {
			l, err := Open("store", Options{FS: stopped, Sync: true})
			if err == nil {
				last := l.LastSeq()
				_ = l.Close()
				t.Fatalf("crash %v: opened with %d of 300 acknowledged records", crash, last)
			}
			var d *DamagedError
			if !errors.As(err, &d) || d.Acknowledged != 300 || !strings.Contains(err.Error(), "the acknowledgement mark says so") {
				t.Fatalf("crash %v: open: %v, want a DamagedError naming the acknowledgement mark", crash, err)
			}
		}
		if err := stopped.Remove(ackMarkPath("store")); err != nil {
			t.Fatal(err)
		}
		l, err = Open("store", Options{FS: stopped, Sync: true})
		if err != nil {
			t.Fatalf("crash %v: open without a mark: %v", crash, err)
		}
		if last := l.LastSeq(); last >= 300 || last == 0 {
			t.Errorf("crash %v: after the torn tail: last seq %d", crash, last)
		}
		_ = l.Close()
	}
}

// The mark never claims more than is durable: after every acknowledged
// Append it holds exactly the last acknowledged sequence, and a torn write
// of one of its two slots leaves the other.
func TestAckMarkFollowsAcknowledgements(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	l, err := Open(store, Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		first, err := l.AppendWait([]byte("a"), []byte("b"))
		if err != nil {
			t.Fatal(err)
		}
		seq, ok, err := readAckMark(vfs.Default, store)
		if err != nil || !ok || seq != first+1 {
			t.Fatalf("append %d acknowledged %d..%d; the mark holds %d (%v %v)", i, first, first+1, seq, ok, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(ackMarkPath(store), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	before, _, _ := readAckMark(vfs.Default, store)
	// Tear the newer slot: the older one holds an earlier mark.
	var newer int64
	buf := make([]byte, 2*ackMarkSlotBytes)
	if _, err := f.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	_, g0, _ := parseAckSlot(buf[:ackMarkSlotBytes])
	_, g1, _ := parseAckSlot(buf[ackMarkSlotBytes:])
	if g1 > g0 {
		newer = ackMarkSlotBytes
	}
	if _, err := f.WriteAt([]byte("torn"), newer+10); err != nil {
		t.Fatal(err)
	}
	after, ok, err := readAckMark(vfs.Default, store)
	if err != nil || !ok || after > before || after == 0 {
		t.Fatalf("mark with its newer slot torn: %d %v %v (before: %d)", after, ok, err, before)
	}
	// Both slots damaged: the mark is damage, and the store is refused.
	if _, err := f.WriteAt([]byte("torn"), ackMarkSlotBytes-newer+10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Open(store, Options{Sync: true}); err == nil || !strings.Contains(err.Error(), "acknowledgement mark") {
		t.Fatalf("open with both slots of the mark damaged: %v", err)
	}
}

// storeOf300 makes a log in dir with 300 synced records, stops it cleanly
// and returns the path of its newest WAL file.
func storeOf300(t *testing.T, dir string) string {
	t.Helper()
	l, err := Open(dir, Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(strings.Repeat("an encoded quote event with its allocations ", 4))
	for range 300 {
		if _, err := l.AppendWait(payload); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wals, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(wals) == 0 {
		t.Fatal("no WAL file")
	}
	slices.Sort(wals)
	return wals[len(wals)-1]
}
