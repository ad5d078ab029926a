package bench

import (
	"fmt"
	"testing"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// BenchmarkQuoteLifecycle is a quote's whole path through the actors:
// create, accept (settled to the partner's wallet), complete — since funds
// first the completion also asks the mode's treasury to fund it (sandbox:
// the shortfall simulated). Parallel callers, a real log.
//
//	go test -C bench -run '^$' -bench QuoteLifecycle .
func BenchmarkQuoteLifecycle(b *testing.B) {
	for _, durable := range []bool{true, false} {
		b.Run(fmt.Sprintf("sync=%v", durable), func(b *testing.B) {
			m, err := startMarket(b.TempDir(), durable)
			if err != nil {
				b.Fatal(err)
			}
			defer m.stop()
			c, _ := m.sys.Client(m.client)
			var wallet engine.AccountID
			for _, w := range c.Wallets {
				if w.Mode == engine.ModeSandbox && w.Currency == engine.CurrencyUSDT {
					wallet = w.Account
				}
			}
			complete := &actors.TransitionQuote{Operation: actors.OperationComplete}
			b.SetParallelism(actorsCallersPerProc)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r := m.sys.CreateQuote(m.createQuote())
					if r.Err != nil || r.Result != engine.ResultOK {
						b.Errorf("create: %v %v", r.Err, r.Result)
						return
					}
					q := r.Quote
					accept := &actors.TransitionQuote{Operation: actors.OperationAccept, Accept: engine.AcceptQuote{
						NamesPoolAccount: true, PoolAccount: q.Allocations()[0].PoolAccount,
						Settlement: engine.Settlement{Kind: engine.SettlementWallet, Account: wallet}}}
					for _, cmd := range []*actors.TransitionQuote{accept, complete} {
						if r := m.sys.TransitionQuote(q.Client, q.Mode, q.ID, cmd); r.Err != nil || r.Result != engine.ResultOK {
							b.Errorf("transition %d: %v %v", cmd.Operation, r.Err, r.Result)
							return
						}
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "quotes/s")
		})
	}
}
