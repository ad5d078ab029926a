package actors

import (
	"encoding/binary"
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

// quoteLog replays n QuoteCreated records, quote seq created at seq.
type quoteLog struct{ n uint64 }

func (l quoteLog) Replay(from uint64, fn func(seq uint64, rec []byte) error) error {
	for seq := from + 1; seq <= l.n; seq++ {
		var id engine.QuoteID
		binary.BigEndian.PutUint64(id[8:], seq)
		rec := engine.AppendEvent(nil, &engine.QuoteCreated{At: int64(seq), Quote: id, Client: engine.ClientID{1},
			Mode: engine.ModeSandbox, Pair: engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT},
			Direction: engine.DirectionDestination, Amount: 1_000_000, ProposedRate: engine.RateFromUnits(1),
			Reference: engine.MustRef("OJA-X"), ExpiresAt: int64(seq) + 300_000,
			Allocations: []engine.Allocation{{ID: engine.AllocationID(id), Pool: engine.PoolID{2}, Rate: engine.RateFromUnits(1),
				Source: 1_000_000, Destination: 1_000_000}}})
		if err := fn(seq, rec); err != nil {
			return err
		}
	}
	return nil
}

// A bulk replay decodes each batch's quotes into the events of a batch
// already applied (engine.EventDecoder.Reuse): apply still sees each
// event as its record wrote it — under -race, a batch handed back before
// apply was done with it is a reported race — and the events live in a
// few batches' memory, not one slot per record.
func TestReplayReusesAppliedBatches(t *testing.T) {
	const n = 40 * replayBatchLen
	slots := make(map[*engine.QuoteCreated]bool)
	err := replayDecoded(quoteLog{n: n}, 0, true, nil, func(seq uint64, ev engine.Event) error {
		c, ok := ev.(*engine.QuoteCreated)
		if !ok || c.At != int64(seq) || binary.BigEndian.Uint64(c.Quote[8:]) != seq || c.Allocations[0].Source != 1_000_000 {
			return fmt.Errorf("record %d decoded as %+v", seq, ev)
		}
		slots[c] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// At most the batches the pipeline holds at once: those queued for
	// apply, those waiting for reuse, one being decoded and one applied.
	if inFlight := (replayQueued + replayReused + 2) * replayBatchLen; len(slots) > inFlight {
		t.Fatalf("%d records decoded into %d distinct events, want at most %d", n, len(slots), inFlight)
	}
}
