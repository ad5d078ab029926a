package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"time"

	"github.com/shopspring/decimal"
)

// Funds first: a live completion spends the partner's wallet in the
// source currency, which receipts (bank transfers, crypto deposits) and an
// operator's deposits fill; statements list every posting.

// Receipt is a payment received and credited to a partner's wallet.
type Receipt struct {
	ReceiptID string          `json:"receiptId"`
	QuoteID   string          `json:"quoteId"`
	ClientID  string          `json:"clientId"`
	AccountID string          `json:"accountId"` // the wallet credited
	Mode      Mode            `json:"mode"`
	Currency  string          `json:"currency"`
	Amount    decimal.Decimal `json:"amount"`
	Method    string          `json:"method"` // "bank" or "crypto"
	// Identity is what makes the receipt one payment, however its
	// reference was typed: "in:NGN:nip-123", "chain:ETHEREUM:0x…:0".
	Identity          string     `json:"identity"`
	BankTransactionID string     `json:"bankTransactionId,omitempty"` // canonical
	AddressID         string     `json:"addressId,omitempty"`
	Chain             string     `json:"chain,omitempty"`
	TxHash            string     `json:"txHash,omitempty"` // canonical: 0x-prefixed on EVM chains, bare on TRON
	LogIndex          int        `json:"logIndex,omitempty"`
	ReversedAt        *time.Time `json:"reversedAt,omitempty"`
	// Repeated: the same payment was recorded before; nothing changed.
	Repeated  bool      `json:"repeated,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// BankReceipt is a bank transfer carrying a quote's bankPayIn.reference.
type BankReceipt struct {
	Reference         string          // the quote's reference, any case
	Amount            decimal.Decimal // in the quote's source currency
	BankTransactionID string          // the bank's id of the transfer: its identity
	Mode              Mode            // the quote's mode; "" is live
}

// RecordBankReceipt records a bank transfer carrying a quote's
// bankPayIn.reference (POST /admin/v1/payins/bank; oja admin payins bank):
// the amount is credited to the quote's client's wallet at once. The same
// bankTransactionId (however spelled) again with the same amount changes
// nothing; for another amount, quote or mode it is a CONFLICT.
func (a *Admin) RecordBankReceipt(ctx context.Context, r BankReceipt, opts ...CallOption) (Receipt, error) {
	var out Receipt
	body := struct {
		Reference         string      `json:"reference"`
		Amount            json.Number `json:"amount"`
		BankTransactionID string      `json:"bankTransactionId"`
		Mode              Mode        `json:"mode,omitempty"`
	}{r.Reference, number(r.Amount), r.BankTransactionID, r.Mode}
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/payins/bank", body, opts), &out)
	return out, err
}

// Duplicate is an identity recorded more than once: receipts recorded
// before identities whose references name one payment.
type Duplicate struct {
	Identity string `json:"identity"`
	Receipts []struct {
		ReceiptID string          `json:"receiptId"`
		QuoteID   string          `json:"quoteId"`
		ClientID  string          `json:"clientId"`
		Mode      Mode            `json:"mode"`
		Amount    decimal.Decimal `json:"amount"`
		Currency  string          `json:"currency"`
		Reference string          `json:"reference"` // as it was typed
		Reversed  bool            `json:"reversed"`
		CreatedAt time.Time       `json:"createdAt"`
	} `json:"receipts"`
}

// Duplicates lists the identities recorded more than once (GET
// /admin/v1/payins/duplicates; oja admin payins duplicates).
func (a *Admin) Duplicates(ctx context.Context, opts ...CallOption) ([]Duplicate, error) {
	var out struct {
		Data []Duplicate `json:"data"`
	}
	_, err := a.t.do(ctx, newCall(http.MethodGet, "/payins/duplicates", nil, opts), &out)
	return out.Data, err
}

// ReverseReceipt takes a receipt back (POST
// /admin/v1/payins/{receiptId}/reverse; oja admin payins reverse): its
// amount goes from the wallet back to clearing, a reversal row.
func (a *Admin) ReverseReceipt(ctx context.Context, receiptID, reason string, opts ...CallOption) (Receipt, error) {
	var out Receipt
	body := struct {
		Reason string `json:"reason"`
	}{reason}
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/payins/"+url.PathEscape(receiptID)+"/reverse", body, opts), &out)
	return out, err
}

// Movement is the answer of a prefund or payout: the wallet's balance
// after it and its reference.
type Movement struct {
	AccountID        string          `json:"accountId"`
	Currency         string          `json:"currency"`
	Balance          decimal.Decimal `json:"balance"`
	AvailableBalance decimal.Decimal `json:"availableBalance"`
	Reference        string          `json:"reference"` // canonical
	// Repeated: the same payment was recorded before; nothing changed.
	Repeated bool `json:"repeated,omitempty"`
}

// referenceBody is a prefund's or payout's body.
type referenceBody struct {
	Amount    json.Number `json:"amount"`
	Reference string      `json:"reference"`
}

// WithdrawAccount pays a wallet's available money out (POST
// /admin/v1/accounts/{id}/withdraw; oja admin accounts withdraw) under the
// payout's bank or chain reference: the same payout again changes nothing.
func (a *Admin) WithdrawAccount(ctx context.Context, accountID string, amount decimal.Decimal, reference string, opts ...CallOption) (Movement, error) {
	var out Movement
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/accounts/"+url.PathEscape(accountID)+"/withdraw", referenceBody{number(amount), reference}, opts), &out)
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
	Type         string          `json:"type"` // deposit, payin, simulated_payin, settlement, withdrawal, reversal
	Amount       decimal.Decimal `json:"amount"`
	BalanceAfter decimal.Decimal `json:"balanceAfter"`
	Currency     string          `json:"currency"`
	QuoteID      string          `json:"quoteId,omitempty"`
	Reference    string          `json:"reference,omitempty"`
	ReceiptID    string          `json:"receiptId,omitempty"` // a payin's receipt, or the one a reversal took back
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
	return getPage[StatementPage](ctx, c.t, "/partners/accounts/"+url.PathEscape(accountID)+"/transactions", nil, limit, startingAfter, opts)
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
	return getPage[StatementPage](ctx, a.t, "/accounts/"+url.PathEscape(accountID)+"/transactions", nil, limit, startingAfter, opts)
}

// TransactionsAll iterates over any wallet's statement, newest first, page
// by page.
func (a *Admin) TransactionsAll(ctx context.Context, accountID string, opts ...CallOption) iter.Seq2[Posting, error] {
	return postings(func(after string) (StatementPage, error) {
		return a.Transactions(ctx, accountID, 100, after, opts...)
	})
}

// postings walks a statement's pages from the newest.
func postings(page func(after string) (StatementPage, error)) iter.Seq2[Posting, error] {
	return walk(func(after string) ([]Posting, bool, error) {
		p, err := page(after)
		return p.Data, p.HasMore, err
	}, func(p Posting) string { return p.ID })
}
