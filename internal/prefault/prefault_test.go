package prefault

import (
	"runtime"
	"testing"
)

// TestSliceLeavesContents: populating changes no byte, of fresh memory or
// of memory written before, and takes slices of any element size and an
// empty one.
func TestSliceLeavesContents(t *testing.T) {
	Slice([]int64(nil))
	fresh := make([]byte, 1<<20)
	Slice(fresh)
	for i, b := range fresh {
		if b != 0 {
			t.Fatalf("fresh byte %d = %d after populating", i, b)
		}
	}
	written := make([]uint32, 300_000)
	for i := range written {
		written[i] = uint32(i) * 2654435761
	}
	Slice(written[:10]) // the whole capacity, from a short slice
	runtime.GC()
	for i, v := range written {
		if v != uint32(i)*2654435761 {
			t.Fatalf("element %d = %d after populating", i, v)
		}
	}
	qs := make([][5]string, 512) // an element of 80 bytes, with pointers
	Slice(qs)
	if qs[511] != ([5]string{}) {
		t.Error("a slice of arrays of strings is not zero after populating")
	}
}
