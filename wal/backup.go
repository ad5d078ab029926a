package wal

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Backup writes a consistent copy of the store to dir (Checkpoint) and,
// with copy, makes every file of it the copy's own: on the same file
// system a checkpoint hard-links the store's immutable tables, so one bad
// sector under a shared file would damage the store and its backup alike —
// and a backup is what an operator restores after damage. Without copy it
// is the checkpoint, fast and small, for a copy that is moved elsewhere
// at once.
func (l *Log) Backup(dir string, copy bool) error {
	if err := l.Checkpoint(dir); err != nil {
		return err
	}
	if !copy || l.opts.FS != vfs.Default {
		return nil // an in-memory file system (tests) links nothing
	}
	if err := ownFiles(dir); err != nil {
		return fmt.Errorf("wal: backup to %s: %w", dir, err)
	}
	return nil
}

// ownFiles replaces every file under dir that has other hard links by a
// copy of its own, written and synced before it takes the name.
func ownFiles(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok || !info.Mode().IsRegular() || st.Nlink <= 1 {
			return nil
		}
		return copyOver(path, info.Mode().Perm())
	})
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := syncDir(vfs.Default, d); err != nil {
			return err
		}
	}
	return nil
}

// copyOver replaces path by a copy of its content.
func copyOver(path string, perm fs.FileMode) error {
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := path + ".copy"
	dst, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		os.Remove(tmp)
		return err
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		os.Remove(tmp)
		return err
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
