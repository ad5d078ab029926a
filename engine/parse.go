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
	var x decimalText
	if err := x.scan(text); err != nil {
		return Rate{}, err
	}
	return x.scaled(places, maximum, precisionErr, rangeErr)
}

// decimalText is a number as parseScaled reads it: its mantissa's digits
// without leading zeros, at most 40 of them, and the power of ten they
// are multiplied by.
type decimalText struct {
	digits               [40]byte
	count, exponent      int
	negative             bool
	tooLarge, tooPrecise bool // digits beyond the 40 kept
}

// take appends one mantissa digit; fractional digits move the exponent.
func (x *decimalText) take(ch byte, fractional bool) {
	if fractional {
		x.exponent--
	}
	switch {
	case x.count == 0 && ch == '0':
		// a leading zero
	case x.count < len(x.digits):
		x.digits[x.count] = ch - '0'
		x.count++
	case !fractional:
		x.tooLarge = true // ≥ 10^40: larger than any amount or rate
		x.exponent++
	default:
		x.exponent++ // a dropped fractional digit: harmless only if zero
		x.tooPrecise = x.tooPrecise || ch != '0'
	}
}

// scan reads text by JSON's number grammar:
// -? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?
func (x *decimalText) scan(text []byte) error {
	i, n := 0, len(text)
	if i < n && text[i] == '-' {
		x.negative = true
		i++
	}
	if i == n || text[i] < '0' || text[i] > '9' {
		return errNumberSyntax
	}
	if text[i] == '0' {
		i++
		if i < n && text[i] >= '0' && text[i] <= '9' {
			return errNumberSyntax
		}
	} else {
		for ; i < n && text[i] >= '0' && text[i] <= '9'; i++ {
			x.take(text[i], false)
		}
	}
	if i < n && text[i] == '.' {
		i++
		if i == n || text[i] < '0' || text[i] > '9' {
			return errNumberSyntax
		}
		for ; i < n && text[i] >= '0' && text[i] <= '9'; i++ {
			x.take(text[i], true)
		}
	}
	if i == n {
		return nil
	}
	if text[i] != 'e' && text[i] != 'E' {
		return errNumberSyntax
	}
	i++
	expNegative := false
	if i < n && (text[i] == '+' || text[i] == '-') {
		expNegative = text[i] == '-'
		i++
	}
	if i == n {
		return errNumberSyntax
	}
	e := 0
	for ; i < n; i++ {
		ch := text[i]
		if ch < '0' || ch > '9' {
			return errNumberSyntax
		}
		if e < 1000 {
			e = e*10 + int(ch-'0')
		}
	}
	if expNegative {
		e = -e
	}
	x.exponent += e
	return nil
}

// scaled is x × 10^places as an integer of at most 128 bits and at most
// maximum: precisionErr if that is not a whole number, rangeErr if it is
// too large, ErrNotPositive for zero or less.
func (x *decimalText) scaled(places int, maximum Rate, precisionErr, rangeErr error) (Rate, error) {
	if x.tooLarge && !x.negative {
		return Rate{}, rangeErr
	}
	if x.tooPrecise && !x.negative {
		return Rate{}, precisionErr
	}
	// Strip trailing zeros of the mantissa into the exponent.
	count, exponent := x.count, x.exponent
	for count > 0 && x.digits[count-1] == 0 {
		count--
		exponent++
	}
	if count == 0 || x.negative {
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
			d = uint64(x.digits[k])
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
