package actors

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/oja-exchange/oja/engine"
)

// FollowLog is the log as a Follower reads and maintains it (*wal.Log).
type FollowLog interface {
	Replay(from uint64, fn func(seq uint64, rec []byte) error) error
	ReadLatestSnapshot(fn func(seq uint64, data []byte) error) (ok bool, err error)
	CorruptSnapshots() []uint64
	DurableSeq() uint64
	SaveSnapshot(seq uint64, data []byte) error
	SnapshotSeqs() ([]uint64, error)
	DeleteSnapshots(seqs []uint64) error
	Truncate(through uint64) error
	Record(seq uint64) ([]byte, error)
	FirstRetained() (uint64, error)
	Snapshots(fn func(seq uint64, data []byte) error) error
}

// EventSink keeps the partners' event history (*eventlog.Store): it is fed
// every event the applied records make (engine.Effects.Events) with
// the record's sequence.
type EventSink interface {
	// Watermark is the last sequence whose events the sink holds.
	Watermark() uint64
	// Add queues an event of record seq (never waits for the disk).
	Add(seq uint64, e *engine.OwedEvent)
	// Applied: every record up to seq was applied.
	Applied(seq uint64)
	// Sync makes the events of records up to through durable.
	Sync(through uint64) error
}

// FollowerConfig configures a Follower.
type FollowerConfig struct {
	// SnapshotEvery is how many applied events make a snapshot due; 0
	// saves none.
	SnapshotEvery uint64
	// Retention: records older than it, and covered by a snapshot, are
	// deleted (see retain). 0 keeps every record.
	Retention time.Duration
	// QuoteRetention: every ForgetEvery records, the quotes that ended
	// longer than this before the last applied event are forgotten (the
	// Replica's rule), as the service forgets them (--retention). 0 keeps
	// every quote.
	QuoteRetention time.Duration
	// Poll is how often Run looks for new durable records; 0 means
	// followerPollDefault.
	Poll time.Duration
	// Now is the clock retention is judged by; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger // nil: slog.Default()
	// Stop, when closed, ends a load or catch-up in progress (ErrStopped)
	// and Run. nil: never.
	Stop <-chan struct{}
	// Webhooks, when set, is told (on the follower's goroutine) of every
	// webhook endpoint and owed event once the follower has caught up,
	// then of every change the records it applies make: the webhook
	// dispatcher's feed (engine.State.TellWebhooks, then each record's
	// engine.Effects).
	Webhooks engine.WebhookObserver
	// Events, when set, is fed the partner events of every record after
	// its watermark; a snapshot is saved only once they are synced. When
	// its watermark is behind the latest snapshot (a new or lost history),
	// the follower starts from an older snapshot — or from the empty state
	// when the log keeps its first record — to derive what it lacks.
	Events EventSink
}

// ErrStopped is returned by a Follower's work cut short by Config.Stop.
var ErrStopped = errors.New("actors: follower stopped")

// followerPollDefault is how often Run looks for new records by default:
// often enough that a webhook goes out within tens of milliseconds of its
// event (a look that finds nothing new is one atomic load).
const followerPollDefault = 20 * time.Millisecond

// snapshotsNewestKept is how many of the newest snapshots are always kept:
// the newest, and one to fall back on should its checksum fail.
const snapshotsNewestKept = 2

// milestonesPerRetention is how many snapshots inside the retention window
// are kept besides the newest: the points the retained log's start can
// advance to, so it advances in steps of Retention/milestonesPerRetention.
const milestonesPerRetention = 8

// Follower applies the log's durable records, in order, to an engine.State
// of its own — the same decode and Apply as Recover and `oja wal replay` —
// and, every SnapshotEvery events, encodes that state and saves it as a
// snapshot, then applies the retention policy. It reads only the log, so it
// needs no consistent cut across the live actors and never pauses them: a
// snapshot costs the follower's goroutine, not the request path. A
// standby replica runs the same piece on the records it receives.
//
// The state is the follower's alone: only the goroutine that calls CatchUp,
// Maintain or Run may touch it.
type Follower struct {
	log     FollowLog
	cfg     FollowerConfig
	logger  *slog.Logger
	replica *Replica // the state, and the one place records apply to it

	buf        []byte // the last snapshot's encoding, reused by the next
	snapshotAt uint64 // sequence of the newest snapshot on disk (0: none)
	// snapshotTimes are the state times (LastAt, unix ms) of the snapshots
	// this follower saved or looked up, by sequence.
	snapshotTimes map[uint64]int64

	stats followerCounters
}

type followerCounters struct {
	applied, snapshots, lastSnapshot, firstRetained atomic.Uint64
	lastSnapshotNanos, lastSnapshotBytes            atomic.Int64
}

// FollowerStats is what a Follower has done; safe to read from any
// goroutine.
type FollowerStats struct {
	Applied          uint64        // last sequence applied
	Snapshots        uint64        // snapshots saved by this follower
	LastSnapshot     uint64        // sequence of the last one (0: none yet)
	LastSnapshotTook time.Duration // encode + save of the last one
	LastSnapshotSize int64         // its bytes
	FirstRetained    uint64        // first record the log keeps
}

// NewFollower builds the follower's state from the latest intact snapshot
// and the durable records after it.
func NewFollower(log FollowLog, cfg FollowerConfig) (*Follower, error) {
	if cfg.Poll <= 0 {
		cfg.Poll = followerPollDefault
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	logger := cmp.Or(cfg.Logger, slog.Default())
	f := &Follower{log: log, cfg: cfg, logger: logger, snapshotTimes: map[uint64]int64{}}
	state, seq, err := loadSnapshot(log)
	if err != nil {
		return nil, err
	}
	f.snapshotAt = seq
	f.snapshotTimes[seq] = state.LastAt
	first, err := log.FirstRetained()
	if err != nil {
		return nil, err
	}
	f.stats.firstRetained.Store(first)
	if cfg.Events != nil && cfg.Events.Watermark() > log.DurableSeq() {
		logger.Warn("partner event history: it is ahead of the log (an older store restored beside a newer history?) and lists events the log does not hold; move the history aside to rebuild it",
			"history_seq", cfg.Events.Watermark(), "log_seq", log.DurableSeq())
	}
	if cfg.Events != nil && cfg.Events.Watermark() < seq {
		if state, seq, err = f.eventsStart(first, state, seq); err != nil {
			return nil, err
		}
	}
	f.replica = NewReplica(state, seq, cfg.QuoteRetention)
	// The history takes every record's events from the start; the
	// dispatcher is seeded with what is owed once caught up, then takes
	// the effects of later records.
	f.replica.Collect(false, cfg.Events != nil)
	if err := f.CatchUp(); err != nil {
		return nil, err
	}
	if cfg.Webhooks != nil {
		f.replica.State().TellWebhooks(cfg.Webhooks)
		f.replica.Collect(true, cfg.Events != nil)
	}
	return f, nil
}

// eventsStart is where a follower whose event sink lacks the events of
// records up to the latest snapshot (latest, at seq) starts instead: the
// newest snapshot at or before the sink's watermark, else the empty state
// when the log still holds its first record, else the oldest snapshot —
// the events before it are gone with the records retention deleted, and
// the history has that gap (logged).
func (f *Follower) eventsStart(first uint64, latest *engine.State, seq uint64) (*engine.State, uint64, error) {
	mark := f.cfg.Events.Watermark()
	var from uint64 // the snapshot to start from (0: none found)
	var data []byte
	err := f.log.Snapshots(func(s uint64, d []byte) error {
		// The newest at or before the watermark; failing that, and when
		// the log lacks its first record, the oldest.
		if s <= mark || (from == 0 && first > 1) {
			from, data = s, bytes.Clone(d)
		}
		return nil
	})
	if err != nil {
		// NB: a damaged older snapshot costs the history a gap, not the
		// follower: the latest one was read intact.
		f.logger.Warn("partner event history: older snapshots unreadable; the history lacks the events up to the latest snapshot", "err", err, "through_seq", seq)
		return latest, seq, nil
	}
	if from > mark || from == 0 {
		if first <= 1 {
			f.logger.Info("partner event history: deriving the events it lacks from the first record", "from_seq", mark+1, "through_seq", seq)
			return engine.NewState(), 0, nil
		}
		if from == 0 || from == seq {
			f.logger.Warn("partner event history: the log no longer holds the records of some events; the history has a gap", "from_seq", mark+1, "through_seq", seq)
			return latest, seq, nil
		}
		f.logger.Warn("partner event history: the log no longer holds the records of some events; the history has a gap", "from_seq", mark+1, "through_seq", from)
	}
	state, err := DecodeState(data)
	if err != nil {
		f.logger.Warn("partner event history: an older snapshot does not decode; the history lacks the events up to the latest snapshot", "err", err, "through_seq", seq)
		return latest, seq, nil
	}
	f.logger.Info("partner event history: deriving the events it lacks", "from_seq", max(from, mark)+1, "through_seq", seq)
	return state, from, nil
}

// loadSnapshot returns the state of the latest intact snapshot and its
// sequence, or the empty state and 0. It decodes the snapshot where the
// log lends it (wal.Log maps the file: a snapshot of a million quotes is
// ready to decode in a third of the time a copy takes).
func loadSnapshot(log interface {
	ReadLatestSnapshot(fn func(seq uint64, data []byte) error) (ok bool, err error)
}) (*engine.State, uint64, error) {
	var state *engine.State
	var seq uint64
	var decodeErr error
	// A call whose snapshot then fails its checksum is set aside and fn
	// called again with an older one: each call starts afresh.
	ok, err := log.ReadLatestSnapshot(func(s uint64, data []byte) error {
		seq = s
		state, decodeErr = DecodeState(data)
		return decodeErr
	})
	switch {
	case err != nil && err == decodeErr:
		return nil, 0, fmt.Errorf("actors: snapshot at seq %d: %w", seq, decodeErr)
	case err != nil:
		return nil, 0, fmt.Errorf("actors: reading snapshot: %w", err)
	case !ok:
		return engine.NewState(), 0, nil
	}
	return state, seq, nil
}

// errPastDurable stops a replay at the first record not yet durable.
var errPastDurable = errors.New("past the durable records")

// CatchUp applies every durable record after the last one applied. It
// returns the first error: a record that does not decode or apply is a
// fault in the log (the live service decided it), so the follower stops.
func (f *Follower) CatchUp() error {
	durable := f.log.DurableSeq()
	if durable <= f.replica.Seq() {
		return nil
	}
	err := f.replica.replay(f.log, durable, func(seq uint64, ev engine.Event) error {
		if seq > durable {
			return errPastDurable
		}
		if seq%1024 == 0 && f.stopped() {
			return ErrStopped
		}
		if err := f.replica.ApplyRecord(seq, ev); err != nil {
			return err
		}
		f.replica.HandOut(f.cfg.Webhooks, f.cfg.Events)
		return nil
	})
	f.stats.applied.Store(f.replica.Seq())
	if f.cfg.Events != nil {
		f.cfg.Events.Applied(f.replica.Seq())
	}
	switch {
	case err == nil, errors.Is(err, errPastDurable):
		return nil
	case errors.Is(err, ErrStopped):
		return err
	}
	return fmt.Errorf("actors: follower: %w", err)
}

// Maintain saves a snapshot when SnapshotEvery events were applied since the
// newest one, then applies the retention policy (retain).
func (f *Follower) Maintain() error {
	applied, state := f.replica.Seq(), f.replica.State()
	if f.cfg.SnapshotEvery == 0 || applied-f.snapshotAt < f.cfg.SnapshotEvery {
		return nil
	}
	start := time.Now()
	if f.cfg.Events != nil {
		// NB: a failed history does not stop snapshots (the log's own
		// safety); the next start finds its watermark behind and derives
		// the events again.
		if err := f.cfg.Events.Sync(applied); err != nil {
			f.logger.Error("partner event history not synced before a snapshot", "err", err, "seq", applied)
		}
	}
	f.buf = engine.AppendState(f.buf[:0], state)
	data := f.buf
	if err := f.log.SaveSnapshot(applied, data); err != nil {
		return fmt.Errorf("actors: follower: snapshot at seq %d: %w", applied, err)
	}
	took := time.Since(start)
	f.snapshotAt = applied
	f.snapshotTimes[applied] = state.LastAt
	f.stats.snapshots.Add(1)
	f.stats.lastSnapshot.Store(applied)
	f.stats.lastSnapshotNanos.Store(int64(took))
	f.stats.lastSnapshotBytes.Store(int64(len(data)))
	f.logger.Info("snapshot saved", "seq", applied, "bytes", len(data), "took", took.String())
	return f.retain()
}

// retain decides which snapshots to keep and where the log may start:
//
//   - the newest snapshotsNewestKept snapshots are kept;
//   - with a Retention, the base is the newest snapshot whose state time is
//     older than now-Retention: every record up to it is older than the
//     retention and covered by it, so they are deleted (Truncate) and the
//     base is kept as the state the retained records start from;
//   - between the base and the newest, a snapshot is kept when it is at
//     least Retention/milestonesPerRetention younger than the last kept one:
//     the milestones the base advances to later;
//   - every other snapshot is deleted.
//
// So `oja wal replay --until` reaches any point inside the retention (from
// the base), the log holds at most Retention·(1+1/milestonesPerRetention)
// plus SnapshotEvery events, and at most milestonesPerRetention+3
// snapshots are on disk.
func (f *Follower) retain() error {
	seqs, err := f.log.SnapshotSeqs()
	if err != nil || len(seqs) == 0 {
		return err
	}
	first, err := f.log.FirstRetained()
	if err != nil {
		return err
	}
	keep := map[uint64]bool{}
	for _, s := range seqs[max(len(seqs)-snapshotsNewestKept, 0):] {
		keep[s] = true
	}
	var base uint64
	if f.cfg.Retention > 0 {
		cutoff := f.cfg.Now().Add(-f.cfg.Retention).UnixMilli()
		step := f.cfg.Retention.Milliseconds() / milestonesPerRetention
		lastKept := int64(-1)
		for _, s := range seqs {
			at := f.snapshotTime(s, first)
			if at <= cutoff {
				base = s // the newest such wins
			}
			if lastKept < 0 || at-lastKept >= step {
				keep[s], lastKept = true, at
			}
		}
		if base > 0 {
			keep[base] = true
		}
	}
	var drop []uint64
	for _, s := range seqs {
		if !keep[s] || s < base {
			drop = append(drop, s)
		}
	}
	if err := f.log.DeleteSnapshots(drop); err != nil {
		return fmt.Errorf("actors: follower: pruning snapshots: %w", err)
	}
	for _, s := range drop {
		delete(f.snapshotTimes, s)
	}
	if base >= first {
		if err := f.log.Truncate(base); err != nil {
			return fmt.Errorf("actors: follower: log retention through seq %d: %w", base, err)
		}
		first = base + 1
		f.logger.Info("log retention: records deleted", "through_seq", base, "first_retained", first)
	}
	f.stats.firstRetained.Store(first)
	return nil
}

// snapshotTime is the state time of the snapshot at seq: remembered, or
// the time of the record at seq; a snapshot whose record retention already
// deleted is the base, older than any cutoff.
func (f *Follower) snapshotTime(seq, firstRetained uint64) int64 {
	if at, ok := f.snapshotTimes[seq]; ok {
		return at
	}
	at := int64(0)
	if seq >= firstRetained {
		if rec, err := f.log.Record(seq); err == nil {
			if ev, err := engine.DecodeEvent(rec); err == nil {
				at = ev.Time()
			}
		}
	}
	f.snapshotTimes[seq] = at
	return at
}

func (f *Follower) stopped() bool {
	select {
	case <-f.cfg.Stop:
		return true
	default:
		return false
	}
}

// Run catches up and maintains every Poll until Config.Stop is closed, then
// returns nil; or returns the first error (the caller reports it: the
// service keeps serving from its actors, without new snapshots).
func (f *Follower) Run() error {
	t := time.NewTicker(f.cfg.Poll)
	defer t.Stop()
	for {
		err := f.CatchUp()
		if err == nil {
			err = f.Maintain()
		}
		if errors.Is(err, ErrStopped) {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-f.cfg.Stop:
			return nil
		case <-t.C:
		}
	}
}

// Applied is the last sequence applied. Only for the follower's goroutine.
func (f *Follower) Applied() uint64 { return f.replica.Seq() }

// State is the follower's state. Only for the follower's goroutine.
func (f *Follower) State() *engine.State { return f.replica.State() }

// Stats returns what the follower has done so far.
func (f *Follower) Stats() FollowerStats {
	return FollowerStats{
		Applied:          f.stats.applied.Load(),
		Snapshots:        f.stats.snapshots.Load(),
		LastSnapshot:     f.stats.lastSnapshot.Load(),
		LastSnapshotTook: time.Duration(f.stats.lastSnapshotNanos.Load()),
		LastSnapshotSize: f.stats.lastSnapshotBytes.Load(),
		FirstRetained:    f.stats.firstRetained.Load(),
	}
}
