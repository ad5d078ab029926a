package clientcheck_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: a test
// server left running, or a client connection left open.
//
// NB: the two fasthttp goroutines that outlive a clean shutdown by design
// are ignored, as in gateway's TestMain: the worker pool's cleaner (it
// sleeps up to 10 s between looks at its stop channel) and the process-wide
// server date ticker.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
	)
}
