package engine_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// TestGoldenLogBeforeFundsFirst: a log written by the engine before funds
// first (testdata/golden/README.md) replays today to the state that engine
// built — its completions still pay the pools from clearing and debit no
// wallet, its PayInSeen still credits nothing — and the state survives a
// snapshot round trip.
func TestGoldenLogBeforeFundsFirst(t *testing.T) {
	_, types := replayGolden(t, "before-funds-first")
	for _, typ := range []engine.EventType{engine.EventQuoteCompleted, engine.EventPayInSeen, engine.EventMarketsSet, engine.EventQuoteAcceptedWithPayIn} {
		if types[typ] == 0 {
			t.Errorf("the golden log has no %s: it proves less than it says", typ)
		}
	}
	if types[engine.EventQuoteCompletedFunded]+types[engine.EventPaymentReceived] != 0 {
		t.Errorf("the golden log holds events of funds first")
	}
}

// TestGoldenLogBeforeIdentities: a log written by the engine before the
// identity of money (testdata/golden/README.md) — one bank transfer
// credited six times in live and again in sandbox, one USDT deposit three
// times, payouts with no reference, a key rolled twice, operators whose
// names read alike — replays today to the state that engine built, and
// the duplicates it holds are found by their identities of now.
func TestGoldenLogBeforeIdentities(t *testing.T) {
	s, _ := replayGolden(t, "before-identities")
	var groups []string
	for _, d := range s.Payments.Duplicates() {
		groups = append(groups, fmt.Sprintf("%s x%d", d.Identity, len(d.Payments)))
	}
	want := []string{
		"in:NGN:nip-var-1 x6",
		"chain:ETHEREUM:0x34ce5a1b0c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f:0 x3",
	}
	if !slices.Equal(groups, want) {
		t.Errorf("duplicates %q, want %q", groups, want)
	}
}

// replayGolden replays testdata/golden/NAME.log, requires the summary the
// engine that wrote it printed (NAME.summary), before and after a snapshot
// round trip, and returns the state and how many events of each type the
// log holds.
func replayGolden(t *testing.T, name string) (*engine.State, map[engine.EventType]int) {
	t.Helper()
	log, err := os.ReadFile("testdata/golden/" + name + ".log")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/golden/" + name + ".summary")
	if err != nil {
		t.Fatal(err)
	}
	s := engine.NewState()
	types := map[engine.EventType]int{}
	for len(log) > 0 {
		n, k := binary.Uvarint(log)
		if k <= 0 || uint64(len(log)-k) < n {
			t.Fatalf("golden log: bad length prefix")
		}
		ev, err := engine.DecodeEvent(log[k : k+int(n)])
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(ev); err != nil {
			t.Fatalf("replaying the golden log: %v", err)
		}
		types[ev.Type()]++
		log = log[k+int(n):]
	}
	if got := goldenSummary(s); got != string(want) {
		t.Errorf("replayed today:\n%s\nwritten then:\n%s", got, want)
	}
	decoded, err := engine.DecodeState(engine.EncodeState(s))
	if err != nil {
		t.Fatal(err)
	}
	if got := goldenSummary(decoded); got != string(want) || decoded.Hash() != s.Hash() {
		t.Errorf("after a snapshot round trip:\n%s\nwant:\n%s", got, want)
	}
	return s, types
}
