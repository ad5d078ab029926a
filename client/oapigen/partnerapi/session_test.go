package partnerapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/client/oapigen/partnerapi"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// TestPartnerSession drives a partner's day through the generated client
// with every request and answer checked against the served document by an
// independent validator (conformance): quotes created, listed by time,
// read, accepted, completed and cancelled; balances, one account and its
// statement; keys; webhooks created, updated, listed and deleted; events;
// and the main refusals. Any violation fails the test.
func TestPartnerSession(t *testing.T) {
	s := gatewaytest.Start(t, gatewaytest.Options{WebhookAllowPrivate: true, History: true})
	p := s.NewPartner(t, "session")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Desk A", "0.000625", "1000")
	c := partnerClient(t, s, p.SandboxKey)
	ctx := context.Background()
	ok := func(what string, status int, body []byte, err error, want int) {
		t.Helper()
		if err != nil || status != want {
			t.Fatalf("%s: %v %d %s", what, err, status, body)
		}
	}
	since := time.Now().Add(-time.Minute).UTC().Truncate(time.Second) // RFC 3339 without a fraction
	create := func() *partnerapi.Quote {
		t.Helper()
		r, err := c.CreateQuoteWithResponse(ctx, nil, partnerapi.CreateQuoteRequest{SourceCurrency: "NGN", DestinationCurrency: "USDT",
			Amount: decimal.RequireFromString("16000.55"), Rate: decimal.RequireFromString("0.0006"), AmountDirection: "source"})
		ok("create", r.StatusCode(), r.Body, err, http.StatusOK)
		return r.JSON200
	}
	q := create()
	got, err := c.GetQuoteWithResponse(ctx, q.QuoteId)
	ok("get", got.StatusCode(), got.Body, err, http.StatusOK)
	list, err := c.ListQuotesWithResponse(ctx, &partnerapi.ListQuotesParams{CreatedGte: &since})
	ok("list", list.StatusCode(), list.Body, err, http.StatusOK)
	accepted, err := c.AcceptQuoteWithResponse(ctx, q.QuoteId, partnerapi.AcceptRequest{AccountId: q.AllocationResult.Allocations[0].PoolAccountId})
	ok("accept", accepted.StatusCode(), accepted.Body, err, http.StatusOK)
	completed, err := c.CompleteQuoteWithResponse(ctx, q.QuoteId)
	ok("complete", completed.StatusCode(), completed.Body, err, http.StatusOK)
	late, err := c.CancelQuoteWithResponse(ctx, q.QuoteId)
	ok("cancel a completed quote", late.StatusCode(), late.Body, err, http.StatusConflict)
	cancelled, err := c.CancelQuoteWithResponse(ctx, create().QuoteId)
	ok("cancel", cancelled.StatusCode(), cancelled.Body, err, http.StatusOK)
	unknown, err := c.GetQuoteWithResponse(ctx, uuid.MustParse("7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4"))
	ok("get unknown", unknown.StatusCode(), unknown.Body, err, http.StatusNotFound)
	wrong, err := c.AcceptQuoteWithResponse(ctx, create().QuoteId, partnerapi.AcceptRequest{AccountId: uuid.New()})
	ok("accept a foreign account", wrong.StatusCode(), wrong.Body, err, http.StatusUnprocessableEntity)

	balances, err := c.ListBalancesWithResponse(ctx, &partnerapi.ListBalancesParams{XServiceSource: "session"})
	ok("balances", balances.StatusCode(), balances.Body, err, http.StatusOK)
	byCurrency, err := c.ListBalancesByCurrencyWithResponse(ctx, "USDT")
	ok("balances in USDT", byCurrency.StatusCode(), byCurrency.Body, err, http.StatusOK)
	account := (*balances.JSON200)[0].AccountId
	one, err := c.GetBalanceWithResponse(ctx, account)
	ok("one balance", one.StatusCode(), one.Body, err, http.StatusOK)
	statement, err := c.ListTransactionsWithResponse(ctx, account, nil)
	ok("statement", statement.StatusCode(), statement.Body, err, http.StatusOK)

	keys, err := c.ListKeysWithResponse(ctx)
	ok("keys", keys.StatusCode(), keys.Body, err, http.StatusOK)

	hook, err := c.CreateWebhookWithResponse(ctx, partnerapi.CreateWebhookRequest{Url: "http://127.0.0.1:9/hooks",
		Events: []partnerapi.WebhookEventType{"quote.created", "payin.received"}})
	ok("create webhook", hook.StatusCode(), hook.Body, err, http.StatusCreated)
	id := hook.JSON201.WebhookId
	url := "http://127.0.0.1:9/other"
	updated, err := c.UpdateWebhookWithResponse(ctx, id, partnerapi.UpdateWebhookRequest{Url: &url})
	ok("update webhook", updated.StatusCode(), updated.Body, err, http.StatusOK)
	hooks, err := c.ListWebhooksWithResponse(ctx)
	ok("webhooks", hooks.StatusCode(), hooks.Body, err, http.StatusOK)
	bad, err := c.CreateWebhookWithResponse(ctx, partnerapi.CreateWebhookRequest{Url: "ftp://127.0.0.1/", Events: []partnerapi.WebhookEventType{"quote.created"}})
	ok("create a bad webhook", bad.StatusCode(), bad.Body, err, http.StatusBadRequest)
	deleted, err := c.DeleteWebhookWithResponse(ctx, id)
	ok("delete webhook", deleted.StatusCode(), deleted.Body, err, http.StatusNoContent)

	events, err := c.ListEventsWithResponse(ctx, nil)
	ok("events", events.StatusCode(), events.Body, err, http.StatusOK)
}
