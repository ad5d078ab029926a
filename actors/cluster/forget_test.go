package cluster

import (
	"bytes"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// TestReplicaForgetsEndedQuotes: a replica forgets, at a fixed record, the
// quotes that ended longer than the retention before, as the service does;
// a snapshot rebuilt beside it forgets the same, so it restores to an equal
// state.
func TestReplicaForgetsEndedQuotes(t *testing.T) {
	f := newFSM(slog.New(slog.DiscardHandler), time.Hour, nil)
	m := newTestMarket()
	t0, pool := m.t0, m.pool
	old, recent := m.quote(1, t0), m.quote(2, t0+2*time.Hour.Milliseconds())
	evs := append(m.events(), old, &engine.QuoteCancelled{At: t0 + 1000, Quote: old.Quote}, recent)
	var recs [][]byte
	for _, ev := range evs {
		recs = append(recs, engine.AppendEvent(nil, ev))
	}
	// Rate changes up to the first forgetting point, and a few past it.
	for n := len(recs); n < actors.ForgetEvery+10; n++ {
		recs = append(recs, engine.AppendEvent(nil, &engine.PoolRateSet{At: t0 + 2*time.Hour.Milliseconds(), Pool: pool.Pool,
			Rate: engine.RateFromUnits(uint64(625_000_000_000_000 + n))}))
	}
	snap := func() raft.FSMSnapshot {
		s, err := f.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for i := 0; i < len(recs); i += 1000 {
		res := f.Apply(&raft.Log{Type: raft.LogCommand, Index: uint64(i/1000 + 1), Data: encodeRecords(recs[i:min(i+1000, len(recs))])})
		if err := res.(applied).err; err != nil {
			t.Fatal(err)
		}
	}
	var want [32]byte
	_ = f.read(func(s *engine.State, _ uint64) error {
		if s.Quotes.Get(old.Quote) != nil {
			t.Error("the replica kept a quote that ended 2 h before (retention 1 h)")
		}
		if s.Quotes.Get(recent.Quote) == nil {
			t.Error("the replica forgot an open quote")
		}
		want = s.Hash()
		return nil
	})
	// The snapshot's base is empty: its rebuild replays every record.
	sink := &memSink{}
	if err := snap().Persist(sink); err != nil {
		t.Fatal(err)
	}
	g := newFSM(slog.New(slog.DiscardHandler), time.Hour, nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	_ = g.read(func(s *engine.State, _ uint64) error {
		if s.Hash() != want {
			t.Error("a snapshot rebuilt beside the replica differs from it")
		}
		return nil
	})
}
