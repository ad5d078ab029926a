package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// needPromtool returns promtool's path; without it the test is skipped,
// except in CI, which installs it (make test's promtool target).
func needPromtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is missing in CI: make test installs it (Debian package prometheus)")
		}
		t.Skip("promtool not installed (Debian package prometheus): the alert rules are not tested here")
	}
	return path
}

// TestAlertRules: deploy/prometheus/oja-rules.yml is valid, and its unit
// tests (every alert fires on what it watches, healthy series stay quiet)
// pass.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	promtool := needPromtool(t)
	for _, args := range [][]string{{"check", "rules", "oja-rules.yml"}, {"test", "rules", "oja-rules.test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "../../deploy/prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// metricNames are the metric names of a Prometheus text exposition.
func metricNames(body []byte) map[string]bool {
	names := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}

// TestDashboardAndRulesNameExposedMetrics: every metric the Grafana
// dashboard (deploy/grafana/oja.json) and the alert rules name is one a
// real server exposes on /metrics — a single node's, or a cluster node's
// for the cluster's own — so no panel or alert silently watches nothing.
func TestDashboardAndRulesNameExposedMetrics(t *testing.T) {
	t.Parallel()
	dashboard, err := os.ReadFile("../../deploy/grafana/oja.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(dashboard, &d); err != nil {
		t.Fatalf("deploy/grafana/oja.json: %v", err)
	}
	rules, err := os.ReadFile("../../deploy/prometheus/oja-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	exprs = append(exprs, string(rules))
	metric := regexp.MustCompile(`\b(?:oja|go|process)_[a-z0-9_]+\b`)
	named := map[string]bool{}
	for _, e := range exprs {
		for _, m := range metric.FindAllString(e, -1) {
			named[m] = true
		}
	}
	if len(named) < 20 {
		t.Fatalf("the dashboard and rules name only %d metrics: the extraction is broken", len(named))
	}

	client := newHTTPClient()
	defer client.CloseIdleConnections()
	single, _ := demoServer(t)
	exposed := metricNames(mustDo(t, client, 200, "GET", single.adminURL()+"/metrics", crashAdminToken, nil).body)
	nodes := clusterNodes(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		body := mustDo(t, client, 200, "GET", nodes[0].adminURL()+"/metrics", crashAdminToken, nil).body
		cluster := metricNames(body)
		if cluster["oja_cluster_leader"] || time.Now().After(deadline) {
			for n := range cluster {
				exposed[n] = true
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var missing []string
	for n := range named {
		if !exposed[n] {
			missing = append(missing, n)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("named by the dashboard or the rules but not on /metrics: %v", missing)
	}
}

// TestSystemdUnit: deploy/systemd/oja.service passes systemd-analyze
// verify (skipped where systemd is not installed), with ExecStart pointing
// at a real oja binary, and the flags its ExecStart passes parse.
func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	unit, err := os.ReadFile("../../deploy/systemd/oja.service")
	if err != nil {
		t.Fatal(err)
	}
	bin := ojaBinary(t)
	exec0 := regexp.MustCompile(`(?m)^ExecStart=/usr/local/bin/oja (.*)$`).FindSubmatch(unit)
	if exec0 == nil {
		t.Fatal("no ExecStart=/usr/local/bin/oja in the unit")
	}
	// The unit's flags are oja serve's: --help after them parses them all
	// and acts on none.
	args := append(strings.Fields(string(exec0[1])), "--help")
	if _, stderr, code := runOja(t, bin, childEnv(), args...); code != 0 {
		t.Errorf("oja %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: the unit is not verified here")
	}
	path := filepath.Join(t.TempDir(), "oja.service")
	if err := os.WriteFile(path, bytes.ReplaceAll(unit, []byte("/usr/local/bin/oja"), []byte(bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("oja.service")) {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
