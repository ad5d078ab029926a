package actors

import (
	"bytes"
	"testing"
)

// TestIDSourceMintsWithoutGarbage pins what minting costs: nothing, an id
// or a reference (an engine.Ref is a value). A reference's buffer, handed
// to the reader, escaped to the heap once: a 16-byte piece of garbage for
// each, two a quote.
func TestIDSourceMintsWithoutGarbage(t *testing.T) {
	s := NewIDSource(bytes.NewReader(bytes.Repeat([]byte{0x5a, 0xa5, 0x3c}, 1<<20)))
	if n := testing.AllocsPerRun(100, func() { _ = s.UUID() }); n != 0 {
		t.Errorf("UUID: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.Reference("ALC-", 12) }); n != 0 {
		t.Errorf("Reference: %v allocations, want 0", n)
	}
}

func TestIDSourceReads(t *testing.T) {
	src := make([]byte, 4096)
	for i := range src {
		src[i] = byte(i)
	}
	s := NewIDSource(bytes.NewReader(src))
	id := s.UUID()
	if want := [16]byte{0, 1, 2, 3, 4, 5, 6&0x0f | 0x40, 7, 8&0x3f | 0x80, 9, 10, 11, 12, 13, 14, 15}; id != want {
		t.Errorf("UUID = %x, want %x", id, want)
	}
	// 16..27 are the next bytes: their low five bits pick the characters.
	if got, want := s.Reference("ALC-", 12).String(), "ALC-"+"GHJKMNPQRSTV"; got != want {
		t.Errorf("Reference = %q, want %q", got, want)
	}
	// A read longer than the scratch buffer takes the same bytes in order.
	buf := make([]byte, 200)
	s.read(buf)
	for i, b := range buf {
		if want := byte(28 + i); b != want {
			t.Fatalf("read byte %d = %d, want %d", i, b, want)
		}
	}
}
