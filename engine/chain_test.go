package engine_test

import (
	"math/big"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// TestTokenAmount: a token value becomes the currency's minor units
// exactly — scaled down when the contract has more decimals, up when it
// has fewer — or not at all: never rounded.
func TestTokenAmount(t *testing.T) {
	for _, tc := range []struct {
		value    string
		decimals uint8
		want     engine.Amount
		reason   engine.UnappliedReason
	}{
		{"1000000", 6, 1_000_000, 0},              // 1 USDT, as USDT keeps it
		{"1000000000000000000", 18, 1_000_000, 0}, // 1 USDT of an 18-decimal contract (BSC's)
		{"1000000000000000001", 18, 0, engine.UnappliedPrecision},
		{"1000000000000", 18, 1, 0},                             // 0.000001: one unit
		{"1500000000000", 18, 0, engine.UnappliedPrecision},     // 0.0000015: a unit and a half
		{"5", 0, 5_000_000, 0},                                  // a 0-decimal token: 5 whole units
		{"0", 6, 0, engine.UnappliedTooLarge},                   // nothing moved
		{"9223372036854775808", 6, 0, engine.UnappliedTooLarge}, // over int64
		{"115792089237316195423570985008687907853269984665640564039457584007913129639935", 6, 0, engine.UnappliedTooLarge},
	} {
		v, _ := new(big.Int).SetString(tc.value, 10)
		got, reason := engine.TokenAmount(v, tc.decimals, engine.CurrencyUSDT)
		if got != tc.want || reason != tc.reason {
			t.Errorf("%s at %d decimals: %d (%v), want %d (%v)", tc.value, tc.decimals, got, reason, tc.want, tc.reason)
		}
	}
}

// TestConfirmedThrough: a block has n confirmations when n blocks,
// itself included, are at or below the head.
func TestConfirmedThrough(t *testing.T) {
	for _, tc := range []struct {
		head uint64
		n    uint32
		want uint64
		ok   bool
	}{
		{100, 1, 100, true}, {100, 12, 89, true}, {11, 12, 0, true}, {10, 12, 0, false}, {0, 1, 0, true}, {5, 0, 0, false},
	} {
		if got, ok := engine.ConfirmedThrough(tc.head, tc.n); got != tc.want || ok != tc.ok {
			t.Errorf("head %d, %d confirmations: %d %v, want %d %v", tc.head, tc.n, got, ok, tc.want, tc.ok)
		}
	}
}

// TestChainProgressed: a chain's cursor and unapplied deposits are in the
// state, a rewind moves the cursor back, a transfer read twice is listed
// once, and all of it survives a snapshot.
func TestChainProgressed(t *testing.T) {
	s := engine.NewState()
	dep := engine.ChainDeposit{Tx: "0x01", LogIndex: 1, Block: 9, Currency: engine.CurrencyUSDT, Value: "10000000000000000001",
		Decimals: 18, Reason: engine.UnappliedPrecision}
	for _, ev := range []*engine.ChainProgressed{
		{At: 1, Chain: engine.ChainEthereum, Cursor: engine.ChainCursor{Block: 10, Hash: [32]byte{10}}, Unapplied: []engine.ChainDeposit{dep}},
		{At: 2, Chain: engine.ChainEthereum, Cursor: engine.ChainCursor{Block: 8, Hash: [32]byte{8}}}, // a rewind
		{At: 3, Chain: engine.ChainEthereum, Cursor: engine.ChainCursor{Block: 12, Hash: [32]byte{12}}, Unapplied: []engine.ChainDeposit{dep}},
		{At: 4, Chain: engine.ChainTron, Cursor: engine.ChainCursor{Block: 3, Hash: [32]byte{3}}},
	} {
		if err := s.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	eth := s.Chains[engine.ChainEthereum]
	if eth.Cursor.Block != 12 || eth.Cursor.Hash != [32]byte{12} || len(eth.Unapplied) != 1 || s.Chains[engine.ChainTron].Cursor.Block != 3 {
		t.Fatalf("chains: %+v, %+v", eth, s.Chains[engine.ChainTron])
	}
	for _, bad := range []*engine.ChainProgressed{
		{At: 5, Chain: engine.ChainSolana},
		{At: 5, Chain: engine.ChainEthereum, Cursor: engine.ChainCursor{Block: 1}, Unapplied: []engine.ChainDeposit{dep}}, // a deposit past the cursor
	} {
		if err := s.Apply(bad); err == nil {
			t.Errorf("%+v applied", bad)
		}
	}
	back, err := engine.DecodeState(engine.EncodeState(s))
	if err != nil {
		t.Fatal(err)
	}
	if back.Hash() != s.Hash() || back.Chains[engine.ChainEthereum].Unapplied[0] != dep {
		t.Fatalf("after a snapshot: %+v", back.Chains)
	}
}
