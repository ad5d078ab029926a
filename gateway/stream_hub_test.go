package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/internal/poll"
)

// Unit tests of the rate stream hub, without a server: frames, conflation,
// caps and closing. The end-to-end behaviour is in stream_test.go.

func hubRate(text string) engine.Rate {
	r, err := engine.RateFromDecimal(decimal.RequireFromString(text))
	if err != nil {
		panic(err)
	}
	return r
}

func TestPercentChange(t *testing.T) {
	for _, tc := range []struct {
		name, current, reference, want string
	}{
		{"up", "0.00063", "0.000625", "0.8"},
		{"down, rounded away from zero", "0.000625", "0.00063", "-0.79"},
		{"unchanged", "0.0668", "0.0668", "0"},
		{"half to even: down to 0.00", "1.00005", "1", "0"},
		{"half to even: up to 0.02", "1.00015", "1", "0.02"},
		{"half to even, negative", "0.99995", "1", "0"},
		{"under half", "1.000049", "1", "0"},
		{"doubled", "2", "1", "100"},
		{"no reference", "1", "0", "0"},
	} {
		var reference engine.Rate
		if tc.reference != "0" {
			reference = hubRate(tc.reference)
		}
		got := percentChange(hubRate(tc.current), reference)
		if !got.Equal(decimal.RequireFromString(tc.want)) {
			t.Errorf("%s: percentChange(%s, %s) = %s; want %s", tc.name, tc.current, tc.reference, got, tc.want)
		}
	}
}

func TestAppendRateData(t *testing.T) {
	day := int64(24 * 60 * 60 * 1000)
	start := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).UnixMilli()
	tk := &engine.Ticker{Consensus: hubRate("0.000630"), ConsensusAt: start + day + 123, HasConsensus: true}
	tk.ConsensusPast.Record(start, hubRate("0.000625"))
	tk.ConsensusPast.Record(start+day+123, hubRate("0.000630"))
	pair := engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT}
	for _, tc := range []struct {
		name string
		now  int64
		want string
	}{
		{"a day after the reference", start + day + 500,
			`{"from":"NGN","to":"USDT","rate":0.00063,"timestamp":"2026-11-21T10:00:00.123Z","source":"CONSENSUS","percentChange24h":0.8}`},
		{"the reference is the current rate a day later", start + 2*day + 200,
			`{"from":"NGN","to":"USDT","rate":0.00063,"timestamp":"2026-11-21T10:00:00.123Z","source":"CONSENSUS","percentChange24h":0}`},
	} {
		if got := string(appendRateData(nil, pair, tk, tc.now)); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	single := &engine.Ticker{Consensus: hubRate("15"), ConsensusAt: start, HasConsensus: true}
	got := string(appendRateData(nil, pair, single, start))
	if !strings.Contains(got, `"rate":15,`) || !strings.HasSuffix(got, `"percentChange24h":0}`) {
		t.Errorf("no history: %s", got)
	}
}

func newTestHub(t *testing.T, heartbeat time.Duration) *streamHub {
	t.Helper()
	h := newStreamHub(heartbeat, 0, slog.New(slog.DiscardHandler))
	h.serve(actors.NewTerm(nil, nil, nil)) // streams on no system (subscribe(nil, …)), never ending
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = h.close(ctx)
	})
	return h
}

// nextResult is what one sub.next call returned.
type nextResult struct {
	frames string
	err    error
}

// startNext calls sub.next on a goroutine (as fasthttp's connection
// goroutine would) and delivers its result.
func startNext(sub *streamSubscriber) <-chan nextResult {
	done := make(chan nextResult, 1)
	go func() {
		b, err := sub.next()
		frames := string(b)
		sub.release()
		done <- nextResult{frames, err}
	}()
	return done
}

// nextWithin is startNext, waiting at most d; ok is false on timeout, and
// then the call is still running: the caller must end it (close the hub)
// before touching sub again.
func nextWithin(t *testing.T, sub *streamSubscriber, d time.Duration) (string, error, bool) {
	t.Helper()
	select {
	case r := <-startNext(sub):
		return r.frames, r.err, true
	case <-time.After(d):
		return "", nil, false
	}
}

func TestStreamHubConflates(t *testing.T) {
	h := newTestHub(t, time.Hour)
	key := engine.BookKey{Mode: engine.ModeSandbox, Pair: engine.DefaultMarkets().PairList()[0]}
	sub, e := h.subscribe(nil, actors.Principal{Key: engine.KeyID{1}, Mode: engine.ModeSandbox}, engine.DefaultMarkets().PairList()[:1], nil)
	if e != nil {
		t.Fatal(e.code)
	}
	b, err, ok := nextWithin(t, sub, time.Second)
	if !ok || err != nil || b != "retry: 3000\n\n" {
		t.Fatalf("opening %q, %v, %v; want the retry field alone (no rate yet)", b, err, ok)
	}
	// A burst of changes, none read yet: the subscriber sends the last.
	var last *engine.Ticker
	for i := 1; i <= 100; i++ {
		last = &engine.Ticker{Consensus: engine.RateFromUnits(uint64(i) * 1_000_000_000_000), ConsensusAt: int64(i), HasConsensus: true}
		h.rateChanged(key, last)
	}
	// A change of a pair the subscriber does not follow, and of the other
	// mode, wake nothing.
	h.rateChanged(engine.BookKey{Mode: engine.ModeSandbox, Pair: engine.DefaultMarkets().PairList()[1]}, last)
	h.rateChanged(engine.BookKey{Mode: engine.ModeLive, Pair: engine.DefaultMarkets().PairList()[0]}, last)
	b, err, ok = nextWithin(t, sub, time.Second)
	if !ok || err != nil {
		t.Fatalf("no update: %v %v", err, ok)
	}
	if n := strings.Count(b, "event: rate_update"); n != 1 || !strings.Contains(b, `"rate":0.0001,`) {
		t.Fatalf("burst sent as %q; want one rate_update with the last rate", b)
	}
	pending := startNext(sub)
	select {
	case r := <-pending:
		t.Fatalf("after the burst: %q, %v; want nothing", r.frames, r.err)
	case <-time.After(200 * time.Millisecond):
	}
	// Closing the hub ends the waiting writer.
	closed := make(chan error, 1)
	go func() { closed <- h.close(context.Background()) }()
	if r := <-pending; r.err != io.EOF || r.frames != "" {
		t.Fatalf("on close: %q, %v; want io.EOF", r.frames, r.err)
	}
	sub.Close()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

func TestStreamHubHeartbeat(t *testing.T) {
	h := newTestHub(t, 20*time.Millisecond)
	sub, e := h.subscribe(nil, actors.Principal{Key: engine.KeyID{1}, Mode: engine.ModeLive}, engine.DefaultMarkets().PairList(), nil)
	if e != nil {
		t.Fatal(e.code)
	}
	defer sub.Close()
	nextWithin(t, sub, time.Second)
	b, err, ok := nextWithin(t, sub, time.Second)
	if !ok || err != nil || !strings.HasPrefix(b, "id: ") ||
		!strings.Contains(b, "\nevent: heartbeat\ndata: {\"status\":\"connected\",\"timestamp\":\"") || !strings.HasSuffix(b, "\"}\n\n") {
		t.Fatalf("heartbeat %q, %v, %v", b, err, ok)
	}
}

func TestStreamHubCaps(t *testing.T) {
	h := newTestHub(t, time.Hour)
	who := actors.Principal{Key: engine.KeyID{1}, Mode: engine.ModeSandbox}
	var subs []*streamSubscriber
	for range sseStreamsPerKeyMax {
		sub, e := h.subscribe(nil, who, engine.DefaultMarkets().PairList()[:1], nil)
		if e != nil {
			t.Fatalf("stream %d: %s", len(subs)+1, e.code)
		}
		subs = append(subs, sub)
	}
	if _, e := h.subscribe(nil, who, engine.DefaultMarkets().PairList()[:1], nil); e != errStreamsPerKey || e.status != 429 || e.code != "RATE_LIMITED" {
		t.Fatalf("over the per-key cap: %+v; want 429 RATE_LIMITED", e)
	}
	subs[0].Close()
	subs[0].Close() // fasthttp may close twice; counted once
	if sub, e := h.subscribe(nil, who, engine.DefaultMarkets().PairList()[:1], nil); e != nil {
		t.Fatalf("after one closed: %s", e.code)
	} else {
		subs[0] = sub
	}
	for i := h.count(); i < sseSubscribersMax; i++ {
		other := actors.Principal{Key: engine.KeyID{2, byte(i), byte(i >> 8)}, Mode: engine.ModeLive}
		sub, e := h.subscribe(nil, other, engine.DefaultMarkets().PairList()[:1], nil)
		if e != nil {
			t.Fatalf("stream %d of %d: %s", i+1, sseSubscribersMax, e.code)
		}
		subs = append(subs, sub)
	}
	other := actors.Principal{Key: engine.KeyID{3}, Mode: engine.ModeLive}
	if _, e := h.subscribe(nil, other, engine.DefaultMarkets().PairList()[:1], nil); e != errStreamsFull || e.status != 503 || e.code != "UNAVAILABLE" {
		t.Fatalf("over the total cap: %+v; want 503 UNAVAILABLE", e)
	}

	// Closing waits for every subscriber, and refuses new ones.
	closed := make(chan error, 1)
	go func() { closed <- h.close(context.Background()) }()
	poll.True(t, 10*time.Second, "the hub starts closing", h.closing.Load)
	if _, e := h.subscribe(nil, other, engine.DefaultMarkets().PairList()[:1], nil); e != errUnavailable {
		t.Fatalf("while closing: %+v; want 503", e)
	}
	select {
	case err := <-closed:
		t.Fatalf("close returned (%v) with %d subscribers open", err, h.count())
	case <-time.After(50 * time.Millisecond):
	}
	for _, sub := range subs {
		if _, err := sub.next(); err != nil { // the opening frames
			t.Fatal(err)
		}
		sub.release()
		if _, err := sub.next(); err != io.EOF {
			t.Fatalf("next after close: %v; want io.EOF", err)
		}
		sub.Close()
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("close did not return with every subscriber closed (%d left)", h.count())
	}
}

// TestStreamHubConnClosedBeforeHijack: a stream whose connection closes
// before fasthttp hands it over is unregistered (its slot and its key's
// count return), and a late hijack of it starts nothing.
func TestStreamHubConnClosedBeforeHijack(t *testing.T) {
	h := newTestHub(t, time.Hour)
	server, client := net.Pipe()
	defer client.Close()
	who := actors.Principal{Key: engine.KeyID{7}, Mode: engine.ModeSandbox}
	sub, e := h.subscribe(nil, who, engine.DefaultMarkets().PairList()[:1], server)
	if e != nil {
		t.Fatal(e.code)
	}
	h.awaitHijack(sub)
	h.connClosed(client) // another connection: nothing
	if h.count() != 1 {
		t.Fatalf("%d streams after another connection closed, want 1", h.count())
	}
	h.connClosed(server)
	if h.count() != 0 {
		t.Fatalf("%d streams after its connection closed, want 0", h.count())
	}
	if h.hijacked(sub) {
		t.Fatal("a stream whose connection closed was hijacked")
	}
	h.mu.RLock()
	left := h.perKey[who.Key]
	h.mu.RUnlock()
	if left != 0 {
		t.Fatalf("key still counts %d streams", left)
	}
	// Close after connClosed (serve's deferred Close) is a no-op.
	_ = sub.Close()
	if h.count() != 0 {
		t.Fatalf("a second Close counted again: %d", h.count())
	}
}

// servedStream opens a loopback TCP connection, subscribes its server
// side to pairs on h (the client's receive buffer set to readBuffer when
// not 0) and serves it chunked on a goroutine until served closes; it
// returns once the opening batch is written, with a reader of the
// client's side past the response head.
func servedStream(t *testing.T, h *streamHub, pairs []engine.Pair, readBuffer int) (sub *streamSubscriber, r *bufio.Reader, served chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	if readBuffer > 0 {
		_ = client.(*net.TCPConn).SetReadBuffer(readBuffer)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	who := actors.Principal{Key: engine.KeyID{9}, Mode: engine.ModeSandbox}
	sub, e := h.subscribe(nil, who, pairs, &sniffConn{Conn: server})
	if e != nil {
		t.Fatal(e.code)
	}
	if sub.socket == nil {
		t.Fatal("no socket to write to directly on a TCP connection")
	}
	served = make(chan struct{})
	go func() {
		defer close(served)
		sub.serve([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), true)
	}()
	poll.True(t, 5*time.Second, "the opening batch written", func() bool {
		sub.writeMu.Lock()
		defer sub.writeMu.Unlock()
		return sub.started && !sub.busy
	})
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	r = bufio.NewReader(client)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("head: %v", err)
		}
		if line == "\r\n" {
			return sub, r, served
		}
	}
}

// readChunk reads one HTTP/1.1 chunk from r and returns its body.
func readChunk(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	sizeLine, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	size, err := strconv.ParseInt(strings.TrimSuffix(sizeLine, "\r\n"), 16, 64)
	if err != nil || size <= 0 {
		t.Fatalf("chunk size line %q", sizeLine)
	}
	chunk := make([]byte, size+2)
	if _, err := io.ReadFull(r, chunk); err != nil {
		t.Fatal(err)
	}
	if string(chunk[size:]) != "\r\n" {
		t.Fatalf("chunk of %d bytes ends %q", size, chunk[size:])
	}
	return string(chunk[:size])
}

// The fan-out writes a changed rate straight to a stream's socket. When the
// socket takes only part of a frame (its client reads slowly), the stream's
// own goroutine writes the rest before anything else, and changes meanwhile
// go to that goroutine: the client reads whole chunks and frames, rates and
// ids in order, ending with the last rate.
func TestStreamHubFanoutLeavesTheRestToTheStream(t *testing.T) {
	h := newTestHub(t, time.Hour)
	sub, r, served := servedStream(t, h, engine.DefaultMarkets().PairList()[:1], 4096)

	index := sub.follows[0].index
	change := func(i int) {
		h.latest[index].Store(&engine.Ticker{Consensus: engine.RateFromUnits(uint64(i) * 1_000_000_000_000),
			ConsensusAt: int64(i), HasConsensus: true})
		h.deliver([]fanoutTarget{{sub: sub, bits: 1 << index}})
	}
	left := func() bool {
		sub.writeMu.Lock()
		defer sub.writeMu.Unlock()
		return len(sub.leftover) > 0
	}
	changes, filled := 0, false
	for changes < 100_000 && !filled {
		changes++
		change(changes)
		filled = left()
	}
	if !filled {
		t.Fatalf("%d frames and the socket never filled", changes)
	}
	for range 3 { // the stream is busy with the rest: these go to its goroutine
		changes++
		change(changes)
	}
	want := engine.AppendRate(nil, engine.RateFromUnits(uint64(changes)*1_000_000_000_000))

	var lastID uint64
	var lastRate decimal.Decimal
	frames := 0
	for {
		body := readChunk(t, r)
		if strings.HasPrefix(body, "retry:") {
			continue
		}
		var id uint64
		var data string
		if _, err := fmt.Sscanf(body, "id: %d\nevent: rate_update\ndata: %s\n\n", &id, &data); err != nil || !strings.HasSuffix(body, "}\n\n") {
			t.Fatalf("frame %q: %v", body, err)
		}
		rate, _, _ := strings.Cut(strings.TrimPrefix(data[strings.Index(data, `"rate":`):], `"rate":`), ",")
		d := decimal.RequireFromString(rate)
		if id <= lastID || !d.GreaterThan(lastRate) {
			t.Fatalf("frame %d: id %d rate %s after id %d rate %s", frames, id, d, lastID, lastRate)
		}
		lastID, lastRate = id, d
		frames++
		if rate == string(want) {
			break
		}
	}
	if frames < 2 || frames > changes {
		t.Fatalf("%d frames for %d changes", frames, changes)
	}
	_ = h.close(context.Background())
	<-served
}

// TestFanoutTargetsInOrder: the fan-out's targets go out in the order
// their streams opened, one entry per subscriber with the bits of every
// changed key it follows, and nothing is held past the merged list.
func TestFanoutTargetsInOrder(t *testing.T) {
	a, b, c := &streamSubscriber{order: 1}, &streamSubscriber{order: 2}, &streamSubscriber{order: 3}
	targets := []fanoutTarget{
		{c, c.order, 1 << 0}, {a, a.order, 1 << 0}, {b, b.order, 1 << 0},
		{c, c.order, 1 << 2}, {a, a.order, 1 << 1},
	}
	got := inOrder(targets)
	want := []fanoutTarget{{a, 1, 1<<0 | 1<<1}, {b, 2, 1 << 0}, {c, 3, 1<<0 | 1<<2}}
	if !slices.Equal(got, want) {
		t.Errorf("inOrder = %v, want %v", got, want)
	}
	for i, left := range targets[len(got):] {
		if left.sub != nil {
			t.Errorf("entry %d past the merged list still holds subscriber %d", len(got)+i, left.order)
		}
	}
}

// TestFanoutOneWritePerSubscriber: a stream following two pairs whose
// rates changed in the same fan-out gets both rate_update events in one
// chunk, one write, not a write for each.
func TestFanoutOneWritePerSubscriber(t *testing.T) {
	h := newTestHub(t, time.Hour)
	sub, r, served := servedStream(t, h, engine.DefaultMarkets().PairList()[:2], 0)
	if len(sub.follows) != 2 {
		t.Fatalf("%d pairs followed, want 2", len(sub.follows))
	}
	var targets []fanoutTarget
	for k, f := range sub.follows {
		h.latest[f.index].Store(&engine.Ticker{Consensus: engine.RateFromUnits(uint64(k+1) * 1_000_000_000_000),
			ConsensusAt: int64(k + 1), HasConsensus: true})
		targets = append(targets, fanoutTarget{sub, sub.order, 1 << f.index})
	}
	h.deliver(inOrder(targets))
	for {
		body := readChunk(t, r)
		if strings.HasPrefix(body, "retry:") {
			continue
		}
		if n := strings.Count(body, "event: rate_update\n"); n != 2 {
			t.Fatalf("the first rate chunk holds %d rate_update events, want both pairs' in one: %q", n, body)
		}
		break
	}
	_ = h.close(context.Background())
	<-served
}

// BenchmarkFanoutInOrder is what ordering costs a fan-out to
// sseSubscribersMax streams following one changed key each: collecting the
// targets from a registry map (as the fan-out does), then the same and
// inOrder. The difference is the sort.
//
//	go test -run '^$' -bench FanoutInOrder ./gateway/
func BenchmarkFanoutInOrder(b *testing.B) {
	subs := make(map[*streamSubscriber]struct{}, sseSubscribersMax)
	for i := range sseSubscribersMax {
		subs[&streamSubscriber{order: uint64(i + 1)}] = struct{}{}
	}
	targets := make([]fanoutTarget, 0, len(subs))
	collect := func() {
		targets = targets[:0]
		for s := range subs {
			targets = append(targets, fanoutTarget{s, s.order, 1})
		}
	}
	b.Run("collect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			collect()
		}
	})
	b.Run("collect and order", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			collect()
			if got := inOrder(targets); len(got) != len(subs) || got[0].order != 1 {
				b.Fatalf("%d targets, the first %d", len(got), got[0].order)
			}
		}
	})
}
