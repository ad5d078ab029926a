package eventlog_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/internal/poll"
	"github.com/oja-exchange/oja/wal/eventlog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func open(t *testing.T, dir string, clk *clock) *eventlog.Store {
	t.Helper()
	s, err := eventlog.Open(dir, eventlog.Config{Clock: clk.Now, FlushEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func event(client engine.ClientID, mode engine.Mode, kind engine.WebhookEvents, n int, at int64) *engine.OwedEvent {
	var q engine.QuoteID
	q[0], q[1] = byte(n), byte(n>>8)
	quote := engine.NewQuote(&engine.QuoteCreated{At: at, Quote: q, Client: client, Mode: mode,
		Pair:      engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT},
		Direction: engine.DirectionSource, Chain: engine.ChainTron, ExpiresAt: at + 300_000,
		Allocations: []engine.Allocation{{ID: [16]byte{9}, Pool: [16]byte{8}, PoolAccount: [16]byte{7}, PoolName: "p", Source: 1600, Destination: 1000}}})
	return &engine.OwedEvent{ID: engine.WebhookEventID(q, kind), Kind: kind, At: at, Quote: *quote}
}

// ids lists the events' ids.
func ids(t *testing.T, events []engine.OwedEvent) []string {
	t.Helper()
	out := make([]string, len(events))
	for i := range events {
		out[i] = events[i].ID.String()
	}
	return out
}

// TestListNewestFirstAndPages: a client sees its own events of its mode,
// newest first (the same millisecond ordered by record), in pages that
// follow one another through startingAfter, filtered by type; another
// client's event id, an unknown one, and a filter that matches none answer
// as they should.
func TestListNewestFirstAndPages(t *testing.T) {
	clk := &clock{now: time.UnixMilli(1_800_000_000_000)}
	s := open(t, t.TempDir(), clk)
	defer s.Close()
	alice, bob := engine.ClientID{1}, engine.ClientID{2}
	base := clk.Now().UnixMilli()
	var want []string // alice's live events, oldest first
	kinds := []engine.WebhookEvents{engine.WebhookQuoteCreated, engine.WebhookQuoteAccepted, engine.WebhookQuoteCompleted}
	seq := uint64(0)
	for i := range 30 {
		seq++
		e := event(alice, engine.ModeLive, kinds[i%3], i/3, base+int64(i/2)) // pairs share a millisecond
		s.Add(seq, e)
		want = append(want, e.ID.String())
		s.Add(seq, event(alice, engine.ModeSandbox, engine.WebhookQuoteCreated, 1000+i, base+int64(i)))
		s.Add(seq, event(bob, engine.ModeLive, engine.WebhookQuoteCreated, 2000+i, base+int64(i)))
	}
	if err := s.Sync(seq); err != nil {
		t.Fatal(err)
	}
	slices.Reverse(want)

	var got []string
	var after engine.EventID
	for page := 0; ; page++ {
		bodies, more, err := s.List(eventlog.Query{Client: alice, Mode: engine.ModeLive, Limit: 7, After: after})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ids(t, bodies)...)
		if !more {
			break
		}
		if page > 10 {
			t.Fatal("pages never end")
		}
		after = mustID(t, got[len(got)-1])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages:\n%v\nwant\n%v", got, want)
	}

	bodies, more, err := s.List(eventlog.Query{Client: alice, Mode: engine.ModeLive, Kind: engine.WebhookQuoteAccepted, Limit: 100})
	if err != nil || more || len(bodies) != 10 {
		t.Fatalf("accepted only: %d events, more %v, %v", len(bodies), more, err)
	}
	for _, e := range bodies {
		if e.Kind != engine.WebhookQuoteAccepted || e.Quote.Client != alice {
			t.Fatalf("type filter let through %s of %s", e.Kind, e.Quote.Client)
		}
	}
	// startingAfter with a filter: an event of another type is a place too.
	page, _, err := s.List(eventlog.Query{Client: alice, Mode: engine.ModeLive, Kind: engine.WebhookQuoteAccepted, Limit: 100, After: mustID(t, want[0])})
	if err != nil || len(page) != 10 {
		t.Fatalf("accepted after the newest: %d, %v", len(page), err)
	}
	if bodies, _, err := s.List(eventlog.Query{Client: alice, Mode: engine.ModeLive, Kind: engine.WebhookPayInReceived, Limit: 5}); err != nil || len(bodies) != 0 {
		t.Fatalf("payin.received: %d, %v", len(bodies), err)
	}

	bobs, _, err := s.List(eventlog.Query{Client: bob, Mode: engine.ModeLive, Limit: 1})
	if err != nil || len(bobs) != 1 {
		t.Fatal(err)
	}
	_, _, err = s.List(eventlog.Query{Client: alice, Mode: engine.ModeLive, Limit: 5, After: mustID(t, ids(t, bobs)[0])})
	if !errors.Is(err, eventlog.ErrUnknownEvent) {
		t.Fatalf("after bob's event: %v", err)
	}
	_, _, err = s.List(eventlog.Query{Client: alice, Mode: engine.ModeSandbox, Limit: 5, After: mustID(t, want[0])})
	if !errors.Is(err, eventlog.ErrUnknownEvent) {
		t.Fatalf("after a live event in sandbox: %v", err)
	}
	_, _, err = s.List(eventlog.Query{Client: alice, Mode: engine.ModeLive, Limit: 5, After: engine.EventID{9}})
	if !errors.Is(err, eventlog.ErrUnknownEvent) {
		t.Fatalf("after an unknown event: %v", err)
	}
}

func mustID(t *testing.T, s string) engine.EventID {
	t.Helper()
	id, ok := engine.ParseEventID(s)
	if !ok {
		t.Fatalf("%s: not an event id", s)
	}
	return id
}

// TestWatermarkAndRetention: the store reopens with what it synced and its
// watermark, skips events of records up to it when an applier feeds them
// again, and deletes events past the retention with their indexes.
func TestWatermarkAndRetention(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{now: time.UnixMilli(1_800_000_000_000)}
	day := 24 * time.Hour
	start := clk.Now().Add(-40 * day).UnixMilli()
	c := engine.ClientID{7}
	s := open(t, dir, clk)
	for i := range 40 {
		s.Add(uint64(i+1), event(c, engine.ModeLive, engine.WebhookQuoteCreated, i, start+int64(i)*day.Milliseconds()))
	}
	s.Applied(50) // records with no event
	if err := s.Sync(50); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, dir, clk) // the first flush expires: 40 days, keep 30
	defer s.Close()
	if s.Watermark() != 50 {
		t.Fatalf("watermark %d, want 50", s.Watermark())
	}
	s.Add(3, event(c, engine.ModeLive, engine.WebhookQuoteAccepted, 3, clk.Now().UnixMilli())) // re-fed: skipped
	s.Applied(51)
	if err := s.Sync(51); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, func() string {
		bodies, _, err := s.List(eventlog.Query{Client: c, Mode: engine.ModeLive, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(bodies) != 30 {
			return fmt.Sprintf("%d events kept, want the 30 within the retention", len(bodies))
		}
		got := ids(t, bodies)
		if got[0] != event(c, engine.ModeLive, engine.WebhookQuoteCreated, 39, 0).ID.String() ||
			got[29] != event(c, engine.ModeLive, engine.WebhookQuoteCreated, 10, 0).ID.String() {
			t.Fatalf("kept %s … %s", got[0], got[29])
		}
		return ""
	})
	gone := event(c, engine.ModeLive, engine.WebhookQuoteCreated, 2, 0).ID
	if _, _, err := s.List(eventlog.Query{Client: c, Mode: engine.ModeLive, Limit: 5, After: gone}); !errors.Is(err, eventlog.ErrUnknownEvent) {
		t.Fatalf("after an expired event: %v", err)
	}
	if bodies, _, _ := s.List(eventlog.Query{Client: c, Mode: engine.ModeLive, Kind: engine.WebhookQuoteCreated, Limit: 100}); len(bodies) != 30 {
		t.Fatalf("type index: %d", len(bodies))
	}
}

// TestOpenRefusesDamage: a store that does not open is an error naming it,
// not an empty history.
func TestOpenRefusesDamage(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{now: time.Now()}
	s := open(t, dir, clk)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	if len(matches) == 0 {
		t.Fatal("no MANIFEST")
	}
	for _, m := range matches {
		if err := os.WriteFile(m, []byte("not a manifest"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := eventlog.Open(dir, eventlog.Config{}); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("damaged store opened: %v", err)
	}
}

// TestQuoteEvents: a quote's events come oldest first, none of another
// quote's, another client's or another mode's; reading starts at since;
// a scan bound that stops short says so.
func TestQuoteEvents(t *testing.T) {
	clk := &clock{now: time.UnixMilli(1_800_000_000_000)}
	s := open(t, t.TempDir(), clk)
	defer s.Close()
	alice, bob := engine.ClientID{1}, engine.ClientID{2}
	base := clk.Now().UnixMilli()
	kinds := []engine.WebhookEvents{engine.WebhookQuoteCreated, engine.WebhookQuoteAccepted, engine.WebhookQuoteCompleted}
	seq := uint64(0)
	var want []string // quote 5's
	for i := range 30 {
		seq++
		n := i % 10 // ten quotes, three events each, interleaved
		e := event(alice, engine.ModeLive, kinds[i/10], n, base+int64(i))
		s.Add(seq, e)
		if n == 5 {
			want = append(want, e.ID.String())
		}
		s.Add(seq, event(bob, engine.ModeLive, kinds[i/10], n, base+int64(i)))
		s.Add(seq, event(alice, engine.ModeSandbox, kinds[i/10], n, base+int64(i)))
	}
	if err := s.Sync(seq); err != nil {
		t.Fatal(err)
	}
	var q engine.QuoteID
	q[0] = 5
	got, truncated, err := s.QuoteEvents(alice, engine.ModeLive, q, base+5, 100)
	if err != nil || truncated || !slices.Equal(ids(t, got), want) {
		t.Fatalf("quote 5: %v truncated %v %v; want %v", ids(t, got), truncated, err, want)
	}
	// From its creation on, 10 records reach only its first event.
	got, truncated, err = s.QuoteEvents(alice, engine.ModeLive, q, base+5, 10)
	if err != nil || !truncated || !slices.Equal(ids(t, got), want[:1]) {
		t.Fatalf("bounded: %v truncated %v %v", ids(t, got), truncated, err)
	}
	// Reading from after its creation misses the creation.
	got, _, _ = s.QuoteEvents(alice, engine.ModeLive, q, base+6, 100)
	if !slices.Equal(ids(t, got), want[1:]) {
		t.Fatalf("since after creation: %v", ids(t, got))
	}
}
