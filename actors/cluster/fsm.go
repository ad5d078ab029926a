package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/oja-exchange/oja/engine"
)

// fsm is a node's replica of the state: every node, the leader too, applies
// each committed Raft entry to it with engine.State.Apply, the one applier
// replay and the actors' routing share (engine/outcome.go). A new leader
// starts its actors from a copy of it. Its sequence numbers count records
// (the events in the entries) from 1, like the single-node log's, so
// `{seq, hash}` compares across nodes.
type fsm struct {
	logger *slog.Logger

	mu    sync.RWMutex
	state *engine.State
	seq   uint64 // last record applied
	index uint64 // last Raft index applied
	// failed is the first record that did not apply: the replica no longer
	// follows the leader (a bug or a foreign log); it refuses to serve.
	failed error
}

// applied is what FSM.Apply returns for a command entry: the first record's
// sequence, or why the entry did not apply.
type applied struct {
	firstSeq uint64
	err      error
}

func newFSM(logger *slog.Logger) *fsm {
	return &fsm{logger: logger, state: engine.NewState()}
}

var (
	_ raft.FSM         = (*fsm)(nil)
	_ raft.BatchingFSM = (*fsm)(nil)
)

// Apply applies one committed entry.
func (f *fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch applies committed entries in order under one lock.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, l := range logs {
		if l.Index > f.index {
			f.index = l.Index
		}
		if l.Type != raft.LogCommand {
			continue
		}
		out[i] = f.applyCommand(l)
	}
	return out
}

func (f *fsm) applyCommand(l *raft.Log) applied {
	res := applied{firstSeq: f.seq + 1}
	if f.failed != nil {
		res.err = f.failed
		return res
	}
	err := forEachRecord(l.Data, func(rec []byte) error {
		ev, err := engine.DecodeEvent(rec)
		if err != nil {
			return fmt.Errorf("record %d: %w", f.seq+1, err)
		}
		if err := f.state.Apply(ev); err != nil {
			return fmt.Errorf("record %d: %w", f.seq+1, err)
		}
		f.seq++
		return nil
	})
	if err != nil {
		f.failed = fmt.Errorf("cluster: raft entry %d: %w", l.Index, err)
		f.logger.Error("replica diverged: a committed record does not apply; this node refuses to serve", "err", f.failed)
		res.err = f.failed
	}
	return res
}

// read runs fn with the state under the read lock.
func (f *fsm) read(fn func(s *engine.State, seq, index uint64) error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.failed != nil {
		return f.failed
	}
	return fn(f.state, f.seq, f.index)
}

// Snapshot captures the state now (encoded under the read lock; Persist
// writes it while entries keep applying).
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	var data []byte
	err := f.read(func(s *engine.State, seq, _ uint64) error {
		data = binary.BigEndian.AppendUint64(make([]byte, 0, 1<<16), seq)
		data = engine.AppendState(data, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return snapshot(data), nil
}

// Restore replaces the state with a snapshot's (at start, or when this
// node lagged behind the leader's compacted log).
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	if len(data) < 8 {
		return errors.New("cluster: snapshot too short")
	}
	state, err := engine.DecodeState(data[8:])
	if err != nil {
		return fmt.Errorf("cluster: snapshot: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state, f.seq, f.failed = state, binary.BigEndian.Uint64(data), nil
	return nil
}

// snapshot is an encoded state: the sequence (8 bytes) then
// engine.AppendState's encoding. The file snapshot store adds a checksum.
type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (snapshot) Release() {}

// An entry's data is a batch of records: a uvarint count, then each record
// as a uvarint length and its bytes.
func encodeRecords(recs [][]byte) []byte {
	n := binary.MaxVarintLen64
	for _, r := range recs {
		n += binary.MaxVarintLen64 + len(r)
	}
	b := binary.AppendUvarint(make([]byte, 0, n), uint64(len(recs)))
	for _, r := range recs {
		b = binary.AppendUvarint(b, uint64(len(r)))
		b = append(b, r...)
	}
	return b
}

func forEachRecord(b []byte, fn func(rec []byte) error) error {
	count, w := binary.Uvarint(b)
	if w <= 0 {
		return errors.New("malformed record batch")
	}
	b = b[w:]
	for ; count > 0; count-- {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return errors.New("malformed record batch")
		}
		if err := fn(b[w : w+int(n)]); err != nil {
			return err
		}
		b = b[w+int(n):]
	}
	if len(b) != 0 {
		return errors.New("malformed record batch: trailing bytes")
	}
	return nil
}
