package gateway_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// BenchmarkConsolePages serves each console page of a marketplace holding
// 100,000 quotes (200 clients × 500; one in five awaiting payment, each
// with a bank receipt for part of it; one in five cancelled), through a
// real admin listener on loopback: an
// iteration is one whole request, so its time bounds the server's. The
// issue's bound is 100 ms a page.
//
//	go test -run '^$' -bench BenchmarkConsolePages -benchtime 20x ./gateway/
func BenchmarkConsolePages(b *testing.B) {
	const clients, perClient = 200, 500
	s := gatewaytest.Start(b, gatewaytest.Options{History: true})
	for i := range 4 {
		s.NewPool(b, engine.ModeSandbox, gatewaytest.NGNUSDT, "Desk "+string(rune('A'+i)), "0.00065", "100000000")
	}
	rate, err := engine.RateFromDecimal(decimal.RequireFromString("0.0006"))
	if err != nil {
		b.Fatal(err)
	}
	type made struct {
		client *engine.Client
		quote  *engine.Quote
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var sample made
	var awaiting *engine.Quote
	for c := range clients {
		p := s.NewPartner(b, "client "+string(rune('a'+c%26))+string(rune('a'+c/26)))
		key := s.Sys.ClientKeys(p.Client.ID)
		var keyID engine.KeyID
		for _, k := range key {
			if k.Mode == engine.ModeSandbox {
				keyID = k.ID
			}
		}
		wallet := engine.AccountID{}
		for _, a := range s.Sys.ClientAccounts(p.Client.ID, engine.ModeSandbox) {
			if a.Currency == engine.CurrencyUSDT {
				wallet = a.ID
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perClient {
				r := s.Sys.CreateQuote(&actors.CreateQuote{Key: keyID, Client: p.Client.ID, Mode: engine.ModeSandbox,
					Pair: gatewaytest.NGNUSDT, Direction: engine.DirectionSource, Amount: 100_000_00, Rate: rate, Chain: engine.ChainTron})
				if r.Err != nil || r.Result != engine.ResultOK {
					b.Errorf("create quote: %v %s", r.Err, r.Result)
					return
				}
				q := r.Quote
				switch i % 5 {
				case 1:
					a := s.Sys.TransitionQuote(q.Client, q.Mode, q.ID, &actors.TransitionQuote{Operation: actors.OperationAccept,
						Accept: engine.AcceptQuote{NamesPoolAccount: true, PoolAccount: q.Allocations()[0].PoolAccount,
							Settlement: engine.Settlement{Kind: engine.SettlementWallet, Account: wallet}}})
					if a.Err != nil || a.Result != engine.ResultOK {
						b.Errorf("accept: %v %s", a.Err, a.Result)
						return
					}
					// Part of it paid: the pay-ins page lists every receipt.
					tx, _ := engine.InboundIdentity(engine.CurrencyNGN, "tx-"+a.Quote.ID.String())
					if rc := s.Sys.RecordBankReceipt(a.Quote.Mode, a.Quote.Reference.String(), 10_000_00, tx, nil); rc.Err != nil || rc.Result != engine.ResultOK {
						b.Errorf("bank receipt: %v %s", rc.Err, rc.Result)
						return
					}
					mu.Lock()
					awaiting = a.Quote
					mu.Unlock()
				case 2:
					s.Sys.TransitionQuote(q.Client, q.Mode, q.ID, &actors.TransitionQuote{Operation: actors.OperationCancel})
				}
				if i == perClient-1 {
					mu.Lock()
					sample = made{client: p.Client, quote: q}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	counts := s.Sys.QuoteCounts()[engine.ModeSandbox]
	total := 0
	for _, n := range counts {
		total += n
	}
	if total != clients*perClient {
		b.Fatalf("%d quotes held, want %d", total, clients*perClient)
	}
	op := newConsoleBrowser(b, s.Admin)
	op.login(gatewaytest.AdminToken)
	for _, page := range []struct{ name, path string }{
		{"overview", "/console/?mode=sandbox"},
		{"pools", "/console/pools?mode=sandbox"},
		{"quotes-of-client", "/console/quotes?mode=sandbox&q=" + sample.client.ID.String()},
		{"quote", "/console/quotes/" + sample.quote.ID.String()},
		{"payins", "/console/payins?mode=sandbox"},
		{"clients", "/console/clients"},
		{"client", "/console/clients/" + sample.client.ID.String()},
		{"webhooks", "/console/webhooks?mode=sandbox"},
		{"log", "/console/cluster"},
		{"audit", "/console/audit"},
		{"awaiting-quote", "/console/quotes/" + awaiting.ID.String()},
	} {
		b.Run(page.name, func(b *testing.B) {
			for b.Loop() {
				if a := op.do(http.MethodGet, page.path, nil); a.status != http.StatusOK {
					b.Fatalf("%s: %d", page.path, a.status)
				}
			}
		})
	}
}
