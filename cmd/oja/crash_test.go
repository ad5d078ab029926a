package main

// Process-level crash test (spec §4, §11–§13): the real `oja` binary is
// driven with concurrent partner and operator traffic, killed with SIGKILL
// at a random moment, restarted on the same data dir, and every
// acknowledged (2xx) change must have survived while nothing that was not
// acknowledged may have half-happened. The test ends with a graceful
// SIGTERM stop and the offline `oja wal` tools on the same data dir.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// crashAdminToken is OJA_ADMIN_TOKEN of every server the tests start.
const crashAdminToken = "oja_admin_crash_test_0123456789abcdef"

const (
	readyTimeout    = 15 * time.Second // wait for /readyz after a start
	stopTimeout     = 10 * time.Second // spec §13: SIGTERM exits within 10 s
	requestTimeout  = 5 * time.Second  // one HTTP request of the test
	crashRounds     = 3                // kill -9 / restart cycles
	roundsBudget    = 25 * time.Second // no new round starts after this much time
	loadDuration    = 2500 * time.Millisecond
	killEarliest    = 300 * time.Millisecond
	killWindow      = 1200 * time.Millisecond
	loadWorkers     = 6
	quotesPerRound  = 4000 // bound on new quotes per round
	depositsPerLoad = 40   // bound on admin deposits per round
)

// ---- The binary ---------------------------------------------------------------

var ojaBuild struct {
	once sync.Once
	dir  string
	path string
	out  []byte
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if ojaBuild.dir != "" {
		os.RemoveAll(ojaBuild.dir)
	}
	os.Exit(code)
}

// ojaBinary builds ./cmd/oja once per test binary (without -race: the child
// only has to be the real program) and returns its path.
func ojaBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the oja binary; skipped with -short")
	}
	ojaBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "oja-test-bin-")
		if err != nil {
			ojaBuild.err = err
			return
		}
		ojaBuild.dir = dir
		goTool, err := exec.LookPath("go")
		if err != nil {
			//lint:ignore SA1019 a fallback only: go test puts GOROOT/bin on the test's PATH
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		ojaBuild.path = filepath.Join(dir, "oja")
		ojaBuild.out, ojaBuild.err = exec.CommandContext(ctx, goTool, "build", "-o", ojaBuild.path, ".").CombinedOutput()
	})
	if ojaBuild.err != nil {
		t.Fatalf("go build: %v\n%s", ojaBuild.err, ojaBuild.out)
	}
	return ojaBuild.path
}

// childEnv is the test's environment without any OJA_* variable (an
// inherited OJA_SYNC=false would void the test), plus extra.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OJA_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// runOja runs an offline `oja` command with a bounded time and returns its
// stdout, stderr and exit code.
func runOja(t *testing.T, bin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("oja %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("oja %s: timed out", strings.Join(args, " "))
	}
	return out.String(), errOut.String(), code
}

// ---- A server process -----------------------------------------------------------

// ojaProc is one running `oja serve`.
type ojaProc struct {
	cmd   *exec.Cmd
	done  chan struct{} // closed when the process has been reaped
	state *os.ProcessState
}

// ojaServer is a data dir and its listen addresses, started and stopped as
// processes over the test.
type ojaServer struct {
	t       *testing.T
	bin     string
	data    string
	public  string // host:port
	admin   string
	extra   []string
	env     []string
	logPath string
	starts  int
	proc    *ojaProc
	// tls, when set, is the client side of the listeners' HTTPS
	// (--tls-cert): the URLs are https and readiness is asked over it.
	tls *tls.Config
	// joining: a cluster node started with --join, which is not ready
	// until it is added; a start waits for it to be live only.
	joining bool
}

// handedOut are the addresses freeAddr gave: the kernel may offer a port
// again once its listener closed, and two members of one cluster file must
// not share one.
var handedOut sync.Map

func freeAddr(t *testing.T) string {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if _, seen := handedOut.LoadOrStore(addr, true); !seen {
			return addr
		}
	}
}

// newOjaServer prepares a server on a fresh data dir; start runs it.
// exampleServer starts oja serve with the repository's
// markets.example.json (its markets, collection accounts and chains) and
// extra flags.
func exampleServer(t *testing.T, extra ...string) *ojaServer {
	t.Helper()
	example, err := filepath.Abs("../../markets.example.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := newOjaServer(t, append([]string{"--markets", example}, extra...)...)
	srv.start()
	return srv
}

func newOjaServer(t *testing.T, extra ...string) *ojaServer {
	t.Helper()
	dir := t.TempDir()
	s := &ojaServer{
		t: t, bin: ojaBinary(t), data: filepath.Join(dir, "data"), extra: extra,
		env:     childEnv("OJA_ADMIN_TOKEN=" + crashAdminToken),
		logPath: filepath.Join(dir, "server.log"),
	}
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			t.Logf("server log (tail):\n%s", tailFile(s.logPath, 60))
		}
	})
	return s
}

func (s *ojaServer) args() []string {
	return append([]string{"serve", "--data", s.data, "--listen", s.public, "--admin-listen", s.admin,
		"--log-format", "json"}, s.extra...)
}

func (s *ojaServer) scheme() string {
	if s.tls != nil {
		return "https://"
	}
	return "http://"
}

func (s *ojaServer) publicURL() string { return s.scheme() + s.public }
func (s *ojaServer) adminURL() string  { return s.scheme() + s.admin }

// start runs the server and waits until /readyz answers 200 on both
// listeners. The first start picks free ports (retrying if one was taken
// meanwhile); later starts reuse them, as a restarted service would.
func (s *ojaServer) start() {
	s.t.Helper()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if s.starts == 0 {
			s.public, s.admin = freeAddr(s.t), freeAddr(s.t)
		}
		err := s.startOnce()
		if err == nil {
			s.starts++
			return
		}
		lastErr = err
		if !strings.Contains(tailFile(s.logPath, 5), "address already in use") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.t.Fatalf("start %d: %v\nlog tail:\n%s", s.starts+1, lastErr, tailFile(s.logPath, 30))
}

func (s *ojaServer) startOnce() error {
	f, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "==== start %d: %s\n", s.starts+1, strings.Join(s.args(), " "))
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Env = s.env
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	p := &ojaProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		f.Close()
		close(p.done)
	}()
	s.proc = p
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: s.tls}}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("server exited before ready: %v", p.state)
		default:
		}
		if s.joining && livez(client, s.adminURL()) || readyz(client, s.publicURL()) && readyz(client, s.adminURL()) {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	s.kill()
	return fmt.Errorf("not ready within %v", readyTimeout)
}

func readyz(client *http.Client, base string) bool { return probeOK(client, base+"/readyz") }
func livez(client *http.Client, base string) bool  { return probeOK(client, base+"/livez") }

func probeOK(client *http.Client, url string) bool {
	resp, err := client.Get(url)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// kill sends SIGKILL if the process still runs and reaps it.
func (s *ojaServer) kill() {
	p := s.proc
	if p == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		s.t.Errorf("server pid %d not reaped 10 s after SIGKILL", p.cmd.Process.Pid)
	}
}

// crash kills the server with SIGKILL and checks it was running until then
// (a server that died by itself during the load is a bug, not a crash test).
func (s *ojaServer) crash() {
	s.t.Helper()
	p := s.proc
	select {
	case <-p.done:
		s.t.Fatalf("server had exited before the kill: %v\nlog tail:\n%s", p.state, tailFile(s.logPath, 40))
	default:
	}
	if err := p.cmd.Process.Kill(); err != nil {
		s.t.Fatalf("kill: %v", err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		s.t.Fatal("server not reaped 10 s after SIGKILL")
	}
	ws, ok := p.state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		s.t.Fatalf("server ended with %v, want death by SIGKILL\nlog tail:\n%s", p.state, tailFile(s.logPath, 40))
	}
}

// stop sends SIGTERM and requires exit status 0 within 10 s (spec §13).
func (s *ojaServer) stop() {
	s.t.Helper()
	p := s.proc
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatalf("SIGTERM: %v", err)
	}
	start := time.Now()
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		s.t.Fatalf("server still running %v after SIGTERM", stopTimeout)
	}
	if code := p.state.ExitCode(); code != 0 {
		s.t.Fatalf("server exited with %v after SIGTERM, want status 0\nlog tail:\n%s", p.state, tailFile(s.logPath, 30))
	}
	s.t.Logf("graceful stop took %v", time.Since(start).Round(time.Millisecond))
}

func tailFile(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// ---- HTTP ------------------------------------------------------------------------

type httpResult struct {
	status int
	body   []byte
	header http.Header
}

func newHTTPClient() *http.Client {
	return &http.Client{
		Timeout: requestTimeout,
		Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConns:        64,
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     30 * time.Second,
		},
	}
}

// do sends one request; hdr is name, value pairs. An error means no
// complete response arrived (the request may or may not have taken effect).
func do(client *http.Client, method, url, token string, body []byte, hdr ...string) (httpResult, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return httpResult{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return httpResult{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return httpResult{}, err
	}
	return httpResult{status: resp.StatusCode, body: b, header: resp.Header}, nil
}

// mustDo is do for the verification phase, where the server must answer
// with the wanted status.
func mustDo(t *testing.T, client *http.Client, want int, method, url, token string, body []byte, hdr ...string) httpResult {
	t.Helper()
	res, err := do(client, method, url, token, body, hdr...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if res.status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, url, res.status, want, res.body)
	}
	return res
}

func decodeJSON(t *testing.T, b []byte, into any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(into); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
}

func jsonObject(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	err := d.Decode(&m)
	return m, err
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// dec reads a JSON number member exactly; a missing or non-number member
// yields an error string the caller reports.
func dec(m map[string]any, key string) (decimal.Decimal, error) {
	n, ok := m[key].(json.Number)
	if !ok {
		return decimal.Zero, fmt.Errorf("member %q is %T %v, want a number", key, m[key], m[key])
	}
	return decimal.NewFromString(n.String())
}

func mustDec(t *testing.T, m map[string]any, key string) decimal.Decimal {
	t.Helper()
	d, err := dec(m, key)
	if err != nil {
		t.Fatalf("%v in %v", err, m)
	}
	return d
}

// ---- The model of acknowledged state ------------------------------------------------

// allocation is one slice of a quote as created.
type allocation struct {
	pool        string
	poolAccount string
	destination decimal.Decimal
}

// trackedQuote is one quote whose creation was acknowledged (or found after
// a restart). status is the last state known to be durable: acknowledged,
// or observed after a restart. inflight is the status an unanswered request
// would have moved it to.
type trackedQuote struct {
	id          string
	round       int
	large       bool
	destination string // currency
	totalDst    decimal.Decimal
	allocations []allocation
	immutable   map[string]any // members that never change after creation
	status      string
	last        map[string]any // the response that made status known
	accepted    bool           // an accept was acknowledged or observed
	inflight    string
}

// pendingCreate is a create request without an answer yet.
type pendingCreate struct {
	key   string
	body  []byte
	large bool
	round int
}

// depositTrack is the operator deposits into one wallet.
type depositTrack struct {
	account  string
	currency string
	token    string // partner key that can read the wallet
	amount   string // each deposit
	acked    decimal.Decimal
	inflight decimal.Decimal
	// spent: the load's completions spend this wallet (funds first), so
	// its balance is checked through its statement (verifyStatements);
	// ackedN and inflightN count the deposits.
	spent             bool
	ackedN, inflightN int
}

type crashModel struct {
	mu       sync.Mutex
	quotes   map[string]*trackedQuote
	order    []*trackedQuote
	creates  map[string]*pendingCreate
	keysSeen []*pendingCreate // acknowledged creates, for idempotency replays
	deposits []*depositTrack
}

var immutableMembers = []string{"quoteId", "source", "destination", "chain", "amount", "totalSourceAmount",
	"totalDestinationAmount", "clientId", "mode", "allocationResult", "createdAt"}

var transitionTarget = map[string]string{"accept": "awaiting_payment", "cancel": "cancelled", "complete": "completed"}

func isOpen(status string) bool { return status == "pending" || status == "awaiting_payment" }

// addQuote records an acknowledged create response.
func (m *crashModel) addQuote(body map[string]any, round int, large bool) (*trackedQuote, error) {
	q := &trackedQuote{id: str(body, "quoteId"), round: round, large: large, destination: str(body, "destination"),
		status: str(body, "status"), last: body, immutable: map[string]any{}}
	if q.id == "" || q.status != "pending" {
		return nil, fmt.Errorf("create answered quoteId %q status %q, want a pending quote", q.id, q.status)
	}
	for _, k := range immutableMembers {
		q.immutable[k] = body[k]
	}
	var err error
	if q.totalDst, err = dec(body, "totalDestinationAmount"); err != nil {
		return nil, err
	}
	ar, _ := body["allocationResult"].(map[string]any)
	allocs, _ := ar["allocations"].([]any)
	if len(allocs) == 0 {
		return nil, fmt.Errorf("quote %s has no allocations", q.id)
	}
	sum := decimal.Zero
	for _, a := range allocs {
		am, _ := a.(map[string]any)
		d, err := dec(am, "allocatedAmount")
		if err != nil {
			return nil, err
		}
		sum = sum.Add(d)
		q.allocations = append(q.allocations, allocation{pool: str(am, "poolId"), poolAccount: str(am, "poolAccountId"), destination: d})
	}
	if !sum.Equal(q.totalDst) {
		return nil, fmt.Errorf("quote %s: allocations sum to %s, totalDestinationAmount %s", q.id, sum, q.totalDst)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.quotes[q.id]; dup {
		return nil, fmt.Errorf("quote id %s created twice", q.id)
	}
	m.quotes[q.id] = q
	m.order = append(m.order, q)
	return q, nil
}

// ---- Load --------------------------------------------------------------------------

// pairSpec is a pair with a proposed rate every demo pool beats and amount
// ranges small enough never to exhaust the demo liquidity.
type pairSpec struct {
	source, destination string
	rate                string
	srcMin, srcSpan     int // whole source units
	dstMin, dstSpan     int // whole destination units
}

// crashPairs draw amounts inside the default pairs' bounds (1,000 NGN and
// 10 GHS at least; a destination amount at the demo rates costs more).
var crashPairs = []pairSpec{
	{"NGN", "USDT", "0.0001", 1000, 5000, 1, 5},
	{"GHS", "USDT", "0.01", 10, 100, 1, 6},
	{"NGN", "GHS", "0.001", 1000, 5000, 10, 41},
}

func (p pairSpec) body(rng *rand.Rand) []byte {
	if rng.IntN(2) == 0 {
		amount := fmt.Sprintf("%d.%02d", p.srcMin+rng.IntN(p.srcSpan), rng.IntN(100))
		return fmt.Appendf(nil, `{"sourceCurrency":%q,"destinationCurrency":%q,"amount":%s,"rate":%s,"amountDirection":"source"}`,
			p.source, p.destination, amount, p.rate)
	}
	amount := fmt.Sprintf("%d.%02d", p.dstMin+rng.IntN(p.dstSpan), rng.IntN(100))
	return fmt.Appendf(nil, `{"sourceCurrency":%q,"destinationCurrency":%q,"amount":%s,"rate":%s,"amountDirection":"destination"}`,
		p.source, p.destination, amount, p.rate)
}

// largeBody asks for more USDT than any NGN/USDT demo pool holds (the
// largest: 250,000), so the quote is split over at least two pools.
const largeBody = `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":250000.5,"rate":0.0001,"amountDirection":"destination"}`

type loadEnv struct {
	t      *testing.T
	srv    *ojaServer
	client *http.Client
	key    string // demo sandbox key
	model  *crashModel
	// counters of one round, for the log
	created, transitions, deposits, failures atomic.Int64
}

const quotePath = "/api/v1/partners/marketplace/quote/"

// create sends one create; ok is false when no answer came (server gone).
func (l *loadEnv) create(rng *rand.Rand, round int, large bool) (q *trackedQuote, ok bool) {
	var body []byte
	if large {
		body = []byte(largeBody)
	} else {
		body = crashPairs[rng.IntN(len(crashPairs))].body(rng)
	}
	pc := &pendingCreate{key: fmt.Sprintf("crash-r%d-%016x", round, rng.Uint64()), body: body, large: large, round: round}
	l.model.mu.Lock()
	l.model.creates[pc.key] = pc
	l.model.mu.Unlock()
	res, err := do(l.client, "POST", l.srv.publicURL()+"/api/v1/partners/marketplace/intent", l.key, body,
		"Idempotency-Key", pc.key)
	if err != nil {
		return nil, false // stays a pending create: it may or may not have landed
	}
	l.model.mu.Lock()
	delete(l.model.creates, pc.key)
	l.model.mu.Unlock()
	if res.status == http.StatusUnprocessableEntity && large {
		return nil, true // liquidity still held by an earlier large quote
	}
	if res.status != http.StatusOK {
		l.failures.Add(1)
		l.t.Errorf("create %s: status %d: %s", body, res.status, res.body)
		return nil, true
	}
	m, err := jsonObject(res.body)
	if err == nil {
		q, err = l.model.addQuote(m, round, large)
	}
	if err != nil {
		l.t.Errorf("create %s: %v: %s", body, err, res.body)
		return nil, true
	}
	l.model.mu.Lock()
	l.model.keysSeen = append(l.model.keysSeen, pc)
	l.model.mu.Unlock()
	l.created.Add(1)
	return q, true
}

// transition sends accept, cancel or complete; ok is false when no answer
// came.
func (l *loadEnv) transition(q *trackedQuote, op string) (ok bool) {
	target := transitionTarget[op]
	var body []byte
	if op == "accept" {
		body = fmt.Appendf(nil, `{"accountId":%q}`, q.allocations[0].poolAccount)
	}
	l.model.mu.Lock()
	q.inflight = target
	l.model.mu.Unlock()
	res, err := do(l.client, "PUT", l.srv.publicURL()+quotePath+q.id+"/"+op, l.key, body)
	if err != nil {
		return false
	}
	l.model.mu.Lock()
	defer l.model.mu.Unlock()
	q.inflight = ""
	m, err := jsonObject(res.body)
	if res.status != http.StatusOK || err != nil || str(m, "status") != target || str(m, "quoteId") != q.id {
		l.failures.Add(1)
		l.t.Errorf("%s quote %s (was %s): status %d: %s", op, q.id, q.status, res.status, res.body)
		return true
	}
	q.status, q.last = target, m
	if op == "accept" {
		q.accepted = true
	}
	l.transitions.Add(1)
	return true
}

// worker creates quotes and moves them along until the deadline, the
// round's quote budget, or the server's death.
func (l *loadEnv) worker(rng *rand.Rand, round int, deadline time.Time, budget *atomic.Int64, carry <-chan *trackedQuote, large bool) {
	if large {
		q, ok := l.create(rng, round, true)
		if !ok {
			return
		}
		if q != nil && rng.IntN(2) == 0 && !l.transition(q, "accept") {
			return
		}
	}
	for time.Now().Before(deadline) {
		// Quotes of earlier rounds move on first: transitions on recovered
		// state, some of them in flight at the next kill.
		select {
		case q := <-carry:
			op := "cancel"
			switch {
			case q.large:
			case q.status == "pending" && rng.IntN(100) < 60:
				op = "accept"
			case q.status == "awaiting_payment" && rng.IntN(100) < 60:
				op = "complete"
			}
			if !l.transition(q, op) {
				return
			}
			continue
		default:
		}
		if budget.Add(-1) < 0 {
			return
		}
		q, ok := l.create(rng, round, false)
		if !ok {
			return
		}
		if q == nil {
			continue
		}
		switch p := rng.IntN(100); {
		case p < 20: // stays pending
		case p < 35:
			if !l.transition(q, "cancel") {
				return
			}
		default:
			if !l.transition(q, "accept") {
				return
			}
			switch p := rng.IntN(100); {
			case p < 55:
				if !l.transition(q, "complete") {
					return
				}
			case p < 75:
				if !l.transition(q, "cancel") {
					return
				}
			}
		}
	}
}

// crashDepositSeq numbers the depositor's references: each deposit its own
// transfer, across the rounds of a test.
var crashDepositSeq atomic.Int64

// depositor makes operator deposits into the tracked wallets.
func (l *loadEnv) depositor(deadline time.Time) {
	for i := 0; i < depositsPerLoad && time.Now().Before(deadline); i++ {
		d := l.model.deposits[i%len(l.model.deposits)]
		amount := decimal.RequireFromString(d.amount)
		l.model.mu.Lock()
		d.inflight = d.inflight.Add(amount)
		d.inflightN++
		l.model.mu.Unlock()
		res, err := do(l.client, "POST", l.srv.adminURL()+"/admin/v1/accounts/"+d.account+"/deposit", crashAdminToken,
			fmt.Appendf(nil, `{"amount":%s,"reference":"CRASH-%s-%d"}`, d.amount, d.account, crashDepositSeq.Add(1)))
		if err != nil {
			return
		}
		l.model.mu.Lock()
		d.inflight = d.inflight.Sub(amount)
		d.inflightN--
		m, err := jsonObject(res.body)
		if res.status == http.StatusOK && err == nil {
			d.acked = d.acked.Add(amount)
			d.ackedN++
			if bal, err := dec(m, "balance"); err != nil || !d.spent && !bal.Equal(d.acked) || str(m, "accountId") != d.account {
				l.t.Errorf("deposit into %s answered %s, want balance %s", d.account, res.body, d.acked)
			}
			l.deposits.Add(1)
		} else {
			l.failures.Add(1)
			l.t.Errorf("deposit into %s: status %d: %s", d.account, res.status, res.body)
		}
		l.model.mu.Unlock()
		time.Sleep(time.Duration(20+rand.IntN(60)) * time.Millisecond)
	}
}

// ---- The test ----------------------------------------------------------------------

// crashFixture is what the first start established.
type crashFixture struct {
	demoKey     string
	demoKeyFile []byte
	pools       map[string]decimal.Decimal // sandbox pool id → initial liquidity balance
	liveKey     string
}

func TestCrashKill9Recovery(t *testing.T) {
	began := time.Now()
	srv := newOjaServer(t, "--demo")
	srv.start()
	client := newHTTPClient()
	defer client.CloseIdleConnections()

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	fx := crashFixture{pools: map[string]decimal.Decimal{}}
	var err error
	if fx.demoKeyFile, err = os.ReadFile(filepath.Join(srv.data, "demo.key")); err != nil {
		t.Fatalf("--demo wrote no key: %v", err)
	}
	fx.demoKey = strings.TrimSpace(string(fx.demoKeyFile))
	if !strings.HasPrefix(fx.demoKey, "oja_sandbox_") {
		t.Fatalf("demo key %q is not a sandbox key", fx.demoKey)
	}
	var pools []map[string]any
	decodeJSON(t, mustDo(t, client, 200, "GET", srv.adminURL()+"/admin/v1/pools?mode=sandbox", crashAdminToken, nil).body, &pools)
	if len(pools) != len(demoPools) {
		t.Fatalf("--demo created %d sandbox pools, want %d", len(pools), len(demoPools))
	}
	for _, p := range pools {
		fx.pools[str(p, "poolId")] = mustDec(t, p, "balance")
		if !mustDec(t, p, "available").Equal(mustDec(t, p, "balance")) {
			t.Fatalf("fresh demo pool holds liquidity: %v", p)
		}
	}

	model := &crashModel{quotes: map[string]*trackedQuote{}, creates: map[string]*pendingCreate{}}
	demoNGN := walletOf(t, client, srv, fx.demoKey, "NGN")
	model.deposits = append(model.deposits, &depositTrack{account: demoNGN, currency: "NGN", token: fx.demoKey, amount: "100.25", spent: true})
	// A live client and key made through the admin API: keys and clients
	// must survive the crashes too, and the live ledger gets traffic.
	var created map[string]any
	decodeJSON(t, mustDo(t, client, 201, "POST", srv.adminURL()+"/admin/v1/clients", crashAdminToken, []byte(`{"name":"crash-live"}`)).body, &created)
	var key map[string]any
	decodeJSON(t, mustDo(t, client, 201, "POST", srv.adminURL()+"/admin/v1/clients/"+str(created, "clientId")+"/keys",
		crashAdminToken, []byte(`{"mode":"live"}`)).body, &key)
	fx.liveKey = str(key, "key")
	if !strings.HasPrefix(fx.liveKey, "oja_live_") {
		t.Fatalf("live key %q", fx.liveKey)
	}
	liveNGN := walletOf(t, client, srv, fx.liveKey, "NGN")
	model.deposits = append(model.deposits, &depositTrack{account: liveNGN, currency: "NGN", token: fx.liveKey, amount: "7.5"})

	for round := 1; round <= crashRounds; round++ {
		if round > 1 && time.Since(began) > roundsBudget {
			t.Logf("skipping rounds %d..%d: %v spent", round, crashRounds, time.Since(began).Round(time.Millisecond))
			break
		}
		l := &loadEnv{t: t, srv: srv, client: client, key: fx.demoKey, model: model}
		var carryList []*trackedQuote
		for _, q := range model.order {
			if isOpen(q.status) {
				carryList = append(carryList, q)
			}
		}
		slices.SortStableFunc(carryList, func(a, b *trackedQuote) int {
			switch {
			case a.large == b.large:
				return 0
			case a.large:
				return -1
			}
			return 1
		})
		carry := make(chan *trackedQuote, len(carryList))
		for _, q := range carryList {
			carry <- q
		}

		loadStart := time.Now()
		deadline := loadStart.Add(loadDuration)
		var budget atomic.Int64
		budget.Store(quotesPerRound)
		var wg sync.WaitGroup
		for w := 0; w < loadWorkers; w++ {
			wrng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
			wg.Go(func() { l.worker(wrng, round, deadline, &budget, carry, w == 0) })
		}
		wg.Go(func() { l.depositor(deadline) })

		killAt := killEarliest + time.Duration(rng.Int64N(int64(killWindow)))
		time.Sleep(time.Until(loadStart.Add(killAt)))
		srv.crash()
		waitGroupTimeout(t, &wg, 2*requestTimeout+5*time.Second)
		client.CloseIdleConnections()
		if t.Failed() {
			t.FailNow()
		}
		model.mu.Lock()
		inflightQ := 0
		for _, q := range model.order {
			if q.inflight != "" {
				inflightQ++
			}
		}
		t.Logf("round %d: SIGKILL after %v: %d creates, %d transitions, %d deposits acknowledged (%d refused); in flight: %d creates, %d transitions",
			round, killAt.Round(time.Millisecond), l.created.Load(), l.transitions.Load(), l.deposits.Load(), l.failures.Load(),
			len(model.creates), inflightQ)
		model.mu.Unlock()

		if budget.Load() < 0 {
			t.Logf("round %d: the quote budget ran out before the kill; the load was thinner than planned", round)
		}
		restartAt := time.Now()
		srv.start()
		t.Logf("round %d: restart ready in %v", round, time.Since(restartAt).Round(time.Millisecond))
		verifyAt := time.Now()
		verifyRecovered(t, client, srv, fx, model, round)
		t.Logf("round %d: %d quotes verified in %v", round, len(model.order), time.Since(verifyAt).Round(time.Millisecond))
	}

	// The log must be a complete record of what was served: the counts of
	// an offline replay equal the model, which now has nothing in flight.
	want := map[string]int{}
	for _, q := range model.order {
		want[q.status]++
	}
	srv.stop()
	verifyWALTools(t, srv, want)
	t.Logf("%d quotes tracked over %d starts; total %v", len(model.order), srv.starts, time.Since(began).Round(time.Millisecond))
}

func waitGroupTimeout(t *testing.T, wg *sync.WaitGroup, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("load goroutines still running %v after the kill", d)
	}
}

// walletOf returns the caller's wallet account in currency (the one wallet
// among its accounts in that currency; the test clients own no pools).
func walletOf(t *testing.T, client *http.Client, srv *ojaServer, key, currency string) string {
	t.Helper()
	var accounts []map[string]any
	decodeJSON(t, mustDo(t, client, 200, "GET", srv.publicURL()+"/api/v1/partners/balances/currency/"+currency, key, nil).body, &accounts)
	if len(accounts) != 1 {
		t.Fatalf("%d %s accounts, want one wallet: %v", len(accounts), currency, accounts)
	}
	return str(accounts[0], "accountId")
}

// verifyRecovered checks the restarted server against the model, then
// folds what it found into the model so that nothing is in flight any more.
func verifyRecovered(t *testing.T, client *http.Client, srv *ojaServer, fx crashFixture, model *crashModel, round int) {
	t.Helper()
	model.mu.Lock() // the load has ended; the lock only keeps the race detector informed
	defer model.mu.Unlock()
	bad := 0
	errorf := func(format string, args ...any) {
		t.Helper()
		t.Errorf("after restart %d: "+format, append([]any{round}, args...)...)
		if bad++; bad >= 20 {
			t.FailNow()
		}
	}

	// --demo on a seeded data dir creates nothing new.
	if b, err := os.ReadFile(filepath.Join(srv.data, "demo.key")); err != nil || !bytes.Equal(b, fx.demoKeyFile) {
		errorf("demo.key changed or vanished (%v)", err)
	}
	var pools []map[string]any
	decodeJSON(t, mustDo(t, client, 200, "GET", srv.adminURL()+"/admin/v1/pools?mode=sandbox", crashAdminToken, nil).body, &pools)
	if len(pools) != len(fx.pools) {
		errorf("%d sandbox pools, want the %d seeded ones", len(pools), len(fx.pools))
	}
	var livePools []map[string]any
	decodeJSON(t, mustDo(t, client, 200, "GET", srv.adminURL()+"/admin/v1/pools?mode=live", crashAdminToken, nil).body, &livePools)
	if len(livePools) != 0 {
		errorf("%d live pools, want none (demo state is sandbox only)", len(livePools))
	}

	// The brief's wallet bounds, from acknowledgements alone: the USDT
	// wallet holds at least the acknowledged completions and at most those
	// plus the completions in flight. (GHS is also a source, so completions
	// spend it too, funds first: its statement is checked below.)
	ackedDst := map[string]decimal.Decimal{}
	inflightDst := map[string]decimal.Decimal{}
	for _, q := range model.order {
		if q.status == "completed" {
			ackedDst[q.destination] = ackedDst[q.destination].Add(q.totalDst)
		} else if q.inflight == "completed" {
			inflightDst[q.destination] = inflightDst[q.destination].Add(q.totalDst)
		}
	}
	balances := demoBalances(t, client, srv, fx.demoKey)
	for _, c := range []string{"USDT"} {
		got, lo := balances[c], ackedDst[c]
		hi := lo.Add(inflightDst[c])
		if got.LessThan(lo) || got.GreaterThan(hi) {
			errorf("demo %s wallet balance %s, want between %s (acknowledged completions) and %s", c, got, lo, hi)
		}
	}

	// Every acknowledged quote, exactly as acknowledged or moved on by the
	// one request that was in flight at the kill.
	for _, q := range model.order {
		res, err := do(client, "GET", srv.publicURL()+quotePath+q.id, fx.demoKey, nil)
		if err != nil || res.status != http.StatusOK {
			errorf("GET quote %s (acknowledged %s): %v %d %s", q.id, q.status, err, res.status, res.body)
			continue
		}
		got, err := jsonObject(res.body)
		if err != nil {
			errorf("GET quote %s: %v", q.id, err)
			continue
		}
		status := str(got, "status")
		switch {
		case status == q.status:
			// Nothing after the acknowledgement landed: the same deadline,
			// the same pay-in reference, the same update time.
			for _, k := range []string{"updatedAt", "expiresAt", "metadata"} {
				if !reflect.DeepEqual(got[k], q.last[k]) {
					errorf("quote %s (%s): %s is %v, acknowledged %v", q.id, status, k, got[k], q.last[k])
				}
			}
		case q.inflight != "" && status == q.inflight:
			if q.accepted && !reflect.DeepEqual(got["metadata"], q.last["metadata"]) {
				errorf("quote %s: metadata %v after in-flight %s landed, acknowledged accept gave %v", q.id, got["metadata"], status, q.last["metadata"])
			}
		default:
			allowed := []string{q.status}
			if q.inflight != "" {
				allowed = append(allowed, q.inflight)
			}
			errorf("quote %s is %s, want one of %v", q.id, status, allowed)
			continue
		}
		for _, k := range immutableMembers {
			if !reflect.DeepEqual(got[k], q.immutable[k]) {
				errorf("quote %s: %s is %v, was %v when created", q.id, k, got[k], q.immutable[k])
			}
		}
		ttl, err := dec(got, "ttl")
		switch {
		case err != nil:
			errorf("quote %s: %v", q.id, err)
		case isOpen(status) && (ttl.Sign() <= 0 || str(got, "expiresAt") == ""):
			errorf("quote %s (%s): ttl %s expiresAt %q", q.id, status, ttl, str(got, "expiresAt"))
		case !isOpen(status) && (ttl.Sign() != 0 || got["expiresAt"] != nil):
			errorf("quote %s (%s): ttl %s expiresAt %v, want 0 and none", q.id, status, ttl, got["expiresAt"])
		}
		_, hasPayIn := got["metadata"]
		if q.accepted && !hasPayIn {
			errorf("quote %s: acknowledged accept but no metadata.bankPayIn", q.id)
		}
		if status == "awaiting_payment" || status == "completed" {
			if !hasPayIn {
				errorf("quote %s (%s) has no metadata.bankPayIn", q.id, status)
			}
		}
		q.status, q.last, q.inflight, q.accepted = status, got, "", hasPayIn
	}

	// Creates that got no answer: a retry with the same Idempotency-Key and
	// body either finds the quote the first attempt made (which nobody has
	// touched since, so it must be pending) or makes it now.
	keys := make([]string, 0, len(model.creates))
	for k := range model.creates {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	landed := 0
	for _, k := range keys {
		pc := model.creates[k]
		res, err := do(client, "POST", srv.publicURL()+"/api/v1/partners/marketplace/intent", fx.demoKey, pc.body, "Idempotency-Key", pc.key)
		if err != nil {
			t.Fatalf("retrying create %s: %v", pc.key, err)
		}
		if res.status == http.StatusUnprocessableEntity && pc.large {
			if res.header.Get("Idempotent-Replayed") != "" {
				errorf("create %s: 422 marked as a replay", pc.key)
			}
			delete(model.creates, k)
			continue
		}
		if res.status != http.StatusOK {
			errorf("retrying create %s %s: status %d: %s", pc.key, pc.body, res.status, res.body)
			continue
		}
		body, err := jsonObject(res.body)
		if err != nil {
			errorf("retrying create %s: %v", pc.key, err)
			continue
		}
		id := str(body, "quoteId")
		if _, known := model.quotes[id]; known {
			errorf("retrying unanswered create %s returned quote %s, which another request created", pc.key, id)
			continue
		}
		if res.header.Get("Idempotent-Replayed") == "true" {
			landed++
			res := mustDo(t, client, 200, "GET", srv.publicURL()+quotePath+id, fx.demoKey, nil)
			if body, err = jsonObject(res.body); err != nil {
				t.Fatal(err)
			}
		}
		model.mu.Unlock()
		_, err = model.addQuote(body, pc.round, pc.large)
		model.mu.Lock()
		if err != nil {
			errorf("create %s: %v", pc.key, err)
			continue
		}
		model.keysSeen = append(model.keysSeen, pc)
		delete(model.creates, k)
	}
	if len(keys) > 0 {
		t.Logf("round %d: %d of %d unanswered creates had landed", round, landed, len(keys))
	}

	// Idempotency records of acknowledged creates survive the crash.
	for i := 0; i < len(model.keysSeen) && i < 20; i++ {
		pc := model.keysSeen[(i*7919+round)%len(model.keysSeen)]
		res := mustDo(t, client, 200, "POST", srv.publicURL()+"/api/v1/partners/marketplace/intent", fx.demoKey, pc.body, "Idempotency-Key", pc.key)
		body, err := jsonObject(res.body)
		if err != nil || res.header.Get("Idempotent-Replayed") != "true" {
			errorf("replaying acknowledged create %s: Idempotent-Replayed %q: %s", pc.key, res.header.Get("Idempotent-Replayed"), res.body)
			continue
		}
		if q, ok := model.quotes[str(body, "quoteId")]; !ok || !reflect.DeepEqual(body["allocationResult"], q.immutable["allocationResult"]) {
			errorf("replaying acknowledged create %s answered a different quote: %s", pc.key, res.body)
		}
	}

	// Wallets now equal the model exactly: the demo wallets through their
	// statements (every completion spends its source wallet, simulating
	// what sandbox lacks: funds first), the others by their balance.
	posted := verifyStatements(t, client, srv, fx.demoKey, model, errorf)
	for _, d := range model.deposits {
		if d.spent {
			d.ackedN, d.inflightN = posted[d.account], 0
			continue
		}
		got := accountBalance(t, client, srv, d.token, d.account)
		if got.LessThan(d.acked) || got.GreaterThan(d.acked.Add(d.inflight)) {
			errorf("wallet %s %s: balance %s, want between %s (acknowledged deposits) and %s", d.account, d.currency, got, d.acked, d.acked.Add(d.inflight))
		}
		d.acked, d.inflight = got, decimal.Zero
	}

	// Pools: liquidity, holds and trade counters follow from the quotes.
	wantPools := map[string]*poolWant{}
	for id := range fx.pools {
		wantPools[id] = &poolWant{}
	}
	for _, q := range model.order {
		for _, a := range q.allocations {
			w := wantPools[a.pool]
			if w == nil {
				errorf("quote %s allocated from unknown pool %s", q.id, a.pool)
				continue
			}
			switch {
			case q.status == "completed":
				w.consumed = w.consumed.Add(a.destination)
				w.completed++
			case isOpen(q.status):
				w.held = w.held.Add(a.destination)
			}
			if q.accepted {
				w.accepted++
			}
		}
	}
	// Pool actors apply holds just after the create's answer, so a pool
	// read may briefly trail; re-read for up to a second before judging.
	var problems []string
	for attempt := 1; attempt <= 20; attempt++ {
		problems = problems[:0]
		decodeJSON(t, mustDo(t, client, 200, "GET", srv.adminURL()+"/admin/v1/pools?mode=sandbox", crashAdminToken, nil).body, &pools)
		for _, p := range pools {
			problems = append(problems, poolProblems(t, p, fx.pools, wantPools)...)
		}
		if len(problems) == 0 {
			if attempt > 1 {
				t.Logf("round %d: pool views matched the quotes only at read %d", round, attempt)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range problems {
		errorf("%s", p)
	}

	// The double-entry invariant, per mode and currency.
	for _, mode := range []string{"sandbox", "live"} {
		var report map[string]any
		decodeJSON(t, mustDo(t, client, 200, "GET", srv.adminURL()+"/admin/v1/ledger/check?mode="+mode, crashAdminToken, nil).body, &report)
		if report["ok"] != true {
			errorf("ledger check %s: %v", mode, report)
		}
		currencies, _ := report["currencies"].(map[string]any)
		for _, c := range []string{"NGN", "GHS", "USDT"} {
			line, _ := currencies[c].(map[string]any)
			if sum, err := dec(line, "sum"); err != nil || !sum.IsZero() {
				errorf("ledger check %s %s: %v (%v)", mode, c, line, err)
			}
		}
	}
}

// poolWant is what the model says of one pool.
type poolWant struct {
	consumed, held      decimal.Decimal // completed and open quotes' slices
	completed, accepted int64
}

// poolProblems compares one admin Pool with the model.
func poolProblems(t *testing.T, p map[string]any, initial map[string]decimal.Decimal, want map[string]*poolWant) []string {
	t.Helper()
	id, name := str(p, "poolId"), str(p, "name")
	w, ok := want[id]
	if !ok {
		return []string{fmt.Sprintf("pool %s appeared: %v", id, p)}
	}
	var out []string
	balance, available := mustDec(t, p, "balance"), mustDec(t, p, "available")
	if b := initial[id].Sub(w.consumed); !balance.Equal(b) {
		out = append(out, fmt.Sprintf("pool %s (%s): balance %s, want %s − %s completed = %s", id, name, balance, initial[id], w.consumed, b))
	}
	if held := balance.Sub(available); !held.Equal(w.held) {
		out = append(out, fmt.Sprintf("pool %s (%s): %s held, want %s for the open quotes", id, name, held, w.held))
	}
	if n := mustDec(t, p, "tradesCount"); n.IntPart() != w.completed {
		out = append(out, fmt.Sprintf("pool %s (%s): tradesCount %s, want %d", id, name, n, w.completed))
	}
	rate := decimal.Zero
	if w.accepted > 0 {
		rate = decimal.NewFromInt(w.completed*100).DivRound(decimal.NewFromInt(w.accepted), 8).RoundBank(2)
	}
	if r := mustDec(t, p, "completionRate"); !r.Equal(rate) {
		out = append(out, fmt.Sprintf("pool %s (%s): completionRate %s, want %s (%d completed of %d accepted)", id, name, r, rate, w.completed, w.accepted))
	}
	return out
}

// demoBalances returns the demo client's sandbox wallet balances by currency
// (GET /partners/balances, x-service-source required).
func demoBalances(t *testing.T, client *http.Client, srv *ojaServer, key string) map[string]decimal.Decimal {
	t.Helper()
	var accounts []map[string]any
	decodeJSON(t, mustDo(t, client, 200, "GET", srv.publicURL()+"/api/v1/partners/balances", key, nil,
		"x-service-source", "crash-test").body, &accounts)
	out := map[string]decimal.Decimal{}
	for _, a := range accounts {
		c := str(a, "currency")
		if _, dup := out[c]; dup {
			t.Fatalf("two %s accounts: %v", c, accounts)
		}
		bal, avail := mustDec(t, a, "balance"), mustDec(t, a, "availableBalance")
		if !bal.Equal(avail) {
			t.Errorf("wallet %v: availableBalance differs from balance, but wallets hold nothing", a)
		}
		out[c] = bal
	}
	if len(out) != 3 {
		t.Fatalf("demo client has wallets %v, want GHS, NGN, USDT", accounts)
	}
	return out
}

func accountBalance(t *testing.T, client *http.Client, srv *ojaServer, key, account string) decimal.Decimal {
	t.Helper()
	var accounts []map[string]any
	decodeJSON(t, mustDo(t, client, 200, "GET", srv.publicURL()+"/api/v1/partners/balances/"+account, key, nil).body, &accounts)
	if len(accounts) != 1 || str(accounts[0], "accountId") != account {
		t.Fatalf("balance of %s: %v", account, accounts)
	}
	return mustDec(t, accounts[0], "balance")
}

// verifyWALTools runs the offline tools on the stopped server's data dir.
func verifyWALTools(t *testing.T, srv *ojaServer, statuses map[string]int) {
	t.Helper()
	env := childEnv()
	out, errOut, code := runOja(t, srv.bin, env, "wal", "verify", "--data", srv.data)
	if code != 0 || !slices.Contains(strings.Split(strings.TrimSpace(out), "\n"), "OK") {
		t.Fatalf("oja wal verify: exit %d\n%s%s", code, out, errOut)
	}
	var last uint64
	for _, line := range strings.Split(out, "\n") {
		if _, err := fmt.Sscanf(line, "records 1..%d verified", &last); err == nil {
			break
		}
	}
	if last == 0 {
		t.Fatalf("oja wal verify printed no record range:\n%s", out)
	}
	for _, mode := range []string{"live", "sandbox"} {
		if !strings.Contains(out, "ledger "+mode) {
			t.Errorf("oja wal verify: no ledger line for %s:\n%s", mode, out)
		}
	}

	out, errOut, code = runOja(t, srv.bin, env, "wal", "stats", "--data", srv.data)
	if code != 0 {
		t.Fatalf("oja wal stats: exit %d\n%s%s", code, out, errOut)
	}
	stats := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			stats[f[0]+" "+f[1]] = line
		}
	}
	var lastSeq uint64
	if _, err := fmt.Sscanf(strings.TrimSpace(stats["last seq"]), "last seq %d", &lastSeq); err != nil || lastSeq != last {
		t.Errorf("oja wal stats: last seq line %q, want seq %d as verified\n%s", stats["last seq"], last, out)
	}
	for _, want := range []string{"records", "bytes", "first seq", "QuoteCreated", "QuoteAccepted", "QuoteCompleted", "QuoteCancelled", "PoolCreated", "ClientCreated", "KeyCreated"} {
		if !strings.Contains(out, want) {
			t.Errorf("oja wal stats: no %q in\n%s", want, out)
		}
	}

	out, errOut, code = runOja(t, srv.bin, env, "wal", "dump", "--data", srv.data, "--limit", "3", "--json")
	if code != 0 {
		t.Fatalf("oja wal dump: exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("oja wal dump --limit 3 --json printed %d lines:\n%s", len(lines), out)
	}
	var prev uint64
	for i, line := range lines {
		var rec struct {
			Seq   *uint64         `json:"seq"`
			Type  string          `json:"type"`
			At    string          `json:"at"`
			Event json.RawMessage `json:"event"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("oja wal dump line %d is not JSON: %v\n%s", i+1, err, line)
		}
		if rec.Seq == nil || rec.Type == "" || len(rec.Event) == 0 || rec.Event[0] != '{' {
			t.Errorf("oja wal dump line %d lacks seq/type/event: %s", i+1, line)
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, rec.At); err != nil {
			t.Errorf("oja wal dump line %d: at %q: %v", i+1, rec.At, err)
		}
		if i > 0 && *rec.Seq != prev+1 {
			t.Errorf("oja wal dump: seq %d after %d", *rec.Seq, prev)
		}
		prev = *rec.Seq
	}
	if !strings.Contains(lines[0], `"type":"ClientCreated"`) {
		t.Errorf("oja wal dump: the first record of a --demo data dir should create the demo client: %s", lines[0])
	}

	// Replaying the whole log offline gives the quote counts the test saw.
	out, errOut, code = runOja(t, srv.bin, env, "wal", "replay", "--data", srv.data, "--until", fmt.Sprint(last))
	if code != 0 {
		t.Fatalf("oja wal replay: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, fmt.Sprintf("state as of seq %d ", last)) {
		t.Errorf("oja wal replay --until %d:\n%s", last, out)
	}
	i := strings.Index(out, "[sandbox]")
	if i < 0 {
		t.Fatalf("oja wal replay printed no [sandbox] section:\n%s", out)
	}
	sc := bufio.NewScanner(strings.NewReader(out[i:]))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "quotes:") {
			continue
		}
		for _, s := range []string{"pending", "awaiting_payment", "completed", "cancelled", "expired"} {
			if want := fmt.Sprintf(" %s=%d", s, statuses[s]); !strings.Contains(line+" ", want+" ") {
				t.Errorf("oja wal replay: sandbox %q, want%s", line, want)
			}
		}
		break
	}
	if strings.Count(out, `ledger check: {"ok":true`) != 2 {
		t.Errorf("oja wal replay: ledger checks not ok:\n%s", out)
	}
}

// statementLine is one posting of a wallet's statement.
type statementLine struct {
	kind, quote string
	amount      decimal.Decimal
	after       decimal.Decimal
}

// walletStatement reads a wallet's whole statement, oldest first, page by
// page.
func walletStatement(t *testing.T, client *http.Client, srv *ojaServer, key, account string) []statementLine {
	t.Helper()
	var lines []statementLine
	cursor := ""
	for {
		url := srv.publicURL() + "/api/v1/partners/accounts/" + account + "/transactions?limit=100"
		if cursor != "" {
			url += "&startingAfter=" + cursor
		}
		var page struct {
			Data []map[string]any `json:"data"`
			More bool             `json:"hasMore"`
		}
		decodeJSON(t, mustDo(t, client, 200, "GET", url, key, nil).body, &page)
		for _, p := range page.Data {
			lines = append(lines, statementLine{kind: str(p, "type"), quote: str(p, "quoteId"),
				amount: mustDec(t, p, "amount"), after: mustDec(t, p, "balanceAfter")})
			cursor = str(p, "id")
		}
		if !page.More {
			break
		}
	}
	slices.Reverse(lines)
	return lines
}

// verifyStatements checks the demo client's wallets against the model
// through their statements: each posting's balance follows from the one
// before and the last is the balance; every completed quote, and no other,
// has its settlements (its source debited, its destination credited, a
// simulated pay-in of at most its source); the deposits counted lie
// between the acknowledged and the attempted ones. It returns the deposits
// counted per wallet.
func verifyStatements(t *testing.T, client *http.Client, srv *ojaServer, key string, model *crashModel, errorf func(string, ...any)) map[string]int {
	t.Helper()
	type settled struct{ debit, credit, simulated decimal.Decimal }
	byQuote := map[string]*settled{}
	deposits := map[string]int{}
	for _, c := range []string{"NGN", "GHS", "USDT"} {
		account := walletOf(t, client, srv, key, c)
		lines := walletStatement(t, client, srv, key, account)
		balance := decimal.Zero
		for i, l := range lines {
			balance = balance.Add(l.amount)
			if !balance.Equal(l.after) {
				errorf("%s statement line %d (%s %s): balanceAfter %s, want %s", c, i, l.kind, l.amount, l.after, balance)
				balance = l.after
			}
			got := byQuote[l.quote]
			if got == nil && l.quote != "" {
				got = &settled{}
				byQuote[l.quote] = got
			}
			switch l.kind {
			case "deposit":
				deposits[account]++
			case "settlement":
				if l.amount.IsNegative() {
					got.debit = got.debit.Sub(l.amount)
				} else {
					got.credit = got.credit.Add(l.amount)
				}
			case "simulated_payin":
				got.simulated = got.simulated.Add(l.amount)
			default:
				errorf("%s statement: unexpected %s posting of %s", c, l.kind, l.amount)
			}
		}
		if got := accountBalance(t, client, srv, key, account); !got.Equal(balance) {
			errorf("%s wallet balance %s, its statement ends at %s", c, got, balance)
		}
	}
	for _, q := range model.order {
		got := byQuote[q.id]
		delete(byQuote, q.id)
		if q.status != "completed" {
			if got != nil {
				errorf("quote %s is %s but its wallets show settlements %+v", q.id, q.status, *got)
			}
			continue
		}
		totalSrc, err := dec(q.immutable, "totalSourceAmount")
		if err != nil || got == nil || !got.credit.Equal(q.totalDst) || !got.debit.Equal(totalSrc) || got.simulated.GreaterThan(totalSrc) {
			errorf("completed quote %s (pays %s gets %s %s): its wallets show %+v", q.id, totalSrc, q.totalDst, q.destination, got)
		}
	}
	for id, got := range byQuote {
		errorf("settlements %+v of quote %s, which the model does not know", *got, id)
	}
	for _, d := range model.deposits {
		if n, ok := deposits[d.account]; ok && (n < d.ackedN || n > d.ackedN+d.inflightN) {
			errorf("wallet %s: %d deposits posted, want between %d (acknowledged) and %d", d.account, n, d.ackedN, d.ackedN+d.inflightN)
		}
	}
	return deposits
}
