package engine_test

import (
	"strings"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// chainWatchFile is markets.example.json's currencies with a chainWatch.
func chainWatchFile(watch string) []byte {
	return []byte(`{"currencies": [{"code":"NGN","kind":"fiat","minorUnits":2},
  {"code":"USDT","kind":"token","minorUnits":6,"chains":["TRON","ETHEREUM"]}],
 "pairs": [{"source":"NGN","destination":"USDT"}],
 "collectionAccounts": {"NGN": {"accountName":"a","accountNumber":"1","bankName":"b"}},
 "chainWatch": ` + watch + `}`)
}

// TestChainWatchConfig: docs/operating.md's example parses — an Ethereum
// contract in hex, TRON's in base58 — and every mistake is named.
func TestChainWatchConfig(t *testing.T) {
	cfg, err := engine.ParseMarketsConfig(chainWatchFile(`{
  "ETHEREUM": {"rpc": "https://mainnet.infura.io/v3/KEY", "confirmations": 12, "pollMillis": 12000,
               "tokens": {"USDT": "0xdAC17F958D2ee523a2206206994597C13D831ec7"}, "startBlock": 21000000},
  "TRON":     {"rpc": "https://api.trongrid.io/jsonrpc", "confirmations": 20, "pollMillis": 3000,
               "tokens": {"USDT": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.ChainWatch()
	eth, tron := w[engine.ChainEthereum], w[engine.ChainTron]
	if eth.Confirmations != 12 || eth.PollMillis != 12000 || eth.StartBlock != 21_000_000 || eth.RPCHost() != "mainnet.infura.io" ||
		engine.DepositAddress(engine.ChainEthereum, eth.Tokens["USDT"]) != "0xdAC17F958D2ee523a2206206994597C13D831ec7" {
		t.Errorf("ETHEREUM: %+v", eth)
	}
	if tron.Confirmations != 20 || engine.DepositAddress(engine.ChainTron, tron.Tokens["USDT"]) != "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t" {
		t.Errorf("TRON: %+v", tron)
	}
	for _, tc := range []struct{ watch, want string }{
		{`{"SOLANA": {"rpc":"http://x","confirmations":1,"tokens":{"USDT":"0x0000000000000000000000000000000000000001"}}}`, "not a chain Oja watches"},
		{`{"ETHEREUM": {"rpc":"ftp://x","confirmations":1,"tokens":{"USDT":"0x0000000000000000000000000000000000000001"}}}`, "rpc: an http or https URL"},
		{`{"ETHEREUM": {"rpc":"http://x","tokens":{"USDT":"0x0000000000000000000000000000000000000001"}}}`, "confirmations: an integer from 1"},
		{`{"ETHEREUM": {"rpc":"http://x","confirmations":1,"pollMillis":1,"tokens":{"USDT":"0x0000000000000000000000000000000000000001"}}}`, "pollMillis"},
		{`{"ETHEREUM": {"rpc":"http://x","confirmations":1,"tokens":{}}}`, "tokens: none"},
		{`{"ETHEREUM": {"rpc":"http://x","confirmations":1,"tokens":{"NGN":"0x0000000000000000000000000000000000000001"}}}`, "not a token on ETHEREUM"},
		{`{"ETHEREUM": {"rpc":"http://x","confirmations":1,"tokens":{"USDT":"0x1234"}}}`, "not 0x and 40 hex digits"},
		{`{"TRON": {"rpc":"http://x","confirmations":1,"tokens":{"USDT":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6x"}}}`, "tokens.USDT"},
	} {
		_, err := engine.ParseMarketsConfig(chainWatchFile(tc.watch))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.watch, err, tc.want)
		}
	}
}
