package engine

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Markets are the currencies, pairs, collection accounts and deposit keys
// in force (spec §1: they come from configuration). A Markets value is
// immutable once built: the actors and the gateway share one.
//
// The markets in force are recorded in the log (MarketsSet), so replay and
// the offline tools know every currency's index and minor units as the
// records were written. Across restarts currencies are only ever added (a
// currency that has wallets and ledger entries cannot disappear); pairs
// may come and go: a pair no longer in force takes no new quote or pool,
// while its open quotes and its pools run their course on the book that
// stays.
type Markets struct {
	// Currencies in force, in index order; every currency ever recorded.
	Currencies []CurrencySpec
	// Pairs that take quotes, in configured order.
	Pairs []PairSpec
	// Collection is the marketplace's bank account per fiat source.
	Collection map[Currency]BankAccount
	// SandboxCollection is what sandbox quotes show instead
	// (CollectionAccount): plainly not a real account, so that no real
	// transfer is made to pay a sandbox quote. Absent currencies show
	// SandboxCollectionDefault.
	SandboxCollection map[Currency]BankAccount
	// DepositKeys are the extended public keys deposit addresses of a token
	// source are derived from, per chain.
	DepositKeys map[Currency]map[Chain]string
}

// CurrencySpec is one currency in force.
type CurrencySpec struct {
	Currency     Currency
	Chains       []Chain // a token's networks; nil for fiat
	DefaultChain Chain   // a token's network when a request names none
}

// PairSpec is one pair in force and the bounds of a quote's total source
// amount on it (AMOUNT_OUT_OF_RANGE outside them).
type PairSpec struct {
	Pair                 Pair
	MinSource, MaxSource Amount
}

// Within reports whether a quote's total source amount is within s's
// bounds.
func (s PairSpec) Within(source Amount) bool { return source >= s.MinSource && source <= s.MaxSource }

// BankAccount is the marketplace's collection account for one fiat
// currency: the bankPayIn instructions a partner pays into.
type BankAccount struct {
	AccountName   string
	AccountNumber string
	BankName      string
}

// Default bounds of the default pairs, in source minor units (docs/operating.md,
// "Markets"): about 0.60 USD at the low end — below it a quote's
// destination is a few cents that the rounding in the pool's favour
// (spec §1) eats a visible share of, and no bank transfer or chain fee
// is worth paying for — and about 300,000 USD at the high end, one OTC
// ticket; larger trades are split by the desk.
const (
	defaultMinNGN Amount = 1_000_00       // 1,000 NGN
	defaultMaxNGN Amount = 500_000_000_00 // 500,000,000 NGN
	defaultMinGHS Amount = 10_00          // 10 GHS
	defaultMaxGHS Amount = 5_000_000_00   // 5,000,000 GHS
)

// DefaultMarkets are the markets of a start without --markets: NGN, GHS and
// USDT (on every chain, TRON by default) and the spec's three pairs.
func DefaultMarkets() *Markets {
	return &Markets{
		Currencies: []CurrencySpec{
			{Currency: CurrencyNGN},
			{Currency: CurrencyGHS},
			{Currency: CurrencyUSDT, Chains: []Chain{ChainTron, ChainEthereum, ChainBSC, ChainPolygon, ChainSolana},
				DefaultChain: ChainTron},
		},
		Pairs: []PairSpec{
			{Pair: Pair{CurrencyNGN, CurrencyUSDT}, MinSource: defaultMinNGN, MaxSource: defaultMaxNGN},
			{Pair: Pair{CurrencyGHS, CurrencyUSDT}, MinSource: defaultMinGHS, MaxSource: defaultMaxGHS},
			{Pair: Pair{CurrencyNGN, CurrencyGHS}, MinSource: defaultMinNGN, MaxSource: defaultMaxNGN},
		},
		Collection: map[Currency]BankAccount{
			CurrencyNGN: {AccountName: "Oja Marketplace Collections NGN", AccountNumber: "0123456789", BankName: "Oja Settlement Bank Nigeria"},
			CurrencyGHS: {AccountName: "Oja Marketplace Collections GHS", AccountNumber: "1002003004", BankName: "Oja Settlement Bank Ghana"},
		},
	}
}

// SandboxCollectionDefault is the collection account a sandbox quote
// shows where the markets name none: plainly not a real account.
var SandboxCollectionDefault = BankAccount{AccountName: "Oja Sandbox — not a real account",
	AccountNumber: "0000000000", BankName: "Oja Sandbox (no real bank)"}

// CollectionAccount is the account a quote of mode m with fiat source c
// is paid into: the collection account live, a sandbox one in sandbox
// (Modes do not mix: a real transfer never pays a sandbox quote). ok is
// false where c has no collection account.
func (m *Markets) CollectionAccount(mode Mode, c Currency) (BankAccount, bool) {
	a, ok := m.Collection[c]
	if !ok || mode != ModeSandbox {
		return a, ok
	}
	if s, ok := m.SandboxCollection[c]; ok {
		return s, true
	}
	return SandboxCollectionDefault, true
}

// Pair returns the spec of p when p takes quotes.
func (m *Markets) Pair(p Pair) (PairSpec, bool) {
	for _, s := range m.Pairs {
		if s.Pair == p {
			return s, true
		}
	}
	return PairSpec{}, false
}

// Supported reports whether p takes quotes.
func (m *Markets) Supported(p Pair) bool {
	_, ok := m.Pair(p)
	return ok
}

// PairList is m's pairs, in order.
func (m *Markets) PairList() []Pair {
	out := make([]Pair, len(m.Pairs))
	for i, s := range m.Pairs {
		out[i] = s.Pair
	}
	return out
}

// PairIndex is p's index in m.Pairs, −1 when it takes no quotes.
func (m *Markets) PairIndex(p Pair) int {
	return slices.IndexFunc(m.Pairs, func(s PairSpec) bool { return s.Pair == p })
}

// ComparePairs orders pairs as listings and the tools show them: the pairs
// in force in m's order, then the others (no longer in force) in currency
// order.
func (m *Markets) ComparePairs(a, b Pair) int {
	ia, ib := m.PairIndex(a), m.PairIndex(b)
	switch {
	case ia < 0 && ib < 0:
		return ComparePairs(a, b)
	case ia < 0:
		return 1
	case ib < 0:
		return -1
	}
	return ia - ib
}

// IsSource reports whether c is the source of a pair in force.
func (m *Markets) IsSource(c Currency) bool {
	return slices.ContainsFunc(m.Pairs, func(s PairSpec) bool { return s.Pair.Source == c })
}

// Currency returns the spec of c when c is in force.
func (m *Markets) Currency(c Currency) (CurrencySpec, bool) {
	i := slices.IndexFunc(m.Currencies, func(s CurrencySpec) bool { return s.Currency == c })
	if i < 0 {
		return CurrencySpec{}, false
	}
	return m.Currencies[i], true
}

// CurrencyList is every currency in force, in code order (balances, the
// ledger report).
// CurrencyByCode finds a currency of the markets by its code.
func (m *Markets) CurrencyByCode(code string) (Currency, bool) {
	for _, s := range m.Currencies {
		if s.Currency.String() == code {
			return s.Currency, true
		}
	}
	return CurrencyNone, false
}

func (m *Markets) CurrencyList() []Currency {
	out := make([]Currency, len(m.Currencies))
	for i, s := range m.Currencies {
		out[i] = s.Currency
	}
	slices.SortFunc(out, func(a, b Currency) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// DefaultChain is the network c settles on when a request names none:
// ChainNone for fiat.
func (m *Markets) DefaultChain(c Currency) Chain {
	s, _ := m.Currency(c)
	return s.DefaultChain
}

// ChainAllowed reports whether token c settles on chain.
func (m *Markets) ChainAllowed(c Currency, chain Chain) bool {
	s, _ := m.Currency(c)
	return slices.Contains(s.Chains, chain)
}

// SourceCurrenciesText names the source currencies in force the way
// INVALID_CURRENCY's message does: "NGN and GHS", "NGN, GHS and USDT".
func (m *Markets) SourceCurrenciesText() string {
	var codes []string
	for _, s := range m.Pairs {
		if code := s.Pair.Source.String(); !slices.Contains(codes, code) {
			codes = append(codes, code)
		}
	}
	switch len(codes) {
	case 0:
		return "none"
	case 1:
		return codes[0]
	}
	return strings.Join(codes[:len(codes)-1], ", ") + " and " + codes[len(codes)-1]
}

// PairsText names the pairs in force the way INVALID_CURRENCY_PAIR's
// message does: "NGN/USDT, GHS/USDT, NGN/GHS".
func (m *Markets) PairsText() string {
	names := make([]string, len(m.Pairs))
	for i, s := range m.Pairs {
		names[i] = s.Pair.String()
	}
	return strings.Join(names, ", ")
}

// Equal reports whether m and o say the same: what a restart compares to
// decide whether the log needs a new MarketsSet.
func (m *Markets) Equal(o *Markets) bool {
	var a, b encoder
	a.markets(m)
	a.sandboxCollection(m)
	b.markets(o)
	b.sandboxCollection(o)
	return bytes.Equal(a.buf, b.buf)
}

// MarketsSet records the markets in force from At on. Replay registers its
// currencies at the indexes it names before any later record uses them.
type MarketsSet struct {
	At      int64
	Markets *Markets
}

func (ev *MarketsSet) Type() EventType {
	if len(ev.Markets.SandboxCollection) > 0 {
		return EventMarketsSetSandbox
	}
	return EventMarketsSet
}
func (ev *MarketsSet) Time() int64 { return ev.At }

// markets encodes m with every map in key order, so equal markets encode to
// equal bytes. A currency carries its code, minor units and kind: decoding
// registers it.
func (e *encoder) markets(m *Markets) {
	e.uvarint(uint64(len(m.Currencies)))
	for _, s := range m.Currencies {
		c := s.Currency
		e.byte1(uint8(c))
		e.str(c.String())
		e.byte1(uint8(c.MinorUnits()))
		e.boolean(c.IsToken())
		e.uvarint(uint64(len(s.Chains)))
		for _, ch := range s.Chains {
			e.byte1(uint8(ch))
		}
		e.byte1(uint8(s.DefaultChain))
	}
	e.uvarint(uint64(len(m.Pairs)))
	for _, s := range m.Pairs {
		e.pair(s.Pair)
		e.amount(s.MinSource)
		e.amount(s.MaxSource)
	}
	collection := slices.Sorted(maps.Keys(m.Collection))
	e.uvarint(uint64(len(collection)))
	for _, c := range collection {
		a := m.Collection[c]
		e.byte1(uint8(c))
		e.str(a.AccountName)
		e.str(a.AccountNumber)
		e.str(a.BankName)
	}
	keyed := slices.Sorted(maps.Keys(m.DepositKeys))
	e.uvarint(uint64(len(keyed)))
	for _, c := range keyed {
		keys := m.DepositKeys[c]
		chains := slices.Sorted(maps.Keys(keys))
		e.byte1(uint8(c))
		e.uvarint(uint64(len(chains)))
		for _, ch := range chains {
			e.byte1(uint8(ch))
			e.str(keys[ch])
		}
	}
}

// sandboxCollection writes m's sandbox collection accounts (a MarketsSet
// that has them; snapshot version 10).
func (e *encoder) sandboxCollection(m *Markets) {
	keys := slices.Sorted(maps.Keys(m.SandboxCollection))
	e.uvarint(uint64(len(keys)))
	for _, c := range keys {
		a := m.SandboxCollection[c]
		e.byte1(uint8(c))
		e.str(a.AccountName)
		e.str(a.AccountNumber)
		e.str(a.BankName)
	}
}

func (d *decoder) sandboxCollection(m *Markets) {
	n := d.uvarint()
	if n > marketsCountMax {
		d.fail()
		return
	}
	for ; n > 0 && d.err == nil; n-- {
		c := d.currency()
		if m.SandboxCollection == nil {
			m.SandboxCollection = map[Currency]BankAccount{}
		}
		m.SandboxCollection[c] = BankAccount{AccountName: d.str(), AccountNumber: d.str(), BankName: d.str()}
	}
}

// marketsCountMax bounds every count of an encoded Markets.
const marketsCountMax = 256

// markets decodes what encoder.markets wrote, registering its currencies
// at their recorded indexes (a conflict with the process's table is a
// corrupt or foreign record).
func (d *decoder) markets() *Markets {
	count := func() int {
		n := d.uvarint()
		if n > marketsCountMax {
			d.fail()
			return 0
		}
		return int(n)
	}
	m := &Markets{Collection: map[Currency]BankAccount{}, DepositKeys: map[Currency]map[Chain]string{}}
	for n := count(); n > 0 && d.err == nil; n-- {
		at, code, minor, token := Currency(d.byte1()), d.str(), int32(d.byte1()), d.boolean()
		s := CurrencySpec{}
		for k := count(); k > 0 && d.err == nil; k-- {
			s.Chains = append(s.Chains, d.chain())
		}
		s.DefaultChain = Chain(d.byte1())
		if d.err != nil {
			break
		}
		c, err := registerCurrency(at, code, minor, token)
		if err != nil || at == CurrencyNone || minor > minorUnitsMax {
			d.fail()
			break
		}
		s.Currency = c
		m.Currencies = append(m.Currencies, s)
	}
	for n := count(); n > 0 && d.err == nil; n-- {
		m.Pairs = append(m.Pairs, PairSpec{Pair: d.pair(), MinSource: d.amount(), MaxSource: d.amount()})
	}
	for n := count(); n > 0 && d.err == nil; n-- {
		c := d.currency()
		m.Collection[c] = BankAccount{AccountName: d.str(), AccountNumber: d.str(), BankName: d.str()}
	}
	for n := count(); n > 0 && d.err == nil; n-- {
		c := d.currency()
		keys := map[Chain]string{}
		for k := count(); k > 0 && d.err == nil; k-- {
			ch := d.chain()
			keys[ch] = d.str()
		}
		m.DepositKeys[c] = keys
	}
	return m
}

// currency reads a currency; one the process does not know fails the
// decode and reads as CurrencyNone, so that what the caller indexes with
// it before it looks at the error is in range.
func (d *decoder) currency() Currency {
	c := Currency(d.byte1())
	if !c.Valid() {
		d.fail()
		return CurrencyNone
	}
	return c
}

func (d *decoder) chain() Chain {
	ch := Chain(d.byte1())
	if ch == ChainNone || ch >= chainEnd {
		d.fail()
	}
	return ch
}

// PairsMax bounds the pairs in force: the rate stream tracks 64 (mode,
// pair) books.
const PairsMax = 32

// minorUnitsMax bounds a currency's decimal places: amounts are int64 minor
// units, and 10^18 minor units of a currency is still a whole unit.
const minorUnitsMax = 18

// checkMarkets is replay's check of a MarketsSet: every currency a pair,
// an account or a key names is in force; a pair's bounds are sane; no
// currency the state knows has left.
func (s *State) checkMarkets(ev *MarketsSet) error {
	m := ev.Markets
	if m == nil {
		return fmt.Errorf("no markets")
	}
	for _, old := range s.Markets.Currencies {
		if _, ok := m.Currency(old.Currency); !ok {
			return fmt.Errorf("currency %s left the markets", old.Currency)
		}
	}
	for _, p := range m.Pairs {
		_, sok := m.Currency(p.Pair.Source)
		_, dok := m.Currency(p.Pair.Destination)
		if !sok || !dok || !p.Pair.Valid() {
			return fmt.Errorf("pair %s names a currency not in force", p.Pair)
		}
		if p.MinSource <= 0 || p.MinSource > p.MaxSource || p.MaxSource > AmountMax {
			return fmt.Errorf("pair %s: bounds %d..%d", p.Pair, p.MinSource, p.MaxSource)
		}
	}
	return nil
}

// applyMarkets puts ev's markets in force: books for pairs new to the
// state, and for every client a wallet, in each mode, of each currency new
// to it. A wallet opened here has an id derived from (client, mode,
// currency), so replay opens the same one.
func (s *State) applyMarkets(ev *MarketsSet) {
	s.Markets = ev.Markets
	for _, mode := range Modes {
		for _, p := range ev.Markets.Pairs {
			s.ensureBook(BookKey{mode, p.Pair})
		}
	}
	for _, id := range sortedKeys(s.Clients) {
		client := s.Clients[id]
		for _, mode := range Modes {
			t := s.Treasuries[mode]
			for _, spec := range ev.Markets.Currencies {
				if _, ok := t.Wallet(id, spec.Currency); ok {
					continue
				}
				w := WalletAccount{Mode: mode, Currency: spec.Currency, Account: derivedWalletID(id, mode, spec.Currency)}
				client.Wallets = append(client.Wallets, w)
				t.openWallet(id, w)
			}
		}
	}
}

// ensureBook makes (mode, pair)'s book and ticker when the state has none.
func (s *State) ensureBook(key BookKey) {
	if _, ok := s.Books[key]; ok {
		return
	}
	s.Books[key] = NewBook(key.Pair)
	s.Tickers[key] = &Ticker{}
}

// derivedWalletID is the id of the wallet a MarketsSet opens for a client
// that existed before its currency: SHA-256 of the three, as a version 8
// (custom) UUID.
func derivedWalletID(client ClientID, mode Mode, c Currency) AccountID {
	h := sha256.New()
	h.Write([]byte("oja wallet\x00"))
	h.Write(client[:])
	h.Write([]byte{byte(mode)})
	h.Write([]byte(c.String()))
	var id AccountID
	copy(id[:], h.Sum(nil))
	id[6] = id[6]&0x0f | 0x80
	id[8] = id[8]&0x3f | 0x80
	return id
}
