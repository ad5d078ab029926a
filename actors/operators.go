package actors

import (
	"crypto/sha256"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
)

// Named operators and the audit trail (engine/operator.go): the read
// models the gateway consults on every admin request, and the coordinator's
// commands that change them.

// operatorTokenChars is the number of random base62 characters of an
// operator token (~238 bits), after the prefix "oja_op_".
const operatorTokenChars = 40

// operatorDirectory is the named operators by token hash and by id: an
// immutable snapshot swapped whole on each (rare) change, so that an admin
// request's authentication is one map read.
type operatorDirectory struct {
	view atomic.Pointer[operatorView]
}

type operatorView struct {
	byHash map[[32]byte]*engine.Operator
	byID   map[engine.OperatorID]*engine.Operator
}

func (d *operatorDirectory) init(ops map[engine.OperatorID]*engine.Operator) {
	v := &operatorView{byHash: map[[32]byte]*engine.Operator{}, byID: map[engine.OperatorID]*engine.Operator{}}
	for id, o := range ops {
		c := *o
		v.byID[id], v.byHash[o.Hash] = &c, &c
	}
	d.view.Store(v)
}

// put publishes o (new, or revoked). Only the coordinator writes.
func (d *operatorDirectory) put(o engine.Operator) {
	old := d.view.Load()
	v := &operatorView{byHash: make(map[[32]byte]*engine.Operator, len(old.byHash)+1), byID: make(map[engine.OperatorID]*engine.Operator, len(old.byID)+1)}
	for k, x := range old.byHash {
		v.byHash[k] = x
	}
	for k, x := range old.byID {
		v.byID[k] = x
	}
	v.byID[o.ID], v.byHash[o.Hash] = &o, &o
	d.view.Store(v)
}

// AuthenticateOperator resolves a named operator's token: its operator
// while the token works (not revoked).
func (s *System) AuthenticateOperator(token string) (engine.Operator, bool) {
	if !strings.HasPrefix(token, "oja_op_") {
		return engine.Operator{}, false
	}
	o, ok := s.operators.view.Load().byHash[sha256.Sum256([]byte(token))]
	if !ok || o.RevokedAt != 0 {
		return engine.Operator{}, false
	}
	return *o, true
}

// Operator is the named operator id while it is not revoked (one map
// read, like AuthenticateOperator).
func (s *System) Operator(id engine.OperatorID) (engine.Operator, bool) {
	o, ok := s.operators.view.Load().byID[id]
	if !ok || o.RevokedAt != 0 {
		return engine.Operator{}, false
	}
	return *o, true
}

// Operators lists the named operators, revoked ones too, oldest first.
func (s *System) Operators() []engine.Operator {
	v := s.operators.view.Load()
	out := make([]engine.Operator, 0, len(v.byID))
	for _, o := range v.byID {
		out = append(out, *o)
	}
	slices.SortFunc(out, func(a, b engine.Operator) int {
		if a.CreatedAt != b.CreatedAt {
			return int(a.CreatedAt - b.CreatedAt)
		}
		return strings.Compare(a.ID.String(), b.ID.String())
	})
	return out
}

// auditTrail is the audit entries kept (engine.AuditKeptMax), oldest first,
// appended by the coordinator once each is durable.
type auditTrail struct {
	mu      sync.RWMutex
	entries []engine.AuditEntry
}

func (a *auditTrail) init(entries []engine.AuditEntry) { a.entries = slices.Clone(entries) }

// AuditPage is GET /admin/v1/audit: newest first, up to limit entries
// older than the entry after (zero: from the newest); found false when
// after is not an entry kept.
func (s *System) AuditPage(after engine.AuditID, limit int) (page []engine.AuditEntry, more, found bool) {
	s.audit.mu.RLock()
	defer s.audit.mu.RUnlock()
	return engine.AuditPage(s.audit.entries, after, limit)
}

// Operator commands (coordinator). Reply: *OperatorReply.
type (
	CreateOperator struct {
		Audited
		Name string
		Role engine.Role
	}
	RevokeOperator struct {
		Audited
		Operator engine.OperatorID
	}
	// RecordAudit records an operator's write (engine.OperatorActed).
	RecordAudit struct {
		Operator   string
		OperatorID engine.OperatorID
		Action     string
		Target     string
		Status     uint16
	}
)

// OperatorReply answers the operator commands.
type OperatorReply struct {
	Result   engine.Result
	Reason   error // on ResultValidation of a name: what it must be
	Operator engine.Operator
	Token    string // CreateOperator: the token, shown once
	Err      error
}

// Failure is the reply as one error.
func (r *OperatorReply) Failure() error { return replyFailure(r.Err, r.Result) }

// OperatorCommand runs a CreateOperator, RevokeOperator or RecordAudit
// through the coordinator, durably.
func (s *System) OperatorCommand(cmd OperatorRequest) *OperatorReply {
	if err := s.writable(); err != nil {
		return &OperatorReply{Err: err}
	}
	reply, err := ask(s, s.coordinator, cmd)
	if err != nil {
		return &OperatorReply{Err: err}
	}
	return reply
}

// operatorDurable is the coordinator's own message once an operator record
// is durable (or failed).
type operatorDurable struct {
	onDurable func() *OperatorReply
	onDone    func() // after onDurable or the failure, if set
	replyTo   *actor.PID
	err       error
}

// commitOperator logs ev with an operator's audit line (if any); once it is
// durable the coordinator runs onDurable, then onDone either way.
func (a *coordinatorActor) commitOperator(ctx actor.Context, audit *engine.OperatorActed, ev engine.Event, onDurable func() *OperatorReply, onDone func()) {
	replyTo, self := ctx.Sender(), addressOf(ctx, a)
	a.sys.appendThen(func(err error) delivery {
		return deliver(self, &operatorDurable{onDurable: onDurable, onDone: onDone, replyTo: replyTo, err: err})
	}, a.sys.audited(audit, engine.CurrencyNone, ev)...)
}

func (a *coordinatorActor) operatorCommand(ctx actor.Context, msg any) bool {
	sys := a.sys
	switch cmd := msg.(type) {
	case *CreateOperator:
		// NB: what the engine's check refuses is refused here first: a
		// logged record must apply on every replica.
		if (cmd.Role != engine.RoleViewer && cmd.Role != engine.RoleOperator) ||
			len(sys.operators.view.Load().byID) >= engine.OperatorsCountMax {
			ctx.Respond(&OperatorReply{Result: engine.ResultValidation})
			return true
		}
		names := func(yield func(string) bool) {
			for _, o := range sys.operators.view.Load().byID {
				if !yield(o.Name) {
					return
				}
			}
			for n := range a.naming {
				if !yield(n) {
					return
				}
			}
		}
		name, res, err := engine.DecideOperatorName(cmd.Name, names)
		if res != engine.ResultOK {
			ctx.Respond(&OperatorReply{Result: res, Reason: err})
			return true
		}
		token := a.newSecret("oja_op_", operatorTokenChars)
		ev := &engine.OperatorCreated{At: sys.nowMillis(), Operator: engine.OperatorID(sys.ids.UUID()), Name: name,
			Role: cmd.Role, Hash: sha256.Sum256([]byte(token))}
		a.naming[name] = true
		a.commitOperator(ctx, cmd.Audit, ev, func() *OperatorReply {
			o := engine.Operator{ID: ev.Operator, Name: ev.Name, Role: ev.Role, Hash: ev.Hash, CreatedAt: ev.At}
			sys.operators.put(o)
			return &OperatorReply{Result: engine.ResultOK, Operator: o, Token: token}
		}, func() { delete(a.naming, name) })
	case *RevokeOperator:
		o, ok := sys.operators.view.Load().byID[cmd.Operator]
		if !ok {
			ctx.Respond(&OperatorReply{Result: engine.ResultOperatorNotFound})
			return true
		}
		if o.RevokedAt != 0 { // revoking twice answers the revocation again
			ctx.Respond(&OperatorReply{Result: engine.ResultOK, Operator: *o})
			return true
		}
		ev := &engine.OperatorRevoked{At: sys.nowMillis(), Operator: cmd.Operator}
		a.commitOperator(ctx, cmd.Audit, ev, func() *OperatorReply {
			r := *o
			r.RevokedAt = ev.At
			sys.operators.put(r)
			return &OperatorReply{Result: engine.ResultOK, Operator: r}
		}, nil)
	case *RecordAudit:
		if cmd.Operator == "" || cmd.Action == "" {
			ctx.Respond(&OperatorReply{Result: engine.ResultValidation})
			return true
		}
		ev := &engine.OperatorActed{At: sys.nowMillis(), Audit: engine.AuditID(sys.ids.UUID()), Operator: truncate(cmd.Operator, engine.OperatorNameMax),
			OperatorID: cmd.OperatorID, Action: truncate(cmd.Action, engine.AuditActionMax),
			Target: truncate(cmd.Target, engine.AuditTargetMax), Status: cmd.Status}
		a.commitOperator(ctx, nil, ev, func() *OperatorReply { // appendThen keeps the line
			return &OperatorReply{Result: engine.ResultOK}
		}, nil)
	case *operatorDurable:
		reply := &OperatorReply{Err: cmd.err}
		if cmd.err == nil {
			reply = cmd.onDurable()
		}
		if cmd.onDone != nil {
			cmd.onDone()
		}
		ctx.Send(cmd.replyTo, reply)
	default:
		return false
	}
	return true
}

// truncate cuts s to at most n bytes, on a UTF-8 boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
