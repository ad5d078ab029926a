package wal

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func links(t *testing.T, path string) uint64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(info.Sys().(*syscall.Stat_t).Nlink)
}

// TestOwnFiles: a backup's files that are hard links into the live store
// (what a checkpoint on the same file system makes of the tables) become
// files of their own with the same content; the live store's are untouched.
func TestOwnFiles(t *testing.T) {
	live, backup := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(backup, "snapshots"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"000005.sst": "table", "snapshots/9.snap": "snapshot"} {
		src := filepath.Join(live, filepath.Base(name))
		if err := os.WriteFile(src, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(src, filepath.Join(backup, name)); err != nil {
			t.Skipf("no hard links here: %v", err)
		}
	}
	if err := os.WriteFile(filepath.Join(backup, "MANIFEST-000001"), []byte("own"), 0o644); err != nil {
		t.Fatal(err)
	}
	if links(t, filepath.Join(backup, "000005.sst")) != 2 {
		t.Fatal("the test's link was not made")
	}
	if err := ownFiles(backup); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"000005.sst": "table", "snapshots/9.snap": "snapshot", "MANIFEST-000001": "own"} {
		path := filepath.Join(backup, name)
		got, err := os.ReadFile(path)
		if err != nil || string(got) != body || links(t, path) != 1 {
			t.Errorf("%s: %q %v, %d links; want %q and 1 link", name, got, err, links(t, path), body)
		}
	}
	if links(t, filepath.Join(live, "000005.sst")) != 1 {
		t.Error("the live file still has a second link")
	}
	if entries, _ := os.ReadDir(backup); len(entries) != 3 {
		t.Errorf("left over: %v", entries)
	}
}
