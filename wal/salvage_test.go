package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Salvage of a WAL damaged in the middle: the new store holds exactly the
// intact prefix, the damaged store is untouched, and what is lost is known:
// the clean-stop mark's last acknowledged sequence and the records still
// readable past the damage.
func TestSalvageDamagedWAL(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	path := storeOf300(t, store)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := len(b) / 3
	for i := range 64 {
		b[off+i] ^= 0x5a
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(dir, "salvaged")
	res, err := Salvage(store, to)
	if err != nil {
		t.Fatal(err)
	}
	var d *DamagedError
	if !errors.As(res.Damage, &d) || d.File != filepath.Base(path) {
		t.Fatalf("damage %v, want a DamagedError in %s", res.Damage, filepath.Base(path))
	}
	if res.LastIntact == 0 || res.LastIntact >= 300 || res.LastIntact != d.LastIntactSeq || res.FirstRetained != 1 {
		t.Fatalf("intact prefix 1..%d (first %d); the damage says the last intact record is %d", res.LastIntact, res.FirstRetained, d.LastIntactSeq)
	}
	if res.Acknowledged != 300 {
		t.Errorf("acknowledged %d, want 300 (the clean-stop mark)", res.Acknowledged)
	}
	if len(res.PastDamage) < 150 {
		t.Errorf("%d records read past the damage; most of the 2/3 after it should be", len(res.PastDamage))
	}
	payload := []byte(strings.Repeat("an encoded quote event with its allocations ", 4))
	for seq, rec := range res.PastDamage {
		if seq <= res.LastIntact || seq > 300 || rec != nil && !bytes.Equal(rec, payload) {
			t.Fatalf("past the damage: seq %d %q", seq, rec)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
		t.Error("the damaged store was changed")
	}

	l, err := Open(to, Options{Sync: true})
	if err != nil {
		t.Fatalf("the salvaged store does not open: %v", err)
	}
	n := uint64(0)
	if err := l.Replay(0, func(seq uint64, rec []byte) error {
		n++
		if !bytes.Equal(rec, payload) {
			t.Fatalf("seq %d: %q", seq, rec)
		}
		return nil
	}); err != nil || n != res.LastIntact || l.LastSeq() != res.LastIntact {
		t.Fatalf("salvaged store: %d records (last %d), %v; want 1..%d", n, l.LastSeq(), err, res.LastIntact)
	}
	if _, err := l.AppendWait([]byte("after salvage")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Salvage(store, to); err == nil {
		t.Error("a salvage into an existing directory succeeded")
	}
}

// An intact log has nothing to salvage: nothing is written.
func TestSalvageIntactLog(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	storeOf300(t, store)
	to := filepath.Join(dir, "salvaged")
	res, err := Salvage(store, to)
	if err != nil || res.Damage != nil || res.LastIntact != 300 {
		t.Fatalf("salvage of an intact log: %+v, %v", res, err)
	}
	if _, err := os.Stat(to); !os.IsNotExist(err) {
		t.Errorf("salvage of an intact log wrote %s", to)
	}
}

// Records acknowledged before a clean stop and missing from the end: the
// copy keeps all the store has, and the loss is the mark's range.
func TestSalvageMissingTail(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	path := storeOf300(t, store)
	b, _ := os.ReadFile(path)
	for i := len(b) - 600; i < len(b); i++ {
		b[i] = 0
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Salvage(store, filepath.Join(dir, "salvaged"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Damage == nil || res.LastIntact == 0 || res.LastIntact >= 300 || res.Acknowledged != 300 {
		t.Fatalf("salvage of a cut tail: %+v", res)
	}
}
