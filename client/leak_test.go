package client_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them. The
// client's tests against a real server, and the fasthttp goroutines they
// leave by design, are in gateway/clientcheck.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
