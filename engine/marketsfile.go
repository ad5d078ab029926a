package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/engine/hd"
)

// MarketsConfig is a markets file (--markets, docs/operating.md, "Markets") that passed
// validation, by code: it is put in force by Resolve, against what the log
// recorded, once the log is replayed.
type MarketsConfig struct {
	currencies []currencyDef
	pairs      []pairDef
	collection map[string]BankAccount
	sandbox    map[string]BankAccount
	keys       map[string]map[Chain]string
	watch      map[Chain]ChainWatch
}

type currencyDef struct {
	code         string
	minor        int32
	token        bool
	chains       []Chain
	defaultChain Chain
}

type pairDef struct {
	source, destination string
	min, max            Amount
}

// marketsFile is the file's JSON.
type marketsFile struct {
	Currencies []struct {
		Code         string   `json:"code"`
		Kind         string   `json:"kind"`
		MinorUnits   *int     `json:"minorUnits"`
		Chains       []string `json:"chains"`
		DefaultChain string   `json:"defaultChain"`
	} `json:"currencies"`
	Pairs []struct {
		Source          string  `json:"source"`
		Destination     string  `json:"destination"`
		MinSourceAmount *string `json:"minSourceAmount"`
		MaxSourceAmount *string `json:"maxSourceAmount"`
	} `json:"pairs"`
	CollectionAccounts map[string]struct {
		AccountName   string `json:"accountName"`
		AccountNumber string `json:"accountNumber"`
		BankName      string `json:"bankName"`
	} `json:"collectionAccounts"`
	// SandboxCollectionAccounts are what sandbox quotes show instead;
	// SandboxCollectionDefault where a currency has none.
	SandboxCollectionAccounts map[string]struct {
		AccountName   string `json:"accountName"`
		AccountNumber string `json:"accountNumber"`
		BankName      string `json:"bankName"`
	} `json:"sandboxCollectionAccounts"`
	DepositKeys map[string]map[string]string `json:"depositKeys"`
	ChainWatch  map[string]chainWatchFile    `json:"chainWatch"`
}

// currencyCode is what a configured code may be: 2 to 10 upper-case
// letters or digits, starting with a letter.
var currencyCode = regexp.MustCompile(`^[A-Z][A-Z0-9]{1,9}$`)

// ParseMarketsConfig reads and validates a markets file. Every problem is
// named, in one error (errors.Join), each as "markets: <where>: <what>".
func ParseMarketsConfig(data []byte) (*MarketsConfig, error) {
	var f marketsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("markets: not a markets file: %w", err)
	}
	if dec.More() {
		return nil, errors.New("markets: not a markets file: more than one JSON value")
	}
	p := &marketsParser{f: &f, defs: map[string]*currencyDef{},
		cfg: &MarketsConfig{collection: map[string]BankAccount{}, keys: map[string]map[Chain]string{}}}
	p.currencies()
	p.pairs()
	p.collectionAccounts()
	p.sandboxCollectionAccounts()
	p.depositKeys()
	p.cfg.watch = parseChainWatch(f.ChainWatch, p.defs, p.problem)
	if len(p.problems) > 0 {
		return nil, errors.Join(p.problems...)
	}
	return p.cfg, nil
}

// marketsParser checks a markets file a section at a time, collecting
// every problem (so an operator sees them all at once) and building the
// configuration from what is sound.
type marketsParser struct {
	f        *marketsFile
	cfg      *MarketsConfig
	defs     map[string]*currencyDef // the currencies read so far, by code
	problems []error
}

func (p *marketsParser) problem(format string, args ...any) {
	p.problems = append(p.problems, fmt.Errorf("markets: "+format, args...))
}

// currencies reads the currencies: codes, kinds, minor units and chains.
func (p *marketsParser) currencies() {
	if len(p.f.Currencies) == 0 {
		p.problem("currencies: none")
	}
	for i, c := range p.f.Currencies {
		where := fmt.Sprintf("currencies[%d] %q", i, c.Code)
		d := currencyDef{code: c.Code}
		switch {
		case !currencyCode.MatchString(c.Code):
			p.problem("%s: code must be 2 to 10 upper-case letters or digits, starting with a letter", where)
			continue
		case p.defs[c.Code] != nil:
			p.problem("%s: listed twice", where)
			continue
		}
		switch c.Kind {
		case "fiat":
		case "token":
			d.token = true
		default:
			p.problem(`%s: kind must be "fiat" or "token"`, where)
		}
		if c.MinorUnits == nil || *c.MinorUnits < 0 || *c.MinorUnits > minorUnitsMax {
			p.problem("%s: minorUnits must be an integer from 0 to %d", where, minorUnitsMax)
		} else {
			d.minor = int32(*c.MinorUnits)
		}
		for _, name := range c.Chains {
			ch, ok := ParseChain(name)
			switch {
			case !ok:
				p.problem("%s: unknown chain %q (known: TRON, ETHEREUM, BSC, POLYGON, SOLANA)", where, name)
			case slices.Contains(d.chains, ch):
				p.problem("%s: chain %s listed twice", where, name)
			default:
				d.chains = append(d.chains, ch)
			}
		}
		switch {
		case d.token && len(c.Chains) == 0:
			p.problem("%s: a token needs chains", where)
		case !d.token && (len(c.Chains) > 0 || c.DefaultChain != ""):
			p.problem("%s: a fiat currency has no chains", where)
		case d.token && c.DefaultChain == "" && len(d.chains) > 0:
			d.defaultChain = d.chains[0]
		case d.token && c.DefaultChain != "":
			ch, _ := ParseChain(c.DefaultChain)
			if !slices.Contains(d.chains, ch) {
				p.problem("%s: defaultChain %q is not one of its chains", where, c.DefaultChain)
			}
			d.defaultChain = ch
		}
		p.cfg.currencies = append(p.cfg.currencies, d)
		p.defs[c.Code] = &p.cfg.currencies[len(p.cfg.currencies)-1]
	}
	if len(p.cfg.currencies) >= CurrenciesMax {
		p.problem("currencies: at most %d", CurrenciesMax-1)
	}
}

// pairs reads the pairs, their source-amount bounds, and checks that each
// source can be paid in (a collection account, or a deposit key per chain).
func (p *marketsParser) pairs() {
	if len(p.f.Pairs) == 0 {
		p.problem("pairs: none")
	}
	if len(p.f.Pairs) > PairsMax {
		p.problem("pairs: at most %d (the rate stream follows %d pairs in both modes)", PairsMax, PairsMax)
	}
	for i, pair := range p.f.Pairs {
		where := fmt.Sprintf("pairs[%d] %s/%s", i, pair.Source, pair.Destination)
		source, sok := p.defs[pair.Source]
		_, dok := p.defs[pair.Destination]
		if !sok {
			p.problem("%s: unknown currency %q", where, pair.Source)
		}
		if !dok {
			p.problem("%s: unknown currency %q", where, pair.Destination)
		}
		if !sok || !dok {
			continue
		}
		if pair.Source == pair.Destination {
			p.problem("%s: source and destination are the same", where)
			continue
		}
		if slices.ContainsFunc(p.cfg.pairs, func(d pairDef) bool { return d.source == pair.Source && d.destination == pair.Destination }) {
			p.problem("%s: listed twice", where)
			continue
		}
		d := pairDef{source: pair.Source, destination: pair.Destination, min: 1, max: AmountMax}
		bound := func(name string, text *string, into *Amount) {
			if text == nil {
				return
			}
			v, err := decimal.NewFromString(*text)
			if err != nil {
				p.problem("%s: %s %q is not a decimal number", where, name, *text)
				return
			}
			n, err := scaledInteger(v, source.minor, uint64(AmountMax))
			switch err {
			case errScaledRange:
				p.problem("%s: %s %s must be greater than 0 and at most %s", where, name, *text, AmountMax.Decimal(CurrencyNone).Shift(-source.minor))
			case errScaledPrecision:
				p.problem("%s: %s %s has more than %d decimal places", where, name, *text, source.minor)
			default:
				*into = Amount(n)
			}
		}
		bound("minSourceAmount", pair.MinSourceAmount, &d.min)
		bound("maxSourceAmount", pair.MaxSourceAmount, &d.max)
		if d.min > d.max {
			p.problem("%s: minSourceAmount is above maxSourceAmount", where)
		}
		switch {
		case !source.token && p.f.CollectionAccounts[pair.Source].AccountNumber == "":
			p.problem("%s: fiat source %s has no collectionAccounts entry", where, pair.Source)
		case source.token:
			for _, ch := range source.chains {
				if p.f.DepositKeys[pair.Source][ch.String()] == "" {
					p.problem("%s: token source %s has no depositKeys.%s.%s", where, pair.Source, pair.Source, ch)
				}
			}
		}
		p.cfg.pairs = append(p.cfg.pairs, d)
	}
}

// collectionAccounts reads the live bank accounts fiat is paid into.
func (p *marketsParser) collectionAccounts() {
	for _, code := range slices.Sorted(maps.Keys(p.f.CollectionAccounts)) {
		a := p.f.CollectionAccounts[code]
		where := fmt.Sprintf("collectionAccounts.%s", code)
		switch d := p.defs[code]; {
		case d == nil:
			p.problem("%s: unknown currency", where)
		case d.token:
			p.problem("%s: %s is a token: it is paid in on chain (depositKeys)", where, code)
		case a.AccountName == "" || a.AccountNumber == "" || a.BankName == "":
			p.problem("%s: accountName, accountNumber and bankName are all required", where)
		default:
			p.cfg.collection[code] = BankAccount{AccountName: a.AccountName, AccountNumber: a.AccountNumber, BankName: a.BankName}
		}
	}
}

// sandboxCollectionAccounts reads the accounts sandbox quotes show, never a
// real one.
func (p *marketsParser) sandboxCollectionAccounts() {
	for _, code := range slices.Sorted(maps.Keys(p.f.SandboxCollectionAccounts)) {
		a := p.f.SandboxCollectionAccounts[code]
		where := fmt.Sprintf("sandboxCollectionAccounts.%s", code)
		live, ok := p.f.CollectionAccounts[code]
		switch {
		case p.defs[code] == nil || p.defs[code].token || !ok:
			p.problem("%s: not a currency with a collectionAccounts entry", where)
		case a.AccountName == "" || a.AccountNumber == "" || a.BankName == "":
			p.problem("%s: accountName, accountNumber and bankName are all required", where)
		case a.AccountNumber == live.AccountNumber:
			p.problem("%s: the sandbox account number is the real collection account's: sandbox quotes must never show a real account", where)
		default:
			if p.cfg.sandbox == nil {
				p.cfg.sandbox = map[string]BankAccount{}
			}
			p.cfg.sandbox[code] = BankAccount{AccountName: a.AccountName, AccountNumber: a.AccountNumber, BankName: a.BankName}
		}
	}
}

// depositKeys reads the extended public keys deposit addresses derive from.
func (p *marketsParser) depositKeys() {
	for _, code := range slices.Sorted(maps.Keys(p.f.DepositKeys)) {
		where := fmt.Sprintf("depositKeys.%s", code)
		d := p.defs[code]
		switch {
		case d == nil:
			p.problem("%s: unknown currency", where)
			continue
		case !d.token:
			p.problem("%s: %s is fiat: it is paid in by bank transfer (collectionAccounts)", where, code)
			continue
		}
		keys := map[Chain]string{}
		for _, name := range slices.Sorted(maps.Keys(p.f.DepositKeys[code])) {
			key := p.f.DepositKeys[code][name]
			ch, ok := ParseChain(name)
			switch {
			case !ok || !slices.Contains(d.chains, ch):
				p.problem("%s.%s: %s is not one of %s's chains", where, name, name, code)
				continue
			case key == "":
				p.problem("%s.%s: empty", where, name)
				continue
			}
			if err := hd.CheckChain(name); err != nil {
				p.problem("%s.%s: %v", where, name, err)
				continue
			}
			if _, err := hd.ParseKey(key); err != nil {
				p.problem("%s.%s: %v", where, name, err)
				continue
			}
			keys[ch] = key
		}
		p.cfg.keys[code] = keys
	}
}

// DefaultMarketsConfig is the configuration of a start without --markets:
// DefaultMarkets by code.
func DefaultMarketsConfig() *MarketsConfig {
	m := DefaultMarkets()
	cfg := &MarketsConfig{collection: map[string]BankAccount{}, keys: map[string]map[Chain]string{}}
	for _, s := range m.Currencies {
		c := s.Currency
		cfg.currencies = append(cfg.currencies, currencyDef{code: c.String(), minor: c.MinorUnits(), token: c.IsToken(),
			chains: s.Chains, defaultChain: s.DefaultChain})
	}
	for _, p := range m.Pairs {
		cfg.pairs = append(cfg.pairs, pairDef{source: p.Pair.Source.String(), destination: p.Pair.Destination.String(),
			min: p.MinSource, max: p.MaxSource})
	}
	for c, a := range m.Collection {
		cfg.collection[c.String()] = a
	}
	return cfg
}

// WithoutBounds is cfg with every pair's bounds opened to one minor unit ..
// AmountMax: for tests and benchmarks of rules (dust, rounding, scarce
// liquidity) that bounds would refuse first.
func (cfg *MarketsConfig) WithoutBounds() *MarketsConfig {
	out := *cfg
	out.pairs = slices.Clone(cfg.pairs)
	for i := range out.pairs {
		out.pairs[i].min, out.pairs[i].max = 1, AmountMax
	}
	return &out
}

// ErrMarketsChange is a configuration the log's history refuses: a
// currency whose minor units or kind changed.
var ErrMarketsChange = errors.New("markets: refused")

// Resolve puts cfg in force after recorded (the markets the log recorded
// last): the configured currencies are registered (new ones at the next
// free index), every recorded currency stays (its wallets and ledger
// entries do), pairs, collection accounts and deposit keys are cfg's. A
// currency whose minor units or kind differ from the recorded ones is
// refused: every amount in the log is in the minor units it was written
// with.
func (cfg *MarketsConfig) Resolve(recorded *Markets) (*Markets, error) {
	var problems []error
	for _, d := range cfg.currencies {
		c, known := ParseCurrency(d.code)
		if !known {
			continue
		}
		if _, ok := recorded.Currency(c); !ok {
			continue
		}
		if c.MinorUnits() != d.minor {
			problems = append(problems, fmt.Errorf("%w: currency %s has minorUnits %d in the markets file, but the log records it with %d: "+
				"changing a currency's minor units would change every amount already logged", ErrMarketsChange, d.code, d.minor, c.MinorUnits()))
		}
		if c.IsToken() != d.token {
			problems = append(problems, fmt.Errorf("%w: currency %s is %s in the markets file, but the log records it as %s",
				ErrMarketsChange, d.code, kindName(d.token), kindName(c.IsToken())))
		}
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	m := &Markets{Collection: map[Currency]BankAccount{}, DepositKeys: map[Currency]map[Chain]string{}}
	m.Currencies = append(m.Currencies, recorded.Currencies...)
	for _, d := range cfg.currencies {
		c, err := RegisterCurrency(d.code, d.minor, d.token)
		if err != nil {
			return nil, err
		}
		spec := CurrencySpec{Currency: c, Chains: d.chains, DefaultChain: d.defaultChain}
		if i := slices.IndexFunc(m.Currencies, func(s CurrencySpec) bool { return s.Currency == c }); i >= 0 {
			m.Currencies[i] = spec
		} else {
			m.Currencies = append(m.Currencies, spec)
		}
	}
	slices.SortFunc(m.Currencies, func(a, b CurrencySpec) int { return int(a.Currency) - int(b.Currency) })
	for _, p := range cfg.pairs {
		s, _ := ParseCurrency(p.source)
		d, _ := ParseCurrency(p.destination)
		m.Pairs = append(m.Pairs, PairSpec{Pair: Pair{s, d}, MinSource: p.min, MaxSource: p.max})
	}
	for code, a := range cfg.collection {
		c, _ := ParseCurrency(code)
		m.Collection[c] = a
	}
	for code, keys := range cfg.keys {
		c, _ := ParseCurrency(code)
		m.DepositKeys[c] = maps.Clone(keys)
	}
	for code, a := range cfg.sandbox {
		c, _ := ParseCurrency(code)
		if m.SandboxCollection == nil {
			m.SandboxCollection = map[Currency]BankAccount{}
		}
		m.SandboxCollection[c] = a
	}
	return m, nil
}
