package engine

// RefBytesMax bounds a Ref's text.
const RefBytesMax = 16

// Ref is a reference the service makes for a quote — its bank pay-in
// reference (OJA- and 10 characters) and each allocation's (ALC- and 12) —
// held in the quote's or allocation's own 16 bytes, where a string is a
// 16-byte header there and a 16-byte heap block of its own. Its text is
// at most RefBytesMax bytes, none of them NUL; decoders refuse a longer
// one as corrupt (the service never made one).
type Ref struct{ b [RefBytesMax]byte }

// MakeRef is the Ref of text, false if text does not fit one.
func MakeRef[T string | []byte](text T) (Ref, bool) {
	var r Ref
	if len(text) > RefBytesMax {
		return r, false
	}
	for i := range len(text) {
		if text[i] == 0 {
			return r, false
		}
	}
	copy(r.b[:], text)
	return r, true
}

// MustRef is MakeRef for a text known to fit (the service's own, tests').
// It panics otherwise.
func MustRef(text string) Ref {
	r, ok := MakeRef(text)
	if !ok {
		panic("engine: not a reference: " + text)
	}
	return r
}

// Len is the length of r's text.
func (r Ref) Len() int {
	for i, c := range r.b {
		if c == 0 {
			return i
		}
	}
	return RefBytesMax
}

// IsZero reports whether r is the empty reference.
func (r Ref) IsZero() bool { return r.b[0] == 0 }

// String is r's text.
func (r Ref) String() string { return string(r.b[:r.Len()]) }

// AppendText appends r's text to b.
func (r *Ref) AppendText(b []byte) []byte { return append(b, r.b[:r.Len()]...) }

// MarshalText is r's text (JSON dumps of the log).
func (r Ref) MarshalText() ([]byte, error) { return r.AppendText(nil), nil }
