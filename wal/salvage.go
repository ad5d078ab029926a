package wal

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/batchrepr"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Salvage is the way out of a damaged log short of a backup (doc.go, "Torn
// tail or corruption"): it writes the log's intact prefix — records 1..N
// with no gap, and the snapshots up to N — into a new store, and says what
// is lost. The damaged store is only read, never changed.

// walBlockBytes is the block size of Pebble's WAL record format: a chunk
// never straddles a block, so a reader can start afresh at any block.
const walBlockBytes = 32 << 10

// SalvageResult is what Salvage kept and what it could still read of the
// rest.
type SalvageResult struct {
	// Damage is the fault found: the *DamagedError Open gave, or the
	// *CorruptError a replay of the records gave; nil when the log was
	// intact (then nothing was written).
	Damage error
	// LastIntact is the last record of the intact prefix: the new store
	// holds FirstRetained..LastIntact.
	LastIntact uint64
	// FirstRetained is the first record of the new store (1 unless log
	// retention had deleted records before).
	FirstRetained uint64
	// Acknowledged is the last sequence the damaged store is known to have
	// acknowledged: its acknowledgement mark, or the highest sequence still
	// readable past the damage (0: no evidence of any record after
	// LastIntact).
	Acknowledged uint64
	// PastDamage holds the records after LastIntact still readable in the
	// damaged store, by sequence: lost all the same (a record is only as
	// good as every record before it), but they say what was lost.
	PastDamage map[uint64][]byte
}

// Salvage copies the store in dir to the new store dir to (which must not
// exist), cut back to the intact prefix. The copy is opened and closed
// cleanly, so it is a store Open accepts, with its own acknowledgement mark.
func Salvage(dir, to string) (*SalvageResult, error) {
	fs := vfs.Default
	if _, err := fs.Stat(to); err == nil {
		return nil, fmt.Errorf("wal: salvage: %s exists; name a new directory", to)
	}
	res := &SalvageResult{PastDamage: map[uint64][]byte{}}
	if mark, ok, err := readAckMark(fs, dir); err == nil && ok {
		res.Acknowledged = mark
	}
	var cutWAL *DamagedError
	log, err := Open(dir, Options{ReadOnly: true})
	var damage *DamagedError
	switch {
	case errors.As(err, &damage) && damage.File != "":
		res.Damage, cutWAL = damage, damage
		if err := recordsPastDamage(fs, dir, damage, res.PastDamage); err != nil {
			return nil, fmt.Errorf("wal: salvage: reading past the damage: %w", err)
		}
	case errors.As(err, &damage) && damage.Acknowledged > 0:
		// Acknowledged records are missing from the end: the store itself
		// is consistent; the copy keeps all it has.
		res.Damage = damage
	case err != nil:
		return nil, fmt.Errorf("wal: salvage: %w (no intact prefix can be read: restore from a backup)", err)
	default:
		first, last, corrupt, err := intactPrefix(log)
		if err == nil && corrupt != nil {
			res.Damage = corrupt
			for seq := last + 2; seq <= log.LastSeq(); seq++ {
				if rec, err := log.Record(seq); err == nil {
					res.PastDamage[seq] = rec
				}
			}
		}
		res.FirstRetained, res.LastIntact = first, last
		if closeErr := log.Close(); err == nil {
			err = closeErr
		}
		if err != nil {
			return nil, fmt.Errorf("wal: salvage: %w", err)
		}
		if res.Damage == nil {
			return res, nil
		}
	}
	for seq := range res.PastDamage {
		res.Acknowledged = max(res.Acknowledged, seq)
	}

	if err := copyStore(fs, dir, to, cutWAL); err != nil {
		return nil, fmt.Errorf("wal: salvage: copying to %s: %w", to, err)
	}
	out, err := Open(to, Options{Sync: true})
	if err != nil {
		return nil, fmt.Errorf("wal: salvage: the copy in %s does not open: %w", to, err)
	}
	first, last, _, err := intactPrefix(out)
	if err == nil {
		err = out.discardAfter(last)
	}
	if closeErr := out.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return nil, fmt.Errorf("wal: salvage: cutting the copy back: %w", err)
	}
	res.FirstRetained, res.LastIntact = first, last
	for seq := range res.PastDamage {
		if seq <= last {
			delete(res.PastDamage, seq)
		}
	}
	return res, nil
}

// intactPrefix replays the records and returns the retained start and the
// last record before the first gap or bad checksum (corrupt names it; nil
// when there is none).
func intactPrefix(l *Log) (first, last uint64, corrupt *CorruptError, err error) {
	if first, err = l.FirstRetained(); err != nil {
		return 0, 0, nil, err
	}
	last = first - 1
	err = l.Replay(last, func(seq uint64, _ []byte) error { last = seq; return nil })
	if errors.As(err, &corrupt) {
		err = nil
	}
	return first, last, corrupt, err
}

// recordsPastDamage reads what is still readable after the damage d names:
// the damaged WAL file from the block after the damaged record's, and every
// later WAL file whole. Records are added to into by sequence (nil when
// their checksum fails).
func recordsPastDamage(fs vfs.FS, dir string, d *DamagedError, into map[uint64][]byte) error {
	wals, err := walFiles(fs, dir)
	if err != nil {
		return err
	}
	cutNum, _ := walNum(d.File)
	for _, w := range wals {
		if w.num < cutNum {
			continue
		}
		start := int64(0)
		if w.name == d.File {
			start = (d.Offset/walBlockBytes + 1) * walBlockBytes
		}
		f, err := fs.Open(fs.PathJoin(dir, w.name))
		if err != nil {
			return err
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		// A damaged block stops a reader; start a new one at the next
		// block until the file ends.
		for start < info.Size() {
			rr := newRecordReader(io.NewSectionReader(f, start, info.Size()-start), w.num)
			read := int64(0)
			for {
				read = rr.Offset()
				r, err := rr.Next()
				if err != nil {
					break
				}
				batch, err := io.ReadAll(r)
				if err != nil {
					break
				}
				batchRecords(batch, into)
			}
			start += (read/walBlockBytes + 1) * walBlockBytes
		}
		f.Close()
	}
	return nil
}

// batchRecords adds the records a WAL batch sets to into.
func batchRecords(repr []byte, into map[uint64][]byte) {
	br := batchrepr.Read(repr)
	for {
		kind, key, value, ok, err := br.Next()
		if !ok || err != nil {
			return
		}
		seq, isRecord := parseKey(key, recordPrefix)
		if !isRecord || kind != pebble.InternalKeyKindSet {
			continue
		}
		rec, ok := parseFrame(value)
		if !ok {
			into[seq] = nil
			continue
		}
		into[seq] = append([]byte(nil), rec...)
	}
}

// copyStore copies every file of the store dir into the new dir to, synced.
// When cut names a damaged WAL file, the copy of that file ends at the
// damaged record and later WAL files are left out: what Pebble then
// replays is the intact prefix, and the cut end reads as a torn tail.
func copyStore(fs vfs.FS, dir, to string, cut *DamagedError) error {
	if err := createDurably(fs, to); err != nil {
		return err
	}
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if name == "LOCK" {
			continue
		}
		if name == snapshotDir {
			if err := copyDir(fs, fs.PathJoin(dir, name), fs.PathJoin(to, name)); err != nil {
				return err
			}
			continue
		}
		limit := int64(math.MaxInt64)
		if num, isWAL := walNum(name); cut != nil && isWAL {
			cutNum, _ := walNum(cut.File)
			switch {
			case num == cutNum:
				limit = cut.Offset
			case num > cutNum:
				continue
			}
		}
		if err := copyFile(fs, fs.PathJoin(dir, name), fs.PathJoin(to, name), limit); err != nil {
			return err
		}
	}
	return syncDir(fs, to)
}

// copyDir copies the files of one directory level, synced.
func copyDir(fs vfs.FS, from, to string) error {
	if err := createDurably(fs, to); err != nil {
		return err
	}
	names, err := fs.List(from)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := copyFile(fs, fs.PathJoin(from, name), fs.PathJoin(to, name), math.MaxInt64); err != nil {
			return err
		}
	}
	return syncDir(fs, to)
}

func copyFile(fs vfs.FS, from, to string, limit int64) error {
	info, err := fs.Stat(from)
	if err != nil || info.IsDir() {
		return err
	}
	src, err := fs.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := fs.Create(to, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, io.LimitReader(src, limit))
	if err == nil {
		err = dst.Sync()
	}
	if closeErr := dst.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		_ = fs.Remove(to)
		return fmt.Errorf("%s: %w", from, err)
	}
	return nil
}

// discardAfter deletes every record and snapshot after seq, synced. Only
// Salvage uses it, on its new copy, before any Append.
func (l *Log) discardAfter(seq uint64) error {
	batch := l.db.NewBatch()
	defer func() { _ = batch.Close() }()
	end := makeKey(recordPrefix, math.MaxUint64)
	end = append(end, 0)
	if err := batch.DeleteRange(makeKey(recordPrefix, seq+1), end, nil); err != nil {
		return err
	}
	end = append(makeKey(snapshotPrefix, math.MaxUint64), 0)
	if err := batch.DeleteRange(makeKey(snapshotPrefix, seq+1), end, nil); err != nil {
		return err
	}
	if err := l.db.Apply(batch, pebble.Sync); err != nil {
		return err
	}
	l.removeSnapshotFiles(func(s uint64) bool { return s <= seq })
	l.lastSeq.Store(seq)
	l.durableSeq.Store(seq)
	return nil
}
