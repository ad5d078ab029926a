package gateway

import (
	"math"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// metrics holds the gateway's own counters, exposed at /metrics on the
// admin listener in the Prometheus text format. It is dependency-free: a
// handful of counters and fixed-bucket histograms updated with atomics on
// the request path, and gauges computed from the actors' read views at
// scrape time.
type metrics struct {
	mu     sync.RWMutex
	routes map[routeKey]*routeStats
}

type routeKey struct {
	listener string
	route    string
	method   string
	status   int
}

// latencyBucketsSeconds are the request latency histogram's upper bounds.
var latencyBucketsSeconds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5}

type routeStats struct {
	count   atomic.Uint64
	sumNano atomic.Uint64
	buckets [14]atomic.Uint64 // len(latencyBucketsSeconds) + the +Inf bucket
}

// routeKeysMax bounds the distinct (listener, route, method, status)
// series, so hostile traffic cannot grow the map without bound (unknown
// routes all count as route "unmatched").
const routeKeysMax = 2048

func newMetrics() *metrics { return &metrics{routes: make(map[routeKey]*routeStats)} }

func (m *metrics) observe(listener string, ctx *fasthttp.RequestCtx, took time.Duration) {
	route, _ := ctx.UserValue(router.MatchedRoutePathParam).(string)
	if route == "" {
		route = "unmatched"
	}
	key := routeKey{listener: listener, route: route, method: string(ctx.Method()), status: ctx.Response.StatusCode()}
	m.mu.RLock()
	st, ok := m.routes[key]
	m.mu.RUnlock()
	if !ok {
		m.mu.Lock()
		if st, ok = m.routes[key]; !ok {
			if len(m.routes) >= routeKeysMax {
				m.mu.Unlock()
				return
			}
			st = &routeStats{}
			m.routes[key] = st
		}
		m.mu.Unlock()
	}
	st.count.Add(1)
	st.sumNano.Add(uint64(took))
	seconds := took.Seconds()
	i := sort.SearchFloat64s(latencyBucketsSeconds, seconds)
	st.buckets[i].Add(1)
}

// writeMetrics renders every metric.
func (s *Server) writeMetrics(ctx *fasthttp.RequestCtx) {
	b := make([]byte, 0, 16<<10)
	b = append(b, "# HELP oja_http_requests_total HTTP requests by listener, route, method and status.\n# TYPE oja_http_requests_total counter\n"...)
	s.metrics.mu.RLock()
	keys := make([]routeKey, 0, len(s.metrics.routes))
	for k := range s.metrics.routes {
		keys = append(keys, k)
	}
	s.metrics.mu.RUnlock()
	sort.Slice(keys, func(i, j int) bool {
		a, c := keys[i], keys[j]
		if a.listener != c.listener {
			return a.listener < c.listener
		}
		if a.route != c.route {
			return a.route < c.route
		}
		if a.method != c.method {
			return a.method < c.method
		}
		return a.status < c.status
	})
	label := func(b []byte, k routeKey) []byte {
		b = append(b, `listener="`...)
		b = append(b, k.listener...)
		b = append(b, `",route="`...)
		b = append(b, k.route...)
		b = append(b, `",method="`...)
		b = append(b, k.method...)
		b = append(b, `",status="`...)
		b = strconv.AppendInt(b, int64(k.status), 10)
		return append(b, '"')
	}
	s.metrics.mu.RLock()
	stats := make([]*routeStats, len(keys))
	for i, k := range keys {
		stats[i] = s.metrics.routes[k]
	}
	s.metrics.mu.RUnlock()
	for i, k := range keys {
		b = append(b, "oja_http_requests_total{"...)
		b = label(b, k)
		b = append(b, "} "...)
		b = strconv.AppendUint(b, stats[i].count.Load(), 10)
		b = append(b, '\n')
	}
	b = append(b, "# HELP oja_http_request_duration_seconds HTTP request latency.\n# TYPE oja_http_request_duration_seconds histogram\n"...)
	for i, k := range keys {
		st := stats[i]
		var cumulative uint64
		for j := range st.buckets {
			cumulative += st.buckets[j].Load()
			b = append(b, "oja_http_request_duration_seconds_bucket{"...)
			b = label(b, k)
			b = append(b, `,le="`...)
			if j < len(latencyBucketsSeconds) {
				b = strconv.AppendFloat(b, latencyBucketsSeconds[j], 'g', -1, 64)
			} else {
				b = append(b, "+Inf"...)
			}
			b = append(b, `"} `...)
			b = strconv.AppendUint(b, cumulative, 10)
			b = append(b, '\n')
		}
		b = append(b, "oja_http_request_duration_seconds_sum{"...)
		b = label(b, k)
		b = append(b, "} "...)
		b = strconv.AppendFloat(b, float64(st.sumNano.Load())/1e9, 'g', -1, 64)
		b = append(b, "\noja_http_request_duration_seconds_count{"...)
		b = label(b, k)
		b = append(b, "} "...)
		b = strconv.AppendUint(b, st.count.Load(), 10)
		b = append(b, '\n')
	}
	if sys := s.sys.Load(); sys != nil {
		b = appendEngineMetrics(b, sys)
	}
	b = append(b, "# HELP oja_sse_subscribers Open rate streams.\n# TYPE oja_sse_subscribers gauge\n"...)
	b = gaugeLine(b, "oja_sse_subscribers", "", float64(s.Streams()))
	if s.cfg.ExtraMetrics != nil {
		b = s.cfg.ExtraMetrics(b)
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("text/plain; version=0.0.4; charset=utf-8")
	ctx.SetBody(b)
}

// gaugeLine appends one gauge sample.
func gaugeLine(b []byte, name, labels string, v float64) []byte {
	b = append(b, name...)
	if labels != "" {
		b = append(b, '{')
		b = append(b, labels...)
		b = append(b, '}')
	}
	b = append(b, ' ')
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		b = strconv.AppendInt(b, int64(v), 10)
	} else {
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return append(b, '\n')
}

// systemView is what the metrics need of the actors.
type systemView interface {
	QuoteCounts() map[engine.Mode]map[engine.Status]int
	Pools(engine.Mode) []*engine.Pool
	MailboxDepths() [5]int64
}

func appendEngineMetrics(b []byte, sys systemView) []byte {
	b = append(b, "# HELP oja_actor_mailbox_depth Messages waiting in actor mailboxes, summed by kind of actor.\n# TYPE oja_actor_mailbox_depth gauge\n"...)
	for i, depth := range sys.MailboxDepths() {
		b = gaugeLine(b, "oja_actor_mailbox_depth", `kind="`+actors.ActorKinds[i]+`"`, float64(depth))
	}
	b = append(b, "# HELP oja_quotes Quotes held in memory, by mode and status.\n# TYPE oja_quotes gauge\n"...)
	counts := sys.QuoteCounts()
	for _, m := range engine.Modes {
		for _, st := range engine.Statuses {
			b = gaugeLine(b, "oja_quotes", `mode="`+m.String()+`",status="`+st.String()+`"`, float64(counts[m][st]))
		}
	}
	b = append(b, "# HELP oja_pools Liquidity pools, by mode.\n# TYPE oja_pools gauge\n"...)
	b = append(b, "# HELP oja_liquidity_held Liquidity held for open quotes, in currency units.\n# TYPE oja_liquidity_held gauge\n"...)
	b = append(b, "# HELP oja_liquidity_balance Pool liquidity balances, in currency units.\n# TYPE oja_liquidity_balance gauge\n"...)
	b = append(b, "# HELP oja_pool_allocations_total Quotes completed per mode (pool slices settled).\n# TYPE oja_pool_allocations_total counter\n"...)
	for _, m := range engine.Modes {
		pools := sys.Pools(m)
		b = gaugeLine(b, "oja_pools", `mode="`+m.String()+`"`, float64(len(pools)))
		var held, balance [8]engine.Amount
		var settled uint64
		for _, p := range pools {
			held[p.Pair.Destination] += p.Liquidity.Held
			balance[p.Pair.Destination] += p.Liquidity.Balance
			settled += p.Completed
		}
		for _, c := range engine.Currencies {
			labels := `mode="` + m.String() + `",currency="` + c.String() + `"`
			h, _ := held[c].Decimal(c).Float64() // display only: never used for money
			v, _ := balance[c].Decimal(c).Float64()
			b = gaugeLine(b, "oja_liquidity_held", labels, h)
			b = gaugeLine(b, "oja_liquidity_balance", labels, v)
		}
		b = gaugeLine(b, "oja_pool_allocations_total", `mode="`+m.String()+`"`, float64(settled))
	}
	return b
}
