package engine_test

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// TestGoldenLogBeforeFundsFirst: a log written by the engine before funds
// first (testdata/golden/README.md) replays today to the state that engine
// built — its completions still pay the pools from clearing and debit no
// wallet, its PayInSeen still credits nothing — and the state survives a
// snapshot round trip.
func TestGoldenLogBeforeFundsFirst(t *testing.T) {
	log, err := os.ReadFile("testdata/golden/before-funds-first.log")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/golden/before-funds-first.summary")
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
	for _, typ := range []engine.EventType{engine.EventQuoteCompleted, engine.EventPayInSeen, engine.EventMarketsSet, engine.EventQuoteAcceptedWithPayIn} {
		if types[typ] == 0 {
			t.Errorf("the golden log has no %s: it proves less than it says", typ)
		}
	}
	if types[engine.EventQuoteCompletedFunded]+types[engine.EventPaymentReceived] != 0 {
		t.Errorf("the golden log holds events of funds first")
	}
	if got := goldenSummary(s); got != string(want) {
		t.Errorf("replayed today:\n%s\nwritten then:\n%s", got, want)
	}
	decoded, err := engine.DecodeState(engine.EncodeState(s))
	if err != nil {
		t.Fatal(err)
	}
	if got := goldenSummary(decoded); got != string(want) {
		t.Errorf("after a snapshot round trip:\n%s\nwant:\n%s", got, want)
	}
}
