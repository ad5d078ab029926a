package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"
)

// RaftStore is the Raft log store and stable store of a cluster node
// (hashicorp/raft's LogStore and StableStore), on Pebble like the Log: in
// cluster mode the Raft log is the write-ahead log. Entries are keyed by
// 'l' + the big-endian index, stable values by 's' + the key. Every write
// that Raft makes durable is a synced Pebble batch, so an entry a node
// acknowledged to its leader survives kill -9 and power loss; Pebble's
// block checksums and the vouching check of the Log (integrity.go) refuse
// a damaged store at open instead of serving a shorter log.
type RaftStore struct {
	db   *pebble.DB
	lock *pebble.Lock
	sync *pebble.WriteOptions

	failMu  sync.Mutex
	failure error
	closed  atomic.Bool
}

var (
	_ raft.LogStore    = (*RaftStore)(nil)
	_ raft.StableStore = (*RaftStore)(nil)
)

// RaftStoreOptions configure OpenRaftStore.
type RaftStoreOptions struct {
	FS   vfs.FS // nil = vfs.Default; tests use vfs.NewCrashableMem()
	Sync bool   // false: no fsync (benchmarks only)
	// ReadOnly opens an existing store for reading only (the offline log
	// tools on a stopped node's data dir); its lock is still taken.
	ReadOnly bool
}

const (
	raftLogPrefix    = 'l'
	raftStablePrefix = 's'
)

// errRaftKeyNotFound is what hashicorp/raft expects of a StableStore for a
// missing key: it compares the error's text with "not found".
var errRaftKeyNotFound = errors.New("not found")

// OpenRaftStore opens (creating it if needed) the Raft store in dir.
func OpenRaftStore(dir string, opts RaftStoreOptions) (*RaftStore, error) {
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	if !opts.ReadOnly {
		if err := createDurably(fs, dir); err != nil {
			return nil, fmt.Errorf("wal: create %s: %w", dir, err)
		}
	}
	lock, err := lockStore(fs, dir)
	if err != nil {
		return nil, err
	}
	s := &RaftStore{lock: lock, sync: pebble.NoSync}
	if opts.Sync {
		s.sync = pebble.Sync
	}
	pebbleOptions := func() *pebble.Options {
		return &pebble.Options{
			FS:                 fs,
			Logger:             &guardLogger{fail: s.fail},
			FormatMajorVersion: pebble.FormatNewest,
			Lock:               lock,
			MemTableSize:       memTableBytes,
			ReadOnly:           opts.ReadOnly,
			ErrorIfNotExists:   opts.ReadOnly,
		}
	}
	db, err := openChecked(fs, dir, !opts.ReadOnly, pebbleOptions)
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	s.db = db
	return s, nil
}

func (s *RaftStore) fail(err error) error {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	if s.failure == nil {
		s.failure = fmt.Errorf("%w: %w", ErrFailed, err)
	}
	return s.failure
}

// Failed returns the store's failure (Pebble reported a fatal error), or nil.
func (s *RaftStore) Failed() error {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	return s.failure
}

// Close closes the store. Raft must be shut down first.
func (s *RaftStore) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	err := s.db.Close()
	return errors.Join(err, s.lock.Close())
}

func raftLogKey(index uint64) []byte {
	var k [9]byte
	k[0] = raftLogPrefix
	binary.BigEndian.PutUint64(k[1:], index)
	return k[:]
}

// FirstIndex is the first index written, 0 for none.
func (s *RaftStore) FirstIndex() (uint64, error) { return s.edgeIndex(true) }

// LastIndex is the last index written, 0 for none.
func (s *RaftStore) LastIndex() (uint64, error) { return s.edgeIndex(false) }

func (s *RaftStore) edgeIndex(first bool) (uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{raftLogPrefix}, UpperBound: []byte{raftLogPrefix + 1}})
	if err != nil {
		return 0, err
	}
	var ok bool
	if first {
		ok = it.First()
	} else {
		ok = it.Last()
	}
	var index uint64
	if ok {
		if len(it.Key()) != 9 {
			_ = it.Close()
			return 0, fmt.Errorf("wal: raft store: malformed key %x", it.Key())
		}
		index = binary.BigEndian.Uint64(it.Key()[1:])
	}
	return index, errors.Join(it.Error(), it.Close())
}

// GetLog reads the entry at index into log (raft.ErrLogNotFound if absent).
func (s *RaftStore) GetLog(index uint64, log *raft.Log) error {
	v, closer, err := s.db.Get(raftLogKey(index))
	if errors.Is(err, pebble.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	if err := decodeRaftLog(v, log); err != nil {
		return fmt.Errorf("wal: raft entry %d: %w", index, err)
	}
	if log.Index != index {
		return fmt.Errorf("wal: raft entry under key %d holds index %d", index, log.Index)
	}
	return nil
}

// StoreLog stores one entry durably.
func (s *RaftStore) StoreLog(log *raft.Log) error { return s.StoreLogs([]*raft.Log{log}) }

// StoreLogs stores entries in one synced batch.
func (s *RaftStore) StoreLogs(logs []*raft.Log) error {
	if err := s.Failed(); err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	var buf []byte
	for _, l := range logs {
		buf = encodeRaftLog(buf[:0], l)
		if err := b.Set(raftLogKey(l.Index), buf, nil); err != nil {
			return err
		}
	}
	if err := b.Commit(s.sync); err != nil {
		return err
	}
	return s.Failed()
}

// DeleteRange deletes the entries min..max inclusive.
func (s *RaftStore) DeleteRange(min, max uint64) error {
	if max < min {
		return nil
	}
	end := raftLogKey(max + 1)
	if max == ^uint64(0) {
		end = []byte{raftLogPrefix + 1}
	}
	return s.db.DeleteRange(raftLogKey(min), end, s.sync)
}

func stableKey(key []byte) []byte { return append([]byte{raftStablePrefix}, key...) }

// Set stores a stable value durably.
func (s *RaftStore) Set(key, val []byte) error {
	if err := s.Failed(); err != nil {
		return err
	}
	return s.db.Set(stableKey(key), val, s.sync)
}

// Get reads a stable value; a missing key is an error whose text is
// "not found", as hashicorp/raft expects.
func (s *RaftStore) Get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(stableKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, errRaftKeyNotFound
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

// SetUint64 stores a stable number durably.
func (s *RaftStore) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 reads a stable number; a missing key reads as 0.
func (s *RaftStore) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if errors.Is(err, errRaftKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("wal: raft stable value %q is %d bytes, not 8", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// An entry is: index, term (8 bytes each), type (1), appendedAt in Unix
// nanoseconds (8, 0 for the zero time), then data and extensions, each a
// uvarint length and the bytes.
func encodeRaftLog(b []byte, l *raft.Log) []byte {
	b = binary.BigEndian.AppendUint64(b, l.Index)
	b = binary.BigEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	b = binary.AppendUvarint(b, uint64(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.AppendUvarint(b, uint64(len(l.Extensions)))
	return append(b, l.Extensions...)
}

func decodeRaftLog(b []byte, l *raft.Log) error {
	const head = 8 + 8 + 1 + 8
	if len(b) < head {
		return errors.New("short entry")
	}
	l.Index = binary.BigEndian.Uint64(b)
	l.Term = binary.BigEndian.Uint64(b[8:])
	l.Type = raft.LogType(b[16])
	l.AppendedAt = time.Time{}
	if at := int64(binary.BigEndian.Uint64(b[17:])); at != 0 {
		l.AppendedAt = time.Unix(0, at)
	}
	rest := b[head:]
	var err error
	if l.Data, rest, err = lengthPrefixed(rest); err != nil {
		return err
	}
	if l.Extensions, rest, err = lengthPrefixed(rest); err != nil {
		return err
	}
	if len(rest) != 0 {
		return errors.New("trailing bytes")
	}
	return nil
}

// lengthPrefixed reads a uvarint length and that many bytes (copied: the
// caller's buffer belongs to Pebble).
func lengthPrefixed(b []byte) (field, rest []byte, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, nil, errors.New("bad length")
	}
	if n == 0 {
		return nil, b[w:], nil
	}
	return append([]byte(nil), b[w:w+int(n)]...), b[w+int(n):], nil
}
