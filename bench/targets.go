package bench

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Target is one of the targets, measured.
type Target struct {
	Name     string  `json:"name"`
	Target   string  `json:"target"` // e.g. "≥ 5000000"
	Measured float64 `json:"measured"`
	Unit     string  `json:"unit"`
	// Met is nil when the run did not measure it.
	Met  *bool  `json:"met"`
	Note string `json:"note,omitempty"`
	// Profile is the profile that explains this figure (with --profile);
	// PprofTop is `go tool pprof -top` of it, attached to a miss.
	Profile  string   `json:"profile,omitempty"`
	PprofTop []string `json:"pprof_top,omitempty"`
	// pprofArgs narrow the top (a label focus, a sample index).
	pprofArgs []string
}

// The targets of the issue.
const (
	targetAllocationsPerSecond = 5_000_000
	targetCreateOverLivez      = 0.30
	targetHalfLoadP99Ms        = 5.0
	targetWALOverRaw           = 0.70
	targetReplayEventsPerSec   = 500_000
	targetSnapshotReadySeconds = 5.0
	targetRSSBytes             = 2 << 30
	targetQuotes               = 1_000_000
	// The start-up targets (docs/benchmarks.md), each a ratio in the same
	// run: ready from a snapshot within 1.5 times a raw scan of the same
	// store, replay at least half a raw scan's records per second, and the
	// RSS an open quote costs.
	targetSnapshotReadyOverRawScan = 1.5
	targetReplayOverRawScan        = 0.5
	targetRSSBytesPerOpenQuote     = 450
)

// atTargetQuotes returns the figure y at targetQuotes quotes: measured if
// xs has it, else extrapolated along the line through the two largest
// sizes (fixed costs cancel out), or in proportion from a single size.
func atTargetQuotes(xs, ys []float64) (float64, string) {
	n := len(xs)
	for i := range xs {
		if xs[i] == targetQuotes {
			return ys[i], ""
		}
	}
	if n >= 2 && xs[n-1] > xs[n-2] {
		slope := (ys[n-1] - ys[n-2]) / (xs[n-1] - xs[n-2])
		return ys[n-1] + slope*(targetQuotes-xs[n-1]),
			fmt.Sprintf("extrapolated from %.0f and %.0f quotes", xs[n-2], xs[n-1])
	}
	return ys[n-1] * targetQuotes / xs[n-1], fmt.Sprintf("extrapolated in proportion from %.0f quotes", xs[n-1])
}

// pprofTopMax bounds `go tool pprof -top`.
const pprofTopMax = 60 * time.Second

func (r *run) evaluateTargets() []Target {
	rep := r.report
	var out targets
	out.engine(rep)
	out.http(rep)
	out.wal(rep)
	out.recovery(rep)
	out.memory(rep)
	r.annotate(out)
	return out
}

// targets is the report's list of targets, each section's appended in turn.
type targets []Target

// add appends t, met or not when it was measured.
func (out *targets) add(t Target, measured bool, ok bool) {
	if measured {
		t.Met = &ok
	}
	*out = append(*out, t)
}

// engine: the allocation rate and its heap allocations.
func (out *targets) engine(rep *Report) {
	t := Target{Name: "engine allocation rate (pools=8/fill=3, slower direction)", Target: fmt.Sprintf("≥ %d", targetAllocationsPerSecond),
		Unit: "quotes/s", Profile: "engine"}
	a := Target{Name: "engine heap allocations per Allocate (worst case)", Target: "= 0", Unit: "allocs/op", Profile: "engine"}
	found := false
	if rep.Engine != nil {
		for _, c := range rep.Engine.Cases {
			a.Measured = max(a.Measured, float64(c.HeapAllocsPerOp))
			if c.Pools == 8 && c.Fill == 3 && (!found || c.QuotesPerSecond < t.Measured) {
				t.Measured, found = c.QuotesPerSecond, true
			}
		}
	}
	out.add(t, found, t.Measured >= targetAllocationsPerSecond)
	out.add(a, rep.Engine != nil && len(rep.Engine.Cases) > 0, a.Measured == 0)
}

// http: create-quote against /livez, and the mix's p99 at half load.
func (out *targets) http(rep *Report) {
	{
		t := Target{Name: "create-quote (fsync on) ÷ /livez, closed loop", Target: fmt.Sprintf("≥ %.2f", targetCreateOverLivez),
			Unit: "ratio", Profile: "http-create-server"}
		measured := rep.HTTP != nil && len(rep.HTTP.CreateRounds) > 0 && len(rep.HTTP.LivezRounds) > 0
		if measured {
			t.Measured = rep.HTTP.CreateOverLivez
		}
		out.add(t, measured, t.Measured >= targetCreateOverLivez)
	}
	// The p99 at half of the max sustainable rate.
	{
		t := Target{Name: "HTTP mix p99 at half of the max sustainable rate", Target: fmt.Sprintf("≤ %.0f", targetHalfLoadP99Ms),
			Unit: "ms", Profile: "http-half-load-server"}
		measured := rep.HTTP != nil && rep.HTTP.HalfLoad != nil
		if measured {
			h := rep.HTTP.HalfLoad
			t.Measured = h.Latency.P99
			t.Note = fmt.Sprintf("at %.0f ops/s of a max sustainable %.0f ops/s; median of p99s %v", h.OfferedPerSecond,
				rep.HTTP.MaxSustainable, rep.HTTP.HalfLoadRoundsP99)
			if c := h.Commits; c != nil && c.Commits > 0 {
				t.Note += fmt.Sprintf("; server commits (write+fsync): mean %.2f ms, %d of %d over 10 ms", c.MeanMs, c.Over10Ms, c.Commits)
			}
		}
		out.add(t, measured, t.Measured <= targetHalfLoadP99Ms)
	}
}

// wal: durable writes against raw Pebble.
func (out *targets) wal(rep *Report) {
	t := Target{Name: "durable writes ÷ raw Pebble synced baseline", Target: fmt.Sprintf("≥ %.2f", targetWALOverRaw),
		Unit: "ratio", Profile: "wal"}
	measured := rep.WAL != nil && len(rep.WAL.Rounds) > 0 && len(rep.WAL.RawRounds) > 0
	if measured {
		t.Measured = rep.WAL.Ratio
	}
	out.add(t, measured, t.Measured >= targetWALOverRaw)
}

// recovery: replay and the start from a snapshot, at the largest size.
func (out *targets) recovery(rep *Report) {
	var largest *RecoverySize
	if rep.Recovery != nil && len(rep.Recovery.Sizes) > 0 {
		largest = &rep.Recovery.Sizes[len(rep.Recovery.Sizes)-1]
	}
	{
		t := Target{Name: "replay rate (no snapshot, largest log)", Target: fmt.Sprintf("≥ %d", targetReplayEventsPerSec),
			Unit: "events/s", Profile: "recovery-replay", pprofArgs: []string{"-tagfocus=" + phaseLabel + "=" + phaseReplay}}
		if largest != nil {
			t.Measured = largest.NoSnapshot.EventsPerSecond
			t.Note = fmt.Sprintf("%d quotes, %d events", largest.Quotes, largest.Events)
		}
		out.add(t, largest != nil, t.Measured >= targetReplayEventsPerSec)
	}
	{
		t := Target{Name: "1M quotes ready with a snapshot", Target: fmt.Sprintf("≤ %.0f", targetSnapshotReadySeconds),
			Unit: "s", Profile: "recovery-snapshot"}
		if largest != nil {
			var xs, ys []float64
			for _, s := range rep.Recovery.Sizes {
				xs, ys = append(xs, float64(s.Quotes)), append(ys, s.WithSnapshot.ReadySeconds)
			}
			v, note := atTargetQuotes(xs, ys)
			t.Measured, t.Note = round3(v), note
		}
		out.add(t, largest != nil, t.Measured <= targetSnapshotReadySeconds)
	}
	{
		t := Target{Name: "ready from a snapshot ÷ raw scan of the same store (largest log)",
			Target: fmt.Sprintf("≤ %.1f", targetSnapshotReadyOverRawScan), Unit: "×", Profile: "recovery-snapshot"}
		measured := largest != nil && largest.RawScanSeconds > 0
		if measured {
			t.Measured = round3(largest.WithSnapshot.ReadySeconds / largest.RawScanSeconds)
			t.Note = fmt.Sprintf("%d quotes: ready %.2f s, raw scan %.2f s", largest.Quotes,
				largest.WithSnapshot.ReadySeconds, largest.RawScanSeconds)
		}
		out.add(t, measured, t.Measured <= targetSnapshotReadyOverRawScan)
	}
	{
		t := Target{Name: "replay ÷ raw scan, records per second (no snapshot, largest log)",
			Target: fmt.Sprintf("≥ %.1f", targetReplayOverRawScan), Unit: "×", Profile: "recovery-replay",
			pprofArgs: []string{"-tagfocus=" + phaseLabel + "=" + phaseReplay}}
		if largest != nil {
			t.Measured, t.Note = round3(largest.Ratio), fmt.Sprintf("%d quotes", largest.Quotes)
		}
		out.add(t, largest != nil && largest.RawScanSeconds > 0, t.Measured >= targetReplayOverRawScan)
	}
}

// memory: RSS per open quote and at a million.
func (out *targets) memory(rep *Report) {
	{
		t := Target{Name: "RSS per open quote (largest size)", Target: fmt.Sprintf("≤ %d", targetRSSBytesPerOpenQuote),
			Unit: "bytes", Profile: "memory-heap", pprofArgs: []string{"-sample_index=inuse_space"}}
		measured := rep.Memory != nil && len(rep.Memory.Sizes) > 0
		if measured {
			m := rep.Memory.Sizes[len(rep.Memory.Sizes)-1]
			t.Measured, t.Note = round3(m.BytesPerQuote), fmt.Sprintf("%d open quotes", m.OpenQuotes)
		}
		out.add(t, measured, t.Measured <= targetRSSBytesPerOpenQuote)
	}
	{
		t := Target{Name: "RSS with 1M open quotes", Target: fmt.Sprintf("≤ %d", targetRSSBytes>>20), Unit: "MiB", Profile: "memory-heap",
			pprofArgs: []string{"-sample_index=inuse_space"}}
		measured := rep.Memory != nil && len(rep.Memory.Sizes) > 0
		if measured {
			var xs, ys []float64
			for _, s := range rep.Memory.Sizes {
				xs, ys = append(xs, float64(s.OpenQuotes)), append(ys, float64(s.RSSBytes)/(1<<20))
			}
			v, note := atTargetQuotes(xs, ys)
			t.Measured, t.Note = round3(v), note
		}
		out.add(t, measured, t.Measured*(1<<20) <= targetRSSBytes)
	}
}

// annotate marks a quick run's figures indicative and names each target's
// profile, with its pprof -top where the target was missed.
func (r *run) annotate(out targets) {
	if r.cfg.Quick {
		for i := range out {
			if out[i].Met == nil {
				continue
			}
			if out[i].Note != "" {
				out[i].Note += "; "
			}
			out[i].Note += "quick run: indicative only"
		}
	}
	for i := range out {
		t := &out[i]
		rel, ok := r.report.Profiles[t.Profile]
		if !ok {
			t.Profile = ""
			continue
		}
		t.Profile = rel
		if t.Met != nil && !*t.Met {
			t.PprofTop = pprofTop(filepath.Join(r.dir, rel), t.pprofArgs)
		}
	}
}

// pprofTop is `go tool pprof -top` of a profile, or nil when the go command
// is not at hand.
func pprofTop(path string, extra []string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), pprofTopMax)
	defer cancel()
	args := append([]string{"tool", "pprof", "-top", "-nodecount=20"}, extra...)
	out, err := exec.CommandContext(ctx, "go", append(args, path)...).Output()
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimRight(string(out), "\n"), "\n")
}
