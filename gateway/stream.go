package gateway

// The rate stream (spec §8): GET /partners/marketplace/rates/stream, a
// text/event-stream of consensus rate updates and heartbeats.
//
// How a stream is served:
//
//  1. The handler authenticates (s.partner), validates from/to and
//     registers a streamSubscriber with the hub (which enforces
//     sseStreamsPerKeyMax and sseSubscribersMax). serveStream sets the
//     status and headers on the response, tells fasthttp not to write it
//     (HijackSetNoResponse) and hijacks the connection.
//  2. Once the handler chain has returned (access log and metrics see the
//     200), fasthttp hands the connection over; the subscriber's own
//     goroutine (serve) writes the head, then "retry: 3000" and the current
//     rate of every selected pair, each batch one HTTP/1.1 chunk in one
//     write, then blocks until the hub marks it dirty, its heartbeat is
//     due, or the hub closes.
//  3. Pair actors call RateChanged (actors.Config.RateListener) when a
//     consensus rate changes. It stores the ticker and wakes the hub's one
//     fan-out goroutine; it never blocks the actor. The fan-out lists the
//     subscribers of each changed pair, in the order their streams opened
//     (a stream following several changed pairs once, with all of them:
//     inOrder), and splits them over one worker per core (itself and
//     GOMAXPROCS−1 goroutines for that fan-out). A worker
//     writes each subscriber's frame straight to its socket without
//     blocking (writeNow): a system call per subscriber, and no goroutine
//     woken. Where it cannot — the subscriber's goroutine is writing, the
//     connection is TLS (its bytes must go through the session), the
//     socket takes only part of the frame — it marks the subscriber dirty
//     (one bit per pair) and wakes its goroutine, which writes what the
//     worker left of a frame first and then renders the latest ticker of
//     each dirty pair. Updates of one pair conflate to the latest, so the
//     per-subscriber state is a bit mask and what waits to be written is
//     bounded by one frame per pair. The subscriber's writeMu orders the
//     two writers; the fan-out only tries it.
//  4. Before each of its writes the subscriber's goroutine makes sure its
//     connection's write deadline is at least sseStallMax away
//     (armDeadline). A subscriber whose socket accepts nothing for that
//     long fails the write and is disconnected; no one else waits for it
//     (the fan-out never blocks, and what a full socket did not take is
//     left to the stream's own goroutine).
//  5. When the stream ends (the hub closes, the term ends, a write fails)
//     serve ends the chunked body ("0\r\n\r\n") unless a write failed,
//     closes the connection and unregisters the subscriber. A connection
//     that closes before it was hijacked (fasthttp's ConnState reports it
//     closed) unregisters its subscriber instead (connClosed).
//
// NB: the stream leaves fasthttp once hijacked (KeepHijackedConns):
// fasthttp's RequestCtx, its 4 KiB write buffer and the deep connection
// goroutine are released, and the connection no longer counts against
// fasthttp's Concurrency (connectionsMax); sseSubscribersMax and
// sseStreamsPerKeyMax bound streams instead, and the hub, not fasthttp's
// Shutdown, ends them. Serving the stream as a fasthttp body stream on the
// connection goroutine (as a follower's relayed streams are: relayBody,
// cluster_stream.go) cost 18.4 KiB per idle stream against 4.9 KiB hijacked,
// with the same fan-out latency (docs/benchmarks.md).
//
// NB: the subscriber owns the connection's write deadline and moves it
// before each chunk it writes, so a stream lives as long as its client
// keeps reading, and the same deadline is the stall detector (the
// fan-out's writes never wait, so need none).
//
// Memory: an idle stream costs its goroutine's stack, the connection, and
// under 1 KiB of its own (subscriber, heartbeat ticker, registry entries);
// frame buffers are pooled and held only while a batch is written.
// bench/sse measures it.
//
// Shutdown (Server.Shutdown, before fasthttp's): the hub refuses new
// subscribers, shortens every stream's write deadline to
// sseShutdownWriteMax, and closes its closed channel. Idle writers end
// their body and close their connection at once; a writer blocked on a
// client that does not read fails its write within sseShutdownWriteMax.
// The hub waits until every subscriber has been closed.

import (
	"bytes"
	"net"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// Limits of the rate stream (listed with the others in the package doc).
const (
	// sseSubscribersMax bounds open rate streams on the whole server (503
	// UNAVAILABLE beyond it). A stream leaves fasthttp's connection count
	// once hijacked, so this is what bounds their connections.
	sseSubscribersMax = 15000
	// sseStreamsPerKeyMax bounds open rate streams per API key (429
	// RATE_LIMITED beyond it).
	sseStreamsPerKeyMax = 10
	// sseStallMax is how long one write to a stream may block (the client
	// reads nothing) before the subscriber is disconnected (spec §8); it
	// is disconnected within 1.25 × sseStallMax (armDeadline).
	sseStallMax = 30 * time.Second
	// sseHeartbeatDefault is the heartbeat interval when the configuration
	// names none (--sse-heartbeat).
	sseHeartbeatDefault = 15 * time.Second
	// sseShutdownWriteMax bounds how long the last bytes of a stream may take
	// once the server is shutting down.
	sseShutdownWriteMax = time.Second
	// sseSendBufferBytes bounds a stream socket's kernel send buffer
	// (SO_SNDBUF; Linux doubles it). Left to the kernel, a subscriber that
	// never reads was dropped only once ~2 MB of buffers filled — about an
	// hour at demo rates — so "cannot keep up for sseStallMax" did not mean
	// sseStallMax. Bounded, the writes block once the client's receive
	// window and this much are full, and the stall detector counts from
	// there.
	sseSendBufferBytes = 16 << 10
	// sseFanoutIntervalMin spaces the hub's fan-outs: a burst of consensus
	// changes (a busy book moves its weighted median on many quotes) reaches
	// each subscriber as at most one wake per interval, carrying the latest
	// rates.
	sseFanoutIntervalMin = 25 * time.Millisecond
	// sseRetryMillis is the reconnection delay the stream asks clients for.
	sseRetryMillis = 3000
	// sseRetryAfterSeconds is the Retry-After of a refused stream.
	sseRetryAfterSeconds = "3"
)

const ratesStreamPath = apiBase + "/partners/marketplace/rates/stream"

var (
	errStreamsPerKey = &apiError{status: fasthttp.StatusTooManyRequests, code: codeRateLimited,
		message: "too many open rate streams for this API key (at most " + strconv.Itoa(sseStreamsPerKeyMax) + "); close one or retry later"}
	errStreamsFull = &apiError{status: fasthttp.StatusServiceUnavailable, code: codeUnavailable,
		message: "the rate stream is at capacity; retry later"}
)

// RateChanged is the actors' RateListener (actors.Config.RateListener): a
// pair actor calls it, on its own goroutine, each time the consensus rate of
// its book changes. It only stores the ticker and wakes the hub's fan-out;
// it never blocks.
func (s *Server) RateChanged(key engine.BookKey, t *engine.Ticker) {
	s.streams.rateChanged(key, t)
}

// Streams is the number of open rate streams.
func (s *Server) Streams() int { return s.streams.count() }

func (s *Server) rateStream(ctx *fasthttp.RequestCtx, svc services, who actors.Principal) {
	q, e := queryParams(ctx, "from", "to")
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	pairs, e := streamPairs(svc.market.Markets(), q["from"], q["to"])
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	sub, e := s.streams.subscribe(svc.market, who, pairs, ctx.Conn())
	if e != nil {
		s.writeError(ctx, e)
		if e.status == fasthttp.StatusTooManyRequests || e == errStreamsFull {
			ctx.Response.Header.Set("Retry-After", sseRetryAfterSeconds)
		}
		return
	}
	// Last-Event-ID: every stream, new or resumed, starts with the current
	// rate of each selected pair. With conflation the current rate is all a
	// reconnecting client can have missed, so that is how far it is honoured;
	// a malformed value is ignored like an absent one.
	if raw := ctx.Request.Header.Peek("Last-Event-ID"); len(raw) > 0 {
		if id, err := strconv.ParseUint(string(bytes.TrimSpace(raw)), 10, 64); err == nil {
			s.cfg.Logger.Debug("rate stream resumed", "last_event_id", id)
		}
	}
	serveStream(ctx, sub)
}

// serveStream answers ctx with sub's events (the partners' rate stream,
// and the console's live rates): the status line and headers are set on
// ctx, which fasthttp does not write (HijackSetNoResponse); once the
// handler chain has returned, the connection is hijacked and sub writes
// the head and then its chunked body on a goroutine of its own (serve).
func serveStream(ctx *fasthttp.RequestCtx, sub *streamSubscriber) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	h := &ctx.Response.Header
	h.SetContentType("text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	chunked := ctx.Request.Header.IsHTTP11()
	if chunked {
		h.SetContentLength(-1) // Transfer-Encoding: chunked
	} else {
		h.SetContentLength(-2) // HTTP/1.0: the body ends when the connection closes
	}
	sub.hub.awaitHijack(sub)
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(net.Conn) {
		// The handler chain is done: the head is final. ctx stays valid
		// until this function returns.
		head := bytes.Clone(ctx.Response.Header.Header())
		if sub.hub.hijacked(sub) {
			go sub.serve(head, chunked)
		}
	})
}

// connState is the listeners' fasthttp ConnState hook: a connection that
// closes before its rate stream was hijacked (its client left at once)
// ends that stream, which no goroutine would otherwise end.
func (s *Server) connState(c net.Conn, state fasthttp.ConnState) {
	if state == fasthttp.StateClosed {
		s.streams.connClosed(c)
	}
}

// streamPairs reads from/to: both (one pair in force) or neither (every
// pair in force, in the markets' order).
func streamPairs(m *engine.Markets, from, to string) ([]engine.Pair, *apiError) {
	if len(from) == 0 && len(to) == 0 {
		return m.PairList(), nil
	}
	source, sourceOK := engine.ParseCurrency(from)
	destination, destinationOK := engine.ParseCurrency(to)
	want := engine.Pair{Source: source, Destination: destination}
	if sourceOK && destinationOK && m.Supported(want) {
		return []engine.Pair{want}, nil
	}
	return nil, invalidCurrencyPair(m)
}
