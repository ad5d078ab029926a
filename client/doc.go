// Package client is a typed Go client for Oja's partner API (spec §4–§10)
// and, in Admin, for its operator API (spec §11). It uses net/http only, and is
// its own module (client/go.mod): importing it builds the standard library,
// shopspring/decimal and client/fxmsg (the XML FX messages), nothing of the
// server.
//
// Money is exact: every amount and rate is a shopspring decimal.Decimal,
// sent as a JSON number in plain decimal text and read from the response's
// number text; no float64 ever holds one (a test walks the exported types
// to keep it so). Error details are decoded with json.Number for the same
// reason.
//
// # Using it
//
//  1. New(baseURL, apiKey, options…): baseURL is the service's address, e.g.
//     "https://oja.example.com" (the client adds "/api/v1"; a baseURL that
//     already ends in "/api/v1" is used as is). The key's prefix
//     (oja_live_ / oja_sandbox_) selects the mode; the client does not.
//  2. CreateQuote(ctx, CreateQuoteRequest{…}, IdempotencyKey(k)). Give every
//     create an Idempotency-Key and reuse it when retrying after a timeout,
//     a network error or a 503: the service then answers with the quote the
//     first attempt made (Quote.Replayed is true) instead of making a second
//     one. The client never retries by itself.
//  3. AcceptQuote with one allocation's PoolAccountID, then CompleteQuote
//     once the pay-in (Quote.Metadata.BankPayIn or CryptoPayIn) has arrived
//     and been credited to your wallet (a live completion before that is an
//     APIError 422 INSUFFICIENT_FUNDS; Transactions lists your wallet's
//     postings); or
//     CancelQuote. Repeating a transition that already happened is safe
//     and answers the current quote.
//  4. Balances, Balance(accountID), BalancesByCurrency(code).
//  5. StreamRates for the live consensus rates (server-sent events).
//
// Every refusal from the service is an *APIError carrying the HTTP status,
// the spec's code (the Code* constants), message and details; use
// errors.As. Transport failures and context expiry are returned as they
// are (errors.Is(err, context.DeadlineExceeded) holds for a timeout).
//
// Each call is bounded by its context and by the client's per-call timeout
// (WithTimeout, default DefaultTimeout); StreamRates is bounded by its
// context only. A Client is safe for concurrent use.
package client
