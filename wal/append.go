package wal

import (
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Append assigns the next len(recs) sequence numbers, in call order, and
// queues recs for the committer, which calls done(firstSeq, nil) once they
// are durable (fsync'd when Options.Sync). Calls to done happen in sequence
// order, exactly once per Append, on the committer goroutine; never inside
// Append. The records of one Append are committed in one Pebble batch, so
// after a crash either all of them are on disk or none.
//
// Errors: on a failed log done gets an error wrapping ErrFailed (and
// firstSeq 0); it is then unknown whether the records reached the disk, but
// nothing after them ever will. After Close, done gets ErrClosed, on a new
// goroutine.
//
// Append blocks while QueueRecordsMax records are outstanding (back-pressure).
//
// REQUIRES: 0 < len(recs) <= AppendRecordsMax; each len(rec) <= RecordBytesMax;
// summed payload <= AppendBytesMax; done != nil; the log is not ReadOnly.
// REQUIRES: recs and the bytes they point to are not modified until done runs.
// REQUIRES: done is quick and does not block; it must not call Append,
// AppendWait or Close (they may wait for the committer that is running done).
func (l *Log) Append(recs [][]byte, done func(firstSeq uint64, err error)) {
	assert(!l.opts.ReadOnly, "Append on a read-only log")
	assert(done != nil, "Append with nil done")
	// NB: hot-path asserts are guarded by an if, so their arguments are only
	// boxed (allocated) when they fail.
	if len(recs) == 0 || len(recs) > AppendRecordsMax {
		assert(false, "Append of %d records (limit %d)", len(recs), AppendRecordsMax)
	}
	bytes := 0
	for _, rec := range recs {
		if len(rec) > RecordBytesMax {
			assert(false, "record of %d bytes (limit %d)", len(rec), RecordBytesMax)
		}
		bytes += len(rec)
	}
	if bytes > AppendBytesMax {
		assert(false, "Append of %d bytes (limit %d)", bytes, AppendBytesMax)
	}

	l.mu.Lock()
	for !l.mu.closed && l.failure.Load() == nil &&
		l.mu.outstanding+len(recs) > QueueRecordsMax {
		l.mu.progress.Wait()
	}
	if l.mu.closed {
		l.mu.Unlock()
		go done(0, ErrClosed)
		return
	}
	var first uint64
	if l.failure.Load() == nil {
		// NB: seqs are assigned here, under mu, in the same order as the
		// queue; the single committer preserves that order on disk.
		first = l.lastSeq.Load() + 1
		l.lastSeq.Store(first + uint64(len(recs)) - 1)
	}
	if len(l.mu.queue) == 0 {
		l.mu.work.Signal()
	}
	l.mu.queue = append(l.mu.queue, pending{recs: recs, done: done, first: first, bytes: bytes})
	l.mu.outstanding += len(recs)
	l.mu.Unlock()
}

// AppendWait appends recs and waits for the result: the first sequence
// assigned, or the error done would have received.
// REQUIRES: as Append; not called from a done callback.
func (l *Log) AppendWait(recs ...[]byte) (uint64, error) {
	w := waiterPool.Get().(*waiter)
	l.Append(recs, w.done)
	<-w.signal
	first, err := w.first, w.err
	w.first, w.err = 0, nil
	waiterPool.Put(w)
	return first, err
}

// waiter carries one AppendWait's result; pooled, with done bound once, so
// AppendWait does not allocate a closure or channel per call.
type waiter struct {
	first  uint64
	err    error
	signal chan struct{}
	done   func(uint64, error)
}

var waiterPool = sync.Pool{New: func() any {
	w := &waiter{signal: make(chan struct{}, 1)}
	w.done = w.finish
	return w
}}

func (w *waiter) finish(first uint64, err error) {
	w.first, w.err = first, err
	w.signal <- struct{}{}
}

// commitLoop is the committer: the only goroutine that writes records. It
// swaps out everything queued, commits it in groups of at most
// BatchRecordsMax records / BatchBytesMax bytes (whole Appends only), and
// calls the done callbacks of each group in order. While it waits for one
// group's fsync, new Appends accumulate in the queue for the next.
//
// NB: one committer, not several, because Pebble's WAL order is commit order:
// with two committers the batch holding seqs 11..20 could reach the WAL (and
// be synced and acknowledged) before the batch holding 1..10 is written, and
// a crash in between would leave a log with a hole where acknowledged
// records follow lost ones. With one committer the WAL holds batches in
// sequence order, and since Pebble recovers a prefix of its WAL, what
// survives a crash is always a prefix 1..N of the sequence space containing
// every acknowledged record.
func (l *Log) commitLoop() {
	defer close(l.committerDone)
	batch := l.db.NewBatch()
	defer func() { _ = batch.Close() }()
	var taken []pending
	for {
		l.mu.Lock()
		for len(l.mu.queue) == 0 && !l.mu.closed {
			l.mu.work.Wait()
		}
		if len(l.mu.queue) == 0 {
			l.mu.Unlock()
			return
		}
		taken, l.mu.queue = l.mu.queue, taken
		l.mu.Unlock()

		for start := 0; start < len(taken); {
			end, records, bytes := start, 0, 0
			for end < len(taken) {
				next := taken[end]
				if end > start && (records+len(next.recs) > BatchRecordsMax ||
					bytes+next.bytes > BatchBytesMax) {
					break
				}
				records += len(next.recs)
				bytes += next.bytes
				end++
			}
			l.commit(batch, taken[start:end], records)
			start = end
		}
		clear(taken) // drop references to callers' records and callbacks
		taken = taken[:0]
	}
}

// commit writes group (whole Appends, in sequence order) as one Pebble batch,
// then calls their done callbacks. Called by the committer only.
func (l *Log) commit(batch *pebble.Batch, group []pending, records int) {
	err := l.Failed()
	if err == nil {
		batch.Reset()
		next := group[0].first
		for _, p := range group {
			if p.first != next {
				assert(false, "group not contiguous: seq %d after %d", p.first, next-1)
			}
			for _, rec := range p.recs {
				op := batch.SetDeferred(keyBytes, checksumBytes+len(rec))
				putKey(op.Key, recordPrefix, next)
				putFrame(op.Value, rec)
				if op.Finish() != nil {
					assert(false, "unindexed batch failed to finish")
				}
				next++
			}
		}
		start := time.Now()
		err = l.db.Apply(batch, l.writeOptions)
		l.commitLatency.observe(time.Since(start))
		if err == nil {
			// NB: Pebble reports a failed WAL write or sync not by returning
			// it from Apply but through Logger.Fatalf ("fatal commit error"),
			// which guardLogger turns into the log's failure, so check again.
			err = l.Failed()
		}
		if err != nil {
			err = l.fail(fmt.Errorf("commit seqs %d..%d: %w", group[0].first, next-1, err))
		} else {
			l.durableSeq.Store(next - 1)
			l.commits.Add(1)
			l.committedRecords.Add(uint64(records))
		}
	}
	item := markItem{records: records, err: err}
	if err == nil {
		item.last = group[len(group)-1].first + uint64(len(group[len(group)-1].recs)) - 1
	}
	if !l.opts.Sync {
		// NB: no acknowledgement mark per commit without fsync: it would
		// claim records a crash may lose. Close writes it.
		item.group = group
		l.finish([]markItem{item})
		return
	}
	l.marks.Lock()
	// NB: a copy, as the committer reuses group; from the marker's free
	// list, so that a commit does not allocate.
	var copied []pending
	if n := len(l.marks.free); n > 0 {
		copied, l.marks.free = l.marks.free[n-1], l.marks.free[:n-1]
	}
	item.group = append(copied[:0], group...)
	l.marks.items = append(l.marks.items, item)
	l.marks.work.Signal()
	l.marks.Unlock()
}

// markFreeMax bounds the marker's free list of group copies.
const markFreeMax = 64

// markItem is one committed group waiting for the acknowledgement mark.
type markItem struct {
	group   []pending
	records int
	last    uint64 // the group's last sequence (0 when err)
	err     error
}

// markLoop is the marker: it takes every committed group queued, writes the
// acknowledgement mark for the highest (one write and fdatasync for all of
// them, while the committer syncs the next group), and only then calls their
// done callbacks, in sequence order. A failed mark write fails the log.
func (l *Log) markLoop() {
	defer close(l.markerDone)
	var taken []markItem
	for {
		l.marks.Lock()
		for len(l.marks.items) == 0 && !l.marks.closed {
			l.marks.work.Wait()
		}
		if len(l.marks.items) == 0 {
			l.marks.Unlock()
			return
		}
		taken, l.marks.items = l.marks.items, taken[:0]
		l.marks.Unlock()
		var last uint64
		for _, it := range taken {
			last = max(last, it.last)
		}
		if last > 0 {
			if err := l.mark.write(last); err != nil {
				err = l.fail(fmt.Errorf("acknowledgement mark at seq %d: %w", last, err))
				for i := range taken {
					taken[i].err = err
				}
			}
		}
		l.finish(taken)
		l.marks.Lock()
		for _, it := range taken {
			clear(it.group) // drop references to callers' records and callbacks
			if len(l.marks.free) < markFreeMax {
				l.marks.free = append(l.marks.free, it.group[:0])
			}
		}
		l.marks.Unlock()
		clear(taken)
	}
}

// finish calls the done callbacks of committed groups, in order, and
// releases their records from the queue bound.
func (l *Log) finish(items []markItem) {
	records := 0
	for _, it := range items {
		for _, p := range it.group {
			if it.err != nil {
				p.done(0, it.err)
			} else {
				p.done(p.first, nil)
			}
		}
		records += it.records
	}
	l.mu.Lock()
	l.mu.outstanding -= records
	if l.mu.outstanding < 0 {
		assert(false, "outstanding records went negative: %d", l.mu.outstanding)
	}
	l.mu.progress.Broadcast()
	l.mu.Unlock()
}
