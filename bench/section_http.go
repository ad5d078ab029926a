package bench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/wal"
)

// HTTPReport is section 3: end to end through a real server on loopback.
type HTTPReport struct {
	Server      string `json:"server"` // "binary" (oja serve) or "inprocess"
	Sync        bool   `json:"sync"`   // the server fsyncs every acknowledged write
	Connections int    `json:"connections"`
	// LivezPerSecond is the median closed-loop /livez throughput: the
	// ceiling of this server and client on this machine.
	LivezPerSecond float64   `json:"livez_per_second"`
	LivezRounds    []float64 `json:"rounds_livez_per_second"`
	// CreatePerSecond is the median closed-loop create-quote throughput
	// (POST …/intent), CreateOverLivez the median per-round ratio.
	CreatePerSecond float64   `json:"create_per_second"`
	CreateRounds    []float64 `json:"rounds_create_per_second"`
	CreateOverLivez float64   `json:"create_over_livez"`
	CreateLatency   Latency   `json:"create_closed_loop_latency"`
	// Mix is the open-loop request mix; Sweep its steps, in the order run.
	Mix   string      `json:"mix"`
	Sweep []SweepStep `json:"sweep"`
	// MaxSustainable is the highest offered rate whose step passed (p99 ≤
	// 10 ms, ≥ 95 % of the schedule completed, ≤ 1 % errors), ops/s.
	MaxSustainable float64 `json:"max_sustainable_ops_per_second"`
	// HalfLoad is the step at half of MaxSustainable (the p99 target) with
	// the median p99 of Rounds such steps; HalfLoadRoundsP99 are their p99s.
	HalfLoad          *SweepStep `json:"half_load,omitempty"`
	HalfLoadRoundsP99 []float64  `json:"half_load_rounds_p99_ms,omitempty"`
}

// SweepStep is one open-loop step: operations scheduled at fixed intervals
// for a fixed time, each latency measured from its scheduled time (so a
// server that falls behind is charged for the wait: no coordinated
// omission).
type SweepStep struct {
	OfferedPerSecond  float64 `json:"offered_ops_per_second"`
	AchievedPerSecond float64 `json:"achieved_ops_per_second"`
	RequestsPerSecond float64 `json:"requests_per_second"`
	Seconds           float64 `json:"seconds"`
	Scheduled         int     `json:"scheduled"`
	Completed         int     `json:"completed"`
	// Errors are transport failures and 5xx answers; Unsent are operations
	// never sent because the step's time ran out.
	Errors int `json:"errors"`
	Unsent int `json:"unsent"`
	// Latency is from each operation's scheduled time to its last answer;
	// Service from its send (what a closed-loop tool would report).
	Latency     Latency            `json:"latency"`
	Service     Latency            `json:"service_time"`
	ByOperation map[string]Latency `json:"by_operation"`
	Statuses    map[string]int     `json:"statuses"`
	Commits     *StepCommits       `json:"wal_commits,omitempty"`
	Pass        bool               `json:"pass"`
}

// Settings and limits of the HTTP section.
const (
	// httpConnections is the closed loops' connection count (bench/http.sh's
	// default).
	httpConnections = 64
	// openLoopConnectionsMax bounds the open loop's connections.
	openLoopConnectionsMax = 256
	// openLoopInFlightMax bounds operations in flight; past it the
	// scheduler waits (and the waits count in the latencies).
	openLoopInFlightMax = 1024
	// requestTimeoutMax bounds one request.
	requestTimeoutMax = 10 * time.Second
	// sweepP99Limit ends the sweep.
	sweepP99Limit = 10 * time.Millisecond
	// sweepStepsMax bounds the steps of one sweep; sweepRetriesMax the
	// lower rates tried when even the first step fails.
	sweepStepsMax   = 16
	sweepRetriesMax = 3
	// sweepSettle lets the server drain between steps.
	sweepSettle = 500 * time.Millisecond
	// stepGraceMax bounds how long a step waits for its last answers.
	stepGraceMax = 15 * time.Second
	// recentQuotesMax is how many created quotes the mix's reads choose from.
	recentQuotesMax = 4096
	// pendingQuotesMax bounds the pending quotes kept for accepts and cancels.
	pendingQuotesMax = 100_000
	// warmupRound is the closed-loop create run before measuring.
	warmupRound = 500 * time.Millisecond
)

const (
	apiBase    = "/api/v1/partners/marketplace"
	createBody = `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1000,"rate":0.0006,"amountDirection":"source"}`
	mixText    = "create 50 %, get 30 %, accept+complete 10 %, cancel 10 % (a partner's mix; accept+complete is one operation of two requests)"
)

// operation is one kind of partner operation in the mix.
type operation uint8

const (
	opCreate operation = iota
	opGet
	opAcceptComplete
	opCancel
)

var operationNames = [...]string{"create", "get", "accept+complete", "cancel"}

// pick draws an operation from the mix.
func pick(rng *rand.Rand) operation {
	switch n := rng.IntN(100); {
	case n < 50:
		return opCreate
	case n < 80:
		return opGet
	case n < 90:
		return opAcceptComplete
	default:
		return opCancel
	}
}

func (r *run) httpSection(ctx context.Context) error {
	rep := &HTTPReport{Server: r.cfg.Server, Sync: true, Connections: httpConnections, Mix: mixText}
	r.report.HTTP = rep
	t, err := r.startTarget(ctx)
	if err != nil {
		return err
	}
	defer t.stop()
	c := newClient(t, httpConnections)
	r.progress.set("http: warming up")
	if _, err := c.closedLoop(ctx, httpConnections, warmupRound, c.create, nil); err != nil {
		return err
	}
	createLatency := newRecorder()
	for round := range r.cfg.Rounds {
		order := []bool{true, false} // livez first, then create
		if round%2 == 1 {
			order = []bool{false, true}
		}
		for _, livez := range order {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if livez {
				r.progress.set("http: round %d/%d: /livez closed loop, %d connections, %s", round+1, r.cfg.Rounds, httpConnections, r.cfg.ClosedRound)
				perSecond, err := c.closedLoop(ctx, httpConnections, r.cfg.ClosedRound, c.livez, nil)
				if err != nil {
					return err
				}
				rep.LivezRounds = append(rep.LivezRounds, round3(perSecond))
				continue
			}
			r.progress.set("http: round %d/%d: create-quote closed loop, %d connections, %s", round+1, r.cfg.Rounds, httpConnections, r.cfg.ClosedRound)
			var profiled <-chan error
			if round == 0 {
				if path := r.profilePath("http-create-server"); path != "" {
					profiled = t.profile(r.cfg.ClosedRound, path)
				}
			}
			perSecond, err := c.closedLoop(ctx, httpConnections, r.cfg.ClosedRound, c.create, createLatency)
			if profiled != nil {
				err = errors.Join(err, <-profiled)
			}
			if err != nil {
				return err
			}
			rep.CreateRounds = append(rep.CreateRounds, round3(perSecond))
		}
	}
	rep.LivezPerSecond = round3(median(rep.LivezRounds))
	rep.CreatePerSecond = round3(median(rep.CreateRounds))
	rep.CreateOverLivez = round3(median(ratios(rep.CreateRounds, rep.LivezRounds)))
	rep.CreateLatency = createLatency.latency()
	return r.sweep(ctx, t, rep)
}

// sweepGridBase anchors the sweep's rates: each step's rate is
// sweepGridBase × factor^k ops/s for a whole k, so that two runs (of two
// commits, or of one on a busier hour) try the same rates and their steps
// compare one for one, wherever their closed-loop create rates put the
// first step.
const sweepGridBase = 100.0

// gridRate is the sweep's k-th rate.
func gridRate(k int, factor float64) float64 {
	return sweepGridBase * math.Pow(factor, float64(k))
}

// gridStepAtOrBelow is the k of the highest grid rate at or below rate.
func gridStepAtOrBelow(rate, factor float64) int {
	k := int(math.Floor(math.Log(rate/sweepGridBase) / math.Log(factor)))
	for gridRate(k+1, factor) <= rate { // rounding in the logarithms
		k++
	}
	for gridRate(k, factor) > rate {
		k--
	}
	return k
}

// sweep raises the arrival rate step by step until a step fails (p99 past
// sweepP99Limit, the schedule not kept, or errors) twice in a row — one
// bad second on a shared machine does not end it — then runs Rounds steps
// at half of the highest passing rate and keeps the one with the median p99.
func (r *run) sweep(ctx context.Context, t *target, rep *HTTPReport) error {
	mix := newMixClient(t, r.cfg.Seed)
	factor, steps := 1.35, sweepStepsMax
	if r.cfg.Quick {
		factor, steps = 2, 4
	}
	// fails runs a step at rate, and again if it failed, and reports
	// whether both failed.
	fails := func(rate float64) (bool, error) {
		for range 2 {
			step, err := r.sweepStep(ctx, mix, rate, "")
			if err != nil {
				return true, err
			}
			rep.Sweep = append(rep.Sweep, step)
			if step.Pass {
				return false, nil
			}
		}
		return true, nil
	}
	// Start well below the closed-loop create rate (half the mix is
	// cheaper than a create, half is a create or more), on the grid.
	k := gridStepAtOrBelow(max(rep.CreatePerSecond*0.2, 20), factor)
	rate := gridRate(k, factor)
	for retry := 0; ; retry++ {
		failed, err := fails(rate)
		if err != nil {
			return err
		}
		if !failed {
			rep.MaxSustainable = rate
			break
		}
		if retry == sweepRetriesMax {
			return errors.New("bench: no sweep step passed; the server cannot sustain even the lowest rate tried")
		}
		k -= 2 // about half, at ×1.35 a step
		rate = gridRate(k, factor)
	}
	for range steps - 1 {
		k++
		rate = gridRate(k, factor)
		failed, err := fails(rate)
		if err != nil {
			return err
		}
		if failed {
			break
		}
		rep.MaxSustainable = rate
	}
	var half []SweepStep
	for round := range r.cfg.Rounds {
		profile := ""
		if round == 0 {
			profile = "http-half-load-server"
		}
		step, err := r.sweepStep(ctx, mix, rep.MaxSustainable/2, profile)
		if err != nil {
			return err
		}
		half = append(half, step)
		rep.HalfLoadRoundsP99 = append(rep.HalfLoadRoundsP99, step.Latency.P99)
	}
	slices.SortFunc(half, func(a, b SweepStep) int { return cmp.Compare(a.Latency.P99, b.Latency.P99) })
	rep.HalfLoad = &half[len(half)/2]
	rep.MaxSustainable = round3(rep.MaxSustainable)
	return nil
}

func (r *run) sweepStep(ctx context.Context, mix *mixClient, rate float64, profile string) (SweepStep, error) {
	if ctx.Err() != nil {
		return SweepStep{}, ctx.Err()
	}
	r.progress.set("http: open loop at %.0f ops/s for %s", rate, r.cfg.SweepStep)
	// NB: the server's /metrics walks every quote (QuoteCounts), so it is
	// read before the pause that lets the server drain, not at the start
	// of the step.
	before, err := mix.target.commits()
	if err != nil {
		return SweepStep{}, err
	}
	time.Sleep(sweepSettle)
	var profiled <-chan error
	if profile != "" {
		if path := r.profilePath(profile); path != "" {
			profiled = mix.target.profile(r.cfg.SweepStep, path)
		}
	}
	step := mix.openLoop(ctx, rate, r.cfg.SweepStep)
	after, err := mix.target.commits()
	if err != nil {
		return step, err
	}
	step.Commits = commitsBetween(before, after)
	if profiled != nil {
		if err := <-profiled; err != nil {
			return step, err
		}
	}
	return step, ctx.Err()
}

// StepCommits are the server's group commits (write + fsync) during a
// step, from its log's metrics: how long the fsyncs took explains most of
// a latency tail that the CPU profile cannot.
type StepCommits struct {
	Commits          uint64  `json:"commits"`
	RecordsPerCommit float64 `json:"records_per_commit"`
	MeanMs           float64 `json:"mean_ms"`
	Over10Ms         uint64  `json:"over_10_ms"`
	// SlowestMs is the upper bound of the slowest commit's bucket
	// (wal.CommitLatencyBoundsSeconds); -1 when slower than the last bound.
	SlowestMs float64 `json:"slowest_bucket_ms"`
}

func commitsBetween(before, after wal.Metrics) *StepCommits {
	c := &StepCommits{Commits: after.Commits - before.Commits}
	if c.Commits == 0 {
		return c
	}
	c.RecordsPerCommit = round3(float64(after.Records-before.Records) / float64(c.Commits))
	c.MeanMs = round3((after.CommitSeconds - before.CommitSeconds) * 1000 / float64(c.Commits))
	bounds := wal.CommitLatencyBoundsSeconds
	for i := range after.CommitBuckets {
		n := after.CommitBuckets[i] - before.CommitBuckets[i]
		if n == 0 {
			continue
		}
		if i > 0 && bounds[i-1] >= 0.01 {
			c.Over10Ms += n
		}
		if i < len(bounds) {
			c.SlowestMs = bounds[i] * 1000
		} else {
			c.SlowestMs = -1
		}
	}
	return c
}

// ---- The client ----------------------------------------------------------------

// client sends requests to one target over a bounded pool of connections
// to its loopback address.
type client struct {
	target *target
	host   *fasthttp.HostClient
	auth   string
	seq    atomic.Uint64
	prefix string // of Idempotency-Keys, unique per run
}

func newClient(t *target, connections int) *client {
	return &client{
		target: t,
		host: &fasthttp.HostClient{
			Addr:                      t.addr,
			MaxConns:                  connections,
			MaxConnWaitTimeout:        requestTimeoutMax,
			ReadTimeout:               requestTimeoutMax,
			WriteTimeout:              requestTimeoutMax,
			MaxIdemponentCallAttempts: 1, // a failure is a failure, not a retry
		},
		auth:   "Bearer " + t.key,
		prefix: "ojabench-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-",
	}
}

// request is one request's outcome.
type request struct {
	status int
	err    error
}

func (r request) failed() bool { return r.err != nil || r.status >= 500 }

func (c *client) do(method, path string, body []byte, idempotent bool, resp *fasthttp.Response) request {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI("http://" + c.target.addr + path)
	req.Header.SetMethod(method)
	req.Header.Set("Authorization", c.auth)
	if body != nil {
		req.Header.SetContentType("application/json")
		req.SetBody(body)
	}
	if idempotent {
		req.Header.Set("Idempotency-Key", c.prefix+strconv.FormatUint(c.seq.Add(1), 10))
	}
	err := c.host.DoTimeout(req, resp, requestTimeoutMax)
	return request{status: resp.StatusCode(), err: err}
}

func (c *client) livez(resp *fasthttp.Response) request {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI("http://" + c.target.addr + "/livez")
	err := c.host.DoTimeout(req, resp, requestTimeoutMax)
	return request{status: resp.StatusCode(), err: err}
}

func (c *client) create(resp *fasthttp.Response) request {
	return c.do(fasthttp.MethodPost, apiBase+"/intent", []byte(createBody), false, resp)
}

// closedLoop runs connections goroutines, each sending send's request and
// waiting for its answer, until d has passed; it returns 2xx answers per
// second. Any other answer fails the loop.
func (c *client) closedLoop(ctx context.Context, connections int, d time.Duration, send func(*fasthttp.Response) request, latency *recorder) (float64, error) {
	start := time.Now()
	deadline := start.Add(d)
	var ok atomic.Int64
	var failure atomic.Pointer[error]
	var wg sync.WaitGroup
	for range connections {
		wg.Go(func() {
			resp := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseResponse(resp)
			for time.Now().Before(deadline) && ctx.Err() == nil && failure.Load() == nil {
				sent := time.Now()
				res := send(resp)
				if latency != nil {
					latency.record(time.Since(sent))
				}
				if res.err != nil || res.status/100 != 2 {
					err := fmt.Errorf("bench: closed loop: status %d: %v: %s", res.status, res.err, bytes.TrimSpace(resp.Body()))
					failure.CompareAndSwap(nil, &err)
					return
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if e := failure.Load(); e != nil {
		return 0, *e
	}
	return float64(ok.Load()) / time.Since(start).Seconds(), ctx.Err()
}

// ---- The open loop -----------------------------------------------------------------

// mixClient runs the partner mix. Creates feed a stock of pending quotes
// that accepts and cancels consume (newest first, so none is near its
// deadline) and a ring of recent quotes that gets read.
type mixClient struct {
	*client
	rng      *rand.Rand // the scheduler's only
	inFlight int        // operations in flight at most (openLoopInFlightMax)

	mu      sync.Mutex
	pending []createdQuote
	recent  []string
	next    int
}

type createdQuote struct{ id, account string }

func newMixClient(t *target, seed uint64) *mixClient {
	return &mixClient{client: newClient(t, openLoopConnectionsMax), rng: rand.New(rand.NewPCG(seed, 0x6d6978)),
		inFlight: openLoopInFlightMax}
}

func (m *mixClient) remember(q createdQuote) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) < pendingQuotesMax {
		m.pending = append(m.pending, q)
	}
	if len(m.recent) < recentQuotesMax {
		m.recent = append(m.recent, q.id)
	} else {
		m.recent[m.next] = q.id
		m.next = (m.next + 1) % recentQuotesMax
	}
}

func (m *mixClient) takePending() (createdQuote, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) == 0 {
		return createdQuote{}, false
	}
	q := m.pending[len(m.pending)-1]
	m.pending = m.pending[:len(m.pending)-1]
	return q, true
}

func (m *mixClient) recentQuote(n int) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.recent) == 0 {
		return "", false
	}
	return m.recent[n%len(m.recent)], true
}

// jsonString returns the string value of "name":"…" in body.
func jsonString(body []byte, name string) string {
	key := []byte(`"` + name + `":"`)
	i := bytes.Index(body, key)
	if i < 0 {
		return ""
	}
	rest := body[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// perform runs one operation and returns its requests' outcomes (the last
// decides); an operation with no quote to act on turns into a create.
func (m *mixClient) perform(op operation, draw int, resp *fasthttp.Response) (operation, []request) {
	switch op {
	case opGet:
		if id, ok := m.recentQuote(draw); ok {
			return op, []request{m.do(fasthttp.MethodGet, apiBase+"/quote/"+id, nil, false, resp)}
		}
	case opAcceptComplete:
		if q, ok := m.takePending(); ok {
			accept := m.do(fasthttp.MethodPut, apiBase+"/quote/"+q.id+"/accept",
				[]byte(`{"accountId":"`+q.account+`"}`), false, resp)
			if accept.err != nil || accept.status != fasthttp.StatusOK {
				return op, []request{accept}
			}
			return op, []request{accept, m.do(fasthttp.MethodPut, apiBase+"/quote/"+q.id+"/complete", nil, false, resp)}
		}
	case opCancel:
		if q, ok := m.takePending(); ok {
			return op, []request{m.do(fasthttp.MethodPut, apiBase+"/quote/"+q.id+"/cancel", nil, false, resp)}
		}
	}
	res := m.do(fasthttp.MethodPost, apiBase+"/intent", []byte(createBody), true, resp)
	if res.err == nil && res.status == fasthttp.StatusOK {
		body := resp.Body()
		if q := (createdQuote{jsonString(body, "quoteId"), jsonString(body, "poolAccountId")}); q.id != "" && q.account != "" {
			m.remember(q)
		}
	}
	return opCreate, []request{res}
}

// openLoop schedules rate operations per second for d — the i-th at
// start + i/rate, whatever happened to the others — and measures each from
// its scheduled time.
func (m *mixClient) openLoop(ctx context.Context, rate float64, d time.Duration) SweepStep {
	total := max(int(rate*d.Seconds()), 1)
	step := SweepStep{OfferedPerSecond: round3(rate), Scheduled: total, Statuses: map[string]int{}}
	latency, service := newRecorder(), newRecorder()
	byOperation := make([]*recorder, len(operationNames))
	for i := range byOperation {
		byOperation[i] = newRecorder()
	}
	var mu sync.Mutex // guards step's counters and Statuses
	var requests atomic.Int64
	var lastDone atomic.Int64 // unix ns of the last answer
	slots := make(chan struct{}, m.inFlight)
	var wg sync.WaitGroup
	start := time.Now().Add(time.Millisecond)
	cutoff := start.Add(d + stepGraceMax)
	for i := range total {
		scheduled := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if wait := time.Until(scheduled); wait > 0 {
			time.Sleep(wait)
		}
		if ctx.Err() != nil || time.Now().After(cutoff) {
			step.Unsent = total - i
			break
		}
		slotWait := time.NewTimer(time.Until(cutoff))
		select {
		case slots <- struct{}{}:
			slotWait.Stop()
		case <-slotWait.C:
			step.Unsent = total - i
		}
		if step.Unsent > 0 {
			break
		}
		op, draw := pick(m.rng), m.rng.IntN(1<<30)
		wg.Go(func() {
			defer func() { <-slots }()
			resp := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseResponse(resp)
			sent := time.Now()
			done, results := m.perform(op, draw, resp)
			finished := time.Now()
			lastDone.Store(finished.UnixNano())
			requests.Add(int64(len(results)))
			latency.record(finished.Sub(scheduled))
			service.record(finished.Sub(sent))
			byOperation[done].record(finished.Sub(scheduled))
			mu.Lock()
			defer mu.Unlock()
			step.Completed++
			for _, res := range results {
				key := strconv.Itoa(res.status)
				if res.err != nil {
					key = "error"
				}
				step.Statuses[key]++
			}
			if results[len(results)-1].failed() {
				step.Errors++
			}
		})
	}
	wg.Wait()
	elapsed := max(time.Duration(lastDone.Load()-start.UnixNano()), d)
	step.Seconds = round3(elapsed.Seconds())
	step.AchievedPerSecond = round3(float64(step.Completed) / elapsed.Seconds())
	step.RequestsPerSecond = round3(float64(requests.Load()) / elapsed.Seconds())
	step.Latency, step.Service = latency.latency(), service.latency()
	step.ByOperation = map[string]Latency{}
	for i, rec := range byOperation {
		if l := rec.latency(); l.Count > 0 {
			step.ByOperation[operationNames[i]] = l
		}
	}
	step.Pass = step.Unsent == 0 && step.Errors*100 <= step.Scheduled &&
		step.AchievedPerSecond >= 0.95*rate && step.Latency.P99 <= float64(sweepP99Limit)/float64(time.Millisecond)
	return step
}
