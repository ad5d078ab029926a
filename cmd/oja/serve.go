package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/actors/chainwatch"
	"github.com/oja-exchange/oja/actors/cluster"
	"github.com/oja-exchange/oja/cmd/oja/waltools"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway"
	"github.com/oja-exchange/oja/gateway/webhook"
	"github.com/oja-exchange/oja/internal/pathcheck"
	"github.com/oja-exchange/oja/wal"
	"github.com/oja-exchange/oja/wal/eventlog"
)

// serveConfig is every flag of `oja serve` (spec §13). Each flag may
// also be given as the environment variable OJA_<NAME> (dashes as
// underscores); flags win.
type serveConfig struct {
	listen        string
	adminListen   string
	data          string
	sync          bool
	quoteTTL      time.Duration
	paymentWindow time.Duration
	sseHeartbeat  time.Duration
	retention     time.Duration
	snapshotEvery uint64
	logRetention  time.Duration
	rateLimit     float64
	maxOpenQuotes int
	maxKeyShare   shareFlag
	demo          bool
	logFormat     string
	accessLog     bool
	cluster       string // --cluster FILE: run as one node of a replicated cluster
	// raftTimeout is --raft-timeout: Raft's heartbeat and election
	// timeout (cluster.go).
	raftTimeout time.Duration
	// clusterTLS is --cluster-tls DIR (mutual TLS between nodes);
	// clusterInsecure is --cluster-insecure (plain TCP, stated).
	clusterTLS      string
	clusterInsecure bool
	node            string // --node ID: this node's id in the cluster file
	join            bool   // --join: a replacement node; do not bootstrap
	fromBackup      string // --from-backup DIR: seed a new cluster's first node
	// webhookRetryMin is the first retry delay of a failed webhook
	// delivery (doubling to 1 h); webhookAllowPrivate lets webhook URLs
	// point at private addresses (tests, on-premise receivers).
	webhookRetryMin     time.Duration
	webhookAllowPrivate bool
	// eventHistory is --event-history: keep the partners' event history
	// (GET /partners/events) in <data>/events.
	eventHistory bool
	// marketsFile is --markets (docs/operating.md, "Markets"); markets is it parsed
	// and validated (engine.DefaultMarketsConfig without it).
	marketsFile string
	markets     *engine.MarketsConfig
	// TLS on the listeners (tls.go): --tls-cert/--tls-key (public),
	// --admin-tls-cert/--admin-tls-key (admin); loaded by parseServe.
	tlsCert, tlsKey, adminTLSCert, adminTLSKey string
	publicCert, adminCert                      *listenerCert
}

// shutdownTimeout bounds a graceful stop (spec §13: exit within 10 s).
const shutdownTimeout = 8 * time.Second

// maintenanceInterval is how often retention and idempotency pruning run.
const maintenanceInterval = time.Minute

// serveFlags is oja serve's flags, writing into c. docs/operating.md lists
// every one (TestServeFlagsDocumented).
func serveFlags(c *serveConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&c.listen, "listen", ":8080", "public API listen address")
	fs.StringVar(&c.adminListen, "admin-listen", "127.0.0.1:8081", "admin API listen address")
	fs.StringVar(&c.data, "data", "./data", "data directory (log, admin token, demo key)")
	fs.BoolVar(&c.sync, "sync", true, "fsync every acknowledged write (false: benchmarks only)")
	fs.DurationVar(&c.quoteTTL, "quote-ttl", 300*time.Second, "time a pending quote may be accepted")
	fs.DurationVar(&c.paymentWindow, "payment-window", 30*time.Minute, "time an accepted quote may be paid")
	fs.DurationVar(&c.sseHeartbeat, "sse-heartbeat", 15*time.Second, "rate stream heartbeat interval")
	fs.DurationVar(&c.retention, "retention", waltools.RetentionDefault, "how long terminal quotes stay readable")
	fs.Uint64Var(&c.snapshotEvery, "snapshot-every", 100000, "save a snapshot every N logged events, while serving (0 = never)")
	fs.DurationVar(&c.logRetention, "log-retention", 168*time.Hour, "delete log records older than this once a snapshot covers them (0 = keep all)")
	fs.Float64Var(&c.rateLimit, "rate-limit", 0, "requests per second per API key (0 = off)")
	fs.IntVar(&c.maxOpenQuotes, "max-open-quotes", 10000, "open quotes one API key may hold, across its pairs (0 = no cap)")
	c.maxKeyShare = actors.ShareScale / 2
	fs.Var(&c.maxKeyShare, "max-key-share", "share of a pair's pool liquidity one API key's open quotes may reserve, in (0, 1] (1 = no limit)")
	fs.BoolVar(&c.demo, "demo", false, "seed sandbox demo data on an empty data dir")
	fs.StringVar(&c.logFormat, "log-format", "", `"json" or "text" (default: text on a terminal, else json)`)
	fs.BoolVar(&c.accessLog, "access-log", true, "log one line per request (request id, client, route, status, duration)")
	fs.StringVar(&c.cluster, "cluster", "", "cluster file (JSON): run as one node of a replicated cluster (docs/cluster.md)")
	fs.StringVar(&c.node, "node", "", "this node's id in the --cluster file")
	fs.StringVar(&c.clusterTLS, "cluster-tls", "", "with --cluster: the directory of ca.pem, <node>.pem and <node>-key.pem (oja cluster certs): Raft between nodes over mutual TLS")
	fs.BoolVar(&c.clusterInsecure, "cluster-insecure", false, "with --cluster and no --cluster-tls: Raft between nodes over plain TCP, unauthenticated (a trusted network or tests only)")
	fs.DurationVar(&c.webhookRetryMin, "webhook-retry-min", webhook.RetryMinDefault, "first retry delay of a failed webhook delivery; doubles up to 1h, for 72h")
	fs.BoolVar(&c.eventHistory, "event-history", true, "keep the partners' event history (GET /api/v1/partners/events, 30 days) in <data>/events; false answers that route 503 and saves its cost on write-heavy loads (docs/partners.md)")
	fs.BoolVar(&c.webhookAllowPrivate, "webhook-allow-private", false, "allow webhook URLs on loopback, private and link-local addresses (tests, on-premise receivers)")
	fs.StringVar(&c.marketsFile, "markets", "", "markets file (JSON): currencies, pairs and their bounds, collection accounts, deposit keys (default: NGN, GHS, USDT and the three default pairs; docs/operating.md, \"Markets\")")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "public listener: serve HTTPS with this certificate (PEM; with --tls-key; SIGHUP reloads it)")
	fs.StringVar(&c.tlsKey, "tls-key", "", "public listener: the private key of --tls-cert (PEM)")
	fs.StringVar(&c.adminTLSCert, "admin-tls-cert", "", "admin listener: serve HTTPS with this certificate (PEM; with --admin-tls-key; SIGHUP reloads it)")
	fs.StringVar(&c.adminTLSKey, "admin-tls-key", "", "admin listener: the private key of --admin-tls-cert (PEM)")
	fs.DurationVar(&c.raftTimeout, "raft-timeout", raftTimeoutLAN, "with --cluster: Raft's heartbeat and election timeout (the leader lease is half): 300ms suits a LAN; on a WAN set several round trips plus a stall, e.g. 2s")
	fs.BoolVar(&c.join, "join", false, "with --cluster, on an empty data dir: wait to be added (oja admin cluster add ID RAFT_ADDRESS, or replace ID) instead of bootstrapping")
	fs.StringVar(&c.fromBackup, "from-backup", "", "with --cluster, on an empty data dir: start a new cluster of this node alone from a backup (oja admin backup DIR), then add the others (docs/cluster.md)")
	return fs
}

func parseServe(args []string) (*serveConfig, error) {
	c := &serveConfig{}
	fs := serveFlags(c)
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		name := "OJA_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok && v != "" {
			if err := f.Value.Set(v); err != nil && envErr == nil {
				envErr = fmt.Errorf("%s=%q: %w", name, v, err)
			}
		}
	})
	if envErr != nil {
		return nil, usageError{envErr.Error()}
	}
	err := parseFlags(fs, args, func(w io.Writer) {
		fmt.Fprintln(w, "usage: oja serve [flags]   (each flag also OJA_<NAME> in the environment; flags win)")
		fs.SetOutput(w)
		fs.PrintDefaults()
	})
	if err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageErrorf("serve: unexpected argument %q (oja serve --help)", fs.Arg(0))
	}
	if err := checkServe(c); err != nil {
		return nil, usageError{err.Error()}
	}
	if c.publicCert, err = loadListenerCert(c.tlsCert, c.tlsKey); err != nil {
		return nil, usageErrorf("--tls-cert: %v", err)
	}
	if c.adminCert, err = loadListenerCert(c.adminTLSCert, c.adminTLSKey); err != nil {
		return nil, usageErrorf("--admin-tls-cert: %v", err)
	}
	c.markets = engine.DefaultMarketsConfig()
	if c.marketsFile != "" {
		data, err := os.ReadFile(c.marketsFile)
		if err != nil {
			return nil, usageErrorf("--markets: %v", err)
		}
		if c.markets, err = engine.ParseMarketsConfig(data); err != nil {
			return nil, usageErrorf("--markets %s:\n%v", c.marketsFile, err)
		}
	}
	return c, nil
}

// checkServe refuses flag values that cannot work together.
func checkServe(c *serveConfig) error {
	if c.quoteTTL < time.Second || c.quoteTTL%time.Second != 0 {
		return errors.New("--quote-ttl must be a whole number of seconds, at least 1s")
	}
	if c.paymentWindow < time.Second {
		return errors.New("--payment-window must be at least 1s")
	}
	if c.sseHeartbeat < 100*time.Millisecond {
		return errors.New("--sse-heartbeat must be at least 100ms")
	}
	if c.logRetention < 0 {
		return errors.New("--log-retention must not be negative")
	}
	if (c.cluster == "") != (c.node == "") {
		return errors.New("--cluster and --node go together")
	}
	if c.join && c.cluster == "" {
		return errors.New("--join needs --cluster and --node")
	}
	if c.fromBackup != "" && (c.cluster == "" || c.join) {
		return errors.New("--from-backup needs --cluster and --node, and excludes --join (a joining node gets the state from the leader)")
	}
	switch {
	case c.raftTimeout < raftTimeoutMin || c.raftTimeout > raftTimeoutMax:
		return fmt.Errorf("--raft-timeout %s: must be from %s to %s", c.raftTimeout, raftTimeoutMin, raftTimeoutMax)
	case c.cluster == "" && (c.clusterTLS != "" || c.clusterInsecure):
		return errors.New("--cluster-tls and --cluster-insecure need --cluster")
	case c.cluster != "" && c.clusterTLS != "" && c.clusterInsecure:
		return errors.New("--cluster-tls and --cluster-insecure exclude each other")
	case c.cluster != "" && c.clusterTLS == "" && !c.clusterInsecure:
		return errors.New("--cluster needs --cluster-tls DIR (mutual TLS between nodes; oja cluster certs makes the files), " +
			"or --cluster-insecure to run Raft over plain TCP, where anyone who reaches a Raft port can write")
	}
	if c.webhookRetryMin < 10*time.Millisecond || c.webhookRetryMin > webhook.RetryMaxDefault {
		return errors.New("--webhook-retry-min must be from 10ms to 1h")
	}
	if c.rateLimit < 0 || c.maxOpenQuotes < 0 {
		return errors.New("--rate-limit and --max-open-quotes must not be negative")
	}
	if (c.tlsCert == "") != (c.tlsKey == "") || (c.adminTLSCert == "") != (c.adminTLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together, as do --admin-tls-cert and --admin-tls-key")
	}
	return nil
}

// shareFlag is a share in (0, 1] with at most six decimals, held in parts
// per million (actors.ShareScale), parsed exactly (no float).
type shareFlag uint32

func (f *shareFlag) String() string {
	if f == nil {
		return ""
	}
	return decimal.New(int64(*f), -6).String()
}

func (f *shareFlag) Set(s string) error {
	d, err := decimal.NewFromString(s)
	if err != nil || !d.IsPositive() || d.GreaterThan(decimal.NewFromInt(1)) || d.Exponent() < -6 && !d.Equal(d.Round(6)) {
		return errors.New("must be a decimal in (0, 1] with at most six decimals, e.g. 0.5")
	}
	*f = shareFlag(d.Shift(6).IntPart())
	return nil
}

func newLogger(format string) *slog.Logger {
	if format == "" {
		format = "json"
		if info, err := os.Stderr.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
			format = "text"
		}
	}
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if format == "text" {
		return slog.New(slog.NewTextHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, opts))
}

// openStore opens the node's store; a store another running oja holds is
// refused with the way out (waltools.ExitInUse).
func openStore(cfg *serveConfig) (*wal.Log, error) {
	// NB: the data dir's lock (serve's) refuses a second serve first; the
	// store's own lock stays the offline tools' (oja wal …).
	log, err := wal.Open(storeDir(cfg.data), wal.Options{Sync: cfg.sync})
	if errors.Is(err, wal.ErrInUse) {
		fmt.Fprintf(os.Stderr, "oja serve: refused: %s is in use by another running oja (it holds the store's lock, %s).\n"+
			"Stop that one first, or give this one another --data.\n", cfg.data, filepath.Join(storeDir(cfg.data), "LOCK"))
		return nil, waltools.ExitInUse
	}
	return log, err
}

// recoverSystem recovers the state from the log, records the markets of
// the configuration if they changed, and starts the actors on it; the
// recovery's duration goes to recoveryTime (for /metrics).
func recoverSystem(cfg *serveConfig, log *wal.Log, logger *slog.Logger, srv *gateway.Server, recoveryTime *atomic.Int64) (*actors.System, error) {
	// Let the heap grow until serving (actors.RecoveryGCPercent).
	defer debug.SetGCPercent(debug.SetGCPercent(actors.RecoveryGCPercent))
	state, stats, err := actors.Recover(log, time.Now())
	recoveryTime.Store(int64(stats.Duration))
	if err != nil {
		return nil, fmt.Errorf("recovery: %w", err)
	}
	if len(stats.CorruptSnapshots) > 0 {
		logger.Warn("corrupt snapshots skipped: their checksum failed; recovered from an older one with a longer replay",
			"skipped_seqs", fmt.Sprint(stats.CorruptSnapshots), "started_from_seq", stats.Snapshot)
	}
	logger.Info("recovered", "events", stats.Events, "last_seq", stats.LastSeq,
		"expired", stats.Expired, "duration", stats.Duration.String())
	if changed, err := actors.RecordMarkets(state, log, cfg.markets, time.Now()); err != nil {
		return nil, err
	} else if changed {
		logger.Info("markets recorded", "pairs", state.Markets.PairsText())
	}
	return actors.Start(state, log, cfg.actorsConfig(logger, srv.RateChanged))
}

func serve(args []string) error {
	cfg, err := parseServe(args)
	if err != nil {
		return err
	}
	logger := newLogger(cfg.logFormat)
	startProfiler(logger)
	if !cfg.sync {
		logger.Warn("*** --sync=false: writes are NOT fsync'd; an acknowledged change can be lost on a crash. Benchmarks only. ***")
	}
	if err := os.MkdirAll(cfg.data, 0o750); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	unlock, err := lockDataDir(cfg.data)
	if err != nil {
		return err
	}
	defer unlock()
	if cfg.cluster != "" {
		return serveCluster(cfg, logger)
	}
	return serveSingle(cfg, logger)
}

// serveSingle is serve for a single node, its data dir locked: it opens
// the store and the history, listens, recovers, serves its one term until
// a signal and shuts down.
func serveSingle(cfg *serveConfig, logger *slog.Logger) error {
	token, err := adminToken(cfg.data)
	if err != nil {
		return err
	}
	log, err := openStore(cfg)
	if err != nil {
		return err
	}
	var recoveryTime atomic.Int64 // nanoseconds; read by /metrics
	var follower atomic.Pointer[actors.Follower]
	var srv *gateway.Server
	var sys *actors.System
	history, err := openHistory(cfg, logger)
	if err != nil {
		log.Close()
		return err
	}
	defer history.Close() // after the follower, which feeds it, has stopped
	// The dispatcher settles through the system; it delivers nothing
	// before the follower has fed and started it, which is after it exists.
	hooks := newDispatcher(cfg, logger, func() *actors.System { return sys })
	gw := cfg.gatewayConfig(logger, token, history)
	gw.Listen, gw.AdminListen = cfg.listen, cfg.adminListen
	gw.Backup = func(dir string, copy bool) error { return backup(log, cfg.data, dir, copy) }
	gw.Collectors = []prometheus.Collector{newWALCollector(log, &recoveryTime, &follower, cfg.data, cfg.snapshotEvery)}
	srv = gateway.New(gw)
	if err := srv.Start(); err != nil {
		log.Close()
		return err
	}
	logger.Info("listening; recovering before serving", "public", srv.Addr(), "admin", srv.AdminAddr(), "data", cfg.data)

	// abort ends a start that failed.
	abort := func() { shutdownQuietly(srv, log) }
	sys, err = recoverSystem(cfg, log, logger, srv, &recoveryTime)
	if err != nil {
		abort()
		return err
	}
	if cfg.demo {
		if err := seedDemo(sys, cfg.data, logger); err != nil {
			sys.Stop()
			abort()
			return fmt.Errorf("demo: %w", err)
		}
	}
	// A single node's one term: it ends at shutdown. Its chain watchers
	// credit deposits through its actors.
	term := actors.NewTerm(sys, hooks, nil).WithChains(chainwatch.Start(sys, sys.Markets(), cfg.markets.ChainWatch(), logger))
	srv.SetTerm(term)
	logger.Info("ready")
	// The follower builds a state of its own from the latest snapshot and
	// the log, once the system serves: built beside the recovery, it took
	// the second core from it and put off ready (ARCHITECTURE.md, "Reading
	// the log while serving"). Webhooks and the partners' event history wait for it
	// instead: the dispatcher starts once it has caught up. It must stop
	// before the log closes.
	stopFollower := startFollower(log, cfg, logger, &follower, hooks, history)
	var simulator *marketSimulator
	if cfg.demo {
		simulator = startMarketSimulator(sys, simulatorSeed, simulatorInterval, logger)
	}

	serveUntilSignal(logger, sys.Maintain, cfg.publicCert, cfg.adminCert)
	if simulator != nil {
		simulator.Stop()
	}
	return stopSingleNode(srv, term, stopFollower, log, logger)
}

// stopSingleNode is a single node's shutdown once a signal came.
func stopSingleNode(srv *gateway.Server, term *actors.Term, stopFollower func(), log *wal.Log, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	// Shutdown ends the rate streams first, then stops the listeners and
	// lets the requests in flight finish; then the term ends (the
	// dispatcher, then the actors) and the follower stops.
	if err := srv.Shutdown(ctx); err != nil {
		logger.Warn("shutdown: connections cut", "err", err)
	}
	term.End()
	stopFollower()
	if err := log.Close(); err != nil {
		return fmt.Errorf("closing log: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// serveUntilSignal runs maintain every maintenanceInterval until SIGTERM
// or SIGINT.
func serveUntilSignal(logger *slog.Logger, maintain func(), certs ...*listenerCert) {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(stop)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	ticker := time.NewTicker(maintenanceInterval)
	defer ticker.Stop()
	for {
		select {
		case sig := <-stop:
			logger.Info("shutting down", "signal", sig.String())
			return
		case <-hup:
			reloadCerts(logger, certs...)
		case <-ticker.C:
			maintain()
		}
	}
}

// startFollower runs the log follower (actors.Follower) that saves a
// snapshot every --snapshot-every events, applies --log-retention, feeds
// the event history and feeds the webhook dispatcher, on its own
// goroutine: it builds its own state from the log, so traffic is not
// paused. The system must serve already (settlements can be recorded):
// once the follower has caught up it starts the dispatcher and maintains.
// The returned func stops it and waits, before the log is closed.
func startFollower(log *wal.Log, cfg *serveConfig, logger *slog.Logger, current *atomic.Pointer[actors.Follower],
	hooks *webhook.Dispatcher, history *eventlog.Store) (stop func()) {
	if cfg.snapshotEvery == 0 && cfg.logRetention > 0 {
		logger.Warn("--snapshot-every 0: no snapshots are saved while serving, so --log-retention deletes nothing")
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		f, err := actors.NewFollower(log, actors.FollowerConfig{
			SnapshotEvery: cfg.snapshotEvery, Retention: cfg.logRetention, QuoteRetention: cfg.retention, Logger: logger, Stop: quit,
			Webhooks: hooks, Events: historySink(history),
		})
		if err == nil {
			current.Store(f)
			hooks.Start()
			err = f.Run()
		}
		if err != nil && !errors.Is(err, actors.ErrStopped) {
			logger.Error("log follower stopped: no snapshots and no new webhook events until restart; serving continues", "err", err)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			<-done
		})
	}
}

func shutdownQuietly(srv *gateway.Server, log *wal.Log) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx) // already failing; the first error is the one reported
	_ = log.Close()
}

// openHistory opens the partners' event history, <data>/events (derived
// from the log: see package eventlog).
func openHistory(cfg *serveConfig, logger *slog.Logger) (*eventlog.Store, error) {
	if !cfg.eventHistory {
		logger.Info("--event-history=false: the partners' event history is not kept; GET /api/v1/partners/events answers 503")
		return nil, nil
	}
	dir := filepath.Join(cfg.data, "events")
	h, err := eventlog.Open(dir, eventlog.Config{Logger: logger.With("component", "eventlog")})
	if err != nil {
		return nil, fmt.Errorf("%w\nThe partner event history is derived from the log: move %s aside and start again to rebuild it from the records the log keeps", err, dir)
	}
	return h, nil
}

// historySink and historyView are h as the follower and the gateway take
// it: a nil interface, not a nil pointer in one, when there is none.
func historySink(h *eventlog.Store) actors.EventSink {
	if h == nil {
		return nil
	}
	return h
}

func historyView(h *eventlog.Store) gateway.EventHistory {
	if h == nil {
		return nil
	}
	return h
}

// storeDir is where the Pebble store lives inside a data dir.
func storeDir(data string) string { return waltools.StoreDir(data) }

// adminToken returns OJA_ADMIN_TOKEN, else <data>/admin.token, creating it
// (mode 0600) on first start.
func adminToken(data string) (string, error) {
	if t, err := existingAdminToken(data); t != "" || err != nil {
		return t, err
	}
	path := filepath.Join(data, "admin.token")
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	t := "oja_admin_" + hex.EncodeToString(raw)
	if err := writeFileAtomic(path, []byte(t+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	return t, nil
}

// existingAdminToken returns OJA_ADMIN_TOKEN, else the token in
// <data>/admin.token, else "".
func existingAdminToken(data string) (string, error) {
	if t := os.Getenv("OJA_ADMIN_TOKEN"); t != "" {
		return t, nil
	}
	b, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("admin token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// writeFileAtomic writes path via a synced temporary file and a rename.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// backup makes a consistent online copy of the store into dir/store (its
// files its own unless copy is false: wal.Log.Backup), plus the admin
// token, so that `oja serve --data dir` serves it as is.
func backup(log *wal.Log, data, dir string, copy bool) error {
	if err := backupTarget(data, dir); err != nil {
		return err
	}
	if err := log.Backup(storeDir(dir), copy); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return backupSecrets(data, dir)
}

// clusterBackup is a cluster node's backup: its replica at its last
// applied (committed) record, written as a single node's data dir — a
// store whose snapshot is that state and which holds no record yet — which
// `oja serve --data DIR` serves and `oja wal verify` accepts. Every file is
// written anew (copy has nothing to link).
func clusterBackup(node *cluster.Node, data, dir string) error {
	if err := backupTarget(data, dir); err != nil {
		return err
	}
	seq, state, err := node.Backup()
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if seq == 0 {
		return &gateway.BackupRefusal{Reason: "this node has applied no record yet"}
	}
	if err := wal.Seed(storeDir(dir), seq, state, wal.Options{Sync: true}); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return backupSecrets(data, dir)
}

// backupTarget checks a backup directory (new, outside the data dir) and
// makes it.
func backupTarget(data, dir string) error {
	if dir == "" {
		return &gateway.BackupRefusal{Reason: "a backup directory is required"}
	}
	inside, err := pathcheck.Within(dir, data)
	if err != nil {
		return err
	}
	if inside {
		return &gateway.BackupRefusal{Reason: "must be outside the server's data directory"}
	}
	if _, err := os.Stat(storeDir(dir)); err == nil {
		return &gateway.BackupRefusal{Reason: "already holds a store; name a new directory"}
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}

// backupSecrets copies the admin token and the demo key, when the data dir
// has them, so the backup serves as the original did.
func backupSecrets(data, dir string) error {
	for _, name := range []string{"admin.token", "demo.key"} {
		if b, err := os.ReadFile(filepath.Join(data, name)); err == nil {
			if err := writeFileAtomic(filepath.Join(dir, name), b, 0o600); err != nil {
				return fmt.Errorf("backup: %w", err)
			}
		}
	}
	return nil
}

// actorsConfig is the actors' configuration from the flags, the same in
// both modes (a cluster node's leaders each start theirs with it).
func (cfg *serveConfig) actorsConfig(logger *slog.Logger, rates func(engine.BookKey, *engine.Ticker)) actors.Config {
	return actors.Config{
		QuoteTTL: cfg.quoteTTL, PaymentWindow: cfg.paymentWindow, Retention: cfg.retention,
		MaxOpenQuotes: cfg.maxOpenQuotes, MaxKeyShare: uint32(cfg.maxKeyShare), Logger: logger,
		Markets: cfg.markets, RateListener: rates,
	}
}

// gatewayConfig is the gateway's configuration from the flags, the same in
// both modes; the caller sets the listeners, the backup, its collectors
// and, for a cluster node, the cluster.
func (cfg *serveConfig) gatewayConfig(logger *slog.Logger, token string, history *eventlog.Store) gateway.Config {
	return gateway.Config{
		AdminToken: token, TLS: cfg.publicCert.config(), AdminTLS: cfg.adminCert.config(),
		RateLimit: cfg.rateLimit, Logger: logger, SSEHeartbeat: cfg.sseHeartbeat, AccessLog: cfg.accessLog,
		WebhookAllowPrivate: cfg.webhookAllowPrivate, Events: historyView(history),
	}
}
