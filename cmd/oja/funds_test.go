package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	ojaclient "github.com/oja-exchange/oja/client"
	"github.com/oja-exchange/oja/gateway/webhook/webhooktest"
)

// TestLiveMoneyEndToEnd runs funds first (spec §4 Complete, §15.1)
// over the real binary in live mode, as an operator and a partner meet it,
// checking balances and statements to the minor unit:
//
//   - bank (NGN→USDT): completion refused until the money arrives; an
//     under-payment, a top-up that over-pays, the completion, the rest paid
//     out; a receipt before a cancel stays the partner's and is paid out;
//   - crypto (USDT→NGN, markets.example.json): deposits to the quote's
//     address credit the USDT wallet, under then over; the completion; the
//     rest paid out;
//   - credit: a trusted partner completes first and pays after;
//   - prefunding: an operator's deposit, then a completion that spends it;
//   - payin.received webhooks for every receipt;
//   - everything survives kill -9, and the ledger sums to zero.
func TestLiveMoneyEndToEnd(t *testing.T) {
	t.Parallel()
	srv := exampleServer(t, "--webhook-allow-private", "--webhook-retry-min", "100ms")
	ctx := context.Background()
	admin, err := ojaclient.NewAdmin(srv.adminURL(), crashAdminToken)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	d := decimal.RequireFromString
	desk, err := admin.CreateClient(ctx, "lagos fintech")
	must(err)
	key, err := admin.CreateKey(ctx, desk.ClientID, ojaclient.ModeLive)
	must(err)
	partner, err := ojaclient.New(srv.publicURL(), key.Key)
	must(err)
	wallet := func(currency string) string {
		t.Helper()
		ws, err := partner.BalancesByCurrency(ctx, currency)
		if err != nil || len(ws) != 1 {
			t.Fatalf("%s wallets: %v %+v", currency, err, ws)
		}
		return ws[0].AccountID
	}
	ngn, usdt := wallet("NGN"), wallet("USDT")
	balance := func(account, want string) {
		t.Helper()
		b, err := partner.Balance(ctx, account)
		if err != nil || !b.Balance.Equal(d(want)) {
			t.Fatalf("wallet %s: %v balance %s, want %s", account, err, b.Balance, want)
		}
	}
	statement := func(account, want string) {
		t.Helper()
		var lines []string
		for p, err := range partner.Transactions(ctx, account) {
			must(err)
			line := p.Type + " " + p.Amount.String() + " = " + p.BalanceAfter.String()
			lines = append(lines, line)
		}
		if got := strings.Join(lines, "; "); got != want {
			t.Fatalf("statement of %s:\n got %s\nwant %s", account, got, want)
		}
	}
	wantRefused := func(err error, code string) *ojaclient.APIError {
		t.Helper()
		var apiErr *ojaclient.APIError
		if !errors.As(err, &apiErr) || apiErr.Code != code {
			t.Fatalf("got %v, want %s", err, code)
		}
		return apiErr
	}
	recv := webhooktest.New(t)
	_, err = partner.CreateWebhook(ctx, recv.URL+"/oja", []string{"payin.received", "quote.completed"})
	must(err)

	// ---- Bank: NGN → USDT.
	lagos, err := admin.CreatePool(ctx, ojaclient.CreatePoolRequest{Mode: ojaclient.ModeLive, Name: "lagos desk",
		Source: "NGN", Destination: "USDT", Rate: d("0.000625")})
	must(err)
	_, err = admin.DepositPool(ctx, lagos.PoolID, d("1000"))
	must(err)
	accepted := func(source, destination, amount, rate, pool string) ojaclient.Quote {
		t.Helper()
		q, err := partner.CreateQuote(ctx, ojaclient.CreateQuoteRequest{SourceCurrency: source, DestinationCurrency: destination,
			Amount: d(amount), Rate: d(rate), AmountDirection: ojaclient.DirectionSource})
		must(err)
		q, err = partner.AcceptQuote(ctx, q.QuoteID, pool)
		must(err)
		return q
	}
	q1 := accepted("NGN", "USDT", "100000", "0.0006", lagos.PoolAccountID)
	reference := q1.Metadata.BankPayIn.Reference
	refused := wantRefused(partnerComplete(ctx, partner, q1.QuoteID), "INSUFFICIENT_FUNDS")
	if refused.Status != 422 || fmt.Sprint(refused.Details["required"]) != "100000" || fmt.Sprint(refused.Details["available"]) != "0" {
		t.Fatalf("unfunded completion: %+v", refused)
	}
	wantRefused(discard(admin.CompleteQuote(ctx, q1.QuoteID)), "INSUFFICIENT_FUNDS")
	_, err = admin.RecordBankReceipt(ctx, ojaclient.BankReceipt{Reference: reference, Amount: d("60000"), BankTransactionID: "NIP-0001"})
	must(err)
	wantRefused(partnerComplete(ctx, partner, q1.QuoteID), "INSUFFICIENT_FUNDS")                                                           // under-paid
	r, err := admin.RecordBankReceipt(ctx, ojaclient.BankReceipt{Reference: reference, Amount: d("60000"), BankTransactionID: "NIP-0001"}) // the bank's retry
	must(err)
	if r.QuoteID != q1.QuoteID || r.AccountID != ngn || !r.Amount.Equal(d("60000")) {
		t.Fatalf("receipt: %+v", r)
	}
	wantRefused(discard(admin.RecordBankReceipt(ctx, ojaclient.BankReceipt{Reference: reference, Amount: d("6000"), BankTransactionID: "NIP-0001"})), "CONFLICT")
	_, err = admin.RecordBankReceipt(ctx, ojaclient.BankReceipt{Reference: reference, Amount: d("50000.55"), BankTransactionID: "NIP-0002"}) // over-pays
	must(err)
	balance(ngn, "110000.55")
	done, err := partner.CompleteQuote(ctx, q1.QuoteID)
	if err != nil || done.Status != ojaclient.StatusCompleted {
		t.Fatalf("complete: %v %+v", err, done)
	}
	balance(ngn, "10000.55")
	balance(usdt, "62.5")
	wantRefused(discard(admin.WithdrawAccount(ctx, ngn, d("10000.56"), "REF-1")), "INSUFFICIENT_FUNDS")
	_, err = admin.WithdrawAccount(ctx, ngn, d("10000.55"), "REF-2")
	must(err)
	// A receipt, then a cancel: the money stays the partner's until paid out.
	q2 := accepted("NGN", "USDT", "20000", "0.0006", lagos.PoolAccountID)
	_, err = admin.RecordBankReceipt(ctx, ojaclient.BankReceipt{Reference: q2.Metadata.BankPayIn.Reference, Amount: d("20000"), BankTransactionID: "NIP-0003"})
	must(err)
	_, err = partner.CancelQuote(ctx, q2.QuoteID)
	must(err)
	balance(ngn, "20000")
	_, err = admin.WithdrawAccount(ctx, ngn, d("20000"), "REF-3")
	must(err)
	statement(ngn, "withdrawal -20000 = 0; payin 20000 = 20000; withdrawal -10000.55 = 0; settlement -100000 = 10000.55; "+
		"payin 50000.55 = 110000.55; payin 60000 = 60000")
	_, err = admin.WithdrawAccount(ctx, usdt, d("62.5"), "REF-4") // the partner takes its USDT out
	must(err)

	// ---- Crypto: USDT → NGN, deposits to the quote's address.
	otc, err := admin.CreatePool(ctx, ojaclient.CreatePoolRequest{Mode: ojaclient.ModeLive, Name: "otc desk",
		Source: "USDT", Destination: "NGN", Rate: d("1612.5")})
	must(err)
	_, err = admin.DepositPool(ctx, otc.PoolID, d("1000000"))
	must(err)
	q3 := accepted("USDT", "NGN", "100", "1600", otc.PoolAccountID)
	address := q3.Metadata.CryptoPayIn.AddressID
	p, err := admin.RecordPayIn(ctx, address, d("40"), "0x"+strings.Repeat("a1", 32), 0)
	must(err)
	if p.Status != "pending" || !p.ReceivedAmount.Equal(d("40")) {
		t.Fatalf("after the first deposit: %+v", p)
	}
	wantRefused(partnerComplete(ctx, partner, q3.QuoteID), "INSUFFICIENT_FUNDS")
	_, err = admin.RecordPayIn(ctx, address, d("70.000001"), "0x"+strings.Repeat("b2", 32), 0)
	must(err)
	got, err := partner.GetQuote(ctx, q3.QuoteID)
	if err != nil || got.Metadata.CryptoPayIn.Status != "pending" {
		t.Fatalf("pay-in after deposits: %v %+v", err, got.Metadata)
	}
	_, err = partner.CompleteQuote(ctx, q3.QuoteID)
	must(err)
	balance(usdt, "10.000001") // 110.000001 received − 100 spent
	balance(ngn, "161250")
	_, err = admin.WithdrawAccount(ctx, usdt, d("10.000001"), "REF-5")
	must(err)
	statement(usdt, "withdrawal -10.000001 = 0; settlement -100 = 10.000001; payin 70.000001 = 110.000001; "+
		"payin 40 = 40; withdrawal -62.5 = 0; settlement 62.5 = 62.5")

	// ---- Credit: a trusted partner completes first and pays after.
	_, err = admin.SetCreditLimit(ctx, desk.ClientID, ojaclient.ModeLive, "NGN", d("50000"))
	must(err)
	q4 := accepted("NGN", "USDT", "16000", "0.0006", lagos.PoolAccountID)
	_, err = partner.CompleteQuote(ctx, q4.QuoteID)
	must(err)
	balance(ngn, "145250") // 161250 − 16000: credit was not needed yet
	q5 := accepted("NGN", "USDT", "160000", "0.0006", lagos.PoolAccountID)
	_, err = partner.CompleteQuote(ctx, q5.QuoteID)
	must(err)
	balance(ngn, "-14750")
	wantRefused(discard(admin.SetCreditLimit(ctx, desk.ClientID, ojaclient.ModeLive, "NGN", d("14000"))), "CONFLICT")
	wantRefused(discard(admin.WithdrawAccount(ctx, ngn, d("1"), "REF-6")), "INSUFFICIENT_FUNDS")
	_, err = admin.RecordBankReceipt(ctx, ojaclient.BankReceipt{Reference: q5.Metadata.BankPayIn.Reference, Amount: d("14750"), BankTransactionID: "NIP-0004"})
	must(err)
	balance(ngn, "0")

	// ---- Prefunding: money received outside any quote, then spent.
	_, err = admin.DepositAccount(ctx, ngn, d("1600"), "REF-7")
	must(err)
	q6 := accepted("NGN", "USDT", "1600", "0.0006", lagos.PoolAccountID)
	_, err = partner.CompleteQuote(ctx, q6.QuoteID)
	must(err)
	statement(ngn, "settlement -1600 = 0; deposit 1600 = 1600; payin 14750 = 0; settlement -160000 = -14750; settlement -16000 = 145250; "+
		"settlement 161250 = 161250; withdrawal -20000 = 0; payin 20000 = 20000; withdrawal -10000.55 = 0; settlement -100000 = 10000.55; "+
		"payin 50000.55 = 110000.55; payin 60000 = 60000")

	// ---- Webhooks: every receipt is a payin.received, with its quote.
	receipts := recv.WaitFor(t, "six payin.received events", func(ds []webhooktest.Delivery) bool {
		n := 0
		for _, d := range ds {
			if strings.Contains(string(d.Body), `"type":"payin.received"`) && d.Delivered {
				n++
			}
		}
		return n >= 6
	})
	seen := map[string]bool{}
	for _, dl := range receipts {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				PayIn *ojaclient.Receipt `json:"payin"`
			} `json:"data"`
		}
		must(json.Unmarshal(dl.Body, &ev))
		if ev.Type != "payin.received" {
			continue
		}
		if ev.Data.PayIn == nil || ev.Data.PayIn.QuoteID == "" || ev.Data.PayIn.ClientID != desk.ClientID {
			t.Fatalf("payin.received without its receipt: %s", dl.Body)
		}
		seen[ev.Data.PayIn.BankTransactionID+ev.Data.PayIn.TxHash] = true
	}
	// Canonical: bank ids folded, TRON hashes bare (engine/identity.go).
	for _, want := range []string{"nip-0001", "nip-0002", "nip-0003", "nip-0004", strings.Repeat("a1", 32), strings.Repeat("b2", 32)} {
		if !seen[want] {
			t.Errorf("no payin.received for %s", want)
		}
	}

	// ---- kill -9: every balance, statement and pay-in survives.
	report, err := admin.LedgerCheck(ctx, ojaclient.ModeLive)
	if err != nil || !report.OK {
		t.Fatalf("ledger: %v %+v", err, report)
	}
	srv.crash()
	srv.start()
	statement(usdt, "settlement 1 = 111; settlement 100 = 110; settlement 10 = 10; withdrawal -10.000001 = 0; settlement -100 = 10.000001; payin 70.000001 = 110.000001; "+
		"payin 40 = 40; withdrawal -62.5 = 0; settlement 62.5 = 62.5")
	balance(ngn, "0")
	balance(usdt, "111") // q4, q5 and q6 bought 10, 100 and 1
	p, err = admin.GetPayIn(ctx, address)
	if err != nil || p.Status != "expired" || !p.ReceivedAmount.Equal(d("110.000001")) || len(p.Deposits) != 2 {
		t.Fatalf("pay-in after the restart: %v %+v", err, p)
	}
	// The bank's retry after the restart still credits nothing.
	_, err = admin.RecordBankReceipt(ctx, ojaclient.BankReceipt{Reference: reference, Amount: d("60000"), BankTransactionID: "NIP-0001"})
	must(err)
	balance(ngn, "0")
	report, err = admin.LedgerCheck(ctx, ojaclient.ModeLive)
	if err != nil || !report.OK {
		t.Fatalf("ledger after the restart: %v %+v", err, report)
	}
	for c, line := range report.Currencies {
		if !line.Sum.IsZero() {
			t.Errorf("live %s sums to %s", c, line.Sum)
		}
	}
}

func partnerComplete(ctx context.Context, c *ojaclient.Client, id string) error {
	_, err := c.CompleteQuote(ctx, id)
	return err
}
