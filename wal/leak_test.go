package wal

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: a Log
// that was not closed leaves its committer (and Pebble's background
// goroutines) running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
