// Package bench is Oja's benchmark harness: one command that says how fast
// Oja is on this machine and how close each layer runs to the machine's own
// limits, measured in the same run so the ratios hold on a noisy, shared
// machine.
//
//	go run -C bench ./ojabench [--quick] [--sections engine,actors,http,wal,recovery,memory] [--profile]
//	make bench                                  # the same, full
//
// A run writes bench/results/<timestamp>/report.json, the PNG charts
// (latency.png, engine.png, recovery.png, throughput.png) and, with
// --profile, profiles/*.pprof; prints a Markdown summary on stdout and a
// progress line on stderr. Results are never committed (bench/results/ is
// ignored).
//
// # Sections
//
//  1. engine: Book.Allocate on books of 1, 8, 64 and 1,000 pools for fill
//     widths 1 to 64, both directions, run in-process with
//     testing.Benchmark. The cases are engine/allocate_bench_test.go's
//     BenchmarkAllocate/pools=N/fill=W[/dir=destination], rebuilt here from
//     the engine's exported API (that file is test code) and reported under
//     the same names: ns/op, quotes allocated per second, heap allocs/op.
//  2. actors: 32 × GOMAXPROCS concurrent callers of System.CreateQuote on a
//     real wal.Log, Sync on and off, no HTTP: quotes/s, per-call latency,
//     records per group commit.
//  3. http: a real server on loopback — by default the oja binary, built
//     from ./cmd/oja and started as `oja serve --demo --max-open-quotes 0
//     --max-key-share 1 --access-log=false --sync=true`; --server inprocess wires the same
//     parts inside this process. First closed loops over 64 connections:
//     /livez (the ceiling of this server and client on this machine) and
//     create-quote, alternating, and their ratio. Then an open-loop sweep
//     of a partner mix (create 50 %, get 30 %, accept+complete 10 %, cancel
//     10 %): operations are scheduled at fixed intervals and each latency
//     is measured from its scheduled time into an HDR histogram, so a
//     server that stalls is charged for every operation that waited
//     (no coordinated omission). The rates are a fixed grid, 100 × 1.35^k
//     ops/s (100 × 2^k in a quick run), so that runs compare step for
//     step: the sweep starts at the grid's highest rate at or below a
//     fifth of the closed-loop create rate and rises a step of the grid at
//     a time until a step fails twice in a row (p99 over 10 ms, under 95 %
//     of the schedule done, or over 1 % errors); then Rounds steps run at
//     half the highest passing rate and the one with the median p99 is
//     kept. Each step
//     also records the server's group commits (write + fsync) from its
//     log's metrics, which tell a disk stall from a CPU one.
//  4. wal: 32 × GOMAXPROCS appenders each waiting on wal.Log.AppendWait
//     (Sync on) against the same appenders each committing its record with
//     db.Apply(batch, pebble.Sync) on raw Pebble, same record size, same
//     disk, alternating rounds.
//  5. recovery: logs of 100,000 and 1,000,000 quotes built with the engine
//     (Book.Allocate, Quote.Accept/Cancel, Treasury.CompleteFunded, State.Apply) and
//     appended with Sync off; then time to ready — wal.Open, actors.Recover,
//     actors.Start, as `oja serve` does, each start in a fresh child
//     process whose heap comes fresh from the kernel as a real start's
//     does — replaying from the first event,
//     and again from a snapshot of the final state (engine.EncodeState,
//     saved with wal.Log.SaveSnapshot), against a raw Pebble scan of the
//     same store; then replay's two parts alone, decoding every record and
//     applying the decoded events (each as Recover does it), the larger of
//     which bounds what a replay can reach (RecoverySize.RatioCeiling). Of every ten quotes one
//     is accepted and completed, one cancelled, eight stay open.
//  6. memory: VmRSS after a GC of a running actors.System holding 100,000
//     and 1,000,000 open quotes, each size in a fresh child process (the
//     harness re-executes itself; see ChildMain).
//
// Every paired figure is measured in Config.Rounds rounds (5) and reported
// as the median; every ratio is the median of per-round ratios, both sides
// of a round having run back to back. The report also records the
// machine's load average and CPU and IO pressure before and after the run:
// on a shared machine, figures are only as good as its quiet. The targets of the issue are checked
// in Report.Targets; with --profile a missed target carries `go tool pprof
// -top` of the profile that explains it.
//
// # Limits
//
// Every loop is bounded in count and time: rounds (roundsMax), generated
// quotes (quotesGeneratedMax), per-round durations (durationMax), sweep
// steps (sweepStepsMax, sweepRetriesMax), operations in flight
// (openLoopInFlightMax), connections (httpConnections,
// openLoopConnectionsMax), each request (requestTimeoutMax), the wait for a
// step's last answers (stepGraceMax), the build (buildMax), the server's
// start and stop (readyMax, stopMax) and a child (childRunMax). Traffic goes
// to 127.0.0.1 only.
//
// # Embedding
//
// A binary that calls Run must call ChildMain first thing in main (or
// TestMain), so that the recovery and memory sections can re-execute it;
// without it they measure in-process.
package bench
