package cluster

import "github.com/oja-exchange/oja/engine"

// testID is an id made of a kind byte and a number.
func testID(kind byte, n uint32) [16]byte {
	return [16]byte{kind, byte(n), byte(n >> 8), byte(n >> 16)}
}

// testMarket is a client with a wallet for each currency and mode, and a
// sandbox NGN/USDT pool, as events from t0; quote makes quotes against it.
type testMarket struct {
	t0     int64
	pair   engine.Pair
	client *engine.ClientCreated
	pool   *engine.PoolCreated
}

func newTestMarket() testMarket {
	m := testMarket{t0: 1_800_000_000_000, pair: engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT}}
	m.client = &engine.ClientCreated{At: m.t0, Client: testID(1, 0), Name: "ada"}
	for i, mode := range engine.Modes {
		for j, c := range engine.DefaultMarkets().CurrencyList() {
			m.client.Wallets = append(m.client.Wallets, engine.WalletAccount{Mode: mode, Currency: c, Account: testID(2, uint32(i*8+j))})
		}
	}
	m.pool = &engine.PoolCreated{At: m.t0, Pool: testID(3, 0), Mode: engine.ModeSandbox, Name: "p", Pair: m.pair,
		Rate: engine.RateFromUnits(625_000_000_000_000), LiquidityAccount: testID(4, 0), ProceedsAccount: testID(4, 1)}
	return m
}

// events are the client, the pool and a deposit into it.
func (m testMarket) events() []engine.Event {
	return []engine.Event{m.client, m.pool, &engine.PoolDeposited{At: m.t0, Pool: m.pool.Pool, Amount: 1_000_000_000}}
}

// quote is quote n, created at at, for 1 USDT.
func (m testMarket) quote(n uint32, at int64) *engine.QuoteCreated {
	return &engine.QuoteCreated{At: at, Quote: testID(5, n), Client: m.client.Client, Mode: engine.ModeSandbox, Pair: m.pair,
		Direction: engine.DirectionDestination, Amount: 1_000_000, ProposedRate: engine.RateFromUnits(1), Reference: engine.MustRef("OJA-X"),
		ExpiresAt: at + 300_000, Allocations: []engine.Allocation{{ID: testID(6, n), Pool: m.pool.Pool,
			PoolAccount: m.pool.LiquidityAccount, Rate: m.pool.Rate, Source: 160_000, Destination: 1_000_000}}}
}
