// Command webhook-latency measures, against a running `oja serve`, how long
// a partner waits for a webhook: from a create's 200 to the quote.created
// delivery at a receiver on 127.0.0.1 (the server must run with
// --webhook-allow-private to deliver there).
//
//	go run ./cmd/oja serve --demo --webhook-allow-private --data /tmp/oja-hooks &
//	go run -C bench ./webhook-latency --base http://127.0.0.1:8080 --key "$(cat /tmp/oja-hooks/demo.key)"
//
// It registers one endpoint, creates --quotes quotes one at a time
// (--every apart) through the partner's Go client, waits for their
// deliveries and prints the p50, p90, p99 and maximum delay. The endpoint stays registered (delete it, or use a
// fresh data dir).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	ojaclient "github.com/oja-exchange/oja/client"
)

func main() {
	base := flag.String("base", "http://127.0.0.1:8080", "the server's public base URL")
	key := flag.String("key", "", "a sandbox API key (the demo's data/demo.key)")
	quotes := flag.Int("quotes", 300, "quotes to create")
	every := flag.Duration("every", 20*time.Millisecond, "pause between two creates")
	flag.Parse()
	if err := run(*base, *key, *quotes, *every); err != nil {
		fmt.Fprintln(os.Stderr, "webhook-latency:", err)
		os.Exit(1)
	}
}

func run(base, key string, quotes int, every time.Duration) error {
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			at := time.Now()
			var ev struct {
				Data struct {
					Quote struct {
						QuoteID string `json:"quoteId"`
					} `json:"quote"`
				} `json:"data"`
			}
			if json.NewDecoder(r.Body).Decode(&ev) == nil {
				mu.Lock()
				if _, seen := arrived[ev.Data.Quote.QuoteID]; !seen {
					arrived[ev.Data.Quote.QuoteID] = at
				}
				mu.Unlock()
			}
			w.WriteHeader(http.StatusNoContent)
		}))
	}()
	c, err := ojaclient.New(base, key)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if _, err := c.CreateWebhook(ctx, "http://"+ln.Addr().String()+"/oja", []string{"quote.created"}); err != nil {
		return err
	}
	req := ojaclient.CreateQuoteRequest{SourceCurrency: "NGN", DestinationCurrency: "USDT",
		Amount: decimal.NewFromInt(16000), Rate: decimal.RequireFromString("0.0006"), AmountDirection: ojaclient.DirectionSource}
	acked := make(map[string]time.Time, quotes)
	for range quotes {
		q, err := c.CreateQuote(ctx, req)
		if err != nil {
			return err
		}
		acked[q.QuoteID] = time.Now()
		time.Sleep(every)
	}
	deadline := time.Now().Add(30 * time.Second)
	var delays []time.Duration
	for {
		mu.Lock()
		delays = delays[:0]
		for id, at := range acked {
			if got, ok := arrived[id]; ok {
				delays = append(delays, got.Sub(at))
			}
		}
		mu.Unlock()
		if len(delays) == len(acked) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(delays) == 0 {
		return fmt.Errorf("no delivery arrived (is the server running with --webhook-allow-private?)")
	}
	slices.Sort(delays)
	at := func(p int) time.Duration {
		return delays[min(len(delays)*p/100, len(delays)-1)].Round(time.Millisecond)
	}
	fmt.Printf("delivered %d of %d: p50 %v  p90 %v  p99 %v  max %v\n", len(delays), len(acked), at(50), at(90), at(99),
		delays[len(delays)-1].Round(time.Millisecond))
	return nil
}
