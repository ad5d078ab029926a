package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway"
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

// benchClientsPerProc goroutines per GOMAXPROCS send requests, so that
// group commit has company to batch.
const benchClientsPerProc = 32

func BenchmarkXMLInitiate(b *testing.B) {
	benchCreate(b, fxPath+"/trades", "application/xml; charset=utf-8", gateway.BenchCreateXML, "<Sts>NEWT</Sts>")
}

func BenchmarkJSONCreate(b *testing.B) {
	benchCreate(b, "/api/v1/partners/marketplace/intent", "application/json", gateway.BenchCreateJSON, `"status":"pending"`)
}

// BenchmarkJSONGet reads one pending quote back, from many parallel
// keep-alive clients (the same server as BenchmarkJSONCreate):
//
//	go test -run '^$' -bench 'JSONGet' -count 5 ./gateway/
func BenchmarkJSONGet(b *testing.B) {
	bs := startBench(b)
	var id string
	once := true
	next := func() bool { first := once; once = false; return first }
	bs.do(b, next, func(req *fasthttp.Request) {
		bs.post(req, "/api/v1/partners/marketplace/intent", "application/json", gateway.BenchCreateJSON)
	},
		func(body []byte) bool {
			var created struct {
				QuoteID string `json:"quoteId"`
			}
			ok := json.Unmarshal(body, &created) == nil && created.QuoteID != ""
			id = created.QuoteID
			return ok
		})
	if id == "" {
		b.Fatal("the quote to read was not created")
	}
	url := bs.url + "/api/v1/partners/marketplace/quote/" + id
	b.ResetTimer()
	bs.parallel(b, func(req *fasthttp.Request) {
		req.SetRequestURI(url)
		req.Header.Set("Authorization", bs.auth)
	}, `"status":"pending"`)
}

func benchCreate(b *testing.B, path, contentType, body, want string) {
	bs := startBench(b)
	b.ResetTimer()
	bs.parallel(b, func(req *fasthttp.Request) { bs.post(req, path, contentType, body) }, want)
}

// benchServer is the server the create and read benchmarks share: fsync
// on, one partner, one funded pool.
type benchServer struct {
	url, auth string
	client    *fasthttp.Client
}

func startBench(b *testing.B) *benchServer {
	s := gatewaytest.Start(b, gatewaytest.Options{Sync: true, QuoteTTL: time.Hour})
	p := s.NewPartner(b, "bench")
	s.NewPool(b, engine.ModeSandbox, gatewaytest.NGNUSDT, "Bench Desk", "0.000625", "100000000")
	return &benchServer{url: s.URL, auth: "Bearer " + p.SandboxKey, client: &fasthttp.Client{
		MaxConnsPerHost: 4096, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		MaxIdemponentCallAttempts: 1,
	}}
}

// post makes req the partner's POST of body to path.
func (bs *benchServer) post(req *fasthttp.Request, path, contentType, body string) {
	req.SetRequestURI(bs.url + path)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType(contentType)
	req.Header.Set("Authorization", bs.auth)
	req.SetBodyString(body)
}

// parallel sends the request build makes from many goroutines, one per
// iteration; every answer must be a 200 containing want.
func (bs *benchServer) parallel(b *testing.B, build func(*fasthttp.Request), want string) {
	b.SetParallelism(benchClientsPerProc)
	b.RunParallel(func(pb *testing.PB) {
		bs.do(b, pb.Next, build, func(body []byte) bool { return strings.Contains(string(body), want) })
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// do sends the request build makes for as long as next says; every answer
// must be a 200 that ok accepts.
func (bs *benchServer) do(b *testing.B, next func() bool, build func(*fasthttp.Request), ok func([]byte) bool) {
	req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(res)
	for next() {
		req.Reset()
		build(req)
		if err := bs.client.Do(req, res); err != nil {
			b.Error(err)
			return
		}
		if res.StatusCode() != fasthttp.StatusOK || !ok(res.Body()) {
			b.Errorf("%d %s", res.StatusCode(), res.Body())
			return
		}
	}
}
