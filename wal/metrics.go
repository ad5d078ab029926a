package wal

import (
	"sort"
	"sync/atomic"
	"time"
)

// CommitLatencyBoundsSeconds are the upper bounds of Metrics' commit
// latency histogram (the last bucket is unbounded).
var CommitLatencyBoundsSeconds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5}

// latencyHistogram counts durations in CommitLatencyBoundsSeconds buckets.
// Written by the committer only; read by anyone.
type latencyHistogram struct {
	buckets [12]atomic.Uint64
	sumNano atomic.Uint64
}

func (h *latencyHistogram) observe(d time.Duration) {
	h.buckets[sort.SearchFloat64s(CommitLatencyBoundsSeconds, d.Seconds())].Add(1)
	h.sumNano.Add(uint64(d))
}

// Metrics are the log's running figures, for monitoring.
type Metrics struct {
	LastSeq    uint64 // last sequence assigned
	DurableSeq uint64 // last sequence durable
	Commits    uint64 // group commits
	Records    uint64 // records made durable
	// CommitBuckets[i] counts commits (write + fsync) that took at most
	// CommitLatencyBoundsSeconds[i] (non-cumulative; the last is +Inf).
	CommitBuckets [12]uint64
	CommitSeconds float64 // summed commit time
}

// Metrics returns the log's figures.
func (l *Log) Metrics() Metrics {
	m := Metrics{LastSeq: l.LastSeq(), DurableSeq: l.durableSeq.Load(), Commits: l.commits.Load(),
		Records: l.committedRecords.Load(), CommitSeconds: float64(l.commitLatency.sumNano.Load()) / 1e9}
	for i := range m.CommitBuckets {
		m.CommitBuckets[i] = l.commitLatency.buckets[i].Load()
	}
	return m
}
