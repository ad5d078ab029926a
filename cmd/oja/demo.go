package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// demoClientName names the sandbox client --demo creates.
const demoClientName = "demo"

// demoPool is one seeded sandbox pool.
type demoPool struct {
	pair      engine.Pair
	name      string
	rate      string // destination units per source unit
	liquidity string // destination currency
}

// demoPools: five makers per pair around real market levels (1 USDT ≈
// 1,600 NGN ≈ 15 GHS; 1 GHS ≈ 107 NGN).
var demoPools = []demoPool{
	{engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT}, "Lagos OTC Desk", "0.000627", "250000"},
	{engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT}, "Ikoyi Digital Assets", "0.000626", "150000"},
	{engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT}, "Naija Stable Markets", "0.000625", "120000"},
	{engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT}, "Abuja Liquidity Partners", "0.000624", "80000"},
	{engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT}, "Kano Crypto Exchange", "0.000622", "50000"},
	{engine.Pair{Source: engine.CurrencyGHS, Destination: engine.CurrencyUSDT}, "Accra OTC Desk", "0.0668", "100000"},
	{engine.Pair{Source: engine.CurrencyGHS, Destination: engine.CurrencyUSDT}, "Kumasi Digital", "0.0667", "75000"},
	{engine.Pair{Source: engine.CurrencyGHS, Destination: engine.CurrencyUSDT}, "Tema Stable Markets", "0.0666", "60000"},
	{engine.Pair{Source: engine.CurrencyGHS, Destination: engine.CurrencyUSDT}, "Cape Coast Liquidity", "0.0665", "40000"},
	{engine.Pair{Source: engine.CurrencyGHS, Destination: engine.CurrencyUSDT}, "Tamale Crypto", "0.0663", "20000"},
	{engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyGHS}, "West Africa FX", "0.00937", "2000000"},
	{engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyGHS}, "Lagos-Accra Corridor", "0.00936", "1500000"},
	{engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyGHS}, "Ecowas Remit Desk", "0.00935", "1000000"},
	{engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyGHS}, "Gulf of Guinea FX", "0.00934", "800000"},
	{engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyGHS}, "Harmattan Exchange", "0.00932", "500000"},
}

// seedDemo creates, durably and through the same actors as any operator
// call, the sandbox demo client, its key (written to <data>/demo.key) and
// the demo pools — each only if missing, so a restart creates nothing new.
func seedDemo(sys *actors.System, data string, logger *slog.Logger) error {
	var client *engine.Client
	for _, c := range sys.Clients() {
		if c.Name == demoClientName {
			client = c
			break
		}
	}
	if client == nil {
		reply := sys.Admin(&actors.CreateClient{Name: demoClientName})
		if err := reply.Failure(); err != nil {
			return err
		}
		client = reply.Client
	}
	keyPath := filepath.Join(data, "demo.key")
	if b, err := os.ReadFile(keyPath); err != nil || strings.TrimSpace(string(b)) == "" {
		reply := sys.Admin(&actors.CreateKey{Client: client.ID, Mode: engine.ModeSandbox})
		if err := reply.Failure(); err != nil {
			return err
		}
		if err := writeFileAtomic(keyPath, []byte(reply.Secret+"\n"), 0o600); err != nil {
			return err
		}
		logger.Info("demo key written", "path", keyPath)
	}
	existing := map[string]bool{}
	for _, p := range sys.Pools(engine.ModeSandbox) {
		existing[p.Pair.String()+"/"+p.Name] = true
	}
	created := 0
	for _, d := range demoPools {
		if existing[d.pair.String()+"/"+d.name] {
			continue
		}
		rate, err := engine.RateFromDecimal(decimal.RequireFromString(d.rate))
		if err != nil {
			return err
		}
		liquidity, err := engine.AmountFromDecimal(decimal.RequireFromString(d.liquidity), d.pair.Destination)
		if err != nil {
			return err
		}
		reply := sys.Admin(&actors.CreatePool{Mode: engine.ModeSandbox, Name: d.name, Pair: d.pair, Rate: rate})
		if err := reply.Failure(); err != nil {
			return err
		}
		if err := sys.ChangePool(&actors.PoolCommand{Pool: reply.Pool.ID, Deposit: liquidity}).Failure(); err != nil {
			return fmt.Errorf("depositing into %s: %w", d.name, err)
		}
		created++
	}
	if created > 0 {
		logger.Info("demo pools created", "count", created)
	}
	return nil
}
