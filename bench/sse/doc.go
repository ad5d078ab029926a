// Package sse benchmarks the rate stream's fan-out (spec §8): one Oja
// server on loopback, 10,000 concurrent subscribers, a rate change, and how
// long it takes to reach every one of them; and how much server memory an
// idle subscriber costs.
//
// Run:
//
//	go test -C bench -run '^$' -bench Fanout -benchtime 5x -count 3 ./sse/
//
// which runs BenchmarkFanoutFloor and BenchmarkFanout, side by side in one
// run. BenchmarkFanoutFloor is the floor of this machine: the same child and
// subscribers served by a bare writer that only writes one rate_update
// frame (of the gateway's size and shape, as one chunk) to each connection
// in turn. The Oja server's delays over the floor's are its own cost; what
// the floor takes is the kernel's (on loopback, a write also runs the
// receiver's TCP input and wakes it) and the subscribers'.
//
// BenchmarkFanout starts the server in the test process and the subscribers
// in a child process (the same test binary, re-executed with
// OJA_SSE_BENCH_CLIENT=1), so that the memory measured in-process
// (runtime.MemStats, after a GC) is the server's alone and each process
// needs only one file descriptor per subscriber. Each iteration changes the
// one NGN/USDT sandbox pool's rate through System.ChangePool and waits
// until every subscriber has read the rate_update carrying the new rate.
//
// Reported metrics:
//
//	p50-ms, p99-ms, max-ms   delay from the ChangePool call to a subscriber
//	                         having read the frame, over every subscriber
//	                         and iteration of the run
//	heap-KiB/sub             HeapInuse growth ÷ subscribers, idle streams
//	heap+stack-KiB/sub       HeapInuse + StackInuse growth ÷ subscribers
//	sys-KiB/sub              Sys growth ÷ subscribers
//
// The floor reports the delays only. BenchmarkFanout fails when p99
// exceeds 500 ms or heap+stack exceeds 12 KiB per subscriber.
// OJA_SSE_BENCH_SUBSCRIBERS overrides the 10,000; the file-descriptor
// limit is raised within its hard limit, and a benchmark is skipped when
// that is not enough. One benchmark's server and child are open at a time
// (kept across its runs, replaced when the other benchmark runs). The
// child exits when its stdin closes or after sseBenchChildMax.
package sse
