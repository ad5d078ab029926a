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

// BenchmarkFirstWrite is the price of the first write to a page of fresh
// memory, a page at a time (each write faults) and after Slice (one
// system call maps the range in first), per 4 KiB page. Each round maps
// 64 MiB anew and unmaps it.
//
//	go test -run '^$' -bench FirstWrite -count 5 ./internal/prefault
func BenchmarkFirstWrite(b *testing.B) {
	const size = 64 << 20
	for _, populated := range []bool{false, true} {
		name := "faulted"
		if populated {
			name = "populated"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				m, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
				if err != nil {
					b.Fatal(err)
				}
				if populated {
					Slice(m)
				}
				for i := 0; i < size; i += pageBytes {
					m[i] = 1
				}
				if err := syscall.Munmap(m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size/pageBytes), "ns/page")
		})
	}
}
