package gateway

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/router"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// Config configures the gateway.
type Config struct {
	Listen      string // public listener, e.g. ":8080"
	AdminListen string // admin listener, e.g. "127.0.0.1:8081"
	AdminToken  string // bearer token of the admin API
	RateLimit   float64
	Logger      *slog.Logger
	// Backup, when set, makes a consistent online copy of the store
	// (POST /admin/v1/backup): copy true writes every file anew (the
	// default), false leaves the checkpoint's hard links into the live
	// store where the file system allows them. A *BackupRefusal is
	// answered with its reason; any other error by its kind, never the
	// operating system's text (it goes to the log).
	Backup func(dir string, copy bool) error
	// SSEHeartbeat is the rate stream's heartbeat interval (--sse-heartbeat;
	// 0 = 15 s).
	SSEHeartbeat time.Duration
	// SSEStallMax is how long a rate stream write may block before the
	// subscriber is disconnected (0 = sseStallMax, 30 s; tests shorten it).
	SSEStallMax time.Duration
	// WriteTimeout bounds writing one response (0 = writeTimeout, 15 s;
	// tests shorten it). Rate streams, local and relayed, move their own
	// write deadline instead.
	WriteTimeout time.Duration
	// AccessLog writes one log line per request (request id, client,
	// route, status, duration).
	AccessLog bool
	// Collectors are registered on /metrics next to the gateway's own
	// (the log's figures in `oja serve`).
	Collectors []prometheus.Collector
	// WebhookAllowPrivate lets partners register webhook URLs on loopback,
	// private and link-local addresses (--webhook-allow-private: tests and
	// on-premise receivers); otherwise they are refused (SSRF).
	WebhookAllowPrivate bool
	// Events, when set, is the partners' event history that GET
	// /api/v1/partners/events reads (503 without it).
	Events EventHistory
	// Cluster, when set, makes this server one node of a replicated
	// cluster (cluster.go): it forwards to the leader while it serves no
	// term, and serves the cluster's admin routes.
	Cluster ClusterNode
	// TLS and AdminTLS, when set, make the public and the admin listener
	// serve HTTPS (--tls-cert, --admin-tls-cert).
	TLS, AdminTLS *tls.Config
}

// Server is the fasthttp gateway: a public listener for partners and an
// admin listener for operators.
type Server struct {
	cfg     Config
	term    atomic.Pointer[actors.Term] // the term served (SetTerm)
	limiter *rateLimiter
	public  *fasthttp.Server
	admin   *fasthttp.Server
	peer    *fasthttp.Server // a cluster's peers' requests (Cluster.PeerListener)
	ln      net.Listener
	adminLn net.Listener
	peerLn  net.Listener
	wg      sync.WaitGroup
	closing atomic.Bool
	reqID   requestIDs
	streams *streamHub // the rate stream's subscribers (stream.go)
	metrics *metrics
	fwd     forwarder   // requests forwarded to the cluster's leader
	relay   streamProxy // rate streams relayed from the cluster's leader

	ui *consoleUI // the operator console (console.go)
}

// New builds a server; Start listens.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, limiter: newRateLimiter(cfg.RateLimit), metrics: newMetrics()}
	s.metrics.registry.MustRegister(newSystemCollector(s))
	s.metrics.registry.MustRegister(cfg.Collectors...)
	s.metrics.registry.MustRegister(newWebhookCollector(s.webhooks))
	s.metrics.registry.MustRegister(newChainCollector(s.chainStatuses))
	s.streams = newStreamHub(cfg.SSEHeartbeat, cfg.SSEStallMax, cfg.Logger)
	s.reqID.init()
	s.public = s.newFastHTTP("public", s.clustered(false, s.publicRouter().Handler), bodyBytesMax)
	s.admin = s.newFastHTTP("admin", s.clustered(true, s.adminRouter().Handler), statementBytesMax)
	if cfg.Cluster != nil {
		// Requests a peer forwards arrive over the Raft port: admin routes
		// go to the admin handler, the rest to the public one, each with
		// its own authentication, as if they had come to that listener.
		s.peer = s.newFastHTTP("peer", nil, statementBytesMax)
		s.peer.Handler = func(ctx *fasthttp.RequestCtx) {
			if bytes.HasPrefix(ctx.Path(), []byte(adminBase+"/")) || bytes.HasPrefix(ctx.Path(), []byte(consoleBase+"/")) {
				s.admin.Handler(ctx)
				return
			}
			s.public.Handler(ctx)
		}
		s.peer.MaxConnsPerIP = 0 // every connection comes from a handful of peers
	}
	return s
}

// newFastHTTP builds one listener's server reading bodies of at most
// bodyMax bytes.
func (s *Server) newFastHTTP(name string, h fasthttp.RequestHandler, bodyMax int) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:      s.recover(name, h),
		ErrorHandler: s.parseError,
		// A client that sends "Expect: 100-continue" (curl does for an
		// upload over 1 MiB) with a Content-Length over the bound is
		// answered 413 in the error shape before it sends the body. One
		// that sends the body unasked is answered 413 too, but the
		// connection is closed with the body unread, so it may see a reset
		// instead.
		ExpectHandler: func(ctx *fasthttp.RequestCtx) int {
			if n := ctx.Request.Header.ContentLength(); n > bodyMax {
				s.requestID(ctx)
				s.writeErrorByPath(ctx, errTooLarge)
				return fasthttp.StatusRequestEntityTooLarge
			}
			return fasthttp.StatusContinue
		},
		Name:                          "oja",
		Concurrency:                   connectionsMax,
		MaxConnsPerIP:                 connectionsPerIPMax,
		MaxRequestBodySize:            bodyMax,
		ReadBufferSize:                headerBytesMax,
		ReadTimeout:                   readTimeout,
		WriteTimeout:                  cmp.Or(s.cfg.WriteTimeout, writeTimeout),
		IdleTimeout:                   idleTimeout,
		DisableHeaderNamesNormalizing: false,
		NoDefaultServerHeader:         true,
		// A rate stream's connection is hijacked once its request is
		// answered (stream.go): the hub owns it from then on and closes it.
		KeepHijackedConns: true,
		ConnState:         s.connState,
		// NB: releases a keep-alive connection's 8 KiB read buffer while it
		// is idle, which is what keeps an idle rate stream under 20 KiB
		// (bench/sse); pooled buffers make the cost per request small.
		ReduceMemoryUsage:    true,
		NoDefaultContentType: true,
		Logger:               fasthttpLogger{s.cfg.Logger},
		CloseOnShutdown:      true,
	}
}

type fasthttpLogger struct{ l *slog.Logger }

func (f fasthttpLogger) Printf(format string, args ...any) {
	f.l.Debug(fmt.Sprintf(format, args...), "component", "fasthttp")
}

// Start opens both listeners and serves in the background. Until SetTerm
// is called, the public API answers 503 and /readyz is 503.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("gateway: listen %s: %w", s.cfg.Listen, err)
	}
	adminLn, err := net.Listen("tcp", s.cfg.AdminListen)
	if err != nil {
		ln.Close()
		return fmt.Errorf("gateway: listen %s: %w", s.cfg.AdminListen, err)
	}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	if s.cfg.AdminTLS != nil {
		adminLn = tls.NewListener(adminLn, s.cfg.AdminTLS)
	}
	ln, adminLn = sniffListener{ln}, sniffListener{adminLn}
	s.ln, s.adminLn = ln, adminLn
	serving := []struct {
		srv *fasthttp.Server
		ln  net.Listener
	}{{s.public, ln}, {s.admin, adminLn}}
	if s.peer != nil {
		if s.peerLn = s.cfg.Cluster.PeerListener(); s.peerLn != nil {
			serving = append(serving, struct {
				srv *fasthttp.Server
				ln  net.Listener
			}{s.peer, s.peerLn})
		}
	}
	for _, pair := range serving {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := pair.srv.Serve(pair.ln); err != nil && !s.closing.Load() {
				s.cfg.Logger.Error("listener stopped", "addr", pair.ln.Addr().String(), "err", err)
			}
		}()
	}
	return nil
}

// Addr is the public listener's address; AdminAddr the admin one's.
func (s *Server) Addr() string      { return s.ln.Addr().String() }
func (s *Server) AdminAddr() string { return s.adminLn.Addr().String() }

// SetTerm makes the server serve t: its actors answer, its webhook
// dispatcher (when the term has one) shows its backlog to
// operators and its figures on /metrics. The server serves t until t ends
// (actors.Term.End) or another term is set: from then on it answers as a
// node that serves nothing (a cluster node forwards to the leader), and
// every rate stream opened during t ends, so its client reconnects to
// whoever serves now instead of being left with heartbeats only.
func (s *Server) SetTerm(t *actors.Term) {
	s.streams.serve(t)
	if old := s.term.Swap(t); old != nil && old != t {
		s.streams.endTerm(old)
	}
	go func() {
		select {
		case <-t.Done():
			s.streams.endTerm(t)
		case <-s.streams.closed:
		}
	}()
}

// served is the services of the term served; false while none is (before
// the first, and once it has ended).
func (s *Server) served() (services, bool) {
	if t := s.term.Load(); t != nil && !t.Ended() {
		return servicesOf(t.System()), true
	}
	return services{}, false
}

// webhooks is the webhook dispatcher of the term served, nil while none
// is or the term has none.
func (s *Server) webhooks() actors.Webhooks {
	if t := s.term.Load(); t != nil && !t.Ended() {
		return t.Webhooks()
	}
	return nil
}

// defaultMarkets are what markets answers before a system is set.
var defaultMarkets = engine.DefaultMarkets()

// markets are the markets in force: the system's.
func (s *Server) markets() *engine.Markets {
	if svc, ok := s.served(); ok {
		return svc.market.Markets()
	}
	return defaultMarkets
}

// Shutdown ends the rate streams, stops accepting, lets in-flight requests
// finish and closes connections, within ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	// Streams first: fasthttp's shutdown waits for every open response, and
	// a stream only ends when told to (stream.go).
	streamsErr := s.streams.close(ctx)
	s.relay.closeAll()
	s.fwd.closeIdle()
	errs := make(chan error, 3)
	go func() { errs <- s.public.ShutdownWithContext(ctx) }()
	go func() { errs <- s.admin.ShutdownWithContext(ctx) }()
	peerErr := error(nil)
	if s.peerLn != nil {
		go func() { errs <- s.peer.ShutdownWithContext(ctx) }()
		peerErr = <-errs
	}
	err := errors.Join(streamsErr, <-errs, <-errs, peerErr)
	// fasthttp closes only the listeners its Serve has registered; a
	// Shutdown right after Start can come before a Serve goroutine ran, and
	// that Serve would then accept forever. Closing the listeners here ends
	// it either way (an already closed listener only says so).
	_ = s.ln.Close()
	_ = s.adminLn.Close()
	if s.peerLn != nil {
		_ = s.peerLn.Close()
	}
	s.wg.Wait()
	return err
}

// ---- Plumbing shared by both listeners --------------------------------------

func (s *Server) recover(listener string, h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		start := time.Now()
		defer func() {
			if r := recover(); r != nil {
				s.cfg.Logger.Error("handler panic", "panic", fmt.Sprint(r), "path", string(ctx.Path()))
				// The reset drops whatever the handler set, the request id
				// too: every answer carries it (spec §9).
				id := append([]byte(nil), ctx.Response.Header.Peek("X-Request-Id")...)
				ctx.Response.Reset()
				ctx.Response.Header.SetBytesV("X-Request-Id", id)
				s.writeError(ctx, errInternal)
			}
			if c, ok := ctx.Conn().(*sniffConn); ok {
				c.mark()
			}
			took := time.Since(start)
			s.metrics.observe(listener, ctx, took)
			if s.cfg.AccessLog {
				s.logRequest(listener, ctx, took)
			}
		}()
		s.requestID(ctx)
		if s.refuseBadFraming(ctx) {
			return
		}
		// The admin listener reads bodies up to a bank statement's bound;
		// every request but a statement's keeps bodyBytesMax.
		if len(ctx.Request.Body()) > bodyBytesMax && !largeBody(ctx) {
			s.writeError(ctx, errTooLarge)
			return
		}
		h(ctx)
	}
}

// clientValue is the user-value key under which partner requests record
// their client, for the access log.
type clientValue struct{}

// logRequest writes the access log line of one request: never a key, a
// token or a body.
func (s *Server) logRequest(listener string, ctx *fasthttp.RequestCtx, took time.Duration) {
	route, _ := ctx.UserValue(router.MatchedRoutePathParam).(string)
	if route == "" {
		route = "unmatched"
	}
	attrs := []slog.Attr{
		slog.String("request_id", string(ctx.Response.Header.Peek("X-Request-Id"))),
		slog.String("listener", listener),
		slog.String("method", string(ctx.Method())),
		slog.String("route", route),
		slog.Int("status", ctx.Response.StatusCode()),
		slog.Float64("duration_ms", float64(took.Microseconds())/1000),
	}
	if c, ok := ctx.UserValue(clientValue{}).(engine.ClientID); ok {
		attrs = append(attrs, slog.String("client_id", c.String()))
	}
	if source := ctx.Request.Header.Peek("x-service-source"); len(source) > 0 && len(source) <= serviceSourceBytesMax {
		attrs = append(attrs, slog.String("service_source", string(source)))
	}
	s.cfg.Logger.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
}

// parseError answers requests fasthttp could not parse, in the dialect of
// the route the request line named (sniffConn): fasthttp has reset the
// request by now.
func (s *Server) parseError(ctx *fasthttp.RequestCtx, err error) {
	if c, ok := ctx.Conn().(*sniffConn); ok {
		if target := c.target(); len(target) > 0 {
			ctx.Request.SetRequestURIBytes(target)
		}
	}
	s.requestID(ctx)
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		s.writeErrorByPath(ctx, errTooLarge)
		return
	}
	var small *fasthttp.ErrSmallBuffer
	if errors.As(err, &small) {
		s.writeErrorByPath(ctx, fieldError("headers", "request line and headers must be at most 8 KiB"))
		return
	}
	s.writeErrorByPath(ctx, fieldError("request", "malformed HTTP request"))
}

// requestID sets X-Request-Id: the caller's when it is sane, else a new one.
func (s *Server) requestID(ctx *fasthttp.RequestCtx) {
	id := ctx.Request.Header.Peek("X-Request-Id")
	if len(id) == 0 || len(id) > requestIDBytesMax || !printableASCII(id) {
		id = s.reqID.next()
	}
	ctx.Response.Header.SetBytesV("X-Request-Id", id)
}

func printableASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// requestIDs makes ids "req_<random prefix><counter>": unique per process
// run without a syscall per request.
type requestIDs struct {
	prefix  string
	counter atomic.Uint64
}

func (r *requestIDs) init() {
	var raw [8]byte
	if _, err := cryptoRead(raw[:]); err != nil {
		panic("gateway: random source failed: " + err.Error())
	}
	r.prefix = "req_" + strconv.FormatUint(uint64(raw[0])<<32|uint64(raw[1])<<24|uint64(raw[2])<<16|uint64(raw[3])<<8|uint64(raw[4]), 36) + "_"
}

func (r *requestIDs) next() []byte {
	b := make([]byte, 0, 40)
	b = append(b, r.prefix...)
	return strconv.AppendUint(b, r.counter.Add(1), 36)
}

// writeError writes the spec's error body.
func (s *Server) writeError(ctx *fasthttp.RequestCtx, e *apiError) {
	w := jsonWriter{b: make([]byte, 0, 256)}
	w.open("")
	w.str("code", e.code)
	w.str("message", e.message)
	if len(e.details) > 0 {
		w.value("details", map[string]any(e.details))
	}
	w.close()
	setRefusalHeaders(ctx, e.status)
	s.writeJSON(ctx, e.status, w.b)
}

// setRefusalHeaders sets the headers a refusal with status carries in
// either dialect: the auth challenge on 401, Retry-After on 503 and 429
// (unless the rate limiter set its own).
func setRefusalHeaders(ctx *fasthttp.RequestCtx, status int) {
	switch status {
	case fasthttp.StatusUnauthorized:
		ctx.Response.Header.Set("WWW-Authenticate", "Bearer")
	case fasthttp.StatusServiceUnavailable, fasthttp.StatusTooManyRequests:
		if len(ctx.Response.Header.Peek("Retry-After")) == 0 {
			ctx.Response.Header.Set("Retry-After", retryAfterSeconds)
		}
	}
}

// writeObject answers status with the JSON object fill writes.
func (s *Server) writeObject(ctx *fasthttp.RequestCtx, status int, fill func(w *jsonWriter)) {
	w := jsonWriter{}
	w.open("")
	fill(&w)
	w.close()
	s.writeJSON(ctx, status, w.b)
}

// writeJSON answers status with body, a JSON document no cache may keep
// (an answer can hold a secret: a key, a webhook's signing secret).
func (s *Server) writeJSON(ctx *fasthttp.RequestCtx, status int, body []byte) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.SetBody(body)
}

// operatingError maps an error from the actors (storage, shutdown) to 503
// (a fault to 500), in JSON.
func (s *Server) operatingError(ctx *fasthttp.RequestCtx, err error) {
	s.writeError(ctx, s.operatingRefusal(ctx, err))
}

// operatingRefusal logs an error from the actors and returns the refusal
// both dialects answer it with: 500 for a fault, else 503.
func (s *Server) operatingRefusal(ctx *fasthttp.RequestCtx, err error) *apiError {
	s.cfg.Logger.Warn("request failed", "err", err, "path", string(ctx.Path()))
	if errors.Is(err, actors.ErrFault) && !errors.Is(err, actors.ErrUnavailable) {
		return errInternal
	}
	return errUnavailable
}

// system returns the running system's services, or answers 503 (false)
// while none runs or the server is closing.
func (s *Server) system(ctx *fasthttp.RequestCtx) (services, bool) {
	svc, ok := s.served()
	if !ok || s.closing.Load() {
		s.writeError(ctx, errUnavailable)
		return services{}, false
	}
	return svc, true
}

// bearer extracts the credential of "Authorization: Bearer <token>".
// Only the exact form is accepted (RFC 6750 §2.1): the scheme (its case is
// free, RFC 9110 §11.1), one space, and a token68 credential — no other
// white space (a trailing non-breaking space used to be trimmed away), no
// other bytes.
func bearer(ctx *fasthttp.RequestCtx) (string, bool) {
	h := ctx.Request.Header.Peek("Authorization")
	const scheme = "bearer "
	if len(h) <= len(scheme) || !bytes.EqualFold(h[:len(scheme)], []byte(scheme)) {
		return "", false
	}
	token := h[len(scheme):]
	if len(token) > bearerTokenBytesMax || !isToken68(token) {
		return "", false
	}
	return string(token), true
}

// isToken68 reports whether b is a token68 (RFC 9110 §11.2): one or more
// of ALPHA DIGIT - . _ ~ + /, then any number of =.
func isToken68(b []byte) bool {
	i := 0
	for ; i < len(b); i++ {
		c := b[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/') {
			break
		}
	}
	if i == 0 {
		return false
	}
	for ; i < len(b); i++ {
		if b[i] != '=' {
			return false
		}
	}
	return true
}

func (s *Server) health(ctx *fasthttp.RequestCtx) {
	s.writeJSON(ctx, fasthttp.StatusOK, []byte(`{"status":"ok"}`))
}

func (s *Server) ready(ctx *fasthttp.RequestCtx) {
	if !s.isReady() {
		s.writeError(ctx, errUnavailable)
		return
	}
	s.writeJSON(ctx, fasthttp.StatusOK, []byte(`{"status":"ready"}`))
}

// isReady is what /readyz answers (and oja_ready shows): recovered, not
// shutting down, writes taken (a cluster follower: a leader it can forward
// to is known).
func (s *Server) isReady() bool {
	if s.closing.Load() {
		return false
	}
	svc, ok := s.served()
	if !ok {
		return s.clusterReady()
	}
	return svc.operators.Ready() == nil
}

func (s *Server) baseRouter() *router.Router {
	r := router.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleOPTIONS = false
	r.HandleMethodNotAllowed = true
	r.SaveMatchedRoutePath = true
	r.NotFound = func(ctx *fasthttp.RequestCtx) { s.writeError(ctx, errNotFound) }
	r.MethodNotAllowed = func(ctx *fasthttp.RequestCtx) { s.writeError(ctx, errMethod) }
	r.PanicHandler = nil
	for _, path := range []string{"/livez", "/healthz"} {
		r.GET(path, s.health)
	}
	r.GET("/readyz", s.ready)
	return r
}

// requireJSON refuses request bodies that are not application/json.
func requireJSON(ctx *fasthttp.RequestCtx) bool {
	ct := ctx.Request.Header.ContentType()
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return bytes.EqualFold(bytes.TrimSpace(ct), []byte("application/json"))
}

// adminAuth guards the admin API with the operator token.
func (s *Server) adminAuth(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		token, ok := bearer(ctx)
		var p *principal
		if ok {
			p = s.adminPrincipal(token)
		}
		if p == nil {
			s.writeError(ctx, errAdminUnauthorized)
			return
		}
		ctx.SetUserValue(operatorValue{}, p)
		write := isWrite(ctx)
		if write && p.role == engine.RoleViewer {
			s.writeError(ctx, errForbidden)
			return
		}
		if !write {
			h(ctx)
			return
		}
		// NB: a refused write changed nothing and is not a write: it is
		// in the access log, not the trail (bad input changes nothing).
		a := startAudit(ctx, p)
		h(ctx)
		s.finishAudit(ctx, a)
	}
}
