package client

import (
	"context"
	"github.com/shopspring/decimal"
	"net/http"
	"net/url"
	"time"
)

// Operator is a named operator (spec §15.2): a person with a token of
// their own on the admin API. Role is "viewer" (reads only) or "operator"
// (reads and acts).
type Operator struct {
	OperatorID string     `json:"operatorId"`
	Name       string     `json:"name"`
	Role       string     `json:"role"`
	CreatedAt  time.Time  `json:"createdAt"`
	RevokedAt  *time.Time `json:"revokedAt,omitempty"` // nil while the token works
	// Token is set only in CreateOperator's answer: it is shown once.
	Token string `json:"token,omitempty"`
}

// OperatorList is GET /admin/v1/operators.
type OperatorList struct {
	Data []Operator `json:"data"`
}

// AuditEntry is one operator write in the audit trail.
type AuditEntry struct {
	ID         string        `json:"id"`
	Operator   string        `json:"operator"`   // the name; "root" for the admin token
	OperatorID string        `json:"operatorId"` // the operator's id; "root" for the admin token
	Action     string        `json:"action"`     // "METHOD /admin/v1/route/{param}"
	Target     string        `json:"target"`     // the path
	Status     int           `json:"status"`     // the HTTP status a success answers
	Details    *AuditDetails `json:"details,omitempty"`
	CreatedAt  time.Time     `json:"createdAt"`
}

// AuditDetails are what an audited write moved and named (nil on a line
// written apart from its write: before the audit was part of the write, or
// an action the log does not hold, a backup or a membership change).
type AuditDetails struct {
	Amount            *decimal.Decimal `json:"amount,omitempty"`
	Currency          string           `json:"currency,omitempty"`
	Reference         string           `json:"reference,omitempty"`
	TxHash            string           `json:"txHash,omitempty"`
	BankTransactionID string           `json:"bankTransactionId,omitempty"`
	QuoteID           string           `json:"quoteId,omitempty"`
	AccountID         string           `json:"accountId,omitempty"`
	ReceiptID         string           `json:"receiptId,omitempty"`
}

// AuditPage is one page of GET /admin/v1/audit, newest first.
type AuditPage struct {
	Data    []AuditEntry `json:"data"`
	HasMore bool         `json:"hasMore"`
}

// CreateOperator makes a named operator with role "viewer" or "operator"
// (root only; POST /admin/v1/operators; oja admin operators create). The
// answer's Token is shown once.
func (a *Admin) CreateOperator(ctx context.Context, name, role string, opts ...CallOption) (Operator, error) {
	var out Operator
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/operators", map[string]string{"name": name, "role": role}, opts), &out)
	return out, err
}

// Operators lists the named operators, revoked ones too, oldest first (GET
// /admin/v1/operators; oja admin operators list).
func (a *Admin) Operators(ctx context.Context, opts ...CallOption) (OperatorList, error) {
	var out OperatorList
	_, err := a.t.do(ctx, newCall(http.MethodGet, "/operators", nil, opts), &out)
	return out, err
}

// RevokeOperator revokes an operator's token (root only; DELETE
// /admin/v1/operators/{id}; oja admin operators revoke).
func (a *Admin) RevokeOperator(ctx context.Context, operatorID string, opts ...CallOption) (Operator, error) {
	var out Operator
	_, err := a.t.do(ctx, newCall(http.MethodDelete, "/operators/"+url.PathEscape(operatorID), nil, opts), &out)
	return out, err
}

// Audit lists the audit trail newest first, limit per page (0: the
// service's default, 50), after the entry startingAfter ("" = from the
// newest) (GET /admin/v1/audit; oja admin audit).
func (a *Admin) Audit(ctx context.Context, limit int, startingAfter string, opts ...CallOption) (AuditPage, error) {
	return getPage[AuditPage](ctx, a.t, "/audit", nil, limit, startingAfter, opts)
}
