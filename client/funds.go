package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// Funds first: a live completion spends the partner's wallet in the
// source currency, which receipts (bank transfers, crypto deposits) and an
// operator's deposits fill; statements list every posting.

// Receipt is a payment received and credited to a partner's wallet.
type Receipt struct {
	QuoteID           string          `json:"quoteId"`
	ClientID          string          `json:"clientId"`
	AccountID         string          `json:"accountId"` // the wallet credited
	Currency          string          `json:"currency"`
	Amount            decimal.Decimal `json:"amount"`
	Method            string          `json:"method"` // "bank" or "crypto"
	BankTransactionID string          `json:"bankTransactionId,omitempty"`
	AddressID         string          `json:"addressId,omitempty"`
	TxHash            string          `json:"txHash,omitempty"`
	CreatedAt         time.Time       `json:"createdAt"`
}

// RecordBankReceipt records a bank transfer carrying a quote's
// bankPayIn.reference (POST /admin/v1/payins/bank; oja admin payins bank):
// the amount is credited to the quote's client's wallet at once. The same
// bankTransactionId again with the same amount changes nothing.
func (a *Admin) RecordBankReceipt(ctx context.Context, reference string, amount decimal.Decimal, bankTransactionID string, opts ...CallOption) (Receipt, error) {
	var out Receipt
	body := struct {
		Reference         string      `json:"reference"`
		Amount            json.Number `json:"amount"`
		BankTransactionID string      `json:"bankTransactionId"`
	}{reference, number(amount), bankTransactionID}
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/payins/bank", body, opts), &out)
	return out, err
}

// WithdrawAccount pays a wallet's available money out (POST
// /admin/v1/accounts/{id}/withdraw; oja admin accounts withdraw).
func (a *Admin) WithdrawAccount(ctx context.Context, accountID string, amount decimal.Decimal, opts ...CallOption) (Balance, error) {
	var out Balance
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/accounts/"+url.PathEscape(accountID)+"/withdraw", amountBody{number(amount)}, opts), &out)
	return out, err
}

// CreditLimit is a client's credit line in one mode and currency.
type CreditLimit struct {
	ClientID  string          `json:"clientId"`
	Mode      Mode            `json:"mode"`
	Currency  string          `json:"currency"`
	Limit     decimal.Decimal `json:"limit"`
	AccountID string          `json:"accountId"` // the wallet it applies to
}

// SetCreditLimit sets a client's credit line (PUT
// /admin/v1/clients/{id}/credit; oja admin clients credit): a completion
// may take that wallet down to -limit. 0 removes it.
func (a *Admin) SetCreditLimit(ctx context.Context, clientID string, mode Mode, currency string, limit decimal.Decimal, opts ...CallOption) (CreditLimit, error) {
	var out CreditLimit
	body := struct {
		Mode     Mode        `json:"mode"`
		Currency string      `json:"currency"`
		Limit    json.Number `json:"limit"`
	}{mode, currency, number(limit)}
	_, err := a.t.do(ctx, newCall(http.MethodPut, "/clients/"+url.PathEscape(clientID)+"/credit", body, opts), &out)
	return out, err
}

// CompleteQuote completes any client's quote as the operator (POST
// /admin/v1/quotes/{id}/complete; oja admin quotes complete), under the
// partner's rule: the wallet must cover it.
func (a *Admin) CompleteQuote(ctx context.Context, quoteID string, opts ...CallOption) (Quote, error) {
	var out Quote
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/quotes/"+url.PathEscape(quoteID)+"/complete", nil, opts), &out)
	return out, err
}

// Posting is one line of a wallet's statement.
type Posting struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"` // deposit, payin, simulated_payin, settlement, withdrawal
	Amount       decimal.Decimal `json:"amount"`
	BalanceAfter decimal.Decimal `json:"balanceAfter"`
	Currency     string          `json:"currency"`
	QuoteID      string          `json:"quoteId,omitempty"`
	Reference    string          `json:"reference,omitempty"`
	CreatedAt    time.Time       `json:"createdAt"`
}

// StatementPage is one page of a statement, newest first.
type StatementPage struct {
	Data    []Posting `json:"data"`
	HasMore bool      `json:"hasMore"`
}

// TransactionsPage reads one page of the caller's wallet statement (GET
// /partners/accounts/{id}/transactions): limit 0 = the server's default;
// startingAfter "" = from the newest.
func (c *Client) TransactionsPage(ctx context.Context, accountID string, limit int, startingAfter string, opts ...CallOption) (StatementPage, error) {
	return statementPage(ctx, c.t, "/partners/accounts/"+url.PathEscape(accountID)+"/transactions", limit, startingAfter, opts)
}

// Transactions iterates over the caller's wallet statement, newest first,
// page by page.
func (c *Client) Transactions(ctx context.Context, accountID string, opts ...CallOption) iter.Seq2[Posting, error] {
	return postings(func(after string) (StatementPage, error) {
		return c.TransactionsPage(ctx, accountID, 100, after, opts...)
	})
}

// Transactions reads one page of any wallet's statement (GET
// /admin/v1/accounts/{id}/transactions; oja admin accounts transactions).
func (a *Admin) Transactions(ctx context.Context, accountID string, limit int, startingAfter string, opts ...CallOption) (StatementPage, error) {
	return statementPage(ctx, a.t, "/accounts/"+url.PathEscape(accountID)+"/transactions", limit, startingAfter, opts)
}

func statementPage(ctx context.Context, t *transport, path string, limit int, startingAfter string, opts []CallOption) (StatementPage, error) {
	call := newCall(http.MethodGet, path, nil, opts)
	call.query = url.Values{}
	if limit > 0 {
		call.query.Set("limit", strconv.Itoa(limit))
	}
	if startingAfter != "" {
		call.query.Set("startingAfter", startingAfter)
	}
	var out StatementPage
	_, err := t.do(ctx, call, &out)
	return out, err
}

// postings walks pages from the newest.
func postings(page func(after string) (StatementPage, error)) iter.Seq2[Posting, error] {
	return func(yield func(Posting, error) bool) {
		after := ""
		for {
			p, err := page(after)
			if err != nil {
				yield(Posting{}, err)
				return
			}
			for _, line := range p.Data {
				if !yield(line, nil) {
					return
				}
				after = line.ID
			}
			if !p.HasMore || len(p.Data) == 0 {
				return
			}
		}
	}
}
