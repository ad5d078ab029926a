package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/wal"
)

// WALReport is section 4: durable (fsync'd) records per second through
// wal.Log's group committer, against raw Pebble on the same disk in the
// same run.
type WALReport struct {
	Appenders   int `json:"appenders"`
	RecordBytes int `json:"record_bytes"`
	// RecordsPerSecond is the median of wal.Log's rounds: appenders each
	// calling AppendWait (one record) with Sync on.
	RecordsPerSecond float64   `json:"records_per_second"`
	Rounds           []float64 `json:"rounds_records_per_second"`
	RecordsPerCommit float64   `json:"records_per_commit"`
	// RawRecordsPerSecond is the baseline's median: the same appenders each
	// committing its record as its own batch with db.Apply(batch,
	// pebble.Sync), so only Pebble's own commit pipeline groups the syncs
	// (wal/bench_test.go's BenchmarkPebbleRawSync).
	RawRecordsPerSecond float64   `json:"raw_pebble_records_per_second"`
	RawRounds           []float64 `json:"rounds_raw_pebble_records_per_second"`
	// Ratio is wal ÷ raw (median of per-round ratios).
	Ratio float64 `json:"ratio"`
}

// walAppendersPerProc matches wal/bench_test.go's -appenders-per-proc
// default: many actors, each waiting on its own append.
const walAppendersPerProc = 32

func walAppenders() int { return walAppendersPerProc * gomaxprocs() }

// walRecordBytes is the payload of each record: the size of a typical
// encoded QuoteCreated (one allocation, an Idempotency-Key).
var walRecordBytes = func() int {
	g := newGenerator(1)
	var last []byte
	emit := func(ev engine.Event) error { last = engine.AppendEvent(last[:0], ev); return nil }
	if g.setup(emit) != nil || g.quote(false, emit) != nil {
		return 256
	}
	return len(last)
}()

// rawMemTableBytes is the memtable size wal.Open gives Pebble (wal's
// memTableBytes), so the baseline store is configured like the log's.
const rawMemTableBytes = 32 << 20

func (r *run) walSection(ctx context.Context) error {
	rep := &WALReport{Appenders: walAppenders(), RecordBytes: walRecordBytes}
	r.report.WAL = rep
	var commits, records uint64
	for round := range r.cfg.Rounds {
		order := []bool{true, false} // log first, then raw
		if round%2 == 1 {
			order = []bool{false, true}
		}
		for _, viaLog := range order {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			dir, err := r.scratch("wal")
			if err != nil {
				return err
			}
			if viaLog {
				r.progress.set("wal: round %d/%d: wal.Log, %d appenders, Sync on, %s", round+1, r.cfg.Rounds, rep.Appenders, r.cfg.WALRound)
				profile := ""
				if round == 0 {
					profile = "wal"
				}
				perSecond, c, n, err := r.walLogRound(ctx, dir, profile)
				if err != nil {
					os.RemoveAll(dir)
					return err
				}
				rep.Rounds = append(rep.Rounds, round3(perSecond))
				commits, records = commits+c, records+n
			} else {
				r.progress.set("wal: round %d/%d: raw Pebble synced batches, %d appenders, %s", round+1, r.cfg.Rounds, rep.Appenders, r.cfg.WALRound)
				perSecond, err := rawPebbleRound(ctx, dir, r.cfg.WALRound)
				if err != nil {
					os.RemoveAll(dir)
					return err
				}
				rep.RawRounds = append(rep.RawRounds, round3(perSecond))
			}
			os.RemoveAll(dir)
		}
	}
	rep.RecordsPerSecond = round3(median(rep.Rounds))
	rep.RawRecordsPerSecond = round3(median(rep.RawRounds))
	rep.Ratio = round3(median(ratios(rep.Rounds, rep.RawRounds)))
	if commits > 0 {
		rep.RecordsPerCommit = round3(float64(records) / float64(commits))
	}
	return nil
}

// walLogRound measures wal.Log with Sync on.
func (r *run) walLogRound(ctx context.Context, dir, profile string) (perSecond float64, commits, records uint64, err error) {
	l, err := wal.Open(dir, wal.Options{Sync: true})
	if err != nil {
		return 0, 0, 0, err
	}
	defer func() { err = errors.Join(err, l.Close()) }()
	before := l.Metrics()
	measure := func() error {
		var e error
		perSecond, e = appendLoop(ctx, walAppenders(), r.cfg.WALRound, func() func() error {
			rec := make([]byte, walRecordBytes)
			return func() error {
				_, err := l.AppendWait(rec)
				return err
			}
		})
		return e
	}
	if profile != "" {
		err = r.profileCPU(profile, measure)
	} else {
		err = measure()
	}
	after := l.Metrics()
	return perSecond, after.Commits - before.Commits, after.Records - before.Records, err
}

// rawPebbleRound measures the baseline: the wal's key and frame layout
// ('r' + big-endian seq → CRC-32C + payload), one record per synced batch.
func rawPebbleRound(ctx context.Context, dir string, d time.Duration) (perSecond float64, err error) {
	logger := &benchLogger{}
	db, err := pebble.Open(dir, &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             logger,
		MemTableSize:       rawMemTableBytes,
	})
	if err != nil {
		return 0, fmt.Errorf("bench: raw pebble: %w", err)
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	var seq atomic.Uint64
	table := crc32.MakeTable(crc32.Castagnoli)
	var batches []*pebble.Batch // newOp runs on this goroutine
	defer func() {
		for _, b := range batches {
			err = errors.Join(err, b.Close())
		}
	}()
	perSecond, err = appendLoop(ctx, walAppenders(), d, func() func() error {
		batch := db.NewBatch()
		batches = append(batches, batch)
		key := make([]byte, 9)
		value := make([]byte, 4+walRecordBytes)
		return func() error {
			key[0] = 'r'
			binary.BigEndian.PutUint64(key[1:], seq.Add(1))
			binary.LittleEndian.PutUint32(value, crc32.Checksum(value[4:], table))
			batch.Reset()
			if err := batch.Set(key, value, nil); err != nil {
				return err
			}
			return db.Apply(batch, pebble.Sync)
		}
	})
	return perSecond, errors.Join(err, logger.failure())
}

// appendLoop runs appenders goroutines, each calling its own op (made by
// newOp) until d has passed, and returns the ops completed per second.
func appendLoop(ctx context.Context, appenders int, d time.Duration, newOp func() func() error) (float64, error) {
	start := time.Now()
	deadline := start.Add(d)
	var done atomic.Int64
	var failure atomic.Pointer[error]
	var wg sync.WaitGroup
	for range appenders {
		op := newOp()
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil && failure.Load() == nil {
				if err := op(); err != nil {
					failure.CompareAndSwap(nil, &err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if e := failure.Load(); e != nil {
		return 0, *e
	}
	return float64(done.Load()) / elapsed.Seconds(), ctx.Err()
}

// benchLogger keeps Pebble quiet and remembers its first error; Fatalf
// does not exit (Pebble's default logger would).
type benchLogger struct {
	mu    sync.Mutex
	first error
}

func (l *benchLogger) Infof(string, ...any) {}
func (l *benchLogger) Errorf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first == nil {
		l.first = fmt.Errorf("bench: pebble: "+format, args...)
	}
}
func (l *benchLogger) Fatalf(format string, args ...any) { l.Errorf(format, args...) }
func (l *benchLogger) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}
