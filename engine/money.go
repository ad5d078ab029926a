package engine

// Exact integer money.
//
// An Amount is a count of minor units of a currency the caller tracks (kobo for
// NGN, pesewas for GHS, millionths for USDT: Currency.MinorUnits). A Rate is the
// number of destination units one source unit buys, as an integer scaled by
// 10^RateScale (spec §1: rates carry at most 18 decimal places). Neither type
// carries its currency: the Pair passed to each conversion says which minor units
// are meant.
//
// Invariants:
//
//  1. Every Amount and Rate that enters the engine is exact: AmountFromDecimal and
//     RateFromDecimal refuse a value with more decimal places than its unit allows
//     (ErrAmountPrecision, ErrRatePrecision) instead of rounding it, and refuse
//     non-positive or too-large values (ErrAmountRange, ErrRateRange). Inputs are
//     bounded by AmountMax (2^50) and RateMax (10^30 units, 2^100), so a product
//     source × rate × 10^e always fits in 192 bits (wide.go).
//  2. Conversions round in favour of the pool, by less than one minor unit
//     (spec §1): DestinationAmount rounds down (floor(source × rate)) and
//     SourceAmount rounds up (ceil(destination ÷ rate)). MaxSourceWithin is the
//     exact inverse of DestinationAmount's rounding, so a slice sized by it never
//     exceeds the pool's available liquidity. WeightedAverageRate rounds half to
//     even at 18 places.
//  3. No float64 ever touches an amount or a rate, and decimal.Decimal appears only
//     at the edges (the *FromDecimal and Decimal functions, used by the gateway and
//     the tests).
//
// Why integers and not decimal.Decimal: a decimal.Decimal is a *big.Int plus an
// exponent, so every multiplication, division and comparison allocates. A
// quote split across 3 of 8 pools costs the decimal reference allocator
// (allocate_reference_test.go, BenchmarkReferenceAllocate) about 7 µs and 256
// allocations (a leaner decimal walk would do better, but every operation
// still allocates). The integer Allocate does it in about 50 ns with none
// (BenchmarkAllocate/pools=8/fill=3). Matching runs inside the actor that owns
// a pair's book, so its cost is the pair's throughput ceiling. The rejected
// middle ground, float64 rates, cannot represent 0.000625 exactly and is
// forbidden by the spec (spec §1).
//
// The arithmetic: with sm and dm the decimal places of the source and destination
// currencies and R the scaled rate, a source amount s (minor units) converts to
//
//	destination minor units = s × R ÷ 10^(18 + sm − dm)
//
// The exponent e = 18 + sm − dm is 14 for NGN/USDT and GHS/USDT and 18 for
// NGN/GHS; in general it may exceed 19 (10^e no longer fits a uint64: the
// division is split into steps, which is exact because floor(floor(x÷a)÷b) =
// floor(x÷(a×b)) and likewise for ceil) or be negative (a multiplication instead).
// A rate below 2^64 units (about 18.4, every default pair) takes the fast
// path: 128-bit products (math/bits.Mul64) and 128-by-64 long division
// (math/bits.Div64). A larger rate (USDT→NGN at 1612.5) takes 192-bit
// intermediates and a 192-by-128 division (Knuth's algorithm D, one
// quotient word; wide.go) — still exact, still without allocation.

import (
	"errors"
	"math"
	"math/big"
	"math/bits"
	"strconv"

	"github.com/shopspring/decimal"
)

// Amount is an exact amount in minor units of a currency the caller tracks.
type Amount int64

// AmountMax is the largest amount the engine accepts: 10^15 minor units (10
// trillion NGN, 1 billion USDT). Larger inputs are refused with ErrAmountRange.
// NB: sums of amounts (balances, a quote's totals over SlicesMax slices) may
// exceed it; they still fit an int64 by a wide margin.
const AmountMax Amount = 1_000_000_000_000_000

// DepositFits is the one rule for a deposit of amount into an account
// holding balance: a positive amount at most AmountMax that keeps the
// balance at most AmountMax. The live actors decide deposits with it and
// replay checks them with it, so a deposit acknowledged live is never one
// replay refuses.
func DepositFits(balance, amount Amount) bool {
	return amount > 0 && amount <= AmountMax && balance <= AmountMax-amount
}

// Rate is the number of destination units one source unit buys, as an
// unsigned 128-bit integer scaled by 10^RateScale (18 decimal places,
// spec §1). Rates up to RateMax = 10^12 are exact: 1612.5 (USDT→NGN) and
// 0.000620155 (NGN→USDT) alike. Rates compare with Cmp and Less; == works.
type Rate struct{ hi, lo uint64 }

// RateScale is the number of decimal places of a Rate.
const RateScale = 18

// RateFromUnits is the rate units ÷ 10^18.
func RateFromUnits(units uint64) Rate { return Rate{lo: units} }

// RateMax is the largest rate the engine accepts: 10^12 (10^30 units).
var RateMax = func() Rate {
	hi, lo := bits.Mul64(1_000_000_000_000, 1_000_000_000_000_000_000)
	return Rate{hi, lo}
}()

// IsZero reports whether r is zero.
func (r Rate) IsZero() bool { return r.hi == 0 && r.lo == 0 }

// Cmp is −1, 0 or +1 as r is below, equal to or above o.
func (r Rate) Cmp(o Rate) int {
	switch {
	case r.hi != o.hi:
		return cmpUint64(r.hi, o.hi)
	default:
		return cmpUint64(r.lo, o.lo)
	}
}

func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Less reports whether r < o.
func (r Rate) Less(o Rate) bool { return r.hi < o.hi || (r.hi == o.hi && r.lo < o.lo) }

// Units is r in units of 10^−18 when that fits 64 bits (r below about
// 18.4).
func (r Rate) Units() (uint64, bool) { return r.lo, r.hi == 0 }

// Words are r's high and low 64 bits (encoders, hashes).
func (r Rate) Words() (hi, lo uint64) { return r.hi, r.lo }

// RateFromWords is the rate with those high and low 64 bits (decoders).
func RateFromWords(hi, lo uint64) Rate { return Rate{hi, lo} }

// Scale is r × numerator ÷ denominator, rounded down, or false when that
// does not fit a Rate or denominator is zero (display and the market
// simulator; never an amount).
func (r Rate) Scale(numerator, denominator uint64) (Rate, bool) {
	if denominator == 0 {
		return Rate{}, false
	}
	n := mul128x64(r, numerator)
	q, _ := n.divUint64(denominator)
	if q.w2 != 0 {
		return Rate{}, false
	}
	return Rate{q.w1, q.w0}, true
}

var (
	ErrAmountPrecision = errors.New("engine: amount has more decimal places than its currency allows")
	ErrAmountRange     = errors.New("engine: amount out of range")
	ErrRatePrecision   = errors.New("engine: rate has more than 18 decimal places")
	ErrRateRange       = errors.New("engine: rate out of range")
)

// powersOfTen[i] is 10^i; 10^19 is the largest power of ten a uint64 holds.
var powersOfTen = [...]uint64{
	1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000,
	1_000_000_000, 10_000_000_000, 100_000_000_000, 1_000_000_000_000,
	10_000_000_000_000, 100_000_000_000_000, 1_000_000_000_000_000,
	10_000_000_000_000_000, 100_000_000_000_000_000, 1_000_000_000_000_000_000,
	10_000_000_000_000_000_000,
}

// powerStepMax is the largest exponent of one multiplication or division step.
const powerStepMax = len(powersOfTen) - 1

// scaleExponent is e = 18 + sm − dm: destination minor units = source minor
// units × rate ÷ 10^e.
func scaleExponent(p Pair) int {
	return RateScale + int(p.Source.MinorUnits()) - int(p.Destination.MinorUnits())
}

// AmountFromDecimal converts d, in units of c, to minor units. It never rounds:
// a value that is not a whole number of minor units is refused with
// ErrAmountPrecision (the value decides, not the spelling: "1.500" is 1.5 and
// fine for NGN). A value <= 0 or above AmountMax is refused with ErrAmountRange,
// which wins when both apply.
func AmountFromDecimal(d decimal.Decimal, c Currency) (Amount, error) {
	v, err := scaledInteger(d, c.MinorUnits(), uint64(AmountMax))
	switch err {
	case errScaledRange:
		return 0, ErrAmountRange
	case errScaledPrecision:
		return 0, ErrAmountPrecision
	}
	return Amount(v), nil
}

// Decimal is a in units of c, exact.
func (a Amount) Decimal(c Currency) decimal.Decimal {
	return decimal.New(int64(a), -c.MinorUnits())
}

// AppendAmount appends a in units of c as plain decimal text: no exponent,
// trailing fractional zeros dropped ("1500", "0.000625", "12.5"), a leading '-'
// when negative, "0" for zero. It allocates only when dst must grow.
func AppendAmount(dst []byte, a Amount, c Currency) []byte {
	magnitude := uint64(a)
	if a < 0 {
		dst = append(dst, '-')
		magnitude = -magnitude // also right for math.MinInt64
	}
	return appendScaled(dst, magnitude, int(c.MinorUnits()))
}

// RateFromDecimal converts d to a Rate. It never rounds: more than 18 decimal
// places is ErrRatePrecision; a value <= 0 or above RateMax is ErrRateRange
// (which wins when both apply).
func RateFromDecimal(d decimal.Decimal) (Rate, error) {
	v, err := scaledBig(d, RateScale, RateMax.big())
	switch err {
	case errScaledRange:
		return Rate{}, ErrRateRange
	case errScaledPrecision:
		return Rate{}, ErrRatePrecision
	}
	low := new(big.Int).And(v, new(big.Int).SetUint64(math.MaxUint64))
	return Rate{new(big.Int).Rsh(v, 64).Uint64(), low.Uint64()}, nil
}

// big is r as a big.Int.
func (r Rate) big() *big.Int {
	v := new(big.Int).SetUint64(r.hi)
	v.Lsh(v, 64)
	return v.Or(v, new(big.Int).SetUint64(r.lo))
}

// Decimal is r as an exact decimal.
func (r Rate) Decimal() decimal.Decimal {
	if r.hi == 0 && r.lo <= math.MaxInt64 {
		return decimal.New(int64(r.lo), -RateScale)
	}
	return decimal.NewFromBigInt(r.big(), -RateScale)
}

// AppendRate appends r as plain decimal text, formatted as AppendAmount does.
func AppendRate(dst []byte, r Rate) []byte {
	if r.hi == 0 {
		return appendScaled(dst, r.lo, RateScale)
	}
	// r <= RateMax, so r.hi < 10^18 and the whole part fits 64 bits.
	whole, fraction := bits.Div64(r.hi, r.lo, powersOfTen[RateScale])
	return appendFraction(strconv.AppendUint(dst, whole, 10), fraction, RateScale)
}

// appendScaled appends value ÷ 10^places without trailing fractional zeros.
// REQUIRES: places <= powerStepMax.
func appendScaled(dst []byte, value uint64, places int) []byte {
	if places == 0 {
		return strconv.AppendUint(dst, value, 10)
	}
	unit := powersOfTen[places]
	return appendFraction(strconv.AppendUint(dst, value/unit, 10), value%unit, places)
}

// appendFraction appends the fractional part fraction ÷ 10^places (below
// 1) as "." and its digits without trailing zeros; nothing when it is 0.
func appendFraction(dst []byte, fraction uint64, places int) []byte {
	if fraction == 0 {
		return dst
	}
	for fraction%10 == 0 {
		fraction /= 10
		places--
	}
	dst = append(dst, '.')
	for digits := decimalDigits(fraction); digits < places; digits++ {
		dst = append(dst, '0')
	}
	return strconv.AppendUint(dst, fraction, 10)
}

// decimalDigits is the number of decimal digits of v (1 for 0).
func decimalDigits(v uint64) int {
	digits := 1
	for v >= 10 {
		v /= 10
		digits++
	}
	return digits
}

var (
	errScaledRange     = errors.New("range")
	errScaledPrecision = errors.New("precision")
)

// scaledInteger returns d × 10^places when that is a whole number in
// (0, maximum]. It is safe on hostile input: the exponent of a parsed decimal
// may be ±2^31 and its coefficient as long as the request body, so the
// magnitude is bounded from the coefficient's bit length before any power of
// ten is computed (shopspring's IsInteger and Cmp would compute 10^|exponent|).
func scaledInteger(d decimal.Decimal, places int32, maximum uint64) (uint64, error) {
	v, err := scaledBig(d, places, new(big.Int).SetUint64(maximum))
	if err != nil {
		return 0, err
	}
	return v.Uint64(), nil
}

// scaledBig is scaledInteger for a maximum of any size.
func scaledBig(d decimal.Decimal, places int32, maximum *big.Int) (*big.Int, error) {
	if d.Sign() <= 0 {
		return nil, errScaledRange
	}
	coefficient := d.Coefficient()
	exponent := int64(d.Exponent()) + int64(places) // value = coefficient × 10^exponent
	bitLength := int64(coefficient.BitLen())
	// 10^(digitsLow−1) <= coefficient < 10^digitsHigh, from 2^(bitLength−1) <=
	// coefficient < 2^bitLength and 0.30102 < log10(2) < 0.30103.
	digitsLow := (bitLength-1)*30102/100000 + 1
	digitsHigh := bitLength*30103/100000 + 1
	maximumDigits := int64(len(maximum.String()))
	if digitsLow-1+exponent >= maximumDigits {
		return nil, errScaledRange // value >= 10^maximumDigits > maximum
	}
	value, remainder := new(big.Int), new(big.Int)
	if exponent >= 0 {
		value.Exp(big.NewInt(10), big.NewInt(exponent), nil)
		value.Mul(value, coefficient)
	} else {
		if -exponent >= digitsHigh {
			return nil, errScaledPrecision // 0 < value < 1
		}
		divisor := new(big.Int).Exp(big.NewInt(10), big.NewInt(-exponent), nil)
		value.QuoRem(coefficient, divisor, remainder) // value = integer part
	}
	if c := value.Cmp(maximum); c > 0 || (c == 0 && remainder.Sign() != 0) {
		return nil, errScaledRange
	}
	if remainder.Sign() != 0 {
		return nil, errScaledPrecision
	}
	return value, nil
}

// DestinationAmount is floor(source × r) in destination minor units: the
// destination of a slice, rounded down in favour of the pool. ok is false when
// the result would exceed AmountMax.
// REQUIRES: source >= 0.
func DestinationAmount(source Amount, r Rate, p Pair) (Amount, bool) {
	return destinationAmount(source, r, scaleExponent(p))
}

// destinationAmount is DestinationAmount for any scale exponent (tested on
// exponents no default pair has).
func destinationAmount(source Amount, r Rate, exponent int) (Amount, bool) {
	if source < 0 {
		assert(false, "DestinationAmount of negative source %d", source)
	}
	if r.hi != 0 {
		return destinationAmountWide(source, r, exponent)
	}
	high, low := bits.Mul64(uint64(source), r.lo)
	if exponent < 0 {
		if high != 0 {
			return 0, false
		}
		for exponent < 0 {
			step := min(-exponent, powerStepMax)
			high, low = bits.Mul64(low, powersOfTen[step])
			if high != 0 || low > uint64(AmountMax) {
				return 0, false
			}
			exponent += step
		}
		return Amount(low), low <= uint64(AmountMax)
	}
	for exponent > 0 {
		step := min(exponent, powerStepMax)
		high, low = divide128(high, low, powersOfTen[step])
		exponent -= step
	}
	if high != 0 || low > uint64(AmountMax) {
		return 0, false
	}
	return Amount(low), true
}

// destinationAmountWide is destinationAmount for a rate of 2^64 units or
// more (about 18.4 and up): the product takes 192 bits.
func destinationAmountWide(source Amount, r Rate, exponent int) (Amount, bool) {
	n := mul128x64(r, uint64(source))
	if exponent < 0 {
		var overflow bool
		if n, overflow = n.mulPow10(-exponent); overflow {
			return 0, false
		}
	} else {
		n, _ = n.divPow10(exponent)
	}
	if n.w2 != 0 || n.w1 != 0 || n.w0 > uint64(AmountMax) {
		return 0, false
	}
	return Amount(n.w0), true
}

// SourceAmount is ceil(destination ÷ r) in source minor units: the source a
// partner pays for an exact destination, rounded up in favour of the pool.
// ok is false when the result would exceed AmountMax.
// REQUIRES: r > 0, destination >= 0.
func SourceAmount(destination Amount, r Rate, p Pair) (Amount, bool) {
	return sourceAmount(destination, r, scaleExponent(p))
}

// sourceAmount is SourceAmount for any scale exponent.
func sourceAmount(destination Amount, r Rate, exponent int) (Amount, bool) {
	if r.IsZero() || destination < 0 {
		assert(false, "SourceAmount(%d, %v): rate must be positive, destination non-negative", destination, r)
	}
	if exponent <= 0 {
		// ceil(ceil(destination ÷ r) ÷ 10^−exponent), one step at a time.
		var quotient uint64
		switch {
		case r.hi == 0:
			quotient = ceilDivide(uint64(destination), r.lo)
		case destination > 0:
			quotient = 1 // 0 < destination < r
		}
		for exponent < 0 {
			step := min(-exponent, powerStepMax)
			quotient = ceilDivide(quotient, powersOfTen[step])
			exponent += step
		}
		return Amount(quotient), quotient <= uint64(AmountMax)
	}
	if r.hi == 0 { // the fast path: 128-bit numerator, 64-bit divisor
		high, low, overflow := multiplyPower(0, uint64(destination), exponent)
		if overflow || high >= r.lo {
			return 0, false // the quotient needs more than 64 bits
		}
		quotient, remainder := bits.Div64(high, low, r.lo)
		if quotient > uint64(AmountMax) || (quotient == uint64(AmountMax) && remainder != 0) {
			return 0, false
		}
		if remainder != 0 {
			quotient++
		}
		return Amount(quotient), true
	}
	n, overflow := u192{w0: uint64(destination)}.mulPow10(exponent)
	if overflow {
		return 0, false
	}
	quotient, inexact, ok := n.divRate(r)
	if !ok || quotient > uint64(AmountMax) || (quotient == uint64(AmountMax) && inexact) {
		return 0, false // the quotient needs more than 64 bits, or exceeds AmountMax
	}
	if inexact {
		quotient++
	}
	return Amount(quotient), true
}

// MaxSourceWithin is the largest source s with DestinationAmount(s, r, p) <=
// available: the most a pool with that much destination liquidity can take.
// NB: the answer is capped at AmountMax, and available above AmountMax counts
// as AmountMax, so DestinationAmount of the answer is always ok. A zero rate
// buys nothing, so any source fits: the answer is AmountMax.
// REQUIRES: available >= 0.
func MaxSourceWithin(available Amount, r Rate, p Pair) Amount {
	return maxSourceWithin(available, r, scaleExponent(p))
}

// maxSourceWithin is MaxSourceWithin for any scale exponent.
func maxSourceWithin(available Amount, r Rate, exponent int) Amount {
	if available < 0 {
		assert(false, "MaxSourceWithin of negative available %d", available)
	}
	available = min(available, AmountMax)
	if r.IsZero() {
		return AmountMax
	}
	if exponent <= 0 {
		// floor(s × r × 10^k) <= A  ⇔  s <= floor(floor(A ÷ r) ÷ 10^k).
		var quotient uint64
		if r.hi == 0 {
			quotient = uint64(available) / r.lo
		} // else A < r: no whole source unit fits
		for exponent < 0 {
			step := min(-exponent, powerStepMax)
			quotient /= powersOfTen[step]
			exponent += step
		}
		return Amount(quotient)
	}
	// floor(s × r ÷ 10^e) <= A  ⇔  s × r < (A+1) × 10^e  ⇔  s <= floor(((A+1) × 10^e − 1) ÷ r).
	if r.hi == 0 { // the fast path: 128-bit numerator, 64-bit divisor
		high, low, overflow := multiplyPower(0, uint64(available)+1, exponent)
		if overflow {
			return AmountMax
		}
		var borrow uint64
		low, borrow = bits.Sub64(low, 1, 0)
		high -= borrow
		if high >= r.lo {
			return AmountMax // the quotient needs more than 64 bits
		}
		quotient, _ := bits.Div64(high, low, r.lo)
		return Amount(min(quotient, uint64(AmountMax)))
	}
	n, overflow := u192{w0: uint64(available) + 1}.mulPow10(exponent)
	if overflow {
		return AmountMax
	}
	n = n.sub(u192{w0: 1})
	quotient, _, ok := n.divRate(r)
	if !ok {
		return AmountMax // the quotient needs more than 64 bits
	}
	return Amount(min(quotient, uint64(AmountMax)))
}

// WeightedAverageRate is totalDestination ÷ totalSource (each in units of its
// currency) rounded half to even at 18 decimal places: the
// weightedAverageRate of an allocation result (spec §5).
// REQUIRES: totalSource > 0, totalDestination >= 0, and the average below
// 2^128 units (about 3.4 × 10^20). An allocation's average never exceeds its
// best slice rate (at most RateMax), because each slice's destination is
// rounded down.
func WeightedAverageRate(totalSource, totalDestination Amount, p Pair) Rate {
	return weightedAverageRate(totalSource, totalDestination, scaleExponent(p))
}

// weightedAverageRate is WeightedAverageRate for any scale exponent.
func weightedAverageRate(totalSource, totalDestination Amount, exponent int) Rate {
	if totalSource <= 0 || totalDestination < 0 {
		assert(false, "WeightedAverageRate(%d, %d): source must be positive", totalSource, totalDestination)
	}
	// The rate is numerator ÷ denominator: numerator = destination × 10^e
	// (192 bits), denominator = source (× 10^−e when e < 0, 128 bits).
	numerator := u192{w0: uint64(totalDestination)}
	denominatorHigh, denominatorLow := uint64(0), uint64(totalSource)
	overflow := false
	if exponent >= 0 {
		numerator, overflow = numerator.mulPow10(exponent)
		if overflow {
			assert(false, "WeightedAverageRate(%d, %d, exponent %d) does not fit a Rate", totalSource, totalDestination, exponent)
		}
	} else {
		denominatorHigh, denominatorLow, overflow = multiplyPower(0, denominatorLow, -exponent)
		if overflow {
			return Rate{} // the denominator exceeds 2^128 > 2 × numerator: rounds to zero
		}
	}
	if denominatorHigh != 0 {
		// The numerator is below 2^63 here (no scaling), so the quotient is
		// zero; round up only when numerator > denominator ÷ 2.
		numeratorLow := numerator.w0
		doubledHigh, doubledLow := numeratorLow>>63, numeratorLow<<1
		if doubledHigh > denominatorHigh || (doubledHigh == denominatorHigh && doubledLow > denominatorLow) {
			return Rate{lo: 1}
		}
		return Rate{}
	}
	quotient, remainder := numerator.divUint64(denominatorLow)
	if quotient.w2 != 0 {
		assert(false, "WeightedAverageRate(%d, %d, exponent %d) does not fit a Rate", totalSource, totalDestination, exponent)
	}
	r := Rate{quotient.w1, quotient.w0}
	half := denominatorLow - remainder // remainder <=> half: compares 2 × remainder with the denominator
	if remainder > half || (remainder == half && r.lo&1 == 1) {
		var carry uint64
		r.lo, carry = bits.Add64(r.lo, 1, 0)
		r.hi += carry
	}
	return r
}

// divide128 is floor((high, low) ÷ divisor) as a 128-bit quotient.
// REQUIRES: divisor > 0.
func divide128(high, low, divisor uint64) (quotientHigh, quotientLow uint64) {
	if high == 0 {
		return 0, low / divisor
	}
	if high < divisor {
		quotientLow, _ = bits.Div64(high, low, divisor)
		return 0, quotientLow
	}
	quotientHigh, high = high/divisor, high%divisor
	quotientLow, _ = bits.Div64(high, low, divisor)
	return quotientHigh, quotientLow
}

// multiplyPower is (high, low) × 10^exponent; overflow reports a product of
// 2^128 or more.
// REQUIRES: exponent >= 0.
func multiplyPower(high, low uint64, exponent int) (productHigh, productLow uint64, overflow bool) {
	for exponent > 0 {
		step := min(exponent, powerStepMax)
		factor := powersOfTen[step]
		carry, highProduct := bits.Mul64(high, factor)
		if carry != 0 {
			return 0, 0, true
		}
		var lowCarry uint64
		lowCarry, low = bits.Mul64(low, factor)
		var sumCarry uint64
		high, sumCarry = bits.Add64(highProduct, lowCarry, 0)
		if sumCarry != 0 {
			return 0, 0, true
		}
		exponent -= step
	}
	return high, low, false
}

// ceilDivide is ceil(numerator ÷ divisor). REQUIRES: divisor > 0.
func ceilDivide(numerator, divisor uint64) uint64 {
	quotient := numerator / divisor
	if numerator%divisor != 0 {
		quotient++
	}
	return quotient
}
