package wal

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/batchrepr"
	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// DamagedError is a log Open refuses: damage that is provably not a torn
// tail (see doc.go, "Torn tail or corruption"). File, Offset and
// LastIntactSeq say where, when Pebble found it in a WAL file; otherwise
// File is empty and Cause says what was found (an SSTable or MANIFEST
// checksum, or acknowledged records missing from the end).
type DamagedError struct {
	File          string // the WAL file, e.g. "000006.log"
	Offset        int64  // byte offset of the first record that cannot be read
	LastIntactSeq uint64 // the last record sequence read intact before it in that file (0: none)
	// Acknowledged is set when records are missing from the log's end: the
	// last sequence the acknowledgement mark says was acknowledged.
	Acknowledged uint64
	Cause        error // Pebble's error, or what is missing
}

func (e *DamagedError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("wal: the store is damaged (%v); nothing was served: restore from a backup, or write the intact prefix to a new data dir with oja wal salvage", e.Cause)
	}
	intact := "no record of that file precedes it"
	if e.LastIntactSeq > 0 {
		intact = "the last intact record before it is seq " + strconv.FormatUint(e.LastIntactSeq, 10)
	}
	return fmt.Sprintf("wal: the log is damaged: %s at byte %d cannot be read and data synced after it exists, "+
		"so this is corruption, not a torn tail; %s; nothing was served or changed: restore from a backup, or write the intact prefix to a new data dir with oja wal salvage",
		e.File, e.Offset, intact)
}

func (e *DamagedError) Unwrap() error { return e.Cause }

// damaged turns Pebble's corruption error at Open into a DamagedError
// naming the WAL file and offset when the damage is in a WAL file.
func damaged(fs vfs.FS, dir string, cause error) error {
	if !pebble.IsCorruptionError(cause) {
		return cause
	}
	e := &DamagedError{Cause: cause}
	wals, err := walFiles(fs, dir)
	if err != nil {
		return e
	}
	for _, w := range wals {
		if offset, last, bad := scanWAL(fs, fs.PathJoin(dir, w.name), w.num); bad {
			e.File, e.Offset, e.LastIntactSeq = w.name, offset, last
			break
		}
	}
	return e
}

// newRecordReader is record.NewReader with the log number given as a plain
// integer: its parameter's type lives in an internal Pebble package.
func newRecordReader(r io.Reader, logNum uint64) *record.Reader {
	fn := reflect.ValueOf(record.NewReader)
	num := reflect.ValueOf(logNum).Convert(fn.Type().In(1))
	return fn.Call([]reflect.Value{reflect.ValueOf(r), num})[0].Interface().(*record.Reader)
}

// scanWAL reads one WAL file with Pebble's record reader (which confirms
// corruption from the sync offsets later chunks carry) and reports where
// the first confirmed damage is and the last record sequence before it.
func scanWAL(fs vfs.FS, path string, logNum uint64) (offset int64, lastSeq uint64, bad bool) {
	offset, lastSeq, err := readWAL(fs, path, logNum, 0, true)
	return offset, lastSeq, errors.Is(err, record.ErrInvalidChunk) || errors.Is(err, record.ErrZeroedChunk)
}

// readWAL reads one WAL file from the block boundary start to its end and
// returns the offset of the first record it could not read, the last
// record sequence before it (when seqs is set; else 0: the batches are
// only checked, not parsed), and why it stopped: io.EOF at a clean end;
// record.ErrUnexpectedEOF at an incomplete write nothing later vouches for
// (a torn tail); record.ErrInvalidChunk or ErrZeroedChunk at damage a
// later chunk proves was synced. A reader that starts mid-file skips the
// chunks of a record begun before start.
func readWAL(fs vfs.FS, path string, logNum uint64, start int64, seqs bool) (offset int64, lastSeq uint64, err error) {
	f, err := fs.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	rr := newRecordReader(io.NewSectionReader(f, start, max(info.Size()-start, 0)), logNum)
	for {
		offset = start + rr.Offset()
		r, err := rr.Next()
		if err == nil {
			if !seqs {
				_, err = io.Copy(io.Discard, r)
				if err == nil {
					continue
				}
			} else {
				var batch []byte
				if batch, err = io.ReadAll(r); err == nil {
					lastSeq = max(lastSeq, batchLastRecord(batch))
					continue
				}
			}
		}
		return offset, lastSeq, err
	}
}

// lastBlock is the offset of the 32 KiB block holding a file's last byte.
func lastBlock(fs vfs.FS, path string) (int64, error) {
	info, err := fs.Stat(path)
	if err != nil {
		return 0, err
	}
	return max(info.Size()-1, 0) / walBlockBytes * walBlockBytes, nil
}

// TornTail is the end of a WAL file that holds no complete record: what a
// crash leaves of the write in flight. Pebble drops it when it opens the
// store.
type TornTail struct {
	File   string // the WAL file's base name, e.g. "000012.log"
	Offset int64  // where the last complete record ends
	Size   int64  // the file's size
}

// TornTails reads every WAL file in the store dir with Pebble's record
// reader and returns those that end in a torn write. Damage that later
// records prove was synced is not a torn tail: Open refuses it
// (DamagedError).
func TornTails(fs vfs.FS, dir string) ([]TornTail, error) {
	if fs == nil {
		fs = vfs.Default
	}
	wals, err := walFiles(fs, dir)
	if err != nil {
		return nil, err
	}
	var tails []TornTail
	for _, w := range wals {
		path := fs.PathJoin(dir, w.name)
		offset, _, err := readWAL(fs, path, w.num, 0, false)
		if !errors.Is(err, record.ErrUnexpectedEOF) {
			continue
		}
		info, statErr := fs.Stat(path)
		if statErr != nil {
			return nil, statErr
		}
		tails = append(tails, TornTail{File: w.name, Offset: offset, Size: info.Size()})
	}
	return tails, nil
}

// walNum is the log number of a WAL file's name ("000012.log": 12).
func walNum(name string) (uint64, bool) {
	n, ok := strings.CutSuffix(name, ".log")
	if !ok {
		return 0, false
	}
	num, err := strconv.ParseUint(n, 10, 64)
	return num, err == nil
}

type walFile struct {
	name string
	num  uint64
}

// walFiles lists the store's WAL files in log number order.
func walFiles(fs vfs.FS, dir string) ([]walFile, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	var wals []walFile
	for _, name := range names {
		if num, ok := walNum(name); ok {
			wals = append(wals, walFile{name, num})
		}
	}
	slices.SortFunc(wals, func(a, b walFile) int { return cmp.Compare(a.num, b.num) })
	return wals, nil
}

// batchLastRecord is the highest record sequence a WAL batch sets (0 if
// none).
func batchLastRecord(repr []byte) uint64 {
	var last uint64
	br := batchrepr.Read(repr)
	for {
		_, key, _, ok, err := br.Next()
		if !ok || err != nil {
			return last
		}
		if len(key) == 9 && key[0] == recordPrefix {
			last = max(last, binary.BigEndian.Uint64(key[1:]))
		}
	}
}

// Pebble's WAL chunk wire format, as far as vouchedDamage reads it (the
// constants are "part of the wire format and should not be changed" in
// pebble/record): a walSync chunk header is checksum (4) length (2) type
// (1) log number (4) synced offset (8), the checksum a masked CRC-32C of
// type..payload, and no chunk straddles a 32 KiB block.
const (
	walSyncHeaderBytes = 19
	walSyncFirstType   = 9  // walSyncFullChunkEncoding
	walSyncLastType    = 12 // walSyncLastChunkEncoding
)

// vouchedDamage closes the gap Pebble's reader leaves: at an unreadable
// chunk it looks for a vouching chunk only from the next 32 KiB block on,
// so damage in a WAL's last block — up to 32 KiB of synced records — read
// as a torn tail after a crash (TestCorruptionInjection found it). For each
// WAL file whose reading ends in what Pebble would call a torn tail at
// offset x, it searches every byte position after x for an intact walSync
// chunk of that log whose synced offset is beyond x: one written after the
// bytes at x had been synced, which proves they were. A torn write cannot
// have one (every chunk written after it carries a synced offset at or
// before it), so this never refuses a true torn tail.
func vouchedDamage(fs vfs.FS, dir string) (*DamagedError, error) {
	wals, err := walFiles(fs, dir)
	if err != nil {
		return nil, err
	}
	for _, w := range wals {
		path := fs.PathJoin(dir, w.name)
		// NB: a file whose last block reads cleanly to its end has no torn
		// tail, so only a file that ends in one (after a crash) is read
		// whole: the common start does not pay a second read of the WAL.
		last, err := lastBlock(fs, path)
		if err != nil {
			return nil, err
		}
		if _, _, err := readWAL(fs, path, w.num, last, false); errors.Is(err, io.EOF) {
			continue
		}
		x, _, err := readWAL(fs, path, w.num, 0, false)
		if !errors.Is(err, record.ErrUnexpectedEOF) {
			continue
		}
		tail, err := readFrom(fs, path, x)
		if err != nil {
			return nil, err
		}
		if p, synced, ok := findVouchingChunk(tail, x, uint32(w.num)); ok {
			_, lastSeq, _ := readWAL(fs, path, w.num, 0, true)
			return &DamagedError{File: w.name, Offset: x, LastIntactSeq: lastSeq,
				Cause: fmt.Errorf("an intact chunk at byte %d was written after %d bytes of the file had been synced", x+p, synced)}, nil
		}
	}
	return nil, nil
}

// findVouchingChunk returns the position in tail (the file from byte x on)
// of an intact walSync chunk of log logNum whose synced offset is beyond x.
func findVouchingChunk(tail []byte, x int64, logNum uint32) (pos int64, synced uint64, ok bool) {
	for p := 1; p+walSyncHeaderBytes <= len(tail); p++ {
		typ := tail[p+6]
		if typ < walSyncFirstType || typ > walSyncLastType || binary.LittleEndian.Uint32(tail[p+7:]) != logNum {
			continue
		}
		length := int(binary.LittleEndian.Uint16(tail[p+4:]))
		end := p + walSyncHeaderBytes + length
		abs := x + int64(p)
		blockEnd := (abs/walBlockBytes + 1) * walBlockBytes
		if end > len(tail) || x+int64(end) > blockEnd {
			continue
		}
		c := crc32.Checksum(tail[p+6:end], castagnoli)
		if binary.LittleEndian.Uint32(tail[p:]) != (c>>15|c<<17)+0xa282ead8 {
			continue
		}
		if s := binary.LittleEndian.Uint64(tail[p+11:]); s > uint64(x) {
			return int64(p), s, true
		}
	}
	return 0, 0, false
}

func readFrom(fs vfs.FS, path string, offset int64) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, max(info.Size()-offset, 0))
	if _, err := f.ReadAt(b, offset); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}
