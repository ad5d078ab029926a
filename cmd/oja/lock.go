package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/oja-exchange/oja/cmd/oja/waltools"
)

// dataDirLockName is the file whose lock a serving oja holds on its data
// dir, single node or cluster node alike: a second oja serve on the same
// data dir is refused at once (exit 3) with one message, before it opens
// anything (the store, the Raft log, the event history).
const dataDirLockName = "serve.lock"

// lockDataDir takes dir's lock for the life of the process (the kernel
// releases it when the process ends, however it ends). A lock another
// process holds is waltools.ExitInUse, with the message printed.
func lockDataDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, dataDirLockName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			fmt.Fprintf(os.Stderr, "oja serve: refused: %s is in use by another running oja (it holds the data dir's lock, %s).\n"+
				"Stop that one first, or give this one another --data.\n", dir, path)
			return nil, waltools.ExitInUse
		}
		return nil, fmt.Errorf("data dir lock %s: %w", path, err)
	}
	return func() { _ = f.Close() }, nil
}
