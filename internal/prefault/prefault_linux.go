package prefault

import "syscall"

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14+; the standard
// library's syscall package predates it).
const madvPopulateWrite = 0x17

func populate(addr, n uintptr) {
	// An older kernel answers EINVAL: the pages then fault one by one.
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, addr, n, madvPopulateWrite)
}
