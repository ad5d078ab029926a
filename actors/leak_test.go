package actors_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: a
// System that was not stopped (its actors, expiry timers' callbacks) or a
// log that was not closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
