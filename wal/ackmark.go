package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The acknowledgement mark closes the last window of "Torn tail or
// corruption" (doc.go): damage to the last group commit before a crash
// has nothing written after it to vouch for it, so it reads as a torn tail.
// The mark is the last acknowledged sequence, kept beside the store in a
// file of its own (other sectors than the WAL's) and synced before any
// Append's done is called: every acknowledged record is at or below it, so
// a log that no longer reaches it is damaged, whatever Pebble concluded.
// It never claims more than is durable (it is written after the WAL's
// sync), so a true torn tail — unacknowledged records — is never refused.
//
// Format: two 512-byte slots (one sector each), written alternately, so a
// torn write of one leaves the other:
//
//	"OJA-ACK1" | big-endian uint64 seq | big-endian uint64 generation | crc32c of the 24 bytes before
//
// The valid slot with the higher generation is the mark. A file with no
// valid slot is damage too.
//
// Cost: one small overwrite and fdatasync per group commit, pipelined with
// the next commit's WAL sync (see marker): it adds that sync's latency to
// an acknowledgement, not to the throughput.

const (
	ackMarkSlotBytes = 512
	ackMarkMagic     = "OJA-ACK1"
	ackMarkBodyBytes = 8 + 8 + 8
)

// ackMarkPath is the mark's file: a sibling of the store directory.
func ackMarkPath(dir string) string { return filepath.Clean(dir) + ".acked" }

// legacyCleanStopPath is the mark of versions that wrote it only on a clean
// stop; read when there is no ack mark yet.
func legacyCleanStopPath(dir string) string { return filepath.Clean(dir) + ".clean-stop" }

// AcknowledgedSeq returns the last acknowledged sequence the store dir's
// acknowledgement mark holds (ok false: no mark, as for a store from before
// marks). A damaged mark is an error.
func AcknowledgedSeq(fs vfs.FS, dir string) (seq uint64, ok bool, err error) {
	if fs == nil {
		fs = vfs.Default
	}
	return readAckMark(fs, dir)
}

// readAckMark returns the acknowledged sequence the mark holds, if there is
// a mark. A mark with no valid slot is an error: it is damage.
func readAckMark(fs vfs.FS, dir string) (seq uint64, ok bool, err error) {
	f, err := fs.Open(ackMarkPath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return readCleanStop(fs, dir)
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	seq, _, found, err := newestAckSlot(f)
	if err != nil {
		return 0, false, err
	}
	if !found {
		return 0, false, fmt.Errorf("the acknowledgement mark %s is damaged (no valid slot)", ackMarkPath(dir))
	}
	return seq, true, nil
}

// newestAckSlot reads the mark's two slots and returns the valid one with
// the higher generation (found false: neither is valid, or the file is
// empty).
func newestAckSlot(f io.ReaderAt) (seq, gen uint64, found bool, err error) {
	buf := make([]byte, 2*ackMarkSlotBytes)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, false, err
	}
	for slot := 0; slot*ackMarkSlotBytes < n; slot++ {
		s, g, valid := parseAckSlot(buf[slot*ackMarkSlotBytes : min(n, (slot+1)*ackMarkSlotBytes)])
		if valid && (!found || g > gen) {
			seq, gen, found = s, g, true
		}
	}
	return seq, gen, found, nil
}

func parseAckSlot(b []byte) (seq, gen uint64, ok bool) {
	if len(b) < ackMarkBodyBytes+4 || string(b[:8]) != ackMarkMagic {
		return 0, 0, false
	}
	body := b[:ackMarkBodyBytes]
	if binary.BigEndian.Uint32(b[ackMarkBodyBytes:]) != crc32.Checksum(body, castagnoli) {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(b[8:]), binary.BigEndian.Uint64(b[16:]), true
}

// ackMark writes the mark. Not safe for concurrent use: the marker
// goroutine (or Open, Close) is its only writer.
type ackMark struct {
	file vfs.File
	gen  uint64
	slot [ackMarkSlotBytes]byte
}

// openAckMark opens (creating) the mark of dir for writing and writes seq.
func openAckMark(fs vfs.FS, dir string, seq uint64) (*ackMark, error) {
	path := ackMarkPath(dir)
	f, err := fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	// Continue the generations already in the file, so the new slot wins.
	_, gen, _, err := newestAckSlot(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	m := &ackMark{file: f, gen: gen}
	if err := m.write(seq); err != nil {
		f.Close()
		return nil, err
	}
	if err := syncDir(fs, filepath.Dir(path)); err != nil {
		f.Close()
		return nil, err
	}
	// The old clean-stop mark is superseded.
	if err := fs.Remove(legacyCleanStopPath(dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		f.Close()
		return nil, err
	}
	return m, nil
}

// write makes seq the mark, durably (into the slot not holding the
// current mark).
func (m *ackMark) write(seq uint64) error {
	m.gen++
	b := m.slot[:]
	copy(b, ackMarkMagic)
	binary.BigEndian.PutUint64(b[8:], seq)
	binary.BigEndian.PutUint64(b[16:], m.gen)
	binary.BigEndian.PutUint32(b[ackMarkBodyBytes:], crc32.Checksum(b[:ackMarkBodyBytes], castagnoli))
	if _, err := m.file.WriteAt(b, int64(m.gen%2)*ackMarkSlotBytes); err != nil {
		return err
	}
	return m.file.SyncData()
}

func (m *ackMark) close() error { return m.file.Close() }
