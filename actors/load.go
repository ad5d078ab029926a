package actors

import (
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/oja-exchange/oja/engine"
)

// DeferKeyWrites writes s's Idempotency-Key writes on a goroutine of their
// own (engine.State.DeferKeyWrites) until settle, which hands over the last
// of them and returns once every one is in the index. For a bulk replay: the
// writes, sorted by the index's shard, take another core a fraction of
// what they cost Apply in the order made. settle may be called more than
// once; nothing may read s.Idempotency before it returns.
func DeferKeyWrites(s *engine.State) (settle func()) {
	ops := make(chan []engine.KeyOp, 16)
	done := make(chan struct{})
	w, flush := s.DeferKeyWrites(func(batch []engine.KeyOp) { ops <- batch })
	go func() {
		defer close(done)
		for batch := range ops {
			w.Write(batch)
		}
		w.Finish()
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			flush()
			close(ops)
			<-done
		})
	}
}

// DecodeState is engine.DecodeState with the work on goroutines of its
// own: a version 13 snapshot's blocks of quotes decoded side by side, one
// decoder a processor, and the quotes indexed, each index on a goroutine
// of its own (IndexSideBySide; beside the decoding of an older snapshot,
// after a version 13 snapshot's blocks, whose slabs the key index needs in
// creation order). At a million quotes the quotes' decoding and the
// indexes' writes are most of a start from a snapshot; on two cores the
// goroutines keep both busy.
func DecodeState(b []byte) (*engine.State, error) {
	return engine.DecodeStateWith(b, engine.Loading{Indexing: IndexSideBySide, Decoders: runtime.GOMAXPROCS(0), Together: together})
}

// together runs fns, each on a goroutine of its own, and returns once all
// have returned. A panic of one, or a fault reading memory (a snapshot's
// mapped file with an I/O error under it: debug.SetPanicOnFault), is
// raised again on the caller's goroutine once all have returned, where
// the log's guard (wal.Log.ReadLatestSnapshot) makes it an error or sets
// the snapshot aside, as it does for a decode on the caller's goroutine;
// on another goroutine it would end the process.
func together(fns ...func()) {
	var wg sync.WaitGroup
	panics := make([]any, len(fns))
	for i, fn := range fns {
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			debug.SetPanicOnFault(true)
			fn()
		})
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
}

// IndexSideBySide is the engine.SlabIndexing that runs each part on a
// goroutine of its own, fed slabs in order through a queue of 16.
func IndexSideBySide(parts ...func(slab []engine.Quote)) (send func(slab []engine.Quote), wait func()) {
	queues := make([]chan []engine.Quote, len(parts))
	var done sync.WaitGroup
	for i, part := range parts {
		q := make(chan []engine.Quote, 16)
		queues[i] = q
		done.Go(func() {
			for slab := range q {
				part(slab)
			}
			part(nil)
		})
	}
	send = func(slab []engine.Quote) {
		for _, q := range queues {
			q <- slab
		}
	}
	wait = func() {
		for _, q := range queues {
			close(q)
		}
		done.Wait()
	}
	return send, wait
}
