package actors

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/oja-exchange/oja/engine"
)

// ForgetEvery is how many records pass between two forgettings of ended
// quotes in a Replica: at fixed sequence numbers, judged by the state's own
// time (its last event's), so that every replica of one log — a node's,
// another node's, a snapshot rebuilt beside one, an offline replay —
// forgets the same quotes at the same record and their states stay equal.
const ForgetEvery = 1 << 16

// forgetEvery is ForgetEvery; tests lower it (export_test.go) to see the
// rule on a few records.
var forgetEvery atomic.Uint64

func init() { forgetEvery.Store(ForgetEvery) }

// Replica is a replica of the state, and the one place a record is applied
// to one: decoded, applied with engine.State.Apply (the function the
// actors' routing and recovery share), ended quotes forgotten every
// ForgetEvery records, and the effects the records make (webhook effects,
// partner events) kept as data for the caller to hand out, never called
// from inside. The single-node Follower, the cluster's FSM and its
// snapshots, and the offline replay each run one: they differ only in
// where the records come from and where the snapshots go.
//
// A Replica is not safe for concurrent use: its owner serializes.
type Replica struct {
	state *engine.State
	seq   uint64 // the last record applied
	// quoteRetention (ms) is the service's --retention: ended quotes older
	// than it (by the state's time) are forgotten; 0 keeps every one.
	quoteRetention int64
	effects        ReplicaEffects
	webhooks       bool // collecting webhook effects
	events         bool // collecting partner events
}

// ReplicaEffects are what applied records ask of the world, in record order.
type ReplicaEffects struct {
	Webhooks engine.Effects // its Webhooks only: Events are below, with their records
	Events   []SeqEvent
}

// SeqEvent is a partner event and the sequence of the record that made it.
type SeqEvent struct {
	Seq   uint64
	Event engine.OwedEvent
}

// NewReplica is the replica of state, which holds the records up to seq,
// forgetting ended quotes older than quoteRetention (0: never).
func NewReplica(state *engine.State, seq uint64, quoteRetention time.Duration) *Replica {
	return &Replica{state: state, seq: seq, quoteRetention: quoteRetention.Milliseconds()}
}

// Collect sets which effects the replica keeps: webhook effects (for a
// dispatcher), partner events (for a history).
func (r *Replica) Collect(webhooks, events bool) {
	r.webhooks, r.events = webhooks, events
	r.state.CollectEffects(webhooks, events)
}

// Apply applies the next record (seq Seq()+1).
func (r *Replica) Apply(rec []byte) error {
	ev, err := engine.DecodeEvent(rec)
	if err != nil {
		return fmt.Errorf("record %d: %w", r.seq+1, err)
	}
	return r.ApplyEvent(ev)
}

// ApplyEvent applies the next record, decoded.
func (r *Replica) ApplyEvent(ev engine.Event) error {
	seq := r.seq + 1
	if err := r.state.Apply(ev); err != nil {
		return &RecordError{Seq: seq, Err: err}
	}
	r.seq = seq
	if r.webhooks || r.events {
		effs := r.state.Effects()
		r.effects.Webhooks.Webhooks = append(r.effects.Webhooks.Webhooks, effs.Webhooks...)
		for _, e := range effs.Events {
			r.effects.Events = append(r.effects.Events, SeqEvent{Seq: seq, Event: e})
		}
		r.state.ClearEffects()
	}
	if r.quoteRetention > 0 && seq%forgetEvery.Load() == 0 {
		r.state.ForgetEnded(r.state.LastAt - r.quoteRetention)
	}
	return nil
}

// RecordError is a record that does not apply: its sequence and the
// engine's refusal.
type RecordError struct {
	Seq uint64
	Err error
}

func (e *RecordError) Error() string { return fmt.Sprintf("record %d: %v", e.Seq, e.Err) }
func (e *RecordError) Unwrap() error { return e.Err }

// TakeEffects returns the effects kept since the last call and forgets them.
func (r *Replica) TakeEffects() ReplicaEffects {
	effs := r.effects
	r.effects = ReplicaEffects{}
	return effs
}

// HandOut gives the effects kept so far to a webhook observer and an event
// sink (either may be nil) and forgets them, keeping their room for the
// next: for an owner that holds no lock while applying.
func (r *Replica) HandOut(webhooks engine.WebhookObserver, events EventSink) {
	r.effects.HandOut(webhooks, events)
	r.effects.Webhooks.Webhooks = r.effects.Webhooks.Webhooks[:0]
	r.effects.Events = r.effects.Events[:0]
}

// HandOut gives effs to a webhook observer and an event sink (either may
// be nil): the effects as data, handed out by the replica's owner outside
// any lock of its own.
func (effs *ReplicaEffects) HandOut(webhooks engine.WebhookObserver, events EventSink) {
	if webhooks != nil {
		effs.Webhooks.Tell(webhooks)
	}
	if events != nil {
		for i := range effs.Events {
			events.Add(effs.Events[i].Seq, &effs.Events[i].Event)
		}
	}
}

// beginReplay prepares a replay of the records up to last and reports
// whether it is a bulk one: ReplayBulkMin records or more. A bulk one
// sizes an empty state's quote indexes for them (each could create a
// quote), at most replayReserveMax, instead of growing them a million
// times (engine.State.Reserve; a state that holds quotes is left as it
// is), and writes its Idempotency-Key index on another core
// (DeferKeyWrites) until settle, which the caller must call
// once the replay ends, before anything reads the state. Fewer records (a
// follower catching up on a quiet log every tick) change nothing.
func (r *Replica) beginReplay(last uint64) (bulk bool, settle func()) {
	if last < r.seq+replayBulkMin.Load() {
		return false, func() {}
	}
	r.state.Reserve(int(min(last-r.seq, replayReserveMax)))
	return true, DeferKeyWrites(r.state)
}

// replay replays log's records after the last one applied, about up to
// last, through apply (replayDecoded), which must apply each in turn
// (ApplyRecord): as a bulk replay when they are many (beginReplay), the
// state's quote index read ahead a batch at a time (engine.State.Warm).
func (r *Replica) replay(log recordReplayer, last uint64, apply func(seq uint64, ev engine.Event) error) error {
	bulk, settle := r.beginReplay(last)
	defer settle()
	return replayDecoded(log, r.seq, bulk, r.state.Warm, apply)
}

// ApplyRecord applies ev, the event of record seq, which must be the next
// record: what a reader of a log that numbers its records calls
// (recovery, the Follower, oja wal verify).
func (r *Replica) ApplyRecord(seq uint64, ev engine.Event) error {
	if seq != r.seq+1 {
		return fmt.Errorf("actors: record %d follows %d: the log skips records", seq, r.seq)
	}
	if err := r.ApplyEvent(ev); err != nil {
		return fmt.Errorf("actors: %w", err)
	}
	return nil
}

// State is the replica's state (the owner's to read, or to hand over).
func (r *Replica) State() *engine.State { return r.state }

// Seq is the last record applied.
func (r *Replica) Seq() uint64 { return r.seq }
