package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Currency is a currency or token code known to the engine: an index into
// the process's currency table. The table only grows, and an entry never
// changes once made, so a Currency means the same code and minor units for
// the life of the process. The log records which index each code has
// (MarketsSet), and replay registers them in that order before any record
// uses them, so indexes mean the same across restarts too.
type Currency uint8

// The currencies of a default start (spec §1). Every process knows
// them at these indexes.
const (
	CurrencyNone Currency = iota
	CurrencyNGN
	CurrencyGHS
	CurrencyUSDT
)

// CurrenciesMax bounds the currency table: index 0 is CurrencyNone, so a
// process knows at most CurrenciesMax−1 currencies. Per-currency arrays in
// the ledger are this long.
const CurrenciesMax = 16

type currencyInfo struct {
	code  string
	minor int32 // decimal places of the minor unit
	token bool
}

// table is one version of the currency table: infos by index, and the
// known currencies in code order (what KnownCurrencies returns).
type table struct {
	infos  []currencyInfo
	byCode []Currency
}

var (
	// currencyTable is the table, copied on write: readers load it without
	// a lock (every Amount conversion reads minor units).
	currencyTable atomic.Pointer[table]
	currencyMu    sync.Mutex // serialises writers
)

func init() {
	storeTable([]currencyInfo{
		CurrencyNone: {code: ""},
		CurrencyNGN:  {code: "NGN", minor: 2},
		CurrencyGHS:  {code: "GHS", minor: 2},
		CurrencyUSDT: {code: "USDT", minor: 6, token: true},
	})
}

// storeTable publishes infos as the table. REQUIRES: currencyMu held, or
// init.
func storeTable(infos []currencyInfo) {
	byCode := make([]Currency, 0, len(infos)-1)
	for c := Currency(1); int(c) < len(infos); c++ {
		byCode = append(byCode, c)
	}
	slices.SortFunc(byCode, func(a, b Currency) int { return strings.Compare(infos[a].code, infos[b].code) })
	currencyTable.Store(&table{infos: infos, byCode: byCode})
}

func currencyOf(c Currency) currencyInfo {
	t := currencyTable.Load().infos
	if int(c) >= len(t) {
		return currencyInfo{code: "?"}
	}
	return t[c]
}

// KnownCurrencies lists every currency of the table in code order. The
// slice is shared: do not modify it.
func KnownCurrencies() []Currency { return currencyTable.Load().byCode }

// ErrCurrencyTable is a currency definition the process's table cannot take:
// a code known with other minor units or kind, an index held by another
// code, or a full table.
var ErrCurrencyTable = errors.New("engine: currency table")

// RegisterCurrency makes (code, minorUnits, token) a known currency and
// returns its index: the index it already has, or the next free one. A code
// already known with other minor units or another kind is refused.
func RegisterCurrency(code string, minorUnits int32, token bool) (Currency, error) {
	return registerCurrency(CurrencyNone, code, minorUnits, token)
}

// registerCurrency is RegisterCurrency at a required index (CurrencyNone:
// any): replay and snapshots register the log's currencies at the indexes
// the log recorded them at.
func registerCurrency(at Currency, code string, minorUnits int32, token bool) (Currency, error) {
	currencyMu.Lock()
	defer currencyMu.Unlock()
	t := currencyTable.Load().infos
	for c := Currency(1); int(c) < len(t); c++ {
		if t[c].code != code {
			continue
		}
		switch {
		case t[c].minor != minorUnits:
			return CurrencyNone, fmt.Errorf("%w: %s has %d minor units here, not %d", ErrCurrencyTable, code, t[c].minor, minorUnits)
		case t[c].token != token:
			return CurrencyNone, fmt.Errorf("%w: %s is %s here", ErrCurrencyTable, code, kindName(t[c].token))
		case at != CurrencyNone && at != c:
			return CurrencyNone, fmt.Errorf("%w: %s is currency %d here, not %d", ErrCurrencyTable, code, c, at)
		}
		return c, nil
	}
	next := Currency(len(t))
	switch {
	case at != CurrencyNone && at != next:
		if int(at) < len(t) {
			return CurrencyNone, fmt.Errorf("%w: currency %d is %s here, not %s", ErrCurrencyTable, at, t[at].code, code)
		}
		return CurrencyNone, fmt.Errorf("%w: %s at index %d leaves a gap after %d", ErrCurrencyTable, code, at, next-1)
	case len(t) >= CurrenciesMax:
		return CurrencyNone, fmt.Errorf("%w: at most %d currencies", ErrCurrencyTable, CurrenciesMax-1)
	}
	storeTable(append(slices.Clip(t), currencyInfo{code: code, minor: minorUnits, token: token}))
	return next, nil
}

func kindName(token bool) string {
	if token {
		return "token"
	}
	return "fiat"
}

func (c Currency) String() string { return currencyOf(c).code }

// Valid reports whether c is a known currency.
func (c Currency) Valid() bool { return c > CurrencyNone && int(c) < len(currencyTable.Load().infos) }

// MinorUnits is the number of decimal places of c's minor unit.
func (c Currency) MinorUnits() int32 { return currencyOf(c).minor }

// IsToken reports whether c is a blockchain token (USDT) rather than fiat.
func (c Currency) IsToken() bool { return currencyOf(c).token }

// ParseCurrency maps an upper-case code to its Currency. Codes are case
// sensitive on the wire: "ngn" is not NGN.
func ParseCurrency(code string) (Currency, bool) {
	t := currencyTable.Load().infos
	for c := Currency(1); int(c) < len(t); c++ {
		if t[c].code == code {
			return c, true
		}
	}
	return CurrencyNone, false
}

// Pair is a source→destination conversion.
type Pair struct {
	Source      Currency
	Destination Currency
}

func (p Pair) String() string { return p.Source.String() + "/" + p.Destination.String() }

// ComparePairs orders pairs by their currencies' indexes: a fixed order,
// whatever the markets (snapshots, hashes, the tools).
func ComparePairs(a, b Pair) int {
	return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.Destination, b.Destination))
}

// Valid reports whether both of p's currencies are known and differ. Which
// pairs take quotes is the markets' choice (Markets.Pair).
func (p Pair) Valid() bool {
	return p.Source.Valid() && p.Destination.Valid() && p.Source != p.Destination
}

// Mode is an operating mode. Live and sandbox state never mix.
type Mode uint8

const (
	ModeNone Mode = iota
	ModeLive
	ModeSandbox
)

// Modes lists both modes.
var Modes = []Mode{ModeLive, ModeSandbox}

func (m Mode) String() string {
	switch m {
	case ModeLive:
		return "live"
	case ModeSandbox:
		return "sandbox"
	}
	return ""
}

// ParseMode maps "live" or "sandbox" to its Mode.
func ParseMode(s string) (Mode, bool) {
	switch s {
	case "live":
		return ModeLive, true
	case "sandbox":
		return ModeSandbox, true
	}
	return ModeNone, false
}

// Direction says which currency a quote's amount is in.
type Direction uint8

const (
	DirectionNone        Direction = iota
	DirectionSource                // amount is in the source currency ("source", XML SELL)
	DirectionDestination           // amount is in the destination currency ("destination", XML BUY)
)

func (d Direction) String() string {
	switch d {
	case DirectionSource:
		return "source"
	case DirectionDestination:
		return "destination"
	}
	return ""
}
