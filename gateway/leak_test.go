package gateway_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/oja-exchange/oja/internal/simchain"
)

// TestMain fails the package's tests if any goroutine outlives them: a
// server whose listeners, rate streams, actors or log were not shut down.
//
// NB: five fasthttp goroutines are not ours to stop and are ignored. Its
// worker pool's cleaner sleeps MaxIdleWorkerDuration (10 s) between looks at
// its stop channel, so it outlives a Shutdown by up to that long; a
// forwarding client's connection cleaner likewise sleeps up to its idle
// timeout before it sees that Shutdown closed its connections; a
// fasthttp.Client's host cleaner (mCleaner, the benchmarks' clients) looks
// once a second for idle hosts and ends with none left; and
// updateServerDate and the default dialer's address cache cleaner
// (tcpAddrsClean) are process-wide, started on first use, by design. A server that was not shut down still shows (its Serve loop, our
// listener goroutine, its actors and Pebble), so they hide nothing of ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, append(simchain.IgnoredGoroutines(), // the OpenAPI test's simulated chain
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*TCPDialer).tcpAddrsClean"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*Client).mCleaner"),
	)...)
}
