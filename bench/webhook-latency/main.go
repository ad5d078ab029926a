// Command webhook-latency measures, against a running `oja serve`, how long
// a partner waits for a webhook: from a create's 200 to the quote.created
// delivery at a receiver on 127.0.0.1 (the server must run with
// --webhook-allow-private to deliver there).
//
//	go run ./cmd/oja serve --demo --webhook-allow-private --data /tmp/oja-hooks &
//	go run -C bench ./webhook-latency --base http://127.0.0.1:8080 --key "$(cat /tmp/oja-hooks/demo.key)"
//
// It registers one endpoint, creates --quotes quotes one at a time
// (--every apart), waits for their deliveries and prints the p50, p90, p99
// and maximum delay. The endpoint stays registered (delete it, or use a
// fresh data dir).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"
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
	post := func(path, body string, want int) ([]byte, error) {
		req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewBufferString(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != want {
			err = fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, b)
		}
		return b, err
	}
	if _, err := post("/api/v1/partners/webhooks",
		fmt.Sprintf(`{"url":"http://%s/oja","events":["quote.created"]}`, ln.Addr()), http.StatusCreated); err != nil {
		return err
	}
	acked := make(map[string]time.Time, quotes)
	for range quotes {
		b, err := post("/api/v1/partners/marketplace/intent",
			`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":16000,"rate":0.0006,"amountDirection":"source"}`, http.StatusOK)
		if err != nil {
			return err
		}
		var q struct {
			QuoteID string `json:"quoteId"`
		}
		if err := json.Unmarshal(b, &q); err != nil {
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
