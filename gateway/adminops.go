package gateway

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/engine"
)

// An adminOp is an operator's write that the admin API and the console
// both make. do reads the write's fields from o (the admin API's JSON
// body; the console's form, read as the same members: one validation for
// both), makes the write through the actors and returns what it made, or
// the refusal; it writes no answer. The admin API answers with answer
// (adminAPI), the console with a page (consoleWrite).
type adminOp[R any] struct {
	body   bool // the write has fields (a JSON body); false: o is nil
	do     func(s *Server, ctx *fasthttp.RequestCtx, svc services, o *object) (R, *apiError)
	answer func(s *Server, ctx *fasthttp.RequestCtx, svc services, made R)
}

// adminAPI is op as an admin API handler.
func adminAPI[R any](s *Server, op adminOp[R]) operatorHandler {
	return func(ctx *fasthttp.RequestCtx, svc services) {
		var o *object
		if op.body {
			var ok bool
			if o, ok = s.bodyObject(ctx); !ok {
				return
			}
		}
		made, e := op.do(s, ctx, svc, o)
		if e != nil {
			s.writeError(ctx, e)
			return
		}
		op.answer(s, ctx, svc, made)
	}
}

// consoleWrite makes op for a console post, with form as its fields, and
// audits it as the console route the operator used. A refusal is its
// message with its details (refusalText), and ok false.
func consoleWrite[R any](s *Server, r *consoleRequest, op adminOp[R], form ...formMember) (made R, msg string, ok bool) {
	var o *object
	if op.body {
		var e *apiError
		if o, e = parseObject(jsonForm(form...)); e != nil {
			return made, refusalText(e), false
		}
	}
	a := startAudit(r.ctx, r.op)
	made, e := op.do(s, r.ctx, r.svc, o)
	if e != nil {
		return made, refusalText(e), false
	}
	s.finishAudit(r.ctx, a)
	return made, "", true
}

// refusalText is a refusal as the console shows it: its message, then
// each detail in the order of their names.
func refusalText(e *apiError) string {
	var b strings.Builder
	b.WriteString(e.message)
	for _, k := range slices.Sorted(maps.Keys(e.details)) {
		switch v := e.details[k].(type) {
		case rawNumber:
			fmt.Fprintf(&b, "; %s: %s", k, v)
		default:
			fmt.Fprintf(&b, "; %s: %v", k, v)
		}
	}
	return b.String()
}

// adminRefusal is the refusal of an actors reply's failure: err, else its
// result when not OK; nil for a success.
func (s *Server) adminRefusal(ctx *fasthttp.RequestCtx, err error, result engine.Result) *apiError {
	if err != nil {
		return s.operatingRefusal(ctx, err)
	}
	if result != engine.ResultOK {
		return resultError(result)
	}
	return nil
}
