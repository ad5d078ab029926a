package engine

import (
	"encoding/binary"
	"unsafe"
)

// IdemKey is an Idempotency-Key as a quote and an IdempotencyScope hold
// it. A UUID in its canonical text (36 characters, the hex digits all
// lower or all upper case: what a partner's UUID library prints, and the
// benchmark's keys) takes a 48-byte heap block as a string; IdemKey holds
// a version 4 or 7 one in 16 bytes (its 122 random bits and what restores
// the text), and any other key as its text. The form is canonical — two keys are equal exactly when their texts
// are — so IdemKeys compare, hash and key maps as the texts would; only
// their order differs (sort by String). Codecs write the text: no record
// holds the packed form.
//
// The packed form is 16 bytes whose first is below idemKeyEscape: 2 data
// bits under a version-7 flag (1<<2) and an upper-case flag (1<<3), then
// 120 data bits. A text that could be mistaken for it (its first byte at
// most idemKeyEscape; the gateway admits no such key) is held behind an
// idemKeyEscape byte.
type IdemKey struct{ s string }

const (
	idemKeyEscape  = 0x10
	idemKeyPacked  = 16
	idemKeyUUIDLen = 36
	idemKeyV7      = 1 << 2
	idemKeyUpper   = 1 << 3
)

// MakeIdemKey is the IdemKey of text.
func MakeIdemKey(text string) IdemKey {
	if p, ok := packUUID(text); ok {
		return IdemKey{string(p[:])}
	}
	return IdemKey{escapeKey(text)}
}

// idemKeyOf is the IdemKey of text b, its bytes from a if set.
func idemKeyOf(b []byte, a *bulkArena) IdemKey {
	if p, ok := packUUID(unsafe.String(unsafe.SliceData(b), len(b))); ok {
		b = p[:]
	} else if len(b) > 0 && b[0] <= idemKeyEscape {
		return IdemKey{escapeKey(string(b))}
	}
	if a != nil {
		return IdemKey{a.str(b)}
	}
	return IdemKey{string(b)}
}

func escapeKey(text string) string {
	if len(text) > 0 && text[0] <= idemKeyEscape {
		return string(rune(idemKeyEscape)) + text
	}
	return text
}

// IsZero reports whether k is the empty key (none given).
func (k IdemKey) IsZero() bool { return k.s == "" }

// Len is the length of k's text.
func (k IdemKey) Len() int {
	switch {
	case k.packed():
		return idemKeyUUIDLen
	case len(k.s) > 0 && k.s[0] == idemKeyEscape:
		return len(k.s) - 1
	}
	return len(k.s)
}

// String is k's text.
func (k IdemKey) String() string {
	if k.packed() {
		return string(k.AppendText(make([]byte, 0, idemKeyUUIDLen)))
	}
	if len(k.s) > 0 && k.s[0] == idemKeyEscape {
		return k.s[1:]
	}
	return k.s
}

// AppendText appends k's text to b.
func (k IdemKey) AppendText(b []byte) []byte {
	if !k.packed() {
		if len(k.s) > 0 && k.s[0] == idemKeyEscape {
			return append(b, k.s[1:]...)
		}
		return append(b, k.s...)
	}
	var id [16]byte
	unpackUUID(&id, k.s)
	digits := hexLower
	if k.s[0]&idemKeyUpper != 0 {
		digits = hexUpper
	}
	return appendUUID(b, &id, digits)
}

func (k IdemKey) packed() bool { return len(k.s) == idemKeyPacked && k.s[0] < idemKeyEscape }

const (
	hexLower = "0123456789abcdef"
	hexUpper = "0123456789ABCDEF"
)

// appendUUID appends id's canonical text in digits.
func appendUUID(b []byte, id *[16]byte, digits string) []byte {
	for i, c := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, digits[c>>4], digits[c&15])
	}
	return b
}

// uuidDigitsAt is where each byte's two hex digits start in a UUID's
// canonical text.
var uuidDigitsAt = [16]uint8{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

// hexDigit is a byte's value as a hex digit (low 4 bits), with digitLower
// or digitUpper set for a letter; digitInvalid for anything else.
var hexDigit = func() (t [256]byte) {
	for i := range t {
		t[i] = digitInvalid
	}
	for c := range 10 {
		t['0'+c] = byte(c)
	}
	for c := range 6 {
		t['a'+c] = byte(10+c) | digitLower
		t['A'+c] = byte(10+c) | digitUpper
	}
	return t
}()

const (
	digitLower   = 1 << 4
	digitUpper   = 1 << 5
	digitInvalid = 1 << 6
)

// packUUID packs text if it is a version 4 or 7, RFC 9562 variant UUID in
// canonical text, one case throughout.
func packUUID(text string) (p [idemKeyPacked]byte, ok bool) {
	if len(text) != idemKeyUUIDLen {
		return p, false
	}
	if text[8] != '-' || text[13] != '-' || text[18] != '-' || text[23] != '-' {
		return p, false
	}
	var id [16]byte
	var seen byte // every digit's value and case flags, or-ed
	for k, at := range uuidDigitsAt {
		hi, lo := hexDigit[text[at]], hexDigit[text[at+1]]
		seen |= hi | lo
		id[k] = hi<<4 | lo&0x0f // hi's case flags shift out of the byte
	}
	upper, lower := seen&digitUpper != 0, seen&digitLower != 0
	if seen&digitInvalid != 0 {
		return p, false
	}
	version, variant := id[6]>>4, id[8]>>6
	if upper && lower || version != 4 && version != 7 || variant != 2 {
		return p, false
	}
	// The 122 bits beside the version and variant: hi's 60 then lo's 62,
	// as one 128-bit big-endian number (its top 6 bits zero, where the
	// flags go).
	be := binary.BigEndian
	hi := be.Uint64(id[0:8])
	hi = hi>>16<<12 | hi&0x0fff // drop the version nibble (bits 12..15)
	lo := be.Uint64(id[8:16]) & (1<<62 - 1)
	be.PutUint64(p[0:8], hi>>2)
	be.PutUint64(p[8:16], hi<<62|lo)
	if version == 7 {
		p[0] |= idemKeyV7
	}
	if upper {
		p[0] |= idemKeyUpper
	}
	return p, true
}

// unpackUUID restores the UUID packUUID packed into s.
func unpackUUID(id *[16]byte, s string) {
	be := binary.BigEndian
	var p [idemKeyPacked]byte
	copy(p[:], s)
	p[0] &= 3
	xh, xl := be.Uint64(p[0:8]), be.Uint64(p[8:16])
	hi := xh<<2 | xl>>62 // 60 bits
	lo := xl & (1<<62 - 1)
	version := uint64(4)
	if s[0]&idemKeyV7 != 0 {
		version = 7
	}
	be.PutUint64(id[0:8], hi>>12<<16|version<<12|hi&0x0fff)
	be.PutUint64(id[8:16], 1<<63|lo)
}
