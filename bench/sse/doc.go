// Package sse benchmarks the rate stream's fan-out (spec §8): one Oja
// server on loopback, 10,000 concurrent subscribers, a rate change, and how
// long it takes to reach every one of them; and how much server memory an
// idle subscriber costs.
//
// Run:
//
//	go test -C bench -run '^$' -bench 'Fanout|Loopback' -benchtime 5x -count 3 ./sse/
//
// which runs BenchmarkFanoutFloor, BenchmarkLoopbackDelivery and
// BenchmarkFanout, side by side in one run. BenchmarkFanoutFloor is the floor of this machine: the same child and
// subscribers served by a bare writer that only writes one rate_update
// frame (of the gateway's size and shape, as one chunk) to each connection
// in turn. The Oja server's delays over the floor's are its own cost; what
// the floor takes is the kernel's (on loopback, a write also runs the
// receiver's TCP input and wakes it) and the subscribers'.
//
// BenchmarkLoopbackDelivery is the floor under that floor: what write(2)
// and read(2) of one frame over loopback TCP cost, with no server and no
// Go poller, and so what 10,000 deliveries cost the machine's cores in
// those two system calls alone (cpu-ms/10k; divided by the cores, the
// earliest the last of 10,000 subscribers on this machine can have read).
//
// BenchmarkFanout starts the server in the test process and the subscribers
// in a child process (the same test binary, re-executed with
// OJA_SSE_BENCH_CLIENT=1), so that the memory measured in-process
// (runtime.MemStats, after a GC) is the server's alone and each process
// needs only one file descriptor per subscriber. Each iteration changes the
// one NGN/USDT sandbox pool's rate through System.ChangePool and waits
// until every subscriber has read the rate_update carrying the new rate.
// The child's subscribers are bare sockets read by one epoll reader per
// core, which polls every millisecond when nothing is ready
// (subscribers_test.go): they stand in for clients on other machines, so
// they take as little of the two cores as they can.
//
// Reported metrics:
//
//	p50-ms, p99-ms, max-ms   delay from the ChangePool call to a subscriber
//	                         having read the frame, over every subscriber
//	                         and iteration of the run
//	server-cpu-ms/change     CPU time (user and system) of the test process,
//	                         the server's side, per iteration: the writes'
//	                         system calls and whatever the server does
//	                         around them
//	heap-KiB/sub             HeapInuse growth ÷ subscribers, idle streams
//	heap+stack-KiB/sub       HeapInuse + StackInuse growth ÷ subscribers
//	sys-KiB/sub              Sys growth ÷ subscribers
//
// The floor reports the delays only. The package runs on Linux only
// (epoll). BenchmarkFanout fails when p99
// exceeds 500 ms or heap+stack exceeds 12 KiB per subscriber.
// OJA_SSE_BENCH_SUBSCRIBERS overrides the 10,000; the file-descriptor
// limit is raised within its hard limit, and a benchmark is skipped when
// that is not enough. One benchmark's server and child are open at a time
// (kept across its runs, replaced when the other benchmark runs). The
// child exits when its stdin closes or after sseBenchChildMax.
package sse
