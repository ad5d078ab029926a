package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	ojaclient "github.com/oja-exchange/oja/client"
	"github.com/oja-exchange/oja/internal/poll"
)

// TestReceiptsConcurrentSpellings: over the real binary, one bank transfer
// and one chain deposit each reported forty times at once in mixed
// spellings (engine/identity.go) credit once; the other amount is a
// conflict; after a kill -9 the same reports still change nothing.
func TestReceiptsConcurrentSpellings(t *testing.T) {
	t.Parallel()
	srv := exampleServer(t)
	ctx := context.Background()
	admin, partner := identityFixture(t, srv)
	d := decimal.RequireFromString
	ngnPool, err := admin.CreatePool(ctx, ojaclient.CreatePoolRequest{Mode: ojaclient.ModeLive, Name: "lagos",
		Source: "NGN", Destination: "USDT", Rate: d("0.000625")})
	mustNil(t, err)
	_, err = admin.DepositPool(ctx, ngnPool.PoolID, d("1000"))
	mustNil(t, err)
	usdtPool, err := admin.CreatePool(ctx, ojaclient.CreatePoolRequest{Mode: ojaclient.ModeLive, Name: "otc",
		Source: "USDT", Destination: "NGN", Rate: d("1612.5")})
	mustNil(t, err)
	_, err = admin.DepositPool(ctx, usdtPool.PoolID, d("10000000"))
	mustNil(t, err)
	accept := func(source, destination, amount, rate, pool string) ojaclient.Quote {
		q, err := partner.CreateQuote(ctx, ojaclient.CreateQuoteRequest{SourceCurrency: source, DestinationCurrency: destination,
			Amount: d(amount), Rate: d(rate), AmountDirection: ojaclient.DirectionSource})
		mustNil(t, err)
		q, err = partner.AcceptQuote(ctx, q.QuoteID, pool)
		mustNil(t, err)
		return q
	}
	bankQuote := accept("NGN", "USDT", "100000", "0.0006", ngnPool.PoolAccountID)
	cryptoQuote := accept("USDT", "NGN", "100", "1600", usdtPool.PoolAccountID)
	reference, address := bankQuote.Metadata.BankPayIn.Reference, cryptoQuote.Metadata.CryptoPayIn.AddressID
	const hash = "34ce5a1b0c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f"
	bankIDs := []string{"NIP-CONC-1", "nip-conc-1", "  NIP-CONC-1 ", "NIP-CONC-1\t", "NIP\u2010CONC\u20101", "ＮＩＰ-ＣＯＮＣ-１"}
	hashes := []string{hash, "0x" + hash, "0X" + strings.ToUpper(hash), " " + strings.ToUpper(hash) + " "}

	// report sends forty bank receipts and forty chain deposits at once,
	// in mixed spellings; with conflicting, every eighth bank receipt names
	// another amount.
	report := func(conflicting bool) (bankIDsSeen, receiptsSeen map[string]int, conflicts int) {
		bankIDsSeen, receiptsSeen = map[string]int{}, map[string]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				amount, isConflict := "50", conflicting && i%8 == 7
				if isConflict {
					amount = "51"
				}
				r, err := admin.RecordBankReceipt(ctx, ojaclient.BankReceipt{Reference: strings.ToLower(reference),
					Amount: d(amount), BankTransactionID: bankIDs[i%len(bankIDs)]})
				mu.Lock()
				defer mu.Unlock()
				var apiErr *ojaclient.APIError
				switch {
				case isConflict && errors.As(err, &apiErr) && apiErr.Code == "CONFLICT":
					conflicts++
				case err == nil && !isConflict:
					bankIDsSeen[r.ReceiptID]++
				default:
					t.Errorf("bank receipt %d (%s): %+v %v", i, amount, r, err)
				}
			})
			wg.Go(func() {
				p, err := admin.RecordPayIn(ctx, address, d("60"), hashes[i%len(hashes)], 0)
				mu.Lock()
				defer mu.Unlock()
				var first []string // the deposits at log index 0: one
				for _, dep := range p.Deposits {
					if dep.LogIndex == 0 {
						first = append(first, dep.ReceiptID)
					}
				}
				if err != nil || len(first) != 1 {
					t.Errorf("seen %d: %+v %v", i, p, err)
					return
				}
				receiptsSeen[first[0]]++
			})
		}
		wg.Wait()
		return bankIDsSeen, receiptsSeen, conflicts
	}
	bankReceipts, chainReceipts, conflicts := report(false)
	if len(bankReceipts) != 1 || len(chainReceipts) != 1 || conflicts != 0 {
		t.Fatalf("receipts named: bank %v, chain %v; conflicts %d", bankReceipts, chainReceipts, conflicts)
	}
	// The same hash at another log index is another transfer.
	p, err := admin.RecordPayIn(ctx, address, d("1.5"), hash, 1)
	mustNil(t, err)
	if len(p.Deposits) != 2 || !p.ReceivedAmount.Equal(d("61.5")) {
		t.Fatalf("a second log index: %+v", p)
	}
	balances := func() (ngn, usdt decimal.Decimal) {
		for _, c := range []string{"NGN", "USDT"} {
			ws, err := partner.BalancesByCurrency(ctx, c)
			mustNil(t, err)
			if c == "NGN" {
				ngn = ws[0].Balance
			} else {
				usdt = ws[0].Balance
			}
		}
		return ngn, usdt
	}
	wantBalances := func(when string) {
		if ngn, usdt := balances(); !ngn.Equal(d("50")) || !usdt.Equal(d("61.5")) {
			t.Fatalf("%s: NGN %s, USDT %s; want 50 and 61.5", when, ngn, usdt)
		}
	}
	wantBalances("after the reports")

	srv.crash()
	srv.start()
	again, againChain, conflicts := report(true)
	for id := range again {
		if _, ok := bankReceipts[id]; !ok || len(again) != 1 {
			t.Fatalf("after kill -9 the reports name %v, before %v", again, bankReceipts)
		}
	}
	for id := range againChain {
		if _, ok := chainReceipts[id]; !ok || len(againChain) != 1 {
			t.Fatalf("after kill -9 the deposits name %v, before %v", againChain, chainReceipts)
		}
	}
	if conflicts != 5 {
		t.Fatalf("after kill -9: %d conflicts, want 5", conflicts)
	}
	wantBalances("after kill -9 and the same reports")
	// One audit line per credit, none for a repeat.
	lines := 0
	for e := range auditLines(t, admin) {
		if e.Details != nil && (e.Details.BankTransactionID == "nip-conc-1" || e.Details.TxHash == hash) {
			lines++
		}
	}
	if lines != 3 { // the transfer, the deposit at log index 0 and the one at 1
		t.Fatalf("%d audit lines for the three credits, want 3", lines)
	}
}

// TestPayoutsKill9AuditOneToOne: payouts made by four operators' scripts
// at once, the server killed with SIGKILL among them: after the restart
// every acknowledged payout is in the statement, and the statement's
// withdrawals and the audit trail's payout lines match one to one —
// reference, amount and wallet — with no line without its payout nor a
// payout without its line. A retried acknowledged payout pays nothing.
func TestPayoutsKill9AuditOneToOne(t *testing.T) {
	t.Parallel()
	srv := newOjaServer(t)
	srv.start()
	ctx := context.Background()
	admin, partner := identityFixture(t, srv)
	d := decimal.RequireFromString
	ws, err := partner.BalancesByCurrency(ctx, "NGN")
	mustNil(t, err)
	wallet := ws[0].AccountID
	_, err = admin.DepositAccount(ctx, wallet, d("100000"), "NIP-FUND-1")
	mustNil(t, err)

	var acked sync.Map // reference → true
	var stop atomic.Bool
	var wg sync.WaitGroup
	fast, err := ojaclient.NewAdmin(srv.adminURL(), crashAdminToken, ojaclient.WithTimeout(2*time.Second))
	mustNil(t, err)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				ref := fmt.Sprintf("PAYOUT-%d-%d", w, i)
				if _, err := fast.WithdrawAccount(ctx, wallet, d("1.25"), ref); err == nil {
					acked.Store(strings.ToLower(ref), true)
				} else if stop.Load() {
					return
				}
			}
		})
	}
	poll.Until(t, 20*time.Second, func() string {
		n := 0
		acked.Range(func(any, any) bool { n++; return true })
		if n < 40 {
			return fmt.Sprintf("%d payouts acknowledged before the crash, want 40", n)
		}
		return ""
	})
	srv.crash()
	stop.Store(true)
	wg.Wait()
	srv.start()

	rows := map[string]decimal.Decimal{}
	for p, err := range admin.TransactionsAll(ctx, wallet) {
		mustNil(t, err)
		if p.Type == "withdrawal" {
			if _, dup := rows[p.Reference]; dup {
				t.Fatalf("payout %s twice in the statement", p.Reference)
			}
			rows[p.Reference] = p.Amount.Neg()
		}
	}
	lines := map[string]decimal.Decimal{}
	for e := range auditLines(t, admin) {
		if e.Action != "POST /admin/v1/accounts/{accountId}/withdraw" {
			continue
		}
		if e.Details == nil || e.Details.Amount == nil || e.Details.AccountID != wallet {
			t.Fatalf("payout audit line without its details: %+v", e)
		}
		if _, dup := lines[e.Details.Reference]; dup {
			t.Fatalf("two audit lines for payout %s", e.Details.Reference)
		}
		lines[e.Details.Reference] = *e.Details.Amount
	}
	acked.Range(func(k, _ any) bool {
		if _, ok := rows[k.(string)]; !ok {
			t.Errorf("acknowledged payout %s is not in the statement", k)
		}
		return true
	})
	if len(rows) != len(lines) || len(rows) < 40 {
		t.Fatalf("%d payouts in the statement, %d audit lines (want equal, at least 40)", len(rows), len(lines))
	}
	for ref, amount := range rows {
		if got, ok := lines[ref]; !ok || !got.Equal(amount) {
			t.Fatalf("payout %s of %s: audit line %v %v", ref, amount, got, ok)
		}
	}
	// A retried payout the server acknowledged pays nothing again.
	var ref string
	acked.Range(func(k, _ any) bool { ref = k.(string); return false })
	before, err := partner.Balance(ctx, wallet)
	mustNil(t, err)
	m, err := admin.WithdrawAccount(ctx, wallet, d("1.25"), strings.ToUpper(ref))
	mustNil(t, err)
	if !m.Repeated || !m.Balance.Equal(before.Balance) {
		t.Fatalf("a retried payout: %+v, balance before %s", m, before.Balance)
	}
	if want := d("100000").Sub(d("1.25").Mul(decimal.NewFromInt(int64(len(rows))))); !before.Balance.Equal(want) {
		t.Fatalf("balance %s, want %s after %d payouts", before.Balance, want, len(rows))
	}
}

// identityFixture is a live client of srv, its partner client and the
// operator's.
func identityFixture(t *testing.T, srv *ojaServer) (*ojaclient.Admin, *ojaclient.Client) {
	t.Helper()
	ctx := context.Background()
	admin, err := ojaclient.NewAdmin(srv.adminURL(), crashAdminToken)
	mustNil(t, err)
	c, err := admin.CreateClient(ctx, "lagos fintech")
	mustNil(t, err)
	key, err := admin.CreateKey(ctx, c.ClientID, ojaclient.ModeLive)
	mustNil(t, err)
	partner, err := ojaclient.New(srv.publicURL(), key.Key)
	mustNil(t, err)
	return admin, partner
}

// auditLines yields the whole audit trail, newest first.
func auditLines(t *testing.T, admin *ojaclient.Admin) func(func(ojaclient.AuditEntry) bool) {
	return func(yield func(ojaclient.AuditEntry) bool) {
		after := ""
		for {
			page, err := admin.Audit(context.Background(), 500, after)
			mustNil(t, err)
			for _, e := range page.Data {
				if !yield(e) {
					return
				}
				after = e.ID
			}
			if !page.HasMore {
				return
			}
		}
	}
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
