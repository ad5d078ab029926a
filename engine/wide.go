package engine

import "math/bits"

// Fixed-width unsigned arithmetic for the conversions (money.go): a source
// amount (below 2^50) times a Rate (below 2^100) times a power of ten (at
// most 10^36, below 2^120) needs up to 192 bits before it is divided back
// down. Nothing here allocates.

// u192 is an unsigned 192-bit integer, w2 the most significant word.
type u192 struct{ w2, w1, w0 uint64 }

// mul128x64 is r × m.
func mul128x64(r Rate, m uint64) u192 {
	carry, w0 := bits.Mul64(r.lo, m)
	h2, h1 := bits.Mul64(r.hi, m)
	w1, c := bits.Add64(h1, carry, 0)
	return u192{h2 + c, w1, w0}
}

// mulPow10 is x × 10^e; overflow reports a product of 2^192 or more.
// REQUIRES: e >= 0.
func (x u192) mulPow10(e int) (u192, bool) {
	for e > 0 {
		step := min(e, powerStepMax)
		f := powersOfTen[step]
		c0, w0 := bits.Mul64(x.w0, f)
		c1, w1 := bits.Mul64(x.w1, f)
		c2, w2 := bits.Mul64(x.w2, f)
		if c2 != 0 {
			return u192{}, true
		}
		var carry uint64
		w1, carry = bits.Add64(w1, c0, 0)
		w2, carry = bits.Add64(w2, c1, carry)
		if carry != 0 {
			return u192{}, true
		}
		x = u192{w2, w1, w0}
		e -= step
	}
	return x, false
}

// divUint64 is x ÷ d and the remainder. REQUIRES: d > 0.
func (x u192) divUint64(d uint64) (u192, uint64) {
	q2, r := x.w2/d, x.w2%d
	q1, r := bits.Div64(r, x.w1, d)
	q0, r := bits.Div64(r, x.w0, d)
	return u192{q2, q1, q0}, r
}

// divPow10 is floor(x ÷ 10^e) and whether anything was dropped (for a
// ceiling). REQUIRES: e >= 0.
func (x u192) divPow10(e int) (u192, bool) {
	inexact := false
	for e > 0 {
		step := min(e, powerStepMax)
		var r uint64
		x, r = x.divUint64(powersOfTen[step])
		inexact = inexact || r != 0
		e -= step
	}
	return x, inexact
}

// less reports whether x < y.
func (x u192) less(y u192) bool {
	if x.w2 != y.w2 {
		return x.w2 < y.w2
	}
	if x.w1 != y.w1 {
		return x.w1 < y.w1
	}
	return x.w0 < y.w0
}

// sub is x − y. REQUIRES: y <= x.
func (x u192) sub(y u192) u192 {
	w0, b := bits.Sub64(x.w0, y.w0, 0)
	w1, b := bits.Sub64(x.w1, y.w1, b)
	w2, _ := bits.Sub64(x.w2, y.w2, b)
	return u192{w2, w1, w0}
}

// divRate is floor(x ÷ r) when that fits 64 bits, and whether a remainder
// was left; ok is false when the quotient needs more than 64 bits.
// REQUIRES: r > 0.
func (x u192) divRate(r Rate) (q uint64, inexact, ok bool) {
	// The quotient fits 64 bits exactly when x < r × 2^64, that is when x's
	// top two words are below r.
	if x.w2 > r.hi || (x.w2 == r.hi && x.w1 >= r.lo) {
		return 0, false, false
	}
	if r.hi == 0 {
		q, rem := bits.Div64(x.w1, x.w0, r.lo)
		return q, rem != 0, true
	}
	// Knuth's algorithm D for one quotient word: normalise so the divisor's
	// top bit is set, estimate from the top words (at most 2 too large),
	// correct against the exact product.
	// NB: a Go shift by 64 or more yields 0, so s = 0 needs no case.
	s := uint(bits.LeadingZeros64(r.hi))
	v1, v0 := r.hi<<s|r.lo>>(64-s), r.lo<<s
	// x < r × 2^64 < 2^(192−s): shifting left by s loses nothing.
	u2, u1, u0 := x.w2<<s|x.w1>>(64-s), x.w1<<s|x.w0>>(64-s), x.w0<<s
	var qhat uint64
	if u2 >= v1 {
		qhat = ^uint64(0)
	} else {
		qhat, _ = bits.Div64(u2, u1, v1)
	}
	n := u192{u2, u1, u0}
	d := Rate{v1, v0}
	p := mul128x64(d, qhat)
	for n.less(p) {
		qhat--
		p = p.sub(u192{0, d.hi, d.lo})
	}
	rem := n.sub(p)
	return qhat, rem != (u192{}), true
}

// add is x + y; overflow reports a sum of 2^192 or more.
func (x u192) add(y u192) (u192, bool) {
	w0, c := bits.Add64(x.w0, y.w0, 0)
	w1, c := bits.Add64(x.w1, y.w1, c)
	w2, c := bits.Add64(x.w2, y.w2, c)
	return u192{w2, w1, w0}, c != 0
}

// RateTimesPow10 is the rate of units × 10^k units (10^k is a quantum of
// the market simulator), or false past 128 bits. REQUIRES: k >= 0.
func RateTimesPow10(units uint64, k int) (Rate, bool) {
	n, overflow := u192{w0: units}.mulPow10(k)
	if overflow || n.w2 != 0 {
		return Rate{}, false
	}
	return Rate{n.w1, n.w0}, true
}

// RoundPow10 is r's units ÷ 10^k rounded half up, or false when that
// needs more than 64 bits. REQUIRES: k >= 0.
func (r Rate) RoundPow10(k int) (uint64, bool) {
	n := u192{0, r.hi, r.lo}
	if k > 0 {
		half, _ := u192{w0: 5}.mulPow10(k - 1)
		n, _ = n.add(half) // below 2^129: no overflow
		n, _ = n.divPow10(k)
	}
	return n.w0, n.w2 == 0 && n.w1 == 0
}

// Digits is the number of decimal digits of r's units (1 for zero).
func (r Rate) Digits() int {
	digits := 1
	for n := (u192{0, r.hi, r.lo}); n.w1 != 0 || n.w0 >= 10; digits++ {
		n, _ = n.divUint64(10)
	}
	return digits
}
