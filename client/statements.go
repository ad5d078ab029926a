package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/shopspring/decimal"
)

// UnappliedReceipt is money that reached a collection account with nothing
// to credit, held in suspense until an operator applies or returns it
// (spec §16.3).
type UnappliedReceipt struct {
	UnappliedID       string          `json:"unappliedId"`
	Mode              Mode            `json:"mode"`
	Currency          string          `json:"currency"`
	Amount            decimal.Decimal `json:"amount"`
	BankTransactionID string          `json:"bankTransactionId"`
	Remittance        string          `json:"remittance"`
	DebtorName        string          `json:"debtorName,omitempty"`
	CreatedAt         time.Time       `json:"createdAt"`
}

// StatementImport is what importing a bank statement did.
type StatementImport struct {
	Entries           int                `json:"entries"`
	Applied           int                `json:"applied"`
	Unapplied         int                `json:"unapplied"`
	Duplicates        int                `json:"duplicates"`
	Ignored           int                `json:"ignored"`
	UnappliedReceipts []UnappliedReceipt `json:"unappliedReceipts"`
	Conflicts         []ImportConflict   `json:"conflicts"`
}

// ImportConflict is an entry whose bank id was recorded before as another
// payment: nothing changed; an operator checks it.
type ImportConflict struct {
	Entry             int             `json:"entry"`
	BankTransactionID string          `json:"bankTransactionId"`
	RecordedAs        string          `json:"recordedAs"`
	Mode              Mode            `json:"mode"`
	Amount            decimal.Decimal `json:"amount"`
	Currency          string          `json:"currency"`
}

// ImportStatement imports a bank's ISO 20022 camt.053.001.08 statement or
// camt.054.001.08 credit notification (POST
// /admin/v1/payins/bank/statements; oja admin payins import FILE).
func (a *Admin) ImportStatement(ctx context.Context, document []byte, opts ...CallOption) (StatementImport, error) {
	c := newCall(http.MethodPost, "/payins/bank/statements", nil, opts)
	c.document, c.documentType = document, "application/xml"
	var out StatementImport
	_, err := a.t.do(ctx, c, &out)
	return out, err
}

// UnappliedPage is a page of UnappliedList.
type UnappliedPage struct {
	Data    []UnappliedReceipt `json:"data"`
	HasMore bool               `json:"hasMore"`
}

// UnappliedList lists the receipts held in suspense, newest first (oja
// admin payins unapplied): mode "" is both; limit 0 the service's default
// (50); startingAfter the last UnappliedID of the previous page.
func (a *Admin) UnappliedList(ctx context.Context, mode Mode, limit int, startingAfter string, opts ...CallOption) (UnappliedPage, error) {
	query := url.Values{}
	if mode != "" {
		query.Set("mode", string(mode))
	}
	return getPage[UnappliedPage](ctx, a.t, "/payins/unapplied", query, limit, startingAfter, opts)
}

// ApplyUnapplied credits a receipt held in suspense to a quote's client (a
// receipt of that quote: quoteID set) or to a client's wallet of mode
// (clientID and mode set), and answers the receipt it became.
func (a *Admin) ApplyUnapplied(ctx context.Context, unappliedID, quoteID, clientID string, mode Mode, opts ...CallOption) (Receipt, error) {
	body := map[string]string{}
	if quoteID != "" {
		body["quoteId"] = quoteID
	}
	if clientID != "" {
		body["clientId"], body["mode"] = clientID, string(mode)
	}
	var out Receipt
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/payins/unapplied/"+url.PathEscape(unappliedID)+"/apply", body, opts), &out)
	return out, err
}

// UnappliedReturn is a receipt held in suspense, returned to its sender.
type UnappliedReturn struct {
	UnappliedID       string          `json:"unappliedId"`
	Mode              Mode            `json:"mode"`
	Currency          string          `json:"currency"`
	Amount            decimal.Decimal `json:"amount"`
	BankTransactionID string          `json:"bankTransactionId"`
	ReturnReference   string          `json:"returnReference"`
	ReturnedAt        time.Time       `json:"returnedAt"`
}

// ReturnUnapplied returns a receipt held in suspense to its sender under
// the return transfer's reference.
func (a *Admin) ReturnUnapplied(ctx context.Context, unappliedID, reference string, opts ...CallOption) (UnappliedReturn, error) {
	var out UnappliedReturn
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/payins/unapplied/"+url.PathEscape(unappliedID)+"/return",
		map[string]string{"reference": reference}, opts), &out)
	return out, err
}
