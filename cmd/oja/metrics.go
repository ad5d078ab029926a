package main

import (
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/wal"
)

// walCollector exposes the log's figures, the recovery time and the log
// follower's snapshots on /metrics, read at scrape time.
type walCollector struct {
	log                                   *wal.Log
	recoveryNanos                         *atomic.Int64
	follower                              *atomic.Pointer[actors.Follower]
	lastSeq, durableSeq, commits, records *prometheus.Desc
	commitDuration, recoveryDuration      *prometheus.Desc
	applied, snapshots, snapshotSeq       *prometheus.Desc
	snapshotDuration, snapshotBytes       *prometheus.Desc
	firstRetained                         *prometheus.Desc
	// The data dir's file system and the snapshot cadence, for the
	// alerts (deploy/prometheus): disk filling, snapshot overdue.
	data                             string
	snapshotEvery                    uint64
	diskAvail, diskSize, everyEvents *prometheus.Desc
}

func newWALCollector(log *wal.Log, recoveryNanos *atomic.Int64, follower *atomic.Pointer[actors.Follower], data string, snapshotEvery uint64) *walCollector {
	desc := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &walCollector{log: log, recoveryNanos: recoveryNanos, follower: follower, data: data, snapshotEvery: snapshotEvery,
		diskAvail:        desc("oja_data_filesystem_avail_bytes", "Bytes free to the service on the data dir's file system."),
		diskSize:         desc("oja_data_filesystem_size_bytes", "Size of the data dir's file system."),
		everyEvents:      desc("oja_snapshot_every_events", "--snapshot-every: events between snapshots saved while serving (0: none)."),
		applied:          desc("oja_follower_applied_seq", "Last log sequence the snapshot follower applied."),
		snapshots:        desc("oja_snapshots_saved_total", "Snapshots saved while serving."),
		snapshotSeq:      desc("oja_snapshot_last_seq", "Log sequence of the last snapshot saved while serving."),
		snapshotDuration: desc("oja_snapshot_last_duration_seconds", "Encode and save time of the last snapshot."),
		snapshotBytes:    desc("oja_snapshot_last_bytes", "Size of the last snapshot."),
		firstRetained:    desc("oja_wal_first_retained_seq", "First log sequence kept by log retention."),
		lastSeq:          desc("oja_wal_last_seq", "Last log sequence assigned."),
		durableSeq:       desc("oja_wal_durable_seq", "Last log sequence durable."),
		commits:          desc("oja_wal_commits_total", "Group commits."),
		records:          desc("oja_wal_records_total", "Records made durable."),
		commitDuration:   desc("oja_wal_commit_duration_seconds", "Group commit latency (write + fsync)."),
		recoveryDuration: desc("oja_recovery_duration_seconds", "Time the last start spent recovering."),
	}
}

func (c *walCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lastSeq, c.durableSeq, c.commits, c.records, c.commitDuration, c.recoveryDuration,
		c.applied, c.snapshots, c.snapshotSeq, c.snapshotDuration, c.snapshotBytes, c.firstRetained,
		c.diskAvail, c.diskSize, c.everyEvents} {
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
	ch <- prometheus.MustNewConstMetric(c.everyEvents, prometheus.GaugeValue, float64(c.snapshotEvery))
	var fs syscall.Statfs_t
	if err := syscall.Statfs(c.data, &fs); err == nil {
		ch <- prometheus.MustNewConstMetric(c.diskAvail, prometheus.GaugeValue, float64(fs.Bavail)*float64(fs.Bsize))
		ch <- prometheus.MustNewConstMetric(c.diskSize, prometheus.GaugeValue, float64(fs.Blocks)*float64(fs.Bsize))
	}
	if f := c.follower.Load(); f != nil {
		st := f.Stats()
		ch <- prometheus.MustNewConstMetric(c.applied, prometheus.GaugeValue, float64(st.Applied))
		ch <- prometheus.MustNewConstMetric(c.snapshots, prometheus.CounterValue, float64(st.Snapshots))
		ch <- prometheus.MustNewConstMetric(c.snapshotSeq, prometheus.GaugeValue, float64(st.LastSnapshot))
		ch <- prometheus.MustNewConstMetric(c.snapshotDuration, prometheus.GaugeValue, st.LastSnapshotTook.Seconds())
		ch <- prometheus.MustNewConstMetric(c.snapshotBytes, prometheus.GaugeValue, float64(st.LastSnapshotSize))
		if st.FirstRetained > 0 {
			ch <- prometheus.MustNewConstMetric(c.firstRetained, prometheus.GaugeValue, float64(st.FirstRetained))
		}
	}
}
