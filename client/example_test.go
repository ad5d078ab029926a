package client_test

import (
	"context"
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
