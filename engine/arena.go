package engine

import (
	"unsafe"

	"github.com/oja-exchange/oja/internal/prefault"
)

// bulkArena hands out the strings and allocation lists of a bulk decode —
// a snapshot's (DecodeState), a long replay's quotes (EventDecoder) — from
// shared chunks instead of an allocation each: four of the five heap
// allocations a decoded quote made (its reference and Idempotency-Key, its
// allocation's pool name and reference, its allocation list).
// BenchmarkSnapshotDecode at 150k quotes: 751k allocations to 2.1k, 155 to
// 128 ms. A chunk lives as long as any of
// its pieces, like a quote slab: its quotes were created together and age
// out together. Pieces are never written after they are handed out (a
// string's bytes are immutable; allocation lists are shared, never
// modified, and handed out with their capacity cut to their length).
//
// Each chunk is twice the one before, up to a bound (1 MiB of strings,
// 8,192 allocations), and its pages are mapped in at once
// (internal/prefault): a decode writes every byte of it.
type bulkArena struct {
	bytes  []byte       // the free tail of the current string chunk
	allocs []Allocation // the free tail of the current allocation chunk
	// stringChunk and allocChunk are the sizes of the next chunks (0:
	// the first's).
	stringChunk, allocChunk int
}

const (
	// arenaStringChunk is the first string chunk's size (a size class:
	// no tail left unused); a string longer than arenaStringMax gets its
	// own.
	arenaStringChunk    = 32 << 10
	arenaStringChunkMax = 32 * arenaStringChunk
	arenaStringMax      = 512
	// arenaAllocChunk is the first allocation chunk's length: 512
	// allocations of 112 bytes fill 7 heap pages exactly. A longer list
	// gets its own.
	arenaAllocChunk    = 512
	arenaAllocChunkMax = 16 * arenaAllocChunk
	arenaAllocMax      = 16
)

// grow is the size of the next chunk after one of n (0: none yet), from
// first up to most.
func grow(n, first, most int) int {
	if n == 0 {
		return first
	}
	return min(2*n, most)
}

// str returns b as a string.
func (a *bulkArena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > arenaStringMax {
		return string(b)
	}
	if len(a.bytes) < len(b) {
		a.stringChunk = grow(a.stringChunk, arenaStringChunk, arenaStringChunkMax)
		a.bytes = make([]byte, a.stringChunk)
		prefault.Slice(a.bytes)
	}
	s := a.bytes[:len(b):len(b)]
	a.bytes = a.bytes[len(b):]
	copy(s, b)
	return unsafe.String(&s[0], len(s))
}

// allocations returns a list of n zero allocations, its capacity n.
func (a *bulkArena) allocations(n int) []Allocation {
	if n > arenaAllocMax {
		return make([]Allocation, n)
	}
	if len(a.allocs) < n {
		a.allocChunk = grow(a.allocChunk, arenaAllocChunk, arenaAllocChunkMax)
		a.allocs = make([]Allocation, a.allocChunk)
		prefault.Slice(a.allocs)
	}
	out := a.allocs[:n:n]
	a.allocs = a.allocs[n:]
	return out
}
