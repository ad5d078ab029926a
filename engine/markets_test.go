package engine_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// marketsJSON is a valid markets file: the default markets plus USDT→NGN
// and a new fiat currency, KES, with a pair from it.
const marketsJSON = `{
 "currencies": [
  {"code":"NGN","kind":"fiat","minorUnits":2},
  {"code":"GHS","kind":"fiat","minorUnits":2},
  {"code":"USDT","kind":"token","minorUnits":6,"chains":["TRON","ETHEREUM"],"defaultChain":"TRON"},
  {"code":"KES","kind":"fiat","minorUnits":2}],
 "pairs": [
  {"source":"NGN","destination":"USDT","minSourceAmount":"1000","maxSourceAmount":"500000000"},
  {"source":"USDT","destination":"NGN","minSourceAmount":"1","maxSourceAmount":"1000000"},
  {"source":"KES","destination":"USDT","minSourceAmount":"100.5"}],
 "collectionAccounts": {
  "NGN": {"accountName":"Collections NGN","accountNumber":"0123456789","bankName":"Bank NG"},
  "KES": {"accountName":"Collections KES","accountNumber":"5550001","bankName":"Bank KE"}},
 "depositKeys": {"USDT": {
   "TRON":"xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7usUDFdp6W1EGMcet8",
   "ETHEREUM":"xpub661MyMwAqRbcFW31YEwpkMuc5THy2PSt5bDMsktWQcFF8syAmRUapSCGu8ED9W6oDMSgv6Zz8idoc4a6mr8BDzTJY47LJhkJ8UB7WEGuduB"}}
}`

func TestParseMarketsConfigRefusals(t *testing.T) {
	valid := func() map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(marketsJSON), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	currencies := func(m map[string]any) []any { return m["currencies"].([]any) }
	pairs := func(m map[string]any) []any { return m["pairs"].([]any) }
	cases := []struct {
		name   string
		change func(m map[string]any)
		want   []string // each must appear in the error
	}{
		{"unknown currency in a pair", func(m map[string]any) {
			m["pairs"] = append(pairs(m), map[string]any{"source": "NGN", "destination": "XAF"})
		}, []string{`pairs[3] NGN/XAF: unknown currency "XAF"`}},
		{"a token without chains", func(m map[string]any) {
			delete(currencies(m)[2].(map[string]any), "chains")
			delete(currencies(m)[2].(map[string]any), "defaultChain")
		}, []string{`currencies[2] "USDT": a token needs chains`}},
		{"a fiat source without a collection account", func(m map[string]any) {
			delete(m["collectionAccounts"].(map[string]any), "KES")
		}, []string{"pairs[2] KES/USDT: fiat source KES has no collectionAccounts entry"}},
		{"a token source without a deposit key", func(m map[string]any) {
			delete(m["depositKeys"].(map[string]any)["USDT"].(map[string]any), "ETHEREUM")
		}, []string{"pairs[1] USDT/NGN: token source USDT has no depositKeys.USDT.ETHEREUM"}},
		{"an empty key", func(m map[string]any) {
			m["depositKeys"].(map[string]any)["USDT"].(map[string]any)["TRON"] = ""
		}, []string{"depositKeys.USDT.TRON: empty"}},
		{"a key for a chain the token lacks", func(m map[string]any) {
			m["depositKeys"].(map[string]any)["USDT"].(map[string]any)["BSC"] = "xpub-bsc"
		}, []string{"depositKeys.USDT.BSC: BSC is not one of USDT's chains"}},
		{"a malformed key", func(m map[string]any) {
			m["depositKeys"].(map[string]any)["USDT"].(map[string]any)["TRON"] = "xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7usUDFdp6W1EGMcet9"
		}, []string{"depositKeys.USDT.TRON: not an extended public key (BIP32)"}},
		{"a private key", func(m map[string]any) {
			m["depositKeys"].(map[string]any)["USDT"].(map[string]any)["TRON"] = "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi"
		}, []string{"depositKeys.USDT.TRON: a private extended key: configure the account's extended public key (xpub) only"}},
		{"a SOLANA key", func(m map[string]any) {
			c := currencies(m)[2].(map[string]any)
			c["chains"] = []any{"TRON", "ETHEREUM", "SOLANA"}
			m["depositKeys"].(map[string]any)["USDT"].(map[string]any)["SOLANA"] = "xpub661MyMwAqRbcFW31YEwpkMuc5THy2PSt5bDMsktWQcFF8syAmRUapSCGu8ED9W6oDMSgv6Zz8idoc4a6mr8BDzTJY47LJhkJ8UB7WEGuduB"
		}, []string{"depositKeys.USDT.SOLANA: SOLANA addresses are ed25519 keys"}},
		{"minor units out of range", func(m map[string]any) {
			currencies(m)[3].(map[string]any)["minorUnits"] = 19
		}, []string{`currencies[3] "KES": minorUnits must be an integer from 0 to 18`}},
		{"bad code and kind", func(m map[string]any) {
			m["currencies"] = append(currencies(m), map[string]any{"code": "usd", "kind": "fiat", "minorUnits": 2},
				map[string]any{"code": "EUR", "kind": "paper", "minorUnits": 2})
		}, []string{`currencies[4] "usd": code must be`, `currencies[5] "EUR": kind must be "fiat" or "token"`}},
		{"bounds", func(m map[string]any) {
			p := pairs(m)[0].(map[string]any)
			p["minSourceAmount"], p["maxSourceAmount"] = "1000.001", "lots"
			q := pairs(m)[1].(map[string]any)
			q["minSourceAmount"], q["maxSourceAmount"] = "5", "4"
		}, []string{"pairs[0] NGN/USDT: minSourceAmount 1000.001 has more than 2 decimal places",
			`pairs[0] NGN/USDT: maxSourceAmount "lots" is not a decimal number`,
			"pairs[1] USDT/NGN: minSourceAmount is above maxSourceAmount"}},
		{"a pair twice and a pair to itself", func(m map[string]any) {
			m["pairs"] = append(pairs(m), map[string]any{"source": "NGN", "destination": "USDT"},
				map[string]any{"source": "GHS", "destination": "GHS"})
		}, []string{"pairs[3] NGN/USDT: listed twice", "pairs[4] GHS/GHS: source and destination are the same"}},
		{"a default chain not among the chains", func(m map[string]any) {
			currencies(m)[2].(map[string]any)["defaultChain"] = "SOLANA"
		}, []string{`currencies[2] "USDT": defaultChain "SOLANA" is not one of its chains`}},
		{"unknown member", func(m map[string]any) { m["fees"] = 1 }, []string{`unknown field "fees"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := valid()
			tc.change(m)
			data, _ := json.Marshal(m)
			_, err := engine.ParseMarketsConfig(data)
			if err == nil {
				t.Fatalf("accepted")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\nlacks %q", err, want)
				}
			}
		})
	}
	if _, err := engine.ParseMarketsConfig([]byte(marketsJSON)); err != nil {
		t.Fatalf("the valid file: %v", err)
	}
}

func TestMarketsResolveAndRecord(t *testing.T) {
	cfg, err := engine.ParseMarketsConfig([]byte(marketsJSON))
	if err != nil {
		t.Fatal(err)
	}
	s := engine.NewState()
	client := &engine.ClientCreated{At: 1, Client: engine.ClientID{1}, Name: "a"}
	for i, m := range engine.Modes {
		for j, c := range engine.DefaultMarkets().CurrencyList() {
			client.Wallets = append(client.Wallets, engine.WalletAccount{Mode: m, Currency: c, Account: engine.AccountID{byte(10*i + j + 1)}})
		}
	}
	if err := s.Apply(client); err != nil {
		t.Fatal(err)
	}
	markets, err := cfg.Resolve(s.Markets)
	if err != nil {
		t.Fatal(err)
	}
	kes, ok := engine.ParseCurrency("KES")
	if !ok || kes.MinorUnits() != 2 || kes.IsToken() {
		t.Fatalf("KES not registered as fiat with 2 minor units: %v %v", kes, ok)
	}
	if got := markets.PairsText(); got != "NGN/USDT, USDT/NGN, KES/USDT" {
		t.Errorf("pairs: %q", got)
	}
	if got := markets.SourceCurrenciesText(); got != "NGN, USDT and KES" {
		t.Errorf("sources: %q", got)
	}
	if got := engine.DefaultMarkets().SourceCurrenciesText(); got != "NGN and GHS" {
		t.Errorf("default sources: %q (the spec's text)", got)
	}
	spec, ok := markets.Pair(engine.Pair{Source: kes, Destination: engine.CurrencyUSDT})
	if !ok || spec.MinSource != 100_50 || spec.MaxSource != engine.AmountMax {
		t.Errorf("KES/USDT bounds: %+v", spec)
	}
	if markets.Supported(engine.Pair{Source: engine.CurrencyGHS, Destination: engine.CurrencyUSDT}) {
		t.Errorf("GHS/USDT is not in the file but is supported")
	}
	if !markets.ChainAllowed(engine.CurrencyUSDT, engine.ChainEthereum) || markets.ChainAllowed(engine.CurrencyUSDT, engine.ChainBSC) {
		t.Errorf("USDT chains: %+v", markets.Currencies)
	}

	// Recorded: the event round-trips, and applying it opens the existing
	// client's KES wallets and the new pairs' books; GHS stays a currency.
	ev := &engine.MarketsSet{At: 2, Markets: markets}
	decoded, err := engine.DecodeEvent(engine.AppendEvent(nil, ev))
	if err != nil {
		t.Fatal(err)
	}
	if !decoded.(*engine.MarketsSet).Markets.Equal(markets) {
		t.Fatalf("MarketsSet does not round-trip")
	}
	if err := s.Apply(decoded); err != nil {
		t.Fatal(err)
	}
	for _, m := range engine.Modes {
		if _, ok := s.Treasuries[m].Wallet(client.Client, kes); !ok {
			t.Errorf("%s: no KES wallet for the client that existed before KES", m)
		}
		if s.Book(m, engine.Pair{Source: engine.CurrencyUSDT, Destination: engine.CurrencyNGN}) == nil {
			t.Errorf("%s: no USDT/NGN book", m)
		}
		if s.Book(m, engine.Pair{Source: engine.CurrencyGHS, Destination: engine.CurrencyUSDT}) == nil {
			t.Errorf("%s: the GHS/USDT book is gone (its pools and quotes run their course)", m)
		}
	}
	if _, ok := s.Markets.Currency(engine.CurrencyGHS); !ok {
		t.Errorf("GHS left the currencies in force: its wallets hold money")
	}
	again, err := engine.DecodeState(engine.EncodeState(s))
	if err != nil {
		t.Fatal(err)
	}
	if again.Hash() != s.Hash() || !again.Markets.Equal(s.Markets) {
		t.Fatalf("snapshot with markets does not round-trip")
	}

	// The same file again changes nothing; other minor units are refused.
	if same, err := cfg.Resolve(s.Markets); err != nil || !same.Equal(s.Markets) {
		t.Errorf("the same file again: %v, equal %v", err, same != nil && same.Equal(s.Markets))
	}
	changed := strings.Replace(marketsJSON, `{"code":"NGN","kind":"fiat","minorUnits":2}`, `{"code":"NGN","kind":"fiat","minorUnits":3}`, 1)
	cfg3, err := engine.ParseMarketsConfig([]byte(changed))
	if err != nil {
		t.Fatal(err)
	}
	_, err = cfg3.Resolve(s.Markets)
	if err == nil || !strings.Contains(err.Error(), "currency NGN has minorUnits 3 in the markets file, but the log records it with 2") {
		t.Errorf("minor units change: %v", err)
	}
}

func TestMarketsSetRefusedByReplay(t *testing.T) {
	s := engine.NewState()
	m := engine.DefaultMarkets()
	m.Currencies = m.Currencies[:2] // USDT left
	if err := s.Apply(&engine.MarketsSet{At: 1, Markets: m}); err == nil || !strings.Contains(err.Error(), "USDT left the markets") {
		t.Errorf("a currency leaving: %v", err)
	}
	m = engine.DefaultMarkets()
	m.Pairs[0].MinSource = 0
	if err := s.Apply(&engine.MarketsSet{At: 1, Markets: m}); err == nil {
		t.Errorf("a zero minimum applied")
	}
	// A record naming a currency index the process holds for another code
	// is corrupt.
	rec := engine.AppendEvent(nil, &engine.MarketsSet{At: 1, Markets: engine.DefaultMarkets()})
	i := bytes.Index(rec, []byte("GHS"))
	copy(rec[i:], "GHZ")
	if _, err := engine.DecodeEvent(rec); err == nil {
		t.Errorf("a MarketsSet renaming currency 2 decoded")
	}
}

// TestSandboxCollectionAccounts: a markets file's sandbox collection
// accounts are what sandbox quotes show (never the real one), recorded in
// the log (MarketsSetSandbox) and in snapshots; a sandbox account that
// names the real account number is refused; without one a sandbox quote
// shows SandboxCollectionDefault.
func TestSandboxCollectionAccounts(t *testing.T) {
	withSandbox := strings.Replace(marketsJSON, `"depositKeys"`,
		`"sandboxCollectionAccounts": {"NGN": {"accountName":"Play NGN","accountNumber":"9999999999","bankName":"Play Bank"}},
 "depositKeys"`, 1)
	cfg, err := engine.ParseMarketsConfig([]byte(withSandbox))
	if err != nil {
		t.Fatal(err)
	}
	m, err := cfg.Resolve(engine.DefaultMarkets())
	if err != nil {
		t.Fatal(err)
	}
	kes, _ := engine.ParseCurrency("KES")
	for _, tc := range []struct {
		mode     engine.Mode
		currency engine.Currency
		number   string
	}{
		{engine.ModeLive, engine.CurrencyNGN, "0123456789"},
		{engine.ModeSandbox, engine.CurrencyNGN, "9999999999"},
		{engine.ModeSandbox, kes, engine.SandboxCollectionDefault.AccountNumber},
		{engine.ModeLive, kes, "5550001"},
	} {
		if a, ok := m.CollectionAccount(tc.mode, tc.currency); !ok || a.AccountNumber != tc.number {
			t.Errorf("%s %s: %+v %v, want %s", tc.mode, tc.currency, a, ok, tc.number)
		}
	}
	if _, ok := m.CollectionAccount(engine.ModeSandbox, engine.CurrencyUSDT); ok {
		t.Error("a token has a sandbox collection account")
	}
	ev := &engine.MarketsSet{At: 1, Markets: m}
	if ev.Type() != engine.EventMarketsSetSandbox {
		t.Fatalf("type %s", ev.Type())
	}
	decoded, err := engine.DecodeEvent(engine.AppendEvent(nil, ev))
	if err != nil || !decoded.(*engine.MarketsSet).Markets.Equal(m) {
		t.Fatalf("round trip: %v", err)
	}
	s := engine.NewState()
	if err := s.Apply(ev); err != nil {
		t.Fatal(err)
	}
	back, err := engine.DecodeState(engine.EncodeState(s))
	if err != nil || !back.Markets.Equal(m) {
		t.Fatalf("snapshot round trip: %v", err)
	}
	real := strings.Replace(withSandbox, `"9999999999"`, `"0123456789"`, 1)
	if _, err := engine.ParseMarketsConfig([]byte(real)); err == nil || !strings.Contains(err.Error(), "never show a real account") {
		t.Errorf("a sandbox account with the real number: %v", err)
	}
}
