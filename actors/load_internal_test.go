package actors

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// together raises a worker's panic, and a worker's fault reading a mapping
// (as an I/O error under a mapped snapshot file makes), on the caller's
// goroutine once every worker has returned, where the log's guard turns
// a fault into an error; on the worker's own goroutine either would end
// the process.
func TestTogetherRaisesOnTheCaller(t *testing.T) {
	page := os.Getpagesize()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 2*page), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := syscall.Mmap(int(f.Fd()), 0, 2*page, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Skip("no mapped files here:", err)
	}
	defer func() { _ = syscall.Munmap(data) }()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	recovered := func(fns ...func()) (r any) {
		defer func() { r = recover() }()
		together(fns...)
		return nil
	}
	finished := false
	var sum byte
	r := recovered(func() {
		for _, b := range data[page:] {
			sum += b
		}
	}, func() { finished = true })
	if fault, ok := r.(interface{ Addr() uintptr }); !ok || fault.Addr() == 0 {
		t.Errorf("a fault on a worker: recovered %v, want the fault on the caller", r)
	}
	if !finished {
		t.Error("the other worker had not returned")
	}
	if r := recovered(func() {}, func() { panic("boom") }); r != "boom" {
		t.Errorf("a panic on a worker: recovered %v", r)
	}
	if r := recovered(func() {}, func() {}); r != nil {
		t.Errorf("no panic: recovered %v", r)
	}
}
