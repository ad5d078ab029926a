package engine

import (
	"errors"
	"math/bits"
)

// ErrNotPositive is returned for a zero or negative amount or rate.
var ErrNotPositive = errors.New("engine: value must be greater than 0")

// errNumberSyntax is returned for text that is not a JSON number.
var errNumberSyntax = errors.New("engine: not a number")

// ParseAmountText parses a JSON number (e.g. "1500", "0.25", "1.5e3")
// exactly into minor units of c, without going through a decimal type: the
// hot path of quote creation. It agrees with AmountFromDecimal (tested).
// Errors: ErrNotPositive, ErrAmountPrecision, ErrAmountRange, or a syntax
// error.
func ParseAmountText(text []byte, c Currency) (Amount, error) {
	v, err := parseScaled(text, int(c.MinorUnits()), Rate{lo: uint64(AmountMax)}, ErrAmountPrecision, ErrAmountRange)
	return Amount(v.lo), err
}

// ParseRateText parses a JSON number exactly into a Rate (scale 10^18).
func ParseRateText(text []byte) (Rate, error) {
	return parseScaled(text, RateScale, RateMax, ErrRatePrecision, ErrRateRange)
}

// parseScaled returns text × 10^places as an exact integer in (0, maximum],
// up to 128 bits (a Rate holds it; an amount is its low word).
func parseScaled(text []byte, places int, maximum Rate, precisionErr, rangeErr error) (Rate, error) {
	i, n := 0, len(text)
	negative := false
	if i < n && text[i] == '-' {
		negative = true
		i++
	}
	// Mantissa digits without leading zeros, with the position of the
	// decimal point expressed as an exponent adjustment.
	var digits [40]byte
	count, exponent := 0, 0
	tooLarge, tooPrecise := false, false // digits beyond the 40 kept
	// take appends one mantissa digit; fractional digits move the exponent.
	take := func(ch byte, fractional bool) {
		if fractional {
			exponent--
		}
		switch {
		case count == 0 && ch == '0':
			// a leading zero
		case count < len(digits):
			digits[count] = ch - '0'
			count++
		case !fractional:
			tooLarge = true // ≥ 10^40: larger than any amount or rate
			exponent++
		default:
			exponent++ // a dropped fractional digit: harmless only if zero
			tooPrecise = tooPrecise || ch != '0'
		}
	}
	// JSON grammar: -? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?
	if i == n || text[i] < '0' || text[i] > '9' {
		return Rate{}, errNumberSyntax
	}
	if text[i] == '0' {
		i++
		if i < n && text[i] >= '0' && text[i] <= '9' {
			return Rate{}, errNumberSyntax
		}
	} else {
		for ; i < n && text[i] >= '0' && text[i] <= '9'; i++ {
			take(text[i], false)
		}
	}
	if i < n && text[i] == '.' {
		i++
		if i == n || text[i] < '0' || text[i] > '9' {
			return Rate{}, errNumberSyntax
		}
		for ; i < n && text[i] >= '0' && text[i] <= '9'; i++ {
			take(text[i], true)
		}
	}
	if i < n {
		if text[i] != 'e' && text[i] != 'E' {
			return Rate{}, errNumberSyntax
		}
		i++
		expNegative := false
		if i < n && (text[i] == '+' || text[i] == '-') {
			expNegative = text[i] == '-'
			i++
		}
		if i == n {
			return Rate{}, errNumberSyntax
		}
		e := 0
		for ; i < n; i++ {
			ch := text[i]
			if ch < '0' || ch > '9' {
				return Rate{}, errNumberSyntax
			}
			if e < 1000 {
				e = e*10 + int(ch-'0')
			}
		}
		if expNegative {
			e = -e
		}
		exponent += e
	}
	if tooLarge && !negative {
		return Rate{}, rangeErr
	}
	if tooPrecise && !negative {
		return Rate{}, precisionErr
	}
	// Strip trailing zeros of the mantissa into the exponent.
	for count > 0 && digits[count-1] == 0 {
		count--
		exponent++
	}
	if count == 0 || negative {
		return Rate{}, ErrNotPositive
	}
	shift := exponent + places // value × 10^places = mantissa × 10^shift
	if shift < 0 {
		return Rate{}, precisionErr
	}
	if count+shift > 39 { // 10^39 > 2^128
		return Rate{}, rangeErr
	}
	var v Rate
	for k := 0; k < count+shift; k++ {
		d := uint64(0)
		if k < count {
			d = uint64(digits[k])
		}
		// v = v × 10 + d, refused past 128 bits.
		p := mul128x64(v, 10)
		lo, carry := bits.Add64(p.w0, d, 0)
		hi, carry2 := bits.Add64(p.w1, 0, carry)
		if p.w2 != 0 || carry2 != 0 {
			return Rate{}, rangeErr
		}
		v = Rate{hi, lo}
	}
	if maximum.Less(v) {
		return Rate{}, rangeErr
	}
	return v, nil
}
