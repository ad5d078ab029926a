package wal

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// recordingLogger is a caller's pebble.Logger that remembers what it got.
type recordingLogger struct {
	mu     sync.Mutex
	errors []string
	fatals int
}

func (r *recordingLogger) Infof(string, ...any) {}

func (r *recordingLogger) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recordingLogger) Fatalf(string, ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fatals++
}

// TestCommitFailureFailsLog injects a WAL error after a number of WAL
// operations while several goroutines append, and checks that the log fails
// cleanly: the process survives, acknowledgements form a prefix of the done
// calls, every error wraps ErrFailed, every acknowledged record was really
// synced, later Appends fail fast, and Close reports the failure.
func TestCommitFailureFailsLog(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kinds []errorfs.OpKind
		after int64 // matching operations allowed once armed
	}{
		{"sync", []errorfs.OpKind{errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo}, 20},
		{"first sync", []errorfs.OpKind{errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo}, 0},
		{"write", []errorfs.OpKind{errorfs.OpFileWrite, errorfs.OpFileWriteAt}, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crashable := vfs.NewCrashableMem()
			var armed atomic.Bool
			var ops atomic.Int64
			fs := errorfs.Wrap(crashable, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if !armed.Load() || !strings.HasSuffix(op.Path, ".log") {
					return nil
				}
				for _, kind := range tc.kinds {
					if op.Kind == kind && ops.Add(1) > tc.after {
						return errorfs.ErrInjected
					}
				}
				return nil
			}))
			logger := &recordingLogger{}
			l, err := Open("db", Options{FS: fs, Sync: true, Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			ledger := newAppendLedger()
			var finished sync.WaitGroup
			for i := range 10 {
				finished.Add(1)
				ledger.submit(l, [][]byte{fmt.Appendf(nil, "before-%d", i)}, finished.Done)
				finished.Wait()
			}

			armed.Store(true)
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					// Until the failure shows, then a few more.
					for i, extra := 0, 5; i < 5000 && extra > 0; i++ {
						if l.Failed() != nil {
							extra--
						}
						finished.Add(1)
						recs := [][]byte{fmt.Appendf(nil, "g%d-i%d-a", g, i), fmt.Appendf(nil, "g%d-i%d-b", g, i)}
						if i%2 == 0 {
							ledger.submit(l, recs, finished.Done)
							continue
						}
						one := make(chan struct{}, 1)
						ledger.submit(l, recs, func() { finished.Done(); one <- struct{}{} })
						<-one
					}
				})
			}
			wg.Wait()
			finished.Wait()

			// Acknowledgements are a prefix of the done calls; all else failed.
			failedAt := -1
			for i, err := range ledger.errs {
				switch {
				case err == nil && failedAt >= 0:
					t.Fatalf("done call %d succeeded after call %d failed", i, failedAt)
				case err != nil && !errors.Is(err, ErrFailed):
					t.Fatalf("done call %d: %v does not wrap ErrFailed", i, err)
				case err != nil && failedAt < 0:
					failedAt = i
				}
			}
			if failedAt < 0 {
				t.Fatal("no Append failed; the injected error never fired")
			}
			if err := l.Failed(); !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "injected error") {
				t.Fatalf("Failed() = %v, want ErrFailed naming the injected error", err)
			}

			// Fail fast: no I/O, no waiting on the broken disk.
			start := time.Now()
			if _, err := l.AppendWait([]byte("later")); !errors.Is(err, ErrFailed) {
				t.Fatalf("AppendWait on a failed log = %v, want ErrFailed", err)
			}
			if elapsed := time.Since(start); elapsed > time.Second {
				t.Fatalf("AppendWait on a failed log took %v", elapsed)
			}
			if err := l.SaveSnapshot(1, []byte("state")); !errors.Is(err, ErrFailed) {
				t.Fatalf("SaveSnapshot on a failed log = %v, want ErrFailed", err)
			}

			// Every acknowledged record was synced before its done ran: a
			// crash that keeps only synced data still holds it.
			acked := ledger.acked()
			crashed := crashable.CrashClone(vfs.CrashCloneCfg{})

			closed := make(chan error, 1)
			go func() { closed <- l.Close() }()
			select {
			case err := <-closed:
				if !errors.Is(err, ErrFailed) {
					t.Fatalf("Close of a failed log = %v, want ErrFailed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Close of a failed log hangs")
			}

			logger.mu.Lock()
			if logger.fatals != 0 {
				t.Errorf("the caller's Fatalf was called %d times; it may exit the process", logger.fatals)
			}
			if !strings.Contains(strings.Join(logger.errors, "\n"), "injected error") {
				t.Errorf("the caller's logger never heard of the failure: %q", logger.errors)
			}
			logger.mu.Unlock()

			recovered := ledger.checkRecovered(t, crashed, "db", acked)
			t.Logf("failed at done call %d; %d records acked, %d recovered", failedAt, len(acked), recovered)
		})
	}
}

// TestFatalfDoesNotExit checks the quiet logger: a Pebble Fatalf fails the
// log instead of ending the process.
func TestFatalfDoesNotExit(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "db", true)
	if _, err := l.AppendWait([]byte("one")); err != nil {
		t.Fatal(err)
	}
	g := &guardLogger{fail: l.fail}
	g.Fatalf("pebble: fatal commit error: %v", "disk on fire")
	if err := l.Failed(); !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("Failed() after Fatalf = %v", err)
	}
	if _, err := l.AppendWait([]byte("two")); !errors.Is(err, ErrFailed) {
		t.Fatalf("AppendWait after Fatalf = %v, want ErrFailed", err)
	}
	if err := l.Close(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Close = %v, want ErrFailed", err)
	}
}
