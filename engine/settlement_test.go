package engine_test

import (
	"strings"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

func TestChainValidAddress(t *testing.T) {
	for _, c := range []struct {
		chain   engine.Chain
		address string
		want    bool
	}{
		{engine.ChainTron, "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW", true},
		{engine.ChainTron, "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxM", false},   // 33 characters
		{engine.ChainTron, "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMWW", false}, // 35
		{engine.ChainTron, "AJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW", false},  // not T
		{engine.ChainTron, "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sx0W", false},  // 0 is not base58
		{engine.ChainTron, "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxOW", false},  // O
		{engine.ChainTron, "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxIW", false},  // I
		{engine.ChainTron, "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxlW", false},  // l
		{engine.ChainTron, "0x52908400098527886E0F7030069857D2E4169EE7", false},
		{engine.ChainEthereum, "0x52908400098527886E0F7030069857D2E4169EE7", true},
		{engine.ChainEthereum, "0x52908400098527886e0f7030069857d2e4169ee7", true},
		{engine.ChainEthereum, "0X52908400098527886E0F7030069857D2E4169EE7", false},
		{engine.ChainEthereum, "0x52908400098527886E0F7030069857D2E4169EE", false},
		{engine.ChainEthereum, "0x52908400098527886E0F7030069857D2E4169EEG", false},
		{engine.ChainEthereum, "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW", false},
		{engine.ChainBSC, "0x52908400098527886E0F7030069857D2E4169EE7", true},
		{engine.ChainPolygon, "0x52908400098527886E0F7030069857D2E4169EE7", true},
		{engine.ChainSolana, "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T", true}, // 44
		{engine.ChainSolana, strings.Repeat("2", 32), true},
		{engine.ChainSolana, strings.Repeat("2", 31), false},
		{engine.ChainSolana, strings.Repeat("2", 45), false},
		{engine.ChainSolana, "0x52908400098527886E0F7030069857D2E4169EE7", false},
		{engine.ChainNone, "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW", false},
		{engine.ChainTron, "", false},
	} {
		if got := c.chain.ValidAddress(c.address); got != c.want {
			t.Errorf("%s %q: got %v, want %v", c.chain, c.address, got, c.want)
		}
	}
}

// CheckSettlement is the one settlement rule (accept, replay, both
// dialects): each kind only where it can pay out the destination.
func TestCheckSettlement(t *testing.T) {
	own := engine.AccountID{1}
	ownGHS := engine.AccountID{2}
	ownLive := engine.AccountID{3}
	wallets := []engine.WalletAccount{
		{Mode: engine.ModeSandbox, Currency: engine.CurrencyUSDT, Account: own},
		{Mode: engine.ModeSandbox, Currency: engine.CurrencyGHS, Account: ownGHS},
		{Mode: engine.ModeLive, Currency: engine.CurrencyUSDT, Account: ownLive},
	}
	toUSDT := &engine.Quote{Mode: engine.ModeSandbox, Pair: engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT},
		Chain: engine.ChainTron}
	toGHS := &engine.Quote{Mode: engine.ModeSandbox, Pair: engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyGHS}}
	tron := "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW"
	bank := engine.Settlement{Kind: engine.SettlementBank, AccountName: "Ada", AccountNumber: "0123456789", BankCode: "058"}
	for _, c := range []struct {
		name string
		q    *engine.Quote
		st   engine.Settlement
		want engine.SettlementProblem
	}{
		{"own wallet", toUSDT, engine.Settlement{Kind: engine.SettlementWallet, Account: own}, engine.SettlementLegal},
		{"own wallet of another currency", toUSDT, engine.Settlement{Kind: engine.SettlementWallet, Account: ownGHS}, engine.SettlementForeignWallet},
		{"own wallet of another mode", toUSDT, engine.Settlement{Kind: engine.SettlementWallet, Account: ownLive}, engine.SettlementForeignWallet},
		{"someone else's wallet", toUSDT, engine.Settlement{Kind: engine.SettlementWallet, Account: engine.AccountID{9}}, engine.SettlementForeignWallet},
		{"chain to a token", toUSDT, engine.Settlement{Kind: engine.SettlementChain, Address: tron}, engine.SettlementLegal},
		{"chain, address of another chain", toUSDT, engine.Settlement{Kind: engine.SettlementChain,
			Address: "0x52908400098527886E0F7030069857D2E4169EE7"}, engine.SettlementBadAddress},
		{"chain to fiat", toGHS, engine.Settlement{Kind: engine.SettlementChain, Address: tron}, engine.SettlementChainForFiat},
		{"bank to fiat", toGHS, bank, engine.SettlementLegal},
		{"bank to a token", toUSDT, bank, engine.SettlementBankForToken},
		{"none", toGHS, engine.Settlement{}, engine.SettlementMissing},
	} {
		if got := engine.CheckSettlement(c.q, c.st, wallets); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
	if engine.SettlementForeignWallet.Result() != engine.ResultInvalidAccount || engine.SettlementBadAddress.Result() != engine.ResultValidation {
		t.Error("problems map to the wrong results")
	}
}
