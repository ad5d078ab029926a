package engine_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them. The
// engine starts none (doc.go), so any goroutine left is a bug.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
