package main

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/oja-exchange/oja/wal"
)

// walMetrics renders the log's figures and the recovery time for /metrics.
func walMetrics(log *wal.Log, recoveryNanos *atomic.Int64) func(b []byte) []byte {
	return func(b []byte) []byte {
		m := log.Metrics()
		line := func(b []byte, name, kind, help string, v uint64) []byte {
			b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" "+kind+"\n"+name+" "...)
			b = strconv.AppendUint(b, v, 10)
			return append(b, '\n')
		}
		b = line(b, "oja_wal_last_seq", "gauge", "Last log sequence assigned.", m.LastSeq)
		b = line(b, "oja_wal_durable_seq", "gauge", "Last log sequence durable.", m.DurableSeq)
		b = line(b, "oja_wal_commits_total", "counter", "Group commits.", m.Commits)
		b = line(b, "oja_wal_records_total", "counter", "Records made durable.", m.Records)
		b = append(b, "# HELP oja_wal_commit_duration_seconds Group commit latency (write + fsync).\n# TYPE oja_wal_commit_duration_seconds histogram\n"...)
		var cumulative uint64
		for i, n := range m.CommitBuckets {
			cumulative += n
			b = append(b, `oja_wal_commit_duration_seconds_bucket{le="`...)
			if i < len(wal.CommitLatencyBoundsSeconds) {
				b = strconv.AppendFloat(b, wal.CommitLatencyBoundsSeconds[i], 'g', -1, 64)
			} else {
				b = append(b, "+Inf"...)
			}
			b = append(b, `"} `...)
			b = strconv.AppendUint(b, cumulative, 10)
			b = append(b, '\n')
		}
		b = append(b, "oja_wal_commit_duration_seconds_sum "...)
		b = strconv.AppendFloat(b, m.CommitSeconds, 'g', -1, 64)
		b = append(b, "\noja_wal_commit_duration_seconds_count "...)
		b = strconv.AppendUint(b, cumulative, 10)
		b = append(b, "\n# HELP oja_recovery_duration_seconds Time the last start spent recovering.\n# TYPE oja_recovery_duration_seconds gauge\noja_recovery_duration_seconds "...)
		b = strconv.AppendFloat(b, time.Duration(recoveryNanos.Load()).Seconds(), 'g', -1, 64)
		return append(b, '\n')
	}
}
