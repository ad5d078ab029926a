package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestIdemKeyRoundTrip(t *testing.T) {
	for _, c := range []struct {
		text   string
		packed bool
	}{
		{"", false}, {"k", false}, {"order-42", false},
		{"6f1c2a4e-9b0d-4c3e-8a5f-1d2e3f4a5b6c", true},  // v4, lower case
		{"6F1C2A4E-9B0D-4C3E-8A5F-1D2E3F4A5B6C", true},  // upper case
		{"01890a5d-ac96-774b-bcce-b302099a8057", true},  // v7
		{"00000000-0000-4000-8000-000000000000", true},  // digits only (lower)
		{"ffffffff-ffff-7fff-bfff-ffffffffffff", true},  // every bit set
		{"6f1c2a4e-9b0d-4c3e-8A5F-1d2e3f4a5b6c", false}, // mixed case
		{"6f1c2a4e-9b0d-1c3e-8a5f-1d2e3f4a5b6c", false}, // version 1
		{"6f1c2a4e-9b0d-4c3e-ca5f-1d2e3f4a5b6c", false}, // another variant
		{"6f1c2a4e-9b0d-4c3e-8a5f-1d2e3f4a5b6", false},  // short
		{"6f1c2a4e+9b0d-4c3e-8a5f-1d2e3f4a5b6c", false}, // not a dash
		{"6f1c2a4e-9b0d-4c3e-8a5f-1d2e3f4a5b6g", false}, // not a hex digit (second of a pair)
		{"g61c2a4e-9b0d-4c3e-8a5f-1d2e3f4a5b6c", false}, // not hex digits (first of a pair)
		{"6f1c2a4e-9b0d-4c3e-8a5f-1d2e3f4a5b-c", false}, // a dash for a digit
		{"\x00\x01abcdefghijklmn", false}, {"\x10abcdefghijklmno", false}, {"\x11abcdefghijklmno", false}, {"\x03", false},
		{strings.Repeat("x", IdempotencyKeyBytesMax), false},
	} {
		text := c.text
		k := MakeIdemKey(text)
		if got := k.String(); got != text {
			t.Errorf("MakeIdemKey(%q).String() = %q", text, got)
		}
		if got := string(k.AppendText([]byte("p:"))); got != "p:"+text {
			t.Errorf("AppendText of %q = %q", text, got)
		}
		if k.Len() != len(text) || k.IsZero() != (text == "") {
			t.Errorf("%q: Len %d, IsZero %v", text, k.Len(), k.IsZero())
		}
		if d := idemKeyOf([]byte(text), &bulkArena{}); d != k {
			t.Errorf("idemKeyOf(%q) = %q, MakeIdemKey %q", text, d.s, k.s)
		}
		if k.packed() != c.packed {
			t.Errorf("%q packed = %v, want %v", text, k.packed(), c.packed)
		}
	}
}

func TestIdemKeyHoldsAUUIDIn16Bytes(t *testing.T) {
	k := MakeIdemKey("6f1c2a4e-9b0d-4c3e-8a5f-1d2e3f4a5b6c")
	if len(k.s) != 16 {
		t.Fatalf("a UUID key holds %d bytes, want 16", len(k.s))
	}
}

// FuzzIdemKey checks that the form round-trips and is canonical: equal keys
// exactly when the texts are equal.
func FuzzIdemKey(f *testing.F) {
	f.Add("6f1c2a4e-9b0d-4c3e-8a5f-1d2e3f4a5b6c", "01890a5d-ac96-774b-bcce-b302099a8057")
	f.Add("\x00\x01abcdefghijklmn", "\x10\x00\x01abcdefghijklmn")
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, kb := MakeIdemKey(a), MakeIdemKey(b)
		if ka.String() != a || kb.String() != b {
			t.Fatalf("round trip: %q → %q, %q → %q", a, ka.String(), b, kb.String())
		}
		if (ka == kb) != (a == b) {
			t.Fatalf("%q and %q: keys equal %v", a, b, ka == kb)
		}
	})
}

// TestIdemKeyPacksEveryUUID round-trips random version 4 and 7 UUIDs in
// both cases, each packed.
func TestIdemKeyPacksEveryUUID(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 4000 {
		var id [16]byte
		for j := range id {
			id[j] = byte(r.Uint32())
		}
		id[6] = id[6]&0x0f | []byte{0x40, 0x70}[i%2]
		id[8] = id[8]&0x3f | 0x80
		text := string(appendUUID(nil, &id, []string{hexLower, hexUpper}[i/2%2]))
		format := []string{"%x-%x-%x-%x-%x", "%X-%X-%X-%X-%X"}[i/2%2]
		if want := fmt.Sprintf(format, id[:4], id[4:6], id[6:8], id[8:10], id[10:]); text != want {
			t.Fatalf("appendUUID: %s, want %s", text, want)
		}
		k := MakeIdemKey(text)
		if !k.packed() || k.String() != text {
			t.Fatalf("%s: packed %v, text %q", text, k.packed(), k.String())
		}
	}
}
