package gateway

import (
	"bytes"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/fasthttp/router"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// metrics is the admin listener's /metrics, on client_golang: one registry
// holding the request counters and latency histograms, a collector that
// reads the actors' views at scrape time (systemCollector), and whatever
// the program adds (Config.Collectors: the log's figures in `oja serve`).
// client_golang renders the exposition format, one group per family, which
// `promtool check metrics` accepts (TestMetricsExposition).
//
// Every label comes from a closed set, so hostile traffic cannot create
// series: the listener (public, admin), the route template (never the raw
// path; "unmatched" for unknown routes and requests refused before
// routing), the method (the eight methods of RFC 9110 §9 and PATCH, else
// OTHER) and the status, which the server itself sets.
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// series caches each label set's counter and observer: the request path
	// then pays one map read instead of two label hashes.
	series sync.Map // routeKey → *routeSeries
}

type routeKey struct {
	listener, route, method string
	status                  int
}

type routeSeries struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

// latencyBucketsSeconds are the request latency histogram's upper bounds.
var latencyBucketsSeconds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5}

func newMetrics() *metrics {
	labels := []string{"listener", "route", "method", "status"}
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "oja_http_requests_total",
			Help: "HTTP requests by listener, route, method and status."}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "oja_http_request_duration_seconds",
			Help: "HTTP request latency.", Buckets: latencyBucketsSeconds}, labels),
	}
	m.registry.MustRegister(m.requests, m.duration,
		// The Go runtime (go_*: goroutines, GC, memory) and the process
		// (process_*: CPU, resident memory, open files), as every Go
		// service exports them, and which build is running.
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newBuildInfo())
	return m
}

// Build is the running binary's version, VCS revision (with "+modified"
// when built from a modified tree) and Go version, from its build
// information; "unknown" where it has none.
func Build() (version, revision, goVersion string) {
	version, revision, goVersion = "(devel)", "unknown", "unknown"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return version, revision, goVersion
	}
	if info.Main.Version != "" {
		version = info.Main.Version
	}
	goVersion = info.GoVersion
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified {
		revision += "+modified"
	}
	return version, revision, goVersion
}

// newBuildInfo is oja_build_info{version,revision,goversion} 1.
func newBuildInfo() prometheus.Collector {
	version, revision, goVersion := Build()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "oja_build_info",
		Help:        "The running build: always 1, with its version, VCS revision and Go version as labels.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion}})
	g.Set(1)
	return g
}

// methodLabel maps a request method to its label: a known method, else OTHER.
func methodLabel(method []byte) string {
	for _, known := range [...]string{"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE"} {
		if string(method) == known {
			return known
		}
	}
	return "OTHER"
}

func (m *metrics) observe(listener string, ctx *fasthttp.RequestCtx, took time.Duration) {
	route, _ := ctx.UserValue(router.MatchedRoutePathParam).(string)
	if route == "" {
		route = "unmatched"
	}
	key := routeKey{listener: listener, route: route, method: methodLabel(ctx.Method()), status: ctx.Response.StatusCode()}
	v, ok := m.series.Load(key)
	if !ok {
		status := strconv.Itoa(key.status)
		v, _ = m.series.LoadOrStore(key, &routeSeries{
			count:   m.requests.WithLabelValues(key.listener, key.route, key.method, status),
			latency: m.duration.WithLabelValues(key.listener, key.route, key.method, status),
		})
	}
	rs := v.(*routeSeries)
	rs.count.Inc()
	rs.latency.Observe(took.Seconds())
}

// writeMetrics renders every metric in the Prometheus text format.
func (s *Server) writeMetrics(ctx *fasthttp.RequestCtx) {
	families, err := s.metrics.registry.Gather()
	if err != nil {
		s.cfg.Logger.Error("metrics: gather", "err", err)
		s.writeError(ctx, errInternal)
		return
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			s.cfg.Logger.Error("metrics: encode", "err", err)
			s.writeError(ctx, errInternal)
			return
		}
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType(string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	ctx.SetBody(b.Bytes())
}

// systemCollector computes the engine's gauges from the actors' read views
// at scrape time, and the open rate streams.
type systemCollector struct {
	s                                     *Server
	mailbox, quotes, pools, held, balance *prometheus.Desc
	allocations, sseSubscribers           *prometheus.Desc
	ready, ledgerOK                       *prometheus.Desc

	// ledger caches the last ledger check per mode: a check reads every
	// wallet through its treasury, so a scrape runs it at most once per
	// ledgerCheckEvery.
	ledgerMu sync.Mutex
	ledgerAt time.Time
	ledger   [engine.ModeSandbox + 1]float64
}

// ledgerCheckEvery bounds how often /metrics runs the ledger check.
const ledgerCheckEvery = 30 * time.Second

func newSystemCollector(s *Server) *systemCollector {
	return &systemCollector{s: s,
		mailbox: prometheus.NewDesc("oja_actor_mailbox_depth",
			"Messages waiting in actor mailboxes, summed by kind of actor.", []string{"kind"}, nil),
		quotes: prometheus.NewDesc("oja_quotes", "Quotes held in memory, by mode and status.", []string{"mode", "status"}, nil),
		pools:  prometheus.NewDesc("oja_pools", "Liquidity pools, by mode.", []string{"mode"}, nil),
		held: prometheus.NewDesc("oja_liquidity_held", "Liquidity held for open quotes, in currency units.",
			[]string{"mode", "currency"}, nil),
		balance: prometheus.NewDesc("oja_liquidity_balance", "Pool liquidity balances, in currency units.",
			[]string{"mode", "currency"}, nil),
		allocations: prometheus.NewDesc("oja_pool_allocations_total",
			"Quotes completed per mode (pool slices settled).", []string{"mode"}, nil),
		sseSubscribers: prometheus.NewDesc("oja_sse_subscribers", "Open rate streams.", nil, nil),
		ready: prometheus.NewDesc("oja_ready",
			"1 while the service takes traffic (what /readyz answers 200 for), else 0.", nil, nil),
		ledgerOK: prometheus.NewDesc("oja_ledger_ok",
			"1 when the ledger check of the mode passes (every currency sums to zero, no account below its floor), else 0; run at most every 30 s.",
			[]string{"mode"}, nil),
	}
}

func (c *systemCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.mailbox, c.quotes, c.pools, c.held, c.balance, c.allocations, c.sseSubscribers,
		c.ready, c.ledgerOK} {
		ch <- d
	}
}

func (c *systemCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.sseSubscribers, prometheus.GaugeValue, float64(c.s.Streams()))
	ready := 0.0
	if c.s.isReady() {
		ready = 1
	}
	ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, ready)
	svc, ok := c.s.served()
	if !ok {
		return
	}
	c.collectSystem(ch, svc)
	c.collectLedger(ch, svc.money)
}

// collectLedger reports the ledger check of each mode (cached).
func (c *systemCollector) collectLedger(ch chan<- prometheus.Metric, money moneyService) {
	c.ledgerMu.Lock()
	defer c.ledgerMu.Unlock()
	if time.Since(c.ledgerAt) >= ledgerCheckEvery {
		for _, m := range engine.Modes {
			c.ledger[m] = 0
			if r, err := money.LedgerCheck(m); err == nil && r.OK {
				c.ledger[m] = 1
			}
		}
		c.ledgerAt = time.Now()
	}
	for _, m := range engine.Modes {
		ch <- prometheus.MustNewConstMetric(c.ledgerOK, prometheus.GaugeValue, c.ledger[m], m.String())
	}
}

// collectSystem reports the actors' mailboxes, the quotes by status and
// the pools' liquidity.
func (c *systemCollector) collectSystem(ch chan<- prometheus.Metric, svc services) {
	for i, depth := range svc.operators.MailboxDepths() {
		ch <- prometheus.MustNewConstMetric(c.mailbox, prometheus.GaugeValue, float64(depth), actors.ActorKinds[i])
	}
	counts := svc.quotes.QuoteCounts()
	for _, m := range engine.Modes {
		for _, st := range engine.Statuses {
			ch <- prometheus.MustNewConstMetric(c.quotes, prometheus.GaugeValue, float64(counts[m][st]), m.String(), st.String())
		}
	}
	for _, m := range engine.Modes {
		pools := svc.market.Pools(m)
		ch <- prometheus.MustNewConstMetric(c.pools, prometheus.GaugeValue, float64(len(pools)), m.String())
		var held, balance [engine.CurrenciesMax]engine.Amount
		var settled uint64
		for _, p := range pools {
			held[p.Pair.Destination] += p.Liquidity.Held
			balance[p.Pair.Destination] += p.Liquidity.Balance
			settled += p.Completed
		}
		for _, cur := range engine.KnownCurrencies() {
			h, _ := held[cur].Decimal(cur).Float64() // display only: never used for money
			v, _ := balance[cur].Decimal(cur).Float64()
			ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, h, m.String(), cur.String())
			ch <- prometheus.MustNewConstMetric(c.balance, prometheus.GaugeValue, v, m.String(), cur.String())
		}
		ch <- prometheus.MustNewConstMetric(c.allocations, prometheus.CounterValue, float64(settled), m.String())
	}
}
