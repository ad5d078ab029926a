package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oja-exchange/oja/engine"
)

func TestCheckURL(t *testing.T) {
	zone := map[string][]netip.Addr{
		"hooks.example.com":  {netip.MustParseAddr("93.184.215.14")},
		"rebind.example.com": {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.0.0.7")},
		"meta.example.com":   {netip.MustParseAddr("169.254.169.254")},
		"v6.example.com":     {netip.MustParseAddr("2606:2800:21f:cb07:6820:80da:af6b:8b2c")},
	}
	var lookups int
	resolve := func(_ context.Context, host string) ([]netip.Addr, error) {
		lookups++
		if a, ok := zone[host]; ok {
			return a, nil
		}
		return nil, errors.New("no such host")
	}
	for _, tc := range []struct {
		url     string
		mode    engine.Mode
		private bool
		want    string // a fragment of the problem; "" = accepted
	}{
		{"https://hooks.example.com/oja", engine.ModeLive, false, ""},
		{"http://hooks.example.com/oja", engine.ModeSandbox, false, ""},
		{"https://v6.example.com/", engine.ModeLive, false, ""},
		{"http://hooks.example.com/oja", engine.ModeLive, false, "https"},
		{"http://127.0.0.1:9/", engine.ModeLive, true, ""},
		{"https://rebind.example.com/", engine.ModeLive, false, "resolves to"},
		{"https://meta.example.com/", engine.ModeLive, false, "resolves to"},
		{"https://nowhere.example.com/", engine.ModeLive, false, "does not resolve"},
		{"https://127.0.0.1/", engine.ModeLive, false, "loopback"},
		{"https://[::ffff:10.0.0.1]/", engine.ModeLive, false, "private"},
		{"https://127.1/", engine.ModeLive, false, "complete IP"},
		{"https://0x7f.0.0.1/", engine.ModeLive, false, "complete IP"},
		{"https://localhost./", engine.ModeLive, false, "loopback"},
		{"https://db/", engine.ModeLive, false, "loopback"},
		{"https://printer.local/", engine.ModeLive, false, "loopback"},
		{"mailto:ops@example.com", engine.ModeLive, false, "absolute http"},
		{"https://user@hooks.example.com/", engine.ModeLive, false, "credentials"},
	} {
		got := CheckURL(context.Background(), tc.url, tc.mode, tc.private, resolve)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s (%s, private %v): %q, want %q", tc.url, tc.mode, tc.private, got, tc.want)
		}
	}
	if lookups != 6 {
		t.Errorf("%d look-ups, want 6 (names only, never address literals or refused forms)", lookups)
	}
}

// receiver is a webhook endpoint on 127.0.0.1 that fails each event's
// first `failures` attempts with 500 and records every request.
type receiver struct {
	t        *testing.T
	secret   string
	failures int
	hang     chan struct{} // when set, requests block until it closes

	mu       sync.Mutex
	requests []request
	inflight int
	peak     int
}

type request struct {
	at      time.Time
	event   string
	attempt int
	body    []byte
	ok      bool
}

func newReceiver(t *testing.T, secret string, failures int) (*receiver, *httptest.Server) {
	r := &receiver{t: t, secret: secret, failures: failures}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.inflight++
	r.peak = max(r.peak, r.inflight)
	r.mu.Unlock()
	defer func() { r.mu.Lock(); r.inflight--; r.mu.Unlock() }()
	if r.hang != nil {
		select {
		case <-r.hang:
		case <-req.Context().Done():
		}
		return
	}
	// The signature, computed here independently of Sign.
	sig := req.Header.Get("Oja-Signature")
	var ts, v1 string
	for _, part := range strings.Split(sig, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			v1 = v
		}
	}
	mac := hmac.New(sha256.New, []byte(r.secret))
	mac.Write([]byte(ts + "." + string(body)))
	if want := hex.EncodeToString(mac.Sum(nil)); v1 != want {
		r.t.Errorf("signature %q does not verify (want v1=%s)", sig, want)
	}
	attempt, _ := strconv.Atoi(req.Header.Get("Oja-Delivery-Attempt"))
	rq := request{at: time.Now(), event: req.Header.Get("Oja-Event-Id"), attempt: attempt, body: body, ok: attempt > r.failures}
	r.mu.Lock()
	r.requests = append(r.requests, rq)
	r.mu.Unlock()
	if !rq.ok {
		http.Error(w, "not yet", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) snapshot() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.requests...)
}

// settlements collects what the dispatcher records.
type settlements struct {
	mu  sync.Mutex
	got []engine.WebhookSettled
}

func (s *settlements) settle(evs []*engine.WebhookSettled) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range evs {
		s.got = append(s.got, *e)
	}
	return nil
}

func (s *settlements) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

func hook(id byte, url, secret string) *engine.Webhook {
	return &engine.Webhook{ID: engine.WebhookID{id}, Client: engine.ClientID{1}, Mode: engine.ModeSandbox,
		URL: url, Events: engine.WebhookEventsAll, Secret: secret}
}

func owed(quote byte, kind engine.WebhookEvents, at time.Time) *engine.OwedEvent {
	q := engine.QuoteID{quote}
	return &engine.OwedEvent{ID: engine.WebhookEventID(q, kind), Kind: kind, At: at.UnixMilli(),
		Quote: engine.Quote{ID: q, Mode: engine.ModeSandbox}}
}

func render(e *engine.OwedEvent) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"type":%q}`, e.ID, e.Kind))
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDispatcherRetriesInOrder: each event is retried after failures with
// gaps of at least RetryMin, 2·RetryMin, 4·RetryMin; it keeps its id and
// body; a quote's second event is not attempted before its first is
// delivered; every delivery is settled once.
func TestDispatcherRetriesInOrder(t *testing.T) {
	const secret = "whsec_test"
	rec, srv := newReceiver(t, secret, 3)
	var settled settlements
	const retryMin = 40 * time.Millisecond
	d := New(Config{RetryMin: retryMin, AllowPrivate: true, Render: render, Settle: settled.settle})
	h := hook(1, srv.URL+"/hooks", secret)
	d.Registered(h)
	now := time.Now()
	events := []*engine.OwedEvent{
		owed(1, engine.WebhookQuoteCreated, now), owed(2, engine.WebhookQuoteCreated, now),
		owed(1, engine.WebhookQuoteAccepted, now), owed(1, engine.WebhookQuoteCompleted, now),
	}
	for _, e := range events {
		d.Owed(h, e)
	}
	d.Start()
	defer d.Stop()
	waitFor(t, "4 settlements", func() bool { return settled.count() == 4 })

	reqs := rec.snapshot()
	byEvent := map[string][]request{}
	for _, r := range reqs {
		byEvent[r.event] = append(byEvent[r.event], r)
	}
	for _, e := range events {
		rs := byEvent[e.ID.String()]
		if len(rs) != 4 {
			t.Fatalf("event %s: %d attempts, want 4", e.Kind, len(rs))
		}
		for i, r := range rs {
			if r.attempt != i+1 || string(r.body) != string(rs[0].body) {
				t.Fatalf("event %s: attempt %d numbered %d or with another body", e.Kind, i+1, r.attempt)
			}
			if i > 0 {
				if gap, least := r.at.Sub(rs[i-1].at), retryMin<<(i-1); gap < least {
					t.Errorf("event %s: gap before attempt %d is %v, want at least %v", e.Kind, i+1, gap, least)
				}
			}
		}
	}
	// Quote 1's events: each first attempted after the previous delivered.
	q1 := []*engine.OwedEvent{events[0], events[2], events[3]}
	for i := 1; i < len(q1); i++ {
		prev, next := byEvent[q1[i-1].ID.String()], byEvent[q1[i].ID.String()]
		if !next[0].at.After(prev[len(prev)-1].at) {
			t.Errorf("%s attempted before %s was delivered", q1[i].Kind, q1[i-1].Kind)
		}
	}
	// Quote 2's event went out beside quote 1's, not after all of them.
	if q2 := byEvent[events[1].ID.String()]; !q2[0].at.Before(byEvent[events[2].ID.String()][0].at) {
		t.Error("quote 2's event waited for quote 1's")
	}
	for _, s := range settled.got {
		if !s.Delivered || s.Webhook != h.ID {
			t.Errorf("settlement %+v", s)
		}
	}
	if c := d.Counters(); c.Delivered != 4 || c.Failed != 12 || c.Owed != 0 {
		t.Errorf("counters %+v", c)
	}
}

// TestDispatcherIsolation: an endpoint that never answers holds at most
// Concurrency requests and does not delay another endpoint's deliveries.
func TestDispatcherIsolation(t *testing.T) {
	dead, deadSrv := newReceiver(t, "whsec_dead", 0)
	dead.hang = make(chan struct{})
	defer close(dead.hang)
	live, liveSrv := newReceiver(t, "whsec_live", 0)
	var settled settlements
	d := New(Config{AllowPrivate: true, Timeout: time.Minute, Render: render, Settle: settled.settle})
	hd, hl := hook(1, deadSrv.URL, "whsec_dead"), hook(2, liveSrv.URL, "whsec_live")
	d.Registered(hd)
	d.Registered(hl)
	d.Start()
	defer d.Stop()
	now := time.Now()
	for q := range byte(20) {
		d.Owed(hd, owed(q, engine.WebhookQuoteCreated, now))
	}
	waitFor(t, "the dead endpoint to hold its requests", func() bool {
		dead.mu.Lock()
		defer dead.mu.Unlock()
		return dead.inflight == ConcurrencyDefault
	})
	for q := range byte(5) {
		d.Owed(hl, owed(100+q, engine.WebhookQuoteCreated, now))
	}
	waitFor(t, "the live endpoint's deliveries", func() bool { return len(live.snapshot()) == 5 })
	dead.mu.Lock()
	peak, inflight := dead.peak, dead.inflight
	dead.mu.Unlock()
	if peak != ConcurrencyDefault || inflight != ConcurrencyDefault {
		t.Fatalf("dead endpoint: peak %d, in flight %d requests, want %d", peak, inflight, ConcurrencyDefault)
	}
	if st := d.Status(hd.ID); st.Owed != 20 || st.InFlight != ConcurrencyDefault {
		t.Fatalf("dead endpoint status %+v", st)
	}
}

// TestDispatcherAbandons: an event whose window is over is settled as not
// delivered after its failed attempt, never retried.
func TestDispatcherAbandons(t *testing.T) {
	rec, srv := newReceiver(t, "whsec_x", 100)
	var settled settlements
	d := New(Config{RetryMin: 10 * time.Millisecond, AllowPrivate: true, Render: render, Settle: settled.settle})
	h := hook(1, srv.URL, "whsec_x")
	d.Registered(h)
	ev := owed(1, engine.WebhookQuoteExpired, time.Now().Add(-WindowDefault))
	d.Owed(h, ev)
	d.Owed(h, ev) // told again (a replica restored from a snapshot): queued once
	d.Start()
	waitFor(t, "the settlement", func() bool { return settled.count() == 1 })
	time.Sleep(50 * time.Millisecond) // a retry would have come by now
	d.Stop()
	if n := len(rec.snapshot()); n != 1 || settled.got[0].Delivered {
		t.Fatalf("%d attempts, settlement %+v; want 1 attempt, abandoned", n, settled.got[0])
	}
	if c := d.Counters(); c.Abandoned != 1 || c.Owed != 0 {
		t.Fatalf("counters %+v", c)
	}
}

// TestDispatcherDialGuard: without AllowPrivate the connection to a
// loopback receiver is refused at dial time, whatever was registered.
func TestDispatcherDialGuard(t *testing.T) {
	rec, srv := newReceiver(t, "whsec_x", 0)
	var settled settlements
	d := New(Config{RetryMin: time.Hour, Render: render, Settle: settled.settle})
	h := hook(1, srv.URL, "whsec_x")
	d.Registered(h)
	d.Owed(h, owed(1, engine.WebhookQuoteCreated, time.Now()))
	d.Start()
	defer d.Stop()
	waitFor(t, "the attempt", func() bool { return !d.Status(h.ID).Last.At.IsZero() })
	if st := d.Status(h.ID); !strings.Contains(st.Last.Error, "refusing to connect") || st.Owed != 1 {
		t.Fatalf("status %+v", st)
	}
	if n := len(rec.snapshot()); n != 0 {
		t.Fatalf("the loopback receiver got %d requests", n)
	}
}

// TestDispatcherDeleteStops: a deleted endpoint's queue is dropped and its
// requests end.
func TestDispatcherDeleteStops(t *testing.T) {
	rec, srv := newReceiver(t, "whsec_x", 1000)
	var settled settlements
	d := New(Config{RetryMin: 10 * time.Millisecond, AllowPrivate: true, Render: render, Settle: settled.settle})
	h := hook(1, srv.URL, "whsec_x")
	d.Registered(h)
	d.Owed(h, owed(1, engine.WebhookQuoteCreated, time.Now()))
	d.Start()
	defer d.Stop()
	waitFor(t, "two attempts", func() bool { return len(rec.snapshot()) >= 2 })
	d.Deleted(h)
	if st := d.Status(h.ID); !st.Unknown {
		t.Fatalf("deleted endpoint still known: %+v", st)
	}
	n := len(rec.snapshot())
	time.Sleep(100 * time.Millisecond)
	if after := len(rec.snapshot()); after > n+1 || settled.count() != 0 {
		t.Fatalf("%d attempts after the delete (at most the one in flight), %d settlements", after-n, settled.count())
	}
}
