package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// apiPrefix is the version path of the public API.
const apiPrefix = "/api/v1"

// streamLineBytesMax bounds one line of the rate stream (a frame's data is
// one short JSON line).
const streamLineBytesMax = 64 << 10

// Client calls the partner API with one API key. Safe for concurrent use.
type Client struct {
	t *transport
}

// New returns a client of the service at baseURL (e.g.
// "https://oja.example.com") using apiKey (oja_live_… or oja_sandbox_…).
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	t, err := newTransport(baseURL, apiPrefix, apiKey, opts)
	if err != nil {
		return nil, err
	}
	return &Client{t: t}, nil
}

const quotePath = "/partners/marketplace/quote/"

// CreateQuote creates a quote (POST /partners/marketplace/intent): the
// service allocates it in full at req.Rate or better, or refuses it
// (APIError 422 INSUFFICIENT_LIQUIDITY, with requested, fillable and
// bestRate in Details). Pass IdempotencyKey to make retries safe.
func (c *Client) CreateQuote(ctx context.Context, req CreateQuoteRequest, opts ...CallOption) (Quote, error) {
	var q Quote
	res, err := c.t.do(ctx, newCall(http.MethodPost, "/partners/marketplace/intent", req, opts), &q)
	if err != nil {
		return Quote{}, err
	}
	q.Replayed = res.header.Get("Idempotent-Replayed") == "true"
	return q, nil
}

// GetQuote reads a quote. Another client's quote, or one of the other
// mode, is QUOTE_NOT_FOUND like a missing one.
func (c *Client) GetQuote(ctx context.Context, quoteID string, opts ...CallOption) (Quote, error) {
	return c.quote(ctx, newCall(http.MethodGet, quotePath+url.PathEscape(quoteID), nil, opts))
}

// ListQuotesParams filters a quote listing; the zero value lists every quote
// the service holds for the key's client and mode.
type ListQuotesParams struct {
	Status     QuoteStatus // "" = any
	CreatedGte time.Time   // zero = no lower bound
	CreatedLt  time.Time   // zero = no upper bound
	Limit      int         // page size 1-100; 0 = the service's default, 20
}

// QuotePage is one page of a listing.
type QuotePage struct {
	Data    []Quote `json:"data"`
	HasMore bool    `json:"hasMore"`
}

// ListQuotesPage fetches one page of the key's quotes, newest first, after
// the quote startingAfter ("" = from the newest) (GET
// /partners/marketplace/quotes).
func (c *Client) ListQuotesPage(ctx context.Context, p ListQuotesParams, startingAfter string, opts ...CallOption) (QuotePage, error) {
	query := url.Values{}
	if p.Status != "" {
		query.Set("status", string(p.Status))
	}
	if !p.CreatedGte.IsZero() {
		query.Set("createdGte", p.CreatedGte.UTC().Format(time.RFC3339Nano))
	}
	if !p.CreatedLt.IsZero() {
		query.Set("createdLt", p.CreatedLt.UTC().Format(time.RFC3339Nano))
	}
	return getPage[QuotePage](ctx, c.t, "/partners/marketplace/quotes", query, p.Limit, startingAfter, opts)
}

// ListQuotes iterates over every quote of the listing, newest first,
// fetching pages as it goes; an error ends the iteration (yielded once).
func (c *Client) ListQuotes(ctx context.Context, p ListQuotesParams, opts ...CallOption) iter.Seq2[Quote, error] {
	return walk(func(after string) ([]Quote, bool, error) {
		page, err := c.ListQuotesPage(ctx, p, after, opts...)
		return page.Data, page.HasMore, err
	}, func(q Quote) string { return q.QuoteID })
}

// AcceptQuote accepts a pending quote, naming the PoolAccountID of one of
// its allocations; the quote then awaits payment (Metadata.BankPayIn) and
// its destination amount settles to the partner's wallet on completion.
func (c *Client) AcceptQuote(ctx context.Context, quoteID, accountID string, opts ...CallOption) (Quote, error) {
	body := struct {
		AccountID string `json:"accountId"`
	}{accountID}
	return c.quote(ctx, newCall(http.MethodPut, quotePath+url.PathEscape(quoteID)+"/accept", body, opts))
}

// CancelQuote cancels a pending or accepted quote; its holds are released.
func (c *Client) CancelQuote(ctx context.Context, quoteID string, opts ...CallOption) (Quote, error) {
	return c.quote(ctx, newCall(http.MethodPut, quotePath+url.PathEscape(quoteID)+"/cancel", nil, opts))
}

// CompleteQuote completes an accepted quote: its postings are made.
func (c *Client) CompleteQuote(ctx context.Context, quoteID string, opts ...CallOption) (Quote, error) {
	return c.quote(ctx, newCall(http.MethodPut, quotePath+url.PathEscape(quoteID)+"/complete", nil, opts))
}

func (c *Client) quote(ctx context.Context, call *call) (Quote, error) {
	var q Quote
	if _, err := c.t.do(ctx, call, &q); err != nil {
		return Quote{}, err
	}
	return q, nil
}

// Balances lists the caller's accounts in the key's mode: its wallets and
// the accounts of pools it owns. It sends x-service-source (see
// WithServiceSource).
func (c *Client) Balances(ctx context.Context, opts ...CallOption) ([]Balance, error) {
	call := newCall(http.MethodGet, "/partners/balances", nil, opts)
	if call.header.Get("x-service-source") == "" {
		call.header.Set("x-service-source", c.t.serviceSource)
	}
	var out []Balance
	_, err := c.t.do(ctx, call, &out)
	return out, err
}

// Balance reads one of the caller's accounts (ACCOUNT_NOT_FOUND for
// anyone else's).
func (c *Client) Balance(ctx context.Context, accountID string, opts ...CallOption) (Balance, error) {
	var out []Balance
	if _, err := c.t.do(ctx, newCall(http.MethodGet, "/partners/balances/"+url.PathEscape(accountID), nil, opts), &out); err != nil {
		return Balance{}, err
	}
	if len(out) != 1 {
		return Balance{}, fmt.Errorf("client: balance of %s: the service answered %d accounts, want 1", accountID, len(out))
	}
	return out[0], nil
}

// BalancesByCurrency lists the caller's accounts in one currency.
func (c *Client) BalancesByCurrency(ctx context.Context, currency string, opts ...CallOption) ([]Balance, error) {
	var out []Balance
	_, err := c.t.do(ctx, newCall(http.MethodGet, "/partners/balances/currency/"+url.PathEscape(currency), nil, opts), &out)
	return out, err
}

// StreamRates follows the rate stream (GET
// /partners/marketplace/rates/stream) and calls handle for each
// rate_update, in order, on the calling goroutine. from and to select one
// pair; both empty selects every pair. The stream opens with the current
// rate of each selected pair.
//
// It returns when ctx ends (ctx.Err()), when handle returns an error (that
// error), or when the service ends the stream (nil: it is shutting down;
// reconnect after a few seconds). Heartbeats are consumed silently. The
// client's per-call timeout does not apply; only ctx bounds a stream.
func (c *Client) StreamRates(ctx context.Context, from, to string, handle func(RateUpdate) error) error {
	call := newCall(http.MethodGet, "/partners/marketplace/rates/stream", nil, nil)
	if from != "" || to != "" {
		call.query = url.Values{"from": {from}, "to": {to}}
	}
	req, err := c.t.request(ctx, call)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	res, err := c.t.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(res.Body, responseBytesMax))
		return newAPIError(res, raw)
	}
	r := bufio.NewReaderSize(res.Body, streamLineBytesMax)
	var event, id string
	var data strings.Builder
	for {
		raw, err := r.ReadSlice('\n')
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, bufio.ErrBufferFull):
			return fmt.Errorf("client: rate stream: a line over %d bytes", streamLineBytesMax)
		case errors.Is(err, io.EOF) && len(raw) == 0:
			return nil // the service ended the stream
		case errors.Is(err, io.EOF):
			return fmt.Errorf("client: rate stream cut mid-line: %w", io.ErrUnexpectedEOF)
		default:
			return err
		}
		line := strings.TrimRight(string(raw), "\r\n")
		switch {
		case line == "":
			if event == "rate_update" && data.Len() > 0 {
				var u RateUpdate
				if err := decodeJSON([]byte(data.String()), &u); err != nil {
					return fmt.Errorf("client: rate stream: decoding %q: %w", data.String(), err)
				}
				u.ID = id
				if err := handle(u); err != nil {
					return err
				}
			}
			event, id = "", ""
			data.Reset()
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(line[len("id:"):])
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(line[len("data:"):], " "))
		}
	}
}

// compile-time check that requests marshal through MarshalJSON.
var _ json.Marshaler = CreateQuoteRequest{}
