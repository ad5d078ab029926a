package bench

import (
	"math"
	"slices"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// median of xs (0 for none). The machine this runs on is shared and noisy:
// every paired figure is measured in several rounds and the report keeps
// the median, and every ratio is the median of the per-round ratios (both
// sides of one round ran back to back, under the same noise).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ratios returns a[i]/b[i] for each round (0 where b[i] is 0).
func ratios(a, b []float64) []float64 {
	out := make([]float64, min(len(a), len(b)))
	for i := range out {
		if b[i] > 0 {
			out[i] = a[i] / b[i]
		}
	}
	return out
}

// Latency histograms record microseconds, from 1 µs to latencyMicrosMax,
// with three significant digits (HDR: each value within 0.1 %).
const (
	latencyMicrosMax   = 60_000_000
	latencySignificant = 3
)

func newLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, latencyMicrosMax, latencySignificant)
}

// Latency is a latency distribution, in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
}

func latencyOf(h *hdrhistogram.Histogram) Latency {
	ms := func(micros int64) float64 { return float64(micros) / 1000 }
	return Latency{
		Count: h.TotalCount(),
		Mean:  math.Round(h.Mean()) / 1000,
		P50:   ms(h.ValueAtQuantile(50)),
		P90:   ms(h.ValueAtQuantile(90)),
		P99:   ms(h.ValueAtQuantile(99)),
		P999:  ms(h.ValueAtQuantile(99.9)),
		Max:   ms(h.Max()),
	}
}

// recorder is a histogram safe for concurrent use.
type recorder struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

func newRecorder() *recorder { return &recorder{h: newLatencyHistogram()} }

// record adds d; values beyond the histogram's range count as its maximum.
func (r *recorder) record(d time.Duration) {
	micros := min(max(d.Microseconds(), 1), latencyMicrosMax)
	r.mu.Lock()
	_ = r.h.RecordValue(micros) // in range by construction
	r.mu.Unlock()
}

func (r *recorder) latency() Latency {
	r.mu.Lock()
	defer r.mu.Unlock()
	return latencyOf(r.h)
}

// round3 keeps three decimals of a figure for the report.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
