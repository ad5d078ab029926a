package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
	"github.com/oja-exchange/oja/internal/poll"
)

// The rate stream (spec §8), over a real server on loopback, read the
// way a partner would: net/http, line by line, with deadlines.

const streamPath = "/api/v1/partners/marketplace/rates/stream"

// streamHeartbeat is the heartbeat of the test servers: short, so that
// heartbeat timing is observable.
const streamHeartbeat = 200 * time.Millisecond

// streamPrompt is how soon a rate change must reach a reading subscriber.
const streamPrompt = time.Second

var streamTimestamp = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// sseFrame is one SSE block: the fields it carried.
type sseFrame struct {
	id    uint64
	event string
	data  string
	retry string
	at    time.Time // when its last line arrived
}

// sseClient reads one stream line by line on a goroutine of its own, so
// that the test can wait for a frame with a deadline.
type sseClient struct {
	t      testing.TB
	resp   *http.Response
	lines  chan sseLine
	closed chan struct{} // closed when the body ended (EOF or error)
	err    error         // why it ended; read after closed
}

type sseLine struct {
	text string
	at   time.Time
}

// streamHTTP is a client without a whole-request timeout (a stream lasts).
func streamHTTP(t testing.TB) *http.Client {
	tr := &http.Transport{DisableCompression: true, ResponseHeaderTimeout: 5 * time.Second,
		MaxConnsPerHost: 0, MaxIdleConnsPerHost: 100}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// streamRequest sends GET stream?query and returns the response without
// reading its body; headers are name, value pairs.
func streamRequest(t testing.TB, client *http.Client, s *gatewaytest.Server, key, query string, headers ...string) *http.Response {
	t.Helper()
	url := s.URL + streamPath
	if query != "" {
		url += "?" + query
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp
}

// openStream opens a stream that must be accepted (200).
func openStream(t testing.TB, client *http.Client, s *gatewaytest.Server, key, query string, headers ...string) *sseClient {
	t.Helper()
	resp := streamRequest(t, client, s, key, query, headers...)
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("stream %q: status %d, body %s", query, resp.StatusCode, body)
	}
	c := &sseClient{t: t, resp: resp, lines: make(chan sseLine, 1<<16), closed: make(chan struct{})}
	go c.read()
	t.Cleanup(c.close)
	return c
}

func (c *sseClient) read() {
	defer close(c.closed)
	r := bufio.NewReader(c.resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			c.err = err
			return
		}
		select {
		case c.lines <- sseLine{text: strings.TrimSuffix(line, "\n"), at: time.Now()}:
		default:
			c.err = fmt.Errorf("test reader: more than %d lines unread", cap(c.lines))
			return
		}
	}
}

func (c *sseClient) close() { c.resp.Body.Close() }

// next returns the next frame, failing the test when none is complete
// within timeout.
func (c *sseClient) next(timeout time.Duration) sseFrame {
	c.t.Helper()
	f, ok := c.tryNext(timeout)
	if !ok {
		c.t.Fatalf("no complete SSE frame within %s", timeout)
	}
	return f
}

// tryNext is next without failing: ok is false on timeout or end of body.
func (c *sseClient) tryNext(timeout time.Duration) (sseFrame, bool) {
	c.t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var f sseFrame
	fields := 0
	for {
		var l sseLine
		select {
		case l = <-c.lines:
		case <-c.closed:
			select {
			case l = <-c.lines:
			default:
				return f, false
			}
		case <-timer.C:
			return f, false
		}
		if l.text == "" {
			if fields == 0 {
				continue
			}
			f.at = l.at
			return f, true
		}
		name, value, found := strings.Cut(l.text, ": ")
		if !found {
			c.t.Fatalf("malformed SSE line %q", l.text)
		}
		fields++
		switch name {
		case "id":
			id, err := strconv.ParseUint(value, 10, 64)
			if err != nil {
				c.t.Fatalf("id %q is not a decimal number", value)
			}
			f.id = id
		case "event":
			f.event = value
		case "data":
			if f.data != "" {
				c.t.Fatalf("a frame with two data lines: %q then %q", f.data, value)
			}
			f.data = value
		case "retry":
			f.retry = value
		default:
			c.t.Fatalf("unexpected SSE field %q", l.text)
		}
	}
}

// nextEvent skips frames of other events (heartbeats) until one of event.
func (c *sseClient) nextEvent(event string, timeout time.Duration) sseFrame {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		f, ok := c.tryNext(time.Until(deadline))
		if !ok {
			c.t.Fatalf("no %s frame within %s", event, timeout)
		}
		if f.event == event {
			return f
		}
	}
}

// ended waits until the body ended, failing after timeout.
func (c *sseClient) ended(timeout time.Duration) error {
	c.t.Helper()
	select {
	case <-c.closed:
		return c.err
	case <-time.After(timeout):
		c.t.Fatalf("stream still open after %s", timeout)
		return nil
	}
}

// opening reads the "retry: 3000" block and the rate_update frames that
// must follow at once, one per pair in want (in engine.DefaultMarkets().PairList() order).
func (c *sseClient) opening(want ...engine.Pair) []map[string]any {
	c.t.Helper()
	f := c.next(streamPrompt)
	if f.retry != "3000" || f.event != "" || f.data != "" {
		c.t.Fatalf("first frame %+v; want retry: 3000 alone", f)
	}
	var updates []map[string]any
	for _, p := range want {
		f := c.next(streamPrompt)
		if f.event != "rate_update" {
			c.t.Fatalf("frame %+v; want the rate_update of %s at once", f, p)
		}
		u := rateUpdate(c.t, f)
		if u["from"] != p.Source.String() || u["to"] != p.Destination.String() {
			c.t.Fatalf("rate_update %s; want pair %s", f.data, p)
		}
		updates = append(updates, u)
	}
	return updates
}

// rateUpdate checks the shape of a rate_update frame and decodes its data
// with numbers kept as text.
func rateUpdate(t testing.TB, f sseFrame) map[string]any {
	t.Helper()
	if f.event != "rate_update" || f.id == 0 {
		t.Fatalf("frame %+v is not a rate_update with an id", f)
	}
	dec := json.NewDecoder(strings.NewReader(f.data))
	dec.UseNumber()
	var u map[string]any
	if err := dec.Decode(&u); err != nil {
		t.Fatalf("rate_update data %q: %v", f.data, err)
	}
	var keys []string
	for k := range u {
		keys = append(keys, k)
	}
	if len(u) != 6 {
		t.Fatalf("rate_update members %v; want from, to, rate, timestamp, source, percentChange24h", keys)
	}
	for _, k := range []string{"rate", "percentChange24h"} {
		n, ok := u[k].(json.Number)
		if !ok {
			t.Fatalf("%s in %s is not a JSON number", k, f.data)
		}
		if strings.ContainsAny(string(n), "eE") {
			t.Fatalf("%s in %s is in exponent form", k, f.data)
		}
	}
	if u["source"] != "CONSENSUS" {
		t.Fatalf("source in %s; want CONSENSUS", f.data)
	}
	if ts, _ := u["timestamp"].(string); !streamTimestamp.MatchString(ts) {
		t.Fatalf("timestamp in %s is not RFC 3339 UTC with milliseconds", f.data)
	}
	return u
}

func wantRate(t testing.TB, u map[string]any, want string) {
	t.Helper()
	got, _ := u["rate"].(json.Number)
	if !decimal.RequireFromString(string(got)).Equal(decimal.RequireFromString(want)) {
		t.Fatalf("rate %s; want %s", got, want)
	}
}

func wantChange(t testing.TB, u map[string]any, want string) {
	t.Helper()
	got, _ := u["percentChange24h"].(json.Number)
	if !decimal.RequireFromString(string(got)).Equal(decimal.RequireFromString(want)) {
		t.Fatalf("percentChange24h %s; want %s", got, want)
	}
}

// setRate changes a pool's rate the way an operator does.
func setRate(t testing.TB, s *gatewaytest.Server, pool *engine.Pool, rate string) {
	t.Helper()
	r, err := engine.RateFromDecimal(decimal.RequireFromString(rate))
	if err != nil {
		t.Fatal(err)
	}
	reply := s.Sys.ChangePool(&actors.PoolCommand{Pool: pool.ID, Rate: r})
	if reply.Err != nil || reply.Result != engine.ResultOK {
		t.Fatalf("set rate %s: %v %v", rate, reply.Err, reply.Result)
	}
}

// testClock is a clock the test moves forward.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

func streamServer(t testing.TB) *gatewaytest.Server {
	return gatewaytest.Start(t, gatewaytest.Options{SSEHeartbeat: streamHeartbeat})
}

func TestRateStreamOpensWithCurrentRate(t *testing.T) {
	s := streamServer(t)
	p := s.NewPartner(t, "streamer")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "A", "0.000625", "1000")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "B", "0.00062", "500")
	client := streamHTTP(t)

	c := openStream(t, client, s, p.SandboxKey, "from=NGN&to=USDT")
	for name, want := range map[string]string{
		"Content-Type":      "text/event-stream",
		"Cache-Control":     "no-cache",
		"X-Accel-Buffering": "no",
	} {
		if got := c.resp.Header.Get(name); got != want {
			t.Errorf("%s: %q; want %q", name, got, want)
		}
	}
	if c.resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("no X-Request-Id")
	}
	u := c.opening(gatewaytest.NGNUSDT)[0]
	// Weighted median: B (500) alone is under half of 1500, A with B is not.
	wantRate(t, u, "0.000625")
	wantChange(t, u, "0")
	// The raw data line: the rate is a plain JSON number.
	c2 := openStream(t, client, s, p.SandboxKey, "from=NGN&to=USDT")
	c2.next(streamPrompt)
	f := c2.next(streamPrompt)
	if !strings.Contains(f.data, `"rate":0.000625,`) || !strings.HasPrefix(f.data, `{"from":"NGN","to":"USDT",`) {
		t.Fatalf("data %s", f.data)
	}

	// A pair without pools has no rate: nothing but heartbeats follow.
	c3 := openStream(t, client, s, p.SandboxKey, "from=GHS&to=USDT")
	c3.opening()
	if f := c3.next(2 * streamHeartbeat * 2); f.event != "heartbeat" {
		t.Fatalf("frame %+v; want a heartbeat", f)
	}
}

func TestRateStreamHeartbeat(t *testing.T) {
	s := streamServer(t)
	p := s.NewPartner(t, "streamer")
	c := openStream(t, streamHTTP(t), s, p.LiveKey, "")
	c.opening() // live mode has no pools: no rates
	last := time.Now()
	var lastID uint64
	for i := 0; i < 4; i++ {
		f := c.next(3 * streamHeartbeat)
		if f.event != "heartbeat" {
			t.Fatalf("frame %+v; want a heartbeat", f)
		}
		if f.id <= lastID {
			t.Fatalf("heartbeat id %d after %d; ids must increase", f.id, lastID)
		}
		lastID = f.id
		if gap := f.at.Sub(last); i > 0 && (gap < streamHeartbeat/2 || gap > 4*streamHeartbeat) {
			t.Fatalf("heartbeat %d came %s after the previous; want about %s", i, gap, streamHeartbeat)
		}
		last = f.at
		var data map[string]any
		if err := json.Unmarshal([]byte(f.data), &data); err != nil {
			t.Fatalf("heartbeat data %q: %v", f.data, err)
		}
		ts, _ := data["timestamp"].(string)
		if len(data) != 2 || data["status"] != "connected" || !streamTimestamp.MatchString(ts) {
			t.Fatalf("heartbeat data %s", f.data)
		}
	}
}

func TestRateStreamUpdateAfterRateChange(t *testing.T) {
	clock := &testClock{}
	s := gatewaytest.Start(t, gatewaytest.Options{SSEHeartbeat: streamHeartbeat, Clock: clock.now})
	p := s.NewPartner(t, "streamer")
	a := s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "A", "0.000625", "1000")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "B", "0.00062", "500")
	client := streamHTTP(t)
	c := openStream(t, client, s, p.SandboxKey, "from=NGN&to=USDT")
	first := c.opening(gatewaytest.NGNUSDT)[0]

	// Two minutes later (the history keeps one sample per minute), the
	// median pool moves: +0.8 % against the oldest known consensus.
	clock.advance(2 * time.Minute)
	changed := time.Now()
	setRate(t, s, a, "0.00063")
	f := c.nextEvent("rate_update", streamPrompt)
	if delay := f.at.Sub(changed); delay > streamPrompt {
		t.Fatalf("update arrived %s after the change", delay)
	}
	u := rateUpdate(t, f)
	wantRate(t, u, "0.00063")
	wantChange(t, u, "0.8")
	if u["timestamp"] == first["timestamp"] {
		t.Fatalf("timestamp %v did not move with the consensus", u["timestamp"])
	}
	at, _ := time.Parse(time.RFC3339Nano, u["timestamp"].(string))
	if d := s.Now().Sub(at); d < 0 || d > 5*time.Second {
		t.Fatalf("timestamp %v is not when the consensus changed (the server's now %v)", at, s.Now())
	}

	// A change that does not move the median sends nothing.
	setRate(t, s, a, "0.00063") // same rate again
	if f, ok := c.tryNext(3 * streamHeartbeat); ok && f.event == "rate_update" {
		t.Fatalf("unexpected %s", f.data)
	}

	// A day later the reference is the consensus of 24 h before.
	clock.advance(24 * time.Hour)
	setRate(t, s, a, "0.000635")
	u = rateUpdate(t, c.nextEvent("rate_update", streamPrompt))
	wantRate(t, u, "0.000635")
	wantChange(t, u, "0.79") // (0.000635 − 0.00063) ÷ 0.00063 = 0.7936… %

	// Suspending every pool leaves no consensus: no frame; reactivating
	// sends the rate again.
	on, off := true, false
	for _, pool := range s.Sys.Pools(engine.ModeSandbox) {
		if r := s.Sys.ChangePool(&actors.PoolCommand{Pool: pool.ID, Status: &off}); r.Err != nil || r.Result != engine.ResultOK {
			t.Fatalf("suspend: %v %v", r.Err, r.Result)
		}
	}
	if f, ok := c.tryNext(3 * streamHeartbeat); ok && f.event == "rate_update" {
		t.Fatalf("unexpected %s with no active pool", f.data)
	}
	if r := s.Sys.ChangePool(&actors.PoolCommand{Pool: a.ID, Status: &on}); r.Err != nil || r.Result != engine.ResultOK {
		t.Fatalf("activate: %v %v", r.Err, r.Result)
	}
	wantRate(t, rateUpdate(t, c.nextEvent("rate_update", streamPrompt)), "0.000635")
}

func TestRateStreamAllPairs(t *testing.T) {
	s := streamServer(t)
	p := s.NewPartner(t, "streamer")
	ngn := s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "N", "0.000625", "1000")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.GHSUSDT, "G", "0.0668", "1000")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNGHS, "X", "0.00937", "1000")
	s.NewPool(t, engine.ModeLive, gatewaytest.NGNUSDT, "Live", "0.0006", "1000")
	client := streamHTTP(t)

	c := openStream(t, client, s, p.SandboxKey, "")
	u := c.opening(gatewaytest.NGNUSDT, gatewaytest.GHSUSDT, gatewaytest.NGNGHS)
	wantRate(t, u[0], "0.000625")
	wantRate(t, u[1], "0.0668")
	wantRate(t, u[2], "0.00937")
	// "from=&to=" is neither.
	openStream(t, client, s, p.SandboxKey, "from=&to=").opening(gatewaytest.NGNUSDT, gatewaytest.GHSUSDT, gatewaytest.NGNGHS)

	// A live key sees live rates only.
	live := openStream(t, client, s, p.LiveKey, "")
	wantRate(t, live.opening(gatewaytest.NGNUSDT)[0], "0.0006")

	setRate(t, s, ngn, "0.000626")
	wantRate(t, rateUpdate(t, c.nextEvent("rate_update", streamPrompt)), "0.000626")
	if f, ok := live.tryNext(3 * streamHeartbeat); ok && f.event == "rate_update" {
		t.Fatalf("live stream got sandbox update %s", f.data)
	}
}

func TestRateStreamRefusals(t *testing.T) {
	s := streamServer(t)
	p := s.NewPartner(t, "streamer")
	client := streamHTTP(t)
	const pairBody = `{"code":"INVALID_CURRENCY_PAIR","message":"supported pairs are NGN/USDT, GHS/USDT, NGN/GHS"}`
	for _, query := range []string{
		"from=NGN", "to=USDT", "from=NGN&to=", "from=GHS&to=NGN", "from=NGN&to=NGN",
		"from=USDT&to=NGN", "from=ngn&to=usdt", "from=XXX&to=USDT", "from=NGN&to=EUR",
	} {
		resp := streamRequest(t, client, s, p.SandboxKey, query)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || string(body) != pairBody {
			t.Errorf("%s: %d %s; want 400 %s", query, resp.StatusCode, body, pairBody)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", query, ct)
		}
	}
	for _, key := range []string{"", "oja_sandbox_notakeyatallnotakeyatallnotakey"} {
		resp := streamRequest(t, client, s, key, "from=NGN&to=USDT")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e map[string]any
		if resp.StatusCode != http.StatusUnauthorized || json.Unmarshal(body, &e) != nil || e["code"] != "UNAUTHORIZED" {
			t.Errorf("key %q: %d %s; want 401 UNAUTHORIZED", key, resp.StatusCode, body)
		}
		if resp.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("key %q: no WWW-Authenticate: Bearer", key)
		}
	}
	resp := streamRequest(t, client, s, p.SandboxKey, "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a refusal must not count as an open stream: %d", resp.StatusCode)
	}
}

func TestRateStreamPerKeyCap(t *testing.T) {
	s := streamServer(t)
	p := s.NewPartner(t, "streamer")
	other := s.NewPartner(t, "other")
	client := streamHTTP(t)
	const perKeyMax = 10 // sseStreamsPerKeyMax
	var open []*sseClient
	for range perKeyMax {
		c := openStream(t, client, s, p.SandboxKey, "")
		c.opening()
		open = append(open, c)
	}
	resp := streamRequest(t, client, s, p.SandboxKey, "")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e map[string]any
	if resp.StatusCode != http.StatusTooManyRequests || json.Unmarshal(body, &e) != nil || e["code"] != "RATE_LIMITED" {
		t.Fatalf("stream %d: %d %s; want 429 RATE_LIMITED", perKeyMax+1, resp.StatusCode, body)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	// The cap is per key: the same client's live key and another client
	// still get streams.
	openStream(t, client, s, p.LiveKey, "").opening()
	openStream(t, client, s, other.SandboxKey, "").opening()

	// Closing one frees its place once the server notices (at the latest on
	// the next heartbeat it writes).
	open[0].close()
	poll.Until(t, 5*time.Second, func() string {
		resp := streamRequest(t, client, s, p.SandboxKey, "")
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("still %d after a stream closed", resp.StatusCode)
		}
		return ""
	})
}

func TestRateStreamLastEventID(t *testing.T) {
	s := streamServer(t)
	p := s.NewPartner(t, "streamer")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "A", "0.000625", "1000")
	client := streamHTTP(t)
	c := openStream(t, client, s, p.SandboxKey, "from=NGN&to=USDT")
	c.opening(gatewaytest.NGNUSDT)
	last := c.next(3 * streamHeartbeat)
	c.close()

	for _, header := range []string{strconv.FormatUint(last.id, 10), "not-a-number", "-1", ""} {
		r := openStream(t, client, s, p.SandboxKey, "from=NGN&to=USDT", "Last-Event-ID", header)
		f := r.next(streamPrompt)
		if f.retry != "3000" {
			t.Fatalf("Last-Event-ID %q: first frame %+v", header, f)
		}
		f = r.next(streamPrompt)
		wantRate(t, rateUpdate(t, f), "0.000625")
		if f.id <= last.id {
			t.Fatalf("Last-Event-ID %q: id %d after %d; ids must keep increasing", header, f.id, last.id)
		}
		last = f
		r.close()
	}
}

// neverReader opens a stream on a raw connection with a tiny receive
// buffer and never reads from it. It also asks for a small segment size:
// on loopback (MSS ~64 KiB) the server's send buffer would otherwise start
// at over a megabyte, and take minutes of updates to fill.
func neverReader(t testing.TB, s *gatewaytest.Server, key string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024)
			if err == nil {
				err = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, 536)
			}
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	conn, err := d.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: oja\r\nAuthorization: Bearer %s\r\n\r\n", streamPath, key)
	return conn
}

func TestRateStreamSlowSubscriberDoesNotDelayOthers(t *testing.T) {
	if testing.Short() {
		t.Skip("50 streams and a stalled one")
	}
	// The readers must have the final rates well before the stalled
	// stream may be dropped (fanoutStall): were the server to wait on the
	// stalled one, they would wait until then. The budget is generous for
	// 50 streams under -race on a loaded machine; the speed of the fan-out
	// is bench/sse's to measure.
	const fanoutPrompt, fanoutStall = 4 * time.Second, 6 * time.Second
	s := gatewaytest.Start(t, gatewaytest.Options{SSEHeartbeat: 50 * time.Millisecond, SSEStallMax: fanoutStall})
	pools := []*engine.Pool{
		s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "N", "0.000625", "1000"),
		s.NewPool(t, engine.ModeSandbox, gatewaytest.GHSUSDT, "G", "0.0668", "1000"),
		s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNGHS, "X", "0.00937", "1000"),
	}
	stalled := s.NewPartner(t, "stalled")
	stuck := neverReader(t, s, stalled.SandboxKey)
	defer stuck.Close()

	const subscribers = 50
	client := streamHTTP(t)
	streams := make([]*sseClient, subscribers)
	for i := range streams {
		// Five streams per partner: the per-key cap is not what is tested.
		if i%5 == 0 {
			p := s.NewPartner(t, fmt.Sprintf("reader%d", i))
			streams[i] = openStream(t, client, s, p.SandboxKey, "")
		} else {
			streams[i] = openStream(t, client, s, streams[i-1].key(), "")
		}
		streams[i].opening(gatewaytest.NGNUSDT, gatewaytest.GHSUSDT, gatewaytest.NGNGHS)
	}
	if got := s.Streams(); got != subscribers+1 {
		t.Fatalf("%d streams open; want %d", got, subscribers+1)
	}

	// Many changes, fast: every reader must see the last rate of each pair
	// promptly, whatever the stalled one does.
	steps := 40
	var final [3]string
	for step := 1; step <= steps; step++ {
		for k, pool := range pools {
			rate := pool.Rate.Decimal().Mul(decimal.NewFromInt(int64(1000 + step))).Div(decimal.NewFromInt(1000))
			final[k] = rate.String()
			setRate(t, s, pool, final[k])
		}
	}
	changed := time.Now()
	var wg sync.WaitGroup
	var worst atomic.Int64
	for i, c := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := map[string]bool{}
			for len(seen) < 3 {
				f, ok := c.tryNext(time.Until(changed.Add(fanoutPrompt)))
				if !ok {
					t.Errorf("stream %d: the final rates did not all arrive within %s", i, fanoutPrompt)
					return
				}
				if f.event != "rate_update" {
					continue
				}
				var u struct {
					From, To string
					Rate     json.Number
				}
				if err := json.Unmarshal([]byte(f.data), &u); err != nil {
					t.Errorf("stream %d: %v", i, err)
					return
				}
				for k, pool := range pools {
					if u.From == pool.Pair.Source.String() && u.To == pool.Pair.Destination.String() &&
						decimal.RequireFromString(string(u.Rate)).Equal(decimal.RequireFromString(final[k])) {
						seen[u.From+u.To] = true
					}
				}
				if d := int64(f.at.Sub(changed)); d > worst.Load() {
					worst.Store(d)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("slowest reader got the final rates %s after the last change", time.Duration(worst.Load()))
	if got := s.Streams(); got != subscribers+1 {
		t.Fatalf("%d streams open once the readers were served; want %d (the stalled one too)", got, subscribers+1)
	}

	// The stalled stream: the server's writes to it eventually block, and it
	// is disconnected after SSEStallMax. Keep the changes coming so that its
	// buffers fill.
	step := steps
	poll.Until(t, fanoutStall+20*time.Second, func() string {
		if n := s.Streams(); n > subscribers {
			step++
			for _, pool := range pools {
				rate := pool.Rate.Decimal().Mul(decimal.NewFromInt(int64(1000 + step%100))).Div(decimal.NewFromInt(1000))
				setRate(t, s, pool, rate.String())
			}
			return fmt.Sprintf("the stalled stream is still open (%d streams)", n)
		}
		return ""
	})
	// The readers are still served.
	for i, c := range streams {
		if _, ok := c.tryNext(streamPrompt); !ok {
			t.Fatalf("stream %d stopped after the stalled one was dropped", i)
		}
	}
}

// key is the API key a stream was opened with.
func (c *sseClient) key() string {
	return strings.TrimPrefix(c.resp.Request.Header.Get("Authorization"), "Bearer ")
}

func TestRateStreamShutdownEndsStreams(t *testing.T) {
	s := streamServer(t)
	p := s.NewPartner(t, "streamer")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "A", "0.000625", "1000")
	client := streamHTTP(t)
	var streams []*sseClient
	for range 5 {
		c := openStream(t, client, s, p.SandboxKey, "from=NGN&to=USDT")
		c.opening(gatewaytest.NGNUSDT)
		streams = append(streams, c)
	}
	pools := []*engine.Pool{
		s.NewPool(t, engine.ModeSandbox, gatewaytest.GHSUSDT, "G", "0.0668", "1000"),
		s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNGHS, "X", "0.00937", "1000"),
	}
	stuck := neverReader(t, s, s.NewPartner(t, "stalled").SandboxKey)
	defer stuck.Close()
	poll.Until(t, 10*time.Second, func() string {
		if n := s.Streams(); n < 6 {
			return fmt.Sprintf("%d streams open; want 6", n)
		}
		return ""
	})
	// Rates move for a while, so that the server's writes to the stalled
	// connection fill its buffers and block (its stall limit is 30 s).
	for step := 1; step <= 200; step++ {
		for _, pool := range pools {
			rate := pool.Rate.Decimal().Mul(decimal.NewFromInt(int64(1000 + step))).Div(decimal.NewFromInt(1000))
			setRate(t, s, pool, rate.String())
		}
		time.Sleep(10 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	started := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with open streams: %v", err)
	}
	took := time.Since(started)
	if took > 3*time.Second {
		t.Fatalf("shutdown took %s", took)
	}
	t.Logf("shutdown with 6 open streams (one stalled) took %s", took)
	for i, c := range streams {
		// A clean end: the chunked body is terminated, the reader sees EOF.
		if err := c.ended(2 * time.Second); err != io.EOF {
			t.Fatalf("stream %d ended with %v; want a clean EOF", i, err)
		}
	}
	if n := s.Streams(); n != 0 {
		t.Fatalf("%d streams still registered after shutdown", n)
	}
	// The stalled connection was closed too.
	stuck.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, stuck); err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("stalled connection: %v", err)
	}
	if _, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		t.Fatal("still accepting after shutdown")
	}
}

// TestRateStreamEndsWithItsTerm: a cluster node that loses its
// leadership ends its term; the streams opened during the term must end
// (a clean EOF, within a bound), not carry heartbeats forever — their
// clients reconnect to whoever serves now. A term replaced by another ends
// its streams too; a stream asked for once the term has ended is refused
// (503, the client retries).
func TestRateStreamEndsWithItsTerm(t *testing.T) {
	s := streamServer(t)
	p := s.NewPartner(t, "streamer")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "A", "0.000625", "1000")
	client := streamHTTP(t)
	open := func(n int) []*sseClient {
		var streams []*sseClient
		for range n {
			c := openStream(t, client, s, p.SandboxKey, "from=NGN&to=USDT")
			c.opening(gatewaytest.NGNUSDT)
			streams = append(streams, c)
		}
		return streams
	}
	ended := func(what string, streams []*sseClient) {
		t.Helper()
		for i, c := range streams {
			if err := c.ended(5 * time.Second); err != io.EOF {
				t.Fatalf("stream %d %s: %v, want a clean EOF", i, what, err)
			}
		}
	}
	first := open(3)
	next := actors.NewTerm(s.Sys, nil, nil) // the same actors, as a new term
	s.SetTerm(next)
	ended("after its term was replaced", first)
	second := open(2)
	next.End() // leadership lost
	ended("after its term ended", second)
	if resp := streamRequest(t, client, s, p.SandboxKey, "from=NGN&to=USDT"); resp.StatusCode != http.StatusServiceUnavailable {
		resp.Body.Close()
		t.Fatalf("a stream once the term has ended: %d, want 503", resp.StatusCode)
	} else {
		resp.Body.Close()
	}
}

// TestRateStreamWire reads the stream's bytes as a client sees them: an
// HTTP/1.1 request gets a chunked body that, when the server shuts down,
// ends with the last chunk before the connection closes; an HTTP/1.0
// request (no chunked encoding in HTTP/1.0) gets the frames as they are,
// the body ending when the connection closes.
func TestRateStreamWire(t *testing.T) {
	s := streamServer(t)
	p := s.NewPartner(t, "wire")
	open := func(proto string) (net.Conn, *bufio.Reader) {
		t.Helper()
		conn, err := net.DialTimeout("tcp", strings.TrimPrefix(s.URL, "http://"), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "GET %s HTTP/%s\r\nHost: oja\r\nAuthorization: Bearer %s\r\n\r\n", streamPath, proto, p.SandboxKey)
		return conn, bufio.NewReader(conn)
	}
	head := func(r *bufio.Reader) string {
		t.Helper()
		var h strings.Builder
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("head: %v (%q so far)", err, h.String())
			}
			if line == "\r\n" {
				return h.String()
			}
			h.WriteString(line)
		}
	}
	_, r11 := open("1.1")
	h11 := head(r11)
	for _, want := range []string{"HTTP/1.1 200 OK\r\n", "Transfer-Encoding: chunked\r\n", "Content-Type: text/event-stream\r\n", "X-Request-Id: "} {
		if !strings.Contains(h11, want) {
			t.Errorf("HTTP/1.1 head lacks %q:\n%s", want, h11)
		}
	}
	if size, err := r11.ReadString('\n'); err != nil || size != "d\r\n" {
		t.Fatalf("first chunk size %q, %v; want d (retry: 3000 and a blank line)", size, err)
	}
	if chunk, err := r11.ReadString('\n'); err != nil || chunk != "retry: 3000\n" {
		t.Fatalf("first chunk %q, %v", chunk, err)
	}

	_, r10 := open("1.0")
	h10 := head(r10)
	if strings.Contains(h10, "Transfer-Encoding") || !strings.Contains(h10, "Connection: close\r\n") {
		t.Errorf("HTTP/1.0 head:\n%s\nwant no Transfer-Encoding and Connection: close", h10)
	}
	if line, err := r10.ReadString('\n'); err != nil || line != "retry: 3000\n" {
		t.Fatalf("HTTP/1.0 body starts %q, %v", line, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(r11)
	if err != nil || !strings.HasSuffix(string(rest), "\r\n0\r\n\r\n") {
		t.Errorf("HTTP/1.1 body after shutdown %q, %v; want it to end with the last chunk, then EOF", rest, err)
	}
	if _, err := io.ReadAll(r10); err != nil {
		t.Errorf("HTTP/1.0 body after shutdown: %v; want EOF", err)
	}
}
