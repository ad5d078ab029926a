package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
	"github.com/oja-exchange/oja/gateway/webhook"
)

func scrape(t *testing.T, s *gatewaytest.Server) []byte {
	t.Helper()
	r := do(t, http.MethodGet, s.Admin+"/metrics", gatewaytest.AdminToken, nil)
	wantStatus(t, r, http.StatusOK)
	return r.body
}

// checkExposition parses a scrape strictly and checks that each family's
// samples form one group (the exposition format's rule that a strict
// parser enforces), and runs `promtool check metrics` on it when promtool
// (Debian package prometheus) is installed.
func checkExposition(t *testing.T, body []byte) int {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v\n%.2000s", err, body)
	}
	seen, last, series := map[string]bool{}, "", 0
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base := strings.TrimSuffix(name, suffix); base != name && families[base] != nil {
				name = base
			}
		}
		if name != last && seen[name] {
			t.Errorf("samples of %s are not in one group", name)
		}
		seen[name], last = true, name
		series++
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	} else {
		t.Log("promtool not installed (Debian package prometheus): checked with the Go parser only")
	}
	return series
}

// /metrics is well-formed Prometheus text with every family in one group,
// and keeps its names.
func TestMetricsExposition(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{Webhooks: webhook.New(webhook.Config{})})
	p := s.NewPartner(t, "partner")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	newPool(t, s, engine.ModeLive, gatewaytest.NGNGHS, "accra", "0.0085", "1000")
	mustCreateQuote(t, s, p.SandboxKey, quoteRequest("NGN", "USDT", "1000", "0.0006", "source"))
	body := scrape(t, s)
	checkExposition(t, body)
	for _, name := range []string{"oja_http_requests_total", "oja_http_request_duration_seconds_bucket", "oja_quotes",
		"oja_pools", "oja_liquidity_held", "oja_liquidity_balance", "oja_pool_allocations_total",
		"oja_actor_mailbox_depth", "oja_sse_subscribers", "oja_webhook_deliveries_total", "oja_webhook_events_dropped_total",
		"oja_webhook_backlog_events", "oja_webhook_endpoints",
		// The Go runtime, the process and the build.
		"go_goroutines", "go_memstats_heap_alloc_bytes", "go_gc_duration_seconds", "process_resident_memory_bytes",
		"process_cpu_seconds_total", "process_open_fds", "oja_build_info"} {
		if !bytes.Contains(body, []byte("\n"+name)) {
			t.Errorf("metric %s missing", name)
		}
	}
	version, revision, goVersion := gateway.Build()
	if want := fmt.Sprintf(`oja_build_info{goversion=%q,revision=%q,version=%q} 1`, goVersion, revision, version); !bytes.Contains(body, []byte(want)) {
		t.Errorf("no %s", want)
	}
	if !bytes.Contains(body, []byte(`route="/api/v1/partners/marketplace/intent"`)) {
		t.Errorf("the create route is not labelled by its template")
	}
}

// Junk methods and paths, unauthenticated, used to become
// label values (2,100 requests made every scrape 278 MB). Every label now
// comes from a closed set: the flood adds no series and the scrape stays
// small.
func TestMetricsLabelsClosed(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	addr := strings.TrimPrefix(s.URL, "http://")
	junk := func(i int) string {
		return "X" + strings.Repeat(string(rune('A'+i%26)), 200) + strings.Repeat("Q", i%50)
	}
	flood := func(from, to int) {
		for i := from; i < to; i++ {
			raw := junk(i) + " /nowhere/" + junk(i) + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
			exchangeRaw(t, addr, []byte(raw))
		}
	}
	flood(0, 30)
	scrape(t, s) // the scrape's own series exists from the next scrape on
	before := checkExposition(t, scrape(t, s))
	flood(30, 300)
	body := scrape(t, s)
	after := checkExposition(t, body)
	if after != before {
		t.Errorf("the flood grew the series from %d to %d", before, after)
	}
	if len(body) > 64<<10 {
		t.Errorf("scrape of %d bytes after the flood", len(body))
	}
	if bytes.Contains(body, []byte("XAAAA")) || bytes.Contains(body, []byte("/nowhere")) {
		t.Errorf("a raw method or path became a label value")
	}
	if !bytes.Contains(body, []byte(`method="OTHER"`)) || !bytes.Contains(body, []byte(`route="unmatched"`)) {
		t.Errorf("junk requests are not counted as method OTHER on route unmatched")
	}
}
