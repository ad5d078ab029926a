package bench

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
)

// WriteSummary prints the report's headline figures and targets as
// Markdown tables (what docs/benchmarks.md's tables are made of).
func WriteSummary(w io.Writer, rep *Report) {
	m := rep.Machine
	commit := m.GitCommit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if m.GitDirty {
		commit += " (dirty)"
	}
	fmt.Fprintf(w, "Oja benchmark: %s run, %s; %s, %d cores, %.1f GiB, %s, %s, commit %s\n",
		rep.Mode, time.Duration(rep.Seconds*float64(time.Second)).Round(time.Second), m.CPUModel, m.Cores,
		float64(m.MemoryBytes)/(1<<30), m.GoVersion, m.WorkFilesystem, commit)
	fmt.Fprintf(w, "Machine load before / after: load average %.2f / %.2f, CPU pressure %.0f / %.0f %%, IO pressure %.0f / %.0f %%\n",
		rep.LoadBefore.LoadAverage1m, rep.LoadAfter.LoadAverage1m, rep.LoadBefore.CPUPressure60s, rep.LoadAfter.CPUPressure60s,
		rep.LoadBefore.IOPressure60s, rep.LoadAfter.IOPressure60s)
	fmt.Fprintf(w, "Report: %s\n", filepath.Join(rep.Dir, "report.json"))
	if len(rep.Charts) > 0 {
		fmt.Fprintf(w, "Charts: %s\n", strings.Join(rep.Charts, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| figure | measured |")
	fmt.Fprintln(w, "|---|---|")
	row := func(name, format string, args ...any) {
		fmt.Fprintf(w, "| %s | %s |\n", name, fmt.Sprintf(format, args...))
	}
	if e := rep.Engine; e != nil {
		for _, c := range e.Cases {
			if (c.Pools == 8 && c.Fill == 3) || (c.Pools == 1000 && c.Fill == 64) || (c.Pools == 1 && c.Fill == 1) {
				row("engine Allocate, "+strings.TrimPrefix(c.Name, "BenchmarkAllocate/"), "%.0f ns/op, %s quotes/s, %d allocs/op",
					c.NsPerOp, si(c.QuotesPerSecond), c.HeapAllocsPerOp)
			}
		}
	}
	if a := rep.Actors; a != nil {
		row(fmt.Sprintf("actors CreateQuote, %d callers, fsync on / off", a.Callers), "%s / %s quotes/s (p99 %.2f / %.2f ms)",
			si(a.Sync.QuotesPerSecond), si(a.NoSync.QuotesPerSecond), a.Sync.Latency.P99, a.NoSync.Latency.P99)
	}
	if h := rep.HTTP; h != nil {
		row(fmt.Sprintf("HTTP /livez, closed loop, %d connections", h.Connections), "%s req/s", si(h.LivezPerSecond))
		row("HTTP create-quote, closed loop, fsync on", "%s req/s (%.0f %% of /livez), p99 %.2f ms",
			si(h.CreatePerSecond), 100*h.CreateOverLivez, h.CreateLatency.P99)
		row("HTTP partner mix, max sustainable (p99 ≤ 10 ms)", "%s ops/s", si(h.MaxSustainable))
		if s := h.HalfLoad; s != nil {
			commits := ""
			if c := s.Commits; c != nil && c.Commits > 0 {
				commits = fmt.Sprintf("; server fsyncs mean %.2f ms, %d of %d over 10 ms", c.MeanMs, c.Over10Ms, c.Commits)
			}
			row(fmt.Sprintf("HTTP partner mix at %s ops/s (half)", si(s.OfferedPerSecond)), "p50 %.2f, p90 %.2f, p99 %.2f, p99.9 %.2f ms%s",
				s.Latency.P50, s.Latency.P90, s.Latency.P99, s.Latency.P999, commits)
		}
	}
	if wl := rep.WAL; wl != nil {
		row(fmt.Sprintf("WAL synced records/s, %d appenders: wal.Log / raw Pebble", wl.Appenders), "%s / %s (%.2f)",
			si(wl.RecordsPerSecond), si(wl.RawRecordsPerSecond), wl.Ratio)
	}
	if rc := rep.Recovery; rc != nil {
		for _, s := range rc.Sizes {
			row(fmt.Sprintf("recovery, %s quotes (%s events)", si(float64(s.Quotes)), si(float64(s.Events))),
				"ready %.2f s from the first event (replay %s events/s, %.2f of a raw scan; alone, decoding takes %.2f s, applying %.2f s, which bounds the ratio at %.2f); %.2f s from a snapshot",
				s.NoSnapshot.ReadySeconds, si(s.NoSnapshot.EventsPerSecond), s.Ratio,
				s.DecodeSeconds, s.ApplySeconds, s.RatioCeiling, s.WithSnapshot.ReadySeconds)
		}
	}
	if mem := rep.Memory; mem != nil {
		for _, s := range mem.Sizes {
			row(fmt.Sprintf("memory, %s open quotes", si(float64(s.OpenQuotes))), "RSS %.0f MiB (%.0f B/quote above a %.0f MiB baseline)",
				float64(s.RSSBytes)/(1<<20), s.BytesPerQuote, float64(s.BaselineRSSBytes)/(1<<20))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | goal | measured | met |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, t := range rep.Targets {
		met := "not measured"
		if t.Met != nil {
			met = "yes"
			if !*t.Met {
				met = "**no**"
			}
		}
		measured := "–"
		if t.Met != nil {
			measured = formatFigure(t.Measured) + " " + t.Unit
		}
		if t.Note != "" {
			measured += " (" + t.Note + ")"
		}
		fmt.Fprintf(w, "| %s | %s %s | %s | %s |\n", t.Name, t.Target, t.Unit, measured, met)
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(w, "problem:", p)
	}
}

// si prints a figure with a k or M suffix and three significant digits.
func si(x float64) string {
	switch {
	case x >= 1e6:
		return trimFloat(x/1e6) + " M"
	case x >= 1e4:
		return trimFloat(x/1e3) + " k"
	}
	return trimFloat(x)
}

func trimFloat(x float64) string {
	s := fmt.Sprintf("%.3g", x)
	if strings.Contains(s, "e") {
		s = fmt.Sprintf("%.0f", x)
	}
	return s
}

// formatFigure prints large figures whole and small ones to three decimals.
func formatFigure(x float64) string {
	if x >= 100 || x <= -100 {
		return fmt.Sprintf("%.0f", x)
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", x), "0"), ".")
}
