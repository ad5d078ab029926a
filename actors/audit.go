package actors

import (
	"github.com/oja-exchange/oja/engine"
)

// The audit line is part of the write (engine.OperatorActed): an operator's
// command carries the line the gateway made for it (Audited), and the actor
// that decides the write appends the line with the write's events in one
// append — one durable step, so no acknowledged write lacks its line and no
// line lacks its write, across a crash or a failover. A command that
// changes nothing (a repeat, a refusal) logs no line. appendThen adds the
// line to the trail kept for readers once it is durable.

// Audited is embedded by the commands an operator makes. Audit is the
// audit line of the write (who, which route, the status a success answers)
// or nil: not an operator's write.
type Audited struct {
	Audit *engine.OperatorActed
}

// audited returns evs with the write's audit line after them: the line
// given its id, time and details (of evs[0]; currency is the currency of
// its amount where the event does not name it). No line: evs as they are.
func (s *System) audited(line *engine.OperatorActed, currency engine.Currency, evs ...engine.Event) []engine.Event {
	if line == nil || len(evs) == 0 {
		return evs
	}
	return s.auditedWith(line, engine.AuditDetailsOf(evs[0], currency), evs...)
}

// auditedWith is audited with the line's details given.
func (s *System) auditedWith(line *engine.OperatorActed, details engine.AuditDetails, evs ...engine.Event) []engine.Event {
	if line == nil {
		return evs
	}
	l := *line
	l.At, l.Audit = s.nowMillis(), engine.AuditID(s.ids.UUID())
	l.Operator = truncate(l.Operator, engine.OperatorNameMax)
	l.Action, l.Target = truncate(l.Action, engine.AuditActionMax), truncate(l.Target, engine.AuditTargetMax)
	l.Details = &details
	return append(evs, &l)
}

// add keeps the audit lines among evs, made durable.
func (a *auditTrail) add(evs []engine.Event) {
	for _, ev := range evs {
		if line, ok := ev.(*engine.OperatorActed); ok {
			a.mu.Lock()
			a.entries = engine.AppendAudit(a.entries, engine.AuditEntryOf(line))
			a.mu.Unlock()
		}
	}
}
