package actors

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// fakeReplayLog replays n encoded events; record bad (if any) is garbage,
// and reading record fail (if any) fails.
type fakeReplayLog struct {
	n, bad, fail uint64
}

var errRead = errors.New("read failed")

func (l fakeReplayLog) Replay(from uint64, fn func(seq uint64, rec []byte) error) error {
	for seq := from + 1; seq <= l.n; seq++ {
		if seq == l.fail {
			return errRead
		}
		rec := engine.AppendEvent(nil, &engine.KeyRevoked{At: int64(seq)})
		if seq == l.bad {
			rec = []byte{0xff, 0xff}
		}
		if err := fn(seq, rec); err != nil {
			return err
		}
	}
	return nil
}

// replayDecoded applies every event in order, and stops at the first error,
// the scanner's (a record that cannot be read), the decoder's (one that
// does not decode) or the applier's, the events before it applied.
func TestReplayDecoded(t *testing.T) {
	var got []int64
	err := replayDecoded(fakeReplayLog{n: 2000}, 10, true, nil, func(seq uint64, ev engine.Event) error {
		if ev.Time() != int64(seq) {
			return fmt.Errorf("seq %d carries the event of %d", seq, ev.Time())
		}
		got = append(got, ev.Time())
		return nil
	})
	if err != nil || len(got) != 1990 || got[0] != 11 || got[len(got)-1] != 2000 {
		t.Fatalf("replay: %v, %d events (%v..)", err, len(got), got[:1])
	}
	applied := 0
	err = replayDecoded(fakeReplayLog{n: 5000, bad: 1700}, 0, false, nil, func(uint64, engine.Event) error { applied++; return nil })
	if err == nil || !strings.Contains(err.Error(), "record 1700") || applied != 1699 {
		t.Fatalf("a record that does not decode: %v after %d applied", err, applied)
	}
	boom := errors.New("does not apply")
	applied = 0
	err = replayDecoded(fakeReplayLog{n: 5000}, 0, true, nil, func(seq uint64, _ engine.Event) error {
		if seq == 1234 {
			return boom
		}
		applied++
		return nil
	})
	if !errors.Is(err, boom) || applied != 1233 {
		t.Fatalf("an event that does not apply: %v after %d applied", err, applied)
	}
	applied = 0
	err = replayDecoded(fakeReplayLog{n: 5000, fail: 2100}, 0, true, nil, func(uint64, engine.Event) error { applied++; return nil })
	if !errors.Is(err, errRead) || applied != 2099 {
		t.Fatalf("a record that cannot be read: %v after %d applied", err, applied)
	}
}
