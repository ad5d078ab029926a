package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/wal"
)

// RecoveryRun is one way of starting on a log: from the first event, or
// from a snapshot of the final state.
type RecoveryRun struct {
	// ReadySeconds is the median time to ready: wal.Open, actors.Recover
	// and actors.Start, i.e. what `oja serve` does before /readyz says yes.
	ReadySeconds float64   `json:"ready_seconds"`
	Rounds       []float64 `json:"rounds_ready_seconds"`
	// The parts of ReadySeconds (medians).
	OpenSeconds    float64 `json:"open_seconds"`
	RecoverSeconds float64 `json:"recover_seconds"`
	ReplaySeconds  float64 `json:"replay_seconds"`
	StartSeconds   float64 `json:"start_seconds"`
	// EventsReplayed is how many events Recover applied; EventsPerSecond
	// is that over ReplaySeconds (wal.Log.Replay: read, checksum, decode,
	// State.Apply), 0 when nothing was replayed.
	EventsReplayed  uint64  `json:"events_replayed"`
	EventsPerSecond float64 `json:"events_per_second"`
	OpenQuotes      int     `json:"open_quotes"`
}

// RecoverySize is section 5 at one log size.
type RecoverySize struct {
	Quotes          int     `json:"quotes"`
	Events          int     `json:"events"`
	DiskBytes       uint64  `json:"disk_bytes"`
	ScannedBytes    uint64  `json:"scanned_bytes"`    // keys and values of every record
	GenerateSeconds float64 `json:"generate_seconds"` // engine + wal.Log with Sync false
	SnapshotBytes   int     `json:"snapshot_bytes"`
	// SnapshotSaveSeconds is one wal.Log.SaveSnapshot of the final state
	// (EncodeState's time is EncodeSeconds).
	SnapshotSaveSeconds float64     `json:"snapshot_save_seconds"`
	EncodeSeconds       float64     `json:"snapshot_encode_seconds"`
	NoSnapshot          RecoveryRun `json:"no_snapshot"`
	WithSnapshot        RecoveryRun `json:"with_snapshot"`
	// RawScanRecordsPerSecond is the median of a raw Pebble full scan of
	// the same store (every record's key and value touched, nothing
	// decoded); Ratio is replay events/s ÷ that (median of per-round
	// ratios).
	RawScanRecordsPerSecond float64   `json:"raw_scan_records_per_second"`
	RawScanSeconds          float64   `json:"raw_scan_seconds"`
	RawScanRounds           []float64 `json:"rounds_raw_scan_records_per_second"`
	Ratio                   float64   `json:"replay_over_raw_scan"`
	// Replay's two parts, each alone (once, after the rounds), done as
	// Recover does them: DecodeSeconds reads and decodes every record
	// (wal.Log.Replay and an engine.EventDecoder, the events kept in
	// memory); ApplySeconds applies those decoded events to a new
	// engine.State, reading nothing, its Idempotency-Key writes on a
	// goroutine of their own (actors.DeferKeyWrites, settled within the
	// time) and its quote index read ahead a batch at a time (State.Warm). Recovery overlaps them (scanning, decoding and applying on
	// three goroutines), so its replay takes at least the larger:
	// RatioCeiling is the ratio a replay would reach if it took no longer
	// than ApplySeconds, the bound applying puts on it.
	DecodeSeconds float64 `json:"replay_decode_seconds"`
	ApplySeconds  float64 `json:"replay_apply_seconds"`
	RatioCeiling  float64 `json:"replay_over_raw_scan_ceiling"`
}

// RecoveryReport is section 5.
type RecoveryReport struct {
	// Cache says the page cache was warm: each log was just written and
	// read; caches are not dropped on a shared machine.
	Cache string         `json:"cache"`
	Sizes []RecoverySize `json:"sizes"`
}

func (r *run) recoverySection(ctx context.Context) error {
	rep := &RecoveryReport{Cache: "warm"}
	r.report.Recovery = rep
	for _, quotes := range r.cfg.Sizes {
		size, err := r.recoverySize(ctx, quotes)
		if size != nil {
			rep.Sizes = append(rep.Sizes, *size)
		}
		if err != nil {
			return fmt.Errorf("%d quotes: %w", quotes, err)
		}
		releaseMemory()
	}
	return nil
}

func (r *run) recoverySize(ctx context.Context, quotes int) (*RecoverySize, error) {
	dir, err := r.scratch("recovery")
	if err != nil {
		return nil, err
	}
	defer r.remove(dir)
	store := filepath.Join(dir, "store")
	size := &RecoverySize{Quotes: quotes}

	r.progress.set("recovery: generating a log of %d quotes", quotes)
	start := time.Now()
	state, events, err := generateLog(store, r.cfg.Seed, quotes, func(done int) {
		r.progress.set("recovery: generating a log of %d quotes: %d%%", quotes, done*100/quotes)
	})
	if err != nil {
		return nil, err
	}
	size.GenerateSeconds = round3(time.Since(start).Seconds())
	size.Events = events
	openQuotes := 0
	for q := range state.Quotes.All() {
		if q.Status.Open() {
			openQuotes++
		}
	}
	start = time.Now()
	snapshot := engine.EncodeState(state)
	size.EncodeSeconds = round3(time.Since(start).Seconds())
	size.SnapshotBytes = len(snapshot)
	// NB: the snapshot waits in a file, not in memory, so the recoveries
	// below run with the heap they would have in a fresh process.
	snapshotFile := filepath.Join(dir, "snapshot")
	if err := os.WriteFile(snapshotFile, snapshot, 0o644); err != nil {
		return nil, err
	}
	state, snapshot = nil, nil
	releaseMemory()
	// One untimed open and close first, so that Pebble's own recovery of
	// the generator's WAL is not charged to the first timed round only.
	settle, err := wal.Open(store, wal.Options{Sync: true})
	if err != nil {
		return nil, err
	}
	if err := settle.Close(); err != nil {
		return nil, err
	}
	size.DiskBytes = directoryBytes(store)

	var noSnapshot, withSnapshot []recoveryRound
	for round := range r.cfg.Rounds {
		rawFirst := round%2 == 0
		for _, raw := range []bool{rawFirst, !rawFirst} {
			if ctx.Err() != nil {
				return size, ctx.Err()
			}
			if raw {
				r.progress.set("recovery: %d quotes: round %d/%d: raw Pebble scan", quotes, round+1, r.cfg.Rounds)
				perSecond, seconds, scanned, err := rawScan(store)
				if err != nil {
					return size, err
				}
				size.RawScanRounds = append(size.RawScanRounds, round3(perSecond))
				size.RawScanSeconds = round3(seconds)
				size.ScannedBytes = scanned
				continue
			}
			r.progress.set("recovery: %d quotes: round %d/%d: replay from the first event", quotes, round+1, r.cfg.Rounds)
			profile := ""
			if round == 0 && quotes == r.cfg.Sizes[len(r.cfg.Sizes)-1] {
				profile = "recovery-replay"
			}
			res, err := r.recoverOnce(ctx, store, profile)
			if err != nil {
				return size, err
			}
			noSnapshot = append(noSnapshot, res)
			releaseMemory()
		}
	}

	r.progress.set("recovery: %d quotes: decode alone, apply alone", quotes)
	if size.DecodeSeconds, size.ApplySeconds, err = replayParts(store, events); err != nil {
		return size, err
	}
	if size.ApplySeconds > 0 && len(size.RawScanRounds) > 0 {
		size.RatioCeiling = round3(float64(events) / size.ApplySeconds / median(size.RawScanRounds))
	}
	releaseMemory()

	r.progress.set("recovery: %d quotes: saving the snapshot", quotes)
	if size.SnapshotSaveSeconds, err = saveSnapshot(store, snapshotFile); err != nil {
		return size, err
	}
	for round := range r.cfg.Rounds {
		if ctx.Err() != nil {
			return size, ctx.Err()
		}
		r.progress.set("recovery: %d quotes: round %d/%d: from the snapshot", quotes, round+1, r.cfg.Rounds)
		profile := ""
		if round == 0 && quotes == r.cfg.Sizes[len(r.cfg.Sizes)-1] {
			profile = "recovery-snapshot"
		}
		res, err := r.recoverOnce(ctx, store, profile)
		if err != nil {
			return size, err
		}
		withSnapshot = append(withSnapshot, res)
		releaseMemory()
	}
	size.NoSnapshot = summariseRecovery(noSnapshot)
	size.WithSnapshot = summariseRecovery(withSnapshot)
	for _, run := range []RecoveryRun{size.NoSnapshot, size.WithSnapshot} {
		if run.OpenQuotes != openQuotes {
			return size, fmt.Errorf("bench: recovery found %d open quotes; the log holds %d", run.OpenQuotes, openQuotes)
		}
	}
	if size.NoSnapshot.EventsReplayed != uint64(events) {
		return size, fmt.Errorf("bench: recovery replayed %d events; the log holds %d", size.NoSnapshot.EventsReplayed, events)
	}
	var replayRates []float64
	for _, res := range noSnapshot {
		replayRates = append(replayRates, res.eventsPerSecond())
	}
	size.RawScanRecordsPerSecond = round3(median(size.RawScanRounds))
	size.Ratio = round3(median(ratios(replayRates, size.RawScanRounds)))
	return size, nil
}

// recoveryRound is one timed start (a recovery child prints it as JSON).
type recoveryRound struct {
	Open, Recover, Replay, Start time.Duration
	Events                       uint64
	OpenQuotes                   int
}

func (rr recoveryRound) ready() time.Duration { return rr.Open + rr.Recover + rr.Start }

func (rr recoveryRound) eventsPerSecond() float64 {
	if rr.Events == 0 || rr.Replay <= 0 {
		return 0
	}
	return float64(rr.Events) / rr.Replay.Seconds()
}

func summariseRecovery(rounds []recoveryRound) RecoveryRun {
	var run RecoveryRun
	var open, recover, replay, start, rates []float64
	for _, rr := range rounds {
		run.Rounds = append(run.Rounds, round3(rr.ready().Seconds()))
		open = append(open, rr.Open.Seconds())
		recover = append(recover, rr.Recover.Seconds())
		replay = append(replay, rr.Replay.Seconds())
		start = append(start, rr.Start.Seconds())
		rates = append(rates, rr.eventsPerSecond())
		run.EventsReplayed, run.OpenQuotes = rr.Events, rr.OpenQuotes
	}
	run.ReadySeconds = round3(median(run.Rounds))
	run.OpenSeconds, run.RecoverSeconds = round3(median(open)), round3(median(recover))
	run.ReplaySeconds, run.StartSeconds = round3(median(replay)), round3(median(start))
	run.EventsPerSecond = round3(median(rates))
	return run
}

// timedLog is the log as Recover sees it, timing Replay. Its SaveSnapshot
// does nothing: Recover saves one after replaying 100,000 events or more,
// which would turn every later round into a start from that snapshot. The
// cost of a save is measured once, on its own (SnapshotSaveSeconds).
type timedLog struct {
	*wal.Log
	replay time.Duration
}

var _ actors.Replayer = (*timedLog)(nil)

func (l *timedLog) Replay(from uint64, fn func(seq uint64, rec []byte) error) error {
	var err error
	start := time.Now()
	pprof.Do(context.Background(), pprof.Labels(phaseLabel, phaseReplay), func(context.Context) {
		err = l.Log.Replay(from, fn)
	})
	l.replay = time.Since(start)
	return err
}

// The phases of a start, as CPU profile labels: `go tool pprof
// -tagfocus=phase=replay` shows the replay alone. (The garbage collector's
// background work carries no label.)
const (
	phaseLabel   = "phase"
	phaseRecover = "recover" // snapshot load and decode, expiries, snapshot encode
	phaseReplay  = "replay"  // read, checksum, decode, State.Apply
	phaseStart   = "start"   // actors.Start
)

func (l *timedLog) SaveSnapshot(uint64, []byte) error { return nil }

// recoverOnce starts the service's core on store as `oja serve` does —
// open, recover, start the actors — and stops it again: in a fresh
// process, as a start is (a child: ChildMain), whose heap the runtime
// takes fresh from the kernel, unless this binary cannot be one.
func (r *run) recoverOnce(ctx context.Context, store, profile string) (recoveryRound, error) {
	exe, err := os.Executable()
	if err != nil || !childMainCalled {
		return recoverMeasured(store, func(fn func() error) error { return r.profileCPU(profile, fn) })
	}
	path := ""
	if profile != "" {
		path = r.profilePath(profile)
	}
	var rr recoveryRound
	err = runChild(ctx, exe, []string{childEnv + "=" + childRecovery, childDirEnv + "=" + store, childProfileEnv + "=" + path}, &rr)
	return rr, err
}

// recoveryChild is a recovery child's work: one start of the store in
// dir, profiled into profile if set.
func recoveryChild(dir, profile string) (recoveryRound, error) {
	return recoverMeasured(dir, func(fn func() error) error { return profileCPUTo(profile, fn) })
}

// recoverMeasured is one start of store, timed, run by profiled.
func recoverMeasured(store string, profiled func(fn func() error) error) (recoveryRound, error) {
	var rr recoveryRound
	measure := func() error {
		// As oja serve does, from open to ready.
		defer debug.SetGCPercent(debug.SetGCPercent(actors.RecoveryGCPercent))
		start := time.Now()
		l, err := wal.Open(store, wal.Options{Sync: true})
		if err != nil {
			return err
		}
		rr.Open = time.Since(start)
		timed := &timedLog{Log: l}
		start = time.Now()
		var state *engine.State
		var stats actors.RecoveryStats
		pprof.Do(context.Background(), pprof.Labels(phaseLabel, phaseRecover), func(context.Context) {
			state, stats, err = actors.Recover(timed, time.Now())
		})
		rr.Recover, rr.Replay, rr.Events = time.Since(start), timed.replay, stats.Events
		if err != nil {
			return errors.Join(err, l.Close())
		}
		if stats.Expired != 0 {
			return errors.Join(fmt.Errorf("bench: recovery expired %d quotes; the generated deadlines lie ahead", stats.Expired), l.Close())
		}
		for q := range state.Quotes.All() {
			if q.Status.Open() {
				rr.OpenQuotes++
			}
		}
		start = time.Now()
		var sys *actors.System
		pprof.Do(context.Background(), pprof.Labels(phaseLabel, phaseStart), func(context.Context) {
			sys, err = actors.Start(state, l, actorsConfig())
		})
		if err != nil {
			return errors.Join(err, l.Close())
		}
		if err := sys.Ready(); err != nil {
			sys.Stop()
			return errors.Join(err, l.Close())
		}
		rr.Start = time.Since(start)
		sys.Stop()
		return l.Close()
	}
	return rr, profiled(measure)
}

// saveSnapshot saves the snapshot in file as the state after the log's
// last record, and returns the save's seconds.
func saveSnapshot(store, file string) (float64, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	l, err := wal.Open(store, wal.Options{Sync: true})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	err = l.SaveSnapshot(l.LastSeq(), data)
	seconds := time.Since(start).Seconds()
	return round3(seconds), errors.Join(err, l.Close())
}

// replayBatch is how many decoded events Recover applies at once (its
// read-ahead's batch: actors' replayBatchLen).
const replayBatch = 512

// replayParts times replay's parts alone: reading and decoding every
// record into memory, then applying the decoded events to a new state.
func replayParts(store string, events int) (decode, apply float64, err error) {
	defer debug.SetGCPercent(debug.SetGCPercent(actors.RecoveryGCPercent))
	l, err := wal.Open(store, wal.Options{ReadOnly: true})
	if err != nil {
		return 0, 0, err
	}
	defer func() { err = errors.Join(err, l.Close()) }()
	evs := make([]engine.Event, 0, events)
	decoder := new(engine.EventDecoder)
	start := time.Now()
	err = l.Replay(0, func(seq uint64, rec []byte) error {
		ev, err := decoder.Decode(rec)
		if err != nil {
			return fmt.Errorf("bench: record %d: %w", seq, err)
		}
		evs = append(evs, ev)
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	decode = time.Since(start).Seconds()
	state := engine.NewState()
	state.Reserve(len(evs)) // as Recover does
	start = time.Now()
	settle := actors.DeferKeyWrites(state)
	applied := 0
	for batch := range slices.Chunk(evs, replayBatch) {
		state.Warm(batch) // as Recover, a batch at a time
		for _, ev := range batch {
			if err := state.Apply(ev); err != nil {
				settle()
				return 0, 0, fmt.Errorf("bench: event %d: %w", applied+1, err)
			}
			applied++
		}
	}
	settle()
	return round3(decode), round3(time.Since(start).Seconds()), nil
}

// rawScan reads every record of the store with Pebble alone and returns
// records per second, the scan's seconds, and the bytes scanned.
func rawScan(store string) (perSecond, seconds float64, scanned uint64, err error) {
	logger := &benchLogger{}
	db, err := pebble.Open(store, &pebble.Options{ReadOnly: true, Logger: logger})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("bench: raw pebble: %w", err)
	}
	defer func() { err = errors.Join(err, db.Close(), logger.failure()) }()
	start := time.Now()
	iter, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{'r'}, UpperBound: []byte{'s'}})
	if err != nil {
		return 0, 0, 0, err
	}
	var records uint64
	for valid := iter.First(); valid; valid = iter.Next() {
		value, err := iter.ValueAndErr()
		if err != nil {
			return 0, 0, 0, errors.Join(err, iter.Close())
		}
		records++
		scanned += uint64(len(iter.Key()) + len(value))
	}
	if err := iter.Close(); err != nil {
		return 0, 0, 0, err
	}
	elapsed := time.Since(start)
	if records == 0 {
		return 0, 0, 0, errors.New("bench: raw scan found no records")
	}
	return float64(records) / elapsed.Seconds(), elapsed.Seconds(), scanned, nil
}

// directoryBytes sums the sizes of the files under dir.
func directoryBytes(dir string) uint64 {
	var total uint64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				total += uint64(info.Size())
			}
		}
		return nil
	})
	return total
}
