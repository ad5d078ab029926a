package engine

import (
	"encoding/binary"
	"strings"
	"testing"
)

func TestRef(t *testing.T) {
	for _, text := range []string{"", "O", "OJA-6F1C2A9B0D", "ALC-7K3M9Q2XPB4R", "a b\"c\\"} {
		r, ok := MakeRef(text)
		if !ok || r.String() != text || r.Len() != len(text) || r.IsZero() != (text == "") ||
			string(r.AppendText([]byte("x"))) != "x"+text {
			t.Errorf("MakeRef(%q) = %q, %v", text, r.String(), ok)
		}
		if rb, ok := MakeRef([]byte(text)); !ok || rb != r {
			t.Errorf("MakeRef([]byte(%q)) differs", text)
		}
	}
	for _, text := range []string{strings.Repeat("R", RefBytesMax+1), "OJA-\x00"} {
		if _, ok := MakeRef(text); ok {
			t.Errorf("MakeRef(%q) accepted", text)
		}
	}
}

// TestCodecRefusesLongReference: a reference no Ref holds is corrupt, as
// a length-prefixed string and in a quote's fixed record.
func TestCodecRefusesLongReference(t *testing.T) {
	long := strings.Repeat("R", RefBytesMax+1)
	e := encoder{}
	e.str(long)
	d := decoder{buf: e.buf}
	if d.ref(); d.err == nil {
		t.Error("a 17-byte reference string decoded")
	}
	e = encoder{}
	e.str("OJA-\x00")
	d = decoder{buf: e.buf}
	if d.ref(); d.err == nil {
		t.Error("a reference holding a NUL decoded")
	}

	q := Quote{ID: QuoteID{1}, Mode: ModeSandbox, Pair: Pair{CurrencyNGN, CurrencyUSDT}, Direction: DirectionSource,
		Status: StatusPending, Reference: MustRef("OJA-0123456789AB")}
	q.setAllocations([]Allocation{{Reference: MustRef("ALC-0123456789AB"), Source: 1, Destination: 1}})
	e = encoder{}
	encodeQuoteFixed(&e, &q)
	var back Quote
	d = decoder{buf: e.buf}
	if decodeQuoteFixed(&d, &back); d.err != nil || back.Reference != q.Reference {
		t.Fatalf("a 16-byte reference: %v, %q", d.err, back.Reference.String())
	}
	// The same record with a 17-byte reference: its length, one more byte.
	rec := append([]byte{}, e.buf[:quoteFixedLen+16]...)
	rec = append(append(rec, 'Z'), e.buf[quoteFixedLen+16:]...)
	binary.LittleEndian.PutUint16(rec[qoReference:], 17)
	d = decoder{buf: rec}
	if decodeQuoteFixed(&d, &back); d.err == nil {
		t.Error("a quote record with a 17-byte reference decoded")
	}
}
