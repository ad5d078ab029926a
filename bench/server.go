package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/gateway"
	"github.com/oja-exchange/oja/wal"
)

// target is a running Oja server on loopback that the HTTP section loads.
type target struct {
	addr string // public listener, 127.0.0.1:port
	key  string // a sandbox API key with NGN/USDT pools to trade on
	kind string // ServerBinary or ServerInProcess
	// profile writes a CPU profile of the server over the next d to path;
	// it returns at once and reports on the channel when done.
	profile func(d time.Duration, path string) <-chan error
	// commits returns the server's log figures (wal.Metrics): directly in
	// process, from the admin listener's /metrics for the binary.
	commits func() (wal.Metrics, error)
	stop    func() error
}

// Limits of the server the harness starts.
const (
	// buildMax bounds `go build ./cmd/oja`.
	buildMax = 5 * time.Minute
	// readyMax bounds the wait for /readyz.
	readyMax = 60 * time.Second
	// stopMax bounds a graceful stop before the server is killed.
	stopMax = 15 * time.Second
)

func (r *run) startTarget(ctx context.Context) (*target, error) {
	if r.cfg.Server == ServerInProcess {
		return r.startInProcess()
	}
	return r.startBinary(ctx)
}

// startBinary builds cmd/oja and runs
//
//	oja serve --demo --data DIR --listen 127.0.0.1:P --admin-listen 127.0.0.1:P+1
//	  --max-open-quotes 0 --max-key-share 1 --access-log=false --sync=true
//
// (one key drives all the load, so neither per-key cap may refuse it)
//
// with its profiler on a third loopback port when profiling.
func (r *run) startBinary(ctx context.Context) (*target, error) {
	if r.root == "" {
		return nil, errors.New("bench: the binary server needs the module root (run from the repository, or --server inprocess)")
	}
	dir, err := r.scratch("http")
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "oja")
	r.progress.set("http: building cmd/oja")
	buildCtx, cancel := context.WithTimeout(ctx, buildMax)
	defer cancel()
	build := exec.CommandContext(buildCtx, "go", "build", "-o", bin, "./cmd/oja")
	build.Dir = r.root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bench: go build ./cmd/oja: %w: %s", err, strings.TrimSpace(string(out)))
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	data := filepath.Join(dir, "data")
	cmd := exec.Command(bin, "serve", "--demo", "--data", data, "--listen", addr,
		"--admin-listen", fmt.Sprintf("127.0.0.1:%d", ports[1]), "--max-open-quotes", "0",
		"--max-key-share", "1", "--access-log=false", "--sync=true", "--log-format", "json")
	cmd.Env = append(os.Environ(), "OJA_ADMIN_TOKEN=")
	pprofAddr := ""
	if r.cfg.Profile {
		pprofAddr = fmt.Sprintf("127.0.0.1:%d", ports[2])
		cmd.Env = append(cmd.Env, "OJA_PPROF_LISTEN="+pprofAddr)
	}
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("bench: starting oja serve: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		var err error
		select {
		case err = <-exited:
		case <-time.After(stopMax):
			_ = cmd.Process.Kill()
			err = errors.Join(errors.New("bench: oja serve did not stop; killed"), <-exited)
		}
		return errors.Join(err, logFile.Close())
	}
	fail := func(err error) (*target, error) {
		_ = stop()
		tail, _ := os.ReadFile(logFile.Name())
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return nil, fmt.Errorf("%w; server log: %s", err, strings.TrimSpace(string(tail)))
	}
	if err := waitReady(ctx, "http://"+addr+"/readyz", exited); err != nil {
		return fail(err)
	}
	key, err := os.ReadFile(filepath.Join(data, "demo.key"))
	if err != nil {
		return fail(fmt.Errorf("bench: demo key: %w", err))
	}
	token, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		return fail(fmt.Errorf("bench: admin token: %w", err))
	}
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1])
	t := &target{addr: addr, key: strings.TrimSpace(string(key)), kind: ServerBinary, stop: stop,
		commits: func() (wal.Metrics, error) { return scrapeCommits(metricsURL, strings.TrimSpace(string(token))) }}
	t.profile = func(d time.Duration, path string) <-chan error {
		done := make(chan error, 1)
		if pprofAddr == "" {
			done <- errors.New("bench: profiler off")
			return done
		}
		go func() { done <- fetchProfile("http://"+pprofAddr+"/debug/pprof/profile", d, path) }()
		return done
	}
	return t, nil
}

// fetchProfile downloads a CPU profile of d from Go's profiler.
func fetchProfile(url string, d time.Duration, path string) error {
	seconds := max(int(d.Round(time.Second)/time.Second), 1)
	client := &http.Client{Timeout: time.Duration(seconds)*time.Second + 30*time.Second}
	resp, err := client.Get(fmt.Sprintf("%s?seconds=%d", url, seconds))
	if err != nil {
		return fmt.Errorf("bench: server profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("bench: server profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return errors.Join(err, f.Close())
}

// metricsMax bounds one scrape of /metrics.
const metricsMax = 5 * time.Second

// scrapeCommits reads the log's figures from `oja serve`'s /metrics
// (cmd/oja/metrics.go: oja_wal_commits_total, oja_wal_records_total and the
// oja_wal_commit_duration_seconds histogram).
func scrapeCommits(url, token string) (wal.Metrics, error) {
	var m wal.Metrics
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return m, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: metricsMax}).Do(req)
	if err != nil {
		return m, fmt.Errorf("bench: metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return m, fmt.Errorf("bench: metrics: %s %v", resp.Status, err)
	}
	var cumulative []uint64
	for line := range strings.Lines(string(body)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		switch {
		case name == "oja_wal_commits_total":
			m.Commits, _ = strconv.ParseUint(value, 10, 64)
		case name == "oja_wal_records_total":
			m.Records, _ = strconv.ParseUint(value, 10, 64)
		case name == "oja_wal_commit_duration_seconds_sum":
			m.CommitSeconds, _ = strconv.ParseFloat(value, 64)
		case strings.HasPrefix(name, "oja_wal_commit_duration_seconds_bucket"):
			n, _ := strconv.ParseUint(value, 10, 64)
			cumulative = append(cumulative, n)
		}
	}
	if len(cumulative) != len(m.CommitBuckets) {
		return m, fmt.Errorf("bench: metrics: %d commit buckets, want %d", len(cumulative), len(m.CommitBuckets))
	}
	var previous uint64
	for i, n := range cumulative {
		m.CommitBuckets[i], previous = n-previous, n
	}
	return m, nil
}

// waitReady polls url until it answers 200, the server exits, or readyMax.
func waitReady(ctx context.Context, url string, exited <-chan error) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(readyMax)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("bench: oja serve exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("bench: %s not ready within %s", url, readyMax)
}

// freePorts finds n loopback ports that are free now.
func freePorts(n int) ([]int, error) {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("bench: finding a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// startInProcess wires the gateway, the actors and a synced log inside this
// process, as `oja serve` does, and seeds the market through the actors.
func (r *run) startInProcess() (*target, error) {
	dir, err := r.scratch("http")
	if err != nil {
		return nil, err
	}
	l, err := wal.Open(filepath.Join(dir, "store"), wal.Options{Sync: true})
	if err != nil {
		return nil, err
	}
	state, _, err := actors.Recover(l, time.Now())
	if err != nil {
		return nil, errors.Join(err, l.Close())
	}
	srv := gateway.New(gateway.Config{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		AdminToken: "ojabench-admin-token-not-used"})
	cfg := actorsConfig()
	cfg.RateListener = srv.RateChanged
	sys, err := actors.Start(state, l, cfg)
	if err != nil {
		return nil, errors.Join(err, l.Close())
	}
	m := &market{log: l, sys: sys}
	if err := m.seed(); err != nil {
		return nil, errors.Join(err, m.stop())
	}
	if err := srv.Start(); err != nil {
		return nil, errors.Join(err, m.stop())
	}
	srv.SetTerm(actors.NewTerm(sys, nil, nil)) // m.stop stops sys
	stop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), stopMax)
		defer cancel()
		return errors.Join(srv.Shutdown(ctx), m.stop())
	}
	t := &target{addr: srv.Addr(), key: m.secret, kind: ServerInProcess, stop: stop,
		commits: func() (wal.Metrics, error) { return l.Metrics(), nil }}
	t.profile = func(d time.Duration, path string) <-chan error {
		done := make(chan error, 1)
		go func() {
			done <- r.profileCPU(strings.TrimSuffix(filepath.Base(path), ".pprof"), func() error {
				time.Sleep(d)
				return nil
			})
		}()
		return done
	}
	return t, nil
}
