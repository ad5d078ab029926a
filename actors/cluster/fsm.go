package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// fsm is a node's replica of the state: every node, the leader too, applies
// each committed Raft entry to it with engine.State.Apply, the one applier
// replay and the actors' routing share (engine/outcome.go). Its sequence
// numbers count records (the events in the entries) from 1, like the
// single-node log's, so `{seq, hash}` compares across nodes.
//
// A new leader's actors start from the replica's state itself, not a copy
// (lend): the fsm then rebuilds a replica of its own beside them, from its
// snapshot base and the entries applied since, as a snapshot is rebuilt,
// and catches up on the entries committed meanwhile; until then it counts
// records and keeps entries, and hands out their effects (webhook
// effects, partner events) once the rebuilt replica applies them, in
// order. Reads of the replica (read) wait for the rebuild.
type fsm struct {
	logger *slog.Logger

	mu sync.RWMutex
	// replica is the state and the last record applied; nil while lent to
	// the actors and rebuilding.
	replica *actors.Replica
	// seq is the last record applied (counted while rebuilding).
	seq uint64
	// While rebuilding: queued are the entries committed since the lend,
	// for the rebuild to apply; rebuilt closes when the replica is back
	// (or failed, or replaced by a Restore); rebuild counts lends and
	// restores, so a rebuild that was overtaken drops its result.
	queued     []appliedEntry
	rebuilt    chan struct{}
	rebuild    uint64
	rebuilding sync.WaitGroup // the rebuild goroutines (close waits)
	// rebuildGate, when set (tests), holds each rebuild back until closed.
	rebuildGate chan struct{}
	// The snapshot base: the encoded state (engine.AppendState) at
	// baseSeq (nil: the empty state) and the command entries applied
	// since, so that a snapshot is taken without stopping applies
	// (Snapshot captures them; Persist rebuilds the state beside).
	base    []byte
	baseSeq uint64
	since   []appliedEntry
	// failed is the first record that did not apply: the replica no longer
	// follows the leader (a bug or a foreign log); it refuses to serve.
	failed error
	// observer is the leader's webhook dispatcher, handed each batch's
	// effects once the lock is released (nil on a follower).
	observer engine.WebhookObserver
	// quoteRetention is the service's --retention (actors.Replica).
	quoteRetention time.Duration
	// events, when set, is this node's partner event history, fed the
	// events of every record applied (every node keeps its own, so a new
	// leader answers from it).
	events actors.EventSink
}

// appliedEntry is a command entry applied after the snapshot base.
type appliedEntry struct {
	data    []byte
	lastSeq uint64
}

// applied is what FSM.Apply returns for a command entry: the first record's
// sequence, or why the entry did not apply.
type applied struct {
	firstSeq uint64
	err      error
}

func newFSM(logger *slog.Logger, quoteRetention time.Duration, events actors.EventSink) *fsm {
	f := &fsm{logger: logger, quoteRetention: quoteRetention, events: events}
	f.replica = actors.NewReplica(engine.NewState(), 0, quoteRetention)
	f.collect()
	return f
}

// collect sets what the replica keeps: webhook effects while a dispatcher
// observes, partner events while there is a history. REQUIRES: f.mu held
// (or f not shared yet), f.replica not nil.
func (f *fsm) collect() {
	f.replica.Collect(f.observer != nil, f.events != nil)
}

// fail records the first record that did not apply and ends a rebuild.
// REQUIRES: f.mu held.
func (f *fsm) fail(err error) {
	f.failed = err
	f.logger.Error("replica diverged: a committed record does not apply; this node refuses to serve", "err", err)
	f.endRebuild()
}

// endRebuild stops waiting for a rebuild: it ended, failed, or a Restore
// overtook it. REQUIRES: f.mu held.
func (f *fsm) endRebuild() {
	f.rebuild++
	f.queued = nil
	if f.rebuilt != nil {
		close(f.rebuilt)
		f.rebuilt = nil
	}
}

var (
	_ raft.FSM         = (*fsm)(nil)
	_ raft.BatchingFSM = (*fsm)(nil)
)

// Apply applies one committed entry.
func (f *fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch applies committed entries in order under one lock, then hands
// their effects out without it.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	f.mu.Lock()
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		out[i] = f.applyCommand(l)
	}
	if f.replica == nil {
		// Rebuilding (or failed): the rebuild hands the effects out.
		f.mu.Unlock()
		return out
	}
	effs, observer, seq := f.replica.TakeEffects(), f.observer, f.seq
	f.mu.Unlock()
	// NB: Raft calls ApplyBatch from one goroutine, so batches are handed
	// out in order (a rebuild hands out all of its own before the replica
	// is back); a dispatcher seeded meanwhile (observeWebhooks) may be
	// told of an event twice, which it skips.
	effs.HandOut(observer, f.events)
	if f.events != nil {
		f.events.Applied(seq)
	}
	return out
}

func (f *fsm) applyCommand(l *raft.Log) applied {
	res := applied{firstSeq: f.seq + 1}
	if f.failed != nil {
		res.err = f.failed
		return res
	}
	var err error
	if f.replica != nil {
		err = forEachRecord(l.Data, f.replica.Apply)
		f.seq = f.replica.Seq()
	} else {
		// Rebuilding: counted now, applied by the rebuild. NB: a record
		// that does not apply fails the replica then, not this entry.
		err = forEachRecord(l.Data, func([]byte) error { f.seq++; return nil })
	}
	if err != nil {
		f.fail(fmt.Errorf("cluster: raft entry %d: %w", l.Index, err))
		res.err = f.failed
		return res
	}
	e := appliedEntry{data: l.Data, lastSeq: f.seq}
	f.since = append(f.since, e)
	if f.replica == nil {
		f.queued = append(f.queued, e)
	}
	return res
}

// lend hands the replica's state to a new leader's actors, which take it
// over, and starts rebuilding a replica beside them. It waits for an
// earlier rebuild to end first (a node that lost and regained leadership
// meanwhile).
func (f *fsm) lend() (*engine.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.awaitReplica(f.mu.Lock, f.mu.Unlock)
	if f.failed != nil {
		return nil, f.failed
	}
	state := f.replica.State()
	state.CollectEffects(false, false) // the actors' state collects nothing
	state.ClearEffects()
	f.replica = nil
	f.rebuild++
	f.rebuilt = make(chan struct{})
	gen, base, baseSeq, entries, lent := f.rebuild, f.base, f.baseSeq, f.since[:len(f.since):len(f.since)], f.seq
	gate := f.rebuildGate
	f.rebuilding.Go(func() {
		if gate != nil {
			<-gate
		}
		f.rebuildReplica(gen, base, baseSeq, entries, lent)
	})
	return state, nil
}

// awaitReplica returns once the replica is not lent (or failed), with f.mu
// held again as lock took it: it waits for a rebuild without the lock.
// REQUIRES: f.mu held by lock.
func (f *fsm) awaitReplica(lock, unlock func()) {
	for f.replica == nil && f.failed == nil {
		wait := f.rebuilt
		unlock()
		<-wait
		lock()
	}
}

// close ends a rebuild still running and waits for it to stop: the fsm
// hands nothing out after. Raft no longer applies (it was shut down).
func (f *fsm) close() {
	f.mu.Lock()
	if f.replica == nil && f.failed == nil {
		f.failed = errors.New("cluster: node closed while its replica was rebuilt")
		f.endRebuild()
	}
	f.mu.Unlock()
	f.rebuilding.Wait()
}

// rebuildReplica rebuilds the replica lent at record lent from the
// snapshot base and the entries applied since it, then applies the entries
// queued while it ran, handing their effects out, until none is left: then
// the replica is back. It applies without the lock and tells the world
// (the dispatcher, the history) only under it, after checking that no
// Restore overtook it, so what it tells never comes after a Restore's.
func (f *fsm) rebuildReplica(gen uint64, base []byte, baseSeq uint64, entries []appliedEntry, lent uint64) {
	began := time.Now()
	r, err := replay(base, baseSeq, entries, f.quoteRetention)
	if err == nil && r.Seq() != lent {
		err = fmt.Errorf("cluster: rebuilt the replica to record %d, want %d", r.Seq(), lent)
	}
	var (
		told     engine.WebhookObserver // the dispatcher told of every endpoint and owed event
		observer engine.WebhookObserver // the dispatcher when the last round applied
		applied  bool                   // the last round applied entries
	)
	for {
		f.mu.Lock()
		if f.rebuild != gen {
			f.mu.Unlock()
			return // a Restore replaced the replica, or the node closed
		}
		if applied {
			// The effects of the records after the lend, handed out as
			// the replica they were lent from would have.
			effs := r.TakeEffects()
			effs.HandOut(observer, f.events)
			if f.events != nil && err == nil {
				f.events.Applied(r.Seq())
			}
		}
		if err != nil {
			f.fail(fmt.Errorf("cluster: rebuilding the replica: %w", err))
			f.mu.Unlock()
			return
		}
		queued := f.queued
		f.queued = nil
		if observer = f.observer; observer != nil && observer != told {
			r.State().TellWebhooks(observer) // the dispatcher skips what it holds already
			told = observer
		}
		if len(queued) == 0 {
			if r.Seq() != f.seq {
				// The records counted while it rebuilt and the records
				// it applied must be the same ones.
				f.fail(fmt.Errorf("cluster: rebuilt the replica to record %d, counted %d", r.Seq(), f.seq))
				f.mu.Unlock()
				return
			}
			f.replica = r
			f.collect()
			f.endRebuild()
			seq := r.Seq() // NB: r is the live replica's from here on, the applier's
			f.mu.Unlock()
			// What the lend costs after the start: until now the webhook
			// events and partner events of new records waited.
			f.logger.Info("replica rebuilt beside the actors", "rebuild_duration", time.Since(began).String(),
				"base_seq", baseSeq, "lent_seq", lent, "seq", seq)
			return
		}
		f.mu.Unlock()
		r.Collect(observer != nil, f.events != nil)
		for _, e := range queued {
			if err = forEachRecord(e.data, r.Apply); err != nil {
				break
			}
		}
		applied = true
	}
}

// read runs fn with the state under the read lock, once the replica is
// not lent.
func (f *fsm) read(fn func(s *engine.State, seq uint64) error) error {
	f.mu.RLock()
	f.awaitReplica(f.mu.RLock, f.mu.RUnlock)
	defer f.mu.RUnlock()
	if f.failed != nil {
		return f.failed
	}
	return fn(f.replica.State(), f.replica.Seq())
}

// Snapshot captures the state as of now without encoding it: the base and
// the entries applied since (a slice header copy under the read lock), so
// applies never wait for a snapshot. Persist, on Raft's snapshot
// goroutine, decodes the base, applies the entries and encodes the result
// — the state a replica at this point holds — then makes it the new base.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	d, err := f.delta()
	if err != nil {
		return nil, err
	}
	return d, nil
}

// delta is the state at the last applied record as its last snapshot and
// the entries since, taken under the read lock (slice headers): what
// Snapshot hands Raft, and what a backup and GET /admin/v1/state rebuild
// off the lock.
func (f *fsm) delta() (*deltaSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.failed != nil {
		return nil, f.failed
	}
	return &deltaSnapshot{f: f, base: f.base, baseSeq: f.baseSeq, entries: f.since[:len(f.since):len(f.since)], seq: f.seq}, nil
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
	state, err := actors.DecodeState(data[8:])
	if err != nil {
		return fmt.Errorf("cluster: snapshot: %w", err)
	}
	seq := binary.BigEndian.Uint64(data)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replica, f.seq, f.failed = actors.NewReplica(state, seq, f.quoteRetention), seq, nil
	f.base, f.baseSeq, f.since = data[8:], seq, nil
	f.endRebuild() // a rebuild still running is overtaken
	f.collect()
	if f.events != nil {
		if mark := f.events.Watermark(); mark < seq {
			// NB: the entries behind a snapshot are compacted away; their
			// events cannot be derived on this node.
			f.logger.Warn("partner event history: a snapshot skipped records this node's history had not seen; it has a gap", "from_seq", mark+1, "through_seq", seq)
		}
		f.events.Applied(seq)
	}
	if f.observer != nil {
		state.TellWebhooks(f.observer) // the dispatcher skips what it holds already
	}
	return nil
}

// observeWebhooks tells o of every webhook endpoint and owed event the
// replica holds, then of every change applies make (nil: stop).
func (f *fsm) observeWebhooks(o engine.WebhookObserver) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observer = o
	if f.replica == nil {
		return // rebuilding: the rebuild tells o once it has a state
	}
	f.collect()
	if o != nil {
		f.replica.State().TellWebhooks(o)
	}
}

// rebase makes encoded, the state at seq, the snapshot base and drops the
// entries it covers.
func (f *fsm) rebase(encoded []byte, seq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if seq <= f.baseSeq {
		return // a later snapshot (or a restore) got there first
	}
	i := 0
	for i < len(f.since) && f.since[i].lastSeq <= seq {
		i++
	}
	f.base, f.baseSeq = encoded, seq
	f.since = append([]appliedEntry(nil), f.since[i:]...)
}

// deltaSnapshot is a snapshot as captured: a base and the entries after it.
// Its encoding is the sequence (8 bytes) then engine.AppendState's; the
// file snapshot store adds a checksum.
type deltaSnapshot struct {
	f       *fsm
	base    []byte
	baseSeq uint64
	entries []appliedEntry
	seq     uint64
}

func (s *deltaSnapshot) Persist(sink raft.SnapshotSink) error {
	data, err := s.encode()
	if err == nil {
		_, err = sink.Write(data)
	}
	if err != nil {
		_ = sink.Cancel()
		return err
	}
	if s.f.events != nil {
		// The events of the records the snapshot covers are synced before
		// Raft may compact those records away. NB: a failed history does
		// not hold snapshots back; it is reported by the history itself.
		_ = s.f.events.Sync(s.seq)
	}
	if err := sink.Close(); err != nil {
		return err
	}
	s.f.rebase(data[8:], s.seq)
	return nil
}

// encode rebuilds the state at s.seq beside the live one.
func (s *deltaSnapshot) encode() ([]byte, error) {
	r, err := s.rebuild()
	if err != nil {
		return nil, err
	}
	data := binary.BigEndian.AppendUint64(make([]byte, 0, len(s.base)+len(s.base)/8+64), s.seq)
	return engine.AppendState(data, r.State()), nil
}

// rebuild is the replica at the snapshot's record: its base with its
// entries applied.
func (s *deltaSnapshot) rebuild() (*actors.Replica, error) {
	r, err := replay(s.base, s.baseSeq, s.entries, s.f.quoteRetention)
	if err != nil {
		return nil, fmt.Errorf("cluster: snapshot: %w", err)
	}
	if r.Seq() != s.seq {
		return nil, fmt.Errorf("cluster: snapshot: rebuilt to record %d, want %d", r.Seq(), s.seq)
	}
	return r, nil
}

// replay is a replica of base (an encoded state at baseSeq; nil: the
// empty state) with entries applied, by the same rules as the live one:
// the same records forget the same quotes.
func replay(base []byte, baseSeq uint64, entries []appliedEntry, quoteRetention time.Duration) (*actors.Replica, error) {
	state := engine.NewState()
	if base != nil {
		var err error
		if state, err = actors.DecodeState(base); err != nil {
			return nil, fmt.Errorf("base: %w", err)
		}
	}
	r := actors.NewReplica(state, baseSeq, quoteRetention)
	for _, e := range entries {
		if err := forEachRecord(e.data, r.Apply); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (*deltaSnapshot) Release() {}

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
