package gateway

import (
	"crypto/subtle"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// Named operators and the audit trail (spec §15.2). The admin token is
// the root operator; a named operator's token (oja_op_…) is checked against
// the system's operators. A viewer's write is 403 FORBIDDEN. Every write an
// operator makes is recorded (engine.OperatorActed) before it is answered;
// a refused one changed nothing and is not recorded (the access log has
// it).

// operatorValue is the user-value key of the request's operator.
type operatorValue struct{}

// principal is who makes an admin request.
type principal struct {
	name string
	id   engine.OperatorID // zero: root
	role engine.Role
}

var rootPrincipal = &principal{name: engine.RootOperator, role: engine.RoleOperator}

var (
	errForbidden = &apiError{status: fasthttp.StatusForbidden, code: "FORBIDDEN",
		message: "this operator's role is viewer: it reads only"}
	errRootOnly = &apiError{status: fasthttp.StatusForbidden, code: "FORBIDDEN",
		message: "only the root operator (the admin token) manages operators"}
)

// adminPrincipal is the request's operator: root for the admin token, a
// named operator for a working token of one (known to the system this node
// serves; a node that serves none knows only root); nil otherwise.
func (s *Server) adminPrincipal(token string) *principal {
	if want := s.cfg.AdminToken; want != "" && subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1 {
		return rootPrincipal
	}
	if svc, ok := s.served(); ok {
		if o, ok := svc.operators.AuthenticateOperator(token); ok {
			return &principal{name: o.Name, id: o.ID, role: o.Role}
		}
	}
	return nil
}

// isWrite: what the admin API changes (everything but GET and HEAD).
func isWrite(ctx *fasthttp.RequestCtx) bool { return !ctx.IsGet() && !ctx.IsHead() }

// auditValue is the user-value key of an operator's write's pending audit
// line.
type auditValue struct{}

// pendingAudit is what is known of an operator's write before its handler
// runs: who makes it. A handler that logs the write takes its line
// (auditLine), so that the write and its line are one append (one durable
// step: actors/audit.go). A write whose handler took no line — a backup, a
// cluster membership change: nothing the log holds — is recorded after it
// is answered, as a line of its own (audit).
type pendingAudit struct {
	p     *principal
	taken bool
}

// startAudit notes that the request is p's write.
func startAudit(ctx *fasthttp.RequestCtx, p *principal) *pendingAudit {
	a := &pendingAudit{p: p}
	ctx.SetUserValue(auditValue{}, a)
	return a
}

// auditLine is the audit line of the operator's write this request makes,
// a success of which answers status; nil when the request is not an
// operator's write (the actors log none).
func (s *Server) auditLine(ctx *fasthttp.RequestCtx, status int) *engine.OperatorActed {
	a, _ := ctx.UserValue(auditValue{}).(*pendingAudit)
	if a == nil {
		return nil
	}
	a.taken = true
	route, _ := ctx.UserValue(router.MatchedRoutePathParam).(string)
	if route == "" {
		route = string(ctx.Path())
	}
	id := a.p.id
	return &engine.OperatorActed{Operator: a.p.name, OperatorID: id, Action: string(ctx.Method()) + " " + route,
		Target: string(ctx.Path()), Status: uint16(status)}
}

// finishAudit records, after it was answered, the line of a successful
// write whose handler took none.
func (s *Server) finishAudit(ctx *fasthttp.RequestCtx, a *pendingAudit) {
	if !a.taken && ctx.Response.StatusCode() < 300 {
		s.audit(ctx, a.p)
	}
}

// audit records the write just answered, as its operator made it, as a
// line of its own.
func (s *Server) audit(ctx *fasthttp.RequestCtx, p *principal) {
	svc, ok := s.served()
	if !ok {
		return // nothing can be written here; the write itself was refused (503)
	}
	route, _ := ctx.UserValue(router.MatchedRoutePathParam).(string)
	if route == "" {
		route = string(ctx.Path())
	}
	r := svc.operators.OperatorCommand(&actors.RecordAudit{Operator: p.name, OperatorID: p.id,
		Action: string(ctx.Method()) + " " + route, Target: string(ctx.Path()), Status: uint16(ctx.Response.StatusCode())})
	if err := r.Failure(); err != nil {
		s.cfg.Logger.Error("an operator's write was answered but its audit line was not recorded",
			"operator", p.name, "method", string(ctx.Method()), "path", string(ctx.Path()),
			"status", ctx.Response.StatusCode(), "err", err)
	}
}

// rootOnly is operator for the routes only root may call.
func (s *Server) rootOnly(h operatorHandler) fasthttp.RequestHandler {
	return s.operator(func(ctx *fasthttp.RequestCtx, svc services) {
		if p, _ := ctx.UserValue(operatorValue{}).(*principal); p != rootPrincipal {
			s.writeError(ctx, errRootOnly)
			return
		}
		h(ctx, svc)
	})
}

func (s *Server) createOperator(ctx *fasthttp.RequestCtx, svc services) {
	o, ok := s.bodyObject(ctx)
	if !ok {
		return
	}
	name, ok := o.str("name", true, operatorNameBytesMax)
	if ok {
		if _, err := engine.CanonicalOperatorName(name); err != nil {
			o.problem("name", err.Error())
		}
	}
	roleName, ok := o.str("role", true, enumBytesMax)
	role, known := engine.ParseRole(roleName)
	if ok && !known {
		o.problem("role", "must be viewer or operator")
	}
	if e := o.finish(); e != nil {
		s.writeError(ctx, e)
		return
	}
	r := svc.operators.OperatorCommand(&actors.CreateOperator{Audited: actors.Audited{Audit: s.auditLine(ctx, fasthttp.StatusCreated)}, Name: name, Role: role})
	if r.Result == engine.ResultValidation && r.Reason != nil {
		s.writeError(ctx, fieldError("name", r.Reason.Error()))
		return
	}
	if s.adminFailed(ctx, r.Err, r.Result) {
		return
	}
	s.writeObject(ctx, fasthttp.StatusCreated, func(w *jsonWriter) {
		writeOperator(w, &r.Operator)
		w.str("token", r.Token)
	})
}

// appendAuditDetails writes an audit line's details: what the write moved
// ({amount, currency}) and whichever references it named.
func appendAuditDetails(w *jsonWriter, d *engine.AuditDetails) {
	w.open("details")
	if d.Currency != engine.CurrencyNone {
		w.amount("amount", d.Amount, d.Currency)
		w.str("currency", d.Currency.String())
	}
	for _, m := range [...]struct{ name, value string }{{"reference", d.Reference}, {"txHash", d.TxHash},
		{"bankTransactionId", d.BankTransactionID}} {
		if m.value != "" {
			w.str(m.name, m.value)
		}
	}
	if !d.Quote.IsZero() {
		w.id("quoteId", d.Quote)
	}
	if !d.Account.IsZero() {
		w.id("accountId", d.Account)
	}
	if !d.Receipt.IsZero() {
		w.str("receiptId", d.Receipt.String())
	}
	w.close()
}

func writeOperator(w *jsonWriter, o *engine.Operator) {
	w.id("operatorId", o.ID)
	w.str("name", o.Name)
	w.str("role", o.Role.String())
	w.time("createdAt", o.CreatedAt)
	if o.RevokedAt != 0 {
		w.time("revokedAt", o.RevokedAt)
	}
}

func (s *Server) listOperators(ctx *fasthttp.RequestCtx, svc services) {
	s.writeObject(ctx, fasthttp.StatusOK, func(w *jsonWriter) {
		w.openArray("data")
		for _, o := range svc.operators.Operators() {
			w.open("")
			writeOperator(w, &o)
			w.close()
		}
		w.closeArray()
	})
}

func (s *Server) revokeOperator(ctx *fasthttp.RequestCtx, svc services) {
	id, ok := s.pathUUID(ctx, "operatorId")
	if !ok {
		return
	}
	r := svc.operators.OperatorCommand(&actors.RevokeOperator{Audited: actors.Audited{Audit: s.auditLine(ctx, fasthttp.StatusOK)}, Operator: engine.OperatorID(id)})
	if s.adminFailed(ctx, r.Err, r.Result) {
		return
	}
	s.writeObject(ctx, fasthttp.StatusOK, func(w *jsonWriter) {
		writeOperator(w, &r.Operator)
	})
}

// operatorNameBytesMax bounds an operator's name as typed (its canonical
// form is at most engine.OperatorNameMax characters).
const operatorNameBytesMax = 256

// auditLimitDefault and auditLimitMax bound GET /admin/v1/audit's page.
const (
	auditLimitDefault = 50
	auditLimitMax     = 500
)

func (s *Server) auditTrail(ctx *fasthttp.RequestCtx, svc services) {
	args := ctx.QueryArgs()
	limit, e := queryLimit(ctx, auditLimitDefault, auditLimitMax)
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	var after engine.AuditID
	if raw := args.Peek("startingAfter"); raw != nil {
		id, ok := engine.ParseUUID(string(raw))
		if !ok {
			s.writeError(ctx, fieldError("startingAfter", "must be the id of an audit entry"))
			return
		}
		after = id
	}
	page, more, found := svc.operators.AuditPage(after, limit)
	if !found {
		s.writeError(ctx, fieldError("startingAfter", "no such audit entry is kept (the newest 100,000 are)"))
		return
	}
	s.writeObject(ctx, fasthttp.StatusOK, func(w *jsonWriter) {
		w.openArray("data")
		for _, a := range page {
			w.open("")
			w.id("id", a.ID)
			w.str("operator", a.Operator)
			if a.OperatorID.IsZero() {
				w.str("operatorId", engine.RootOperator)
			} else {
				w.id("operatorId", a.OperatorID)
			}
			w.str("action", a.Action)
			w.str("target", a.Target)
			w.integer("status", int64(a.Status))
			if a.Details != nil {
				appendAuditDetails(w, a.Details)
			}
			w.time("createdAt", a.At)
			w.close()
		}
		w.closeArray()
		w.boolean("hasMore", more)
	})
}
