package client_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/client"
)

// A quote's whole life: create (safe to retry with the same
// Idempotency-Key), accept, pay in, complete.
func ExampleClient_CreateQuote() {
	c, err := client.New("https://oja.example.com", "oja_sandbox_…", client.WithTimeout(10*time.Second),
		client.WithServiceSource("remittance-backend"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	q, err := c.CreateQuote(ctx, client.CreateQuoteRequest{
		SourceCurrency:      "NGN",
		DestinationCurrency: "USDT",
		Amount:              decimal.RequireFromString("1000000"),
		Rate:                decimal.RequireFromString("0.000624"), // the worst rate accepted
		AmountDirection:     client.DirectionSource,
	}, client.IdempotencyKey("order-8841"))
	var apiErr *client.APIError
	switch {
	case errors.As(err, &apiErr) && apiErr.Code == client.CodeInsufficientLiquidity:
		fmt.Println("only", apiErr.Details["fillable"], "NGN fillable at that rate")
		return
	case err != nil:
		log.Fatal(err) // a timeout or 503: retry with the same Idempotency-Key
	}
	q, err = c.AcceptQuote(ctx, q.QuoteID, q.AllocationResult.Allocations[0].PoolAccountID)
	if err != nil {
		log.Fatal(err)
	}
	pay := q.Metadata.BankPayIn
	fmt.Printf("pay %s NGN to %s %s, reference %s, within %d s\n",
		q.TotalSourceAmount, pay.BankName, pay.AccountNumber, pay.Reference, q.TTL)
	// … once the transfer has arrived:
	if q, err = c.CompleteQuote(ctx, q.QuoteID); err != nil {
		log.Fatal(err)
	}
	fmt.Println(q.Status, q.TotalDestinationAmount, "USDT received")
}

// Every quote of the key's client and mode that the service holds, newest
// first, page after page.
func ExampleClient_ListQuotes() {
	c, err := client.New("https://oja.example.com", "oja_sandbox_…")
	if err != nil {
		log.Fatal(err)
	}
	for q, err := range c.ListQuotes(context.Background(), client.ListQuotesParams{Status: client.StatusAwaitingPayment}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(q.QuoteID, q.TotalSourceAmount, "owed by", q.ExpiresAt)
	}
}

// The same trade through the XML FX API: initiate, accept to a bank
// account, read where it pays out.
func ExampleClient_FXInitiate() {
	c, err := client.New("https://oja.example.com", "oja_sandbox_…")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	trade, err := c.FXInitiate(ctx, client.FXTradeRequest{
		Base: "NGN", Quoted: "GHS", Direction: "SELL",
		Amount: decimal.RequireFromString("500000"), Rate: decimal.RequireFromString("0.0085"),
	}, client.IdempotencyKey("desk-7731"))
	if err != nil {
		log.Fatal(err) // an *APIError carries the MsgRjct's code and description
	}
	id := trade.UnqTxIdr.TxId
	if _, err := c.FXAccept(ctx, id, client.FXSettlement{
		BankAccountName: "Kofi Mensah", BankAccount: "0041234567", BankCode: "GCB-030100",
	}); err != nil {
		log.Fatal(err)
	}
	status, err := c.FXStatus(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(status.TradSts.Sts, "pays out to", *status.SttlmDstn.BkDstn.AcctNb)
}

// A webhook receiver: verify the signature on the raw body before trusting
// anything in it, then act on the event (at least once: the same event id
// may arrive again).
func ExampleVerifyWebhook() {
	secret := "whsec_example" // shown once by CreateWebhook
	body := []byte(`{"id":"evt_5c1d0c1c2f4c4b7e9d6f1e2a3b4c5d6e","type":"quote.completed","createdAt":"2026-11-25T10:00:00.000Z","mode":"sandbox","data":{"quote":{"quoteId":"6f1c1f43-0000-4000-8000-000000000000","status":"completed"}}}`)
	// What the service sends in Oja-Signature, here computed for the example.
	header := "t=1795600000,v1=" + hmacHex(secret, "1795600000."+string(body))

	ev, err := client.VerifyWebhook(secret, header, body, 0) // a receiver passes 5*time.Minute
	if err != nil {
		fmt.Println("refused:", err) // answer 400; never act on it
		return
	}
	fmt.Println(ev.Type, ev.Data.Quote.QuoteID, ev.Data.Quote.Status)

	_, err = client.VerifyWebhook(secret, header, append(body, ' '), 0)
	fmt.Println(errors.Is(err, client.ErrWebhookSignature))
	// Output:
	// quote.completed 6f1c1f43-0000-4000-8000-000000000000 completed
	// true
}

// Register an endpoint for a quote's whole life.
func ExampleClient_CreateWebhook() {
	c, err := client.New("https://oja.example.com", "oja_sandbox_…")
	if err != nil {
		log.Fatal(err)
	}
	hook, err := c.CreateWebhook(context.Background(), "https://hooks.example.com/oja",
		[]string{client.EventQuoteCreated, client.EventQuoteAccepted, client.EventQuoteCompleted,
			client.EventQuoteCancelled, client.EventQuoteExpired})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("store this secret:", hook.Secret)
}

// hmacHex is what a sender computes: hex(HMAC-SHA256(secret, msg)).
func hmacHex(secret, msg string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(msg))
	return hex.EncodeToString(mac.Sum(nil))
}
