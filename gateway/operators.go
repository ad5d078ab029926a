package gateway

import (
	"crypto/subtle"
	"strconv"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// Named operators and the audit trail (contract §15.2). The admin token is
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
	if sys := s.served(); sys != nil {
		if o, ok := sys.AuthenticateOperator(token); ok {
			return &principal{name: o.Name, id: o.ID, role: o.Role}
		}
	}
	return nil
}

// isWrite: what the admin API changes (everything but GET and HEAD).
func isWrite(ctx *fasthttp.RequestCtx) bool { return !ctx.IsGet() && !ctx.IsHead() }

// audit records the write just answered, as its operator made it.
func (s *Server) audit(ctx *fasthttp.RequestCtx, p *principal) {
	sys := s.served()
	if sys == nil {
		return // nothing can be written here; the write itself was refused (503)
	}
	route, _ := ctx.UserValue(router.MatchedRoutePathParam).(string)
	if route == "" {
		route = string(ctx.Path())
	}
	r := sys.OperatorCommand(&actors.RecordAudit{Operator: p.name, OperatorID: p.id,
		Action: string(ctx.Method()) + " " + route, Target: string(ctx.Path()), Status: uint16(ctx.Response.StatusCode())})
	if err := r.Failure(); err != nil {
		s.cfg.Logger.Error("an operator's write was answered but its audit line was not recorded",
			"operator", p.name, "method", string(ctx.Method()), "path", string(ctx.Path()),
			"status", ctx.Response.StatusCode(), "err", err)
	}
}

// registerOperators serves the operators and the audit trail.
func (s *Server) registerOperators(r *router.Router) {
	r.POST(adminBase+"/operators", s.rootOnly(s.createOperator))
	r.GET(adminBase+"/operators", s.operator(s.listOperators))
	r.DELETE(adminBase+"/operators/{operatorId}", s.rootOnly(s.revokeOperator))
	r.GET(adminBase+"/audit", s.operator(s.auditTrail))
}

// rootOnly is operator for the routes only root may call.
func (s *Server) rootOnly(h operatorHandler) fasthttp.RequestHandler {
	return s.operator(func(ctx *fasthttp.RequestCtx, sys *actors.System) {
		if p, _ := ctx.UserValue(operatorValue{}).(*principal); p != rootPrincipal {
			s.writeError(ctx, errRootOnly)
			return
		}
		h(ctx, sys)
	})
}

func (s *Server) createOperator(ctx *fasthttp.RequestCtx, sys *actors.System) {
	o, ok := s.bodyObject(ctx)
	if !ok {
		return
	}
	name, ok := o.str("name", true, engine.OperatorNameMax)
	if ok && (name == "" || name == engine.RootOperator) {
		o.problem("name", "must be 1 to 64 bytes and not \"root\"")
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
	r := sys.OperatorCommand(&actors.CreateOperator{Name: name, Role: role})
	if s.adminFailed(ctx, r.Err, r.Result) {
		return
	}
	w := jsonWriter{}
	w.open("")
	writeOperator(&w, &r.Operator)
	w.str("token", r.Token)
	w.close()
	s.writeJSON(ctx, fasthttp.StatusCreated, w.b)
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

func (s *Server) listOperators(ctx *fasthttp.RequestCtx, sys *actors.System) {
	w := jsonWriter{}
	w.open("")
	w.openArray("data")
	for _, o := range sys.Operators() {
		w.open("")
		writeOperator(&w, &o)
		w.close()
	}
	w.closeArray()
	w.close()
	s.writeJSON(ctx, fasthttp.StatusOK, w.b)
}

func (s *Server) revokeOperator(ctx *fasthttp.RequestCtx, sys *actors.System) {
	id, e := pathID(ctx, "operatorId")
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	r := sys.OperatorCommand(&actors.RevokeOperator{Operator: engine.OperatorID(id)})
	if s.adminFailed(ctx, r.Err, r.Result) {
		return
	}
	w := jsonWriter{}
	w.open("")
	writeOperator(&w, &r.Operator)
	w.close()
	s.writeJSON(ctx, fasthttp.StatusOK, w.b)
}

// auditLimitDefault and auditLimitMax bound GET /admin/v1/audit's page.
const (
	auditLimitDefault = 50
	auditLimitMax     = 500
)

func (s *Server) auditTrail(ctx *fasthttp.RequestCtx, sys *actors.System) {
	args := ctx.QueryArgs()
	limit := auditLimitDefault
	if raw := args.Peek("limit"); raw != nil {
		n, err := strconv.Atoi(string(raw))
		if err != nil || n < 1 || n > auditLimitMax {
			s.writeError(ctx, fieldError("limit", "must be an integer from 1 to 500"))
			return
		}
		limit = n
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
	page, more, found := sys.AuditPage(after, limit)
	if !found {
		s.writeError(ctx, fieldError("startingAfter", "no such audit entry is kept (the newest 100,000 are)"))
		return
	}
	w := jsonWriter{}
	w.open("")
	w.openArray("data")
	for _, a := range page {
		w.open("")
		w.id("id", a.ID)
		w.str("operator", a.Operator)
		w.str("action", a.Action)
		w.str("target", a.Target)
		w.integer("status", int64(a.Status))
		w.time("createdAt", a.At)
		w.close()
	}
	w.closeArray()
	w.boolean("hasMore", more)
	w.close()
	s.writeJSON(ctx, fasthttp.StatusOK, w.b)
}
