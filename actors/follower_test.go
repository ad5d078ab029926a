package actors_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/cmd/oja/waltools"
	"github.com/oja-exchange/oja/engine"
)

// followerMarket is a node with one client and one funded NGN/USDT pool,
// and a function that creates a quote of 1 USDT with an Idempotency-Key.
func followerMarket(t *testing.T, clk *clock) (*node, *engine.Client, func(key string) *engine.Quote) {
	n := newNode(t, testConfig(clk))
	ada := newClient(t, n.sys, "ada")
	newPool(t, n.sys, engine.ModeSandbox, pairNGNUSDT, "lagos", "0.000625", "1000000")
	return n, ada, func(key string) *engine.Quote {
		return mustQuote(t, n.sys, &actors.CreateQuote{Client: ada.ID, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
			Direction: engine.DirectionDestination, Amount: amount(t, "1", engine.CurrencyUSDT), Rate: rate(t, "0.0006"),
			Chain: engine.ChainTron, IdempotencyKey: engine.MakeIdemKey(key)})
	}
}

// The follower rebuilds, from the log alone, the state the actors hold; it
// snapshots every SnapshotEvery events while they keep serving, keeps the
// newest snapshots and the retention milestones, and deletes the records
// older than the retention once a snapshot covers them. A restart then
// starts from the retained records and holds everything.
func TestFollowerSnapshotsAndRetention(t *testing.T) {
	// Every catch-up of ten records or more is a bulk one, its
	// Idempotency-Keys written aside, as a start's is.
	defer actors.SetReplayBulkMin(10)()
	clk := newClock()
	n, _, quoteKey := followerMarket(t, clk)
	quote := func(i int) { quoteKey(fmt.Sprint("k", i)) }
	f, err := actors.NewFollower(n.log, actors.FollowerConfig{SnapshotEvery: 10, Retention: time.Hour, Now: clk.Now,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	step := func(what string) {
		t.Helper()
		if err := f.CatchUp(); err != nil {
			t.Fatalf("%s: catch up: %v", what, err)
		}
		if got, want := f.Applied(), n.log.DurableSeq(); got != want {
			t.Fatalf("%s: applied %d, durable %d", what, got, want)
		}
		if got, want := f.State().Hash(), replayLog(t, n.log).Hash(); got != want {
			t.Fatalf("%s: follower state %x, replay %x", what, got, want)
		}
		if err := f.Maintain(); err != nil {
			t.Fatalf("%s: maintain: %v", what, err)
		}
	}
	// Three hours of quotes, twelve snapshots an hour.
	for i := range 36 {
		for j := range 10 {
			quote(i*10 + j)
		}
		step(fmt.Sprint("batch ", i))
		clk.Advance(5 * time.Minute)
	}
	st := f.Stats()
	if st.Snapshots < 30 || st.LastSnapshot != f.Applied() && f.Applied()-st.LastSnapshot >= 10 {
		t.Fatalf("follower stats %+v after %d records", st, f.Applied())
	}
	first, err := n.log.FirstRetained()
	if err != nil || first < 2 {
		t.Fatalf("first retained %d (%v): nothing deleted after 3 hours with a 1 hour retention", first, err)
	}
	// Deleted records are older than the retention; retained ones reach
	// back to it.
	rec, err := n.log.Record(first)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := engine.DecodeEvent(rec)
	if err != nil {
		t.Fatal(err)
	}
	age := clk.Now().Sub(time.UnixMilli(ev.Time()))
	if age < time.Hour || age > time.Hour+time.Hour/8+10*time.Minute {
		t.Errorf("the first retained record is %s old; want the retention (1h) up to one milestone step more", age)
	}
	seqs, err := n.log.SnapshotSeqs()
	if err != nil || len(seqs) > 8+3 || seqs[0] != first-1 {
		t.Fatalf("snapshots %v (%v): want at most 11, the oldest at %d", seqs, err, first-1)
	}
	before := replayLog(t, n.log)
	n = n.restart() // its recovery also expires the quotes past their deadline
	after := replayLog(t, n.log)
	if after.Quotes.Len() != 360 || before.Quotes.Len() != 360 {
		t.Fatalf("quotes: %d before the restart, %d after; want 360", before.Quotes.Len(), after.Quotes.Len())
	}
	for q := range before.Quotes.All() {
		id := q.ID
		if a := after.Quotes.Get(id); a == nil || a.CreatedAt != q.CreatedAt || a.Amount != q.Amount {
			t.Fatalf("quote %s lost or changed by the restart", id)
		}
	}
	if n.stats.Snapshot != seqs[len(seqs)-1] {
		t.Errorf("restart recovered from snapshot %d, want the newest %d", n.stats.Snapshot, seqs[len(seqs)-1])
	}
}

// The follower's state, and the snapshots it saves, forget the quotes that
// ended longer than the quote retention ago (at the Replica's fixed records),
// as the service does: a server
// that runs for months holds and snapshots what it serves, not every quote
// ever made. Open quotes and recent ended ones stay.
func TestFollowerForgetsEndedQuotes(t *testing.T) {
	defer actors.SetForgetEvery(1)() // every record, as if each were the ForgetEvery-th
	clk := newClock()
	n, ada, quote := followerMarket(t, clk)
	sys := n.sys
	old := quote("old")
	if r := sys.TransitionQuote(ada.ID, engine.ModeSandbox, old.ID, cancelOp); r.Err != nil || r.Result != engine.ResultOK {
		t.Fatalf("cancel: %v %s", r.Err, r.Result)
	}
	clk.Advance(2 * time.Hour)
	recent := quote("recent")
	ended := quote("ended-recently")
	if r := sys.TransitionQuote(ada.ID, engine.ModeSandbox, ended.ID, cancelOp); r.Err != nil || r.Result != engine.ResultOK {
		t.Fatalf("cancel: %v %s", r.Err, r.Result)
	}
	f, err := actors.NewFollower(n.log, actors.FollowerConfig{SnapshotEvery: 1, QuoteRetention: time.Hour, Now: clk.Now,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Maintain(); err != nil {
		t.Fatal(err)
	}
	_, data, ok, err := n.log.LatestSnapshot()
	if err != nil || !ok {
		t.Fatalf("no snapshot: %v", err)
	}
	saved, err := engine.DecodeState(data)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*engine.State{"follower": f.State(), "snapshot": saved} {
		if s.Quotes.Get(old.ID) != nil {
			t.Errorf("%s: the quote that ended 2 h ago is kept (quote retention 1 h)", name)
		}
		if _, kept := s.Idempotency.Get(engine.IdempotencyScope{Client: ada.ID, Mode: engine.ModeSandbox, Key: engine.MakeIdemKey("old")}); kept {
			t.Errorf("%s: the forgotten quote's Idempotency-Key record is kept", name)
		}
		for _, q := range []*engine.Quote{recent, ended} {
			if s.Quotes.Get(q.ID) == nil {
				t.Errorf("%s: quote %s (open, or ended just now) was forgotten", name, q.ID)
			}
		}
	}
	// `oja wal verify` accepts the snapshot: its replay forgets the same
	// quotes before comparing.
	var out strings.Builder
	if err := waltools.Verify(n.log, &out, nil); err != nil {
		t.Fatalf("wal verify: %v\n%s", err, out.String())
	}
	// A restart from that snapshot serves the same quotes.
	n = n.restart()
	if _, ok := n.sys.Quote(ada.ID, engine.ModeSandbox, recent.ID); !ok {
		t.Error("after a restart from the snapshot the open quote is gone")
	}
}

// eventSink records what a follower feeds the event history.
type eventSink struct {
	mark    uint64
	events  map[uint64][]engine.EventID // by record
	applied uint64
	synced  uint64
}

func (s *eventSink) Watermark() uint64 { return s.mark }
func (s *eventSink) Add(seq uint64, e *engine.OwedEvent) {
	if s.events == nil {
		s.events = map[uint64][]engine.EventID{}
	}
	s.events[seq] = append(s.events[seq], e.ID)
}
func (s *eventSink) Applied(seq uint64)        { s.applied = seq }
func (s *eventSink) Sync(through uint64) error { s.synced = through; return nil }

// after is what s holds of the records after seq.
func (s *eventSink) after(seq uint64) map[uint64][]engine.EventID {
	out := map[uint64][]engine.EventID{}
	for k, v := range s.events {
		if k > seq {
			out[k] = v
		}
	}
	return out
}

// TestFollowerFeedsEventHistory: the follower feeds the event history
// every event of the records it applies, and syncs it before each
// snapshot; one whose history is behind the latest snapshot starts from an
// older snapshot and feeds every event after the history's watermark —
// or, when retention deleted those records, every event the log still
// holds (the history has a gap, logged).
func TestFollowerFeedsEventHistory(t *testing.T) {
	clk := newClock()
	n, _, quoteKey := followerMarket(t, clk)
	all := &eventSink{}
	f, err := actors.NewFollower(n.log, actors.FollowerConfig{SnapshotEvery: 10, Retention: time.Hour, Now: clk.Now,
		Logger: slog.New(slog.DiscardHandler), Events: all})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 24 { // two hours of quotes, a snapshot every 10 records
		for j := range 10 {
			quoteKey(fmt.Sprint("k", i, "-", j))
		}
		if err := f.CatchUp(); err != nil {
			t.Fatal(err)
		}
		if err := f.Maintain(); err != nil {
			t.Fatal(err)
		}
		if st := f.Stats(); st.LastSnapshot > all.synced {
			t.Fatalf("snapshot at %d before the history synced (through %d)", st.LastSnapshot, all.synced)
		}
		clk.Advance(5 * time.Minute)
	}
	if all.applied != f.Applied() || len(all.events) < 240 {
		t.Fatalf("history told applied %d (follower %d), %d records with events", all.applied, f.Applied(), len(all.events))
	}
	seqs, err := n.log.SnapshotSeqs()
	if err != nil {
		t.Fatal(err)
	}
	first, err := n.log.FirstRetained()
	if err != nil || first < 2 || len(seqs) < 3 {
		t.Fatalf("first retained %d, snapshots %v (%v): the setup wants retention to have deleted records", first, seqs, err)
	}
	for _, mark := range []uint64{
		seqs[1] + 3,                           // between two snapshots: from the older one
		seqs[len(seqs)-1] - 1,                 // just behind the latest
		0,                                     // a new history on a log that lost its start: from the oldest snapshot
		min(seqs[len(seqs)-1]+1, f.Applied()), // ahead of the latest snapshot: nothing special
	} {
		sink := &eventSink{mark: mark}
		g, err := actors.NewFollower(n.log, actors.FollowerConfig{Now: clk.Now, Logger: slog.New(slog.DiscardHandler), Events: sink})
		if err != nil {
			t.Fatal(err)
		}
		from := max(mark, seqs[0]) // the gap: records before the oldest snapshot are gone
		if mark > seqs[len(seqs)-1] {
			from = seqs[len(seqs)-1]
		}
		want, got := all.after(from), sink.after(from)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("watermark %d: fed %d records' events after %d, want %d", mark, len(got), from, len(want))
		}
		if g.Applied() > mark && sink.applied != g.Applied() {
			t.Errorf("watermark %d: history told %d, follower applied %d", mark, sink.applied, g.Applied())
		}
	}
}
