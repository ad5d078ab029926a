package engine

import (
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/oja-exchange/oja/engine/hd"
)

// ChainWatch is one chain's entry of the markets file's chainWatch (spec
// §16.2): where its deposits are read and when a transfer counts. It is
// the service's configuration, not the log's — its RPC URL may carry a
// provider's key — and is read by the chain watcher only.
type ChainWatch struct {
	RPC           string
	Confirmations uint32
	PollMillis    uint32
	// Tokens are the watched contracts by currency code: 20-byte account
	// addresses (TRON's too, as its JSON-RPC names them).
	Tokens     map[string][20]byte
	StartBlock uint64
}

// RPCHost is the RPC URL's host, what operators are shown (a provider's
// key lives in the URL's path or query, never shown).
func (w ChainWatch) RPCHost() string {
	u, err := url.Parse(w.RPC)
	if err != nil {
		return ""
	}
	return u.Host
}

// Chain watch bounds: confirmations, and the poll interval.
const (
	ChainConfirmationsMax  = 10_000
	ChainPollMillisMin     = 50
	ChainPollMillisMax     = 600_000
	ChainPollMillisDefault = 2_000
)

type chainWatchFile struct {
	RPC           string            `json:"rpc"`
	Confirmations *uint32           `json:"confirmations"`
	PollMillis    *uint32           `json:"pollMillis"`
	Tokens        map[string]string `json:"tokens"`
	StartBlock    uint64            `json:"startBlock"`
}

// ChainWatch is the configured chain watches, by chain (nil: none; a nil
// cfg has none).
func (cfg *MarketsConfig) ChainWatch() map[Chain]ChainWatch {
	if cfg == nil {
		return nil
	}
	return cfg.watch
}

func parseChainWatch(f map[string]chainWatchFile, defs map[string]*currencyDef, problem func(string, ...any)) map[Chain]ChainWatch {
	if len(f) == 0 {
		return nil
	}
	out := map[Chain]ChainWatch{}
	for _, name := range slices.Sorted(maps.Keys(f)) {
		e := f[name]
		where := "chainWatch." + name
		ch, ok := ParseChain(name)
		if !ok || ch == ChainSolana {
			problem("%s: not a chain Oja watches (ETHEREUM, BSC, POLYGON, TRON)", where)
			continue
		}
		w := ChainWatch{RPC: e.RPC, PollMillis: ChainPollMillisDefault, StartBlock: e.StartBlock, Tokens: map[string][20]byte{}}
		if u, err := url.Parse(e.RPC); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			problem("%s.rpc: an http or https URL is required", where)
		}
		if e.Confirmations == nil || *e.Confirmations == 0 || *e.Confirmations > ChainConfirmationsMax {
			problem("%s.confirmations: an integer from 1 to %d is required", where, ChainConfirmationsMax)
		} else {
			w.Confirmations = *e.Confirmations
		}
		if e.PollMillis != nil {
			if *e.PollMillis < ChainPollMillisMin || *e.PollMillis > ChainPollMillisMax {
				problem("%s.pollMillis: from %d to %d", where, ChainPollMillisMin, ChainPollMillisMax)
			}
			w.PollMillis = *e.PollMillis
		}
		if len(e.Tokens) == 0 {
			problem("%s.tokens: none: name each token's contract", where)
		}
		for _, code := range slices.Sorted(maps.Keys(e.Tokens)) {
			d := defs[code]
			if d == nil || !d.token || !slices.Contains(d.chains, ch) {
				problem("%s.tokens.%s: not a token on %s among the currencies", where, code, name)
				continue
			}
			contract, err := ContractAddress(ch, e.Tokens[code])
			if err != nil {
				problem("%s.tokens.%s: %v", where, code, err)
				continue
			}
			w.Tokens[code] = contract
		}
		out[ch] = w
	}
	return out
}

// ContractAddress reads a contract's address as the markets file gives
// it: 0x and 40 hex digits, or on TRON also its base58check form (T…).
func ContractAddress(ch Chain, text string) ([20]byte, error) {
	var out [20]byte
	if ch == ChainTron && strings.HasPrefix(text, "T") {
		return hd.TronAccount(text)
	}
	h, ok := strings.CutPrefix(text, "0x")
	if !ok || len(h) != 40 {
		return out, fmt.Errorf("%q is not 0x and 40 hex digits", text)
	}
	if _, err := hex.Decode(out[:], []byte(h)); err != nil {
		return out, fmt.Errorf("%q is not 0x and 40 hex digits", text)
	}
	return out, nil
}

// DepositAddress is the text of a chain's account address as pay-ins
// carry it (PayIn.Deposit): EIP-55 hex, or TRON's base58check.
func DepositAddress(ch Chain, account [20]byte) string {
	if ch == ChainTron {
		return hd.TronAddress(account)
	}
	return hd.ChecksumHex(account)
}
