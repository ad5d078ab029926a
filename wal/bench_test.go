package wal

import (
	"encoding/binary"
	"errors"
	"flag"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// appendersPerProc is b.SetParallelism's factor for both parallel
// benchmarks: the number of concurrent appenders is appendersPerProc ×
// GOMAXPROCS, standing in for many actors each waiting on its own Append.
var appendersPerProc = flag.Int("appenders-per-proc", 32, "parallel benchmarks run this many appenders per GOMAXPROCS")

// benchRecordBytes is the payload size of one record: a small encoded event.
const benchRecordBytes = 100

// BenchmarkAppendSync measures synced records/s through the group committer:
// parallel appenders, each waiting for its own Append, Sync on, on disk.
func BenchmarkAppendSync(b *testing.B) {
	l, err := Open(b.TempDir(), Options{Sync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(*appendersPerProc)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rec := make([]byte, benchRecordBytes)
		for pb.Next() {
			if _, err := l.AppendWait(rec); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	if commits := l.commits.Load(); commits > 0 {
		b.ReportMetric(float64(b.N)/float64(commits), "records/commit")
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPebbleRawSync is the baseline: the same appenders each commit
// their one record as its own batch with db.Apply(batch, pebble.Sync), so
// only Pebble's own sync grouping helps.
func BenchmarkPebbleRawSync(b *testing.B) {
	db := openRawPebble(b)
	var seq atomic.Uint64
	b.SetParallelism(*appendersPerProc)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		batch := db.NewBatch()
		defer func() { _ = batch.Close() }()
		key := make([]byte, keyBytes)
		value := make([]byte, checksumBytes+benchRecordBytes)
		for pb.Next() {
			key[0] = recordPrefix
			binary.BigEndian.PutUint64(key[1:], seq.Add(1))
			batch.Reset()
			if err := batch.Set(key, value, nil); err != nil {
				b.Error(err)
				return
			}
			if err := db.Apply(batch, pebble.Sync); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPebbleRawSyncOneWriter is the floor: one writer, one record per
// synced batch, so every record pays a whole fsync.
func BenchmarkPebbleRawSyncOneWriter(b *testing.B) {
	db := openRawPebble(b)
	batch := db.NewBatch()
	key := make([]byte, keyBytes)
	value := make([]byte, checksumBytes+benchRecordBytes)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		putKey(key, recordPrefix, uint64(i)+1)
		batch.Reset()
		if err := batch.Set(key, value, nil); err != nil {
			b.Fatal(err)
		}
		if err := db.Apply(batch, pebble.Sync); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	if err := errors.Join(batch.Close(), db.Close()); err != nil {
		b.Fatal(err)
	}
}

// openRawPebble opens a bare Pebble store in a temporary directory, with the
// log's memtable size and none of its records: the raw baselines' store.
func openRawPebble(b *testing.B) *pebble.DB {
	b.Helper()
	db, err := pebble.Open(b.TempDir(), &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             &guardLogger{fail: func(err error) error { b.Error(err); return err }},
		MemTableSize:       memTableBytes,
	})
	if err != nil {
		b.Fatal(err)
	}
	return db
}
