package gateway

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
	"unicode/utf8"
)

// The JSON writers' fast paths against the standard library: appendTime
// against time's own layout rendering, appendString against encoding/json
// (HTML escaping off, as the gateway writes). Both are on every response.

func TestAppendTimeMatchesLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	edges := []int64{0, 1, 999, -1, -1000, 253402300799999, 253402300800000, -62135596800000,
		-62167219200000, -62167219200001, 951782400000 /* 2000-02-29 */, 4102444799999}
	for i := range 20000 {
		var ms int64
		switch {
		case i < len(edges):
			ms = edges[i]
		case i%4 == 0: // anything, years far outside 0..9999 included
			ms = rng.Int64N(1<<52) - 1<<51
		default: // this era
			ms = 1_600_000_000_000 + rng.Int64N(400_000_000_000)
		}
		want := `"` + time.UnixMilli(ms).UTC().Format(timestampLayout) + `"`
		if got := string(appendTime(nil, ms)); got != want {
			t.Fatalf("appendTime(%d) = %s, want %s", ms, got, want)
		}
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	alphabet := []string{"a", "Z", "0", " ", `"`, `\`, "/", "<", ">", "&", "\n", "\r", "\t", "\x00", "\x1f",
		"\x7f", "é", "₦", "\u2028", "\u2029", "😀", "\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80"}
	for range 20000 {
		var s []byte
		for range rng.IntN(24) {
			s = append(s, alphabet[rng.IntN(len(alphabet))]...)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(string(s)); err != nil {
			t.Fatal(err)
		}
		got := appendString([]byte("x"), string(s))
		if !bytes.Equal(got[1:], bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got[1:], want.Bytes())
		}
		if !utf8.Valid(got) {
			t.Fatalf("appendString(%q) wrote invalid UTF-8: %q", s, got)
		}
	}
}

func BenchmarkJSONWriters(b *testing.B) {
	buf := make([]byte, 0, 256)
	b.Run("time", func(b *testing.B) {
		for i := range b.N {
			buf = appendTime(buf[:0], 1_764_000_000_000+int64(i))
		}
	})
	b.Run("string", func(b *testing.B) {
		for range b.N {
			buf = appendString(buf[:0], "0b3d9c1e-5f8a-4c2d-9e7b-1a2b3c4d5e6f")
		}
	})
}
