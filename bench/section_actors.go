package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oja-exchange/oja/engine"
)

// ActorsRun is one configuration of the actor path: concurrent callers of
// actors.System.CreateQuote on a real wal.Log, no HTTP.
type ActorsRun struct {
	Sync bool `json:"sync"` // the log fsyncs each group commit
	// QuotesPerSecond is the median over rounds of quotes created (replies
	// ResultOK) per second.
	QuotesPerSecond float64   `json:"quotes_per_second"`
	Rounds          []float64 `json:"rounds_quotes_per_second"`
	// Latency is each CreateQuote call's time, over every round.
	Latency Latency `json:"latency"`
	// RecordsPerCommit is the log's group commit size (wal.Metrics).
	RecordsPerCommit float64 `json:"records_per_commit"`
	Refused          int64   `json:"refused"` // replies other than ResultOK
}

// ActorsReport is section 2.
type ActorsReport struct {
	Callers int       `json:"callers"`
	Sync    ActorsRun `json:"sync_on"`
	NoSync  ActorsRun `json:"sync_off"`
	// SyncCost is sync-on ÷ sync-off throughput (median of per-round ratios).
	SyncCost float64 `json:"sync_on_over_off"`
}

// actorsCallersPerProc × GOMAXPROCS callers send CreateQuote at once, each
// waiting for its reply: a gateway's worth of concurrent partner requests.
const actorsCallersPerProc = 32

func actorsCallers() int { return actorsCallersPerProc * gomaxprocs() }

// actorsWarmup is run before each measured round.
const actorsWarmup = 200 * time.Millisecond

func (r *run) actorsSection(ctx context.Context) error {
	rep := &ActorsReport{Callers: actorsCallers()}
	r.report.Actors = rep
	rep.Sync.Sync = true
	latency := map[bool]*recorder{true: newRecorder(), false: newRecorder()}
	commits := map[bool][2]uint64{}
	for round := range r.cfg.Rounds {
		// Alternate which goes first, so drift in the machine's load
		// favours neither.
		order := []bool{true, false}
		if round%2 == 1 {
			order = []bool{false, true}
		}
		for _, durable := range order {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.progress.set("actors: round %d/%d, sync=%v: %d callers for %s", round+1, r.cfg.Rounds, durable,
				rep.Callers, r.cfg.ActorsRound)
			profile := ""
			if durable && round == 0 {
				profile = "actors-sync"
			}
			res, err := r.actorsRound(ctx, durable, latency[durable], profile)
			if err != nil {
				return err
			}
			run := &rep.NoSync
			if durable {
				run = &rep.Sync
			}
			run.Rounds = append(run.Rounds, round3(res.perSecond))
			run.Refused += res.refused
			c := commits[durable]
			c[0] += res.commits
			c[1] += res.records
			commits[durable] = c
		}
	}
	for _, run := range []*ActorsRun{&rep.Sync, &rep.NoSync} {
		run.QuotesPerSecond = round3(median(run.Rounds))
		run.Latency = latency[run.Sync].latency()
		if c := commits[run.Sync]; c[0] > 0 {
			run.RecordsPerCommit = round3(float64(c[1]) / float64(c[0]))
		}
	}
	rep.SyncCost = round3(median(ratios(rep.Sync.Rounds, rep.NoSync.Rounds)))
	return nil
}

type actorsRoundResult struct {
	perSecond        float64
	refused          int64
	commits, records uint64
}

// actorsRound starts a fresh market, warms it up, then lets the callers
// create quotes for one round.
func (r *run) actorsRound(ctx context.Context, durable bool, latency *recorder, profile string) (actorsRoundResult, error) {
	var res actorsRoundResult
	dir, err := r.scratch("actors")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	m, err := startMarket(dir, durable)
	if err != nil {
		return res, err
	}
	defer m.stop()
	if _, _, err := createQuotes(ctx, m, actorsCallers(), actorsWarmup, nil); err != nil {
		return res, err
	}
	before := m.log.Metrics()
	measure := func() error {
		start := time.Now()
		ok, refused, err := createQuotes(ctx, m, actorsCallers(), r.cfg.ActorsRound, latency)
		res.perSecond = float64(ok) / time.Since(start).Seconds()
		res.refused = refused
		return err
	}
	if profile != "" {
		err = r.profileCPU(profile, measure)
	} else {
		err = measure()
	}
	after := m.log.Metrics()
	res.commits, res.records = after.Commits-before.Commits, after.Records-before.Records
	return res, err
}

// createQuotes runs callers goroutines, each calling CreateQuote in a loop
// until d has passed, and counts the replies.
func createQuotes(ctx context.Context, m *market, callers int, d time.Duration, latency *recorder) (ok, refused int64, err error) {
	deadline := time.Now().Add(d)
	var okCount, refusedCount atomic.Int64
	var failure atomic.Pointer[error]
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil && failure.Load() == nil {
				start := time.Now()
				reply := m.sys.CreateQuote(m.createQuote())
				if latency != nil {
					latency.record(time.Since(start))
				}
				switch {
				case reply.Err != nil:
					err := fmt.Errorf("bench: CreateQuote: %w", reply.Err)
					failure.CompareAndSwap(nil, &err)
				case reply.Result != engine.ResultOK:
					refusedCount.Add(1)
				default:
					okCount.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if e := failure.Load(); e != nil {
		return okCount.Load(), refusedCount.Load(), *e
	}
	if okCount.Load() == 0 {
		return 0, refusedCount.Load(), errors.New("bench: no quote was created")
	}
	return okCount.Load(), refusedCount.Load(), ctx.Err()
}
