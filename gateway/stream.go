package gateway

// The rate stream (spec §8): GET /partners/marketplace/rates/stream, a
// text/event-stream of consensus rate updates and heartbeats.
//
// How a stream is served:
//
//  1. The handler authenticates (s.partner), validates from/to, registers a
//     streamSubscriber with the hub (which enforces sseStreamsPerKeyMax and
//     sseSubscribersMax) and hands the subscriber to fasthttp as the response
//     body stream (SetBodyStream with unknown size: chunked encoding).
//  2. fasthttp writes the status line and headers, then calls the
//     subscriber's WriteTo on the connection's own goroutine. Every Write to
//     fasthttp's chunked writer is one chunk, flushed to the socket at once.
//     WriteTo writes "retry: 3000" and the current rate of every selected
//     pair, then blocks until the hub marks the subscriber dirty, its
//     heartbeat is due, or the hub closes.
//  3. Pair actors call RateChanged (actors.Config.RateListener) when a
//     consensus rate changes. It stores the ticker and wakes the hub's one
//     fan-out goroutine; it never blocks the actor. The fan-out goroutine
//     marks each subscriber of that pair dirty (one bit per pair) and wakes
//     it without blocking. A subscriber then renders the latest ticker of
//     each dirty pair: updates of one pair conflate to the latest, so the
//     per-subscriber state is a bit mask and the write buffer is bounded by
//     one frame per pair.
//  4. Before each write the subscriber makes sure its connection's write
//     deadline is at least sseStallMax away (armDeadline). A subscriber whose
//     socket accepts nothing for that long fails the write and is
//     disconnected; no one else waits for it (the fan-out never blocks, and
//     each stream writes on its own connection goroutine).
//  5. fasthttp calls the subscriber's Close when the response ends for any
//     reason; Close unregisters it from the hub.
//
// NB: fasthttp's SetBodyStreamWriter was rejected. It runs the writer on an
// extra goroutine that writes into a fasthttputil pipe (4 buffered chunks)
// which the connection goroutine copies to the socket: two goroutines, a
// 4 KiB bufio.Writer and a 4 KiB copy buffer per stream, and a writer that
// blocks inside the pipe, unable to see shutdown, while the client does not
// read. A body stream implementing fasthttp.BodyWriterTo gives the same
// "write, flush" model on the connection goroutine itself (a follower's
// relayed streams use it too: relayBody, cluster_stream.go).
//
// NB: the server's WriteTimeout (limits.go, 15 s) is a deadline that
// fasthttp sets on the connection once, before it writes a response; on its
// own it would cut every stream 15 s after it opened. The subscriber owns
// the connection's write deadline while it streams and moves it before each
// chunk, so a stream lives as long as its client keeps reading, and the same
// deadline is the stall detector. Hijacking the connection was rejected: it
// would mean writing the HTTP response head by hand and taking the
// connection out of fasthttp's accounting (Concurrency, Shutdown).
//
// Memory: an idle stream costs what its connection costs fasthttp (the
// RequestCtx, a 4 KiB write buffer, and an 8 KiB read buffer unless the
// server sets ReduceMemoryUsage), the connection goroutine's stack, and
// under 1 KiB of its own (subscriber, heartbeat ticker, registry entries);
// frame buffers are pooled and held only while a batch is written.
// bench/sse measures it.
//
// Shutdown (Server.Shutdown, before fasthttp's): the hub refuses new
// subscribers, shortens every stream's write deadline to
// sseShutdownWriteMax, and closes its closed channel. Idle writers return at
// once, fasthttp ends the chunked body ("0\r\n\r\n") and the connection is
// idle, so fasthttp's ShutdownWithContext closes it; a writer blocked on a
// client that does not read fails its write within sseShutdownWriteMax. The
// hub waits until every subscriber has been closed.

import (
	"bytes"
	"strconv"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// Limits of the rate stream (listed with the others in the package doc).
const (
	// sseSubscribersMax bounds open rate streams on the whole server (503
	// UNAVAILABLE beyond it). It stays below connectionsMax so that streams
	// can never take every connection the request API needs.
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

// registerStream adds the SSE rate stream (spec §8) to the public router.
func (s *Server) registerStream(r *router.Router) {
	r.GET(ratesStreamPath, s.partner(s.rateStream))
}

// RateChanged is the actors' RateListener (actors.Config.RateListener): a
// pair actor calls it, on its own goroutine, each time the consensus rate of
// its book changes. It only stores the ticker and wakes the hub's fan-out;
// it never blocks.
func (s *Server) RateChanged(key engine.BookKey, t *engine.Ticker) {
	s.streams.rateChanged(key, t)
}

// Streams is the number of open rate streams.
func (s *Server) Streams() int { return s.streams.count() }

func (s *Server) rateStream(ctx *fasthttp.RequestCtx, sys *actors.System, who actors.Principal) {
	q, e := queryParams(ctx, "from", "to")
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	pairs, e := streamPairs(sys.Markets(), q["from"], q["to"])
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	sub, e := s.streams.subscribe(sys, who, pairs, ctx.Conn())
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
// and the console's live rates).
func serveStream(ctx *fasthttp.RequestCtx, sub *streamSubscriber) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	h := &ctx.Response.Header
	h.SetContentType("text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	ctx.SetBodyStream(sub, -1)
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
