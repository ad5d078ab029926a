package prefault

import "syscall"

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14+; the standard
// library's syscall package predates it).
const madvPopulateWrite = 0x17

// populate asks the kernel to map in [addr, addr+n). An older kernel
// answers EINVAL; Slice ignores it, and the pages fault one by one.
func populate(addr, n uintptr) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, addr, n, madvPopulateWrite); errno != 0 {
		return errno
	}
	return nil
}
