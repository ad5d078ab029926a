package wal

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/oja-exchange/oja/internal/poll"
)

// submitted is one Append in a crash or failure test.
type submitted struct {
	recs  [][]byte
	first uint64 // set by done on success
	acked bool
}

// appendLedger records what appenders submitted and what was acknowledged.
type appendLedger struct {
	mu        sync.Mutex
	appends   []*submitted
	byPayload map[string]int // payload → index in appends
	ackOrder  []int          // done-call order; errors included
	errs      []error        // parallel to ackOrder
}

func newAppendLedger() *appendLedger {
	return &appendLedger{byPayload: map[string]int{}}
}

// submit appends recs to l, recording the outcome.
func (a *appendLedger) submit(l *Log, recs [][]byte, finished func()) {
	a.mu.Lock()
	id := len(a.appends)
	s := &submitted{recs: recs}
	a.appends = append(a.appends, s)
	for _, rec := range recs {
		a.byPayload[string(rec)] = id
	}
	a.mu.Unlock()
	l.Append(recs, func(first uint64, err error) {
		a.mu.Lock()
		if err == nil {
			s.first, s.acked = first, true
		}
		a.ackOrder = append(a.ackOrder, id)
		a.errs = append(a.errs, err)
		a.mu.Unlock()
		finished()
	})
}

// ackCount returns how many done calls have run.
func (a *appendLedger) ackCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ackOrder)
}

// acked returns seq → payload for every Append acknowledged so far.
func (a *appendLedger) acked() map[uint64][]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[uint64][]byte{}
	for _, s := range a.appends {
		if s.acked {
			for i, rec := range s.recs {
				out[s.first+uint64(i)] = rec
			}
		}
	}
	return out
}

// checkRecovered asserts that the log on fs holds records 1..N (Replay
// checks contiguity and checksums), that every record in acked is present
// with its bytes, and that each present record belongs to a submitted Append
// whose records are all present, consecutively (Appends are atomic).
func (a *appendLedger) checkRecovered(t *testing.T, fs vfs.FS, dir string, acked map[uint64][]byte) (recovered int) {
	t.Helper()
	l := openLog(t, fs, dir, true)
	defer closeLog(t, l)
	got := replayAll(t, l)
	if l.LastSeq() != uint64(len(got)) {
		t.Fatalf("LastSeq = %d, Replay gave %d records", l.LastSeq(), len(got))
	}
	for seq, want := range acked {
		if seq > uint64(len(got)) {
			t.Fatalf("acknowledged seq %d lost: log ends at %d", seq, len(got))
		}
		if !bytes.Equal(got[seq-1], want) {
			t.Fatalf("acknowledged seq %d = %q, want %q", seq, got[seq-1], want)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := 0; i < len(got); {
		id, ok := a.byPayload[string(got[i])]
		if !ok {
			t.Fatalf("seq %d holds %q, which was never appended", i+1, got[i])
		}
		for j, rec := range a.appends[id].recs {
			if i+j >= len(got) || !bytes.Equal(got[i+j], rec) {
				t.Fatalf("append %d torn: record %d of %d not at seq %d", id, j, len(a.appends[id].recs), i+j+1)
			}
		}
		i += len(a.appends[id].recs)
	}
	// The log accepts Appends after the recovered prefix.
	if first, err := l.AppendWait([]byte("after-crash")); err != nil || first != uint64(len(got))+1 {
		t.Fatalf("append after recovery = %d, %v; want %d", first, err, len(got)+1)
	}
	return len(got)
}

// TestCrashKeepsAcknowledged appends from several goroutines with Sync,
// takes a crash clone of the filesystem at a random moment (keeping a random
// share of unsynced data), and checks that the clone reopens to a contiguous
// log holding every record acknowledged before the crash.
func TestCrashKeepsAcknowledged(t *testing.T) {
	const seeds, appenders = 8, 6
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x0a1a))
			fs := vfs.NewCrashableMem()
			l := openLog(t, fs, "db", true)
			ledger := newAppendLedger()

			stop := make(chan struct{})
			var wg sync.WaitGroup
			for g := range appenders {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						recs := make([][]byte, 1+(g+i)%4)
						for j := range recs {
							// Sizes vary so WAL blocks fill unevenly.
							recs[j] = fmt.Appendf(nil, "s%d-g%d-i%d-r%d-%s", seed, g, i, j,
								bytes.Repeat([]byte{'x'}, (i*31+j*7)%300))
						}
						if i%3 != 0 { // mix pipelined and waiting Appends
							ledger.submit(l, recs, func() {})
							continue
						}
						finished := make(chan struct{}, 1)
						ledger.submit(l, recs, func() { finished <- struct{}{} })
						<-finished
					}
				})
			}
			// Crash at a random moment after the first acknowledgement.
			poll.True(t, 10*time.Second, "an Append acknowledged", func() bool { return ledger.ackCount() > 0 })
			time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
			acked := ledger.acked() // before the clone: all of these must survive
			crashed := fs.CrashClone(vfs.CrashCloneCfg{
				UnsyncedDataPercent: rng.IntN(101),
				RNG:                 rand.New(rand.NewPCG(seed, 1)),
			})
			close(stop)
			wg.Wait()
			closeLog(t, l)

			if len(acked) == 0 {
				t.Fatal("nothing acknowledged before the crash; the test proves nothing")
			}
			recovered := ledger.checkRecovered(t, crashed, "db", acked)
			t.Logf("acked %d records before the crash, recovered %d", len(acked), recovered)
		})
	}
}
