package wal

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestChecksumPreemptibly: summing a chunk at a time gives the checksum
// of the whole, at and around the chunk's size and over several chunks.
func TestChecksumPreemptibly(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 3*checksumChunk+17)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, n := range []int{0, 1, checksumChunk - 1, checksumChunk, checksumChunk + 1, 2 * checksumChunk, len(data)} {
		if got, want := checksumPreemptibly(data[:n]), crc32.Checksum(data[:n], castagnoli); got != want {
			t.Errorf("%d bytes: %08x, want %08x", n, got, want)
		}
	}
}
