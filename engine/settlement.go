package engine

import "strings"

// SettlementProblem says why a settlement cannot pay out a quote's
// destination; SettlementLegal when it can. The rule lives here, once: the
// accept decision (Quote.Accept), replay's check (State) and the gateway's
// answers in each dialect all ask CheckSettlement.
type SettlementProblem uint8

const (
	SettlementLegal         SettlementProblem = iota
	SettlementMissing                         // no settlement at all
	SettlementBankForToken                    // a bank payout of a token destination
	SettlementChainForFiat                    // a chain payout of a fiat destination
	SettlementBadAddress                      // not an address of the quote's chain
	SettlementForeignWallet                   // not the owner's wallet in the destination currency and mode
)

var settlementProblemNames = [...]string{
	SettlementLegal:         "legal",
	SettlementMissing:       "no settlement",
	SettlementBankForToken:  "bank payout of a token",
	SettlementChainForFiat:  "chain payout of fiat",
	SettlementBadAddress:    "not an address of the quote's chain",
	SettlementForeignWallet: "not the owner's wallet in the destination currency",
}

func (p SettlementProblem) String() string {
	if int(p) < len(settlementProblemNames) {
		return settlementProblemNames[p]
	}
	return "unknown settlement problem"
}

// Result is the refusal a problem is answered with: a malformed settlement
// is a validation error, a wallet that is not the partner's own is
// INVALID_ACCOUNT (as for a JSON accept naming a foreign account).
func (p SettlementProblem) Result() Result {
	switch p {
	case SettlementLegal:
		return ResultOK
	case SettlementForeignWallet:
		return ResultInvalidAccount
	}
	return ResultValidation
}

// CheckSettlement decides whether st can pay out quote q's destination
// (spec §6 and §7): a wallet only if it is one of owned (the quote's
// client's wallets) in q's mode and destination currency; a bank payout
// only for a fiat destination; a chain payout only for a token destination,
// to an address of q's chain.
func CheckSettlement(q *Quote, st Settlement, owned []WalletAccount) SettlementProblem {
	destination := q.Pair.Destination
	switch st.Kind {
	case SettlementWallet:
		for _, w := range owned {
			if w.Mode == q.Mode && w.Currency == destination && w.Account == st.Account {
				return SettlementLegal
			}
		}
		return SettlementForeignWallet
	case SettlementBank:
		if destination.IsToken() {
			return SettlementBankForToken
		}
		return SettlementLegal
	case SettlementChain:
		if !destination.IsToken() {
			return SettlementChainForFiat
		}
		if !q.Chain.ValidAddress(st.Address) {
			return SettlementBadAddress
		}
		return SettlementLegal
	}
	return SettlementMissing
}

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// ValidAddress checks an address's shape for chain c: TRON "T" + 33 base58
// characters; ETHEREUM, BSC and POLYGON "0x" + 40 hex digits; SOLANA 32 to
// 44 base58 characters. Shape only: checksums are the payout rail's.
func (c Chain) ValidAddress(address string) bool {
	switch c {
	case ChainTron:
		return len(address) == 34 && address[0] == 'T' && isBase58(address[1:])
	case ChainEthereum, ChainBSC, ChainPolygon:
		return len(address) == 42 && address[:2] == "0x" && isHex(address[2:])
	case ChainSolana:
		return len(address) >= 32 && len(address) <= 44 && isBase58(address)
	}
	return false
}

// AddressRule says in words what ValidAddress accepts for c.
func (c Chain) AddressRule() string {
	switch c {
	case ChainTron:
		return "T followed by 33 base58 characters"
	case ChainEthereum, ChainBSC, ChainPolygon:
		return "0x followed by 40 hexadecimal digits"
	case ChainSolana:
		return "32 to 44 base58 characters"
	}
	return "no payout is possible on this chain"
}

func isBase58(s string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(base58Alphabet, s[i]) < 0 {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}
