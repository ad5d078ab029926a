package gateway

//go:generate sh console/npm/refresh.sh

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/engine"
)

// The operator console (spec §15.2): HTML pages on the admin
// listener at /console/, in the binary. Pages are html/template rendered on
// the server; htmx (vendored) swaps the parts that refresh, uPlot draws the
// live rates an EventSource receives. Nothing of it is on the public
// listener.
//
// Security: a login exchanges an operator token (the admin token is root)
// for a session cookie — a random value whose SHA-256 is what the server
// keeps, HttpOnly, SameSite=Strict, Path=/console/, Secure on HTTPS —
// expiring after consoleSessionTTL and ended by logging out; the operator
// is looked up again on every request, so revoking one ends their
// sessions. Every write passes net/http's CrossOriginProtection (Sec-Fetch-
// Site, else Origin against Host). Every page carries a strict Content-
// Security-Policy (scripts and styles from the console's own files only:
// no inline script, no eval). Writes go through the admin API's own
// handlers, so they are validated, answered and audited as the API's are;
// their audit line names the console route.

const (
	consoleBase = "/console"
	// consoleCookie is the session cookie's name.
	consoleCookie = "oja_console"
	// consoleSessionTTL is how long a console session lasts from login.
	consoleSessionTTL = 12 * time.Hour
	// consoleSessionsMax bounds the sessions held; past it the oldest
	// ends (its operator logs in again).
	consoleSessionsMax = 10_000
	// consolePageSize is the rows of a console list page.
	consolePageSize = 50
	// consoleCSP is every console response's Content-Security-Policy.
	consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

//go:embed console/templates/*.html
var consoleTemplates embed.FS

//go:embed console/static
var consoleStatic embed.FS

// consoleSession is a logged-in operator.
type consoleSession struct {
	op      principal
	created time.Time
	expires time.Time
	// flash is a message for the next page this session reads (the
	// outcome of a write, after its redirect).
	flash    string
	flashBad bool
}

// consoleSessions holds the sessions by the SHA-256 of their cookie; the
// zero value is ready.
type consoleSessions struct {
	mu sync.Mutex
	m  map[[32]byte]*consoleSession
}

func (c *consoleSessions) create(p principal, now time.Time) (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	cookie := base64.RawURLEncoding.EncodeToString(raw[:])
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[[32]byte]*consoleSession)
	}
	if len(c.m) >= consoleSessionsMax {
		c.evict(now)
	}
	c.m[sha256.Sum256([]byte(cookie))] = &consoleSession{op: p, created: now, expires: now.Add(consoleSessionTTL)}
	return cookie, nil
}

// evict drops the expired sessions, and the oldest when none had.
func (c *consoleSessions) evict(now time.Time) {
	var oldest [32]byte
	var at time.Time
	for k, s := range c.m {
		if !now.Before(s.expires) {
			delete(c.m, k)
			continue
		}
		if at.IsZero() || s.created.Before(at) {
			oldest, at = k, s.created
		}
	}
	if len(c.m) >= consoleSessionsMax {
		delete(c.m, oldest)
	}
}

// get is the live session of cookie (a copy), and its key.
func (c *consoleSessions) get(cookie []byte, now time.Time) (consoleSession, [32]byte, bool) {
	k := sha256.Sum256(cookie)
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[k]
	if !ok {
		return consoleSession{}, k, false
	}
	if !now.Before(s.expires) {
		delete(c.m, k)
		return consoleSession{}, k, false
	}
	return *s, k, true
}

// takeFlash returns and clears the session's message.
func (c *consoleSessions) takeFlash(k [32]byte) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[k]
	if !ok || s.flash == "" {
		return "", false
	}
	msg, bad := s.flash, s.flashBad
	s.flash, s.flashBad = "", false
	return msg, bad
}

func (c *consoleSessions) setFlash(k [32]byte, msg string, bad bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m[k]; ok {
		s.flash, s.flashBad = msg, bad
	}
}

func (c *consoleSessions) end(k [32]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}

// Name and Role are the operator as the console's pages show them.
func (p *principal) Name() string { return p.name }
func (p *principal) Role() string { return p.role.String() }

// consoleUI is the operator console: its sessions, its page templates and
// the handlers of its routes (consoleRoutes), a part of the server s whose
// admin listener serves it.
type consoleUI struct {
	s        *Server
	sessions consoleSessions
	tmpl     map[string]*template.Template
}

// consoleRequest is what a console page handler is given.
type consoleRequest struct {
	ctx *fasthttp.RequestCtx
	svc services
	op  *principal
	key [32]byte // the session's
}

type consoleHandler func(r *consoleRequest)

// consolePage is what every page template is given.
type consolePage struct {
	Title    string
	Nav      string // the menu entry lit
	Operator *principal
	Mode     engine.Mode
	Modes    []engine.Mode
	Query    string // the current path, for the mode switch
	Flash    string
	FlashBad bool
	Cluster  bool
	Data     any
}

// consoleHeaders sets the headers every console response carries, and
// refuses a cross-origin write.
func (ui *consoleUI) consoleHeaders(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		hd := &ctx.Response.Header
		hd.Set("Content-Security-Policy", consoleCSP)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		if isWrite(ctx) {
			if err := crossOrigin(ctx); err != nil {
				ui.consoleError(ctx, fasthttp.StatusForbidden, "This request came from another site and was refused: "+err.Error())
				return
			}
		}
		h(ctx)
	}
}

var crossOriginCheck = http.NewCrossOriginProtection()

// crossOrigin applies net/http's CrossOriginProtection to a fasthttp
// request: it reads only the method, Host and the Sec-Fetch-Site and
// Origin headers.
func crossOrigin(ctx *fasthttp.RequestCtx) error {
	req := &http.Request{Method: string(ctx.Method()), Host: string(ctx.Host()), Header: http.Header{}}
	for _, name := range []string{"Sec-Fetch-Site", "Origin"} {
		if v := ctx.Request.Header.Peek(name); len(v) > 0 {
			req.Header.Set(name, string(v))
		}
	}
	return crossOriginCheck.Check(req)
}

// console guards a page: a live session of an operator who still exists,
// a system to read, and for a write the operator role.
func (ui *consoleUI) console(nav string, h consoleHandler) fasthttp.RequestHandler {
	return ui.consoleHeaders(func(ctx *fasthttp.RequestCtx) {
		sess, key, ok := ui.sessions.get(ctx.Request.Header.Cookie(consoleCookie), time.Now())
		var op *principal
		if ok {
			op = ui.currentOperator(sess.op)
		}
		if op == nil {
			if ok {
				ui.sessions.end(key)
			}
			if isWrite(ctx) || nav == "" {
				ui.consoleError(ctx, fasthttp.StatusUnauthorized, "Your session has ended: log in again.")
				return
			}
			ctx.Redirect(consoleBase+"/login?next="+url.QueryEscape(string(ctx.RequestURI())), fasthttp.StatusSeeOther)
			return
		}
		if isWrite(ctx) && op.role == engine.RoleViewer {
			ui.consoleError(ctx, fasthttp.StatusForbidden, errForbidden.message)
			return
		}
		svc, ok := ui.s.served()
		if !ok || ui.s.closing.Load() {
			ui.consoleError(ctx, fasthttp.StatusServiceUnavailable, "This node serves no marketplace now (starting, stopping, or a cluster follower without a leader): retry shortly.")
			return
		}
		ctx.SetUserValue(operatorValue{}, op)
		h(&consoleRequest{ctx: ctx, svc: svc, op: op, key: key})
	})
}

// currentOperator is the session's operator as it is now: root while an
// admin token is configured, a named operator while not revoked; nil
// otherwise.
func (ui *consoleUI) currentOperator(p principal) *principal {
	if p.id.IsZero() {
		if ui.s.cfg.AdminToken == "" {
			return nil
		}
		return rootPrincipal
	}
	svc, ok := ui.s.served()
	if !ok {
		return nil
	}
	o, ok := svc.operators.Operator(p.id)
	if !ok {
		return nil
	}
	return &principal{name: o.Name, id: o.ID, role: o.Role}
}

func (ui *consoleUI) consoleLoginPage(ctx *fasthttp.RequestCtx) {
	ui.renderLogin(ctx, fasthttp.StatusOK, "", string(ctx.QueryArgs().Peek("next")))
}

func (ui *consoleUI) renderLogin(ctx *fasthttp.RequestCtx, status int, problem, next string) {
	ui.consoleRender(ctx, status, "login", &consolePage{Title: "Log in",
		Flash: problem, FlashBad: problem != "", Data: safeNext(next)})
}

// safeNext is where a login may send its operator on: a console path,
// never another site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, consoleBase+"/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return consoleBase + "/"
	}
	return next
}

func (ui *consoleUI) consoleLogin(ctx *fasthttp.RequestCtx) {
	token := strings.TrimSpace(string(ctx.PostArgs().Peek("token")))
	next := string(ctx.PostArgs().Peek("next"))
	var p *principal
	if token != "" && len(token) <= bearerTokenBytesMax {
		p = ui.s.adminPrincipal(token)
	}
	if p == nil {
		ui.s.cfg.Logger.Warn("console login refused", "remote", ctx.RemoteIP().String())
		ui.renderLogin(ctx, fasthttp.StatusUnauthorized, "That token is not an operator's.", next)
		return
	}
	cookie, err := ui.sessions.create(*p, time.Now())
	if err != nil {
		ui.consoleError(ctx, fasthttp.StatusInternalServerError, "No session could be made: "+err.Error())
		return
	}
	setSessionCookie(ctx, cookie)
	ui.s.cfg.Logger.Info("console login", "operator", p.name, "role", p.role.String())
	ctx.Redirect(safeNext(next), fasthttp.StatusSeeOther)
}

func (ui *consoleUI) consoleLogout(ctx *fasthttp.RequestCtx) {
	if _, key, ok := ui.sessions.get(ctx.Request.Header.Cookie(consoleCookie), time.Now()); ok {
		ui.sessions.end(key)
	}
	setSessionCookie(ctx, "")
	ctx.Redirect(consoleBase+"/login", fasthttp.StatusSeeOther)
}

// setSessionCookie sets the session cookie to value for consoleSessionTTL,
// or deletes it (value ""): HttpOnly, SameSite=Strict, the console's path
// only, Secure over HTTPS.
func setSessionCookie(ctx *fasthttp.RequestCtx, value string) {
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(consoleCookie)
	c.SetValue(value)
	c.SetPath(consoleBase + "/")
	c.SetHTTPOnly(true)
	c.SetSameSite(fasthttp.CookieSameSiteStrictMode)
	c.SetSecure(ctx.IsTLS())
	if value == "" {
		c.SetExpire(fasthttp.CookieExpireDelete)
	} else {
		c.SetMaxAge(int(consoleSessionTTL / time.Second))
	}
	ctx.Response.Header.SetCookie(c)
}

// consoleAsset serves the embedded static files (long-cached: their
// names change with their versions only through a new binary, so
// revalidation is by the binary's start).
func (ui *consoleUI) consoleAsset(ctx *fasthttp.RequestCtx) {
	name, _ := ctx.UserValue("file").(string)
	name = path.Clean("/" + name)[1:]
	b, err := fs.ReadFile(consoleStatic, "console/static/"+name)
	if err != nil || name == "" {
		ctx.Error("not found", fasthttp.StatusNotFound)
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "text/plain; charset=utf-8"
	}
	ctx.SetContentType(ct)
	ctx.Response.Header.Set("X-Content-Type-Options", "nosniff")
	ctx.Response.Header.Set("Cache-Control", "private, max-age=3600")
	ctx.SetBody(b)
}

// consoleError answers a console request with an error page.
func (ui *consoleUI) consoleError(ctx *fasthttp.RequestCtx, status int, msg string) {
	ui.consoleRender(ctx, status, "error", &consolePage{Title: http.StatusText(status), Flash: msg, FlashBad: true})
}

// consoleRender executes the page's template into the response (whole, or
// nothing but an error: a template fault never half-writes a page).
func (ui *consoleUI) consoleRender(ctx *fasthttp.RequestCtx, status int, name string, p *consolePage) {
	if op, _ := ctx.UserValue(operatorValue{}).(*principal); op != nil && p.Operator == nil {
		p.Operator = op
	}
	p.Cluster = ui.s.cfg.Cluster != nil
	var buf bytes.Buffer
	t := ui.tmpl[name]
	block := "layout"
	if len(ctx.Request.Header.Peek("HX-Request")) > 0 && t.Lookup("partial") != nil {
		block = "partial" // htmx asks for the part it swaps
	}
	if err := t.ExecuteTemplate(&buf, block, p); err != nil {
		ui.s.cfg.Logger.Error("console page failed", "page", name, "err", err)
		ctx.Response.ResetBody()
		ctx.SetStatusCode(fasthttp.StatusInternalServerError)
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString("the page could not be rendered; the log says why")
		return
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBody(buf.Bytes())
}

// page renders a page of r's operator with the session's flash.
func (ui *consoleUI) page(r *consoleRequest, name, title string, mode engine.Mode, data any) {
	p := &consolePage{Title: title, Nav: name, Operator: r.op, Mode: mode, Modes: engine.Modes,
		Query: string(r.ctx.Path()), Data: data}
	p.Flash, p.FlashBad = ui.sessions.takeFlash(r.key)
	ui.consoleRender(r.ctx, fasthttp.StatusOK, name, p)
}

// done ends a console write: the outcome becomes the session's flash and
// the operator is sent to back (post/redirect/get).
func (ui *consoleUI) done(r *consoleRequest, back, msg string, bad bool) {
	ui.sessions.setFlash(r.key, msg, bad)
	r.ctx.Redirect(back, fasthttp.StatusSeeOther)
}

// consoleMode is the page's mode (?mode=, live by default).
func consoleMode(ctx *fasthttp.RequestCtx) engine.Mode {
	if m, ok := engine.ParseMode(string(ctx.QueryArgs().Peek("mode"))); ok {
		return m
	}
	return engine.ModeLive
}
