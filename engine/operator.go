package engine

import (
	"fmt"
	"iter"
	"slices"
	"strings"
)

// Named operators and the audit trail (spec §15.2). An operator is a
// person with a token of their own on the admin API: a viewer reads, an
// operator reads and acts. The admin token of section 11 is the root
// operator, never recorded as one. Every operator write is recorded
// (OperatorActed) with who made it; the state keeps the newest
// AuditKeptMax entries, the log every one within its retention.

// Role is what an operator may do.
type Role uint8

const (
	RoleViewer   Role = 1 // reads only
	RoleOperator Role = 2 // reads and acts
)

func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RoleOperator:
		return "operator"
	}
	return "unknown"
}

// ParseRole reads a role's name.
func ParseRole(s string) (Role, bool) {
	switch s {
	case "viewer":
		return RoleViewer, true
	case "operator":
		return RoleOperator, true
	}
	return 0, false
}

// Operator is a named operator; only its token's SHA-256 is kept.
type Operator struct {
	ID        OperatorID
	Name      string
	Role      Role
	Hash      [32]byte
	CreatedAt int64
	RevokedAt int64 // 0: the token works
}

// OperatorCreated: a named operator and its token's hash.
type OperatorCreated struct {
	At       int64
	Operator OperatorID
	Name     string
	Role     Role
	Hash     [32]byte
}

// OperatorRevoked: the operator's token fails from the next request on.
type OperatorRevoked struct {
	At       int64
	Operator OperatorID
}

// OperatorActed: an operator's write on the admin API, as the audit trail
// lists it. Operator is the operator's name ("root" for the admin token),
// OperatorID its id (zero for root); Action the route ("POST
// /admin/v1/pools/{poolId}/rate"), Target the path it named, Status the
// HTTP status it was answered with.
//
// A line with Details (EventOperatorActedInline) is written in the same
// append as the write it describes — one durable step: no write without
// its line, no line without its write — and Details say what the write
// moved and named. A line without (EventOperatorActed) was written after
// its write, as lines were before, or describes an action that is not a
// write to the log (a backup, a cluster membership change).
type OperatorActed struct {
	At         int64
	Audit      AuditID
	Operator   string
	OperatorID OperatorID
	Action     string
	Target     string
	Status     uint16
	Details    *AuditDetails
}

// AuditDetails are what an audited write moved and named: for money, the
// amount and currency, and whichever references it carried.
type AuditDetails struct {
	Amount            Amount // 0 with Currency none: no money moved
	Currency          Currency
	Reference         string // a prefund's or payout's reference
	TxHash            string
	BankTransactionID string
	Quote             QuoteID
	Account           AccountID
	Receipt           ReceiptID
}

// AuditDetailsOf are the details of a write's event. currency is the
// currency of its amount where the event does not name it (the wallet's or
// pool's; CurrencyNone for an event that moves no money).
func AuditDetailsOf(ev Event, currency Currency) AuditDetails {
	d := AuditDetails{Currency: currency}
	switch ev := ev.(type) {
	case *PaymentReceived:
		d.Amount, d.Quote, d.Account = ev.Amount, ev.Quote, ev.Account
		if ev.Method == ReceiptCrypto {
			d.TxHash = ev.Reference
		} else {
			d.BankTransactionID = ev.Reference
		}
	case *AccountDeposited:
		d.Amount, d.Account, d.Reference = ev.Amount, ev.Account, ev.Reference.Text()
	case *AccountWithdrawn:
		d.Amount, d.Account, d.Reference = ev.Amount, ev.Account, ev.Reference.Text()
	case *ReceiptReversed:
		d.Amount, d.Account, d.Receipt = ev.Amount, ev.Account, ev.Receipt
	case *CreditLimitSet:
		d.Amount, d.Account = ev.Limit, ev.Account
	case *PoolDeposited:
		d.Amount = ev.Amount
	case *PoolWithdrawn:
		d.Amount = ev.Amount
	case *ReceiptUnapplied:
		d.Amount, d.Currency, d.BankTransactionID = ev.Receipt.Amount, ev.Receipt.Currency, ev.Receipt.Identity.Text()
	case *UnappliedSettled:
		d.Amount, d.Account, d.Quote, d.Reference = ev.Amount, ev.Account, ev.Quote, ev.Return.Text()
	default:
		d.Currency = CurrencyNone
		if q := quoteOf(ev); !q.IsZero() {
			d.Quote = q
		}
	}
	return d
}

// AuditEntry is one line of the audit trail.
type AuditEntry struct {
	ID         AuditID
	At         int64
	Operator   string
	OperatorID OperatorID
	Action     string
	Target     string
	Status     uint16
	Details    *AuditDetails // nil: a line written apart from its write
}

// Bounds of operator records: a name, an action, a target; the audit
// entries a state keeps (the log keeps every one within its retention).
const (
	OperatorNameMax   = 64
	AuditActionMax    = 128
	AuditTargetMax    = 512
	AuditKeptMax      = 100_000
	auditTrimSlack    = AuditKeptMax / 8
	OperatorsCountMax = 10_000
)

func (s *State) checkOperator(ev Event) error {
	switch ev := ev.(type) {
	case *OperatorCreated:
		if _, dup := s.Operators[ev.Operator]; dup || ev.Operator.IsZero() {
			return fmt.Errorf("operator %s exists or is zero", ev.Operator)
		}
		if ev.Name == "" || len(ev.Name) > OperatorNameMax || ev.Name == RootOperator {
			return fmt.Errorf("operator name %q: 1 to %d bytes, not %q", ev.Name, OperatorNameMax, RootOperator)
		}
		if ev.Role != RoleViewer && ev.Role != RoleOperator {
			return fmt.Errorf("operator role %d", ev.Role)
		}
		if len(s.Operators) >= OperatorsCountMax {
			return fmt.Errorf("%d operators already", len(s.Operators))
		}
	case *OperatorRevoked:
		if _, ok := s.Operators[ev.Operator]; !ok {
			return fmt.Errorf("unknown operator %s", ev.Operator)
		}
	case *OperatorActed:
		if ev.Audit.IsZero() || ev.Operator == "" || len(ev.Operator) > OperatorNameMax ||
			ev.Action == "" || len(ev.Action) > AuditActionMax || len(ev.Target) > AuditTargetMax {
			return fmt.Errorf("audit entry %s: bad id, operator, action or target", ev.Audit)
		}
	}
	return nil
}

func (s *State) applyOperator(ev Event) {
	switch ev := ev.(type) {
	case *OperatorCreated:
		s.Operators[ev.Operator] = &Operator{ID: ev.Operator, Name: ev.Name, Role: ev.Role, Hash: ev.Hash, CreatedAt: ev.At}
	case *OperatorRevoked:
		if o := s.Operators[ev.Operator]; o.RevokedAt == 0 {
			o.RevokedAt = ev.At
		}
	case *OperatorActed:
		s.appendAudit(AuditEntryOf(ev))
	}
}

// appendAudit keeps e, dropping the oldest entries beyond AuditKeptMax (a
// few at a time, so that an append costs O(1) amortized).
func (s *State) appendAudit(e AuditEntry) { s.Audit = AppendAudit(s.Audit, e) }

// AppendAudit appends e to entries (oldest first), dropping the oldest
// beyond AuditKeptMax a few at a time: the state's rule, for any holder of
// the trail.
func AppendAudit(entries []AuditEntry, e AuditEntry) []AuditEntry {
	entries = append(entries, e)
	if len(entries) > AuditKeptMax+auditTrimSlack {
		entries = slices.Clone(entries[len(entries)-AuditKeptMax:])
	}
	return entries
}

// AuditEntryOf is the audit line an OperatorActed records.
func AuditEntryOf(ev *OperatorActed) AuditEntry {
	return AuditEntry{ID: ev.Audit, At: ev.At, Operator: ev.Operator, OperatorID: ev.OperatorID,
		Action: ev.Action, Target: ev.Target, Status: ev.Status, Details: ev.Details}
}

// DecideOperatorName decides a new operator's name against the names of
// every operator created, revoked ones too: the name as kept (trimmed),
// or ResultValidation with the reason (characters, scripts, length), or
// ResultOperatorExists — it reads as root or as one of names
// (CanonicalOperatorName: as people read them).
func DecideOperatorName(name string, names iter.Seq[string]) (string, Result, error) {
	canonical, err := CanonicalOperatorName(name)
	if err != nil {
		return "", ResultValidation, err
	}
	kept := strings.TrimSpace(name)
	if len(kept) > OperatorNameMax {
		return "", ResultValidation, ErrOperatorNameLength
	}
	if canonical == RootOperator {
		return "", ResultOperatorExists, nil
	}
	for n := range names {
		if c, err := CanonicalOperatorName(n); n == kept || err == nil && c == canonical {
			return "", ResultOperatorExists, nil
		}
	}
	return kept, ResultOK, nil
}

// RootOperator is the name the admin token acts under.
const RootOperator = "root"

// AuditPage is the audit trail newest first: up to limit entries older
// than the entry after (zero: from the newest); found false when after is
// not an entry the state keeps.
func (s *State) AuditPage(after AuditID, limit int) (page []AuditEntry, more, found bool) {
	return AuditPage(s.Audit, after, limit)
}

// AuditPage pages entries (oldest first) as State.AuditPage does.
func AuditPage(entries []AuditEntry, after AuditID, limit int) (page []AuditEntry, more, found bool) {
	end := len(entries)
	if !after.IsZero() {
		end = -1
		for i := len(entries) - 1; i >= 0; i-- {
			if entries[i].ID == after {
				end = i
				break
			}
		}
		if end < 0 {
			return nil, false, false
		}
	}
	for i := end - 1; i >= 0 && len(page) < limit; i-- {
		page = append(page, entries[i])
	}
	return page, end-len(page) > 0, true
}
