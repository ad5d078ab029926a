package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/wal"
)

// MemorySize is section 6 at one size: a running actors.System holding
// OpenQuotes open quotes (each a registry entry with its view and an expiry
// timer; quote actors are virtual, so none is active).
type MemorySize struct {
	OpenQuotes int `json:"open_quotes"`
	// RSSBytes is VmRSS (/proc/self/status) after a GC that returned freed
	// memory to the OS, with the system running.
	RSSBytes uint64 `json:"rss_bytes"`
	// BaselineRSSBytes is the same process before the quotes: runtime,
	// an empty log open.
	BaselineRSSBytes uint64  `json:"baseline_rss_bytes"`
	BytesPerQuote    float64 `json:"rss_bytes_per_quote"`
	HeapInuseBytes   uint64  `json:"heap_inuse_bytes"`
	HeapPerQuote     float64 `json:"heap_bytes_per_quote"`
	Goroutines       int     `json:"goroutines"`
	StartSeconds     float64 `json:"start_seconds"` // actors.Start with the quotes
}

// MemoryReport is section 6.
type MemoryReport struct {
	// Process is "child" when each size ran in a fresh process (the
	// harness re-executes itself), "in-process" otherwise (RSS then
	// includes what earlier sections left behind).
	Process string       `json:"process"`
	Sizes   []MemorySize `json:"sizes"`
}

// The child protocol: the harness re-executes its own binary with these
// variables set; ChildMain, called first thing in main (or TestMain),
// measures and prints one MemorySize as JSON on stdout.
const (
	childEnv        = "OJA_BENCH_CHILD"
	childQuotesEnv  = "OJA_BENCH_QUOTES"
	childDirEnv     = "OJA_BENCH_DIR"
	childSeedEnv    = "OJA_BENCH_SEED"
	childProfileEnv = "OJA_BENCH_HEAP_PROFILE"
	childMemory     = "memory"
	childRecovery   = "recovery"
	// childRunMax bounds one child.
	childRunMax = 5 * time.Minute
	// settleDelay lets spawned actors and timers settle before measuring.
	settleDelay = 200 * time.Millisecond
)

// childMainCalled records that this binary routes children to ChildMain,
// so that re-executing it is safe.
var childMainCalled bool

// ChildMain runs a measurement child when this process is one, and reports
// whether it was, with its exit code. A binary that embeds the harness
// calls it first thing in main (ojabench does) or in TestMain:
//
//	if code, ok := bench.ChildMain(); ok {
//		os.Exit(code)
//	}
func ChildMain() (code int, ok bool) {
	childMainCalled = true
	var result any
	var err error
	switch os.Getenv(childEnv) {
	case childMemory:
		result, err = memoryChild()
	case childRecovery:
		time.AfterFunc(childRunMax, func() { os.Exit(3) })
		result, err = recoveryChild(os.Getenv(childDirEnv), os.Getenv(childProfileEnv))
	default:
		return 0, false
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ojabench child:", err)
		return 1, true
	}
	if err := json.NewEncoder(os.Stdout).Encode(result); err != nil {
		return 1, true
	}
	return 0, true
}

// memoryChild is a memory child's work (measureMemory).
func memoryChild() (MemorySize, error) {
	quotes, err := strconv.Atoi(os.Getenv(childQuotesEnv))
	if err != nil || quotes < 1 || quotes > quotesGeneratedMax {
		return MemorySize{}, fmt.Errorf("bad %s", childQuotesEnv)
	}
	seed, _ := strconv.ParseUint(os.Getenv(childSeedEnv), 10, 64)
	time.AfterFunc(childRunMax, func() { os.Exit(3) })
	return measureMemory(os.Getenv(childDirEnv), seed, quotes, os.Getenv(childProfileEnv))
}

// measureMemory starts a system holding quotes open quotes on an empty log
// in dir and measures it.
func measureMemory(dir string, seed uint64, quotes int, heapProfile string) (MemorySize, error) {
	size := MemorySize{OpenQuotes: quotes}
	l, err := wal.Open(filepath.Join(dir, "store"), wal.Options{Sync: false})
	if err != nil {
		return size, err
	}
	releaseMemory()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	size.BaselineRSSBytes = residentBytes()
	baselineHeap := stats.HeapInuse

	state, err := generateState(seed, quotes)
	if err != nil {
		return size, errors.Join(err, l.Close())
	}
	start := time.Now()
	sys, err := actors.Start(state, l, actorsConfig())
	if err != nil {
		return size, errors.Join(err, l.Close())
	}
	size.StartSeconds = round3(time.Since(start).Seconds())
	state = nil // the system owns it now
	time.Sleep(settleDelay)
	releaseMemory()
	runtime.ReadMemStats(&stats)
	size.RSSBytes, size.HeapInuseBytes = residentBytes(), stats.HeapInuse
	size.Goroutines = runtime.NumGoroutine()
	size.BytesPerQuote = round3(float64(int64(size.RSSBytes)-int64(size.BaselineRSSBytes)) / float64(quotes))
	size.HeapPerQuote = round3(float64(int64(size.HeapInuseBytes)-int64(baselineHeap)) / float64(quotes))
	if heapProfile != "" {
		if f, err := os.Create(heapProfile); err == nil {
			_ = pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
	}
	open := sys.QuoteCounts()[engine.ModeSandbox][engine.StatusPending]
	sys.Stop()
	err = l.Close()
	if open != quotes {
		err = errors.Join(err, fmt.Errorf("bench: the system holds %d open quotes, not %d", open, quotes))
	}
	return size, err
}

func (r *run) memorySection(ctx context.Context) error {
	rep := &MemoryReport{Process: "child"}
	r.report.Memory = rep
	exe, err := os.Executable()
	if err != nil || !childMainCalled {
		rep.Process = "in-process"
	}
	for _, quotes := range r.cfg.Sizes {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.progress.set("memory: a running system holding %d open quotes", quotes)
		dir, err := r.scratch("memory")
		if err != nil {
			return err
		}
		profile := ""
		if quotes == r.cfg.Sizes[len(r.cfg.Sizes)-1] {
			profile = r.profilePath("memory-heap")
		}
		var size MemorySize
		if rep.Process == "child" {
			size, err = runMemoryChild(ctx, exe, dir, r.cfg.Seed, quotes, profile)
		} else {
			size, err = measureMemory(dir, r.cfg.Seed, quotes, profile)
			releaseMemory()
		}
		os.RemoveAll(dir)
		if err != nil {
			return fmt.Errorf("%d quotes: %w", quotes, err)
		}
		rep.Sizes = append(rep.Sizes, size)
	}
	return nil
}

func runMemoryChild(ctx context.Context, exe, dir string, seed uint64, quotes int, profile string) (MemorySize, error) {
	var size MemorySize
	err := runChild(ctx, exe, []string{childEnv + "=" + childMemory, childQuotesEnv + "=" + strconv.Itoa(quotes),
		childDirEnv + "=" + dir, childSeedEnv + "=" + strconv.FormatUint(seed, 10), childProfileEnv + "=" + profile}, &size)
	return size, err
}

// runChild runs exe as a child with env added to this process's, and
// decodes the JSON of its last line of output into result.
func runChild(ctx context.Context, exe string, env []string, result any) error {
	ctx, cancel := context.WithTimeout(ctx, childRunMax)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("bench: child %v: %w: %s", env[0], err, strings.TrimSpace(stderr.String()))
	}
	// The child's last line is the result (a test binary may print more).
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), result); err != nil {
		return fmt.Errorf("bench: child %v said %q: %w", env[0], stdout.String(), err)
	}
	return nil
}
