package engine

import "errors"

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
	v, err := parseScaled(text, int(c.MinorUnits()), uint64(AmountMax), ErrAmountPrecision, ErrAmountRange)
	return Amount(v), err
}

// ParseRateText parses a JSON number exactly into a Rate (scale 10^18).
func ParseRateText(text []byte) (Rate, error) {
	v, err := parseScaled(text, RateScale, uint64(RateMax), ErrRatePrecision, ErrRateRange)
	return Rate(v), err
}

// parseScaled returns text × 10^places as an exact integer in (0, maximum].
func parseScaled(text []byte, places int, maximum uint64, precisionErr, rangeErr error) (uint64, error) {
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
		return 0, errNumberSyntax
	}
	if text[i] == '0' {
		i++
		if i < n && text[i] >= '0' && text[i] <= '9' {
			return 0, errNumberSyntax
		}
	} else {
		for ; i < n && text[i] >= '0' && text[i] <= '9'; i++ {
			take(text[i], false)
		}
	}
	if i < n && text[i] == '.' {
		i++
		if i == n || text[i] < '0' || text[i] > '9' {
			return 0, errNumberSyntax
		}
		for ; i < n && text[i] >= '0' && text[i] <= '9'; i++ {
			take(text[i], true)
		}
	}
	if i < n {
		if text[i] != 'e' && text[i] != 'E' {
			return 0, errNumberSyntax
		}
		i++
		expNegative := false
		if i < n && (text[i] == '+' || text[i] == '-') {
			expNegative = text[i] == '-'
			i++
		}
		if i == n {
			return 0, errNumberSyntax
		}
		e := 0
		for ; i < n; i++ {
			ch := text[i]
			if ch < '0' || ch > '9' {
				return 0, errNumberSyntax
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
		return 0, rangeErr
	}
	if tooPrecise && !negative {
		return 0, precisionErr
	}
	// Strip trailing zeros of the mantissa into the exponent.
	for count > 0 && digits[count-1] == 0 {
		count--
		exponent++
	}
	if count == 0 || negative {
		return 0, ErrNotPositive
	}
	shift := exponent + places // value × 10^places = mantissa × 10^shift
	if shift < 0 {
		return 0, precisionErr
	}
	if count+shift > 20 {
		return 0, rangeErr
	}
	var v uint64
	for k := 0; k < count+shift; k++ {
		d := uint64(0)
		if k < count {
			d = uint64(digits[k])
		}
		if v > (maximum-d)/10 {
			return 0, rangeErr
		}
		v = v*10 + d
	}
	if v > maximum {
		return 0, rangeErr
	}
	return v, nil
}
