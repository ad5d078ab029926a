//go:build linux

package sse

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// Settings of the benchmark (see doc.go).
const (
	childEnv       = "OJA_SSE_BENCH_CLIENT"
	addressEnv     = "OJA_SSE_BENCH_ADDR"
	keysEnv        = "OJA_SSE_BENCH_KEYS"
	subscribersEnv = "OJA_SSE_BENCH_SUBSCRIBERS"

	subscribersDefault = 10_000
	// streamsPerKey stays within the gateway's sseStreamsPerKeyMax.
	streamsPerKey = 10
	// dialParallelism bounds the child's concurrent connection attempts.
	dialParallelism = 128
	// sseBenchChildMax ends a child that outlives its parent's interest.
	sseBenchChildMax = 10 * time.Minute
	// openMax bounds opening every subscriber; roundMax one iteration.
	openMax  = 3 * time.Minute
	roundMax = 10 * time.Second

	// The bar (spec §8 at scale).
	p99Max             = 500 * time.Millisecond
	perSubscriberBytes = 12 << 10
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(runSubscribers())
	}
	code := m.Run()
	for _, s := range slots {
		s.stop()
	}
	os.Exit(code)
}

// ---- The server side (this process) -----------------------------------------

// fanoutFixture is a server and the child holding its subscribers, shared
// by every run of one benchmark (the framework calls it several times with
// growing b.N; opening 10,000 streams once is enough).
type fanoutFixture struct {
	tb          *fixtureTB
	subscribers int
	child       *exec.Cmd
	childIn     io.WriteCloser
	childOut    *bufio.Reader
	round       int
	// change moves the rate the subscribers follow for round; it returns
	// the rate's text, which they wait for, and when the move began.
	change func(round int) (rate string, start time.Time, err error)
	// streams is the number of streams the server has open.
	streams func() int

	heapPerSubscriber, heapStackPerSubscriber, sysPerSubscriber float64 // bytes
	openTook                                                    time.Duration
}

// A fixture per benchmark: the Oja server, and the bare writer
// (floor_test.go). One is open at a time: the two would need twice the
// file descriptors.
var (
	oja   fixtureSlot
	floor fixtureSlot
	slots = []*fixtureSlot{&oja, &floor}
)

// fixtureSlot holds one benchmark's fixture, made on its first run.
type fixtureSlot struct {
	fixture *fanoutFixture
	err     error
	skip    string
}

// get returns s's fixture, made with start (after stopping the other
// slot's) when it is not open; b is skipped or failed when it could not be
// made.
func (s *fixtureSlot) get(b *testing.B, start func(tb *fixtureTB) (address string, keys []string, f *fanoutFixture)) *fanoutFixture {
	if s.fixture == nil && s.err == nil && s.skip == "" {
		for _, other := range slots {
			other.stop()
		}
		s.fixture, s.skip, s.err = newFanoutFixture(b, start)
	}
	if s.skip != "" {
		b.Skip(s.skip)
	}
	if s.err != nil {
		b.Fatal(s.err)
	}
	return s.fixture
}

// stop ends s's fixture, if open.
func (s *fixtureSlot) stop() {
	if s.fixture != nil {
		s.fixture.stop()
		s.fixture = nil
	}
}

func BenchmarkFanout(b *testing.B) {
	runFanout(b, oja.get(b, startOja), true)
}

// startOja starts the Oja server, funds one pool and creates the keys the
// subscribers use.
func startOja(tb *fixtureTB) (address string, keys []string, f *fanoutFixture) {
	server := gatewaytest.Start(tb, gatewaytest.Options{Dir: tb.dir})
	pool := server.NewPool(tb, engine.ModeSandbox, gatewaytest.NGNUSDT, "bench", "0.000625", "1000000")
	for i := 0; i*streamsPerKey < subscribersWanted(tb); i++ {
		c := server.Sys.Admin(&actors.CreateClient{Name: fmt.Sprintf("bench-%d", i)})
		if c.Err != nil || c.Result != engine.ResultOK {
			tb.Fatalf("create client: %v %v", c.Err, c.Result)
		}
		k := server.Sys.Admin(&actors.CreateKey{Client: c.Client.ID, Mode: engine.ModeSandbox})
		if k.Err != nil || k.Result != engine.ResultOK {
			tb.Fatalf("create key: %v %v", k.Err, k.Result)
		}
		keys = append(keys, k.Secret)
	}
	f = &fanoutFixture{streams: server.Streams}
	f.change = func(round int) (string, time.Time, error) {
		base, _ := pool.Rate.Units()
		rate := engine.RateFromUnits(base + uint64(round)*1_000_000) // + round × 10^-12
		start := time.Now()
		reply := server.Sys.ChangePool(&actors.PoolCommand{Pool: pool.ID, Rate: rate})
		if reply.Err != nil || reply.Result != engine.ResultOK {
			return "", start, fmt.Errorf("change rate: %v %v", reply.Err, reply.Result)
		}
		return string(engine.AppendRate(nil, rate)), start, nil
	}
	return server.Addr(), keys, f
}

// runFanout runs b.N rounds on f and reports the delays; checked (the Oja
// server, not the floor) also reports memory per idle subscriber and fails
// b past the bars.
func runFanout(b *testing.B, f *fanoutFixture, checked bool) {
	var delays []time.Duration
	cpuBefore := processCPU(b)
	b.ResetTimer()
	for range b.N {
		d, err := f.changeRate()
		if err != nil {
			b.Fatal(err)
		}
		delays = append(delays, d...)
	}
	b.StopTimer()
	cpu := processCPU(b) - cpuBefore
	slices.Sort(delays)
	p50, p99, worst := delays[len(delays)/2], delays[len(delays)*99/100], delays[len(delays)-1]
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(float64(f.subscribers), "subscribers")
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(ms(worst), "max-ms")
	b.ReportMetric(ms(cpu)/float64(b.N), "server-cpu-ms/change")
	b.Logf("%d subscribers (opened in %s); %d deliveries: p50 %s, p99 %s, max %s",
		f.subscribers, f.openTook.Round(time.Millisecond), len(delays), p50, p99, worst)
	if !checked {
		return
	}
	b.ReportMetric(f.heapPerSubscriber/1024, "heap-KiB/sub")
	b.ReportMetric(f.heapStackPerSubscriber/1024, "heap+stack-KiB/sub")
	b.ReportMetric(f.sysPerSubscriber/1024, "sys-KiB/sub")
	b.Logf("per idle subscriber: heap %.1f KiB, heap+stack %.1f KiB, sys %.1f KiB",
		f.heapPerSubscriber/1024, f.heapStackPerSubscriber/1024, f.sysPerSubscriber/1024)
	if p99 > p99Max {
		b.Errorf("p99 delivery %s; want at most %s", p99, p99Max)
	}
	if f.heapStackPerSubscriber > perSubscriberBytes {
		b.Errorf("%.1f KiB of heap and stack per idle subscriber; want at most %d KiB",
			f.heapStackPerSubscriber/1024, perSubscriberBytes>>10)
	}
}

// subscribersWanted is the number of subscribers to open:
// OJA_SSE_BENCH_SUBSCRIBERS, else subscribersDefault.
func subscribersWanted(tb *fixtureTB) int {
	if v := os.Getenv(subscribersEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			tb.Fatalf("%s=%q: want a positive number", subscribersEnv, v)
		}
		return n
	}
	return subscribersDefault
}

// newFanoutFixture starts a server with start, measures memory, starts the
// child and waits until every subscriber has its opening frames. skip is
// set when the machine cannot hold the subscribers.
func newFanoutFixture(b *testing.B, start func(tb *fixtureTB) (address string, keys []string, f *fanoutFixture)) (f *fanoutFixture, skip string, err error) {
	dir, err := os.MkdirTemp("", "oja-sse-bench-")
	if err != nil {
		return nil, "", err
	}
	tb := &fixtureTB{TB: b, dir: dir}
	defer func() {
		if r := recover(); r != nil {
			failure, ok := r.(fixtureFailure)
			if !ok {
				panic(r)
			}
			tb.cleanup()
			f, err = nil, errors.New(string(failure))
		}
		if err != nil && f != nil {
			f.stop()
			f = nil
		}
	}()
	subscribers := subscribersWanted(tb)
	if err := raiseFileLimit(uint64(subscribers) + 1024); err != nil {
		tb.cleanup()
		return nil, err.Error(), nil
	}
	address, keys, f := start(tb)
	f.tb, f.subscribers = tb, subscribers

	before := settledMemory()
	started := time.Now()
	f.child = exec.Command(os.Args[0])
	f.child.Env = append(os.Environ(), childEnv+"=1", addressEnv+"="+address,
		keysEnv+"="+strings.Join(keys, ","), subscribersEnv+"="+strconv.Itoa(subscribers))
	f.child.Stderr = os.Stderr
	if f.childIn, err = f.child.StdinPipe(); err != nil {
		return f, "", err
	}
	out, err := f.child.StdoutPipe()
	if err != nil {
		return f, "", err
	}
	f.childOut = bufio.NewReaderSize(out, 1<<20)
	if err := f.child.Start(); err != nil {
		return f, "", err
	}
	line, err := f.readChild(openMax)
	if err != nil {
		return f, "", fmt.Errorf("opening %d subscribers: %w", subscribers, err)
	}
	if line != "READY "+strconv.Itoa(subscribers) {
		return f, "", fmt.Errorf("child: %q", line)
	}
	f.openTook = time.Since(started)
	if n := f.streams(); n != subscribers {
		return f, "", fmt.Errorf("%d streams open on the server; want %d", n, subscribers)
	}
	after := settledMemory()
	n := float64(subscribers)
	f.heapPerSubscriber = (float64(after.HeapInuse) - float64(before.HeapInuse)) / n
	f.heapStackPerSubscriber = (float64(after.HeapInuse+after.StackInuse) - float64(before.HeapInuse+before.StackInuse)) / n
	f.sysPerSubscriber = (float64(after.Sys) - float64(before.Sys)) / n
	return f, "", nil
}

// changeRate moves the pool's rate (so the consensus) and returns how long
// the rate_update took to reach each subscriber.
func (f *fanoutFixture) changeRate() ([]time.Duration, error) {
	f.round++
	text, start, err := f.change(f.round)
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(f.childIn, "ROUND %s %d\n", text, start.UnixNano()); err != nil {
		return nil, err
	}
	line, err := f.readChild(roundMax + 5*time.Second)
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(line)
	if len(fields) < 2 || fields[0] != "RESULT" {
		return nil, fmt.Errorf("child: %.200q", line)
	}
	if fields[1] != "0" {
		return nil, fmt.Errorf("round %d: %s of %d subscribers did not get rate %s within %s",
			f.round, fields[1], f.subscribers, text, roundMax)
	}
	delays := make([]time.Duration, 0, len(fields)-2)
	for _, v := range fields[2:] {
		us, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("child delay %q", v)
		}
		delays = append(delays, time.Duration(us)*time.Microsecond)
	}
	if len(delays) != f.subscribers {
		return nil, fmt.Errorf("%d delays; want %d", len(delays), f.subscribers)
	}
	return delays, nil
}

// readChild reads one line of the child's output within timeout.
func (f *fanoutFixture) readChild(timeout time.Duration) (string, error) {
	type result struct {
		line string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		line, err := f.childOut.ReadString('\n')
		done <- result{strings.TrimSuffix(line, "\n"), err}
	}()
	select {
	case r := <-done:
		return r.line, r.err
	case <-time.After(timeout):
		return "", fmt.Errorf("no answer from the subscriber process within %s", timeout)
	}
}

// stop ends the child, then the server.
func (f *fanoutFixture) stop() {
	if f.child != nil && f.child.Process != nil {
		_, _ = io.WriteString(f.childIn, "QUIT\n")
		_ = f.childIn.Close()
		exited := make(chan struct{})
		go func() { _ = f.child.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = f.child.Process.Kill()
			<-exited
		}
	}
	f.tb.cleanup()
}

// processCPU is the CPU time this process (the server's side, not the
// subscribers') has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// settledMemory is the memory in use after garbage collection.
func settledMemory() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// raiseFileLimit makes room for need open files, within the hard limit.
func raiseFileLimit(need uint64) error {
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
		return fmt.Errorf("getrlimit: %v", err)
	}
	if limit.Cur >= need {
		return nil
	}
	if limit.Max < need {
		return fmt.Errorf("needs %d open files; the hard limit is %d (set %s lower)", need, limit.Max, subscribersEnv)
	}
	limit.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
		return fmt.Errorf("setrlimit %d: %v", need, err)
	}
	return nil
}

// fixtureTB lets gatewaytest build a server that outlives one benchmark
// run: cleanups wait for TestMain, failures become errors.
type fixtureTB struct {
	testing.TB
	dir      string
	mu       sync.Mutex
	cleanups []func()
}

type fixtureFailure string

func (t *fixtureTB) Helper()                           {}
func (t *fixtureTB) TempDir() string                   { return t.dir }
func (t *fixtureTB) Logf(format string, args ...any)   {}
func (t *fixtureTB) Log(args ...any)                   {}
func (t *fixtureTB) Errorf(format string, args ...any) { t.Fatalf(format, args...) }
func (t *fixtureTB) Fatalf(format string, args ...any) {
	panic(fixtureFailure(fmt.Sprintf(format, args...)))
}
func (t *fixtureTB) Fatal(args ...any) { panic(fixtureFailure(fmt.Sprint(args...))) }
func (t *fixtureTB) Cleanup(fn func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, fn)
}

func (t *fixtureTB) cleanup() {
	t.mu.Lock()
	fns := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
	_ = os.RemoveAll(t.dir)
}
