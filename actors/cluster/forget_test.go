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
	id := func(b byte, n uint32) [16]byte { return [16]byte{b, byte(n), byte(n >> 8), byte(n >> 16)} }
	t0 := int64(1_800_000_000_000)
	pair := engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT}
	client := &engine.ClientCreated{At: t0, Client: id(1, 0), Name: "ada"}
	for i, m := range engine.Modes {
		for j, c := range engine.DefaultMarkets().CurrencyList() {
			client.Wallets = append(client.Wallets, engine.WalletAccount{Mode: m, Currency: c, Account: id(2, uint32(i*8+j))})
		}
	}
	pool := &engine.PoolCreated{At: t0, Pool: id(3, 0), Mode: engine.ModeSandbox, Name: "p", Pair: pair,
		Rate: engine.RateFromUnits(625_000_000_000_000), LiquidityAccount: id(4, 0), ProceedsAccount: id(4, 1)}
	quote := func(n uint32, at int64) *engine.QuoteCreated {
		return &engine.QuoteCreated{At: at, Quote: id(5, n), Client: client.Client, Mode: engine.ModeSandbox, Pair: pair,
			Direction: engine.DirectionDestination, Amount: 1_000_000, ProposedRate: engine.RateFromUnits(1), Reference: "OJA-X",
			ExpiresAt: at + 300_000, Allocations: []engine.Allocation{{ID: id(6, n), Pool: pool.Pool,
				PoolAccount: pool.LiquidityAccount, Rate: pool.Rate, Source: 160_000, Destination: 1_000_000}}}
	}
	old, recent := quote(1, t0), quote(2, t0+2*time.Hour.Milliseconds())
	evs := []engine.Event{client, pool, &engine.PoolDeposited{At: t0, Pool: pool.Pool, Amount: 1_000_000_000},
		old, &engine.QuoteCancelled{At: t0 + 1000, Quote: old.Quote}, recent}
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
		if _, kept := s.Quotes[old.Quote]; kept {
			t.Error("the replica kept a quote that ended 2 h before (retention 1 h)")
		}
		if _, kept := s.Quotes[recent.Quote]; !kept {
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
