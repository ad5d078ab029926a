package wal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Retention (doc.go, "A bounded log"): Truncate deletes the records up to a
// snapshot, and a durable mark remembers where the retained records start,
// so that a read before it is told apart from a hole in the log.

// retainedKey holds the first retained sequence (framed big-endian uint64);
// absent until the first Truncate.
var retainedKey = []byte{'m', 'r', 'e', 't', 'a', 'i', 'n', 'e', 'd'}

// TruncatedError is returned by Replay (and Record) when asked for records
// that Truncate deleted.
type TruncatedError struct {
	From          uint64 // the first sequence asked for
	FirstRetained uint64 // the first record still in the log
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("wal: records before seq %d were deleted by log retention (asked from seq %d); "+
		"the state just before it is the snapshot at seq %d", e.FirstRetained, e.From, e.FirstRetained-1)
}

// FirstRetained returns the first sequence the log still holds or will
// hold: 1 unless Truncate deleted records.
func (l *Log) FirstRetained() (uint64, error) {
	value, closer, err := l.db.Get(retainedKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("wal: read retention mark: %w", err)
	}
	defer closer.Close()
	payload, ok := parseFrame(value)
	if !ok || len(payload) != 8 {
		return 0, &CorruptError{Reason: "retention mark: checksum mismatch"}
	}
	return binary.BigEndian.Uint64(payload), nil
}

// Truncate deletes records 1..through and every snapshot before through,
// in one synced batch, and records through+1 as the first retained
// sequence; then it compacts the deleted range so the disk space is given
// back. The snapshot at through must exist and verify: it is the state the
// retained records start from.
// REQUIRES: the log is not ReadOnly.
func (l *Log) Truncate(through uint64) error {
	assert(!l.opts.ReadOnly, "Truncate on a read-only log")
	if err := l.Failed(); err != nil {
		return err
	}
	l.snapshotMu.Lock()
	defer l.snapshotMu.Unlock()
	first, err := l.FirstRetained()
	if err != nil {
		return err
	}
	if through < first {
		return nil // already gone
	}
	value, closer, err := l.db.Get(makeKey(snapshotPrefix, through))
	if err != nil {
		return fmt.Errorf("wal: truncate through seq %d: no snapshot there (%w)", through, err)
	}
	_, reason := l.snapshotData(through, value)
	_ = closer.Close()
	if reason != "" {
		return &CorruptError{Snapshot: true, Seq: through, Reason: reason + "; not truncating to it"}
	}
	if through > l.durableSeq.Load() {
		return fmt.Errorf("wal: truncate through seq %d beyond the last durable record %d", through, l.durableSeq.Load())
	}
	batch := l.db.NewBatch()
	defer func() { _ = batch.Close() }()
	if err := batch.DeleteRange(makeKey(recordPrefix, 0), makeKey(recordPrefix, through+1), nil); err != nil {
		return fmt.Errorf("wal: truncate: %w", err)
	}
	if err := batch.DeleteRange(makeKey(snapshotPrefix, 0), makeKey(snapshotPrefix, through), nil); err != nil {
		return fmt.Errorf("wal: truncate: %w", err)
	}
	mark := make([]byte, checksumBytes+8)
	binary.BigEndian.PutUint64(mark[checksumBytes:], through+1)
	putFrame(mark, mark[checksumBytes:])
	if err := batch.Set(retainedKey, mark, nil); err != nil {
		return fmt.Errorf("wal: truncate: %w", err)
	}
	err = l.db.Apply(batch, pebble.Sync)
	if err == nil {
		err = l.Failed()
	}
	if err != nil {
		return l.fail(fmt.Errorf("truncate through seq %d: %w", through, err))
	}
	l.removeSnapshotFiles(func(seq uint64) bool { return seq >= through })
	// NB: the delete is durable already; compaction only reclaims space, so
	// its failure is reported but does not fail the log.
	if err := l.db.Compact(context.Background(), makeKey(recordPrefix, 0), makeKey(recordPrefix, through+1), false); err != nil {
		return fmt.Errorf("wal: compact after truncating through seq %d: %w", through, err)
	}
	return nil
}

// SnapshotSeqs returns the sequences of the snapshots on disk, ascending.
func (l *Log) SnapshotSeqs() ([]uint64, error) { return l.snapshotSeqs() }

// DeleteSnapshots deletes the snapshots at seqs (absent ones are ignored),
// except the newest snapshot on disk, which is never deleted by it.
// REQUIRES: the log is not ReadOnly.
func (l *Log) DeleteSnapshots(seqs []uint64) error {
	assert(!l.opts.ReadOnly, "DeleteSnapshots on a read-only log")
	if len(seqs) == 0 {
		return nil
	}
	if err := l.Failed(); err != nil {
		return err
	}
	l.snapshotMu.Lock()
	defer l.snapshotMu.Unlock()
	have, err := l.snapshotSeqs()
	if err != nil || len(have) == 0 {
		return err
	}
	batch := l.db.NewBatch()
	defer func() { _ = batch.Close() }()
	for _, seq := range seqs {
		if seq != have[len(have)-1] && slices.Contains(have, seq) {
			if err := batch.Delete(makeKey(snapshotPrefix, seq), nil); err != nil {
				return fmt.Errorf("wal: delete snapshot %d: %w", seq, err)
			}
		}
	}
	if batch.Empty() {
		return nil
	}
	err = l.db.Apply(batch, pebble.Sync)
	if err == nil {
		err = l.Failed()
	}
	if err != nil {
		return l.fail(fmt.Errorf("delete snapshots: %w", err))
	}
	deleted := map[uint64]bool{}
	for _, seq := range seqs {
		deleted[seq] = seq != have[len(have)-1]
	}
	l.removeSnapshotFiles(func(seq uint64) bool { return !deleted[seq] })
	return nil
}

// Record returns the record at seq, checksum verified.
func (l *Log) Record(seq uint64) ([]byte, error) {
	value, closer, err := l.db.Get(makeKey(recordPrefix, seq))
	if errors.Is(err, pebble.ErrNotFound) {
		if first, ferr := l.FirstRetained(); ferr == nil && seq < first {
			return nil, &TruncatedError{From: seq, FirstRetained: first}
		}
		return nil, &CorruptError{Seq: seq, Reason: "missing"}
	}
	if err != nil {
		return nil, fmt.Errorf("wal: read seq %d: %w", seq, err)
	}
	defer closer.Close()
	rec, ok := parseFrame(value)
	if !ok {
		return nil, &CorruptError{Seq: seq, Reason: "checksum mismatch"}
	}
	return slices.Clone(rec), nil
}

// DurableSeq returns the last sequence committed (fsync'd when
// Options.Sync): every record up to it is durable.
func (l *Log) DurableSeq() uint64 { return l.durableSeq.Load() }

// Seed makes dir, which must hold no log yet, a log that starts after
// seq: its snapshot at seq is state and it holds no record, so the first
// appended is seq+1 — how a cluster node's backup becomes a single node's
// data dir (its replica at a committed record, without the Raft log
// before it).
func Seed(dir string, seq uint64, state []byte, opts Options) error {
	if seq == 0 {
		return errors.New("wal: seed: the sequence must be at least 1")
	}
	l, err := Open(dir, opts)
	if err != nil {
		return err
	}
	seqs, err := l.snapshotSeqs()
	if err == nil && (l.LastSeq() != 0 || len(seqs) != 0) {
		err = fmt.Errorf("wal: seed %s: the log is not empty (last seq %d, %d snapshots)", dir, l.LastSeq(), len(seqs))
	}
	if err == nil {
		l.lastSeq.Store(seq)
		l.durableSeq.Store(seq)
		err = l.SaveSnapshot(seq, state)
	}
	if err == nil {
		mark := make([]byte, checksumBytes+8)
		binary.BigEndian.PutUint64(mark[checksumBytes:], seq+1)
		putFrame(mark, mark[checksumBytes:])
		if err = l.db.Set(retainedKey, mark, pebble.Sync); err == nil {
			err = l.Failed()
		}
	}
	return errors.Join(err, l.Close())
}
