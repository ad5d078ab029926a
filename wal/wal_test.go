package wal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/oja-exchange/oja/internal/poll"
)

// openLog opens dir on fs and fails the test on error.
func openLog(t testing.TB, fs vfs.FS, dir string, sync bool) *Log {
	t.Helper()
	l, err := Open(dir, Options{FS: fs, Sync: sync})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return l
}

// closeLog closes l and fails the test on error.
func closeLog(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// replayAll returns every record of l as seq → payload (copied), failing the
// test on error.
func replayAll(t testing.TB, l *Log) [][]byte {
	t.Helper()
	var recs [][]byte
	err := l.Replay(0, func(seq uint64, rec []byte) error {
		if want := uint64(len(recs)) + 1; seq != want {
			return fmt.Errorf("replay gave seq %d, want %d", seq, want)
		}
		recs = append(recs, bytes.Clone(rec))
		return nil
	})
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	return recs
}

func TestAppendReplayRoundTrip(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "db", true)
	if got := l.LastSeq(); got != 0 {
		t.Fatalf("LastSeq of new log = %d, want 0", got)
	}
	appends := [][][]byte{
		{[]byte("one")},
		{[]byte("two"), []byte("three"), {}},
		{bytes.Repeat([]byte{0xab}, RecordBytesMax)},
		{[]byte("five")},
	}
	var want [][]byte
	for i, recs := range appends {
		first, err := l.AppendWait(recs...)
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if wantFirst := uint64(len(want)) + 1; first != wantFirst {
			t.Fatalf("append %d: first seq = %d, want %d", i, first, wantFirst)
		}
		want = append(want, recs...)
	}
	if got := l.LastSeq(); got != uint64(len(want)) {
		t.Fatalf("LastSeq = %d, want %d", got, len(want))
	}
	check := func(l *Log) {
		t.Helper()
		got := replayAll(t, l)
		if len(got) != len(want) {
			t.Fatalf("replayed %d records, want %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("seq %d: got %d bytes %.20q, want %d bytes %.20q", i+1, len(got[i]), got[i], len(want[i]), want[i])
			}
		}
		var seqs []uint64
		if err := l.Replay(3, func(seq uint64, _ []byte) error { seqs = append(seqs, seq); return nil }); err != nil {
			t.Fatalf("Replay(3): %v", err)
		}
		if fmt.Sprint(seqs) != "[4 5 6]" {
			t.Fatalf("Replay(3) seqs = %v, want [4 5 6]", seqs)
		}
		if err := l.Replay(uint64(len(want)), func(seq uint64, _ []byte) error {
			return fmt.Errorf("Replay(last) gave seq %d", seq)
		}); err != nil {
			t.Fatal(err)
		}
	}
	check(l)
	closeLog(t, l)

	l = openLog(t, fs, "db", true)
	defer closeLog(t, l)
	if got := l.LastSeq(); got != uint64(len(want)) {
		t.Fatalf("LastSeq after reopen = %d, want %d", got, len(want))
	}
	check(l)
	first, err := l.AppendWait([]byte("seven"))
	if err != nil || first != uint64(len(want))+1 {
		t.Fatalf("append after reopen = %d, %v; want %d, nil", first, err, len(want)+1)
	}
}

func TestReplayFnErrorStops(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "db", true)
	defer closeLog(t, l)
	for i := range 5 {
		if _, err := l.AppendWait(fmt.Appendf(nil, "r%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	stop := errors.New("stop")
	calls := 0
	err := l.Replay(0, func(seq uint64, _ []byte) error {
		calls++
		if seq == 2 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 2 {
		t.Fatalf("Replay = %v after %d calls; want the fn's error after 2", err, calls)
	}
}

// appendResult is what one done call reported.
type appendResult struct {
	id    int // which Append
	first uint64
	err   error
}

func TestConcurrentAppend(t *testing.T) {
	const appenders, appendsEach = 16, 150
	l := openLog(t, vfs.NewMem(), "db", true)
	defer closeLog(t, l)

	var (
		mu       sync.Mutex
		results  []appendResult // in done-call order
		payloads = make([][][]byte, appenders*appendsEach)
		calls    = make([]atomic.Int32, appenders*appendsEach)
		inDone   atomic.Bool
		wg       sync.WaitGroup
	)
	for g := range appenders {
		wg.Go(func() {
			for i := range appendsEach {
				id := g*appendsEach + i
				recs := make([][]byte, 1+id%3)
				for j := range recs {
					recs[j] = fmt.Appendf(nil, "g%d-i%d-r%d", g, i, j)
				}
				payloads[id] = recs
				wg.Add(1)
				l.Append(recs, func(first uint64, err error) {
					defer wg.Done()
					if !inDone.CompareAndSwap(false, true) {
						t.Errorf("done callbacks overlap: not called from one goroutine")
					}
					calls[id].Add(1)
					mu.Lock()
					results = append(results, appendResult{id: id, first: first, err: err})
					mu.Unlock()
					inDone.Store(false)
				})
			}
		})
	}
	wg.Wait()

	if len(results) != appenders*appendsEach {
		t.Fatalf("%d done calls, want %d", len(results), appenders*appendsEach)
	}
	for id := range calls {
		if n := calls[id].Load(); n != 1 {
			t.Fatalf("append %d: done called %d times", id, n)
		}
	}
	bySeq := map[uint64][]byte{}
	next := uint64(1)
	for _, r := range results {
		if r.err != nil {
			t.Fatalf("append %d: %v", r.id, r.err)
		}
		if r.first != next {
			t.Fatalf("done order: append %d has first seq %d, want %d (done must run in sequence order)", r.id, r.first, next)
		}
		for j, rec := range payloads[r.id] {
			bySeq[r.first+uint64(j)] = rec
		}
		next += uint64(len(payloads[r.id]))
	}
	if l.LastSeq() != next-1 {
		t.Fatalf("LastSeq = %d, want %d", l.LastSeq(), next-1)
	}
	got := replayAll(t, l)
	if len(got) != len(bySeq) {
		t.Fatalf("replayed %d records, acked %d", len(got), len(bySeq))
	}
	for i, rec := range got {
		if want := bySeq[uint64(i)+1]; !bytes.Equal(rec, want) {
			t.Fatalf("seq %d: got %q, want %q", i+1, rec, want)
		}
	}
	if commits := l.commits.Load(); commits >= uint64(len(results)) {
		t.Errorf("%d commits for %d appends: group commit never grouped", commits, len(results))
	}
}

func TestCloseDrainsPending(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "db", true)
	const appends = 500
	var acked, failed atomic.Int32
	for i := range appends {
		l.Append([][]byte{fmt.Appendf(nil, "rec%d", i)}, func(_ uint64, err error) {
			if err != nil {
				failed.Add(1)
				return
			}
			acked.Add(1)
		})
	}
	closeLog(t, l)
	if acked.Load() != appends || failed.Load() != 0 {
		t.Fatalf("after Close: %d acked, %d failed; want %d acked", acked.Load(), failed.Load(), appends)
	}
	if _, err := l.AppendWait([]byte("late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("AppendWait after Close = %v, want ErrClosed", err)
	}
	if err := l.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v, want ErrClosed", err)
	}
	l = openLog(t, fs, "db", true)
	defer closeLog(t, l)
	if got := len(replayAll(t, l)); got != appends {
		t.Fatalf("reopened log holds %d records, want %d", got, appends)
	}
}

func TestNoSyncCloseSyncs(t *testing.T) {
	fs := vfs.NewCrashableMem()
	l := openLog(t, fs, "db", false)
	for i := range 100 {
		if _, err := l.AppendWait(fmt.Appendf(nil, "rec%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	closeLog(t, l)
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	l = openLog(t, crashed, "db", false)
	defer closeLog(t, l)
	if got := len(replayAll(t, l)); got != 100 {
		t.Fatalf("after clean Close with Sync=false and a crash: %d records, want 100", got)
	}
}

// blockingSyncFS returns a filesystem whose WAL syncs wait while gate is held.
func blockingSyncFS(gate *sync.RWMutex) vfs.FS {
	return errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if isWALSync(op) {
			gate.RLock()
			//lint:ignore SA2001 the empty section is the point: wait while gate is held
			gate.RUnlock()
		}
		return nil
	}))
}

// isWALSync reports whether op syncs a Pebble WAL file.
func isWALSync(op errorfs.Op) bool {
	switch op.Kind {
	case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
		return strings.HasSuffix(op.Path, ".log")
	}
	return false
}

func TestBackPressure(t *testing.T) {
	var gate sync.RWMutex
	l := openLog(t, blockingSyncFS(&gate), "db", true)
	defer closeLog(t, l)

	gate.Lock() // the committer's next sync blocks
	recs := make([][]byte, AppendRecordsMax)
	for i := range recs {
		recs[i] = []byte{byte(i)}
	}
	var acked atomic.Int32
	done := func(_ uint64, err error) {
		if err != nil {
			t.Errorf("append: %v", err)
		}
		acked.Add(1)
	}
	fits := QueueRecordsMax / AppendRecordsMax
	for range fits {
		l.Append(recs, done) // must not block: exactly fills the queue
	}
	returned := make(chan struct{})
	go func() {
		l.Append(recs, done)
		close(returned)
	}()
	select {
	case <-returned:
		t.Fatalf("Append returned with %d records outstanding; want it blocked at QueueRecordsMax=%d",
			(fits+1)*AppendRecordsMax, QueueRecordsMax)
	case <-time.After(100 * time.Millisecond):
	}
	gate.Unlock()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Append still blocked after the disk caught up")
	}
	poll.Until(t, 10*time.Second, func() string {
		if n := acked.Load(); n != int32(fits+1) {
			return fmt.Sprintf("%d of %d Appends acknowledged", n, fits+1)
		}
		return ""
	})
}

func TestSnapshots(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "db", true)
	if _, _, ok, err := l.LatestSnapshot(); ok || err != nil {
		t.Fatalf("LatestSnapshot of new log: ok=%v err=%v; want none", ok, err)
	}
	for i := range 8 {
		if _, err := l.AppendWait(fmt.Appendf(nil, "rec%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, seq := range []uint64{2, 4, 6, 6, 8} {
		if err := l.SaveSnapshot(seq, fmt.Appendf(nil, "state@%d", seq)); err != nil {
			t.Fatalf("SaveSnapshot(%d): %v", seq, err)
		}
		seq2, data, ok, err := l.LatestSnapshot()
		if err != nil || !ok || seq2 != seq || string(data) != fmt.Sprintf("state@%d", seq) {
			t.Fatalf("LatestSnapshot after saving %d = %d %q %v %v", seq, seq2, data, ok, err)
		}
	}
	seqs, err := l.SnapshotSeqs()
	if err != nil || fmt.Sprint(seqs) != "[2 4 6 8]" {
		t.Fatalf("snapshots after saving = %v (%v), want [2 4 6 8]: SaveSnapshot deletes none", seqs, err)
	}
	// The newest is never deleted; absent ones are ignored.
	if err := l.DeleteSnapshots([]uint64{2, 4, 8, 99}); err != nil {
		t.Fatal(err)
	}
	seqs, err = l.SnapshotSeqs()
	if err != nil || fmt.Sprint(seqs) != "[6 8]" {
		t.Fatalf("snapshots kept = %v (%v), want [6 8]", seqs, err)
	}
	closeLog(t, l)

	l = openLog(t, fs, "db", true)
	defer closeLog(t, l)
	seq, data, ok, err := l.LatestSnapshot()
	if err != nil || !ok || seq != 8 || string(data) != "state@8" {
		t.Fatalf("LatestSnapshot after reopen = %d %q %v %v", seq, data, ok, err)
	}
	stats, err := l.Stats()
	if err != nil || stats.Snapshots != 2 {
		t.Fatalf("Stats.Snapshots = %d (%v), want 2", stats.Snapshots, err)
	}

	// A flipped bit in the stored snapshot is reported, not returned.
	value := make([]byte, checksumBytes+len("state@8"))
	putFrame(value, []byte("state@8"))
	value[len(value)-1] ^= 1
	if err := l.db.Set(makeKey(snapshotPrefix, 8), value, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	// A flipped bit in the newest snapshot: the older one is returned
	// (a longer replay) and the skipped one reported, never the bad data.
	seq, data, ok, err = l.LatestSnapshot()
	if err != nil || !ok || seq != 6 || string(data) != "state@6" || fmt.Sprint(l.CorruptSnapshots()) != "[8]" {
		t.Fatalf("LatestSnapshot with snapshot 8 corrupt = %d %q %v %v, skipped %v; want 6, state@6, skipped [8]",
			seq, data, ok, err, l.CorruptSnapshots())
	}
	value = make([]byte, checksumBytes+len("state@6"))
	putFrame(value, []byte("state@6"))
	value[checksumBytes] ^= 1
	if err := l.db.Set(makeKey(snapshotPrefix, 6), value, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := l.LatestSnapshot(); ok || err != nil || fmt.Sprint(l.CorruptSnapshots()) != "[8 6]" {
		t.Fatalf("both snapshots corrupt: ok %v err %v skipped %v; want none (replay from the start), skipped [8 6]",
			ok, err, l.CorruptSnapshots())
	}
}

func TestCorruptRecord(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  func(l *Log) error
		wantErr string
	}{{
		name: "checksum",
		damage: func(l *Log) error {
			value := make([]byte, checksumBytes+len("rec2"))
			putFrame(value, []byte("rec2"))
			value[checksumBytes] = 'X' // payload changed, checksum not
			return l.db.Set(makeKey(recordPrefix, 3), value, pebble.Sync)
		},
		wantErr: "wal: corrupt record at seq 3: checksum mismatch",
	}, {
		name: "short value",
		damage: func(l *Log) error {
			return l.db.Set(makeKey(recordPrefix, 3), []byte{1, 2}, pebble.Sync)
		},
		wantErr: "wal: corrupt record at seq 3: checksum mismatch",
	}, {
		name:    "missing",
		damage:  func(l *Log) error { return l.db.Delete(makeKey(recordPrefix, 3), pebble.Sync) },
		wantErr: "wal: corrupt record at seq 3: missing (next record is 4)",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l := openLog(t, vfs.NewMem(), "db", true)
			defer closeLog(t, l)
			for i := range 5 {
				if _, err := l.AppendWait(fmt.Appendf(nil, "rec%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.damage(l); err != nil {
				t.Fatal(err)
			}
			var seen []uint64
			err := l.Replay(0, func(seq uint64, _ []byte) error { seen = append(seen, seq); return nil })
			var corrupt *CorruptError
			if err == nil || err.Error() != tc.wantErr || !errors.Is(err, ErrCorrupt) ||
				!errors.As(err, &corrupt) || corrupt.Seq != 3 {
				t.Fatalf("Replay = %v, want %q", err, tc.wantErr)
			}
			if fmt.Sprint(seen) != "[1 2]" {
				t.Fatalf("Replay handed out %v before the corruption, want [1 2]", seen)
			}
		})
	}
}

func TestCheckpoint(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "db", true)
	for i := range 200 {
		if _, err := l.AppendWait(fmt.Appendf(nil, "rec%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.SaveSnapshot(100, []byte("state@100")); err != nil {
		t.Fatal(err)
	}
	// Appends continue during the checkpoint.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 200; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := l.AppendWait(fmt.Appendf(nil, "rec%d", i)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	if err := l.Checkpoint("backup"); err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	close(stop)
	wg.Wait()
	if err := l.Checkpoint("backup"); err == nil {
		t.Fatal("Checkpoint into an existing dir succeeded")
	}
	original := replayAll(t, l)
	closeLog(t, l)

	acked, ok, err := AcknowledgedSeq(fs, "backup")
	if err != nil || !ok {
		t.Fatalf("the checkpoint has no acknowledgement mark: %v %v", ok, err)
	}
	copied := openLog(t, fs, "backup", true)
	defer closeLog(t, copied)
	got := replayAll(t, copied)
	if len(got) < 200 || len(got) > len(original) {
		t.Fatalf("checkpoint holds %d records; want between 200 and %d", len(got), len(original))
	}
	if acked < 200 || acked > uint64(len(got)) {
		t.Fatalf("the checkpoint's mark says %d acknowledged; it holds %d records, 200 acknowledged before it", acked, len(got))
	}
	for i := range got {
		if !bytes.Equal(got[i], original[i]) {
			t.Fatalf("checkpoint seq %d = %q, original %q", i+1, got[i], original[i])
		}
	}
	if seq, data, ok, err := copied.LatestSnapshot(); err != nil || !ok || seq != 100 || string(data) != "state@100" {
		t.Fatalf("checkpoint snapshot = %d %q %v %v", seq, data, ok, err)
	}
}

func TestDataDirInUse(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   vfs.FS
		dir  string
	}{
		{"mem", vfs.NewMem(), "db"},
		{"disk", vfs.Default, filepath.Join(t.TempDir(), "db")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openLog(t, tc.fs, tc.dir, true)
			_, err := Open(tc.dir, Options{FS: tc.fs})
			if err == nil || !strings.HasPrefix(err.Error(), "wal: data dir is in use") {
				t.Fatalf("second Open = %v, want wal: data dir is in use", err)
			}
			_, err = Open(tc.dir, Options{FS: tc.fs, ReadOnly: true})
			if err == nil || !strings.HasPrefix(err.Error(), "wal: data dir is in use") {
				t.Fatalf("read-only Open of a dir in use = %v, want wal: data dir is in use", err)
			}
			closeLog(t, l)
			l = openLog(t, tc.fs, tc.dir, true) // the lock was released
			closeLog(t, l)
		})
	}
}

func TestReadOnly(t *testing.T) {
	fs := vfs.NewMem()
	if _, err := Open("missing", Options{FS: fs, ReadOnly: true}); err == nil {
		t.Fatal("read-only Open of a missing dir succeeded")
	}
	l := openLog(t, fs, "db", true)
	for i := range 10 {
		if _, err := l.AppendWait(fmt.Appendf(nil, "rec%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	closeLog(t, l)

	l, err := Open("db", Options{FS: fs, ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open: %v", err)
	}
	defer closeLog(t, l)
	if got := len(replayAll(t, l)); got != 10 || l.LastSeq() != 10 {
		t.Fatalf("read-only log: %d records, LastSeq %d; want 10, 10", got, l.LastSeq())
	}
	stats, err := l.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if stats.Records != 10 || stats.FirstSeq != 1 || stats.LastSeq != 10 || stats.Bytes != 40 || stats.DiskBytes == 0 {
		t.Fatalf("Stats = %+v", stats)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "read-only") {
				t.Fatalf("Append on a read-only log: recovered %v, want an assertion", r)
			}
		}()
		l.Append([][]byte{[]byte("x")}, func(uint64, error) {})
	}()
}

func TestAppendPreconditions(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "db", false)
	defer closeLog(t, l)
	for _, tc := range []struct {
		name string
		recs [][]byte
	}{
		{"empty", nil},
		{"too many", make([][]byte, AppendRecordsMax+1)},
		{"record too big", [][]byte{make([]byte, RecordBytesMax+1)}},
		{"append too big", slicesOf(AppendBytesMax/RecordBytesMax+1, RecordBytesMax)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil {
					t.Fatal("no assertion")
				}
			}()
			l.Append(tc.recs, func(uint64, error) { t.Error("done called") })
		})
	}
	if l.LastSeq() != 0 {
		t.Fatalf("rejected Appends assigned seqs: LastSeq = %d", l.LastSeq())
	}
}

// slicesOf returns n records of size bytes sharing one backing array.
func slicesOf(n, size int) [][]byte {
	rec := make([]byte, size)
	recs := make([][]byte, n)
	for i := range recs {
		recs[i] = rec
	}
	return recs
}

func TestAppendAllocs(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "db", false)
	defer closeLog(t, l)
	recs := [][]byte{make([]byte, 100)}
	signal := make(chan struct{}, 1)
	done := func(uint64, error) { signal <- struct{}{} }
	appendOne := func() {
		l.Append(recs, done)
		<-signal
	}
	for range 1000 { // warm the queue, batch and memtable
		appendOne()
	}
	// Counts the whole round trip: Append, the committer and Pebble's commit,
	// averaged (rounded down) over the runs.
	if allocs := testing.AllocsPerRun(1000, appendOne); allocs != 0 {
		t.Fatalf("Append+commit: %.0f allocations per call, want 0", allocs)
	}
}

// TestHelperHoldLog is not a test: run as a child process by
// TestDataDirInUseByAnotherProcess, it holds the log in $WAL_TEST_HOLD_DIR
// open until its stdin closes.
func TestHelperHoldLog(t *testing.T) {
	dir := os.Getenv("WAL_TEST_HOLD_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	l := openLog(t, vfs.Default, dir, true)
	fmt.Println("holding")
	_, _ = io.Copy(io.Discard, os.Stdin)
	closeLog(t, l)
}

func TestDataDirInUseByAnotherProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	child := exec.Command(os.Args[0], "-test.run=^TestHelperHoldLog$")
	child.Env = append(os.Environ(), "WAL_TEST_HOLD_DIR="+dir)
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "holding\n" {
		_ = child.Process.Kill()
		t.Fatalf("child said %q, %v", line, err)
	}
	_, err = Open(dir, Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "wal: data dir is in use") {
		t.Errorf("Open of a dir held by another process = %v, want wal: data dir is in use", err)
	}
	_ = stdin.Close()
	if err := child.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	l := openLog(t, vfs.Default, dir, true) // released with the child
	closeLog(t, l)
}

// TestSnapshotNeverOutlivesItsRecords saves a snapshot at a seq whose record
// is still queued behind a slow fsync, and crashes once the next WAL sync
// after that is reached: whatever survives, a surviving snapshot at seq s
// must come with records 1..s.
func TestSnapshotNeverOutlivesItsRecords(t *testing.T) {
	crashable := vfs.NewCrashableMem()
	var (
		armed   atomic.Bool
		syncs   atomic.Int32
		entered = [4]chan struct{}{nil, make(chan struct{}), nil, make(chan struct{})}
		release = [4]chan struct{}{nil, make(chan struct{}), nil, make(chan struct{})}
	)
	fs := errorfs.Wrap(crashable, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !armed.Load() || !isWALSync(op) {
			return nil
		}
		// WAL syncs 1 and 3 after arming wait for the test.
		if n := syncs.Add(1); n == 1 || n == 3 {
			close(entered[n])
			<-release[n]
		}
		return nil
	}))
	l := openLog(t, fs, "db", true)
	waiting := make(chan struct{})
	var once sync.Once
	l.testAwaitDurable = func(uint64) { once.Do(func() { close(waiting) }) }
	armed.Store(true)

	l.Append([][]byte{[]byte("one")}, func(uint64, error) {})
	<-entered[1] // the committer is inside record 1's fsync
	l.Append([][]byte{[]byte("two")}, func(uint64, error) {})
	saved := make(chan error, 1)
	go func() { saved <- l.SaveSnapshot(2, []byte("state@2")) }()
	// SaveSnapshot either waits for record 2 (right) or writes the
	// snapshot at once (wrong: it ends, or blocks on the held fsync).
	select {
	case <-waiting:
	case err := <-saved:
		t.Fatalf("SaveSnapshot at seq 2 finished (%v) while record 2 was not durable", err)
	case <-time.After(10 * time.Second):
		t.Fatal("SaveSnapshot at seq 2 neither waited for record 2 nor finished in 10 s")
	}
	close(release[1])
	<-entered[3]
	crashed := crashable.CrashClone(vfs.CrashCloneCfg{})
	close(release[3])
	if err := <-saved; err != nil {
		t.Fatalf("SaveSnapshot: %v", err)
	}
	closeLog(t, l)

	l = openLog(t, crashed, "db", true)
	defer closeLog(t, l)
	seq, _, ok, err := l.LatestSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if ok && seq > l.LastSeq() {
		t.Fatalf("after the crash: snapshot at seq %d survived, records only up to %d", seq, l.LastSeq())
	}
}

// TestOpenMakesNewDirectoriesDurable: records acknowledged in a log whose
// directories Open just created survive a crash (the parents are synced).
func TestOpenMakesNewDirectoriesDurable(t *testing.T) {
	fs := vfs.NewCrashableMem()
	l, err := Open("data/nested/store", Options{FS: fs, Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendWait([]byte("acknowledged")); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open("data/nested/store", Options{FS: crashed, Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := again.LastSeq(); got != 1 {
		t.Fatalf("after a crash, LastSeq = %d; want the acknowledged record 1", got)
	}
}
