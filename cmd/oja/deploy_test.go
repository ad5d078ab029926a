package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oja-exchange/oja/internal/poll"
	"github.com/oja-exchange/oja/internal/simchain"
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

// TestMetricsNamedAndExposed: every metric the Grafana dashboard
// (deploy/grafana/oja.json) and the alert rules name is one a real server
// exposes on /metrics — a single node's, or a cluster node's for the
// cluster's own — so no panel or alert silently watches nothing; and every
// oja_ metric a server exposes is named in docs/operating.md or
// docs/cluster.md, so an operator can find what each one is.
func TestMetricsNamedAndExposed(t *testing.T) {
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
	// A single node that watches a chain, so that the watchers' metrics
	// are exposed too.
	chain := simchain.Start(t, 6, big.NewInt(1_000_000))
	single, _ := demoServer(t, "--markets", chainMarkets(t, chain, 1))
	poll.Until(t, 10*time.Second, func() string {
		if !metricNames(mustDo(t, client, 200, "GET", single.adminURL()+"/metrics", crashAdminToken, nil).body)["oja_chain_head_block"] {
			return "no oja_chain_head_block on /metrics"
		}
		return ""
	})
	exposed := metricNames(mustDo(t, client, 200, "GET", single.adminURL()+"/metrics", crashAdminToken, nil).body)
	nodes := clusterNodes(t)
	cluster := poll.For(t, 10*time.Second, func() (map[string]bool, string) {
		cluster := metricNames(mustDo(t, client, 200, "GET", nodes[0].adminURL()+"/metrics", crashAdminToken, nil).body)
		if !cluster["oja_cluster_leader"] {
			return nil, "the cluster node's /metrics has no oja_cluster_leader yet"
		}
		return cluster, ""
	})
	for n := range cluster {
		exposed[n] = true
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

	docs := readDocs(t, "operating.md", "cluster.md")
	var undocumented []string
	for n := range exposed {
		base := n
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suffix); ok && exposed[b+"_bucket"] {
				base = b
			}
		}
		if strings.HasPrefix(base, "oja_") && !regexp.MustCompile(`\b`+base+`\b`).MatchString(docs) {
			undocumented = append(undocumented, base)
		}
	}
	slices.Sort(undocumented)
	if undocumented = slices.Compact(undocumented); len(undocumented) > 0 {
		t.Errorf("on /metrics but named in neither docs/operating.md nor docs/cluster.md: %v", undocumented)
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

// dockerInstruction is one instruction of a Dockerfile, continuation
// lines joined.
type dockerInstruction struct {
	op, args string
}

func parseDockerfile(t *testing.T, path string) []dockerInstruction {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []dockerInstruction
	var cur strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		op, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, dockerInstruction{strings.ToUpper(op), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// TestDockerfile: the image is multi-stage, builds a static binary, runs
// as a non-root user with its data on a volume, exposes both listeners
// and checks its health with oja probe on /livez; the flags of its CMD
// parse with the real binary, and the HEALTHCHECK's command answers 0 for
// a live server and 1 for one that is down or failing. The image itself
// is not built here: that pulls base images from a registry, and tests
// talk to loopback only (the README's docker build is the manual check).
func TestDockerfile(t *testing.T) {
	instructions := parseDockerfile(t, "../../Dockerfile")
	var froms int
	var final []dockerInstruction // the last stage's
	var buildRuns []string
	for _, in := range instructions {
		switch in.op {
		case "FROM":
			froms++
			final = final[:0]
		case "RUN":
			buildRuns = append(buildRuns, in.args)
		}
		final = append(final, in)
	}
	if froms < 2 {
		t.Errorf("the Dockerfile has %d stages, want a build stage and a runtime stage", froms)
	}
	if !slices.ContainsFunc(buildRuns, func(r string) bool {
		return strings.Contains(r, "CGO_ENABLED=0") && strings.Contains(r, "go build")
	}) {
		t.Error("no RUN builds with CGO_ENABLED=0")
	}
	get := func(op string) []string {
		var v []string
		for _, in := range final {
			if in.op == op {
				v = append(v, in.args)
			}
		}
		return v
	}
	execForm := func(op, s string) []string {
		var v []string
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("%s %s is not in exec form (a JSON array): %v", op, s, err)
		}
		return v
	}
	if u := get("USER"); len(u) != 1 || u[0] == "root" || strings.HasPrefix(u[0], "0") {
		t.Errorf("the runtime stage's USER is %q, want one non-root user", u)
	}
	if v := get("VOLUME"); len(v) != 1 || v[0] != "/var/lib/oja" {
		t.Errorf("VOLUME is %q, want /var/lib/oja", v)
	}
	exposed := strings.Fields(strings.Join(get("EXPOSE"), " "))
	entry, cmd := get("ENTRYPOINT"), get("CMD")
	if len(entry) != 1 || len(cmd) != 1 {
		t.Fatalf("want one ENTRYPOINT and one CMD in the runtime stage, got %q and %q", entry, cmd)
	}
	argv := append(execForm("ENTRYPOINT", entry[0]), execForm("CMD", cmd[0])...)
	if argv[0] != "/usr/local/bin/oja" || len(argv) < 2 || argv[1] != "serve" {
		t.Fatalf("the image runs %q, want /usr/local/bin/oja serve …", argv)
	}
	flagValue := func(name string) string {
		i := slices.Index(argv, name)
		if i < 0 || i+1 >= len(argv) {
			return ""
		}
		return argv[i+1]
	}
	if d := flagValue("--data"); d != "/var/lib/oja" {
		t.Errorf("serve --data is %q, want the volume /var/lib/oja", d)
	}
	for _, f := range []string{"--listen", "--admin-listen"} {
		_, port, ok := strings.Cut(flagValue(f), ":")
		if !ok || !slices.Contains(exposed, port) {
			t.Errorf("serve %s %q: its port is not EXPOSEd (%q)", f, flagValue(f), exposed)
		}
	}
	bin := ojaBinary(t)
	if _, stderr, code := runOja(t, bin, childEnv(), append(argv[1:], "--help")...); code != 0 {
		t.Errorf("oja %s --help: exit %d: %s", strings.Join(argv[1:], " "), code, stderr)
	}

	hc := get("HEALTHCHECK")
	if len(hc) != 1 {
		t.Fatalf("want one HEALTHCHECK, got %q", hc)
	}
	_, hcExec, ok := strings.Cut(hc[0], "CMD ")
	if !ok {
		t.Fatalf("HEALTHCHECK %q has no CMD", hc[0])
	}
	probeArgv := execForm("HEALTHCHECK CMD", hcExec)
	if len(probeArgv) < 3 || probeArgv[0] != "/usr/local/bin/oja" || probeArgv[1] != "probe" ||
		!strings.HasSuffix(probeArgv[len(probeArgv)-1], "/livez") {
		t.Fatalf("the HEALTHCHECK runs %q, want /usr/local/bin/oja probe … …/livez", probeArgv)
	}
	if _, port, _ := strings.Cut(strings.TrimPrefix(probeArgv[len(probeArgv)-1], "http://"), ":"); !strings.HasPrefix(port, strings.Split(flagValue("--listen"), ":")[1]+"/") {
		t.Errorf("the HEALTHCHECK probes %q, not the public listener %q", probeArgv[len(probeArgv)-1], flagValue("--listen"))
	}

	// The probe's verdicts: a live server, a failing one, none.
	srv := newOjaServer(t)
	srv.start()
	probeAt := func(url string) int {
		args := append(slices.Clone(probeArgv[1:len(probeArgv)-1]), url)
		_, _, code := runOja(t, bin, childEnv(), args...)
		return code
	}
	if code := probeAt(srv.publicURL() + "/livez"); code != 0 {
		t.Errorf("oja probe of a live server's /livez: exit %d, want 0", code)
	}
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	if code := probeAt(failing.URL + "/livez"); code != 1 {
		t.Errorf("oja probe of a server answering 503: exit %d, want 1", code)
	}
	if code := probeAt("http://" + freeAddr(t) + "/livez"); code != 1 {
		t.Errorf("oja probe of nothing listening: exit %d, want 1", code)
	}
	if _, _, code := runOja(t, bin, childEnv(), "probe", "ftp://example/livez"); code != 2 {
		t.Errorf("oja probe ftp://…: exit %d, want 2 (usage)", code)
	}
}
