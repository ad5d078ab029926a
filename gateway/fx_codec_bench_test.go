package gateway

import (
	"testing"

	"github.com/oja-exchange/oja/client/fxmsg"
	"github.com/oja-exchange/oja/engine"
)

// Codec micro-benchmarks: the XML parse and render of a create against the
// JSON ones, without HTTP or the actors.

// BenchCreateXML and BenchCreateJSON are the same create in each API: the
// bodies of these benchmarks and of the HTTP ones (fx_bench_test.go).
const (
	BenchCreateXML = `<?xml version="1.0" encoding="UTF-8"?>
<FXTradInstr xmlns="urn:iso:std:iso:20022:tech:xsd:fxtr.014.001.05">
  <CcyPair><BaseCcy>NGN</BaseCcy><QtdCcy>USDT</QtdCcy></CcyPair>
  <TradAmts><TradgCcyAmt>1600</TradgCcyAmt></TradAmts>
  <AgrdRate><XchgRate>0.0006</XchgRate></AgrdRate>
  <AmtDrctn>SELL</AmtDrctn>
</FXTradInstr>`
	BenchCreateJSON = `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1600,"rate":0.0006,"amountDirection":"source"}`
)

func BenchmarkCodecParseXML(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, e := parseFXTradInstr([]byte(BenchCreateXML), engine.DefaultMarkets()); e != nil {
			b.Fatal(e.details)
		}
	}
}

func BenchmarkCodecParseJSON(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, e := parseCreateQuote([]byte(BenchCreateJSON), engine.DefaultMarkets()); e != nil {
			b.Fatal(e.details)
		}
	}
}

func codecQuote() *engine.Quote {
	cmd, _ := parseCreateQuote([]byte(BenchCreateJSON), engine.DefaultMarkets())
	return engine.NewQuote(&engine.QuoteCreated{At: 1, Quote: engine.QuoteID{1}, Mode: engine.ModeSandbox, Pair: cmd.Pair,
		Direction: cmd.Direction, Amount: cmd.Amount, ProposedRate: cmd.Rate, Chain: cmd.Chain, Reference: engine.MustRef("OJA-1"),
		ExpiresAt: 300001, Allocations: []engine.Allocation{{Pool: engine.PoolID{2}, Rate: engine.RateFromUnits(625_000_000_000_000),
			Source: 160000, Destination: 1_000_000, Reference: engine.MustRef("ALC-1"), PoolName: "Desk"}}})
}

func BenchmarkCodecRenderXML(b *testing.B) {
	s := New(Config{})
	q := codecQuote()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fxmsg.Append(make([]byte, 0, 1024), s.fxInstructionResponse(q, 2)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCodecRenderJSON(b *testing.B) {
	s := New(Config{})
	q := codecQuote()
	b.ReportAllocs()
	for b.Loop() {
		s.appendQuote(make([]byte, 0, 2048), q, 2)
	}
}
