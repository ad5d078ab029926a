package cluster

import (
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/oja-exchange/oja/wal"
)

// LogSource reads a stopped node's Raft directory (<data>/raft) as the
// offline log tools (`oja wal stats|dump|verify|replay`) read a single
// node's store: the records of its command entries, numbered as its replica
// numbers them, and its snapshots. Records are numbered from the oldest
// snapshot the log still reaches past (its sequence is in the snapshot) —
// the records before it are folded into it, as log retention folds a
// single node's — or from 1 when the log still starts at its first entry.
//
// NB: a node's log may end in entries the cluster never committed (a
// deposed leader's last appends); Raft does not persist how far it
// committed, so the tools show them too. Compare the nodes' `{seq, hash}`
// (GET /admin/v1/state) on a running cluster to see which records all hold.
type LogSource struct {
	store *wal.RaftStore
	snaps *raft.FileSnapshotStore
	// metas are the snapshots, oldest first; seqs their record sequences.
	metas []*raft.SnapshotMeta
	seqs  []uint64
	// base is where numbering starts: the raft index and record sequence
	// of the state before the first record read (a snapshot's, or 0, 0).
	baseIndex, baseSeq uint64
	first, last        uint64 // the log's raft indexes (0, 0: empty)
}

// OpenLogSource opens dir (a node's <data>/raft) for reading. It takes the
// Raft store's lock: a running node's dir is refused with wal.ErrInUse.
func OpenLogSource(dir string) (*LogSource, error) {
	store, err := wal.OpenRaftStore(filepath.Join(dir, "log"), wal.RaftStoreOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	s := &LogSource{store: store}
	if err := s.load(dir); err != nil {
		_ = store.Close()
		return nil, err
	}
	return s, nil
}

func (s *LogSource) load(dir string) (err error) {
	logger := hclog.NewNullLogger()
	if s.snaps, err = raft.NewFileSnapshotStoreWithLogger(filepath.Join(dir, "snapshots"), 2, logger); err != nil {
		return fmt.Errorf("cluster: snapshots of %s: %w", dir, err)
	}
	metas, err := s.snaps.List()
	if err != nil {
		return fmt.Errorf("cluster: snapshots of %s: %w", dir, err)
	}
	slices.Reverse(metas) // List is newest first
	for _, m := range metas {
		seq, _, err := s.read(m.ID, true)
		if err != nil {
			return err
		}
		s.metas, s.seqs = append(s.metas, m), append(s.seqs, seq)
	}
	if s.first, err = s.store.FirstIndex(); err != nil {
		return err
	}
	if s.last, err = s.store.LastIndex(); err != nil {
		return err
	}
	// The base: the oldest snapshot from whose index on the log is whole,
	// else the start of the log.
	if s.first > 1 {
		i := slices.IndexFunc(s.metas, func(m *raft.SnapshotMeta) bool { return m.Index+1 >= s.first })
		if i < 0 {
			return fmt.Errorf("cluster: %s: the log starts at index %d and no snapshot reaches it", dir, s.first)
		}
		s.baseIndex, s.baseSeq = s.metas[i].Index, s.seqs[i]
	}
	return nil
}

// read reads snapshot id: the record sequence it is at and, unless
// seqOnly, the encoded state (checksum verified by the snapshot store).
func (s *LogSource) read(id string, seqOnly bool) (uint64, []byte, error) {
	_, rc, err := s.snaps.Open(id)
	if err != nil {
		return 0, nil, fmt.Errorf("cluster: snapshot %s: %w", id, err)
	}
	defer rc.Close()
	if seqOnly {
		var head [8]byte
		if _, err := io.ReadFull(rc, head[:]); err != nil {
			return 0, nil, fmt.Errorf("cluster: snapshot %s: %w", id, err)
		}
		return binary.BigEndian.Uint64(head[:]), nil, nil
	}
	data, err := io.ReadAll(rc)
	if err != nil || len(data) < 8 {
		return 0, nil, fmt.Errorf("cluster: snapshot %s: short or unreadable (%v)", id, err)
	}
	return binary.BigEndian.Uint64(data), data[8:], nil
}

// Close releases the store.
func (s *LogSource) Close() error { return s.store.Close() }

// FirstRetained is the first record the source numbers.
func (s *LogSource) FirstRetained() (uint64, error) { return s.baseSeq + 1, nil }

// Replay calls fn(seq, rec) for every record with seq > from, in order; a
// record before the first it numbers is a *wal.TruncatedError.
func (s *LogSource) Replay(from uint64, fn func(seq uint64, rec []byte) error) error {
	if from+1 < s.baseSeq+1 {
		return &wal.TruncatedError{From: from + 1, FirstRetained: s.baseSeq + 1}
	}
	seq := s.baseSeq
	var entry raft.Log
	for i := s.baseIndex + 1; i <= s.last && i >= s.first; i++ {
		if err := s.store.GetLog(i, &entry); err != nil {
			return fmt.Errorf("cluster: raft entry %d: %w", i, err)
		}
		if entry.Type != raft.LogCommand {
			continue
		}
		err := forEachRecord(entry.Data, func(rec []byte) error {
			seq++
			if seq <= from {
				return nil
			}
			return fn(seq, rec)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Stats counts the records the source numbers and its snapshots.
func (s *LogSource) Stats() (wal.Stats, error) {
	st := wal.Stats{Snapshots: len(s.metas), FirstRetained: s.baseSeq + 1}
	err := s.Replay(s.baseSeq, func(seq uint64, rec []byte) error {
		if st.FirstSeq == 0 {
			st.FirstSeq = seq
		}
		st.LastSeq = seq
		st.Records++
		st.Bytes += uint64(len(rec))
		return nil
	})
	return st, err
}

// LatestSnapshot is the newest snapshot: its sequence and encoded state.
func (s *LogSource) LatestSnapshot() (uint64, []byte, bool, error) {
	if len(s.metas) == 0 {
		return 0, nil, false, nil
	}
	seq, data, err := s.read(s.metas[len(s.metas)-1].ID, false)
	return seq, data, err == nil, err
}

// Snapshots calls fn(seq, state) for every snapshot, oldest first.
func (s *LogSource) Snapshots(fn func(seq uint64, data []byte) error) error {
	for _, m := range s.metas {
		seq, data, err := s.read(m.ID, false)
		if err != nil {
			return err
		}
		if err := fn(seq, data); err != nil {
			return err
		}
	}
	return nil
}
