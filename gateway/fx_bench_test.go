package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// BenchmarkXMLInitiate and BenchmarkJSONCreate create the same quote
// (1,600 NGN → 1 USDT) through each API against the same kind of server:
// fsync on, one funded pool, many parallel keep-alive clients over
// loopback. Compare their req/s:
//
//	go test -run '^$' -bench 'XMLInitiate|JSONCreate' -count 5 ./gateway/
//
// Each iteration is one create; every answer must be a 200.

const (
	// benchClientsPerProc goroutines per GOMAXPROCS send requests, so that
	// group commit has company to batch.
	benchClientsPerProc = 32
	benchXMLBody        = `<?xml version="1.0" encoding="UTF-8"?>
<FXTradInstr xmlns="urn:iso:std:iso:20022:tech:xsd:fxtr.014.001.05">
  <CcyPair><BaseCcy>NGN</BaseCcy><QtdCcy>USDT</QtdCcy></CcyPair>
  <TradAmts><TradgCcyAmt>1600</TradgCcyAmt></TradAmts>
  <AgrdRate><XchgRate>0.0006</XchgRate></AgrdRate>
  <AmtDrctn>SELL</AmtDrctn>
</FXTradInstr>`
	benchJSONBody = `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":1600,"rate":0.0006,"amountDirection":"source"}`
)

func BenchmarkXMLInitiate(b *testing.B) {
	benchCreate(b, fxPath+"/trades", "application/xml; charset=utf-8", benchXMLBody, "<Sts>NEWT</Sts>")
}

func BenchmarkJSONCreate(b *testing.B) {
	benchCreate(b, "/api/v1/partners/marketplace/intent", "application/json", benchJSONBody, `"status":"pending"`)
}

// BenchmarkJSONGet reads one pending quote back, from many parallel
// keep-alive clients (the same server as BenchmarkJSONCreate):
//
//	go test -run '^$' -bench 'JSONGet' -count 5 ./gateway/
func BenchmarkJSONGet(b *testing.B) {
	s := gatewaytest.Start(b, gatewaytest.Options{Sync: true, QuoteTTL: time.Hour})
	p := s.NewPartner(b, "bench")
	s.NewPool(b, engine.ModeSandbox, gatewaytest.NGNUSDT, "Bench Desk", "0.000625", "100000000")
	client := &fasthttp.Client{MaxConnsPerHost: 4096, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	auth := "Bearer " + p.SandboxKey
	req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	req.SetRequestURI(s.URL + "/api/v1/partners/marketplace/intent")
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.Header.Set("Authorization", auth)
	req.SetBodyString(benchJSONBody)
	if err := client.Do(req, res); err != nil || res.StatusCode() != fasthttp.StatusOK {
		b.Fatalf("create: %v %d %s", err, res.StatusCode(), res.Body())
	}
	var created struct {
		QuoteID string `json:"quoteId"`
	}
	if err := json.Unmarshal(res.Body(), &created); err != nil || created.QuoteID == "" {
		b.Fatalf("create: %v %s", err, res.Body())
	}
	fasthttp.ReleaseRequest(req)
	fasthttp.ReleaseResponse(res)
	url := s.URL + "/api/v1/partners/marketplace/quote/" + created.QuoteID
	b.SetParallelism(benchClientsPerProc)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(res)
		for pb.Next() {
			req.Reset()
			req.SetRequestURI(url)
			req.Header.Set("Authorization", auth)
			if err := client.Do(req, res); err != nil {
				b.Error(err)
				return
			}
			if res.StatusCode() != fasthttp.StatusOK || !strings.Contains(string(res.Body()), `"status":"pending"`) {
				b.Errorf("%d %s", res.StatusCode(), res.Body())
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

func benchCreate(b *testing.B, path, contentType, body, want string) {
	s := gatewaytest.Start(b, gatewaytest.Options{Sync: true, QuoteTTL: time.Hour})
	p := s.NewPartner(b, "bench")
	s.NewPool(b, engine.ModeSandbox, gatewaytest.NGNUSDT, "Bench Desk", "0.000625", "100000000")
	client := &fasthttp.Client{
		MaxConnsPerHost: 4096, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		MaxIdemponentCallAttempts: 1,
	}
	url := s.URL + path
	auth := "Bearer " + p.SandboxKey
	b.SetParallelism(benchClientsPerProc)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(res)
		for pb.Next() {
			req.Reset()
			req.SetRequestURI(url)
			req.Header.SetMethod(fasthttp.MethodPost)
			req.Header.SetContentType(contentType)
			req.Header.Set("Authorization", auth)
			req.SetBodyString(body)
			if err := client.Do(req, res); err != nil {
				b.Error(err)
				return
			}
			if res.StatusCode() != fasthttp.StatusOK || !strings.Contains(string(res.Body()), want) {
				b.Errorf("%d %s", res.StatusCode(), res.Body())
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
