package main

// Tests of the offline log tools (spec §12) on real data dirs: built by
// a real service (gatewaytest, in process, or the oja binary), then damaged
// the way disks and crashes damage them: a torn WAL tail, a record with a
// bad checksum, a missing record, a record that does not decode, a corrupt
// or wrong snapshot. `oja wal verify` must tolerate the tail and name the
// first bad sequence of everything else; `oja wal replay --until N` must
// rebuild exactly the state the live service had at seq N; a backup must
// replay to the same state hash as its source.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/cmd/oja/waltools"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
	"github.com/oja-exchange/oja/wal"
)

// ---- Building and damaging data dirs --------------------------------------------

// walFixture is a stopped service's data dir with some history.
type walFixture struct {
	data   string
	key    string            // the partner's sandbox key
	quotes map[string]string // quote id → status as last acknowledged
}

// intentBody is a create request every fixture pool can fill.
const intentBody = `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1600,"rate":0.0005,"amountDirection":"source"}`

// startFixtureService starts a real service (gatewaytest) on a new data dir
// with a partner and funded sandbox pools.
func startFixtureService(t *testing.T) (*gatewaytest.Server, *walFixture) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	s := gatewaytest.Start(t, gatewaytest.Options{Dir: data, Sync: true})
	p := s.NewPartner(t, "wal-tools")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Desk A", "0.000625", "5000")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Desk B", "0.00062", "5000")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.GHSUSDT, "Desk C", "0.08", "5000")
	return s, &walFixture{data: data, key: p.SandboxKey, quotes: map[string]string{}}
}

// drive makes n quotes and moves them through every status but expired.
func (f *walFixture) drive(t *testing.T, s *gatewaytest.Server, n int) {
	t.Helper()
	client := newHTTPClient()
	defer client.CloseIdleConnections()
	for i := range n {
		var q map[string]any
		decodeJSON(t, mustDo(t, client, 200, "POST", s.URL+"/api/v1/partners/marketplace/intent", f.key, []byte(intentBody)).body, &q)
		id := str(q, "quoteId")
		f.quotes[id] = "pending"
		ar, _ := q["allocationResult"].(map[string]any)
		allocations, _ := ar["allocations"].([]any)
		account := str(allocations[0].(map[string]any), "poolAccountId")
		step := func(op, want string, body []byte) {
			var got map[string]any
			decodeJSON(t, mustDo(t, client, 200, "PUT", s.URL+quotePath+id+"/"+op, f.key, body).body, &got)
			if str(got, "status") != want {
				t.Fatalf("%s %s: status %q, want %q", op, id, str(got, "status"), want)
			}
			f.quotes[id] = want
		}
		switch i % 4 {
		case 0:
			step("accept", "awaiting_payment", fmt.Appendf(nil, `{"accountId":%q}`, account))
			step("complete", "completed", nil)
		case 1:
			step("cancel", "cancelled", nil)
		case 2:
			step("accept", "awaiting_payment", fmt.Appendf(nil, `{"accountId":%q}`, account))
		}
	}
}

// newFixture is a stopped data dir with n quotes of history.
func newFixture(t *testing.T, n int) *walFixture {
	t.Helper()
	s, f := startFixtureService(t)
	f.drive(t, s, n)
	s.Stop()
	return f
}

// copyDir copies a stopped data dir, so one fixture serves several
// damages.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v\n%s", from, to, err, out)
	}
	return to
}

// pokeStore opens a stopped data dir's Pebble store directly, as a
// damaged disk would present it, and runs fn on it.
func pokeStore(t *testing.T, data string, fn func(db *pebble.DB) error) {
	t.Helper()
	db, err := pebble.Open(storeDir(data), &pebble.Options{FormatMajorVersion: pebble.FormatNewest, Logger: quietPebble{}})
	if err != nil {
		t.Fatalf("pebble open: %v", err)
	}
	if err := fn(db); err != nil {
		db.Close()
		t.Fatalf("poking the store: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("pebble close: %v", err)
	}
}

// quietPebble drops Pebble's chatter; a fatal message fails loudly.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)           {}
func (quietPebble) Errorf(string, ...any)          {}
func (quietPebble) Fatalf(format string, a ...any) { panic(fmt.Sprintf("pebble: "+format, a...)) }

// storeKey is the wal's key of a record ('r') or snapshot ('s') (see
// wal/doc.go: prefix + big-endian seq).
func storeKey(prefix byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefix}, seq)
}

// framed is a stored value: crc32c(payload) little-endian, then payload.
func framed(payload []byte) []byte {
	crc := crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli))
	return append(binary.LittleEndian.AppendUint32(nil, crc), payload...)
}

func openLog(t *testing.T, data string, readOnly bool) *wal.Log {
	t.Helper()
	log, err := wal.Open(storeDir(data), wal.Options{Sync: true, ReadOnly: readOnly})
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	return log
}

// stateAt replays a stopped data dir's log up to seq (0: all).
func stateAt(t *testing.T, data string, seq uint64) (*engine.State, uint64) {
	t.Helper()
	log := openLog(t, data, true)
	defer log.Close()
	var stop func(uint64, int64) bool
	if seq > 0 {
		stop = func(s uint64, _ int64) bool { return s > seq }
	}
	state, last, err := waltools.ReplayInto(log, stop, 0)
	if err != nil {
		t.Fatalf("replay %s: %v", data, err)
	}
	return state, last
}

// ---- Running the tools ------------------------------------------------------------

// walTool runs `oja wal args…` in process and returns stdout, stderr and
// the exit status main would give.
func walTool(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := waltools.Run(args, &out, &errOut)
	var exit waltools.ExitCode
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitStatus()
	default:
		fmt.Fprintf(&errOut, "oja: %v\n", err)
		code = 1
	}
	return out.String(), errOut.String(), code
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

var (
	stateHashLine = regexp.MustCompile(`(?m)^state hash ([0-9a-f]{64})$`)
	verifiedLine  = regexp.MustCompile(`(?m)^records 1\.\.(\d+) verified; state hash ([0-9a-f]{64})$`)
)

// verifyOK runs `oja wal verify` (the binary) and requires success; it
// returns the last verified seq, the state hash and the report.
func verifyOK(t *testing.T, data string) (uint64, string, string) {
	t.Helper()
	out, errOut, code := runOja(t, ojaBinary(t), childEnv(), "wal", "verify", "--data", data)
	if code != 0 || lastLine(out) != "OK" {
		t.Fatalf("oja wal verify --data %s: exit %d\n%s%s", data, code, out, errOut)
	}
	m := verifiedLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("oja wal verify: no \"records 1..N verified; state hash H\" line:\n%s", out)
	}
	var last uint64
	fmt.Sscan(m[1], &last)
	return last, m[2], out
}

// verifyFails runs `oja wal verify` (the binary) and requires exit 1 with
// the last line "FAIL: <want>…".
func verifyFails(t *testing.T, data, want string) string {
	t.Helper()
	out, errOut, code := runOja(t, ojaBinary(t), childEnv(), "wal", "verify", "--data", data)
	if code != 1 || !strings.HasPrefix(lastLine(out), "FAIL: "+want) {
		t.Fatalf("oja wal verify: exit %d, want 1 with last line \"FAIL: %s…\"\n%s%s", code, want, out, errOut)
	}
	return out
}

// replayHash runs `oja wal replay --until until` (the binary) and returns
// the seq it reached and the state hash.
func replayHash(t *testing.T, data, until string) (uint64, string) {
	t.Helper()
	out, errOut, code := runOja(t, ojaBinary(t), childEnv(), "wal", "replay", "--data", data, "--until", until)
	if code != 0 {
		t.Fatalf("oja wal replay --until %s: exit %d\n%s%s", until, code, out, errOut)
	}
	var seq uint64
	if _, err := fmt.Sscanf(out, "state as of seq %d ", &seq); err != nil {
		t.Fatalf("oja wal replay: first line: %v\n%s", err, out)
	}
	m := stateHashLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("oja wal replay: no state hash line:\n%s", out)
	}
	return seq, m[1]
}

// ---- verify: damage -----------------------------------------------------------------

// TestWalVerifyNamesFirstBadRecord damages one record in the middle of a
// real log three ways; verify must exit 1 naming exactly that sequence,
// having verified every record before it.
func TestWalVerifyNamesFirstBadRecord(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 8)
	last, _, _ := verifyOK(t, f.data)
	if last < 20 {
		t.Fatalf("fixture has only %d records", last)
	}
	bad := last / 2
	for _, tc := range []struct {
		name   string
		damage func(db *pebble.DB) error
		want   string
	}{
		{"checksum", func(db *pebble.DB) error {
			v, closer, err := db.Get(storeKey('r', bad))
			if err != nil {
				return err
			}
			v = slices.Clone(v)
			closer.Close()
			v[len(v)-1] ^= 0x40 // the payload changes, its checksum does not
			return db.Set(storeKey('r', bad), v, pebble.Sync)
		}, fmt.Sprintf("corrupt record at seq %d: checksum mismatch", bad)},
		{"missing", func(db *pebble.DB) error {
			return db.Delete(storeKey('r', bad), pebble.Sync)
		}, fmt.Sprintf("corrupt record at seq %d: missing (next record is %d)", bad, bad+1)},
		{"undecodable", func(db *pebble.DB) error {
			// A checksum that verifies over bytes that are no event.
			return db.Set(storeKey('r', bad), framed([]byte{0xff, 0xfe, 0xfd}), pebble.Sync)
		}, fmt.Sprintf("corrupt record at seq %d: does not decode", bad)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := copyDir(t, f.data)
			pokeStore(t, data, tc.damage)
			out := verifyFails(t, data, tc.want)
			if !strings.Contains(out, fmt.Sprintf("records 1..%d verified before the fault\n", bad-1)) {
				t.Errorf("verify does not say records 1..%d verified:\n%s", bad-1, out)
			}
			// The other tools stop at the same record rather than print
			// state built on a hole.
			_, errOut, code := walTool(t, "replay", "--data", data, "--until", fmt.Sprint(last))
			if code == 0 || !strings.Contains(errOut, fmt.Sprintf("seq %d", bad)) {
				t.Errorf("replay over the damage: exit %d, stderr %q", code, errOut)
			}
		})
	}
}

// TestWalVerifyToleratesTornTail cuts the WAL file in the middle of its
// last batch, as a crash during an unsynced write leaves it: Pebble drops
// the batch on open, verify reports the dropped bytes and passes, and the
// records before the batch are all there.
func TestWalVerifyToleratesTornTail(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4)
	before, _, _ := verifyOK(t, f.data)

	// One last append of 128 valid events (one batch, about 520 KB), so
	// cutting 256 KB off the end of the WAL file lands inside it.
	log := openLog(t, f.data, false)
	var recs [][]byte
	for range 128 {
		recs = append(recs, engine.AppendEvent(nil, &engine.ClientCreated{
			At: time.Now().UnixMilli(), Client: engine.ClientID(uuid.New()), Name: strings.Repeat("x", 4000)}))
	}
	if _, err := log.AppendWait(recs...); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	if last, _, out := verifyOK(t, f.data); last != before+128 || strings.Contains(out, "torn tail") {
		t.Fatalf("before the cut: verified 1..%d, want 1..%d, and no torn tail:\n%s", last, before+128, out)
	}

	logs, err := filepath.Glob(filepath.Join(storeDir(f.data), "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no Pebble WAL file in %s (%v)", storeDir(f.data), err)
	}
	slices.Sort(logs)
	newest := logs[len(logs)-1]
	info, err := os.Stat(newest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(newest, info.Size()-256<<10); err != nil {
		t.Fatal(err)
	}
	// The cut removes acknowledged records, which the acknowledgement mark
	// would refuse (wal/ackmark.go); without a mark (a store from before
	// marks, or a copy without its mark) it is judged a torn tail.
	if err := os.Remove(storeDir(f.data) + ".acked"); err != nil {
		t.Fatal(err)
	}

	last, _, out := verifyOK(t, f.data)
	if last != before {
		t.Errorf("after the cut: verified 1..%d, want 1..%d (the torn batch dropped whole)\n%s", last, before, out)
	}
	if !strings.Contains(out, "torn tail (tolerated): WAL "+filepath.Base(newest)+": ") {
		t.Errorf("verify does not report the torn tail of %s:\n%s", filepath.Base(newest), out)
	}
	stats, errOut, code := runOja(t, ojaBinary(t), childEnv(), "wal", "stats", "--data", f.data)
	if code != 0 || !strings.Contains(stats, "torn tail") || !strings.Contains(stats, fmt.Sprintf("last seq    %d ", before)) {
		t.Errorf("oja wal stats after the cut: exit %d\n%s%s", code, stats, errOut)
	}
	_, errOut, code = runOja(t, ojaBinary(t), childEnv(), "wal", "dump", "--data", f.data, "--limit", "1")
	if code != 0 || !strings.Contains(errOut, "torn tail") {
		t.Errorf("oja wal dump after the cut: exit %d, stderr %q, want a torn-tail note", code, errOut)
	}
}

// TestWalVerifySnapshots checks snapshots against replay: matching ones
// pass, a corrupt one, one that disagrees with the replayed state, and one
// beyond the last record each fail at their own sequence, and the first
// bad sequence wins.
func TestWalVerifySnapshots(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 6)
	full, last := stateAt(t, f.data, 0)
	mid := last / 2
	atMid, _ := stateAt(t, f.data, mid)

	// Two good snapshots, as recovery saves them.
	good := copyDir(t, f.data)
	log := openLog(t, good, false)
	for _, s := range []struct {
		seq   uint64
		state *engine.State
	}{{mid, atMid}, {last, full}} {
		if err := log.SaveSnapshot(s.seq, engine.EncodeState(s.state)); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	_, hash, out := verifyOK(t, good)
	if want := fmt.Sprintf("snapshot at seq %d (latest) matches the replayed state", last); !strings.Contains(out, want) {
		t.Errorf("verify: no %q:\n%s", want, out)
	}
	if h := full.Hash(); hash != fmt.Sprintf("%x", h) {
		t.Errorf("verify's state hash %s, want the replayed state's %x", hash, h)
	}
	if want := fmt.Sprintf("snapshot at seq %d matches", mid); !strings.Contains(out, want) || strings.Contains(out, "not checked") {
		t.Errorf("verify did not check the older kept snapshot (want %q):\n%s", want, out)
	}

	// A log that lists every snapshot has all of them checked.
	log = openLog(t, good, true)
	walker := &snapshotListingLog{Log: log, snapshots: map[uint64][]byte{mid: engine.EncodeState(atMid), last: engine.EncodeState(full)}}
	var buf bytes.Buffer
	err := waltools.Verify(walker, &buf, nil)
	log.Close()
	if err != nil || !strings.Contains(buf.String(), fmt.Sprintf("snapshot at seq %d matches", mid)) ||
		strings.Contains(buf.String(), "not checked") {
		t.Errorf("verify with every snapshot listed: %v\n%s", err, buf.String())
	}
	// The newest snapshot damaged: verify fails on it, and names the one a
	// start would take instead the latest.
	damaged := copyDir(t, good)
	pokeStore(t, damaged, func(db *pebble.DB) error {
		return db.Set(storeKey('s', last), append([]byte{1, 2, 3, 4}, engine.EncodeState(full)...), pebble.Sync)
	})
	out = verifyFails(t, damaged, fmt.Sprintf("corrupt snapshot at seq %d: checksum mismatch", last))
	if want := fmt.Sprintf("snapshot at seq %d (latest) matches", mid); !strings.Contains(out, want) {
		t.Errorf("verify with the newest snapshot damaged: no %q:\n%s", want, out)
	}
	walker.snapshots[mid] = engine.EncodeState(full) // the wrong state at mid
	log = openLog(t, good, true)
	walker.Log = log
	buf.Reset()
	err = waltools.Verify(walker, &buf, nil)
	log.Close()
	if !errors.Is(err, waltools.ExitFault) || !strings.HasPrefix(lastLine(buf.String()), fmt.Sprintf("FAIL: snapshot at seq %d differs", mid)) {
		t.Errorf("verify of a wrong older snapshot: %v\n%s", err, buf.String())
	}

	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, data string)
		want   string
		also   string
	}{
		{"wrong latest", func(t *testing.T, data string) {
			log := openLog(t, data, false)
			defer log.Close()
			if err := log.SaveSnapshot(last, engine.EncodeState(atMid)); err != nil {
				t.Fatal(err)
			}
		}, fmt.Sprintf("snapshot at seq %d differs from the state replay reaches at seq %d", last, last), ""},
		{"corrupt latest", func(t *testing.T, data string) {
			pokeStore(t, data, func(db *pebble.DB) error {
				return db.Set(storeKey('s', last), append([]byte{1, 2, 3, 4}, engine.EncodeState(full)...), pebble.Sync)
			})
		}, fmt.Sprintf("corrupt snapshot at seq %d: checksum mismatch", last), ""},
		{"undecodable latest", func(t *testing.T, data string) {
			pokeStore(t, data, func(db *pebble.DB) error {
				return db.Set(storeKey('s', last), framed([]byte{9, 9, 9}), pebble.Sync)
			})
		}, fmt.Sprintf("corrupt snapshot at seq %d: ", last), ""},
		{"beyond the log", func(t *testing.T, data string) {
			pokeStore(t, data, func(db *pebble.DB) error {
				return db.Set(storeKey('s', last+5), framed(engine.EncodeState(full)), pebble.Sync)
			})
		}, fmt.Sprintf("snapshot at seq %d is beyond the last record (seq %d)", last+5, last), ""},
		{"record before a bad snapshot", func(t *testing.T, data string) {
			log := openLog(t, data, false)
			if err := log.SaveSnapshot(last, engine.EncodeState(atMid)); err != nil {
				t.Fatal(err)
			}
			log.Close()
			pokeStore(t, data, func(db *pebble.DB) error {
				return db.Set(storeKey('r', mid), []byte{0, 0, 0, 0, 1}, pebble.Sync)
			})
		}, fmt.Sprintf("corrupt record at seq %d: checksum mismatch", mid),
			fmt.Sprintf("also: snapshot at seq %d not compared: replay stopped before it", last)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := copyDir(t, f.data)
			tc.damage(t, data)
			out := verifyFails(t, data, tc.want)
			if tc.also != "" && !strings.Contains(out, tc.also) {
				t.Errorf("verify does not report %q:\n%s", tc.also, out)
			}
		})
	}
}

// snapshotListingLog is a log whose snapshots are the test's: any state
// at any sequence, which a real store's checks would not let through.
type snapshotListingLog struct {
	*wal.Log
	snapshots map[uint64][]byte
}

func (l *snapshotListingLog) Snapshots(fn func(seq uint64, data []byte) error) error {
	seqs := make([]uint64, 0, len(l.snapshots))
	for seq := range l.snapshots {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		if err := fn(seq, l.snapshots[seq]); err != nil {
			return err
		}
	}
	return nil
}

func (l *snapshotListingLog) LatestSnapshot() (uint64, []byte, bool, error) {
	var latest uint64
	for seq := range l.snapshots {
		latest = max(latest, seq)
	}
	data, ok := l.snapshots[latest]
	return latest, data, ok, nil
}

// ---- replay and backup: state hashes ----------------------------------------------------

// TestWalReplayUntilEqualsLiveState records, while a real service runs,
// the log's last seq N, every quote's acknowledged status and the
// partner's balances, and an online checkpoint of that moment; more
// traffic follows. Offline, `oja wal replay --until N` must rebuild the
// state the service had at N: the same hash as the service's own recovery
// of the checkpoint, the same quote statuses and balances.
func TestWalReplayUntilEqualsLiveState(t *testing.T) {
	t.Parallel()
	s, f := startFixtureService(t)
	f.drive(t, s, 6)

	// The moment: nothing in flight (every request above was answered).
	n := s.Log.LastSeq()
	atN := map[string]string{}
	for id, status := range f.quotes {
		atN[id] = status
	}
	client := newHTTPClient()
	defer client.CloseIdleConnections()
	var balances []map[string]any
	decodeJSON(t, mustDo(t, client, 200, "GET", s.URL+"/api/v1/partners/balances", f.key, nil, "x-service-source", "wal-test").body, &balances)
	checkpoint := filepath.Join(t.TempDir(), "moment")
	if err := s.Log.Checkpoint(storeDir(checkpoint)); err != nil {
		t.Fatal(err)
	}

	// Afterwards: the open quotes move on, new ones come.
	for id, status := range f.quotes {
		if status == "pending" || status == "awaiting_payment" {
			mustDo(t, client, 200, "PUT", s.URL+quotePath+id+"/cancel", f.key, nil)
			f.quotes[id] = "cancelled"
		}
	}
	f.drive(t, s, 3)
	s.Stop()

	// The service's own view of the moment: recovery of the checkpoint.
	cpLog := openLog(t, checkpoint, false)
	recovered, stats, err := actors.Recover(cpLog, time.Now())
	cpLog.Close()
	if err != nil {
		t.Fatal(err)
	}
	if stats.LastSeq != n || stats.Expired != 0 {
		t.Fatalf("checkpoint recovered to seq %d with %d expiries, want seq %d and none", stats.LastSeq, stats.Expired, n)
	}
	liveHash := fmt.Sprintf("%x", recovered.Hash())

	seq, hash := replayHash(t, f.data, fmt.Sprint(n))
	if seq != n || hash != liveHash {
		t.Fatalf("replay --until %d reached seq %d hash %s; the service at seq %d had hash %s", n, seq, hash, n, liveHash)
	}
	if _, full := replayHash(t, f.data, fmt.Sprint(n+1000)); full == liveHash {
		t.Fatalf("the whole log replays to the state at seq %d: the later traffic left no trace", n)
	}

	// The same state, field by field, against what the API answered.
	state, _ := stateAt(t, f.data, n)
	for id, want := range atN {
		qid, _ := engine.ParseUUID(id)
		if q := state.Quotes.Get(engine.QuoteID(qid)); q == nil || q.Status.String() != want {
			t.Errorf("quote %s at seq %d: replay has %v, the API answered %s", id, n, q, want)
		}
	}
	for _, b := range balances {
		aid, _ := engine.ParseUUID(str(b, "accountId"))
		a, ok := state.Treasuries[engine.ModeSandbox].Wallets[engine.AccountID(aid)]
		if !ok {
			t.Errorf("wallet %s missing from the replay", str(b, "accountId"))
			continue
		}
		if got, want := a.Balance.Decimal(a.Currency), mustDec(t, b, "balance"); !got.Equal(want) {
			t.Errorf("wallet %s %s: replay %s, API %s", a.ID, a.Currency, got, want)
		}
	}
}

// TestWalBackupReplaysToSameState backs a running oja binary up twice,
// through POST /admin/v1/backup and `oja admin backup DIR`, around more
// traffic. Each backup is a log that verifies and replays to exactly the
// state its source had when it was taken.
func TestWalBackupReplaysToSameState(t *testing.T) {
	t.Parallel()
	srv := newOjaServer(t)
	srv.start()
	client := newHTTPClient()
	defer client.CloseIdleConnections()

	var created, key, pool map[string]any
	decodeJSON(t, mustDo(t, client, 201, "POST", srv.adminURL()+"/admin/v1/clients", crashAdminToken, []byte(`{"name":"backup"}`)).body, &created)
	decodeJSON(t, mustDo(t, client, 201, "POST", srv.adminURL()+"/admin/v1/clients/"+str(created, "clientId")+"/keys", crashAdminToken, []byte(`{"mode":"live"}`)).body, &key)
	decodeJSON(t, mustDo(t, client, 201, "POST", srv.adminURL()+"/admin/v1/pools", crashAdminToken,
		[]byte(`{"mode":"live","name":"Backup Desk","source":"NGN","destination":"USDT","rate":0.000625}`)).body, &pool)
	mustDo(t, client, 200, "POST", srv.adminURL()+"/admin/v1/pools/"+str(pool, "poolId")+"/deposit", crashAdminToken, []byte(`{"amount":900}`))
	traffic := func(n int) {
		for i := range n {
			var q, accepted map[string]any
			decodeJSON(t, mustDo(t, client, 200, "POST", srv.publicURL()+"/api/v1/partners/marketplace/intent", str(key, "key"), []byte(intentBody)).body, &q)
			id := str(q, "quoteId")
			if i%2 == 0 {
				decodeJSON(t, mustDo(t, client, 200, "PUT", srv.publicURL()+quotePath+id+"/accept", str(key, "key"),
					fmt.Appendf(nil, `{"accountId":%q}`, str(pool, "poolAccountId"))).body, &accepted)
				// Funds first: the transfer arrives, then the partner completes.
				reference := str(accepted["metadata"].(map[string]any)["bankPayIn"].(map[string]any), "reference")
				mustDo(t, client, 200, "POST", srv.adminURL()+"/admin/v1/payins/bank", crashAdminToken,
					fmt.Appendf(nil, `{"reference":%q,"amount":%s,"bankTransactionId":"BTX-%s"}`, reference, q["totalSourceAmount"], id))
				mustDo(t, client, 200, "PUT", srv.publicURL()+quotePath+id+"/complete", str(key, "key"), nil)
			}
		}
	}
	traffic(4)

	// While it runs, the offline tools are refused (exit 3).
	for _, sub := range []string{"verify", "stats", "dump"} {
		_, errOut, code := runOja(t, srv.bin, childEnv(), "wal", sub, "--data", srv.data)
		if code != 3 || !strings.Contains(errOut, "in use by a running server") {
			t.Errorf("oja wal %s on a running server's data dir: exit %d, stderr %q; want 3 and a clear refusal", sub, code, errOut)
		}
	}

	first := filepath.Join(t.TempDir(), "first")
	var answer map[string]any
	decodeJSON(t, mustDo(t, client, 200, "POST", srv.adminURL()+"/admin/v1/backup", crashAdminToken, fmt.Appendf(nil, `{"dir":%q}`, first)).body, &answer)
	if str(answer, "dir") != first {
		t.Errorf("backup answered %v", answer)
	}
	traffic(3)
	second := filepath.Join(t.TempDir(), "second")
	adminOK(t, srv, nil, "backup", second)
	srv.stop()

	lastSource, _, _ := verifyOK(t, srv.data)
	lastSecond, hashSecond, _ := verifyOK(t, second)
	// The source holds one record more: the backup's own audit line,
	// written once the backup was taken.
	if lastSecond != lastSource-1 {
		t.Errorf("backup taken last ends at seq %d; its source at %d, want one more (the backup's audit line)", lastSecond, lastSource)
	}
	if seq, hash := replayHash(t, srv.data, fmt.Sprint(lastSecond)); seq != lastSecond || hash != hashSecond {
		t.Errorf("backup taken last: seq %d hash %s; its source replayed to seq %d: seq %d hash %s", lastSecond, hashSecond, lastSecond, seq, hash)
	}
	lastFirst, hashFirst, _ := verifyOK(t, first)
	if lastFirst >= lastSource {
		t.Fatalf("first backup ends at seq %d, its source at %d: the later traffic is missing", lastFirst, lastSource)
	}
	if seq, hash := replayHash(t, srv.data, fmt.Sprint(lastFirst)); seq != lastFirst || hash != hashFirst {
		t.Errorf("first backup: seq %d hash %s; its source replayed to seq %d: seq %d hash %s", lastFirst, hashFirst, lastFirst, seq, hash)
	}
}

// ---- The tools' surface ---------------------------------------------------------------------

// TestWalToolsRefuseHeldDir runs each tool on the data dir of a service
// running in this process: each is refused with exit status 3 and a
// message saying why and what to do.
func TestWalToolsRefuseHeldDir(t *testing.T) {
	t.Parallel()
	s, f := startFixtureService(t)
	defer s.Stop()
	for _, args := range [][]string{
		{"verify"}, {"stats"}, {"dump", "--json"}, {"replay", "--until", "1"},
	} {
		out, errOut, code := walTool(t, append(args, "--data", f.data)...)
		if code != 3 || out != "" || !strings.Contains(errOut, "in use by a running server") || !strings.Contains(errOut, "oja admin backup") {
			t.Errorf("oja wal %s on a held data dir: exit %d, stdout %q, stderr %q", args[0], code, out, errOut)
		}
	}
	if out, _, code := walTool(t, "help"); code != 0 || !strings.Contains(out, "dump --json: one object per record") {
		t.Errorf("oja wal help: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{}, {"explode"}, {"verify", "--bogus"}, {"verify", "extra"}} {
		if _, _, code := walTool(t, args...); code != 2 {
			t.Errorf("oja wal %q: exit %d, want 2 (usage)", args, code)
		}
	}
}

// ---- log retention ---------------------------------------------------------------------

// TestWalToolsAfterLogRetention: once retention deleted the records up to a
// snapshot, replay --until reaches any point from that snapshot on with the
// same state as before the deletion, says clearly when asked for a point
// before it, and stats and verify show where the retained log starts.
func TestWalToolsAfterLogRetention(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 8)
	_, last := stateAt(t, f.data, 0)
	base := last / 2
	atBase, _ := stateAt(t, f.data, base)
	later := base + (last-base)/2
	atLater, _ := stateAt(t, f.data, later)

	log := openLog(t, f.data, false)
	if err := log.SaveSnapshot(base, engine.EncodeState(atBase)); err != nil {
		t.Fatal(err)
	}
	if err := log.Truncate(base); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}

	if seq, hash := replayHash(t, f.data, fmt.Sprint(later)); seq != later || hash != fmt.Sprintf("%x", atLater.Hash()) {
		t.Errorf("replay --until %d after retention: seq %d hash %s, want the state before the deletion %x", later, seq, hash, atLater.Hash())
	}
	if seq, hash := replayHash(t, f.data, fmt.Sprint(base)); seq != base || hash != fmt.Sprintf("%x", atBase.Hash()) {
		t.Errorf("replay --until %d (the base): seq %d hash %s", base, seq, hash)
	}
	out, errOut, code := runOja(t, ojaBinary(t), childEnv(), "wal", "replay", "--data", f.data, "--until", fmt.Sprint(base-1))
	if code != 1 || !strings.Contains(errOut, "before the log's retention") || !strings.Contains(errOut, fmt.Sprintf("oldest state kept is at seq %d", base)) {
		t.Errorf("replay --until %d (deleted): exit %d\n%s%s", base-1, code, out, errOut)
	}
	before := time.UnixMilli(atBase.LastAt - 1).UTC().Format(time.RFC3339Nano)
	if _, errOut, code := runOja(t, ojaBinary(t), childEnv(), "wal", "replay", "--data", f.data, "--until", before); code != 1 ||
		!strings.Contains(errOut, "before the log's retention") {
		t.Errorf("replay --until %s (before the base's time): exit %d\n%s", before, code, errOut)
	}
	stats, errOut, code := runOja(t, ojaBinary(t), childEnv(), "wal", "stats", "--data", f.data)
	if code != 0 || !strings.Contains(stats, fmt.Sprintf("retained    from seq %d: records 1..%d deleted", base+1, base)) ||
		!strings.Contains(stats, fmt.Sprintf("acknowledged through seq %d (the acknowledgement mark)", last)) {
		t.Errorf("stats after retention: exit %d\n%s%s", code, stats, errOut)
	}
	out, errOut, code = runOja(t, ojaBinary(t), childEnv(), "wal", "verify", "--data", f.data)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("records %d..%d verified", base+1, last)) ||
		!strings.Contains(out, fmt.Sprintf("log retention: records 1..%d deleted", base)) {
		t.Errorf("verify after retention: exit %d\n%s%s", code, out, errOut)
	}
}
