package prefault

import (
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// TestSliceMapsThePagesIn: after Slice, the pages of fresh memory are
// resident (mincore), which fresh memory left alone is not: the call
// reaches the kernel and asks for what it should.
func TestSliceMapsThePagesIn(t *testing.T) {
	const size = 8 << 20
	untouched := make([]byte, size)
	if r := resident(t, untouched); r > 0.5 {
		t.Skipf("%.0f %% of fresh memory is resident before any write: the allocator reused pages here", 100*r)
	}
	populated := make([]byte, size)
	if err := populate(uintptr(unsafe.Pointer(&populated[0]))&^(pageBytes-1)+pageBytes, pageBytes); err == syscall.EINVAL {
		t.Skip("this kernel refuses MADV_POPULATE_WRITE (before 5.14): Slice does nothing here")
	}
	Slice(populated)
	if r := resident(t, populated); r < 0.9 {
		t.Errorf("%.0f %% of the pages are resident after Slice, want all", 100*r)
	}
	runtime.KeepAlive(untouched)
}

// resident is the share of b's whole pages that are in memory.
func resident(t *testing.T, b []byte) float64 {
	t.Helper()
	start := (uintptr(unsafe.Pointer(unsafe.SliceData(b))) + pageBytes - 1) &^ (pageBytes - 1)
	end := (uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(len(b))) &^ (pageBytes - 1)
	vec := make([]byte, (end-start)/pageBytes)
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(unsafe.SliceData(vec)))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	in := 0
	for _, v := range vec {
		in += int(v & 1)
	}
	return float64(in) / float64(len(vec))
}
