package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	ojaclient "github.com/oja-exchange/oja/client"
	"github.com/oja-exchange/oja/engine/hd"
)

// TestMarketsFlag: a markets file with problems stops `oja serve` before
// anything starts (exit 2), naming every problem, from the flag or
// OJA_MARKETS; the example file starts, and the markets it puts in force
// are in the log for the offline tools.
func TestMarketsFlag(t *testing.T) {
	bin := ojaBinary(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{
	 "currencies": [{"code":"NGN","kind":"fiat","minorUnits":2}, {"code":"USDT","kind":"token","minorUnits":6}],
	 "pairs": [{"source":"NGN","destination":"USDT"}, {"source":"USDT","destination":"XAF"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	want := []string{
		`markets: currencies[1] "USDT": a token needs chains`,
		"markets: pairs[0] NGN/USDT: fiat source NGN has no collectionAccounts entry",
		`markets: pairs[1] USDT/XAF: unknown currency "XAF"`,
	}
	for _, args := range [][]string{{"serve", "--data", data, "--markets", bad}, {"serve", "--data", data}} {
		env := childEnv()
		if len(args) == 3 {
			env = childEnv("OJA_MARKETS=" + bad)
		}
		_, stderr, code := runOja(t, bin, env, args...)
		if code != 2 {
			t.Fatalf("%v: exit %d, want 2; stderr %s", args, code, stderr)
		}
		for _, w := range want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q\nlacks %q", args, stderr, w)
			}
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("%v: the data dir was created (%v) before the markets were checked", args, err)
		}
	}

	srv := exampleServer(t)
	srv.stop()
	out, errOut, code := runOja(t, bin, childEnv(), "wal", "dump", "--data", srv.data, "--json")
	if code != 0 {
		t.Fatalf("wal dump: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `"type":"MarketsSet"`) ||
		!strings.Contains(out, `{"source":"USDT","destination":"NGN","minSourceAmount":1,"maxSourceAmount":300000}`) {
		t.Errorf("wal dump shows no MarketsSet with USDT/NGN:\n%s", out)
	}
	// Which currencies have collection accounts and deposit keys, by name
	// only: the keys themselves are configuration.
	if !strings.Contains(out, `"collectionAccounts":["GHS","NGN"],"depositKeys":["USDT/TRON","USDT/ETHEREUM"]`) {
		t.Errorf("wal dump's MarketsSet does not name the collection accounts and deposit keys:\n%s", out)
	}
}

// exampleKey is the markets.example.json deposit key of chain for USDT.
func exampleKey(t *testing.T, chain string) *hd.Key {
	t.Helper()
	data, err := os.ReadFile("../../markets.example.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		DepositKeys map[string]map[string]string `json:"depositKeys"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	k, err := hd.ParseKey(m.DepositKeys["USDT"][chain])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestOffRampEndToEnd: with markets.example.json, a partner sells USDT for
// NGN at 1612.5 over the real binary: create, accept (a deposit address
// derived from the configured xpub at a fresh index), an operator records
// the deposit (credited to the desk's USDT wallet), complete (the rest
// simulated, sandbox), a deposit after a cancel still credited; the ledger
// holds; two quotes never share an address; the indexes continue after
// kill -9.
func TestOffRampEndToEnd(t *testing.T) {
	srv := exampleServer(t)
	ctx := context.Background()
	d := newDesk(t, srv, ojaclient.ModeSandbox, "lagos otc", "USDT", "NGN", "1612.5", 10_000_000)
	admin, partner := d.admin, d.partner
	tron := exampleKey(t, "TRON")
	seen := map[string]bool{}
	// accepted sells amount USDT and accepts; its pay-in must be at index.
	accepted := func(partner *ojaclient.Client, amount string, index int64) ojaclient.Quote {
		t.Helper()
		q, err := partner.CreateQuote(ctx, ojaclient.CreateQuoteRequest{SourceCurrency: "USDT", DestinationCurrency: "NGN",
			Amount: decimal.RequireFromString(amount), Rate: decimal.RequireFromString("1600"), AmountDirection: ojaclient.DirectionSource})
		if err != nil {
			t.Fatal(err)
		}
		if got := q.AllocationResult.WeightedAverageRate.String(); got != "1612.5" {
			t.Errorf("rate: %s, want 1612.5", got)
		}
		q, err = partner.AcceptQuote(ctx, q.QuoteID, q.AllocationResult.Allocations[0].PoolAccountID)
		if err != nil {
			t.Fatal(err)
		}
		if q.Metadata == nil || q.Metadata.CryptoPayIn == nil || q.Metadata.BankPayIn != nil {
			t.Fatalf("accepted USDT→NGN quote: metadata %+v, want a cryptoPayIn only", q.Metadata)
		}
		p := q.Metadata.CryptoPayIn
		want, err := tron.Address("TRON", uint32(index))
		if err != nil {
			t.Fatal(err)
		}
		if p.DerivationIndex != index || p.Address != want || p.Chain != "TRON" || p.Token != "USDT" ||
			p.AddressType != "hd_deposit" || p.Status != "active" || !p.ExpectedAmount.Equal(decimal.RequireFromString(amount)) ||
			p.ExternalReference == "" || p.VirtualAccountID == "" || p.ExpiresAt == nil || p.CreatedAt == nil ||
			!strings.Contains(p.WarningMessage, "Send only USDT on TRON") {
			t.Fatalf("pay-in %+v; want index %d, address %s", p, index, want)
		}
		if _, err := hd.TronAccount(p.Address); err != nil {
			t.Errorf("address %s: %v", p.Address, err)
		}
		if seen[p.Address] {
			t.Fatalf("address %s issued twice", p.Address)
		}
		seen[p.Address] = true
		return q
	}
	first := accepted(partner, "100", 0)
	second := accepted(partner, "25.5", 1)
	if first.Metadata.CryptoPayIn.VirtualAccountID != second.Metadata.CryptoPayIn.VirtualAccountID {
		t.Errorf("virtualAccountId differs between one client's USDT quotes")
	}

	// The deposit seen: credited to the desk's USDT wallet at once, the
	// pay-in pending; the same report again changes nothing, another amount
	// under the same hash is a conflict.
	addressID := first.Metadata.CryptoPayIn.AddressID
	tx := "0x" + strings.Repeat("ab", 32)
	p, err := admin.RecordPayIn(ctx, addressID, decimal.NewFromInt(60), tx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != "pending" || !p.ReceivedAmount.Equal(decimal.NewFromInt(60)) || len(p.Deposits) != 1 || p.Deposits[0].TxHash != strings.Repeat("ab", 32) { // TRON: bare
		t.Errorf("after the deposit: %+v", p)
	}
	if _, err := admin.RecordPayIn(ctx, addressID, decimal.NewFromInt(60), tx, 0); err != nil {
		t.Errorf("the same report again: %v", err)
	}
	var apiErr *ojaclient.APIError
	if _, err := admin.RecordPayIn(ctx, addressID, decimal.NewFromInt(99), tx, 0); !errors.As(err, &apiErr) || apiErr.Code != "CONFLICT" {
		t.Errorf("another amount under the same hash: %v, want CONFLICT", err)
	}
	if _, err := admin.RecordPayIn(ctx, "7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4", decimal.NewFromInt(1), tx, 0); !errors.As(err, &apiErr) || apiErr.Code != "NOT_FOUND" {
		t.Errorf("an unknown address: %v, want NOT_FOUND", err)
	}
	if _, err := admin.RecordPayIn(ctx, second.Metadata.CryptoPayIn.AddressID, decimal.RequireFromString("1.0000001"), "not-a-hash", 0); !errors.As(err, &apiErr) || apiErr.Code != "VALIDATION_ERROR" {
		t.Errorf("a bad report: %v, want VALIDATION_ERROR", err)
	}
	// Sandbox completes what the wallet lacks with a simulated pay-in: 60
	// received, 40 simulated, the quote's 100 spent.
	done, err := partner.CompleteQuote(ctx, first.QuoteID)
	if err != nil || done.Status != ojaclient.StatusCompleted || done.Metadata.CryptoPayIn.Status != "expired" {
		t.Fatalf("complete: %v %+v", err, done)
	}
	p, err = admin.GetPayIn(ctx, addressID)
	if err != nil || p.QuoteID != first.QuoteID || p.ClientID != d.clientID || p.Status != "expired" ||
		!p.ReceivedAmount.Equal(decimal.NewFromInt(60)) || p.Address != first.Metadata.CryptoPayIn.Address {
		t.Errorf("the pay-in look-up: %v %+v", err, p)
	}
	wallets, err := partner.BalancesByCurrency(ctx, "USDT")
	if err != nil || len(wallets) != 1 {
		t.Fatalf("USDT wallets: %v %+v", err, wallets)
	}
	usdt := wallets[0].AccountID
	var lines []string
	for line, err := range partner.Transactions(ctx, usdt) {
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line.Type+" "+line.Amount.String()+" → "+line.BalanceAfter.String())
	}
	if got, want := strings.Join(lines, ", "), "settlement -100 → 0, simulated_payin 40 → 100, payin 60 → 60"; got != want {
		t.Errorf("USDT statement: %s, want %s", got, want)
	}
	// A deposit to the cancelled second quote's address is still the desk's.
	cancelled, err := partner.CancelQuote(ctx, second.QuoteID)
	if err != nil || cancelled.Metadata.CryptoPayIn.Status != "expired" {
		t.Fatalf("cancel: %v %+v", err, cancelled.Metadata)
	}
	late, err := admin.RecordPayIn(ctx, second.Metadata.CryptoPayIn.AddressID, decimal.RequireFromString("25.5"), "0x"+strings.Repeat("cd", 32), 0)
	if err != nil || late.Status != "expired" || !late.ReceivedAmount.Equal(decimal.RequireFromString("25.5")) {
		t.Fatalf("a deposit after the cancel: %v %+v", err, late)
	}
	if b, err := partner.Balance(ctx, usdt); err != nil || !b.Balance.Equal(decimal.RequireFromString("25.5")) {
		t.Errorf("USDT wallet after the late deposit: %v %+v", err, b)
	}
	report, err := admin.LedgerCheck(ctx, ojaclient.ModeSandbox)
	if err != nil || !report.OK {
		t.Fatalf("ledger: %v %+v", err, report)
	}

	// kill -9: the next acceptance takes index 2, never 0 or 1 again.
	srv.crash()
	srv.start()
	third := accepted(partner, "10", 2)
	got, err := partner.GetQuote(ctx, first.QuoteID)
	if err != nil || got.Metadata.CryptoPayIn.Address != first.Metadata.CryptoPayIn.Address || got.Metadata.CryptoPayIn.Status != "expired" {
		t.Fatalf("after the restart the first quote's pay-in: %v %+v", err, got.Metadata)
	}
	// The XML status of the trade carries the same pay-in.
	status, body := httpGet(t, srv.publicURL()+"/api/v1/partners/fx/trades/"+third.QuoteID, d.key)
	if status != 200 || !strings.Contains(body, "<CrptoPayInDtls>") || !strings.Contains(body, "<Adr>"+third.Metadata.CryptoPayIn.Address+"</Adr>") ||
		!strings.Contains(body, "<DrvtnIdx>2</DrvtnIdx>") {
		t.Errorf("XML status: %d %s", status, body)
	}

	// The log shows what was issued and seen, never a key.
	srv.stop()
	out, errOut, code := runOja(t, srv.bin, childEnv(), "wal", "dump", "--data", srv.data, "--json")
	if code != 0 {
		t.Fatalf("wal dump: exit %d: %s", code, errOut)
	}
	for _, want := range []string{`"type":"QuoteAcceptedWithPayIn"`, `"address":"` + first.Metadata.CryptoPayIn.Address + `"`,
		`"derivationIndex":2`, `"type":"PaymentIdentified"`, `"method":"crypto"`, `"txHash":"` + strings.TrimPrefix(strings.ToLower(tx), "0x") + `"`,
		`"type":"QuoteCompletedFunded"`, `"simulatedAmount":40000000`} {
		if !strings.Contains(out, want) {
			t.Errorf("wal dump lacks %s", want)
		}
	}
	if strings.Contains(out, "xpub") || strings.Contains(out, "xprv") {
		t.Errorf("wal dump shows a deposit key")
	}
}

// httpGet is one authorised GET: its status and body.
func httpGet(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := newHTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
