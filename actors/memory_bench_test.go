package actors_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// BenchmarkLiveQuoteHeap is the heap a quote created through a running
// system holds once created (heap-B/quote): the quote and its views, its
// registry entry and expiry, and its Idempotency-Key's entry (a UUID, as
// the benchmark harness sends). The memory section of ojabench measures a
// system started from a state instead.
//
//	go test -run '^$' -bench LiveQuoteHeap -benchtime 20000x ./actors/
func BenchmarkLiveQuoteHeap(b *testing.B) {
	n := newNode(b, testConfig(newClock()))
	ada := newClient(b, n.sys, "ada")
	newPool(b, n.sys, engine.ModeSandbox, pairNGNUSDT, "lagos", "0.000625", "100000000")
	one, rate := amount(b, "1", engine.CurrencyUSDT), rate(b, "0.0006")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := range b.N {
		mustQuote(b, n.sys, &actors.CreateQuote{Client: ada.ID, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
			Direction: engine.DirectionDestination, Amount: one, Rate: rate, Chain: engine.ChainTron,
			IdempotencyKey: engine.MakeIdemKey(fmt.Sprintf("%08x-9b0d-4c3e-8a5f-1d2e3f4a5b6c", i))})
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/float64(b.N), "heap-B/quote")
}
