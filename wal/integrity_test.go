package wal

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Issue 10's measurement, at the log level: 300 synced records, 64 bytes
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

// Damage to the last records before a clean stop has nothing after it to
// vouch for it, so Pebble reads it as a torn tail; the clean-stop mark
// refuses it. A second start after a refused one refuses again, and a
// stop without the mark (a crash) is judged as a crash.
func TestDamagedTailAfterCleanStopRefused(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	path := storeOf300(t, store)
	if _, err := os.Stat(cleanStopPath(store)); err != nil {
		t.Fatalf("no clean-stop mark after Close: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) - 600; i < len(b); i++ { // the last synced chunks, zeroed
		b[i] = 0
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		l, err := Open(store, Options{Sync: true})
		if err == nil {
			last := l.LastSeq()
			_ = l.Close()
			t.Fatalf("opened with %d of 300 records acknowledged before the clean stop", last)
		}
		var d *DamagedError
		if !errors.As(err, &d) || !strings.Contains(err.Error(), "acknowledged before the last clean stop") {
			t.Fatalf("open: %v, want a DamagedError about the clean stop", err)
		}
	}

	// Without the mark (as after kill -9) the same damaged tail is a torn
	// tail: tolerated.
	if err := os.Remove(cleanStopPath(store)); err != nil {
		t.Fatal(err)
	}
	l, err := Open(store, Options{Sync: true})
	if err != nil {
		t.Fatalf("open without a clean-stop mark: %v", err)
	}
	if last := l.LastSeq(); last >= 300 || last == 0 {
		t.Errorf("after the torn tail: last seq %d", last)
	}
	if _, err := os.Stat(cleanStopPath(store)); !os.IsNotExist(err) {
		t.Errorf("the mark is still there after a start: %v", err)
	}
	_ = l.Close()
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
