// Package prefault maps in the pages of memory just allocated, in one
// system call, before a bulk load writes them.
//
// A start that loads a million quotes writes hundreds of MB of fresh heap
// memory; every 4 KiB page of it costs a page fault on its first write,
// and on a virtual machine (Firecracker here) a fault is several
// microseconds. Asking the kernel to populate a whole slab at once
// (MADV_POPULATE_WRITE, Linux 5.14) takes most of that off the load: the
// pages hold zeros either way, so the contents do not change. Elsewhere,
// or on an older kernel, Slice does nothing and the writes fault as before.
package prefault

import "unsafe"

// pageBytes is the granule populated: the smallest page size of the
// platforms Go runs on; a partial page at either end is left to fault.
const pageBytes = 4096

// Slice populates the whole pages of s's backing array up to its
// capacity.
func Slice[T any](s []T) {
	if cap(s) == 0 {
		return
	}
	var zero T
	start := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	end := start + uintptr(cap(s))*unsafe.Sizeof(zero)
	start = (start + pageBytes - 1) &^ (pageBytes - 1)
	end &^= pageBytes - 1
	if end > start {
		_ = populate(start, end-start) // refused: the writes fault as before
	}
}
