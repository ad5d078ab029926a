package gateway

import (
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// TestConsoleMoney: the console writes money as operators read it.
func TestConsoleMoney(t *testing.T) {
	for _, tc := range []struct {
		amount engine.Amount
		c      engine.Currency
		want   string
	}{
		{150000000, engine.CurrencyNGN, "1,500,000.00 NGN"},
		{5, engine.CurrencyNGN, "0.05 NGN"},
		{-62500000, engine.CurrencyUSDT, "-62.500000 USDT"},
		{100000, engine.CurrencyGHS, "1,000.00 GHS"},
		{99999, engine.CurrencyGHS, "999.99 GHS"},
		{0, engine.CurrencyUSDT, "0.000000 USDT"},
	} {
		if got := consoleMoney(tc.amount, tc.c); got != tc.want {
			t.Errorf("consoleMoney(%d, %s) = %q, want %q", tc.amount, tc.c, got, tc.want)
		}
	}
}
