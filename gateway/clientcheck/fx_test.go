package clientcheck_test

import (
	"context"
	"testing"

	"github.com/oja-exchange/oja/client"
)

// TestFXTradeLifecycle drives the XML FX API through the client: initiate
// (idempotent), status, accept to a chain address, confirm; a second trade
// cancelled; the listings, the makers rate, and a refusal read as an
// APIError.
func TestFXTradeLifecycle(t *testing.T) {
	t.Parallel()
	m := newMarket(t)
	ctx := context.Background()
	req := client.FXTradeRequest{Base: "NGN", Quoted: "USDT", Amount: d("160000"), Rate: d("0.0006"), Direction: "SELL"}
	r, err := m.c.FXInitiate(ctx, req, client.IdempotencyKey("fx-1"))
	if err != nil {
		t.Fatal(err)
	}
	id := r.UnqTxIdr.TxId
	if r.TradSts.Sts != "NEWT" || id == "" || r.CcyPair.BaseCcy != "NGN" {
		t.Fatalf("initiated %+v", r)
	}
	again, err := m.c.FXInitiate(ctx, req, client.IdempotencyKey("fx-1"))
	if err != nil || again.UnqTxIdr.TxId != id {
		t.Fatalf("a retry with the same Idempotency-Key: %+v %v", again, err)
	}
	// The trade is the JSON API's quote too.
	if q, err := m.c.GetQuote(ctx, id); err != nil || q.Status != client.StatusPending {
		t.Fatalf("the trade as a quote: %+v %v", q, err)
	}

	const tron = "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8"
	a, err := m.c.FXAccept(ctx, id, client.FXSettlement{Address: tron})
	if err != nil || a.TradSts.Sts != "SETT" || a.SttlmInstr == nil {
		t.Fatalf("accept: %+v %v", a, err)
	}
	st, err := m.c.FXStatus(ctx, id)
	if err != nil || st.TradSts.Sts != "SETT" || st.SttlmDstn == nil || st.SttlmDstn.BlkChnDstn == nil || *st.SttlmDstn.BlkChnDstn.Adr != tron {
		t.Fatalf("status: %+v %v", st, err)
	}
	if c, err := m.c.FXConfirm(ctx, id); err != nil || c.TradSts.Sts != "COMP" {
		t.Fatalf("confirm: %+v %v", c, err)
	}

	other, err := m.c.FXInitiate(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := m.c.FXCancel(ctx, other.UnqTxIdr.TxId); err != nil || c.TradSts.Sts != "CANC" {
		t.Fatalf("cancel: %+v %v", c, err)
	}

	listings, err := m.c.FXListings(ctx, 0, 2)
	if err != nil || len(listings.Listgs) == 0 || listings.Pgntn.PageSize != 2 {
		t.Fatalf("listings: %+v %v", listings, err)
	}
	rate, err := m.c.FXMakersRate(ctx, "NGN", "USDT")
	if err != nil || rate.SrcCcy != "NGN" || rate.XchgRate == "" {
		t.Fatalf("makers rate: %+v %v", rate, err)
	}

	_, err = m.c.FXInitiate(ctx, client.FXTradeRequest{Base: "GHS", Quoted: "NGN", Amount: d("1"), Rate: d("1"), Direction: "SELL"})
	apiError(t, err, 400, client.CodeInvalidCurrencyPair)
	_, err = m.c.FXStatus(ctx, "7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4")
	apiError(t, err, 404, client.CodeQuoteNotFound)
}
