package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Snapshot data lives in files of its own, in <store>/snapshots, named by
// sequence; the snapshot key in Pebble holds only a reference: the file's
// size and CRC-32C. A snapshot of a million quotes is ~300 MB: as a Pebble
// value it was written twice (WAL, then a flush), replayed from the WAL at
// the next start (1.2 s), decompressed and copied on every read (2.3 s) and
// rewritten by compactions; as a file it is written once and read once.
//
// Order of writes: the file (synced, renamed, directory synced) before its
// key, so a key never names a file that is not durable; a crash in
// between leaves an orphan file, which the next writable Open removes. On
// deletion the keys go first, then the files.

const (
	snapshotDir = "snapshots"
	// snapshotRefMarker starts a reference value; a value from before
	// snapshot files holds the data itself, which starts with the engine's
	// snapshot version (never 0xFF).
	snapshotRefMarker = 0xFF
	snapshotRefBytes  = 1 + 8 + 4
	snapshotFileExt   = ".snap"
	// snapshotBytesPerSync is how much of a snapshot file is written
	// between two syncs.
	snapshotBytesPerSync = 1 << 20
)

func (l *Log) snapshotPath(seq uint64) string {
	return l.opts.FS.PathJoin(l.dir, snapshotDir, fmt.Sprintf("%020d%s", seq, snapshotFileExt))
}

// snapshotRef is a snapshot key's value payload for data in a file.
func snapshotRef(data []byte) []byte {
	ref := make([]byte, snapshotRefBytes)
	ref[0] = snapshotRefMarker
	binary.BigEndian.PutUint64(ref[1:], uint64(len(data)))
	binary.BigEndian.PutUint32(ref[9:], checksumPreemptibly(data))
	return ref
}

// snapshotData returns the verified data of the snapshot at seq, given its
// key's value; reason says why it is not intact ("" when it is). The data
// is the caller's (a copy when an older store held it in the value).
func (l *Log) snapshotData(seq uint64, value []byte) (data []byte, reason string) {
	data, _, verify, reason := l.openSnapshot(seq, value, false)
	if reason == "" {
		reason = verify()
	}
	if reason != "" {
		return nil, reason
	}
	return data, ""
}

// openSnapshot reads the snapshot at seq, given its key's value, all but
// the check of a file's checksum: verify makes that check (every byte
// read, a fault guarded) and says why the data is not intact, "" when it
// is; a snapshot held in its key's value was checked with the value's
// frame, and its verify says "". With mapped, a snapshot file may be
// mapped read-only into memory (see mapFile), valid until release is
// called. release is never nil.
func (l *Log) openSnapshot(seq uint64, value []byte, mapped bool) (data []byte, release func(), verify func() string, reason string) {
	noop := func() {}
	intact := func() string { return "" }
	release = noop
	payload, ok := parseFrame(value)
	if !ok {
		return nil, release, intact, "checksum mismatch"
	}
	if len(payload) == 0 || payload[0] != snapshotRefMarker {
		return slices.Clone(payload), release, intact, ""
	}
	if len(payload) != snapshotRefBytes {
		return nil, release, intact, "malformed file reference"
	}
	size, sum := binary.BigEndian.Uint64(payload[1:]), binary.BigEndian.Uint32(payload[9:])
	f, err := l.opts.FS.Open(l.snapshotPath(seq))
	if err != nil {
		return nil, release, intact, fmt.Sprintf("its file cannot be opened: %v", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || uint64(info.Size()) != size {
		return nil, release, intact, fmt.Sprintf("its file %s does not hold the %d bytes saved", l.snapshotPath(seq), size)
	}
	ok = false
	if mapped {
		data, release, ok = mapFile(f, size)
	}
	if !ok {
		data, release = make([]byte, size), noop
		if _, err := io.ReadFull(f, data); err != nil {
			return nil, release, intact, fmt.Sprintf("its file cannot be read: %v", err)
		}
	}
	verify = func() string {
		// The checksum reads every byte: a mapped page that cannot be
		// read faults here.
		var got uint32
		if err := guardFaults(func() error { got = checksumPreemptibly(data); return nil }); err != nil {
			return fmt.Sprintf("its file cannot be read: %v", err)
		}
		if got != sum {
			return fmt.Sprintf("its file %s fails its checksum", l.snapshotPath(seq))
		}
		return ""
	}
	return data, release, verify, ""
}

// checksumChunk is how many bytes checksumPreemptibly sums in one call.
const checksumChunk = 1 << 20

// checksumPreemptibly is crc32.Checksum(data, castagnoli), a chunk at a
// time: the standard library sums in assembly, which the runtime cannot
// preempt, so one call over a snapshot of hundreds of MB held up every
// garbage collection that began meanwhile, its other threads spinning
// until the call returned (a second of CPU in a start from a 1M-quote
// snapshot, runtime.suspendG in its profile). Saving a snapshot, which
// the log follower does while the service serves, sums it the same way.
func checksumPreemptibly(data []byte) uint32 {
	var sum uint32
	for len(data) > 0 {
		n := min(len(data), checksumChunk)
		sum = crc32.Update(sum, castagnoli, data[:n])
		data = data[n:]
	}
	return sum
}

// guardFaults runs fn, which reads a mapped file, with faults turned into
// panics (debug.SetPanicOnFault) and returns such a fault as an error: an
// I/O error under a mapping (a damaged sector) would otherwise kill the
// process with SIGBUS instead of saying which snapshot cannot be read.
// Only fn's own goroutine is guarded.
func guardFaults(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if fault, ok := r.(interface{ Addr() uintptr }); ok {
				err = fmt.Errorf("wal: fault reading a mapped snapshot file at address %#x: %v", fault.Addr(), r)
				return
			}
			panic(r)
		}
	}()
	return fn()
}

// writeSnapshotFile writes data durably as the file of the snapshot at seq.
func (l *Log) writeSnapshotFile(seq uint64, data []byte) error {
	fs := l.opts.FS
	dir := fs.PathJoin(l.dir, snapshotDir)
	if err := createDurably(fs, dir); err != nil {
		return err
	}
	path := l.snapshotPath(seq)
	tmp := path + ".tmp"
	raw, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	// NB: synced as it is written, a MiB at a time, rather than hundreds of
	// MiB at the end: one large flush would queue the log's own fsyncs (the
	// acknowledgements) behind it on the same disk.
	f := vfs.NewSyncingFile(raw, vfs.SyncingFileOptions{BytesPerSync: snapshotBytesPerSync})
	for rest := data; len(rest) > 0 && err == nil; {
		n := min(len(rest), snapshotBytesPerSync)
		_, err = f.Write(rest[:n])
		rest = rest[n:]
	}
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = fs.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(fs, dir)
	}
	if err != nil {
		_ = fs.Remove(tmp)
	}
	return err
}

// removeSnapshotFiles removes the files of snapshots whose keys are gone
// (absent files are fine). A failure leaves an orphan that the next Open
// removes, so it is not an error of the operation.
func (l *Log) removeSnapshotFiles(keep func(seq uint64) bool) {
	fs := l.opts.FS
	dir := fs.PathJoin(l.dir, snapshotDir)
	names, err := fs.List(dir)
	if err != nil {
		return
	}
	for _, name := range names {
		seq, ok := snapshotFileSeq(name)
		if !ok || !keep(seq) {
			_ = fs.Remove(fs.PathJoin(dir, name))
		}
	}
}

// removeOrphanSnapshotFiles removes snapshot files (and leftover temporary
// files) that no snapshot key refers to: what a crash between writing a
// file and its key, or between deleting a key and its file, leaves.
func (l *Log) removeOrphanSnapshotFiles() error {
	seqs, err := l.snapshotSeqs()
	if err != nil {
		return err
	}
	keys := make(map[uint64]bool, len(seqs))
	for _, s := range seqs {
		keys[s] = true
	}
	l.removeSnapshotFiles(func(seq uint64) bool { return keys[seq] })
	return nil
}

func snapshotFileSeq(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, snapshotFileExt)
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseUint(digits, 10, 64)
	return seq, err == nil
}

// snapshotFilesBytes is the summed size of the snapshot files.
func (l *Log) snapshotFilesBytes() uint64 {
	fs := l.opts.FS
	dir := fs.PathJoin(l.dir, snapshotDir)
	names, err := fs.List(dir)
	if err != nil {
		return 0
	}
	var total uint64
	for _, name := range names {
		if info, err := fs.Stat(fs.PathJoin(dir, name)); err == nil {
			total += uint64(info.Size())
		}
	}
	return total
}

// copySnapshotFiles links (or copies) every snapshot file into the store
// dir to, for Checkpoint.
func (l *Log) copySnapshotFiles(to string) error {
	fs := l.opts.FS
	dir := fs.PathJoin(l.dir, snapshotDir)
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	target := fs.PathJoin(to, snapshotDir)
	if err := createDurably(fs, target); err != nil {
		return err
	}
	for _, name := range names {
		if _, ok := snapshotFileSeq(name); !ok {
			continue
		}
		from, dst := fs.PathJoin(dir, name), fs.PathJoin(target, name)
		if err := fs.Link(from, dst); err != nil {
			if err := copyFile(fs, from, dst, 1<<62); err != nil {
				return err
			}
		}
	}
	return syncDir(fs, target)
}
