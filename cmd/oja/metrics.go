package main

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oja-exchange/oja/wal"
)

// walCollector exposes the log's figures and the recovery time on /metrics,
// read at scrape time.
type walCollector struct {
	log                                   *wal.Log
	recoveryNanos                         *atomic.Int64
	lastSeq, durableSeq, commits, records *prometheus.Desc
	commitDuration, recoveryDuration      *prometheus.Desc
}

func newWALCollector(log *wal.Log, recoveryNanos *atomic.Int64) *walCollector {
	desc := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &walCollector{log: log, recoveryNanos: recoveryNanos,
		lastSeq:          desc("oja_wal_last_seq", "Last log sequence assigned."),
		durableSeq:       desc("oja_wal_durable_seq", "Last log sequence durable."),
		commits:          desc("oja_wal_commits_total", "Group commits."),
		records:          desc("oja_wal_records_total", "Records made durable."),
		commitDuration:   desc("oja_wal_commit_duration_seconds", "Group commit latency (write + fsync)."),
		recoveryDuration: desc("oja_recovery_duration_seconds", "Time the last start spent recovering."),
	}
}

func (c *walCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lastSeq, c.durableSeq, c.commits, c.records, c.commitDuration, c.recoveryDuration} {
		ch <- d
	}
}

func (c *walCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.log.Metrics()
	ch <- prometheus.MustNewConstMetric(c.lastSeq, prometheus.GaugeValue, float64(m.LastSeq))
	ch <- prometheus.MustNewConstMetric(c.durableSeq, prometheus.GaugeValue, float64(m.DurableSeq))
	ch <- prometheus.MustNewConstMetric(c.commits, prometheus.CounterValue, float64(m.Commits))
	ch <- prometheus.MustNewConstMetric(c.records, prometheus.CounterValue, float64(m.Records))
	buckets := make(map[float64]uint64, len(wal.CommitLatencyBoundsSeconds))
	var cumulative uint64
	for i, n := range m.CommitBuckets {
		cumulative += n
		if i < len(wal.CommitLatencyBoundsSeconds) {
			buckets[wal.CommitLatencyBoundsSeconds[i]] = cumulative
		}
	}
	ch <- prometheus.MustNewConstHistogram(c.commitDuration, cumulative, m.CommitSeconds, buckets)
	ch <- prometheus.MustNewConstMetric(c.recoveryDuration, prometheus.GaugeValue,
		time.Duration(c.recoveryNanos.Load()).Seconds())
}
