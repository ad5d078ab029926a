package wal

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The clean-stop mark closes the torn-tail window for stops (doc.go, "Torn
// tail or corruption"): a clean Close writes, beside the store, the last
// sequence it acknowledged, in a file of its own (other sectors than the
// WAL's). The next Open checks that the log still holds it — damage to the
// last records written before a clean stop reads as a torn tail to Pebble,
// but it is refused here — and removes the mark before accepting writes,
// so a crash after that start is judged as a crash again.

// cleanStopPath is the mark's file: a sibling of the store directory.
func cleanStopPath(dir string) string { return filepath.Clean(dir) + ".clean-stop" }

const cleanStopHeader = "oja wal clean stop v1 seq "

// writeCleanStop records seq durably as the last acknowledged sequence.
func writeCleanStop(fs vfs.FS, dir string, seq uint64) error {
	path := cleanStopPath(dir)
	body := cleanStopHeader + strconv.FormatUint(seq, 10)
	body += " crc " + strconv.FormatUint(uint64(crc32.Checksum([]byte(body), castagnoli)), 16) + "\n"
	tmp := path + ".tmp"
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err = f.Write([]byte(body)); err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = fs.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(fs, filepath.Dir(path))
	}
	return err
}

// readCleanStop returns the mark's sequence, if a mark is there. A mark
// that does not verify is an error: it is damage too.
func readCleanStop(fs vfs.FS, dir string) (seq uint64, ok bool, err error) {
	f, err := fs.Open(cleanStopPath(dir))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, false, nil
		}
		return 0, false, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return 0, false, err
	}
	text := strings.TrimSuffix(string(raw), "\n")
	body, sum, found := strings.Cut(text, " crc ")
	want, perr := strconv.ParseUint(sum, 16, 32)
	digits, isMark := strings.CutPrefix(body, cleanStopHeader)
	seq, serr := strconv.ParseUint(digits, 10, 64)
	if !found || !isMark || perr != nil || serr != nil || uint32(want) != crc32.Checksum([]byte(body), castagnoli) {
		return 0, false, fmt.Errorf("the clean-stop mark %s is damaged", cleanStopPath(dir))
	}
	return seq, true, nil
}

// removeCleanStop removes the mark durably (no mark: nothing to do).
func removeCleanStop(fs vfs.FS, dir string) error {
	path := cleanStopPath(dir)
	if err := fs.Remove(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return syncDir(fs, filepath.Dir(path))
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if closeErr := d.Close(); err == nil {
		err = closeErr
	}
	return err
}
