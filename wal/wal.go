package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Limits. Those on a call's input (Record*, Append*) are preconditions,
// asserted: a caller that exceeds one has a bug. The others bound what the
// package itself does, or return an error where their comment says so.
const (
	// RecordBytesMax bounds one record's payload.
	RecordBytesMax = 1 << 20
	// AppendRecordsMax bounds the records of one Append. An Append is committed
	// in one Pebble batch (that is what makes it atomic), so it must fit in one.
	AppendRecordsMax = BatchRecordsMax
	// AppendBytesMax bounds the summed payload bytes of one Append.
	AppendBytesMax = BatchBytesMax
	// BatchRecordsMax bounds the records of one group commit. The committer
	// stops filling a batch before it would exceed this.
	BatchRecordsMax = 4096
	// BatchBytesMax bounds the payload bytes of one group commit. It is kept
	// below Pebble's large-batch threshold (half of memTableBytes) so a group
	// commit never takes Pebble's slower flushable-batch path.
	BatchBytesMax = 8 << 20
	// QueueRecordsMax bounds the records accepted by Append whose done has not
	// yet been called (queued or being committed). An Append that would
	// exceed it blocks until the committer brings the count down: this is the
	// back-pressure that keeps a slow disk from growing memory without bound.
	QueueRecordsMax = 64 * 1024
	// SnapshotBytesMax bounds one snapshot. SaveSnapshot returns an error (not
	// a panic) above it, since state size is an operating condition.
	SnapshotBytesMax = 1 << 30

	// memTableBytes is Pebble's memtable size. See BatchBytesMax.
	memTableBytes = 32 << 20
	// tableBlockBytes is the target size of a table's data block (doc.go).
	tableBlockBytes = 32 << 10
)

// On-disk layout (see doc.go).
const (
	recordPrefix   = 'r'
	snapshotPrefix = 's'
	keyBytes       = 1 + 8
	checksumBytes  = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrFailed is wrapped by every error of a failed log. A log fails on its first
// commit error (or on any Pebble fatal error) and never writes again.
var ErrFailed = errors.New("wal: log failed; restart to recover")

// ErrClosed is given to Appends made after Close, and returned by a second
// Close.
var ErrClosed = errors.New("wal: log closed")

// ErrInUse is returned by Open when another process (or Log) holds the
// directory's lock.
var ErrInUse = errors.New("wal: data dir is in use")

// ErrCorrupt is wrapped by every *CorruptError.
var ErrCorrupt = errors.New("wal: corrupt")

// CorruptError reports the first bad record (or snapshot) found by a read.
type CorruptError struct {
	Snapshot bool   // false: a record; true: a snapshot
	Seq      uint64 // sequence of the bad (or missing) entry
	Reason   string // "checksum mismatch", "missing", "malformed key", ...
}

func (e *CorruptError) Error() string {
	kind := "record"
	if e.Snapshot {
		kind = "snapshot"
	}
	return fmt.Sprintf("wal: corrupt %s at seq %d: %s", kind, e.Seq, e.Reason)
}

// Unwrap makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Options configures Open.
type Options struct {
	// FS is the filesystem; nil means vfs.Default. Tests use
	// vfs.NewCrashableMem() or an errorfs wrapper.
	FS vfs.FS
	// Sync true: done runs only after the records are fsync'd. false: no fsync
	// per commit (benchmarks only; a crash may lose acknowledged records). Close
	// syncs either way.
	Sync bool
	// Logger receives Pebble's messages; nil means quiet (info dropped, errors
	// to the standard log). Whatever is given, Pebble's Fatalf never reaches
	// it as Fatalf: it fails the log and is forwarded as Errorf. See logger.go.
	Logger pebble.Logger
	// ReadOnly opens an existing log for offline inspection: Replay, Stats,
	// LatestSnapshot. Append and SaveSnapshot are bugs on it; Checkpoint
	// returns an error.
	ReadOnly bool
}

// Log is a durable, append-only log of records keyed by dense sequence
// numbers starting at 1. All methods are safe for concurrent use. Call Close
// once, after the caller's last Append.
type Log struct {
	dir  string
	opts Options
	db   *pebble.DB
	lock *pebble.Lock

	// corruptSnapshots are the snapshots the last LatestSnapshot skipped.
	corruptSnapshots atomic.Pointer[[]uint64]

	// writeOptions is pebble.Sync or pebble.NoSync per Options.Sync.
	writeOptions *pebble.WriteOptions

	// failure is the sticky failure (wrapping ErrFailed); nil while healthy.
	// Set once by fail, from the committer, SaveSnapshot or Pebble's Fatalf.
	failure atomic.Pointer[error]

	// lastSeq is the last sequence assigned by Append (or found at Open).
	// Written under mu, read lock-free by LastSeq.
	lastSeq atomic.Uint64

	// durableSeq is the last sequence committed (fsync'd when Sync): every
	// record up to it is durable. Written by the committer only.
	durableSeq atomic.Uint64

	// commits counts group commits (tests and benchmarks report
	// records/commit from it). Written by the committer only.
	commits atomic.Uint64
	// committedRecords counts records made durable; commitLatency times
	// each group commit (write + fsync). See Metrics.
	committedRecords atomic.Uint64
	commitLatency    latencyHistogram

	mu struct {
		sync.Mutex
		// queue holds accepted Appends in sequence order until the
		// committer swaps it out.
		queue []pending
		// outstanding counts records accepted whose done has not run.
		outstanding int
		// closed is set by Close; no Append is accepted after it.
		closed bool
		// work wakes the committer: queue became non-empty, or closed.
		work sync.Cond
		// progress is broadcast after each group commit: it wakes Appends
		// blocked on QueueRecordsMax and SaveSnapshots waiting for
		// durableSeq.
		progress sync.Cond
	}

	// committerDone is closed when the committer goroutine exits.
	committerDone chan struct{}

	// snapshotMu serialises what writes or deletes snapshots (SaveSnapshot,
	// DeleteSnapshots, Truncate) with Checkpoint, so a snapshot key and its
	// file always go together.
	snapshotMu sync.Mutex
	// testAwaitDurable, set by tests only, is called (under mu) each time
	// SaveSnapshot waits for the record at seq to become durable.
	testAwaitDurable func(seq uint64)

	// mark is the acknowledgement mark (ackmark.go); nil when ReadOnly.
	mark *ackMark
	// marks queues the committed groups whose done waits for the mark
	// (with Options.Sync); the marker goroutine drains it.
	marks struct {
		sync.Mutex
		items  []markItem
		free   [][]pending // group copies to reuse
		work   sync.Cond
		closed bool
	}
	markerDone chan struct{}
}

// pending is one accepted Append.
type pending struct {
	recs  [][]byte
	done  func(firstSeq uint64, err error)
	first uint64 // 0 when accepted after the log failed
	bytes int    // summed payload bytes
}

// Open opens (creating if needed, unless ReadOnly) the log in dir. Pebble
// recovers its own WAL first, dropping a torn unsynced tail; LastSeq is then
// the last record found. It fails with "wal: data dir is in use" when another
// process (or another Log in this process) holds dir's LOCK file.
func Open(dir string, opts Options) (*Log, error) {
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	opts.FS = fs
	if opts.ReadOnly {
		if _, err := fs.Stat(dir); err != nil {
			return nil, fmt.Errorf("wal: open %s: %w", dir, err)
		}
	} else if err := createDurably(fs, dir); err != nil {
		return nil, fmt.Errorf("wal: create %s: %w", dir, err)
	}
	// NB: we take Pebble's lock ourselves, before pebble.Open, so that a held
	// lock is told apart from every other Open failure.
	lock, err := lockStore(fs, dir)
	if err != nil {
		return nil, err
	}

	l := &Log{
		dir:           dir,
		opts:          opts,
		lock:          lock,
		writeOptions:  pebble.NoSync,
		committerDone: make(chan struct{}),
	}
	if opts.Sync {
		l.writeOptions = pebble.Sync
	}
	l.mu.work.L = &l.mu.Mutex
	l.mu.progress.L = &l.mu.Mutex

	pebbleOptions := func() *pebble.Options {
		o := &pebble.Options{
			FS:                 fs,
			Logger:             &guardLogger{next: opts.Logger, fail: l.fail},
			FormatMajorVersion: pebble.FormatNewest,
			ReadOnly:           opts.ReadOnly,
			ErrorIfNotExists:   opts.ReadOnly,
			Lock:               lock,
			MemTableSize:       memTableBytes,
		}
		for i := range o.Levels {
			o.Levels[i].BlockSize = tableBlockBytes
		}
		return o
	}
	db, err := openChecked(fs, dir, !opts.ReadOnly, pebbleOptions)
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	l.db = db
	if err := l.Failed(); err != nil {
		_ = l.closePebble()
		return nil, err
	}
	last, marked, err := l.end()
	if err != nil {
		_ = l.closePebble()
		return nil, err
	}
	l.lastSeq.Store(last)
	l.durableSeq.Store(last)
	l.marks.work.L = &l.marks.Mutex
	l.markerDone = make(chan struct{})
	if opts.ReadOnly {
		close(l.committerDone)
		close(l.markerDone)
		return l, nil
	}
	if err := l.startWriting(marked); err != nil {
		_ = l.closePebble()
		return nil, fmt.Errorf("wal: open %s: %w", dir, err)
	}
	return l, nil
}

// end is the log's last sequence, and the last one ever acknowledged (the
// acknowledgement mark's, ackmark.go), which the log must still reach: a
// log that does not is damaged.
func (l *Log) end() (last, marked uint64, err error) {
	// NB: a log whose records do not start at 1 still opens, so that offline
	// tools can inspect it; Replay(0, …) reports the hole.
	if last, err = l.lastRecordSeq(); err != nil {
		return 0, 0, err
	}
	// A log whose retention (or Seed) left no record ends just before its
	// first retained sequence.
	first, err := l.FirstRetained()
	if err != nil {
		return 0, 0, err
	}
	if last < first-1 {
		last = first - 1
	}
	marked, ok, err := readAckMark(l.opts.FS, l.dir)
	if err != nil || ok && last < marked {
		cause := err
		if cause == nil {
			cause = fmt.Errorf("records %d..%d were acknowledged (the acknowledgement mark says so) and are missing from the log's end",
				last+1, marked)
		}
		return 0, 0, fmt.Errorf("wal: open %s: %w", l.dir, &DamagedError{Cause: cause, Acknowledged: marked})
	}
	return last, marked, nil
}

// startWriting opens the acknowledgement mark, removes the snapshot files
// no snapshot record names, and starts the committer (and, with fsync, the
// marker): what a log that writes needs beyond one that is read.
func (l *Log) startWriting(marked uint64) error {
	// NB: the mark is rewritten with what it held, not with the log's end:
	// only a commit's sync makes a record acknowledged.
	var err error
	if l.mark, err = openAckMark(l.opts.FS, l.dir, marked); err != nil {
		return fmt.Errorf("acknowledgement mark: %w", err)
	}
	if err := l.removeOrphanSnapshotFiles(); err != nil {
		_ = l.mark.close()
		return err
	}
	go l.commitLoop()
	if l.opts.Sync {
		go l.markLoop()
	} else {
		close(l.markerDone) // without fsync, Close alone writes the mark
	}
	return nil
}

// newStore reports whether dir holds no Pebble store yet (no MANIFEST).
func newStore(fs vfs.FS, dir string) bool {
	names, err := fs.List(dir)
	if err != nil {
		return false
	}
	for _, name := range names {
		if strings.HasPrefix(name, "MANIFEST-") {
			return false
		}
	}
	return true
}

// isLockConflict reports whether err from pebble.LockDirectory means another
// holder: fcntl's EAGAIN/EACCES (a bare errno, unlike a path error from
// creating the file), MemFS's EAGAIN, or vfs.Default's in-process check.
func isLockConflict(err error) bool {
	var pathErr *os.PathError
	if errors.As(err, &pathErr) {
		return false
	}
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
		return true
	}
	return strings.Contains(err.Error(), "lock held by current process")
}

// LastSeq returns the last sequence number assigned (0 for an empty log).
// NB: an Append assigns its sequences when accepted, before they are durable.
func (l *Log) LastSeq() uint64 { return l.lastSeq.Load() }

// Failed returns nil, or the sticky failure (wrapping ErrFailed).
func (l *Log) Failed() error {
	if p := l.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// fail makes the log failed with cause (first cause wins) and returns the
// sticky failure. Safe from any goroutine, including Pebble's.
func (l *Log) fail(cause error) error {
	err := fmt.Errorf("%w: %w", ErrFailed, cause)
	if errors.Is(cause, ErrFailed) {
		err = cause
	}
	l.failure.CompareAndSwap(nil, &err)
	return l.Failed()
}

// Close stops accepting Appends, waits until every accepted Append has had
// its done called, syncs the WAL (even when !Options.Sync) and closes Pebble.
// It returns the log's failure, if any, else any error from syncing or
// closing. A second Close returns ErrClosed.
// REQUIRES: no Replay, Stats, Checkpoint or snapshot call in progress.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.mu.closed = true
	l.mu.work.Signal()
	l.mu.progress.Broadcast()
	l.mu.Unlock()
	<-l.committerDone
	l.marks.Lock()
	l.marks.closed = true
	l.marks.work.Signal()
	l.marks.Unlock()
	<-l.markerDone

	var err error
	if !l.opts.ReadOnly && l.Failed() == nil {
		if syncErr := l.db.LogData(nil, pebble.Sync); syncErr != nil {
			err = fmt.Errorf("wal: sync on close: %w", syncErr)
		} else if fatal := l.Failed(); fatal != nil {
			err = fatal
		}
	}
	dbErr := l.db.Close()
	if err == nil && dbErr == nil && !l.opts.ReadOnly && l.Failed() == nil {
		// Every accepted Append is durable now (with Sync false too, after
		// the sync above): mark it while the directory lock is still held.
		if markErr := l.mark.write(l.lastSeq.Load()); markErr != nil {
			err = fmt.Errorf("wal: acknowledgement mark: %w", markErr)
		}
	}
	if l.mark != nil {
		if markErr := l.mark.close(); err == nil && markErr != nil {
			err = fmt.Errorf("wal: acknowledgement mark: %w", markErr)
		}
	}
	if lockErr := l.lock.Close(); dbErr == nil {
		dbErr = lockErr
	}
	if dbErr != nil && err == nil {
		err = fmt.Errorf("wal: close %s: %w", l.dir, dbErr)
	}
	if failure := l.Failed(); failure != nil {
		return failure
	}
	return err
}

// closePebble closes the DB, then the directory lock (which Pebble leaves to
// us because we passed it in).
func (l *Log) closePebble() error {
	err := l.db.Close()
	if lockErr := l.lock.Close(); err == nil {
		err = lockErr
	}
	if err != nil {
		return fmt.Errorf("wal: close %s: %w", l.dir, err)
	}
	return nil
}

// putKey writes prefix + big-endian seq into key[:keyBytes].
func putKey(key []byte, prefix byte, seq uint64) {
	key[0] = prefix
	binary.BigEndian.PutUint64(key[1:keyBytes], seq)
}

// makeKey returns prefix + big-endian seq.
func makeKey(prefix byte, seq uint64) []byte {
	key := make([]byte, keyBytes)
	putKey(key, prefix, seq)
	return key
}

// parseKey returns the sequence of a key with the given prefix.
func parseKey(key []byte, prefix byte) (uint64, bool) {
	if len(key) != keyBytes || key[0] != prefix {
		return 0, false
	}
	return binary.BigEndian.Uint64(key[1:]), true
}

// putFrame writes crc32c(payload) little-endian + payload into
// value[:checksumBytes+len(payload)].
func putFrame(value, payload []byte) {
	binary.LittleEndian.PutUint32(value, crc32.Checksum(payload, castagnoli))
	copy(value[checksumBytes:], payload)
}

// parseFrame returns the payload of a framed value whose checksum verifies.
func parseFrame(value []byte) ([]byte, bool) {
	if len(value) < checksumBytes {
		return nil, false
	}
	payload := value[checksumBytes:]
	if binary.LittleEndian.Uint32(value) != crc32.Checksum(payload, castagnoli) {
		return nil, false
	}
	return payload, true
}

// assert panics when cond is false. It guards programmer bugs only; operating
// failures are errors.
func assert(cond bool, format string, args ...any) {
	if !cond {
		panic(fmt.Sprintf("wal: assertion failed: "+format, args...))
	}
}

// createDurably makes dir and any missing parents, and fsyncs the parent of
// each directory it creates: without that, a crash soon after the first
// start could lose the new directory entries — and with them records that
// were acknowledged as durable inside.
func createDurably(fs vfs.FS, dir string) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := fs.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if parent := filepath.Dir(d); parent == d {
			break
		}
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		parent, err := fs.OpenDir(filepath.Dir(missing[i]))
		if err != nil {
			return err
		}
		err = parent.Sync()
		if closeErr := parent.Close(); err == nil {
			err = closeErr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// lockStore takes Pebble's lock on dir; a lock another process holds is
// ErrInUse.
func lockStore(fs vfs.FS, dir string) (*pebble.Lock, error) {
	lock, err := pebble.LockDirectory(dir, fs)
	if err != nil {
		if isLockConflict(err) {
			return nil, fmt.Errorf("%w: %s: %w", ErrInUse, dir, err)
		}
		return nil, fmt.Errorf("wal: lock %s: %w", dir, err)
	}
	return lock, nil
}

// openChecked opens the Pebble store in dir (the Log's or a RaftStore's)
// with the options opts returns, refusing damage Pebble would take for a
// torn tail:
//
//   - A new store (create) is created and closed once before it is opened
//     for use: the WAL Pebble creates with a new store is written before
//     the store's format reaches FormatWALSyncChunks, so its chunks carry
//     no synced offsets, and damage inside it would read as a torn tail
//     (doc.go, "Torn tail or corruption"). Every later WAL carries them.
//   - Damage in a WAL's last block that Pebble would drop as a torn tail
//     is looked for (integrity.go) before Pebble replays and retires the WAL.
func openChecked(fs vfs.FS, dir string, create bool, opts func() *pebble.Options) (*pebble.DB, error) {
	if create && newStore(fs, dir) {
		db, err := pebble.Open(dir, opts())
		if err == nil {
			err = db.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("wal: create %s: %w", dir, err)
		}
	}
	if d, err := vouchedDamage(fs, dir); err != nil || d != nil {
		if d != nil {
			err = d
		}
		return nil, fmt.Errorf("wal: open %s: %w", dir, err)
	}
	db, err := pebble.Open(dir, opts())
	if err != nil {
		return nil, fmt.Errorf("wal: open %s: %w", dir, damaged(fs, dir, err))
	}
	return db, nil
}
