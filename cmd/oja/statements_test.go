package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	ojaclient "github.com/oja-exchange/oja/client"
	"github.com/oja-exchange/oja/internal/camttest"
	"github.com/oja-exchange/oja/internal/poll"
)

// TestStatementImportEndToEnd: over the real binary, an operator imports
// the bank's statement with oja admin payins import: the credit naming a
// quote's reference pays it and the partner completes; the others are held
// in suspense; the same file again changes nothing. Then a statement of
// 800 credits is cut short by kill -9 mid-import; after the restart the
// same file is imported again, and every entry is held once.
func TestStatementImportEndToEnd(t *testing.T) {
	t.Parallel()
	srv := exampleServer(t)
	ctx := context.Background()
	d := newDesk(t, srv, ojaclient.ModeLive, "desk pool", "NGN", "USDT", "0.000625", 1000)
	admin, partner := d.admin, d.partner
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	q, err := partner.CreateQuote(ctx, ojaclient.CreateQuoteRequest{SourceCurrency: "NGN", DestinationCurrency: "USDT",
		Amount: decimal.NewFromInt(160000), Rate: decimal.RequireFromString("0.0006"), AmountDirection: ojaclient.DirectionSource})
	must(err)
	q, err = partner.AcceptQuote(ctx, q.QuoteID, q.AllocationResult.Allocations[0].PoolAccountID)
	must(err)

	dir := t.TempDir()
	file := filepath.Join(dir, "statement.xml")
	must(os.WriteFile(file, camttest.Statement("STMT-E2E", "0123456789", "NGN",
		camttest.Entry{Amount: "160000.00", Currency: "NGN", AcctSvcrRef: "NIP/E2E/1", Remittance: []string{"USDT purchase " + q.Metadata.BankPayIn.Reference}, Debtor: "Remit Desk Ltd"},
		camttest.Entry{Amount: "2000.00", Currency: "NGN", AcctSvcrRef: "NIP/E2E/2", Remittance: []string{"no reference"}},
		camttest.Entry{Amount: "150.00", Currency: "NGN", AcctSvcrRef: "CHG/E2E/3", Debit: true}), 0o600))
	env := childEnv("OJA_ADMIN_TOKEN=" + crashAdminToken)
	out, errOut, code := runOja(t, srv.bin, env, "admin", "--addr", srv.adminURL(), "payins", "import", file)
	if code != 0 {
		t.Fatalf("oja admin payins import: exit %d\n%s%s", code, out, errOut)
	}
	var report ojaclient.StatementImport
	must(json.Unmarshal([]byte(out), &report))
	if report.Entries != 3 || report.Applied != 1 || report.Unapplied != 1 || report.Ignored != 1 || len(report.UnappliedReceipts) != 1 {
		t.Fatalf("import: %+v", report)
	}
	done, err := partner.CompleteQuote(ctx, q.QuoteID)
	must(err)
	if done.Status != "completed" {
		t.Fatalf("the quote paid by the statement: %s", done.Status)
	}
	out, _, code = runOja(t, srv.bin, env, "admin", "--addr", srv.adminURL(), "payins", "import", file)
	must(json.Unmarshal([]byte(out), &report))
	if code != 0 || report.Applied != 0 || report.Unapplied != 0 || report.Duplicates != 2 {
		t.Fatalf("the same file again: exit %d, %+v", code, report)
	}

	// A long statement, cut short by kill -9.
	const n = 800
	entries := make([]camttest.Entry, n)
	for i := range entries {
		entries[i] = camttest.Entry{Amount: fmt.Sprintf("%d.00", 100+i), Currency: "NGN", AcctSvcrRef: fmt.Sprintf("NIP/BULK/%05d", i),
			Remittance: []string{"salary batch"}}
	}
	bulk := camttest.Statement("STMT-BULK", "0123456789", "NGN", entries...)
	var finished atomic.Bool
	go func() {
		_, err := admin.ImportStatement(ctx, bulk)
		finished.Store(err == nil)
	}()
	poll.Until(t, 30*time.Second, func() string {
		page, err := admin.UnappliedList(ctx, ojaclient.ModeLive, 500, "")
		if err != nil || len(page.Data) < 20 {
			return fmt.Sprintf("held so far: %d (%v)", len(page.Data), err)
		}
		return ""
	})
	srv.crash()
	if finished.Load() {
		t.Log("the import finished before the kill: the restart's import is all duplicates")
	}
	srv.start()
	again, err := admin.ImportStatement(ctx, bulk)
	must(err)
	if again.Entries != n || again.Unapplied+again.Duplicates != n || again.Duplicates == 0 {
		t.Fatalf("the import after the crash: %+v", again)
	}
	t.Logf("before the kill %d of %d entries were held; the second import held the other %d", again.Duplicates, n, again.Unapplied)
	held := 0
	seen := map[string]bool{}
	after := ""
	for {
		page, err := admin.UnappliedList(ctx, ojaclient.ModeLive, 500, after)
		must(err)
		for _, u := range page.Data {
			if seen[u.BankTransactionID] {
				t.Fatalf("%s held twice", u.BankTransactionID)
			}
			seen[u.BankTransactionID] = true
			held++
			after = u.UnappliedID
		}
		if !page.HasMore {
			break
		}
	}
	if held != n+1 { // the long statement's and the first one's unapplied entry
		t.Fatalf("%d receipts held, want %d", held, n+1)
	}
	for _, m := range []ojaclient.Mode{ojaclient.ModeLive, ojaclient.ModeSandbox} {
		r, err := admin.LedgerCheck(ctx, m)
		must(err)
		if !r.OK {
			t.Fatalf("ledger %s: %+v", m, r)
		}
	}
}
