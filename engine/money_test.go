package engine

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"
)

var (
	pairNGNUSDT = Pair{CurrencyNGN, CurrencyUSDT}
	pairGHSUSDT = Pair{CurrencyGHS, CurrencyUSDT}
	pairNGNGHS  = Pair{CurrencyNGN, CurrencyGHS}
)

// mustRate parses a rate written as decimal text; a bad literal fails the test.
func mustRate(t testing.TB, text string) Rate {
	t.Helper()
	r, err := RateFromDecimal(decimal.RequireFromString(text))
	if err != nil {
		t.Fatalf("rate %q: %v", text, err)
	}
	return r
}

func TestAmountFromDecimal(t *testing.T) {
	tests := []struct {
		name     string
		value    decimal.Decimal
		currency Currency
		want     Amount
		wantErr  error
	}{
		{"whole naira", decimal.RequireFromString("1500"), CurrencyNGN, 150_000, nil},
		{"kobo", decimal.RequireFromString("0.01"), CurrencyNGN, 1, nil},
		{"two places", decimal.RequireFromString("12.34"), CurrencyNGN, 1_234, nil},
		{"trailing zeros are the same value", decimal.RequireFromString("1.500"), CurrencyNGN, 150, nil},
		{"exponent form", decimal.RequireFromString("15e2"), CurrencyNGN, 150_000, nil},
		{"negative exponent that is whole kobo", decimal.RequireFromString("100e-4"), CurrencyNGN, 1, nil},
		{"smallest usdt", decimal.RequireFromString("0.000001"), CurrencyUSDT, 1, nil},
		{"usdt six places", decimal.RequireFromString("1.000625"), CurrencyUSDT, 1_000_625, nil},
		{"maximum", decimal.RequireFromString("10000000000000"), CurrencyNGN, AmountMax, nil},
		{"maximum usdt", decimal.RequireFromString("1000000000"), CurrencyUSDT, AmountMax, nil},
		{"over precise naira", decimal.RequireFromString("0.001"), CurrencyNGN, 0, ErrAmountPrecision},
		{"over precise cedi", decimal.RequireFromString("12.345"), CurrencyGHS, 0, ErrAmountPrecision},
		{"over precise usdt", decimal.RequireFromString("0.0000001"), CurrencyUSDT, 0, ErrAmountPrecision},
		{"over precise tiny", decimal.New(1, -1_000_000_000), CurrencyNGN, 0, ErrAmountPrecision},
		{"over precise long", decimal.RequireFromString("1.0000000000000000000000000000000000000001"), CurrencyNGN, 0, ErrAmountPrecision},
		{"zero", decimal.RequireFromString("0"), CurrencyNGN, 0, ErrAmountRange},
		{"zero with huge exponent", decimal.New(0, -1_000_000_000), CurrencyNGN, 0, ErrAmountRange},
		{"negative", decimal.RequireFromString("-1"), CurrencyNGN, 0, ErrAmountRange},
		{"negative and over precise", decimal.RequireFromString("-0.001"), CurrencyNGN, 0, ErrAmountRange},
		{"one kobo over maximum", decimal.RequireFromString("10000000000000.01"), CurrencyNGN, 0, ErrAmountRange},
		{"over maximum and over precise", decimal.RequireFromString("10000000000000.001"), CurrencyNGN, 0, ErrAmountRange},
		{"far over maximum", decimal.New(1, 1_000_000_000), CurrencyNGN, 0, ErrAmountRange},
		{"over int64", decimal.RequireFromString("99999999999999999999999"), CurrencyUSDT, 0, ErrAmountRange},
	}
	for _, test := range tests {
		got, err := AmountFromDecimal(test.value, test.currency)
		if got != test.want || !errors.Is(err, test.wantErr) {
			t.Errorf("%s: AmountFromDecimal(%s, %v) = %d, %v; want %d, %v",
				test.name, test.value, test.currency, got, err, test.want, test.wantErr)
		}
	}
}

func TestRateFromDecimal(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    Rate
		wantErr error
	}{
		{"ngn/usdt", "0.000625", RateFromUnits(625_000_000_000_000), nil},
		{"ghs/usdt", "0.083333333333333333", RateFromUnits(83_333_333_333_333_333), nil},
		{"ngn/ghs", "0.0075", RateFromUnits(7_500_000_000_000_000), nil},
		{"one", "1", RateFromUnits(1_000_000_000_000_000_000), nil},
		{"smallest", "0.000000000000000001", RateFromUnits(1), nil},
		{"smallest exponent form", "1e-18", RateFromUnits(1), nil},
		{"maximum", "1000000000000", RateMax, nil},
		{"usdt/ngn", "1612.5", RateFromWords(87, 7_633_265_587_269_009_408), nil},
		{"19 needs more than 64 bits", "19", RateFromWords(1, 553_255_926_290_448_384), nil},
		{"largest with 18 places", "999999999999.999999999999999999", RateFromWords(54_210_108_624, 5_076_944_270_305_263_615), nil},
		{"trailing zeros", "0.00062500000000000000000", RateFromUnits(625_000_000_000_000), nil},
		{"19 places", "0.0000000000000000001", RateFromUnits(0), ErrRatePrecision},
		{"19 places nonzero last", "0.0006250000000000001", RateFromUnits(0), ErrRatePrecision},
		{"zero", "0", RateFromUnits(0), ErrRateRange},
		{"negative", "-0.000625", RateFromUnits(0), ErrRateRange},
		{"just over maximum", "1000000000000.000000000000000001", RateFromUnits(0), ErrRateRange},
		{"above 128 bits", "1e40", RateFromUnits(0), ErrRateRange},
		{"huge", "1e300", RateFromUnits(0), ErrRateRange},
	}
	for _, test := range tests {
		got, err := RateFromDecimal(decimal.RequireFromString(test.text))
		if got != test.want || !errors.Is(err, test.wantErr) {
			t.Errorf("%s: RateFromDecimal(%s) = %d, %v; want %d, %v", test.name, test.text, got, err, test.want, test.wantErr)
		}
	}
	// Exponents beyond what decimal parses, built by arithmetic: answered
	// without computing 10^1000000000.
	hostile := []struct {
		name    string
		value   decimal.Decimal
		wantErr error
	}{
		{"tiny", decimal.New(1, -1_000_000_000), ErrRatePrecision},
		{"huge", decimal.New(1, 1_000_000_000), ErrRateRange},
		{"zero", decimal.New(0, -1_000_000_000), ErrRateRange},
	}
	for _, test := range hostile {
		got, err := RateFromDecimal(test.value)
		if !got.IsZero() || !errors.Is(err, test.wantErr) {
			t.Errorf("%s: RateFromDecimal = %d, %v; want 0, %v", test.name, got, err, test.wantErr)
		}
	}
}

func TestAppendAmount(t *testing.T) {
	tests := []struct {
		name     string
		amount   Amount
		currency Currency
		want     string
	}{
		{"zero", 0, CurrencyNGN, "0"},
		{"whole", 150_000, CurrencyNGN, "1500"},
		{"one kobo", 1, CurrencyNGN, "0.01"},
		{"ten kobo drops the zero", 10, CurrencyNGN, "0.1"},
		{"half", 1_250, CurrencyNGN, "12.5"},
		{"usdt leading zeros", 625, CurrencyUSDT, "0.000625"},
		{"usdt", 1_000_625, CurrencyUSDT, "1.000625"},
		{"maximum", AmountMax, CurrencyUSDT, "1000000000"},
		{"negative", -5, CurrencyGHS, "-0.05"},
		{"negative whole", -200, CurrencyGHS, "-2"},
		{"no minor unit", 42, CurrencyNone, "42"},
		{"most negative", math.MinInt64, CurrencyNGN, "-92233720368547758.08"},
	}
	for _, test := range tests {
		got := string(AppendAmount([]byte("x="), test.amount, test.currency))
		if got != "x="+test.want {
			t.Errorf("%s: AppendAmount(%d, %v) = %q; want %q", test.name, test.amount, test.currency, got, "x="+test.want)
		}
	}
}

func TestAppendRate(t *testing.T) {
	tests := []struct {
		name string
		rate Rate
		want string
	}{
		{"zero", RateFromUnits(0), "0"},
		{"ngn/usdt", RateFromUnits(625_000_000_000_000), "0.000625"},
		{"smallest", RateFromUnits(1), "0.000000000000000001"},
		{"one", RateFromUnits(1_000_000_000_000_000_000), "1"},
		{"maximum", RateMax, "1000000000000"},
		{"largest uint64", RateFromUnits(math.MaxUint64), "18.446744073709551615"},
		{"2^64 units", RateFromWords(1, 0), "18.446744073709551616"},
		{"usdt/ngn", RateFromWords(87, 7_633_265_587_269_009_408), "1612.5"},
		{"largest with 18 places", RateFromWords(54_210_108_624, 5_076_944_270_305_263_615), "999999999999.999999999999999999"},
		{"ghs/usdt", RateFromUnits(83_333_333_333_333_333), "0.083333333333333333"},
	}
	for _, test := range tests {
		got := string(AppendRate(nil, test.rate))
		if got != test.want {
			t.Errorf("%s: AppendRate(%d) = %q; want %q", test.name, test.rate, got, test.want)
		}
	}
}

// TestFormatMatchesDecimal checks the formatting against decimal.Decimal's
// String (plain, trailing zeros dropped) and the parse/format round trip.
func TestFormatMatchesDecimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		currencies := DefaultMarkets().CurrencyList()
		currency := currencies[rng.IntN(len(currencies))]
		amount := randomAmount(rng)
		text := string(AppendAmount(nil, amount, currency))
		if want := amount.Decimal(currency).String(); text != want {
			t.Fatalf("AppendAmount(%d, %v) = %q; decimal says %q", amount, currency, text, want)
		}
		back, err := AmountFromDecimal(decimal.RequireFromString(text), currency)
		if err != nil || back != amount {
			t.Fatalf("round trip of %d %v via %q = %d, %v", amount, currency, text, back, err)
		}
		negative := string(AppendAmount(nil, -amount, currency))
		if want := (-amount).Decimal(currency).String(); negative != want {
			t.Fatalf("AppendAmount(%d, %v) = %q; decimal says %q", -amount, currency, negative, want)
		}

		r := randomRate(rng)
		rateText := string(AppendRate(nil, r))
		if want := r.Decimal().String(); rateText != want {
			t.Fatalf("AppendRate(%d) = %q; decimal says %q", r, rateText, want)
		}
		rateBack, err := RateFromDecimal(decimal.RequireFromString(rateText))
		if err != nil || rateBack != r {
			t.Fatalf("round trip of rate %d via %q = %d, %v", r, rateText, rateBack, err)
		}
	}
}

func TestDestinationAmount(t *testing.T) {
	ngnUSDT := mustRate(t, "0.000625")
	ghsUSDT := mustRate(t, "0.083333333333333333")
	ngnGHS := mustRate(t, "0.0075")
	tests := []struct {
		name   string
		source Amount
		rate   Rate
		pair   Pair
		want   Amount
		wantOK bool
	}{
		{"ngn/usdt 1600 naira buys 1 usdt", 160_000, ngnUSDT, pairNGNUSDT, 1_000_000, true},
		{"ngn/usdt 1 kobo is 6.25 micro, floored", 1, ngnUSDT, pairNGNUSDT, 6, true},
		{"ngn/usdt 3 kobo is 18.75 micro, floored", 3, ngnUSDT, pairNGNUSDT, 18, true},
		{"ngn/usdt 4 kobo is exactly 25 micro", 4, ngnUSDT, pairNGNUSDT, 25, true},
		{"ngn/usdt zero", 0, ngnUSDT, pairNGNUSDT, 0, true},
		{"ngn/usdt maximum naira is over maximum usdt", AmountMax, ngnUSDT, pairNGNUSDT, 0, false},
		{"ngn/usdt largest that fits", 160_000_000_000_000, ngnUSDT, pairNGNUSDT, AmountMax, true},
		{"ngn/usdt one kobo more no longer fits", 160_000_000_000_001, ngnUSDT, pairNGNUSDT, 0, false},
		{"ghs/usdt 12 cedi is just under 1 usdt", 1_200, ghsUSDT, pairGHSUSDT, 999_999, true},
		{"ghs/usdt 1 pesewa", 1, ghsUSDT, pairGHSUSDT, 833, true},
		{"ghs/usdt maximum", AmountMax, ghsUSDT, pairGHSUSDT, 0, false},
		{"ngn/ghs 1 kobo is dust", 1, ngnGHS, pairNGNGHS, 0, true},
		{"ngn/ghs 133 kobo is 0.9975 pesewa, dust", 133, ngnGHS, pairNGNGHS, 0, true},
		{"ngn/ghs 134 kobo is 1.005 pesewa", 134, ngnGHS, pairNGNGHS, 1, true},
		{"ngn/ghs 400 kobo is exactly 3 pesewa", 400, ngnGHS, pairNGNGHS, 3, true},
		{"ngn/ghs maximum", AmountMax, ngnGHS, pairNGNGHS, 7_500_000_000_000, true},
		{"ngn/ghs maximum at maximum rate", AmountMax, RateMax, pairNGNGHS, 0, false},
		{"ngn/ghs rate one is identity at maximum", AmountMax, mustRate(t, "1"), pairNGNGHS, AmountMax, true},
		{"usdt to ngn 1 micro at 16 is dust", 1, mustRate(t, "16"), Pair{CurrencyUSDT, CurrencyNGN}, 0, true},
		{"usdt to ngn 1 usdt at 16", 1_000_000, mustRate(t, "16"), Pair{CurrencyUSDT, CurrencyNGN}, 1_600, true},
	}
	for _, test := range tests {
		got, ok := DestinationAmount(test.source, test.rate, test.pair)
		if got != test.want || ok != test.wantOK {
			t.Errorf("%s: DestinationAmount(%d, %d, %v) = %d, %v; want %d, %v",
				test.name, test.source, test.rate, test.pair, got, ok, test.want, test.wantOK)
		}
	}
}

func TestSourceAmount(t *testing.T) {
	ngnUSDT := mustRate(t, "0.000625")
	ghsUSDT := mustRate(t, "0.083333333333333333")
	ngnGHS := mustRate(t, "0.0075")
	tests := []struct {
		name        string
		destination Amount
		rate        Rate
		pair        Pair
		want        Amount
		wantOK      bool
	}{
		{"ngn/usdt 1 usdt costs 1600 naira exactly", 1_000_000, ngnUSDT, pairNGNUSDT, 160_000, true},
		{"ngn/usdt 1 micro costs 0.16 kobo, ceiled", 1, ngnUSDT, pairNGNUSDT, 1, true},
		{"ngn/usdt 25 micro costs exactly 4 kobo", 25, ngnUSDT, pairNGNUSDT, 4, true},
		{"ngn/usdt 26 micro costs 4.16 kobo, ceiled", 26, ngnUSDT, pairNGNUSDT, 5, true},
		{"ngn/usdt zero", 0, ngnUSDT, pairNGNUSDT, 0, true},
		{"ngn/usdt maximum", AmountMax, ngnUSDT, pairNGNUSDT, 160_000_000_000_000, true},
		{"ngn/usdt maximum at the smallest rate", AmountMax, RateFromUnits(1), pairNGNUSDT, 0, false},
		{"ghs/usdt 1 usdt costs 12.00000000000000004 cedi, ceiled", 1_000_000, ghsUSDT, pairGHSUSDT, 1_201, true},
		{"ghs/usdt 999999 micro costs 11.99998800000000005 cedi", 999_999, ghsUSDT, pairGHSUSDT, 1_200, true},
		{"ngn/ghs 1 pesewa costs 1.333 naira, ceiled", 1, ngnGHS, pairNGNGHS, 134, true},
		{"ngn/ghs 3 pesewa costs exactly 4 naira", 3, ngnGHS, pairNGNGHS, 400, true},
		{"ngn/ghs maximum overflows", AmountMax, ngnGHS, pairNGNGHS, 0, false},
		{"ngn/ghs largest that fits", 7_500_000_000_000, ngnGHS, pairNGNGHS, AmountMax, true},
		{"ngn/ghs one pesewa more", 7_500_000_000_001, ngnGHS, pairNGNGHS, 0, false},
		{"usdt to ngn 1600 naira at 16", 1_600, mustRate(t, "16"), Pair{CurrencyUSDT, CurrencyNGN}, 1_000_000, true},
		{"usdt to ngn 1 kobo at 16", 1, mustRate(t, "16"), Pair{CurrencyUSDT, CurrencyNGN}, 625, true},
		{"usdt to ngn 1 kobo at 17", 1, mustRate(t, "17"), Pair{CurrencyUSDT, CurrencyNGN}, 589, true},
	}
	for _, test := range tests {
		got, ok := SourceAmount(test.destination, test.rate, test.pair)
		if got != test.want || ok != test.wantOK {
			t.Errorf("%s: SourceAmount(%d, %d, %v) = %d, %v; want %d, %v",
				test.name, test.destination, test.rate, test.pair, got, ok, test.want, test.wantOK)
		}
	}
}

func TestMaxSourceWithin(t *testing.T) {
	ngnUSDT := mustRate(t, "0.000625")
	ngnGHS := mustRate(t, "0.0075")
	tests := []struct {
		name      string
		available Amount
		rate      Rate
		pair      Pair
		want      Amount
	}{
		{"ngn/usdt exact", 1_000_000, ngnUSDT, pairNGNUSDT, 160_000},
		{"ngn/usdt 5 micro buys no kobo", 5, ngnUSDT, pairNGNUSDT, 0},
		{"ngn/usdt 6 micro buys 1 kobo", 6, ngnUSDT, pairNGNUSDT, 1},
		{"ngn/usdt 12 micro buys 2 kobo (12.5 floored)", 12, ngnUSDT, pairNGNUSDT, 2},
		{"ngn/usdt 24 micro buys 3 kobo", 24, ngnUSDT, pairNGNUSDT, 3},
		{"ngn/usdt 25 micro buys 4 kobo", 25, ngnUSDT, pairNGNUSDT, 4},
		{"ngn/ghs 0 pesewa still takes dust", 0, ngnGHS, pairNGNGHS, 133},
		{"ngn/ghs 1 pesewa", 1, ngnGHS, pairNGNGHS, 266},
		{"ngn/ghs 3 pesewa", 3, ngnGHS, pairNGNGHS, 533},
		{"capped at maximum", AmountMax, ngnGHS, pairNGNGHS, AmountMax},
		{"available over maximum counts as maximum", math.MaxInt64, ngnUSDT, pairNGNUSDT, 160_000_000_000_000},
		{"zero rate", 1, RateFromUnits(0), pairNGNUSDT, AmountMax},
	}
	for _, test := range tests {
		got := MaxSourceWithin(test.available, test.rate, test.pair)
		if got != test.want {
			t.Errorf("%s: MaxSourceWithin(%d, %d, %v) = %d; want %d", test.name, test.available, test.rate, test.pair, got, test.want)
		}
	}
}

func TestWeightedAverageRate(t *testing.T) {
	tests := []struct {
		name        string
		source      Amount
		destination Amount
		pair        Pair
		want        Rate
	}{
		{"exact", 160_000, 1_000_000, pairNGNUSDT, mustRate(t, "0.000625")},
		{"zero destination", 160_000, 0, pairNGNUSDT, RateFromUnits(0)},
		// 1 ÷ 2^15 kobo→micro is 3051757812.5 × 10^-18 after scaling: a tie, to even.
		{"tie rounds down to even", 32_768, 1, pairNGNUSDT, RateFromUnits(3_051_757_812)},
		{"tie rounds up to even", 32_768, 3, pairNGNUSDT, RateFromUnits(9_155_273_438)},
		{"ngn/ghs tie down to even", 524_288, 1, pairNGNGHS, RateFromUnits(1_907_348_632_812)},
		{"ngn/ghs tie up to even", 524_288, 3, pairNGNGHS, RateFromUnits(5_722_045_898_438)},
		{"one third rounds down", 3, 1, pairNGNGHS, RateFromUnits(333_333_333_333_333_333)},
		{"two thirds rounds up", 3, 2, pairNGNGHS, RateFromUnits(666_666_666_666_666_667)},
		{"ghs/usdt 12 cedi for 999999 micro", 1_200, 999_999, pairGHSUSDT, RateFromUnits(83_333_250_000_000_000)},
		{"eighteen", 1, 18, pairNGNGHS, RateFromUnits(18_000_000_000_000_000_000)},
		{"the maximum", 1, 1_000_000_000_000, pairNGNGHS, RateMax},
		{"usdt/ngn 1 usdt for 1612.50 naira", 1_000_000, 161_250, Pair{CurrencyUSDT, CurrencyNGN}, RateFromWords(87, 7_633_265_587_269_009_408)},
	}
	for _, test := range tests {
		got := WeightedAverageRate(test.source, test.destination, test.pair)
		if got != test.want {
			t.Errorf("%s: WeightedAverageRate(%d, %d, %v) = %d; want %d", test.name, test.source, test.destination, test.pair, got, test.want)
		}
		if want := referenceWeightedAverageRate(test.source, test.destination, test.pair); got != want {
			t.Errorf("%s: WeightedAverageRate(%d, %d, %v) = %d; decimal says %d", test.name, test.source, test.destination, test.pair, got, want)
		}
	}
}

func TestMoneyPanicsOnMisuse(t *testing.T) {
	tests := []struct {
		name string
		call func()
	}{
		{"source amount at zero rate", func() { SourceAmount(1, RateFromUnits(0), pairNGNUSDT) }},
		{"negative source", func() { DestinationAmount(-1, RateFromUnits(1), pairNGNUSDT) }},
		{"negative available", func() { MaxSourceWithin(-1, RateFromUnits(1), pairNGNUSDT) }},
		{"average over zero source", func() { WeightedAverageRate(0, 1, pairNGNUSDT) }},
		{"average too large for 128 bits", func() { weightedAverageRate(1, AmountMax, 30) }},
	}
	for _, test := range tests {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: did not panic", test.name)
				}
			}()
			test.call()
		}()
	}
}

// The decimal reference: the spec's formulas computed with
// shopspring/decimal in currency units, independent of the integer code.

func decimalOfRate(r Rate) decimal.Decimal {
	return decimal.NewFromBigInt(r.big(), -RateScale)
}

var decimalAmountMax = decimal.NewFromInt(int64(AmountMax))

// referenceDestination is floor(source × rate) to the destination's minor
// unit, in minor units; ok is false above AmountMax.
func referenceDestination(source Amount, r Rate, p Pair) (Amount, bool) {
	units := decimal.New(int64(source), -p.Source.MinorUnits()).Mul(decimalOfRate(r))
	minor := units.Shift(p.Destination.MinorUnits()).Floor()
	if minor.GreaterThan(decimalAmountMax) {
		return 0, false
	}
	return Amount(minor.IntPart()), true
}

// referenceSource is ceil(destination ÷ rate) to the source's minor unit.
func referenceSource(destination Amount, r Rate, p Pair) (Amount, bool) {
	units := decimal.New(int64(destination), -p.Destination.MinorUnits())
	quotient, remainder := units.QuoRem(decimalOfRate(r), p.Source.MinorUnits())
	if !remainder.IsZero() {
		quotient = quotient.Add(decimal.New(1, -p.Source.MinorUnits()))
	}
	minor := quotient.Shift(p.Source.MinorUnits())
	if minor.GreaterThan(decimalAmountMax) {
		return 0, false
	}
	return Amount(minor.IntPart()), true
}

// referenceWeightedAverageRate is destination ÷ source in currency units,
// rounded half to even at 18 places.
func referenceWeightedAverageRate(source, destination Amount, p Pair) Rate {
	sourceUnits := decimal.New(int64(source), -p.Source.MinorUnits())
	destinationUnits := decimal.New(int64(destination), -p.Destination.MinorUnits())
	return rateOfBig(halfEven(destinationUnits, sourceUnits, RateScale).Shift(RateScale).BigInt())
}

// rateOfBig is v as a Rate. REQUIRES: 0 <= v < 2^128.
func rateOfBig(v *big.Int) Rate {
	low := new(big.Int).And(v, new(big.Int).SetUint64(math.MaxUint64))
	return Rate{new(big.Int).Rsh(v, 64).Uint64(), low.Uint64()}
}

// halfEven is numerator ÷ denominator rounded half to even at places.
func halfEven(numerator, denominator decimal.Decimal, places int32) decimal.Decimal {
	quotient, remainder := numerator.QuoRem(denominator, places)
	unit := decimal.New(1, -places)
	switch remainder.Mul(decimal.NewFromInt(2)).Cmp(denominator.Mul(unit)) {
	case 1:
		return quotient.Add(unit)
	case 0:
		if quotient.Shift(places).BigInt().Bit(0) == 1 {
			return quotient.Add(unit)
		}
	}
	return quotient
}

// The generic-exponent reference: destination minor = source × r ÷ 10^exponent.

func referenceDestinationExponent(source Amount, r Rate, exponent int) (Amount, bool) {
	minor := decimal.NewFromInt(int64(source)).Mul(decimal.NewFromBigInt(r.big(), int32(-exponent))).Floor()
	if minor.GreaterThan(decimalAmountMax) {
		return 0, false
	}
	return Amount(minor.IntPart()), true
}

func referenceSourceExponent(destination Amount, r Rate, exponent int) (Amount, bool) {
	divisor := decimal.NewFromBigInt(r.big(), int32(-exponent))
	quotient, remainder := decimal.NewFromInt(int64(destination)).QuoRem(divisor, 0)
	if !remainder.IsZero() {
		quotient = quotient.Add(decimal.NewFromInt(1))
	}
	if quotient.GreaterThan(decimalAmountMax) {
		return 0, false
	}
	return Amount(quotient.IntPart()), true
}

// referenceWeightedAverageRateExponent reports ok false when the average does
// not fit a Rate.
func referenceWeightedAverageRateExponent(source, destination Amount, exponent int) (Rate, bool) {
	numerator := decimal.NewFromInt(int64(destination)).Shift(int32(exponent))
	rate := halfEven(numerator, decimal.NewFromInt(int64(source)), 0).BigInt()
	if rate.BitLen() > 128 {
		return Rate{}, false
	}
	return rateOfBig(rate), true
}

// checkMoney compares the integer functions with the decimal reference on one
// input, for one default pair and for one arbitrary scale exponent.
func checkMoney(t *testing.T, amount Amount, r Rate, p Pair, exponent int) {
	t.Helper()
	got, ok := DestinationAmount(amount, r, p)
	want, wantOK := referenceDestination(amount, r, p)
	if got != want || ok != wantOK {
		t.Fatalf("DestinationAmount(%d, %d, %v) = %d, %v; decimal says %d, %v", amount, r, p, got, ok, want, wantOK)
	}
	got, ok = SourceAmount(amount, r, p)
	want, wantOK = referenceSource(amount, r, p)
	if got != want || ok != wantOK {
		t.Fatalf("SourceAmount(%d, %d, %v) = %d, %v; decimal says %d, %v", amount, r, p, got, ok, want, wantOK)
	}
	checkMaxSourceWithin(t, amount, r, exponent)
	checkMaxSourceWithin(t, amount, r, scaleExponent(p))

	got, ok = destinationAmount(amount, r, exponent)
	want, wantOK = referenceDestinationExponent(amount, r, exponent)
	if got != want || ok != wantOK {
		t.Fatalf("destinationAmount(%d, %d, exponent %d) = %d, %v; decimal says %d, %v", amount, r, exponent, got, ok, want, wantOK)
	}
	got, ok = sourceAmount(amount, r, exponent)
	want, wantOK = referenceSourceExponent(amount, r, exponent)
	if got != want || ok != wantOK {
		t.Fatalf("sourceAmount(%d, %d, exponent %d) = %d, %v; decimal says %d, %v", amount, r, exponent, got, ok, want, wantOK)
	}

	// The average of a real slice: its destination at rate r.
	if amount > 0 {
		if destination, ok := DestinationAmount(amount, r, p); ok {
			got := WeightedAverageRate(amount, destination, p)
			if want := referenceWeightedAverageRate(amount, destination, p); got != want {
				t.Fatalf("WeightedAverageRate(%d, %d, %v) = %d; decimal says %d", amount, destination, p, got, want)
			}
			if r.Less(got) {
				t.Fatalf("WeightedAverageRate(%d, %d, %v) = %d above the slice rate %d", amount, destination, p, got, r)
			}
		}
		// Arbitrary totals, where the average fits a Rate.
		destination := Amount(r.lo % uint64(AmountMax+1))
		if want, fits := referenceWeightedAverageRateExponent(amount, destination, exponent); fits {
			if got := weightedAverageRate(amount, destination, exponent); got != want {
				t.Fatalf("weightedAverageRate(%d, %d, exponent %d) = %d; decimal says %d", amount, destination, exponent, got, want)
			}
		}
	}
}

// checkMaxSourceWithin checks the defining property: DestinationAmount(max) <=
// available < DestinationAmount(max+1), with both capped at AmountMax.
func checkMaxSourceWithin(t *testing.T, available Amount, r Rate, exponent int) {
	t.Helper()
	got := maxSourceWithin(available, r, exponent)
	limit := min(available, AmountMax)
	if destination, ok := destinationAmount(got, r, exponent); !ok || destination > limit {
		t.Fatalf("maxSourceWithin(%d, %d, exponent %d) = %d buys %d (ok %v), more than available", available, r, exponent, got, destination, ok)
	}
	if got < AmountMax {
		if destination, ok := destinationAmount(got+1, r, exponent); ok && destination <= limit {
			t.Fatalf("maxSourceWithin(%d, %d, exponent %d) = %d, but %d buys only %d", available, r, exponent, got, got+1, destination)
		}
	}
}

// randomAmount is log-uniform over [1, AmountMax], with the edges often.
func randomAmount(rng *rand.Rand) Amount {
	switch rng.IntN(16) {
	case 0:
		return 1
	case 1:
		return AmountMax
	case 2:
		return AmountMax - Amount(rng.IntN(1000))
	}
	digits := rng.IntN(16) + 1
	return min(Amount(rng.Int64N(int64(powersOfTen[digits])))+1, AmountMax)
}

// randomRate is log-uniform over [1, RateMax], with the edges and the default
// pairs' magnitudes often.
func randomRate(rng *rand.Rand) Rate {
	switch rng.IntN(16) {
	case 0:
		return RateFromUnits(1)
	case 1:
		return RateMax
	case 2:
		return RateFromUnits(uint64(600_000_000_000_000 + rng.Uint64N(50_000_000_000_000))) // ~0.000625
	case 3:
		return RateFromUnits(uint64(7_000_000_000_000_000 + rng.Uint64N(1_000_000_000_000_000))) // ~0.0075
	case 4:
		return RateFromUnits(uint64(80_000_000_000_000_000 + rng.Uint64N(5_000_000_000_000_000))) // ~0.083
	}
	if rng.IntN(3) == 0 {
		// The wide range, 2^64 units (about 18.4) and up: USDT→NGN ~1612.5,
		// GHS→NGN ~110, or any size up to RateMax.
		switch rng.IntN(3) {
		case 0:
			r, _ := RateTimesPow10(1_600_000_000+rng.Uint64N(30_000_000), 12)
			return r
		case 1:
			r, _ := RateTimesPow10(105_000_000+rng.Uint64N(10_000_000), 12)
			return r
		}
		r := Rate{rng.Uint64N(RateMax.hi + 1), rng.Uint64()}
		if RateMax.Less(r) {
			r = RateMax
		}
		if r.IsZero() {
			r = Rate{lo: 1}
		}
		return r
	}
	digits := rng.IntN(19) + 1
	return RateFromUnits(rng.Uint64N(powersOfTen[digits]) + 1)
}

const (
	exponentTestMin = -25
	exponentTestMax = 45
)

// TestMoneyMatchesDecimal is the differential test: the integer arithmetic
// equals the decimal computation on random inputs, for every default pair and
// for scale exponents no default pair has (negative, and above 19).
func TestMoneyMatchesDecimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 30_000 {
		amount := randomAmount(rng)
		if i%50 == 0 {
			amount = 0
		}
		exponent := exponentTestMin + rng.IntN(exponentTestMax-exponentTestMin+1)
		pairs := wideTestPairs()
		checkMoney(t, amount, randomRate(rng), pairs[rng.IntN(len(pairs))], exponent)
	}
}

func FuzzMoney(f *testing.F) {
	f.Add(int64(1), uint64(625_000_000_000_000), uint8(0), int8(14), uint64(0))
	f.Add(int64(133), uint64(7_500_000_000_000_000), uint8(2), int8(18), uint64(0))
	f.Add(int64(1_200), uint64(83_333_333_333_333_333), uint8(1), int8(-3), uint64(0))
	f.Add(int64(AmountMax), uint64(RateMax.lo), uint8(2), int8(40), RateMax.hi)
	f.Add(int64(160_000_000_000_001), uint64(1), uint8(0), int8(-20), uint64(0))
	f.Add(int64(1_000_000), uint64(1_612_500_000_000_000_000_000%(1<<64)), uint8(3), int8(22), uint64(1_612_500_000_000_000_000_000>>64))
	f.Fuzz(func(t *testing.T, amount int64, rate uint64, pairIndex uint8, exponent int8, rateHigh uint64) {
		if amount < 0 {
			amount = -(amount + 1)
		}
		a := Amount(amount % int64(AmountMax+1))
		r := Rate{rateHigh % (RateMax.hi + 1), rate}
		if RateMax.Less(r) {
			r = RateMax
		}
		if r.IsZero() {
			r = Rate{lo: 1}
		}
		e := exponentTestMin + int(uint8(exponent))%(exponentTestMax-exponentTestMin+1)
		pairs := wideTestPairs()
		checkMoney(t, a, r, pairs[int(pairIndex)%len(pairs)], e)
	})
}

func TestMoneyAllocationFree(t *testing.T) {
	r := mustRate(t, "0.000625")
	wide := mustRate(t, "1612.5")
	pairUSDTNGN := Pair{CurrencyUSDT, CurrencyNGN}
	buffer := make([]byte, 0, 64)
	var sink Amount
	var sinkRate Rate
	tests := []struct {
		name string
		call func()
	}{
		{"DestinationAmount", func() { a, _ := DestinationAmount(123_456_789, r, pairNGNUSDT); sink += a }},
		{"SourceAmount", func() { a, _ := SourceAmount(123_456_789, r, pairNGNUSDT); sink += a }},
		{"MaxSourceWithin", func() { sink += MaxSourceWithin(123_456_789, r, pairNGNUSDT) }},
		{"WeightedAverageRate", func() { sinkRate = WeightedAverageRate(123_456_789, 77_160+sink, pairNGNUSDT) }},
		{"AppendAmount", func() { buffer = AppendAmount(buffer[:0], -123_456_789, CurrencyUSDT) }},
		{"AppendRate", func() { buffer = AppendRate(buffer[:0], r) }},
		// The wide path: USDT→NGN at 1612.5.
		{"DestinationAmount wide", func() { a, _ := DestinationAmount(123_456_789, wide, pairUSDTNGN); sink += a }},
		{"SourceAmount wide", func() { a, _ := SourceAmount(123_456_789, wide, pairUSDTNGN); sink += a }},
		{"MaxSourceWithin wide", func() { sink += MaxSourceWithin(123_456_789, wide, pairUSDTNGN) }},
		{"WeightedAverageRate wide", func() { sinkRate = WeightedAverageRate(1_000_000, 161_250+sink%2, pairUSDTNGN) }},
		{"AppendRate wide", func() { buffer = AppendRate(buffer[:0], wide) }},
	}
	for _, test := range tests {
		if got := testing.AllocsPerRun(1000, test.call); got != 0 {
			t.Errorf("%s: %v allocations per call; want 0", test.name, got)
		}
	}
	_ = sinkRate
}

// wideTestPairs are the default pairs and the off-ramp's USDT→NGN and
// USDT→GHS (scale exponent 22) and GHS→NGN (18, at rates near 110).
func wideTestPairs() []Pair {
	return append(DefaultMarkets().PairList(), Pair{CurrencyUSDT, CurrencyNGN}, Pair{CurrencyUSDT, CurrencyGHS},
		Pair{CurrencyGHS, CurrencyNGN})
}

// BenchmarkConversions compares a default pair's conversions (rates below
// 2^64 units: the 128-bit fast path) with USDT→NGN at 1612.5 (192-bit
// intermediates, Knuth's division).
func BenchmarkConversions(b *testing.B) {
	for _, c := range []struct {
		name string
		rate string
		pair Pair
	}{
		{"NGN-USDT_0.000625", "0.000625", pairNGNUSDT},
		{"USDT-NGN_1612.5", "1612.5", Pair{CurrencyUSDT, CurrencyNGN}},
	} {
		r, err := RateFromDecimal(decimal.RequireFromString(c.rate))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			var sink Amount
			for i := range b.N {
				a := Amount(1_000_000 + i%1000)
				d, _ := DestinationAmount(a, r, c.pair)
				s, _ := SourceAmount(d, r, c.pair)
				sink += s + MaxSourceWithin(d, r, c.pair)
			}
			if sink < 0 {
				b.Fatal(sink)
			}
		})
	}
}
