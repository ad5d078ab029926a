// Package gatewaytest starts a real Oja service on loopback ports for tests
// and benchmarks: a Pebble log in a temporary directory, recovered state,
// the actors and both listeners, exactly as `oja serve` wires them.
package gatewaytest

import (
	"context"
	"log/slog"
	"path"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/actors/chainwatch"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway"
	"github.com/oja-exchange/oja/wal"
	"github.com/oja-exchange/oja/wal/eventlog"
)

// AdminToken is the admin bearer token of every test server.
const AdminToken = "oja_admin_test_token"

// Options tunes a test server; zero values take the service defaults.
type Options struct {
	Dir           string // data dir; default t.TempDir()
	Sync          bool   // fsync; tests default to false for speed unless set
	QuoteTTL      time.Duration
	PaymentWindow time.Duration
	MaxOpenQuotes int
	// MaxKeyShare is --max-key-share in parts per million; 0 (the tests'
	// default, unlike the service's 0.5) is no limit.
	MaxKeyShare  uint32
	RateLimit    float64
	Clock        func() time.Time
	SSEHeartbeat time.Duration // rate stream heartbeat; default 15 s
	SSEStallMax  time.Duration // rate stream stall limit; default 30 s
	Logger       *slog.Logger  // the gateway's logger; default discards
	AccessLog    bool          // one log line per request
	// FS is the log's filesystem (vfs.NewCrashableMem, an errorfs wrapper
	// injecting faults); nil is the real disk. With FS set, Dir is a path
	// in it, default its root.
	FS vfs.FS
	// WebhookAllowPrivate is --webhook-allow-private (webhook URLs on
	// 127.0.0.1 are refused without it).
	WebhookAllowPrivate bool
	// Webhooks is the term's webhook dispatcher (backlog, metrics; the
	// term stops it); nil: none.
	Webhooks actors.Webhooks
	// Markets is --markets (with its chainWatch, watched by the term);
	// nil: the default markets.
	Markets *engine.MarketsConfig
	// History keeps the partners' event history (GET /partners/events) in
	// Dir/events, fed by a log follower as `oja serve` does; without it
	// the route answers 503.
	History bool
}

// WideMarkets are the default markets without bounds
// (engine.MarketsConfig.WithoutBounds): for tests of rules (dust,
// rounding) that the default bounds would refuse first.
func WideMarkets() *engine.MarketsConfig { return engine.DefaultMarketsConfig().WithoutBounds() }

// Server is a running test service.
type Server struct {
	*gateway.Server
	Sys     *actors.System
	Term    *actors.Term // Sys's term, served until Stop (or a test ends it)
	Log     *wal.Log
	Dir     string
	URL     string // public base, e.g. http://127.0.0.1:41234
	Admin   string // admin base
	stopped bool
	history *eventlog.Store
	// stopFollower stops the follower that feeds the history (nil: none).
	stopFollower func()
	// skew is how far the service's clock runs ahead of Options.Clock (or
	// time.Now); Advance moves it.
	skew  *atomic.Int64
	clock func() time.Time
}

// Advance moves the service's clock d ahead, without sleeping.
func (s *Server) Advance(d time.Duration) { s.skew.Add(int64(d)) }

// Now is the service's clock: Options.Clock (or time.Now) plus what
// Advance added.
func (s *Server) Now() time.Time { return s.clock() }

// Start starts a service and registers its shutdown with t.Cleanup.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Dir == "" && opts.FS == nil {
		opts.Dir = t.TempDir()
	}
	if opts.QuoteTTL == 0 {
		opts.QuoteTTL = 300 * time.Second
	}
	if opts.PaymentWindow == 0 {
		opts.PaymentWindow = 30 * time.Minute
	}
	log, err := wal.Open(path.Join(opts.Dir, "store"), wal.Options{Sync: opts.Sync, FS: opts.FS})
	if err != nil {
		t.Fatalf("gatewaytest: open log: %v", err)
	}
	base := opts.Clock
	if base == nil {
		base = time.Now
	}
	skew := new(atomic.Int64)
	clock := func() time.Time { return base().Add(time.Duration(skew.Load())) }
	state, _, err := actors.Recover(log, clock())
	if err != nil {
		log.Close()
		t.Fatalf("gatewaytest: recover: %v", err)
	}
	if opts.Markets != nil {
		if _, err := actors.RecordMarkets(state, log, opts.Markets, clock()); err != nil {
			log.Close()
			t.Fatalf("gatewaytest: markets: %v", err)
		}
	}
	var history *eventlog.Store
	if opts.History {
		if history, err = eventlog.Open(path.Join(opts.Dir, "events"), eventlog.Config{
			Clock: clock, FlushEvery: 5 * time.Millisecond}); err != nil {
			log.Close()
			t.Fatalf("gatewaytest: event history: %v", err)
		}
	}
	// The gateway is built first: its rate stream listens to the actors.
	cfg := gateway.Config{
		Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0", AdminToken: AdminToken,
		RateLimit: opts.RateLimit, Backup: log.Backup,
		SSEHeartbeat: opts.SSEHeartbeat, SSEStallMax: opts.SSEStallMax,
		Logger: opts.Logger, AccessLog: opts.AccessLog, WebhookAllowPrivate: opts.WebhookAllowPrivate,
	}
	if history != nil {
		cfg.Events = history
	}
	srv := gateway.New(cfg)
	sys, err := actors.Start(state, log, actors.Config{
		QuoteTTL: opts.QuoteTTL, PaymentWindow: opts.PaymentWindow, Retention: 168 * time.Hour,
		MaxOpenQuotes: opts.MaxOpenQuotes, MaxKeyShare: opts.MaxKeyShare, Clock: clock, RateListener: srv.RateChanged,
	})
	if err != nil {
		log.Close()
		t.Fatalf("gatewaytest: start actors: %v", err)
	}
	if err := srv.Start(); err != nil {
		sys.Stop()
		log.Close()
		t.Fatalf("gatewaytest: listen: %v", err)
	}
	// The markets' chain watches run as oja serve runs them: the term's.
	term := actors.NewTerm(sys, opts.Webhooks, nil).WithChains(chainwatch.Start(sys, sys.Markets(), opts.Markets.ChainWatch(), opts.Logger))
	srv.SetTerm(term)
	s := &Server{Server: srv, Sys: sys, Term: term, Log: log, Dir: opts.Dir, history: history,
		URL: "http://" + srv.Addr(), Admin: "http://" + srv.AdminAddr(), skew: skew, clock: clock}
	if history != nil {
		s.stopFollower = follow(t, log, history, clock)
	}
	t.Cleanup(s.Stop)
	return s
}

// follow runs a log follower feeding history until the returned func is
// called.
func follow(t testing.TB, log *wal.Log, history *eventlog.Store, clock func() time.Time) func() {
	quit, done := make(chan struct{}), make(chan struct{})
	f, err := actors.NewFollower(log, actors.FollowerConfig{Poll: 5 * time.Millisecond, Now: clock, Stop: quit,
		Events: history, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("gatewaytest: follower: %v", err)
	}
	go func() {
		defer close(done)
		if err := f.Run(); err != nil {
			t.Errorf("gatewaytest: follower: %v", err)
		}
	}()
	return func() { close(quit); <-done }
}

// Stop shuts the service down (idempotent): listeners, actors, then log.
func (s *Server) Stop() {
	if s.stopped {
		return
	}
	s.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.Shutdown(ctx) // a test that cares checks Shutdown itself
	s.Term.End()
	if s.stopFollower != nil {
		s.stopFollower()
		_ = s.history.Close()
	}
	_ = s.Log.Close()
}
