package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Section names, in the order a run measures them.
const (
	SectionEngine   = "engine"
	SectionActors   = "actors"
	SectionHTTP     = "http"
	SectionWAL      = "wal"
	SectionRecovery = "recovery"
	SectionMemory   = "memory"
)

// Sections lists every section in run order.
var Sections = []string{SectionEngine, SectionActors, SectionHTTP, SectionWAL, SectionRecovery, SectionMemory}

// Server kinds for the HTTP section.
const (
	// ServerBinary builds cmd/oja with the go command and runs `oja serve
	// --demo` as a child process: the load generator and the server do not
	// share a Go runtime, and the server's CPU profile is the server's alone.
	ServerBinary = "binary"
	// ServerInProcess wires the same gateway, actors and log inside this
	// process (as gateway/gatewaytest does). The tests use it: no build.
	ServerInProcess = "inprocess"
)

// Config is one run's settings. The zero value of every field takes the
// default of the mode (Quick or full); see FullConfig and QuickConfig.
type Config struct {
	Quick    bool     // a smoke run of seconds: short rounds, small sizes
	Sections []string // of Sections; empty = all
	// Out is the results root; a run writes Out/<timestamp>/.
	Out string
	// Work is the scratch directory for the stores a run creates; empty =
	// a new directory under the system's temporary directory. Its disk is
	// the disk measured by the WAL and recovery sections.
	Work string
	// Keep leaves the scratch directory in place (its path is in the
	// report's settings), e.g. to inspect a generated log with `oja wal
	// stats --data <dir>/recovery-…`. The recovery logs only: the other
	// sections' stores are removed as they finish.
	Keep    bool
	Server  string // ServerBinary or ServerInProcess
	Profile bool   // write CPU profiles (and a heap profile) per section
	// Root is the module root (where go.mod is); found from the working
	// directory when empty. The binary server is built there.
	Root string

	Rounds int   // rounds of each paired measurement; medians are reported
	Sizes  []int // quotes, for recovery and memory (e.g. 100,000 and 1,000,000)

	EngineBenchTime time.Duration // testing.Benchmark's -benchtime per case and round
	EngineCases     []EngineShape // empty = the mode's cases
	ActorsRound     time.Duration // one round of concurrent CreateQuote callers
	ClosedRound     time.Duration // one closed-loop HTTP round (/livez, create)
	SweepStep       time.Duration // one open-loop step at a fixed arrival rate
	WALRound        time.Duration // one round of WAL or raw Pebble appenders
	Seed            uint64        // of the generated logs and the request mix
}

// EngineShape is one allocation benchmark: a book of Pools pools, a quote
// that exactly Fill of them cover, in one direction.
type EngineShape struct {
	Pools       int  `json:"pools"`
	Fill        int  `json:"fill"`
	Destination bool `json:"destination"`
}

// engineShapesFull are engine/allocate_bench_test.go's BenchmarkAllocate
// cases, both directions.
func engineShapesFull() []EngineShape {
	var out []EngineShape
	for _, s := range []struct{ pools, fill int }{
		{1, 1},
		{8, 1}, {8, 3}, {8, 8},
		{64, 1}, {64, 3}, {64, 8}, {64, 64},
		{1000, 1}, {1000, 3}, {1000, 8}, {1000, 64},
	} {
		out = append(out, EngineShape{s.pools, s.fill, false}, EngineShape{s.pools, s.fill, true})
	}
	return out
}

// FullConfig is the default run: about 7 minutes on 2 cores.
func FullConfig() Config {
	return Config{
		Server:          ServerBinary,
		Rounds:          5,
		Sizes:           []int{100_000, 1_000_000},
		EngineBenchTime: 300 * time.Millisecond,
		EngineCases:     engineShapesFull(),
		ActorsRound:     3 * time.Second,
		ClosedRound:     4 * time.Second,
		SweepStep:       5 * time.Second,
		WALRound:        3 * time.Second,
		Seed:            1,
	}
}

// QuickConfig is the smoke run (--quick): every section, small and short,
// in well under a minute. Its figures are indicative only.
func QuickConfig() Config {
	return Config{
		Quick:           true,
		Server:          ServerBinary,
		Rounds:          1,
		Sizes:           []int{10_000, 50_000},
		EngineBenchTime: 50 * time.Millisecond,
		EngineCases: []EngineShape{
			{1, 1, false}, {8, 3, false}, {8, 3, true}, {64, 8, false}, {1000, 64, false},
		},
		ActorsRound: 500 * time.Millisecond,
		ClosedRound: 500 * time.Millisecond,
		SweepStep:   time.Second,
		WALRound:    500 * time.Millisecond,
		Seed:        1,
	}
}

// withDefaults fills the zero fields from the mode's defaults and checks
// the rest.
func (c Config) withDefaults() (Config, error) {
	d := FullConfig()
	if c.Quick {
		d = QuickConfig()
	}
	if len(c.Sections) == 0 {
		c.Sections = Sections
	}
	for _, s := range c.Sections {
		if !slices.Contains(Sections, s) {
			return c, fmt.Errorf("bench: unknown section %q (want %s)", s, strings.Join(Sections, ", "))
		}
	}
	if c.Server == "" {
		c.Server = d.Server
	}
	if c.Server != ServerBinary && c.Server != ServerInProcess {
		return c, fmt.Errorf("bench: unknown server %q (want %s or %s)", c.Server, ServerBinary, ServerInProcess)
	}
	if c.Out == "" {
		c.Out = "bench/results"
	}
	if c.Rounds <= 0 {
		c.Rounds = d.Rounds
	}
	if c.Rounds > roundsMax {
		return c, fmt.Errorf("bench: at most %d rounds", roundsMax)
	}
	if len(c.Sizes) == 0 {
		c.Sizes = d.Sizes
	}
	for _, n := range c.Sizes {
		if n < 1 || n > quotesGeneratedMax {
			return c, fmt.Errorf("bench: size %d out of range 1..%d", n, quotesGeneratedMax)
		}
	}
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
		*v = min(*v, durationMax)
	}
	set(&c.EngineBenchTime, d.EngineBenchTime)
	set(&c.ActorsRound, d.ActorsRound)
	set(&c.ClosedRound, d.ClosedRound)
	set(&c.SweepStep, d.SweepStep)
	set(&c.WALRound, d.WALRound)
	if len(c.EngineCases) == 0 {
		c.EngineCases = d.EngineCases
	}
	if c.Seed == 0 {
		c.Seed = d.Seed
	}
	return c, nil
}

// selected reports whether the run measures section s.
func (c Config) selected(s string) bool { return slices.Contains(c.Sections, s) }

// Limits of a run: every loop of the harness is bounded in count and time.
const (
	// roundsMax bounds Config.Rounds.
	roundsMax = 20
	// quotesGeneratedMax bounds one generated log or memory run.
	quotesGeneratedMax = 5_000_000
	// durationMax bounds each per-round duration setting.
	durationMax = 60 * time.Second
)
