package cluster

import (
	"bytes"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// recordingSink is an event history that records what it is told.
type recordingSink struct {
	mu      sync.Mutex
	seqs    []uint64 // each event's record, in the order added
	applied uint64
}

func (r *recordingSink) Watermark() uint64 { r.mu.Lock(); defer r.mu.Unlock(); return r.applied }
func (r *recordingSink) Add(seq uint64, _ *engine.OwedEvent) {
	r.mu.Lock()
	r.seqs = append(r.seqs, seq)
	r.mu.Unlock()
}
func (r *recordingSink) Applied(seq uint64) { r.mu.Lock(); r.applied = seq; r.mu.Unlock() }
func (*recordingSink) Sync(uint64) error    { return nil }

func (r *recordingSink) taken() ([]uint64, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint64(nil), r.seqs...), r.applied
}

// recordingObserver is a webhook dispatcher that records the events owed.
type recordingObserver struct {
	mu   sync.Mutex
	owed map[engine.EventID]int // times told
}

func (*recordingObserver) Registered(*engine.Webhook) {}
func (*recordingObserver) Deleted(*engine.Webhook)    {}
func (*recordingObserver) Dropped(*engine.Webhook, *engine.OwedEvent) {
}
func (o *recordingObserver) Owed(_ *engine.Webhook, e *engine.OwedEvent) {
	o.mu.Lock()
	o.owed[e.ID]++
	o.mu.Unlock()
}

// lendWorld makes the records of a client with a webhook endpoint, a
// funded pool and quotes, each quote created and cancelled.
func lendWorld(quotes int) [][]byte {
	m := newTestMarket()
	evs := append(m.events(), &engine.WebhookCreated{At: m.t0, Webhook: testID(7, 0), Client: m.client.Client,
		Mode: engine.ModeSandbox, URL: "https://a.example/h", Events: engine.WebhookEventsAll, Secret: "whsec_t"})
	for n := range uint32(quotes) {
		q := m.quote(n, m.t0+int64(n)*1000)
		evs = append(evs, q, &engine.QuoteCancelled{At: q.At + 500, Quote: q.Quote})
	}
	recs := make([][]byte, len(evs))
	for i, ev := range evs {
		recs[i] = engine.AppendEvent(nil, ev)
	}
	return recs
}

// TestLendRebuildsTheReplica: a new leader's actors take the replica's
// state itself, and the fsm rebuilds its own from its snapshot base and
// the entries since. Entries committed while it rebuilds get their
// sequence numbers at once and their effects (webhook events owed,
// partner events) once rebuilt, none missed, partner events in order; the rebuilt
// replica equals one that never lent its state, whatever the actors do to
// the lent one; and a second term can lend again.
func TestLendRebuildsTheReplica(t *testing.T) {
	recs := lendWorld(40)
	var entries [][]byte
	for i := 0; i < len(recs); i += 7 {
		entries = append(entries, encodeRecords(recs[i:min(i+7, len(recs))]))
	}
	newWatched := func() (*fsm, *recordingSink, *recordingObserver) {
		sink, obs := &recordingSink{}, &recordingObserver{owed: map[engine.EventID]int{}}
		f := newFSM(slog.New(slog.DiscardHandler), time.Hour, sink)
		f.observeWebhooks(obs)
		return f, sink, obs
	}
	index := uint64(0)
	apply := func(t *testing.T, f *fsm, data []byte, wantFirst uint64) {
		t.Helper()
		index++
		res := f.Apply(&raft.Log{Type: raft.LogCommand, Index: index, Data: data}).(applied)
		if res.err != nil || res.firstSeq != wantFirst {
			t.Fatalf("entry %d: applied %+v, want first record %d", index, res, wantFirst)
		}
	}
	hashOf := func(t *testing.T, f *fsm) (h [32]byte, seq uint64) {
		t.Helper()
		if err := f.read(func(s *engine.State, last uint64) error { h, seq = s.Hash(), last; return nil }); err != nil {
			t.Fatal(err)
		}
		return h, seq
	}

	// The reference never lends.
	ref, refSink, refObs := newWatched()
	for _, e := range entries {
		apply(t, ref, e, ref.seq+1)
	}
	wantHash, wantSeq := hashOf(t, ref)
	if wantSeq != uint64(len(recs)) {
		t.Fatalf("the reference applied %d records, want %d", wantSeq, len(recs))
	}

	f, sink, obs := newWatched()
	third := len(entries) / 3
	for _, e := range entries[:third] {
		apply(t, f, e, f.seq+1)
	}
	// A snapshot makes a base: the rebuild decodes it, then applies the
	// entries after it.
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(&memSink{}); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries[third : 2*third] {
		apply(t, f, e, f.seq+1)
	}
	before, _ := hashOf(t, f)
	gate := make(chan struct{})
	f.rebuildGate = gate // the entries below commit while it rebuilds
	state, err := f.lend()
	if err != nil {
		t.Fatal(err)
	}
	if state.Hash() != before {
		t.Fatal("the lent state is not the replica's")
	}
	// The actors change their state (a cancel they write and the leader
	// loses before it commits): the replica must not see it.
	if err := state.Apply(&engine.QuoteCreated{At: state.LastAt + 1, Quote: [16]byte{9, 9}, Client: [16]byte{1},
		Mode: engine.ModeSandbox, Pair: engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT},
		Direction: engine.DirectionDestination, Amount: 1, ProposedRate: engine.RateFromUnits(1), Reference: engine.MustRef("OJA-Y"),
		ExpiresAt: state.LastAt + 300_000, Allocations: []engine.Allocation{{ID: [16]byte{9, 8}, Pool: [16]byte{3},
			PoolAccount: [16]byte{4}, Rate: engine.RateFromUnits(625_000_000_000_000), Source: 1, Destination: 1}}}); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries[2*third:] {
		apply(t, f, e, f.seq+1) // numbered at once, while the replica rebuilds
	}
	f.mu.RLock()
	rebuilding, queued := f.replica == nil, len(f.queued)
	f.mu.RUnlock()
	if !rebuilding || queued != len(entries)-2*third {
		t.Fatalf("while rebuilding: replica lent %v, %d entries queued; want true, %d", rebuilding, queued, len(entries)-2*third)
	}
	if seqs, applied := sink.taken(); applied >= f.seq || len(seqs) == 0 {
		t.Fatalf("while rebuilding the history is applied to %d (of %d), with %d events", applied, f.seq, len(seqs))
	}
	close(gate)
	if got, seq := hashOf(t, f); got != wantHash || seq != wantSeq {
		t.Fatalf("rebuilt replica at record %d differs from one that never lent (record %d)", seq, wantSeq)
	}
	for name, s := range map[string]*recordingSink{"reference": refSink, "lent": sink} {
		seqs, applied := s.taken()
		if applied != wantSeq {
			t.Errorf("%s: history applied to %d, want %d", name, applied, wantSeq)
		}
		for i := 1; i < len(seqs); i++ {
			if seqs[i] < seqs[i-1] {
				t.Fatalf("%s: partner events out of order: record %d after %d", name, seqs[i], seqs[i-1])
			}
		}
	}
	gotSeqs, _ := sink.taken()
	wantSeqs, _ := refSink.taken()
	if len(wantSeqs) == 0 || !slices.Equal(gotSeqs, wantSeqs) {
		t.Errorf("partner events by record: %d with a lend, %d without (want equal, not none)", len(gotSeqs), len(wantSeqs))
	}
	obs.mu.Lock()
	refObs.mu.Lock()
	if len(refObs.owed) == 0 || len(obs.owed) != len(refObs.owed) {
		t.Errorf("webhook events owed: %d with a lend, %d without (want equal, not none)", len(obs.owed), len(refObs.owed))
	}
	// NB: the rebuilt replica tells the dispatcher again of what its
	// outboxes hold (the dispatcher skips what it holds): an event may be
	// told twice, none may be missed.
	for id := range refObs.owed {
		if obs.owed[id] == 0 {
			t.Errorf("webhook event %s never told with a lend", id)
		}
	}
	obs.mu.Unlock()
	refObs.mu.Unlock()

	// A second term lends the rebuilt replica.
	f.rebuildGate = nil
	if _, err := f.lend(); err != nil {
		t.Fatal(err)
	}
	if got, _ := hashOf(t, f); got != wantHash {
		t.Fatal("after a second lend the rebuilt replica differs")
	}
	f.close()
}

var _ actors.EventSink = (*recordingSink)(nil)

// TestLendOvertaken: a rebuild that a Restore overtakes (a demoted leader
// installing a newer snapshot) drops its result, and the restored replica
// serves; a node closed while it rebuilds refuses reads instead of
// waiting, and close waits for the rebuild to stop.
func TestLendOvertaken(t *testing.T) {
	recs := lendWorld(10)
	f := newFSM(slog.New(slog.DiscardHandler), time.Hour, nil)
	if res := f.Apply(&raft.Log{Type: raft.LogCommand, Index: 1, Data: encodeRecords(recs)}).(applied); res.err != nil {
		t.Fatal(res.err)
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	var want [32]byte
	_ = f.read(func(s *engine.State, _ uint64) error { want = s.Hash(); return nil })

	gate := make(chan struct{})
	f.rebuildGate = gate
	if _, err := f.lend(); err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	close(gate)
	var got [32]byte
	if err := f.read(func(s *engine.State, _ uint64) error { got = s.Hash(); return nil }); err != nil || got != want {
		t.Fatalf("after a Restore overtook the rebuild: read %v, state equal %v", err, got == want)
	}

	gate = make(chan struct{})
	f.rebuildGate = gate
	if _, err := f.lend(); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { f.close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("close returned while the rebuild still ran")
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	<-closed
	if err := f.read(func(*engine.State, uint64) error { return nil }); err == nil {
		t.Fatal("a node closed while rebuilding serves reads of a replica it does not have")
	}
}

// TestLendWaitsForTheRebuild: a node that regains leadership while its
// replica still rebuilds (a leader deposed at once) lends only once the
// rebuild is done, and lends the rebuilt replica, which holds what was
// committed meanwhile.
func TestLendWaitsForTheRebuild(t *testing.T) {
	recs := lendWorld(10)
	f := newFSM(slog.New(slog.DiscardHandler), time.Hour, nil)
	half := len(recs) / 2
	if res := f.Apply(&raft.Log{Type: raft.LogCommand, Index: 1, Data: encodeRecords(recs[:half])}).(applied); res.err != nil {
		t.Fatal(res.err)
	}
	gate := make(chan struct{})
	f.rebuildGate = gate
	if _, err := f.lend(); err != nil {
		t.Fatal(err)
	}
	f.rebuildGate = nil
	if res := f.Apply(&raft.Log{Type: raft.LogCommand, Index: 2, Data: encodeRecords(recs[half:])}).(applied); res.err != nil || res.firstSeq != uint64(half+1) {
		t.Fatalf("applied while rebuilding: %+v, want first record %d", res, half+1)
	}
	lent := make(chan *engine.State, 1)
	go func() {
		s, err := f.lend()
		if err != nil {
			t.Error(err)
		}
		lent <- s
	}()
	select {
	case <-lent:
		t.Fatal("a second lend returned while the first one's rebuild had not run")
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	s := <-lent
	if s == nil || s.LastAt == 0 {
		t.Fatal("no state lent")
	}
	// The reference applies everything without lending.
	g := newFSM(slog.New(slog.DiscardHandler), time.Hour, nil)
	if res := g.Apply(&raft.Log{Type: raft.LogCommand, Index: 1, Data: encodeRecords(recs)}).(applied); res.err != nil {
		t.Fatal(res.err)
	}
	var want [32]byte
	_ = g.read(func(st *engine.State, _ uint64) error { want = st.Hash(); return nil })
	if s.Hash() != want {
		t.Fatal("the second lend's state differs from a replica of every record")
	}
	f.close()
}

// TestRebuildMustMatchTheCount: a rebuild that ends at another record than
// the fsm counted while it ran fails the replica instead of serving it.
func TestRebuildMustMatchTheCount(t *testing.T) {
	f := newFSM(slog.New(slog.DiscardHandler), time.Hour, nil)
	if res := f.Apply(&raft.Log{Type: raft.LogCommand, Index: 1, Data: encodeRecords(lendWorld(3))}).(applied); res.err != nil {
		t.Fatal(res.err)
	}
	gate := make(chan struct{})
	f.rebuildGate = gate
	if _, err := f.lend(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.seq++ // a record counted that no entry holds
	f.mu.Unlock()
	close(gate)
	if err := f.read(func(*engine.State, uint64) error { return nil }); err == nil {
		t.Fatal("a replica rebuilt to another record than counted serves reads")
	}
	f.close()
}
