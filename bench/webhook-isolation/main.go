// Command webhook-isolation measures whether one client's webhook backlog
// slows another's deliveries, over the real binary, the scenario of issue
// "One replica, one leadership term":
//
//   - client A has 7 endpoints subscribed to quote.created; --owed quotes
//     (10,000: an outbox each, full) are created while they all fail; then
//     2 of them come back and drain their backlog, the other 5 keep failing;
//   - the server is killed (-9) and started again on the same data;
//   - right after it is ready, client B (one endpoint that answers) creates
//     --quotes quotes, --every apart: from each create's 200 to its
//     quote.created delivery is B's delay (p50, p99, max);
//   - then, with nothing else to do but retry A's 5 failing endpoints, the
//     server's CPU (user+system, /proc) is sampled over --idle.
//
// It builds cmd/oja unless --oja names a binary, so two builds can be
// compared side by side:
//
//	go run -C bench ./webhook-isolation
//	go run -C bench ./webhook-isolation --oja /tmp/oja-old --owed 2000
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shopspring/decimal"

	ojaclient "github.com/oja-exchange/oja/client"
)

func main() {
	oja := flag.String("oja", "", "the oja binary (default: go build ./cmd/oja)")
	owed := flag.Int("owed", 10000, "quotes client A creates: events owed to each of its 7 endpoints")
	quotes := flag.Int("quotes", 300, "client B's quotes after the restart")
	every := flag.Duration("every", 10*time.Millisecond, "pause between two of B's creates")
	idle := flag.Duration("idle", 20*time.Second, "how long the idle CPU is sampled")
	retryMin := flag.Duration("retry-min", time.Second, "the server's --webhook-retry-min (A's failing endpoints retry from it)")
	flag.Parse()
	if err := run(*oja, *owed, *quotes, *every, *idle, *retryMin); err != nil {
		fmt.Fprintln(os.Stderr, "webhook-isolation:", err)
		os.Exit(1)
	}
}

// receiver is a webhook endpoint on 127.0.0.1 that answers 503 while
// failing, else 204, and notes when each quote's first event arrived.
type receiver struct {
	url     string
	failing atomic.Bool
	hits    atomic.Int64
	mu      sync.Mutex
	arrived map[string]time.Time
	srv     *http.Server
}

func newReceiver(failing bool) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String() + "/oja", arrived: map[string]time.Time{}}
	r.failing.Store(failing)
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		at := time.Now()
		r.hits.Add(1)
		if r.failing.Load() {
			_, _ = io.Copy(io.Discard, req.Body)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var ev struct {
			Data struct {
				Quote struct {
					QuoteID string `json:"quoteId"`
				} `json:"quote"`
			} `json:"data"`
		}
		if json.NewDecoder(req.Body).Decode(&ev) == nil {
			r.mu.Lock()
			if _, seen := r.arrived[ev.Data.Quote.QuoteID]; !seen {
				r.arrived[ev.Data.Quote.QuoteID] = at
			}
			r.mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// server is a running `oja serve`.
type server struct {
	bin, data, public, admin, token string
	cmd                             *exec.Cmd
	retryMin                        time.Duration
}

func (s *server) start() error {
	s.cmd = exec.Command(s.bin, "serve", "--demo", "--data", s.data, "--listen", s.public, "--admin-listen", s.admin,
		"--webhook-allow-private", "--webhook-retry-min", s.retryMin.String(), "--max-key-share", "1", "--log-format", "json")
	s.cmd.Env = append(os.Environ(), "OJA_ADMIN_TOKEN="+s.token)
	log, err := os.OpenFile(filepath.Join(s.data, "..", "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + s.public + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("the server did not get ready in 60 s (see server.log)")
}

func (s *server) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	_ = s.cmd.Wait()
}

// cpu is the process's user+system time so far.
func (s *server) cpu() (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may hold spaces): state is
	// field 3; utime and stime are fields 14 and 15.
	rest := string(raw[bytes.LastIndexByte(raw, ')')+2:])
	f := strings.Fields(rest)
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks, nil
}

// quoteRequest is every create of the run: 16,000 NGN to USDT.
var quoteRequest = ojaclient.CreateQuoteRequest{SourceCurrency: "NGN", DestinationCurrency: "USDT",
	Amount: decimal.NewFromInt(16000), Rate: decimal.RequireFromString("0.0006"), AmountDirection: ojaclient.DirectionSource}

// createAndCancel creates one quote and cancels it (its reservation freed
// for the next), returning the quote's id.
func createAndCancel(ctx context.Context, c *ojaclient.Client) (string, error) {
	q, err := c.CreateQuote(ctx, quoteRequest)
	if err != nil {
		return "", err
	}
	_, err = c.CancelQuote(ctx, q.QuoteID)
	return q.QuoteID, err
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func run(bin string, owed, quotes int, every, idle, retryMin time.Duration) error {
	work, err := os.MkdirTemp("", "oja-webhook-isolation-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if bin == "" {
		bin = filepath.Join(work, "oja")
		build := exec.Command("go", "build", "-o", bin, "github.com/oja-exchange/oja/cmd/oja")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build github.com/oja-exchange/oja/cmd/oja: %w", err)
		}
	}
	public, err1 := freeAddr()
	admin, err2 := freeAddr()
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	srv := &server{bin: bin, data: filepath.Join(work, "data"), public: public, admin: admin,
		token: "oja_admin_isolation_bench", retryMin: retryMin}
	if err := os.MkdirAll(srv.data, 0o750); err != nil {
		return err
	}
	if err := srv.start(); err != nil {
		return err
	}
	defer srv.kill()
	httpc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	keyA, err := os.ReadFile(filepath.Join(srv.data, "demo.key"))
	if err != nil {
		return err
	}
	a, err1 := ojaclient.New("http://"+public, strings.TrimSpace(string(keyA)), ojaclient.WithHTTPClient(httpc))
	op, err2 := ojaclient.NewAdmin("http://"+admin, srv.token, ojaclient.WithHTTPClient(httpc))
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	r := &isolation{ctx: context.Background(), srv: srv, op: op, httpc: httpc}
	defer r.close()
	if err := r.fillA(a, owed); err != nil {
		return err
	}
	if err := r.drainTwo(owed); err != nil {
		return err
	}
	if err := r.clientBAfterRestart(quotes, every); err != nil {
		return err
	}
	return r.idleCPU(owed, idle)
}

// isolation is one run: the server, its operator, and the endpoints of
// clients A and B.
type isolation struct {
	ctx    context.Context
	srv    *server
	op     *ojaclient.Admin
	httpc  *http.Client
	hooksA []*receiver
	hookB  *receiver
}

var hookEvents = []string{"quote.created"}

func (r *isolation) close() {
	for _, h := range append(r.hooksA, r.hookB) {
		if h != nil {
			_ = h.srv.Close()
		}
	}
}

// fillA gives client A 7 endpoints, all failing, and creates owed quotes
// (8 at a time): each endpoint is owed owed events.
func (r *isolation) fillA(a *ojaclient.Client, owed int) error {
	for range 7 {
		h, err := newReceiver(true)
		if err != nil {
			return err
		}
		r.hooksA = append(r.hooksA, h)
		if _, err := a.CreateWebhook(r.ctx, h.url, hookEvents); err != nil {
			return err
		}
	}
	began := time.Now()
	var failed atomic.Value
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(owed) {
				if _, err := createAndCancel(r.ctx, a); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	fmt.Printf("client A: %d quotes in %v; 7 endpoints owed %d events each\n", owed, time.Since(began).Round(time.Millisecond), owed)
	return nil
}

// drainTwo brings two of A's endpoints back and waits until they owe
// nothing.
func (r *isolation) drainTwo(owed int) error {
	clientA, err := demoClient(r.ctx, r.op)
	if err != nil {
		return err
	}
	r.hooksA[0].failing.Store(false)
	r.hooksA[1].failing.Store(false)
	began := time.Now()
	for {
		drained, err := owedTo(r.ctx, r.op, clientA, r.hooksA[0].url, r.hooksA[1].url)
		if err != nil {
			return err
		}
		if drained {
			break
		}
		if time.Since(began) > 10*time.Minute {
			return errors.New("two endpoints did not drain in 10 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("2 endpoints drained their %d events in %v; 5 keep failing\n", owed, time.Since(began).Round(time.Millisecond))
	return nil
}

// clientBAfterRestart creates client B with one working endpoint, kills
// the server (-9) and restarts it, then has B create quotes (every
// apart) and measures each one's delivery while A's backlog is retried.
func (r *isolation) clientBAfterRestart(quotes int, every time.Duration) error {
	cb, err := r.op.CreateClient(r.ctx, "isolation-b")
	if err != nil {
		return err
	}
	kb, err := r.op.CreateKey(r.ctx, cb.ClientID, ojaclient.ModeSandbox)
	if err != nil {
		return err
	}
	b, err := ojaclient.New("http://"+r.srv.public, kb.Key, ojaclient.WithHTTPClient(r.httpc))
	if err != nil {
		return err
	}
	if r.hookB, err = newReceiver(false); err != nil {
		return err
	}
	if _, err := b.CreateWebhook(r.ctx, r.hookB.url, hookEvents); err != nil {
		return err
	}
	r.srv.kill()
	began := time.Now()
	if err := r.srv.start(); err != nil {
		return err
	}
	fmt.Printf("killed (-9) and restarted: ready in %v\n", time.Since(began).Round(time.Millisecond))

	acked := make(map[string]time.Time, quotes)
	for range quotes {
		q, err := b.CreateQuote(r.ctx, quoteRequest)
		if err != nil {
			return err
		}
		acked[q.QuoteID] = time.Now()
		if _, err := b.CancelQuote(r.ctx, q.QuoteID); err != nil {
			return err
		}
		time.Sleep(every)
	}
	var delays []time.Duration
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r.hookB.mu.Lock()
		delays = delays[:0]
		for id, at := range acked {
			if got, ok := r.hookB.arrived[id]; ok {
				delays = append(delays, got.Sub(at))
			}
		}
		r.hookB.mu.Unlock()
		if len(delays) == len(acked) || time.Now().After(deadline) {
			break
		}
	}
	if len(delays) < len(acked) {
		return fmt.Errorf("client B: %d of %d events delivered in 60 s", len(delays), len(acked))
	}
	slices.Sort(delays)
	pct := func(p int) time.Duration {
		return delays[min(len(delays)*p/100, len(delays)-1)].Round(100 * time.Microsecond)
	}
	fmt.Printf("client B right after the restart: %d events, delivery delay p50 %v  p99 %v  max %v\n",
		len(delays), pct(50), pct(99), delays[len(delays)-1].Round(100*time.Microsecond))
	return nil
}

// idleCPU samples the server's CPU for idle while it retries A's 5
// failing endpoints.
func (r *isolation) idleCPU(owed int, idle time.Duration) error {
	failingHits := func() (n int64) {
		for _, h := range r.hooksA[2:] {
			n += h.hits.Load()
		}
		return n
	}
	cpu0, err := r.srv.cpu()
	if err != nil {
		return err
	}
	hits0, t0 := failingHits(), time.Now()
	time.Sleep(idle)
	cpu1, err := r.srv.cpu()
	if err != nil {
		return err
	}
	wall := time.Since(t0)
	fmt.Printf("idle while retrying 5 failing endpoints (%d owed each, --webhook-retry-min %v): CPU %.1f%% of one core over %v, %d attempts\n",
		owed, r.srv.retryMin, 100*float64(cpu1-cpu0)/float64(wall), wall.Round(time.Second), failingHits()-hits0)
	return nil
}

// demoClient is the demo client's id.
func demoClient(ctx context.Context, op *ojaclient.Admin) (string, error) {
	page, err := op.ListClients(ctx, 0, "")
	if err != nil {
		return "", err
	}
	for _, c := range page.Data {
		if strings.Contains(strings.ToLower(c.Name), "demo") {
			return c.ClientID, nil
		}
	}
	return "", fmt.Errorf("no demo client among %d", len(page.Data))
}

// owedTo reports whether the endpoints at urls owe nothing.
func owedTo(ctx context.Context, op *ojaclient.Admin, client string, urls ...string) (bool, error) {
	hooks, err := op.ClientWebhooks(ctx, client)
	if err != nil {
		return false, err
	}
	for _, h := range hooks {
		if slices.Contains(urls, h.URL) && h.Backlog != nil && h.Backlog.Owed != 0 {
			return false, nil
		}
	}
	return true, nil
}
