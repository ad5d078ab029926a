package wal

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The clean-stop mark of earlier versions: the last sequence a clean Close
// acknowledged, beside the store. The acknowledgement mark (ackmark.go)
// supersedes it; a store that has only the old mark is checked against it
// once, and the first writable Open replaces it.

const cleanStopHeader = "oja wal clean stop v1 seq "

// readCleanStop returns the mark's sequence, if a mark is there. A mark
// that does not verify is an error: it is damage too.
func readCleanStop(fs vfs.FS, dir string) (seq uint64, ok bool, err error) {
	f, err := fs.Open(legacyCleanStopPath(dir))
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
		return 0, false, fmt.Errorf("the clean-stop mark %s is damaged", legacyCleanStopPath(dir))
	}
	return seq, true, nil
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
