package engine

// Currency is a currency or token code known to the engine.
type Currency uint8

// The currencies of a default start (contract §1).
const (
	CurrencyNone Currency = iota
	CurrencyNGN
	CurrencyGHS
	CurrencyUSDT
	currencyCount
)

type currencyInfo struct {
	code  string
	minor int32 // decimal places of the minor unit
	token bool
}

var currencies = [currencyCount]currencyInfo{
	CurrencyNone: {code: ""},
	CurrencyNGN:  {code: "NGN", minor: 2},
	CurrencyGHS:  {code: "GHS", minor: 2},
	CurrencyUSDT: {code: "USDT", minor: 6, token: true},
}

// Currencies lists every known currency in code order.
var Currencies = []Currency{CurrencyGHS, CurrencyNGN, CurrencyUSDT}

func (c Currency) String() string {
	if c >= currencyCount {
		return "?"
	}
	return currencies[c].code
}

// Valid reports whether c is a known currency.
func (c Currency) Valid() bool { return c > CurrencyNone && c < currencyCount }

// MinorUnits is the number of decimal places of c's minor unit.
func (c Currency) MinorUnits() int32 { return currencies[c].minor }

// IsToken reports whether c is a blockchain token (USDT) rather than fiat.
func (c Currency) IsToken() bool { return currencies[c].token }

// ParseCurrency maps an upper-case code to its Currency. Codes are case
// sensitive on the wire: "ngn" is not NGN.
func ParseCurrency(code string) (Currency, bool) {
	for c := CurrencyNone + 1; c < currencyCount; c++ {
		if currencies[c].code == code {
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

// Pairs are the supported pairs in the contract's order (§1).
var Pairs = []Pair{
	{CurrencyNGN, CurrencyUSDT},
	{CurrencyGHS, CurrencyUSDT},
	{CurrencyNGN, CurrencyGHS},
}

// SourceCurrencies are the supported source currencies.
var SourceCurrencies = []Currency{CurrencyNGN, CurrencyGHS}

// Supported reports whether p is a supported pair.
func (p Pair) Supported() bool {
	for _, q := range Pairs {
		if q == p {
			return true
		}
	}
	return false
}

// IsSourceCurrency reports whether c may be a quote's source.
func IsSourceCurrency(c Currency) bool {
	for _, s := range SourceCurrencies {
		if s == c {
			return true
		}
	}
	return false
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
