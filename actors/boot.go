package actors

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oja-exchange/oja/engine"
)

// recoveryExpiriesPerAppend bounds one append of recovery expiries.
const recoveryExpiriesPerAppend = 1024

// RecoveryGCPercent is the GOGC to run Recover and Start with (`oja serve`
// and the recovery benchmark do): they build the whole state at once, and
// collecting at the default pace would scan the growing heap again and
// again (≈ a quarter of recovery's CPU at 1M quotes).
const RecoveryGCPercent = 800

// Replayer is the log as recovery reads it (*wal.Log).
type Replayer interface {
	Log
	Replay(from uint64, fn func(seq uint64, rec []byte) error) error
	LastSeq() uint64
	ReadLatestSnapshot(fn func(seq uint64, data []byte) error) (ok bool, err error)
	CorruptSnapshots() []uint64
}

// RecoveryStats describes one recovery.
type RecoveryStats struct {
	Snapshot uint64 // sequence of the snapshot recovery started from (0: none)
	// CorruptSnapshots are newer snapshots skipped because their checksum
	// failed: recovery started from an older one (or the first record)
	// and replayed more instead.
	CorruptSnapshots []uint64
	Events           uint64        // events replayed
	LastSeq          uint64        // last sequence applied
	Expired          int           // quotes expired because their deadline passed while down
	Duration         time.Duration // wall time of the whole recovery
}

// Recover rebuilds the acknowledged state from the log:
//
//  1. load the latest snapshot, if any (else start from the empty state);
//  2. replay every later event in sequence order (events carry outcomes:
//     nothing is re-matched);
//  3. expire, durably, every open quote whose deadline passed while the
//     service was down, so no traffic ever sees a quote past its deadline.
//
// The returned state is ready for Start. Recovery saves no snapshot: that is
// the Follower's work, off the start path.
func Recover(log Replayer, now time.Time) (*engine.State, RecoveryStats, error) {
	start := time.Now()
	var stats RecoveryStats
	state, seq, err := loadSnapshot(log)
	stats.CorruptSnapshots = log.CorruptSnapshots()
	if err != nil {
		return nil, stats, err
	}
	stats.Snapshot, stats.LastSeq = seq, seq
	// NB: a replica that forgets nothing: Start forgets what the
	// service's retention allows, by the clock it serves with.
	replica := NewReplica(state, seq, 0)
	err = replica.replay(log, log.LastSeq(), replica.ApplyRecord)
	stats.LastSeq = replica.Seq()
	stats.Events = stats.LastSeq - stats.Snapshot
	if err != nil {
		return nil, stats, err
	}
	stats.Expired, err = ExpireOverdue(state, log, now)
	if err != nil {
		return nil, stats, err
	}
	stats.Duration = time.Since(start)
	return state, stats, nil
}

// ExpireOverdue expires, durably, every open quote of state whose deadline
// passed before now, and applies the expiries to state: what a state must
// go through before Start (recovery, and a new cluster leader, do it).
func ExpireOverdue(state *engine.State, log Log, now time.Time) (int, error) {
	expired := state.Expired(now.UnixMilli())
	for chunk := range slices.Chunk(expired, recoveryExpiriesPerAppend) {
		if err := appendApply(state, log, chunk...); err != nil {
			return 0, fmt.Errorf("actors: logging expiries of overdue quotes: %w", err)
		}
	}
	return len(expired), nil
}

// appendApply makes evs durable, in one append, and then applies them to
// state: how a state changes before Start, when no actor owns it yet.
func appendApply[E engine.Event](state *engine.State, log Log, evs ...E) error {
	recs := make([][]byte, len(evs))
	for i, ev := range evs {
		recs[i] = engine.AppendEvent(nil, ev)
	}
	done := make(chan error, 1)
	log.Append(recs, func(_ uint64, err error) { done <- err })
	if err := <-done; err != nil {
		return err
	}
	for _, ev := range evs {
		if err := state.Apply(ev); err != nil {
			return err
		}
	}
	return nil
}

// RecordMarkets puts cfg in force on state: resolved against the markets
// the log recorded last (engine.MarketsConfig.Resolve), and, when that
// changes anything, recorded durably (a MarketsSet) and applied. What a
// state must go through before Start, after ExpireOverdue: recovery does
// it with the --markets file, a new cluster leader with its own.
func RecordMarkets(state *engine.State, log Log, cfg *engine.MarketsConfig, now time.Time) (changed bool, err error) {
	markets, err := cfg.Resolve(state.Markets)
	if err != nil {
		return false, err
	}
	if markets.Equal(state.Markets) {
		return false, nil
	}
	ev := &engine.MarketsSet{At: max(now.UnixMilli(), state.LastAt), Markets: markets}
	if err := appendApply(state, log, ev); err != nil {
		return false, fmt.Errorf("actors: logging the markets: %w", err)
	}
	return true, nil
}

// replayReserveMax bounds the quotes Recover sizes the state's indexes for
// before a replay (engine.State.Reserve): a long log replayed without a
// snapshot holds far fewer live quotes than records, and a map never
// shrinks.
const replayReserveMax = 1 << 21

// ReplayBulkMin is the fewest records to replay that make a replay a
// bulk one (Replica.beginReplay): below it growing the indexes costs
// nothing.
const ReplayBulkMin = 1 << 12

// replayBulkMin is ReplayBulkMin; tests lower it (export_test.go) to take
// the bulk path on a few records.
var replayBulkMin atomic.Uint64

func init() { replayBulkMin.Store(ReplayBulkMin) }

// replayBatchLen is how many decoded events replayDecoded hands over at once.
const replayBatchLen = 512

// replayQueued is how many batches wait between two of replayDecoded's
// stages (records to the decoder, events to apply), replayReused how many
// used batches wait to be reused.
const (
	replayQueued = 4
	replayReused = 8
)

// errReplayStopped ends replayDecoded's scanner when a later stage failed.
var errReplayStopped = errors.New("actors: replay stopped")

// recordReplayer reads the log's records after from, in order (wal.Log).
type recordReplayer interface {
	Replay(from uint64, fn func(seq uint64, rec []byte) error) error
}

// replayDecoded replays the records after from in three stages, each on a
// goroutine of its own: a scanner copies the records out of the log, a
// decoder decodes them (together a third of a replay's time, and more than
// applying once the state's map writes moved aside), and apply runs on the
// caller's, in sequence order; on two cores they overlap. The first error,
// the scanner's, the decoder's or apply's, ends it, the records before it
// applied first; it returns only once the other stages are done (the log
// may be closed afterwards). bulk says thousands of records follow
// (ReplayBulkMin): their quotes' strings and allocations are then decoded
// into shared chunks (engine.EventDecoder), and each batch's QuoteCreated
// events over those of a batch already applied.
//
// NB: a decoded event holds no reference into the record's bytes (the
// codec copies strings), so a batch of records is reused once decoded;
// nothing keeps an applied event (apply must not), so a batch of events
// is reused once applied.
func replayDecoded(log recordReplayer, from uint64, bulk bool, warm func([]engine.Event), apply func(seq uint64, ev engine.Event) error) error {
	p := &replayPipeline{
		decode:  engine.DecodeEvent,
		raws:    make(chan *recordBatch, replayQueued),
		free:    make(chan *recordBatch, replayReused),
		batches: make(chan *decodedBatch, replayQueued),
		applied: make(chan *decodedBatch, replayReused),
		stop:    make(chan struct{}),
	}
	if bulk {
		p.bulk = new(engine.EventDecoder)
		p.decode = p.bulk.Decode
	}
	go p.scan(log, from)
	go p.decodeAll()
	applyErr := p.applyAll(warm, apply)
	// NB: batches closes only once the decoder has returned, and the
	// decoder only once the scanner has closed raws, so both errors are
	// safe to read here.
	if applyErr != nil {
		return applyErr
	}
	if p.decodeErr != nil {
		return p.decodeErr
	}
	return p.scanErr
}

// replayPipeline is replayDecoded's three stages and what joins them:
// raws carries the scanner's record batches to the decoder, free brings
// them back for reuse, batches carries the decoded events to apply and
// applied brings those back.
type replayPipeline struct {
	decode  func([]byte) (engine.Event, error)
	bulk    *engine.EventDecoder // decode's, in a bulk replay
	raws    chan *recordBatch
	free    chan *recordBatch
	batches chan *decodedBatch
	applied chan *decodedBatch
	// stop closes when the decoder or apply fails: the stages before it
	// end.
	stop               chan struct{}
	once               sync.Once
	scanErr, decodeErr error
}

// decodedBatch is a batch of events and their records' sequences; in a
// bulk replay its QuoteCreated events are created's (EventDecoder.Reuse).
type decodedBatch struct {
	seqs    []uint64
	evs     []engine.Event
	created []engine.QuoteCreated
}

// nextBatch is an applied batch to decode into again, or a new one.
func (p *replayPipeline) nextBatch() *decodedBatch {
	select {
	case b := <-p.applied:
		b.seqs, b.evs = b.seqs[:0], b.evs[:0]
		return b
	default:
	}
	b := &decodedBatch{seqs: make([]uint64, 0, replayBatchLen), evs: make([]engine.Event, 0, replayBatchLen)}
	if p.bulk != nil {
		b.created = make([]engine.QuoteCreated, replayBatchLen)
	}
	return b
}

func (p *replayPipeline) halt() { p.once.Do(func() { close(p.stop) }) }

// scan copies the records after from out of the log, replayBatchLen at a
// time, to raws, until the log ends, a read fails or a later stage stops.
func (p *replayPipeline) scan(log recordReplayer, from uint64) {
	defer close(p.raws)
	raw := new(recordBatch)
	send := func() error {
		select {
		case p.raws <- raw:
		case <-p.stop:
			return errReplayStopped
		}
		select {
		case raw = <-p.free:
			raw.reset()
		default:
			raw = new(recordBatch)
		}
		return nil
	}
	p.scanErr = log.Replay(from, func(seq uint64, rec []byte) error {
		if raw.add(seq, rec) == replayBatchLen {
			return send()
		}
		return nil
	})
	// The records before a failed read are applied first too.
	if raw.len() > 0 && !errors.Is(p.scanErr, errReplayStopped) {
		if err := send(); p.scanErr == nil {
			p.scanErr = err
		}
	}
}

// decodeAll decodes each batch of records to batches; a record that does
// not decode stops the pipeline, the events before it handed on first.
func (p *replayPipeline) decodeAll() {
	defer close(p.batches)
	for raw := range p.raws {
		select {
		case <-p.stop:
			continue // drain: the scanner ends at its next send
		default:
		}
		batch := p.nextBatch()
		if p.bulk != nil {
			p.bulk.Reuse(batch.created)
		}
		for i := range raw.len() {
			seq, rec := raw.at(i)
			ev, err := p.decode(rec)
			if err != nil {
				p.decodeErr = fmt.Errorf("actors: record %d: %w", seq, err)
				break
			}
			batch.seqs, batch.evs = append(batch.seqs, seq), append(batch.evs, ev)
		}
		select {
		case p.free <- raw:
		default:
		}
		if len(batch.evs) > 0 {
			// The events before a record that does not decode are
			// applied first, as a replay in one goroutine would.
			select {
			case p.batches <- batch:
			case <-p.stop:
			}
		}
		if p.decodeErr != nil {
			p.halt()
		}
	}
}

// applyAll applies the decoded events in sequence order on the caller's
// goroutine (warm first sees each batch) and returns apply's first error,
// having drained the stages before it.
func (p *replayPipeline) applyAll(warm func([]engine.Event), apply func(seq uint64, ev engine.Event) error) error {
	var applyErr error
	for batch := range p.batches {
		if applyErr != nil {
			continue // drain: the decoder ends once the scanner has
		}
		if warm != nil {
			warm(batch.evs)
		}
		for i, ev := range batch.evs {
			if applyErr = apply(batch.seqs[i], ev); applyErr != nil {
				p.halt()
				break
			}
		}
		if applyErr == nil {
			select {
			case p.applied <- batch: // nothing keeps an applied event
			default:
			}
		}
	}
	return applyErr
}

// recordBatch is a batch of records copied out of the log, back to back.
type recordBatch struct {
	seqs []uint64
	ends []int // where each record ends in data
	data []byte
}

// add appends a copy of rec, and returns the records held.
func (b *recordBatch) add(seq uint64, rec []byte) int {
	b.seqs = append(b.seqs, seq)
	b.data = append(b.data, rec...)
	b.ends = append(b.ends, len(b.data))
	return len(b.seqs)
}

func (b *recordBatch) len() int { return len(b.seqs) }

// at is the i-th record.
func (b *recordBatch) at(i int) (seq uint64, rec []byte) {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.seqs[i], b.data[start:b.ends[i]]
}

func (b *recordBatch) reset() { b.seqs, b.ends, b.data = b.seqs[:0], b.ends[:0], b.data[:0] }
