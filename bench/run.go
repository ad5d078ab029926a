package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"time"
)

// reportVersion is the JSON report's schema version; it changes when a
// field changes meaning or goes away (new fields keep it).
const reportVersion = 1

// Report is everything one run measured: report.json.
type Report struct {
	Version   int       `json:"version"`
	Mode      string    `json:"mode"` // "full" or "quick"
	StartedAt time.Time `json:"started_at"`
	Seconds   float64   `json:"seconds"` // the run's wall time
	Machine   Machine   `json:"machine"`
	Settings  Settings  `json:"settings"`
	// LoadBefore and LoadAfter are the machine's load around the run.
	LoadBefore Load `json:"load_before"`
	LoadAfter  Load `json:"load_after"`

	Engine   *EngineReport   `json:"engine,omitempty"`
	Actors   *ActorsReport   `json:"actors,omitempty"`
	HTTP     *HTTPReport     `json:"http,omitempty"`
	WAL      *WALReport      `json:"wal,omitempty"`
	Recovery *RecoveryReport `json:"recovery,omitempty"`
	Memory   *MemoryReport   `json:"memory,omitempty"`

	// Targets compares the headline figures with the targets.
	Targets []Target `json:"targets"`
	// Charts are the PNG files written next to report.json.
	Charts []string `json:"charts"`
	// Profiles are the CPU (and heap) profiles written with --profile,
	// by name, relative to the report's directory.
	Profiles map[string]string `json:"profiles,omitempty"`
	// Problems are sections that failed; the others still ran.
	Problems []string `json:"problems,omitempty"`

	// Dir is the directory the run wrote to.
	Dir string `json:"-"`
}

// Settings is the configuration a run used.
type Settings struct {
	Sections          []string      `json:"sections"`
	Server            string        `json:"server"`
	Rounds            int           `json:"rounds"`
	Sizes             []int         `json:"sizes"`
	EngineBenchTime   string        `json:"engine_bench_time"`
	ActorsRound       string        `json:"actors_round"`
	ClosedRound       string        `json:"closed_round"`
	SweepStep         string        `json:"sweep_step"`
	WALRound          string        `json:"wal_round"`
	Seed              uint64        `json:"seed"`
	Profile           bool          `json:"profile"`
	EngineCases       []EngineShape `json:"engine_cases"`
	WorkDir           string        `json:"work_dir"`
	HTTPConnections   int           `json:"http_connections"`
	ActorsCallers     int           `json:"actors_callers"`
	WALAppenders      int           `json:"wal_appenders"`
	WALRecordBytes    int           `json:"wal_record_bytes"`
	SweepP99LimitMs   float64       `json:"sweep_p99_limit_ms"`
	OpenLoopInFlight  int           `json:"open_loop_in_flight_max"`
	QuoteAmountKobo   int64         `json:"quote_amount_kobo"`
	MarketPools       int           `json:"market_pools"`
	GeneratedQuoteMix string        `json:"generated_quote_mix"`
}

// run is one run's state, shared by the sections.
type run struct {
	cfg      Config
	report   *Report
	progress *progress
	dir      string // results directory of this run
	work     string // scratch directory of this run, removed at the end
	root     string // module root ("" if unknown)
	mu       sync.Mutex
}

// Run measures the selected sections, writes report.json and the charts
// into a new directory under cfg.Out, and returns the report. A section
// that fails is recorded in Report.Problems and the others still run; Run
// returns an error only when nothing could be written. Progress goes to
// progressOut, one line per step (rewritten in place on a terminal).
func Run(ctx context.Context, cfg Config, progressOut io.Writer) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	root := cfg.Root
	if root == "" {
		if wd, err := os.Getwd(); err == nil {
			root, _ = moduleRoot(wd)
		}
	}
	out := cfg.Out
	if !filepath.IsAbs(out) && root != "" && out == "bench/results" {
		out = filepath.Join(root, out)
	}
	dir := filepath.Join(out, start.Format("20060102-150405"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: results directory: %w", err)
	}
	if cfg.Work != "" {
		if err := os.MkdirAll(cfg.Work, 0o755); err != nil {
			return nil, fmt.Errorf("bench: scratch directory: %w", err)
		}
	}
	work, err := os.MkdirTemp(cfg.Work, "ojabench-")
	if err != nil {
		return nil, fmt.Errorf("bench: scratch directory: %w", err)
	}
	if !cfg.Keep {
		defer os.RemoveAll(work)
	}

	mode := "full"
	if cfg.Quick {
		mode = "quick"
	}
	r := &run{
		cfg: cfg, dir: dir, work: work, root: root,
		progress: newProgress(progressOut, start),
		report: &Report{
			Version: reportVersion, Mode: mode, StartedAt: start.UTC(), Dir: dir,
			Machine: describeMachine(root, work), LoadBefore: machineLoad(),
			Settings: Settings{
				Sections: cfg.Sections, Server: cfg.Server, Rounds: cfg.Rounds, Sizes: cfg.Sizes,
				EngineBenchTime: cfg.EngineBenchTime.String(), ActorsRound: cfg.ActorsRound.String(),
				ClosedRound: cfg.ClosedRound.String(), SweepStep: cfg.SweepStep.String(),
				WALRound: cfg.WALRound.String(), Seed: cfg.Seed, Profile: cfg.Profile,
				EngineCases: cfg.EngineCases, WorkDir: work,
				HTTPConnections: httpConnections, ActorsCallers: actorsCallers(),
				WALAppenders: walAppenders(), WALRecordBytes: walRecordBytes,
				SweepP99LimitMs: float64(sweepP99Limit) / float64(time.Millisecond), OpenLoopInFlight: openLoopInFlightMax,
				QuoteAmountKobo: int64(quoteAmount), MarketPools: marketPools,
				GeneratedQuoteMix: "per 10 quotes: 1 accepted+completed, 1 cancelled, 8 left open",
			},
		},
	}
	if r.report.Machine.WorkFilesystem == "tmpfs" {
		r.report.Problems = append(r.report.Problems,
			"the scratch directory is on tmpfs: fsync is free there, so durable-write figures are not a disk's")
	}
	sections := []struct {
		name string
		fn   func(context.Context) error
	}{
		{SectionEngine, r.engineSection},
		{SectionActors, r.actorsSection},
		{SectionHTTP, r.httpSection},
		{SectionWAL, r.walSection},
		{SectionRecovery, r.recoverySection},
		{SectionMemory, r.memorySection},
	}
	for _, s := range sections {
		if !cfg.selected(s.name) {
			continue
		}
		if ctx.Err() != nil {
			r.report.Problems = append(r.report.Problems, s.name+": not run: "+ctx.Err().Error())
			continue
		}
		r.progress.set("%s: starting", s.name)
		if err := s.fn(ctx); err != nil {
			r.report.Problems = append(r.report.Problems, s.name+": "+err.Error())
		}
		releaseMemory()
	}
	r.progress.set("writing the report and charts")
	r.report.Targets = r.evaluateTargets()
	charts, err := writeCharts(r.report, dir)
	if err != nil {
		r.report.Problems = append(r.report.Problems, "charts: "+err.Error())
	}
	r.report.Charts = charts
	r.report.Seconds = round3(time.Since(start).Seconds())
	r.report.LoadAfter = machineLoad()
	if err := writeJSON(filepath.Join(dir, "report.json"), r.report); err != nil {
		return r.report, err
	}
	r.progress.finish()
	return r.report, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: encoding %s: %w", filepath.Base(path), err)
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// releaseMemory collects garbage and returns it to the OS, so one section's
// heap does not weigh on the next.
func releaseMemory() { debug.FreeOSMemory() }

// remove deletes a scratch directory, unless the run keeps them.
func (r *run) remove(dir string) {
	if !r.cfg.Keep {
		_ = os.RemoveAll(dir)
	}
}

// scratch returns a new directory under the run's scratch directory.
func (r *run) scratch(name string) (string, error) {
	return os.MkdirTemp(r.work, name+"-")
}

// profilePath is where the profile named name goes ("" when profiling is
// off); the report lists it.
func (r *run) profilePath(name string) string {
	if !r.cfg.Profile {
		return ""
	}
	rel := filepath.Join("profiles", name+".pprof")
	if err := os.MkdirAll(filepath.Join(r.dir, "profiles"), 0o755); err != nil {
		return ""
	}
	r.mu.Lock()
	if r.report.Profiles == nil {
		r.report.Profiles = make(map[string]string)
	}
	r.report.Profiles[name] = rel
	r.mu.Unlock()
	return filepath.Join(r.dir, rel)
}

// profileCPU runs fn, under this process's CPU profiler when profiling is
// on (profile name).
func (r *run) profileCPU(name string, fn func() error) error {
	return profileCPUTo(r.profilePath(name), fn)
}

// profileCPUTo runs fn, under this process's CPU profiler writing to path
// if path is set.
func profileCPUTo(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fn() // another profile is running (go test -cpuprofile): measure without
	}
	err = fn()
	pprof.StopCPUProfile()
	return errors.Join(err, f.Close())
}

// ---- Progress ----------------------------------------------------------------

// progress shows what the run is doing: on a terminal one line rewritten in
// place, elsewhere one line per step.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	start time.Time
	width int
}

func newProgress(w io.Writer, start time.Time) *progress {
	if w == nil {
		w = io.Discard
	}
	p := &progress{w: w, start: start}
	if f, ok := w.(*os.File); ok {
		if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) set(format string, args ...any) {
	elapsed := time.Since(p.start).Round(time.Second)
	msg := fmt.Sprintf("ojabench [%s] ", elapsed) + fmt.Sprintf(format, args...)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.tty {
		fmt.Fprintln(p.w, msg)
		return
	}
	pad := max(p.width-len(msg), 0)
	fmt.Fprintf(p.w, "\r%s%s", msg, strings.Repeat(" ", pad))
	p.width = len(msg)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.width > 0 {
		fmt.Fprintln(p.w)
		p.width = 0
	}
}

// gomaxprocs is the parallelism the load generators scale with.
func gomaxprocs() int { return runtime.GOMAXPROCS(0) }
