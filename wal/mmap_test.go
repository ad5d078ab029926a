package wal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestReadLatestSnapshot: the lent snapshot is the one LatestSnapshot
// returns, on disk (mapped on Linux) and in memory (read), skipping a
// newer one whose file fails its checksum; fn's error comes back as is.
func TestReadLatestSnapshot(t *testing.T) {
	for _, fs := range []vfs.FS{vfs.Default, vfs.NewMem()} {
		dir := "db"
		if fs == vfs.Default {
			dir = filepath.Join(t.TempDir(), "db")
		}
		l := openLog(t, fs, dir, true)
		if ok, err := l.ReadLatestSnapshot(func(uint64, []byte) error { t.Error("fn called without a snapshot"); return nil }); ok || err != nil {
			t.Errorf("no snapshot: ok %v, err %v", ok, err)
		}
		for i := range 10 {
			if _, err := l.AppendWait(fmt.Appendf(nil, "rec%d", i+1)); err != nil {
				t.Fatal(err)
			}
		}
		big := bytes.Repeat([]byte("state@4 "), 100_000) // several pages
		// NB: a clone: Pebble's test filesystems, built with invariants
		// (as under -race), scribble over the buffers written.
		if err := l.SaveSnapshot(4, bytes.Clone(big)); err != nil {
			t.Fatal(err)
		}
		if err := l.SaveSnapshot(8, []byte("state@8")); err != nil {
			t.Fatal(err)
		}
		// The newest file damaged: its checksum fails, the older one is lent.
		f, err := fs.OpenReadWrite(l.snapshotPath(8), vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("X"), 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		var seq uint64
		var lent []byte
		ok, err := l.ReadLatestSnapshot(func(s uint64, data []byte) error {
			seq, lent = s, bytes.Clone(data)
			return nil
		})
		if !ok || err != nil || seq != 4 || !bytes.Equal(lent, big) || fmt.Sprint(l.CorruptSnapshots()) != "[8]" {
			t.Errorf("%T: lent seq %d (%d bytes), ok %v, err %v, skipped %v", fs, seq, len(lent), ok, err, l.CorruptSnapshots())
		}
		if _, data, _, _ := l.LatestSnapshot(); !bytes.Equal(data, big) {
			t.Errorf("%T: LatestSnapshot returns %d bytes, not the lent snapshot's", fs, len(data))
		}
		boom := fmt.Errorf("decode failed")
		if ok, err := l.ReadLatestSnapshot(func(uint64, []byte) error { return boom }); !ok || err != boom {
			t.Errorf("%T: fn's error: ok %v, err %v", fs, ok, err)
		}
		// The checksum is verified while fn runs: fn is first given the
		// damaged snapshot, and what it returned, an error or a panic on
		// the damaged bytes, is set aside for its call with the intact one.
		var calls []uint64
		ok, err = l.ReadLatestSnapshot(func(s uint64, data []byte) error {
			calls = append(calls, s)
			if s == 8 {
				return boom
			}
			return nil
		})
		if !ok || err != nil || fmt.Sprint(calls) != "[8 4]" {
			t.Errorf("%T: an error on the damaged snapshot: calls %v, ok %v, err %v", fs, calls, ok, err)
		}
		calls = nil
		ok, err = l.ReadLatestSnapshot(func(s uint64, data []byte) error {
			calls = append(calls, s)
			if s == 8 {
				panic("index out of range on damaged bytes")
			}
			return nil
		})
		if !ok || err != nil || fmt.Sprint(calls) != "[8 4]" {
			t.Errorf("%T: a panic on the damaged snapshot: calls %v, ok %v, err %v", fs, calls, ok, err)
		}
		// A panic on an intact snapshot is a bug: it is not set aside.
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "a bug") {
					t.Errorf("%T: a panic on the intact snapshot: recovered %v", fs, r)
				}
			}()
			_, _ = l.ReadLatestSnapshot(func(uint64, []byte) error { panic("a bug") })
		}()
		closeLog(t, l)
	}
}

// TestMappedFaultIsAnError: reading a mapping past the end of a file that
// shrank under it faults (SIGBUS), as an I/O error under it would; the
// guard makes that an error instead of the end of the process.
func TestMappedFaultIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 3*os.Getpagesize()), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, unmap, ok := mapFile(f, uint64(3*os.Getpagesize()))
	if !ok {
		t.Skip("no mapped files here")
	}
	defer unmap()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	var sum byte
	err = guardFaults(func() error {
		for _, b := range data {
			sum += b
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "fault reading a mapped snapshot file") {
		t.Errorf("reading a mapping past its file's end: %v", err)
	}
	// A panic that is not a fault is not the guard's to stop.
	defer func() {
		if r := recover(); r != "not a fault" {
			t.Errorf("recovered %v, want the panic passed on", r)
		}
	}()
	_ = guardFaults(func() error { panic("not a fault") })
}
