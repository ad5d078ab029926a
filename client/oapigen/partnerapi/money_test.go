package partnerapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/client/oapigen/partnerapi"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

func TestMain(m *testing.M) {
	// The wire carries amounts and rates as JSON numbers (the package
	// documentation): set once, before the first request.
	decimal.MarshalJSONWithoutQuotes = true
	os.Exit(m.Run())
}

// TestMoneyRoundTrip drives a real service through the generated client:
// an amount with cents on a million, a quote split across two pools whose
// weighted rate has more significant digits than a float64 keeps. Every
// number of every answer, as the generated types decoded it, equals the
// number the service wrote, to the last place.
func TestMoneyRoundTrip(t *testing.T) {
	raw, err := os.ReadFile("../../../markets.example.json")
	if err != nil {
		t.Fatal(err)
	}
	markets, err := engine.ParseMarketsConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	s := gatewaytest.Start(t, gatewaytest.Options{Markets: markets})
	p := s.NewPartner(t, "generated")
	usdtNGN := engine.Pair{Source: engine.CurrencyUSDT, Destination: engine.CurrencyNGN}
	s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Desk A", "0.000625", "1000")
	s.NewPool(t, engine.ModeSandbox, usdtNGN, "Desk B", "1612.345678912345", "100000")
	s.NewPool(t, engine.ModeSandbox, usdtNGN, "Desk C", "1612.3", "10000000")
	c := partnerClient(t, s, p.SandboxKey)
	ctx := context.Background()
	create := func(source, destination, amount, rate string) *partnerapi.Quote {
		t.Helper()
		created, err := c.CreateQuoteWithResponse(ctx, nil, partnerapi.CreateQuoteRequest{
			SourceCurrency: source, DestinationCurrency: destination, Amount: decimal.RequireFromString(amount),
			Rate: decimal.RequireFromString(rate), AmountDirection: partnerapi.AmountDirection("source"),
		})
		if err != nil || created.JSON200 == nil {
			t.Fatalf("create: %v %d %s", err, created.StatusCode(), created.Body)
		}
		q := created.JSON200
		if !q.Amount.Equal(decimal.RequireFromString(amount)) {
			t.Fatalf("the service recorded %s, sent %s", q.Amount, amount)
		}
		sameNumbers(t, "create", created.Body, q)
		got, err := c.GetQuoteWithResponse(ctx, q.QuoteId)
		if err != nil || got.JSON200 == nil {
			t.Fatalf("get: %v %d %s", err, got.StatusCode(), got.Body)
		}
		sameNumbers(t, "get", got.Body, got.JSON200)
		if !got.JSON200.AllocationResult.WeightedAverageRate.Equal(q.AllocationResult.WeightedAverageRate) {
			t.Fatalf("get's weighted rate %s, create's %s", got.JSON200.AllocationResult.WeightedAverageRate, q.AllocationResult.WeightedAverageRate)
		}
		return q
	}

	// Cents on a million: a float32 sends 1000000.56.
	create("NGN", "USDT", "1000000.55", "0.0006")

	// Two pools, a pool rate of 16 significant digits and a weighted rate
	// of more than a float64 keeps.
	q := create("USDT", "NGN", "1000.123457", "1600")
	if n := len(q.AllocationResult.Allocations); n != 2 {
		t.Fatalf("%d allocations, want the two pools", n)
	}
	rate := q.AllocationResult.WeightedAverageRate.String()
	if f, _ := strconv.ParseFloat(rate, 64); strconv.FormatFloat(f, 'f', -1, 64) == rate {
		t.Fatalf("weighted rate %s survives a float64: the case no longer proves exactness", rate)
	}

	balances, err := c.ListBalancesWithResponse(ctx, &partnerapi.ListBalancesParams{XServiceSource: "oapigen-test"})
	if err != nil || balances.JSON200 == nil {
		t.Fatalf("balances: %v %d %s", err, balances.StatusCode(), balances.Body)
	}
	sameNumbers(t, "balances", balances.Body, balances.JSON200)
}

// sameNumbers compares every JSON number of raw (the service's answer)
// with the number at the same place once decoded is written back out: a
// member the generated types round, truncate or drop fails.
func sameNumbers(t *testing.T, what string, raw []byte, decoded any) {
	t.Helper()
	again, err := json.Marshal(decoded)
	if err != nil {
		t.Fatal(err)
	}
	want, have := numbers(t, raw), numbers(t, again)
	if len(want) == 0 {
		t.Fatalf("%s: no numbers in %s", what, raw)
	}
	paths := make([]string, 0, len(want))
	for path := range want {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		w := decimal.RequireFromString(want[path])
		h, ok := have[path]
		if !ok {
			t.Errorf("%s: %s = %s was lost by the generated types", what, path, want[path])
			continue
		}
		if !w.Equal(decimal.RequireFromString(h)) {
			t.Errorf("%s: %s = %s on the wire, %s through the generated types", what, path, want[path], h)
		}
	}
}

// numbers maps each JSON number in body to its path.
func numbers(t *testing.T, body []byte) map[string]string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	out := map[string]string{}
	var walk func(string, any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(path+"."+k, x)
			}
		case []any:
			for i, x := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), x)
			}
		case json.Number:
			out[path] = string(v)
		}
	}
	walk("$", v)
	return out
}
