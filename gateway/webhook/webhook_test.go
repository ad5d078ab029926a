package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/webhook/webhooktest"
	"github.com/oja-exchange/oja/internal/poll"
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
		// Every IANA special-purpose range: the ways of writing loopback
		// in IPv6, 6to4, Teredo, discard-only, the TEST-NETs.
		{"https://[::ffff:0:7f00:1]/", engine.ModeLive, false, "loopback"},
		{"https://[::7f00:1]/", engine.ModeLive, false, "loopback"},
		{"https://[2002:7f00:1::]/", engine.ModeLive, false, "loopback"},
		{"https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", engine.ModeLive, false, "loopback"},
		{"https://[100::1]/", engine.ModeLive, false, "loopback"},
		{"https://192.0.2.10/", engine.ModeLive, false, "loopback"},
		{"https://198.51.100.7/", engine.ModeLive, false, "loopback"},
		{"https://203.0.113.99/", engine.ModeLive, false, "loopback"},
		{"https://[2001:db8::1]/", engine.ModeLive, false, "loopback"},
		{"https://[3fff::1]/", engine.ModeLive, false, "loopback"},
		{"https://192.88.99.1/", engine.ModeLive, false, "loopback"},
		{"https://[::ffff:8.8.8.8]/", engine.ModeLive, false, ""}, // an IPv4-mapped public address is that address
		{"https://8.8.8.8/", engine.ModeLive, false, ""},
		{"https://[2606:4700::1111]/", engine.ModeLive, false, ""},
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

// newReceiver is an endpoint on 127.0.0.1 that fails each event's first
// `failures` attempts and checks every signature with its own HMAC
// computation (not Sign).
func newReceiver(t *testing.T, secret string, failures int) *webhooktest.Receiver {
	r := webhooktest.New(t)
	r.Fail(func(attempt int) bool { return attempt <= failures })
	r.Verify(func(header string, body []byte) error {
		var ts, v1 string
		for _, part := range strings.Split(header, ",") {
			k, v, _ := strings.Cut(part, "=")
			switch k {
			case "t":
				ts = v
			case "v1":
				v1 = v
			}
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(ts + "." + string(body)))
		if want := hex.EncodeToString(mac.Sum(nil)); v1 != want {
			return fmt.Errorf("want v1=%s", want)
		}
		return nil
	})
	return r
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
	poll.True(t, 10*time.Second, what, cond)
}

// TestDispatcherRetriesInOrder: each event is retried after failures with
// gaps of at least RetryMin, 2·RetryMin, 4·RetryMin; it keeps its id and
// body; a quote's second event is not attempted before its first is
// delivered; every delivery is settled once.
func TestDispatcherRetriesInOrder(t *testing.T) {
	const secret = "whsec_test"
	rec := newReceiver(t, secret, 3)
	var settled settlements
	const retryMin = 40 * time.Millisecond
	d := New(Config{RetryMin: retryMin, AllowPrivate: true, Render: render, Settle: settled.settle})
	h := hook(1, rec.URL+"/hooks", secret)
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

	byEvent := map[string][]webhooktest.Delivery{}
	for _, r := range rec.Deliveries() {
		byEvent[r.EventID] = append(byEvent[r.EventID], r)
	}
	for _, e := range events {
		rs := byEvent[e.ID.String()]
		if len(rs) != 4 {
			t.Fatalf("event %s: %d attempts, want 4", e.Kind, len(rs))
		}
		for i, r := range rs {
			if r.Attempt != i+1 || string(r.Body) != string(rs[0].Body) {
				t.Fatalf("event %s: attempt %d numbered %d or with another body", e.Kind, i+1, r.Attempt)
			}
			if i > 0 {
				if gap, least := r.At.Sub(rs[i-1].At), retryMin<<(i-1); gap < least {
					t.Errorf("event %s: gap before attempt %d is %v, want at least %v", e.Kind, i+1, gap, least)
				}
			}
		}
	}
	// Quote 1's events: each first attempted after the previous delivered.
	q1 := []*engine.OwedEvent{events[0], events[2], events[3]}
	for i := 1; i < len(q1); i++ {
		prev, next := byEvent[q1[i-1].ID.String()], byEvent[q1[i].ID.String()]
		if !next[0].At.After(prev[len(prev)-1].At) {
			t.Errorf("%s attempted before %s was delivered", q1[i].Kind, q1[i-1].Kind)
		}
	}
	// Quote 2's event went out beside quote 1's, not after all of them.
	if q2 := byEvent[events[1].ID.String()]; !q2[0].At.Before(byEvent[events[2].ID.String()][0].At) {
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
	dead := newReceiver(t, "whsec_dead", 0)
	dead.Hang()
	live := newReceiver(t, "whsec_live", 0)
	var settled settlements
	d := New(Config{AllowPrivate: true, Timeout: time.Minute, Render: render, Settle: settled.settle})
	hd, hl := hook(1, dead.URL, "whsec_dead"), hook(2, live.URL, "whsec_live")
	d.Registered(hd)
	d.Registered(hl)
	d.Start()
	defer d.Stop()
	now := time.Now()
	for q := range byte(20) {
		d.Owed(hd, owed(q, engine.WebhookQuoteCreated, now))
	}
	waitFor(t, "the dead endpoint to hold its requests", func() bool {
		now, _ := dead.InFlight()
		return now == ConcurrencyDefault
	})
	for q := range byte(5) {
		d.Owed(hl, owed(100+q, engine.WebhookQuoteCreated, now))
	}
	waitFor(t, "the live endpoint's deliveries", func() bool { return len(live.Deliveries()) == 5 })
	inflight, peak := dead.InFlight()
	if peak != ConcurrencyDefault || inflight != ConcurrencyDefault {
		t.Fatalf("dead endpoint: peak %d, in flight %d requests, want %d", peak, inflight, ConcurrencyDefault)
	}
	if st := d.Status(hd.ID); st.Owed != 20 || st.InFlight != ConcurrencyDefault {
		t.Fatalf("dead endpoint status %+v", st)
	}
}

// oneEndpoint is a dispatcher with cfg (Render and Settle filled in) and
// one endpoint at a receiver that fails the first `failures` attempts of
// each event; ev is owed to it before it starts.
func oneEndpoint(t *testing.T, cfg Config, failures int, ev *engine.OwedEvent) (*webhooktest.Receiver, *Dispatcher, *engine.Webhook, *settlements) {
	rec := newReceiver(t, "whsec_x", failures)
	settled := &settlements{}
	cfg.Render, cfg.Settle = render, settled.settle
	d := New(cfg)
	h := hook(1, rec.URL, "whsec_x")
	d.Registered(h)
	d.Owed(h, ev)
	d.Owed(h, ev) // told again (a replica restored from a snapshot): queued once
	d.Start()
	t.Cleanup(d.Stop)
	return rec, d, h, settled
}

// TestDispatcherAbandons: an event whose window is over is settled as not
// delivered after its failed attempt, never retried.
func TestDispatcherAbandons(t *testing.T) {
	rec, d, h, settled := oneEndpoint(t, Config{RetryMin: 10 * time.Millisecond, AllowPrivate: true}, 100,
		owed(1, engine.WebhookQuoteExpired, time.Now().Add(-WindowDefault)))
	waitFor(t, "the settlement", func() bool { return settled.count() == 1 })
	// Nothing is left to retry: the event left the endpoint's queue when
	// it was settled (a retry is only ever of a queued event).
	if st := d.Status(h.ID); st.Owed != 0 || st.InFlight != 0 {
		t.Fatalf("after the abandoning settlement the endpoint still holds %+v", st)
	}
	d.Stop()
	if n := len(rec.Deliveries()); n != 1 || settled.got[0].Delivered {
		t.Fatalf("%d attempts, settlement %+v; want 1 attempt, abandoned", n, settled.got[0])
	}
	if c := d.Counters(); c.Abandoned != 1 || c.Owed != 0 {
		t.Fatalf("counters %+v", c)
	}
}

// TestDispatcherDialGuard: without AllowPrivate the connection to a
// loopback receiver is refused at dial time, whatever was registered.
func TestDispatcherDialGuard(t *testing.T) {
	rec, d, h, _ := oneEndpoint(t, Config{RetryMin: time.Hour}, 0, owed(1, engine.WebhookQuoteCreated, time.Now()))
	waitFor(t, "the attempt", func() bool { return !d.Status(h.ID).Last.At.IsZero() })
	if st := d.Status(h.ID); !strings.Contains(st.Last.Error, "refusing to connect") || st.Owed != 1 {
		t.Fatalf("status %+v", st)
	}
	if n := len(rec.Deliveries()); n != 0 {
		t.Fatalf("the loopback receiver got %d requests", n)
	}
}

// TestDispatcherDeleteStops: a deleted endpoint's queue is dropped and its
// requests end: while another endpoint's event goes through five retries
// (at least 90 ms; the deleted one, failing, would retry every 25 ms at
// most), the deleted one gets at most the attempt that was in flight.
func TestDispatcherDeleteStops(t *testing.T) {
	cfg := Config{RetryMin: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond, AllowPrivate: true}
	rec, d, h, settled := oneEndpoint(t, cfg, 1000, owed(1, engine.WebhookQuoteCreated, time.Now()))
	waitFor(t, "two attempts", func() bool { return len(rec.Deliveries()) >= 2 })
	d.Deleted(h)
	if st := d.Status(h.ID); !st.Unknown {
		t.Fatalf("deleted endpoint still known: %+v", st)
	}
	n := len(rec.Deliveries())
	other := newReceiver(t, "whsec_other", 5)
	h2 := hook(2, other.URL, "whsec_other")
	d.Registered(h2)
	d.Owed(h2, owed(2, engine.WebhookQuoteCreated, time.Now()))
	waitFor(t, "the other endpoint's delivery after five failures", func() bool { return settled.count() == 1 })
	if after := len(rec.Deliveries()); after > n+1 {
		t.Fatalf("%d attempts after the delete (at most the one in flight)", after-n)
	}
	if got := settled.got[0]; got.Webhook != h2.ID || !got.Delivered {
		t.Fatalf("settlement %+v", got)
	}
}

// TestDispatcherPausesFailingEndpoint: an endpoint whose attempts fail
// twice in a row pauses as a whole: with 200 events owed at once (as after
// a restart) it gets a handful of attempts before the pause, not one per
// event, and the operator sees the retry at the pause's end; once
// it answers again, every event goes out, each quote's in order.
func TestDispatcherPausesFailingEndpoint(t *testing.T) {
	var failing sync.Mutex // guards down
	down := true
	rec := webhooktest.New(t)
	rec.Fail(func(int) bool { failing.Lock(); defer failing.Unlock(); return down })
	var settled settlements
	d := New(Config{RetryMin: time.Hour, AllowPrivate: true, Render: render, Settle: settled.settle})
	h := hook(1, rec.URL, "whsec_x")
	d.Registered(h)
	now := time.Now()
	for q := range byte(100) {
		d.Owed(h, owed(q, engine.WebhookQuoteCreated, now))
		d.Owed(h, owed(q, engine.WebhookQuoteAccepted, now))
	}
	d.Start()
	defer d.Stop()
	waitFor(t, "the pause", func() bool {
		st := d.Status(h.ID)
		return st.InFlight == 0 && st.NextAttempt.After(time.Now().Add(59*time.Minute))
	})
	// The first failure frees a slot before the second one pauses: at most
	// Concurrency + pauseAfterFailures-1 attempts.
	if n, most := len(rec.Deliveries()), ConcurrencyDefault+pauseAfterFailures-1; n < pauseAfterFailures || n > most {
		t.Fatalf("%d attempts before the pause, want %d to %d (of 200 owed)", n, pauseAfterFailures, most)
	}
	if st := d.Status(h.ID); st.Owed != 200 {
		t.Fatalf("status %+v", st)
	}

	// The receiver is back; a restarted dispatcher (the pause is not
	// durable) drains the outbox.
	d.Stop()
	failing.Lock()
	down = false
	failing.Unlock()
	d = New(Config{RetryMin: time.Hour, AllowPrivate: true, Render: render, Settle: settled.settle})
	d.Registered(h)
	for q := range byte(100) {
		d.Owed(h, owed(q, engine.WebhookQuoteCreated, now))
		d.Owed(h, owed(q, engine.WebhookQuoteAccepted, now))
	}
	d.Start()
	waitFor(t, "every event delivered", func() bool { return d.Status(h.ID).Owed == 0 })
	firstDelivered := map[string]time.Time{}
	for _, r := range rec.Deliveries() {
		if r.Delivered {
			if _, seen := firstDelivered[r.EventID]; !seen {
				firstDelivered[r.EventID] = r.At
			}
		}
	}
	for q := range byte(100) {
		created, accepted := owed(q, engine.WebhookQuoteCreated, now).ID.String(), owed(q, engine.WebhookQuoteAccepted, now).ID.String()
		if c, a := firstDelivered[created], firstDelivered[accepted]; c.IsZero() || a.IsZero() || a.Before(c) {
			t.Fatalf("quote %d: created delivered %v, accepted %v", q, c, a)
		}
	}
}

// TestJitter: a retry is never earlier than its backoff, at most a quarter
// later, and retries due together spread out.
func TestJitter(t *testing.T) {
	const wait = 10 * time.Second
	seen := map[time.Duration]bool{}
	for range 1000 {
		j := jitter(wait)
		if j < wait || j > wait+wait/4 {
			t.Fatalf("jitter(%v) = %v", wait, j)
		}
		seen[j] = true
	}
	if len(seen) < 900 {
		t.Fatalf("1000 jittered waits take %d values", len(seen))
	}
}
