package wal

import (
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Stats describes what is on disk.
type Stats struct {
	Records   uint64 // records present
	Bytes     uint64 // their summed payload bytes (no keys, no checksums)
	FirstSeq  uint64 // first record present; 0 if none
	LastSeq   uint64 // last record present; 0 if none
	Snapshots int    // snapshots present
	DiskBytes uint64 // Pebble's whole on-disk footprint: tables, WAL, manifest
	// FirstRetained is the first sequence log retention kept (1 until
	// Truncate deleted records); records before it were deleted on purpose.
	FirstRetained uint64
}

// Replay calls fn(seq, rec) for every record with seq > from, in order. It
// verifies each record's checksum and that sequences run contiguously from
// from+1, and stops at the first bad one with a *CorruptError naming its
// sequence ("wal: corrupt record at seq 42: checksum mismatch"). Asked for
// records that Truncate deleted (from+1 < FirstRetained), it returns a
// *TruncatedError and calls fn for none. An error from fn stops the replay
// and is returned as is.
//
// Replay reads a point-in-time view taken when it starts; Appends made during
// it may or may not be seen. rec is only valid until fn returns.
func (l *Log) Replay(from uint64, fn func(seq uint64, rec []byte) error) error {
	if from == math.MaxUint64 {
		return nil
	}
	if first, err := l.FirstRetained(); err != nil {
		return err
	} else if from+1 < first {
		return &TruncatedError{From: from + 1, FirstRetained: first}
	}
	iter, err := l.db.NewIter(&pebble.IterOptions{
		LowerBound: makeKey(recordPrefix, from+1),
		UpperBound: []byte{recordPrefix + 1},
	})
	if err != nil {
		return fmt.Errorf("wal: replay: %w", err)
	}
	next := from + 1
	for valid := iter.First(); valid; valid = iter.Next() {
		seq, ok := parseKey(iter.Key(), recordPrefix)
		if !ok {
			return errors.Join(&CorruptError{Seq: next, Reason: fmt.Sprintf("malformed key %x", iter.Key())}, iter.Close())
		}
		if seq != next {
			return errors.Join(&CorruptError{Seq: next, Reason: fmt.Sprintf("missing (next record is %d)", seq)}, iter.Close())
		}
		value, err := iter.ValueAndErr()
		if err != nil {
			return errors.Join(fmt.Errorf("wal: read seq %d: %w", seq, err), iter.Close())
		}
		rec, ok := parseFrame(value)
		if !ok {
			return errors.Join(&CorruptError{Seq: seq, Reason: "checksum mismatch"}, iter.Close())
		}
		if err := fn(seq, rec); err != nil {
			_ = iter.Close()
			return err
		}
		next++
	}
	if err := iter.Close(); err != nil {
		return fmt.Errorf("wal: replay after seq %d: %w", next-1, err)
	}
	return nil
}

// lastRecordSeq returns the sequence of the last record on disk (0 if none).
func (l *Log) lastRecordSeq() (last uint64, err error) {
	iter, err := l.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{recordPrefix},
		UpperBound: []byte{recordPrefix + 1},
	})
	if err != nil {
		return 0, fmt.Errorf("wal: find last record: %w", err)
	}
	defer func() {
		if closeErr := iter.Close(); err == nil && closeErr != nil {
			err = fmt.Errorf("wal: find last record: %w", closeErr)
		}
	}()
	if !iter.Last() {
		return 0, nil
	}
	last, ok := parseKey(iter.Key(), recordPrefix)
	if !ok {
		return 0, &CorruptError{Reason: fmt.Sprintf("malformed last record key %x", iter.Key())}
	}
	return last, nil
}

// Stats scans the log and reports what is on disk. It reads every record, so
// it costs as much as a Replay; it does not verify checksums (Replay does).
func (l *Log) Stats() (Stats, error) {
	var stats Stats
	iter, err := l.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{recordPrefix},
		UpperBound: []byte{snapshotPrefix + 1},
	})
	if err != nil {
		return Stats{}, fmt.Errorf("wal: stats: %w", err)
	}
	for valid := iter.First(); valid; valid = iter.Next() {
		key := iter.Key()
		if _, ok := parseKey(key, snapshotPrefix); ok {
			stats.Snapshots++
			continue
		}
		seq, ok := parseKey(key, recordPrefix)
		if !ok {
			return Stats{}, errors.Join(&CorruptError{Seq: stats.LastSeq + 1, Reason: fmt.Sprintf("malformed key %x", key)}, iter.Close())
		}
		value, err := iter.ValueAndErr()
		if err != nil {
			return Stats{}, errors.Join(fmt.Errorf("wal: stats: read seq %d: %w", seq, err), iter.Close())
		}
		if stats.Records == 0 {
			stats.FirstSeq = seq
		}
		stats.Records++
		stats.LastSeq = seq
		stats.Bytes += uint64(max(len(value)-checksumBytes, 0))
	}
	if err := iter.Close(); err != nil {
		return Stats{}, fmt.Errorf("wal: stats: %w", err)
	}
	stats.DiskBytes = l.db.Metrics().DiskSpaceUsage() + l.snapshotFilesBytes()
	if stats.FirstRetained, err = l.FirstRetained(); err != nil {
		return Stats{}, err
	}
	return stats, nil
}

// SaveSnapshot durably (always fsync'd, whatever Options.Sync) stores data as
// the snapshot of the state after record seq: in a file of its own, which a
// key in Pebble refers to with its size and checksum (snapfile.go). A
// snapshot saved again at the same seq replaces the earlier one. It deletes
// no other snapshot: which to keep is the caller's policy (DeleteSnapshots,
// Truncate).
//
// It first waits until records 1..seq are durable, so the caller may
// snapshot state that includes records not yet acknowledged: a crash can
// never keep a snapshot yet lose a record it reflects.
//
// A failed commit fails the log, as for Append.
// REQUIRES: seq <= LastSeq(); the log is not ReadOnly.
func (l *Log) SaveSnapshot(seq uint64, data []byte) error {
	assert(!l.opts.ReadOnly, "SaveSnapshot on a read-only log")
	assert(seq <= l.LastSeq(), "snapshot at seq %d beyond last seq %d", seq, l.LastSeq())
	if len(data) > SnapshotBytesMax {
		return fmt.Errorf("wal: snapshot at seq %d is %d bytes; limit SnapshotBytesMax is %d",
			seq, len(data), SnapshotBytesMax)
	}
	l.mu.Lock()
	for l.durableSeq.Load() < seq && l.failure.Load() == nil {
		if l.testAwaitDurable != nil {
			l.testAwaitDurable(seq)
		}
		l.mu.progress.Wait() // the committer commits seq eventually, even when closing
	}
	l.mu.Unlock()
	if err := l.Failed(); err != nil {
		return err
	}
	l.snapshotMu.Lock()
	defer l.snapshotMu.Unlock()
	// NB: the reference (size, checksum) is taken before the write: Pebble's
	// test filesystems, built with invariants (as under -race), scribble
	// over a written buffer to catch callers that reuse it.
	ref := snapshotRef(data)
	// The file first, durably; then the key that refers to it (snapfile.go).
	if err := l.writeSnapshotFile(seq, data); err != nil {
		return l.fail(fmt.Errorf("save snapshot at seq %d: %w", seq, err))
	}
	value := make([]byte, checksumBytes+len(ref))
	putFrame(value, ref)
	batch := l.db.NewBatch()
	defer func() { _ = batch.Close() }()
	if err := batch.Set(makeKey(snapshotPrefix, seq), value, nil); err != nil {
		return fmt.Errorf("wal: save snapshot at seq %d: %w", seq, err)
	}
	err := l.db.Apply(batch, pebble.Sync)
	if err == nil {
		err = l.Failed() // see commit: Pebble reports a failed sync via Fatalf
	}
	if err != nil {
		return l.fail(fmt.Errorf("save snapshot at seq %d: %w", seq, err))
	}
	return nil
}

// snapshotSeqs returns the sequences of the snapshots on disk, ascending.
func (l *Log) snapshotSeqs() (seqs []uint64, err error) {
	iter, err := l.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{snapshotPrefix},
		UpperBound: []byte{snapshotPrefix + 1},
	})
	if err != nil {
		return nil, fmt.Errorf("wal: list snapshots: %w", err)
	}
	for valid := iter.First(); valid; valid = iter.Next() {
		seq, ok := parseKey(iter.Key(), snapshotPrefix)
		if !ok {
			return nil, errors.Join(&CorruptError{Snapshot: true, Reason: fmt.Sprintf("malformed key %x", iter.Key())}, iter.Close())
		}
		seqs = append(seqs, seq)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("wal: list snapshots: %w", err)
	}
	return seqs, nil
}

// LatestSnapshot returns the newest snapshot whose checksum holds: the state
// after record seq. A newer snapshot that fails its checksum is skipped, not
// returned — the caller then replays more records from an older one (or
// from the start) — and reported by CorruptSnapshots. ok is false when no
// intact snapshot exists.
func (l *Log) LatestSnapshot() (seq uint64, data []byte, ok bool, err error) {
	ok, err = l.newestSnapshot(func(s uint64, value []byte) (string, error) {
		d, reason := l.snapshotData(s, value)
		seq, data = s, d
		return reason, nil
	})
	if !ok {
		return 0, nil, false, err
	}
	return seq, data, true, err
}

// ReadLatestSnapshot calls fn with the snapshot LatestSnapshot returns, if
// there is one (ok), and returns fn's error. data is valid only until fn
// returns: on Linux a snapshot file is mapped into memory rather than
// read into a buffer of its size, a third of the time for hundreds of MB
// (wal/mmap_linux.go). A fault reading the mapping while fn runs on the
// calling goroutine (an I/O error under it) is returned as an error.
//
// A snapshot file's checksum is verified while fn runs, on a goroutine of
// its own (reading a mapped file's pages for the first time is most of a
// large snapshot's load). ReadLatestSnapshot returns only once both are
// done; if the checksum fails, what fn returned (or a panic of fn's on
// the damaged bytes) is set aside and fn is called again with the next
// older intact snapshot, as LatestSnapshot would have chosen. So fn must
// build what it builds from data alone, each call afresh, and the caller
// must not use it before ReadLatestSnapshot returns.
func (l *Log) ReadLatestSnapshot(fn func(seq uint64, data []byte) error) (ok bool, err error) {
	var fnErr error
	ok, err = l.newestSnapshot(func(seq uint64, value []byte) (string, error) {
		data, release, verify, reason := l.openSnapshot(seq, value, true)
		if reason != "" {
			return reason, nil
		}
		defer release()
		var wg sync.WaitGroup
		wg.Go(func() { reason = verify() })
		var fnPanic any
		fnPanic, fnErr = callGuarded(fn, seq, data)
		wg.Wait()
		if reason == "" && fnPanic != nil {
			panic(fnPanic)
		}
		return reason, nil
	})
	if err == nil && ok {
		err = fnErr
	}
	return ok, err
}

// callGuarded is fn(seq, data) with a fault reading data returned as an
// error (guardFaults) and a panic returned, with its stack, as a value.
func callGuarded(fn func(seq uint64, data []byte) error, seq uint64, data []byte) (panicked any, err error) {
	defer func() {
		if r := recover(); r != nil {
			panicked = fmt.Sprintf("%v\n\n%s", r, debug.Stack())
		}
	}()
	return nil, guardFaults(func() error { return fn(seq, data) })
}

// newestSnapshot offers try each snapshot's key value, newest first, until
// try takes one (its reason ""): ok says one was taken. A snapshot try
// finds not intact (its reason says why) is skipped and recorded for
// CorruptSnapshots; an error of try's ends the walk.
func (l *Log) newestSnapshot(try func(seq uint64, value []byte) (reason string, err error)) (ok bool, err error) {
	iter, err := l.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{snapshotPrefix},
		UpperBound: []byte{snapshotPrefix + 1},
	})
	if err != nil {
		return false, fmt.Errorf("wal: latest snapshot: %w", err)
	}
	defer func() {
		if closeErr := iter.Close(); err == nil && closeErr != nil {
			ok, err = false, fmt.Errorf("wal: latest snapshot: %w", closeErr)
		}
	}()
	var skipped []uint64
	defer func() { l.corruptSnapshots.Store(&skipped) }()
	for valid := iter.Last(); valid; valid = iter.Prev() {
		seq, ok := parseKey(iter.Key(), snapshotPrefix)
		if !ok {
			return false, &CorruptError{Snapshot: true, Reason: fmt.Sprintf("malformed key %x", iter.Key())}
		}
		value, err := iter.ValueAndErr()
		if err != nil {
			return false, fmt.Errorf("wal: read snapshot at seq %d: %w", seq, err)
		}
		reason, err := try(seq, value)
		if err != nil {
			return false, err
		}
		if reason == "" {
			return true, nil
		}
		skipped = append(skipped, seq)
	}
	return false, nil
}

// CorruptSnapshots returns the sequences of the snapshots the last
// LatestSnapshot call skipped because their checksum failed, newest first.
func (l *Log) CorruptSnapshots() []uint64 {
	if p := l.corruptSnapshots.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}

// Checkpoint writes a consistent copy of the log into dir (which must not
// exist), while Appends continue. Pebble flushes and syncs its WAL first, so
// the copy holds at least every record acknowledged before the call, and its
// acknowledgement mark says so; the copy is a log that Open accepts. Files
// are hard-linked where the FS allows.
//
// A read-only log cannot be checkpointed (Pebble needs files that only a
// writable open creates); copy the stopped data dir instead.
func (l *Log) Checkpoint(dir string) error {
	if l.opts.ReadOnly {
		return errors.New("wal: checkpoint of a read-only log is not supported; copy the stopped data dir instead")
	}
	if err := l.Failed(); err != nil {
		return err
	}
	// NB: no snapshot is saved or deleted meanwhile, so every snapshot key
	// the copy holds finds its file.
	l.snapshotMu.Lock()
	defer l.snapshotMu.Unlock()
	// Every record acknowledged before the call is in the copy (the WAL is
	// flushed first), so the copy's acknowledgement mark can say so.
	acked := l.durableSeq.Load()
	if err := l.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("wal: checkpoint to %s: %w", dir, err)
	}
	if err := l.copySnapshotFiles(dir); err != nil {
		return fmt.Errorf("wal: checkpoint to %s: snapshot files: %w", dir, err)
	}
	mark, err := openAckMark(l.opts.FS, dir, acked)
	if err == nil {
		err = mark.close()
	}
	if err != nil {
		return fmt.Errorf("wal: checkpoint to %s: acknowledgement mark: %w", dir, err)
	}
	return nil
}

// Snapshots calls fn(seq, data) for every snapshot on disk, oldest first,
// checksums verified (a mismatch is a *CorruptError with Snapshot set and
// ends the walk). data is valid only until fn returns.
func (l *Log) Snapshots(fn func(seq uint64, data []byte) error) error {
	iter, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte{snapshotPrefix}, UpperBound: []byte{snapshotPrefix + 1}})
	if err != nil {
		return fmt.Errorf("wal: snapshots: %w", err)
	}
	for valid := iter.First(); valid; valid = iter.Next() {
		seq, ok := parseKey(iter.Key(), snapshotPrefix)
		if !ok {
			return errors.Join(&CorruptError{Snapshot: true, Reason: fmt.Sprintf("malformed key %x", iter.Key())}, iter.Close())
		}
		value, err := iter.ValueAndErr()
		if err != nil {
			return errors.Join(fmt.Errorf("wal: read snapshot at seq %d: %w", seq, err), iter.Close())
		}
		payload, reason := l.snapshotData(seq, value)
		if reason != "" {
			return errors.Join(&CorruptError{Snapshot: true, Seq: seq, Reason: reason}, iter.Close())
		}
		if err := fn(seq, payload); err != nil {
			_ = iter.Close()
			return err
		}
	}
	return iter.Close()
}
