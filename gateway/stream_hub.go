package gateway

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/bits"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// streamHub fans consensus rate changes out to the open rate streams (see
// stream.go for the whole path). It is safe for concurrent use.
//
// One goroutine per hub runs the fan-out (started with the first
// subscriber), writing each changed rate straight to the streams' sockets
// on one worker per core; each stream also writes on a goroutine of its
// own (serve), which the fan-out wakes for whatever it could not write.
type streamHub struct {
	heartbeat time.Duration
	stallMax  time.Duration
	logger    *slog.Logger

	// keys are the (mode, pair) books a stream follows, in the order they
	// were first seen (a rate change or a subscription); a key's index is
	// its bit in the masks below. keys[:keyCount] never change; keysMu
	// serialises adding one.
	keys     [streamKeysMax]engine.BookKey
	keyCount atomic.Int32
	keysMu   sync.Mutex
	// latest is the last ticker the rate listener delivered, per key index.
	latest []atomic.Pointer[engine.Ticker]
	// rendered caches the data line of each key's latest ticker.
	rendered []atomic.Pointer[renderedRate]

	// pending holds the key bits changed since the last fan-out; kick wakes
	// the fan-out goroutine (capacity 1, never blocks a sender). targets is
	// the fan-out goroutine's list of whom to deliver to, kept between
	// fan-outs.
	pending  atomic.Uint64
	targets  []fanoutTarget
	kick     chan struct{}
	fanout   sync.Once
	fanedOut chan struct{} // closed when the fan-out goroutine returns

	// sequence numbers every frame of every stream (the SSE id).
	sequence atomic.Uint64

	// closed is closed when the hub shuts down; writers watch it.
	closed  chan struct{}
	closing atomic.Bool
	// serving is the term the server serves (Server.SetTerm): a stream
	// opened on another one's system, or once it has ended, is refused,
	// and the streams of a term that ends are ended (endTerm).
	serving atomic.Pointer[actors.Term]

	// mu guards the registry below. The fan-out holds it for reading while
	// it marks subscribers; subscribe and remove hold it briefly for writing.
	mu          sync.RWMutex
	subscribers []map[*streamSubscriber]struct{} // per key index
	// opened counts the streams subscribed so far: a subscriber's order.
	opened  uint64
	total   int
	perKey  map[engine.KeyID]int
	drained chan struct{} // closed when closing and the last subscriber is gone

	// awaiting holds the subscribers whose connection is not hijacked yet
	// (serveStream), by connection, so that one whose connection closes
	// first is ended (connClosed).
	awaitingMu sync.Mutex
	awaiting   map[net.Conn]*streamSubscriber
}

// renderedRate is the data line of a rate_update for one ticker, computed
// once per ticker and minute and shared by every subscriber.
type renderedRate struct {
	ticker *engine.Ticker
	minute int64 // now / 60 s when rendered: percentChange24h moves with now
	data   []byte
}

// streamKeysMax is the number of (mode, pair) books a hub can track: the
// width of its bit masks.
const streamKeysMax = 64

func newStreamHub(heartbeat, stallMax time.Duration, logger *slog.Logger) *streamHub {
	if heartbeat <= 0 {
		heartbeat = sseHeartbeatDefault
	}
	if stallMax <= 0 {
		stallMax = sseStallMax
	}
	h := &streamHub{
		heartbeat: heartbeat, stallMax: stallMax, logger: logger,
		kick: make(chan struct{}, 1), fanedOut: make(chan struct{}),
		closed: make(chan struct{}), perKey: make(map[engine.KeyID]int),
		awaiting: make(map[net.Conn]*streamSubscriber),
	}
	h.latest = make([]atomic.Pointer[engine.Ticker], streamKeysMax)
	h.rendered = make([]atomic.Pointer[renderedRate], streamKeysMax)
	h.subscribers = make([]map[*streamSubscriber]struct{}, streamKeysMax)
	for i := range h.subscribers {
		h.subscribers[i] = make(map[*streamSubscriber]struct{})
	}
	// Ids start at the process start in microseconds, so that they also
	// grow across restarts (unless more than a million frames a second were
	// sent on average).
	h.sequence.Store(uint64(time.Now().UnixMicro()))
	return h
}

// index is key's index, added when new; −1 when the hub tracks
// streamKeysMax books already.
func (h *streamHub) index(key engine.BookKey) int {
	n := int(h.keyCount.Load())
	for i := range n {
		if h.keys[i] == key {
			return i
		}
	}
	h.keysMu.Lock()
	defer h.keysMu.Unlock()
	n = int(h.keyCount.Load())
	for i := range n {
		if h.keys[i] == key {
			return i
		}
	}
	if n == streamKeysMax {
		return -1
	}
	h.keys[n] = key
	h.keyCount.Store(int32(n + 1))
	return n
}

// rateChanged records a new consensus ticker and wakes the fan-out. It runs
// on a pair actor's goroutine and never blocks.
func (h *streamHub) rateChanged(key engine.BookKey, t *engine.Ticker) {
	i := h.index(key)
	if i < 0 || t == nil {
		return
	}
	h.latest[i].Store(t)
	h.pending.Or(1 << i)
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// fanoutTarget is a subscriber and the key bits to deliver to it. order
// is the subscriber's, copied so that sorting reads no subscriber
// (BenchmarkFanoutInOrder at 15,000 targets: 2.10–2.19 ms against
// 2.30–2.33 ms reading sub.order).
type fanoutTarget struct {
	sub   *streamSubscriber
	order uint64
	bits  uint64
}

// inOrder sorts targets in the order their streams were opened and merges
// a subscriber's entries (one per changed key it follows) into one, so
// that it gets one write. Writing to the sockets in the order they were
// opened, rather than the registry maps' random order, made a fan-out to
// 10,000 streams cheaper (docs/benchmarks.md, "Rate stream fan-out").
func inOrder(targets []fanoutTarget) []fanoutTarget {
	slices.SortFunc(targets, func(a, b fanoutTarget) int { return cmp.Compare(a.order, b.order) })
	merged := targets[:0]
	for _, t := range targets {
		if n := len(merged); n > 0 && merged[n-1].sub == t.sub {
			merged[n-1].bits |= t.bits
			continue
		}
		merged = append(merged, t)
	}
	clear(targets[len(merged):])
	return merged
}

// fanOut delivers every changed key to its subscribers until the hub
// closes.
func (h *streamHub) fanOut() {
	defer close(h.fanedOut)
	var last time.Time
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-h.closed:
			return
		case <-h.kick:
		}
		if wait := sseFanoutIntervalMin - time.Since(last); wait > 0 {
			timer.Reset(wait)
			select {
			case <-h.closed:
				timer.Stop()
				return
			case <-timer.C:
			}
		}
		last = time.Now()
		changed := h.pending.Swap(0)
		targets := h.targets[:0]
		h.mu.RLock()
		for changed != 0 {
			i := bits.TrailingZeros64(changed)
			changed &^= 1 << i
			for sub := range h.subscribers[i] {
				targets = append(targets, fanoutTarget{sub, sub.order, 1 << i})
			}
		}
		h.mu.RUnlock()
		targets = inOrder(targets)
		h.deliver(targets)
		clear(targets) // hold no subscriber until the next fan-out
		h.targets = targets[:0]
	}
}

// fanoutShareMin is the fewest targets worth a worker of their own.
const fanoutShareMin = 256

// deliver writes the changed rates to targets, split over one worker per
// core (GOMAXPROCS): a write to a socket is a system call, and on loopback
// it also runs the receiver's TCP input, so the workers' writes are most
// of a fan-out's time. A target the worker cannot write to at once (its
// writer is busy, its socket full) is marked for its own goroutine.
func (h *streamHub) deliver(targets []fanoutTarget) {
	workers := min(runtime.GOMAXPROCS(0), len(targets)/fanoutShareMin+1)
	share := (len(targets) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		part := targets[min(w*share, len(targets)):min((w+1)*share, len(targets))]
		if w == workers-1 {
			deliverTo(part) // the fan-out goroutine takes the last share itself
			break
		}
		wg.Add(1)
		go func() { defer wg.Done(); deliverTo(part) }()
	}
	wg.Wait()
}

// deliverTo writes to each of targets in turn, or marks it.
func deliverTo(targets []fanoutTarget) {
	var payload, frame []byte
	for _, t := range targets {
		var ok bool
		if ok, payload, frame = t.sub.writeNow(t.bits, payload, frame); !ok {
			t.sub.mark(t.bits)
		}
	}
}

// boundSendBuffer sets conn's socket send buffer to bytes (best effort: a
// connection without a socket, as in some tests, is left alone).
func boundSendBuffer(conn net.Conn, bytes int) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, bytes)
	})
}

// plainSocket is conn's socket when what is written to conn is what the
// socket carries (a bare TCP connection, possibly behind the listener's
// sniffConn), else nil: a TLS session must be written through its own
// Write, never under it.
func plainSocket(conn net.Conn) syscall.RawConn {
	if sc, ok := conn.(*sniffConn); ok {
		conn = sc.Conn
	}
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// subscribe registers a stream of who's mode for pairs written on conn,
// with market the rates and clock of the system the server serves: a
// stream on any other (a term that ended meanwhile) is refused.
func (h *streamHub) subscribe(market marketService, who actors.Principal, pairs []engine.Pair, conn net.Conn) (*streamSubscriber, *apiError) {
	boundSendBuffer(conn, sseSendBufferBytes)
	sub := &streamSubscriber{hub: h, market: market, key: who.Key, conn: conn, wake: make(chan struct{}, 1),
		retired: make(chan struct{}), socket: plainSocket(conn)}
	for _, p := range pairs {
		if i := h.index(engine.BookKey{Mode: who.Mode, Pair: p}); i >= 0 {
			sub.follows = append(sub.follows, followedRate{index: i})
			sub.mask |= 1 << i
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	sub.term = h.serving.Load()
	switch {
	case h.closing.Load() || sub.term == nil || marketOf(sub.term.System()) != market || sub.term.Ended():
		return nil, errUnavailable
	case h.total >= sseSubscribersMax:
		return nil, errStreamsFull
	case h.perKey[who.Key] >= sseStreamsPerKeyMax:
		return nil, errStreamsPerKey
	}
	h.opened++
	sub.order = h.opened
	h.total++
	h.perKey[who.Key]++
	for _, f := range sub.follows {
		h.subscribers[f.index][sub] = struct{}{}
	}
	h.fanout.Do(func() { go h.fanOut() })
	return sub, nil
}

// awaitHijack records sub as waiting for its connection's hijack.
func (h *streamHub) awaitHijack(sub *streamSubscriber) {
	h.awaitingMu.Lock()
	defer h.awaitingMu.Unlock()
	h.awaiting[sub.conn] = sub
}

// hijacked takes sub out of the waiting ones; false when its connection
// closed first (connClosed ended it).
func (h *streamHub) hijacked(sub *streamSubscriber) bool {
	h.awaitingMu.Lock()
	defer h.awaitingMu.Unlock()
	if h.awaiting[sub.conn] != sub {
		return false
	}
	delete(h.awaiting, sub.conn)
	return true
}

// connClosed ends the stream waiting for c's hijack, if any.
func (h *streamHub) connClosed(c net.Conn) {
	h.awaitingMu.Lock()
	sub := h.awaiting[c]
	delete(h.awaiting, c)
	h.awaitingMu.Unlock()
	if sub != nil {
		_ = sub.Close()
	}
}

// remove unregisters sub (once).
func (h *streamHub) remove(sub *streamSubscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range sub.follows {
		delete(h.subscribers[f.index], sub)
	}
	h.total--
	if h.perKey[sub.key]--; h.perKey[sub.key] <= 0 {
		delete(h.perKey, sub.key)
	}
	if h.total == 0 && h.drained != nil {
		close(h.drained)
		h.drained = nil
	}
}

func (h *streamHub) count() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.total
}

// close ends every stream: it refuses new subscribers, gives each open
// stream sseShutdownWriteMax to finish its last write, wakes every writer
// and waits, within ctx, until all subscribers are gone.
func (h *streamHub) close(ctx context.Context) error {
	h.mu.Lock()
	if h.closing.Swap(true) {
		h.mu.Unlock()
		return nil
	}
	var drained chan struct{}
	if h.total > 0 {
		drained = make(chan struct{})
		h.drained = drained
	}
	open := make([]*streamSubscriber, 0, h.total)
	seen := make(map[*streamSubscriber]bool, h.total)
	for i := range h.subscribers {
		for sub := range h.subscribers[i] {
			if !seen[sub] {
				seen[sub] = true
				open = append(open, sub)
			}
		}
	}
	h.mu.Unlock()
	deadline := time.Now().Add(sseShutdownWriteMax)
	for _, sub := range open {
		sub.shutdownDeadline(deadline)
	}
	close(h.closed)
	h.fanout.Do(func() { close(h.fanedOut) }) // never started: nothing to wait for
	select {
	case <-h.fanedOut:
	case <-ctx.Done():
		return ctx.Err()
	}
	if drained == nil {
		return nil
	}
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serve makes t the term served. The rates the previous one delivered are
// forgotten, so that streams on t start from its own.
func (h *streamHub) serve(t *actors.Term) {
	h.serving.Store(t)
	for i := range h.latest {
		h.latest[i].Store(nil)
		h.rendered[i].Store(nil)
	}
}

// endTerm ends every stream opened during t, which the server no longer
// serves (a cluster node lost its leadership: its rates stop, and a stream
// left open would carry heartbeats only, forever). Each ended stream
// finishes its current write and returns: its client reconnects (retry:
// 3000) to whoever serves now.
//
// REQUIRES: t has ended or serving no longer holds it (so that a stream
// subscribing meanwhile is either seen here or refused).
func (h *streamHub) endTerm(t *actors.Term) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for i := range h.subscribers {
		for sub := range h.subscribers[i] {
			if sub.term == t {
				sub.retiredOnce.Do(func() { close(sub.retired) })
			}
		}
	}
}

// latestTicker is the newest ticker of key index i: the one the listener
// delivered last, else the system's view (a book that has not changed since
// the service started).
func (h *streamHub) latestTicker(market marketService, i int) *engine.Ticker {
	if t := h.latest[i].Load(); t != nil {
		return t
	}
	if market == nil {
		return nil
	}
	return market.Ticker(h.keys[i].Mode, h.keys[i].Pair)
}

// rateData is the data line of a rate_update for ticker t of key index i at
// now (unix ms), shared by every subscriber that sends it this minute.
func (h *streamHub) rateData(i int, t *engine.Ticker, now int64) []byte {
	minute := now / 60000
	if r := h.rendered[i].Load(); r != nil && r.ticker == t && r.minute == minute {
		return r.data
	}
	r := &renderedRate{ticker: t, minute: minute, data: appendRateData(nil, h.keys[i].Pair, t, now)}
	h.rendered[i].Store(r)
	return r.data
}

// appendRateData appends the JSON of a rate_update (spec §8).
func appendRateData(b []byte, pair engine.Pair, t *engine.Ticker, now int64) []byte {
	w := jsonWriter{b: b}
	w.open("")
	w.str("from", pair.Source.String())
	w.str("to", pair.Destination.String())
	w.rate("rate", t.Consensus)
	w.time("timestamp", t.ConsensusAt)
	w.str("source", "CONSENSUS")
	change := decimal.Zero
	if ref, ok := t.ConsensusPast.Reference(now); ok {
		change = percentChange(t.Consensus, ref.Rate)
	}
	w.decimal("percentChange24h", change)
	w.close()
	return w.b
}

// ---- One subscriber ---------------------------------------------------------

// streamSubscriber is one open rate stream on a hijacked connection. mark
// is called by the hub's fan-out, Close also by connClosed; every other
// method runs on the stream's own goroutine (serve).
type streamSubscriber struct {
	hub    *streamHub
	order  uint64        // when it subscribed, among the hub's streams (streamHub.opened)
	market marketService // the rates and clock of term's system
	term   *actors.Term  // the term the stream was opened in; it ends with it
	key    engine.KeyID
	conn   net.Conn
	mask   uint64 // key indexes followed

	// dirty holds the key bits changed since the last write; wake
	// (capacity 1) tells the writer to look.
	dirty atomic.Uint64
	wake  chan struct{}

	follows   []followedRate
	heartbeat *time.Ticker
	batch     *[]byte

	// socket is conn's socket where the fan-out may write to it directly
	// (plainSocket), else nil.
	socket syscall.RawConn
	// writeMu orders the stream's writers: its own goroutine, and the
	// fan-out, which only tries it (writeNow). It guards follows' sent
	// tickers and the fields below.
	writeMu sync.Mutex
	// started is set when the opening batch is made (the head was written
	// before it); busy while the goroutine holds a batch it has not
	// finished writing; the fan-out writes only to a started stream that
	// is not busy and has no leftover.
	started, busy bool
	// chunked is serve's: the body is HTTP/1.1 chunks.
	chunked bool
	// leftover is the end of a frame the fan-out wrote only in part (the
	// socket was full): the goroutine writes it before anything else.
	leftover []byte

	// deadlineMu orders the writer's deadline moves against the hub's
	// shutdown deadline, so that a late move cannot undo the shutdown one.
	deadlineMu sync.Mutex
	armedUntil time.Time // the write deadline the writer last set
	removed    atomic.Bool
	// retired is closed when the term the stream was opened in ends (a
	// cluster node lost its leadership): the stream ends, so its client
	// reconnects to whoever serves now (endTerm).
	retired     chan struct{}
	retiredOnce sync.Once
}

// followedRate is what a subscriber last sent of one key.
type followedRate struct {
	index int
	sent  *engine.Ticker // the ticker last sent; nil before the first
}

// mark tells the subscriber's goroutine that the keys of bits changed. It
// never blocks.
func (s *streamSubscriber) mark(bits uint64) {
	s.dirty.Or(bits)
	s.wakeUp()
}

func (s *streamSubscriber) wakeUp() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// writeNow writes the keys of changed (and any the stream's goroutine has
// not sent yet) to the socket at once, without blocking, as one chunk: the
// fan-out's path. It returns false, having written nothing, when it cannot
// (no plain socket, the goroutine is writing or has a leftover to write,
// the stream is ending): then the caller marks the stream. A frame the
// socket takes only in part is handed to the goroutine (leftover), which
// writes the rest under the stall deadline. payload and frame are the
// caller's buffers, returned for reuse.
func (s *streamSubscriber) writeNow(changed uint64, payload, frame []byte) (bool, []byte, []byte) {
	if s.socket == nil || !s.writeMu.TryLock() {
		return false, payload, frame
	}
	defer s.writeMu.Unlock()
	if !s.started || s.busy || len(s.leftover) > 0 || s.removed.Load() || s.hub.closing.Load() {
		return false, payload, frame
	}
	select {
	case <-s.retired:
		return false, payload, frame
	default:
	}
	payload = s.appendRates(payload[:0], changed|s.dirty.Swap(0))
	if len(payload) == 0 {
		return true, payload, frame
	}
	frame = frame[:0]
	if s.chunked {
		frame = appendChunk(frame, payload)
	} else {
		frame = append(frame, payload...)
	}
	if n := writeNonblocking(s.socket, frame); n < len(frame) {
		// The socket is full, or broken: the goroutine's write of the rest
		// waits for room under the stall deadline, or finds the error.
		s.leftover = append(s.leftover[:0], frame[n:]...)
		s.wakeUp()
	}
	return true, payload, frame
}

// writeNonblocking writes b to socket without waiting for room and
// returns how much of it the socket took (on an error, what it took before).
func writeNonblocking(socket syscall.RawConn, b []byte) (n int) {
	_ = socket.Write(func(fd uintptr) bool {
		for n < len(b) {
			w, err := syscall.Write(int(fd), b[n:])
			if err == syscall.EINTR {
				continue
			}
			if err != nil || w <= 0 {
				break
			}
			n += w
		}
		return true // done, whatever it took: never wait for the poller
	})
	return n
}

// serve writes the response head and then the stream to the hijacked
// connection, chunked (an HTTP/1.0 client's body is the bytes until the
// connection closes), until the hub closes, the term ends or a write
// fails; then it ends the body, closes the connection and unregisters.
// It runs on a goroutine of its own, which is all an idle stream costs
// beyond its connection and the subscriber.
func (s *streamSubscriber) serve(head []byte, chunked bool) {
	defer s.Close()
	defer s.conn.Close()
	s.armDeadline()
	if _, err := s.conn.Write(head); err != nil {
		s.ended(err)
		return
	}
	var body io.Writer = s.conn
	if chunked {
		body = &chunkedWriter{conn: s.conn}
	}
	s.chunked = chunked // before the opening batch is made: the fan-out reads it after
	if _, err := s.WriteTo(body); err != nil || !chunked {
		return
	}
	_, _ = s.conn.Write(lastChunk)
}

// lastChunk ends a chunked body.
var lastChunk = []byte("0\r\n\r\n")

// chunkedWriter writes each Write as one HTTP/1.1 chunk in one write to
// the connection (the listener's connections are wrapped, so writev is not
// available: three writes would be three system calls), assembled in a
// pooled buffer held only for the write.
type chunkedWriter struct {
	conn net.Conn
}

func (w *chunkedWriter) Write(b []byte) (int, error) {
	buf := streamBuffers.Get().(*[]byte)
	chunk := appendChunk((*buf)[:0], b)
	_, err := w.conn.Write(chunk)
	*buf = chunk[:0]
	streamBuffers.Put(buf)
	if err != nil {
		return 0, err
	}
	return len(b), nil
}

// appendChunk appends b as one HTTP/1.1 chunk.
func appendChunk(chunk, b []byte) []byte {
	chunk = strconv.AppendInt(chunk, int64(len(b)), 16)
	chunk = append(chunk, "\r\n"...)
	chunk = append(chunk, b...)
	return append(chunk, "\r\n"...)
}

// WriteTo streams frames to w until the hub closes or a write fails; each
// batch is one Write (serve passes a chunkedWriter: one chunk, one write
// to the socket).
func (s *streamSubscriber) WriteTo(w io.Writer) (int64, error) {
	var written int64
	for {
		b, err := s.next()
		if err == io.EOF {
			return written, nil
		}
		if err != nil {
			return written, err
		}
		s.armDeadline()
		var n int
		if len(s.leftover) > 0 { // what the fan-out left; busy keeps it off
			_, err = s.conn.Write(s.leftover)
		}
		if err == nil && len(b) > 0 {
			n, err = w.Write(b)
		}
		written += int64(n)
		s.release()
		s.writeMu.Lock()
		s.busy, s.leftover = false, s.leftover[:0]
		s.writeMu.Unlock()
		if err != nil {
			s.ended(err)
			return written, err
		}
	}
}

// Close unregisters the subscriber (once); serve calls it when the stream
// ends, however it ends, and connClosed when it never began.
func (s *streamSubscriber) Close() error {
	if s.removed.Swap(true) {
		return nil
	}
	if s.heartbeat != nil {
		s.heartbeat.Stop()
	}
	s.release()
	s.hub.remove(s)
	return nil
}

// next blocks until there is something to send and returns it: first the
// retry field and the current rates, then changed rates and heartbeats.
// io.EOF means the hub closed. What it returns, and any leftover (which
// it may return alone, with an empty batch), the stream is busy with: the
// fan-out writes nothing to it until WriteTo has written them.
func (s *streamSubscriber) next() ([]byte, error) {
	h := s.hub
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if !s.started {
		s.started, s.busy = true, true
		s.heartbeat = time.NewTicker(h.heartbeat)
		b := s.buffer()
		b = append(b, "retry: "...)
		b = strconv.AppendInt(b, sseRetryMillis, 10)
		b = append(b, "\n\n"...)
		b = s.appendRates(b, s.mask)
		return s.keep(b), nil
	}
	for {
		select {
		case <-h.closed:
			return nil, io.EOF
		default:
		}
		s.writeMu.Unlock() // the fan-out may write while this waits
		select {
		case <-h.closed:
			s.writeMu.Lock()
			return nil, io.EOF
		case <-s.retired:
			s.writeMu.Lock()
			return nil, io.EOF
		case <-s.wake:
			s.writeMu.Lock()
			if b := s.appendRates(s.buffer(), s.dirty.Swap(0)); len(b) > 0 || len(s.leftover) > 0 {
				s.busy = true
				return s.keep(b), nil
			}
			s.release()
		case <-s.heartbeat.C:
			s.writeMu.Lock()
			s.busy = true
			b := s.buffer()
			b = s.appendFrameHead(b, "heartbeat")
			b = append(b, `{"status":"connected","timestamp":`...)
			b = appendTime(b, s.now())
			b = append(b, "}\n\n"...)
			return s.keep(b), nil
		}
	}
}

// appendRates appends a rate_update for each followed key in changed whose
// consensus differs from the one last sent.
func (s *streamSubscriber) appendRates(b []byte, changed uint64) []byte {
	now := int64(0)
	for k := range s.follows {
		f := &s.follows[k]
		if changed&(1<<f.index) == 0 {
			continue
		}
		t := s.hub.latestTicker(s.market, f.index)
		if t == nil || !t.HasConsensus || t == f.sent ||
			(f.sent != nil && f.sent.Consensus == t.Consensus && f.sent.ConsensusAt == t.ConsensusAt) {
			continue
		}
		f.sent = t
		if now == 0 {
			now = s.now()
		}
		b = s.appendFrameHead(b, "rate_update")
		b = append(b, s.hub.rateData(f.index, t, now)...)
		b = append(b, "\n\n"...)
	}
	return b
}

func (s *streamSubscriber) appendFrameHead(b []byte, event string) []byte {
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, s.hub.sequence.Add(1), 10)
	b = append(b, "\nevent: "...)
	b = append(b, event...)
	return append(b, "\ndata: "...)
}

func (s *streamSubscriber) now() int64 {
	if s.market != nil {
		return s.market.Now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// armDeadline gives the next write at least stallMax, unless the hub is
// closing (its shorter shutdown deadline stands). The deadline is moved
// stallMax + stallMax/4 ahead, and only when less than stallMax is left, so
// that a busy stream moves it once every stallMax/4 rather than on every
// write (a deadline move is a timer update in the runtime's poller): a
// write that blocks fails between stallMax and 1.25 × stallMax after it
// began.
func (s *streamSubscriber) armDeadline() {
	if s.conn == nil {
		return
	}
	now := time.Now()
	if now.Add(s.hub.stallMax).Before(s.armedUntil) {
		return
	}
	s.deadlineMu.Lock()
	defer s.deadlineMu.Unlock()
	if !s.hub.closing.Load() {
		s.armedUntil = now.Add(s.hub.stallMax + s.hub.stallMax/4)
		_ = s.conn.SetWriteDeadline(s.armedUntil)
	}
}

// shutdownDeadline caps the stream's remaining writes at deadline.
// REQUIRES: hub.closing is set.
func (s *streamSubscriber) shutdownDeadline(deadline time.Time) {
	if s.conn == nil {
		return
	}
	s.deadlineMu.Lock()
	defer s.deadlineMu.Unlock()
	_ = s.conn.SetWriteDeadline(deadline)
}

// ended logs why a stream's write failed.
func (s *streamSubscriber) ended(err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) && !s.hub.closing.Load() {
		s.hub.logger.Info("rate stream disconnected: the client read nothing for too long",
			"stall", s.hub.stallMax.String())
		return
	}
	s.hub.logger.Debug("rate stream ended", "err", err)
}

// Frame buffers are pooled: an idle subscriber holds none.
var streamBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func (s *streamSubscriber) buffer() []byte {
	if s.batch == nil {
		s.batch = streamBuffers.Get().(*[]byte)
	}
	return (*s.batch)[:0]
}

func (s *streamSubscriber) keep(b []byte) []byte {
	*s.batch = b
	return b
}

func (s *streamSubscriber) release() {
	if s.batch != nil {
		*s.batch = (*s.batch)[:0]
		streamBuffers.Put(s.batch)
		s.batch = nil
	}
}
