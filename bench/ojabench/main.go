// Command ojabench measures how fast Oja is on this machine and how close it
// runs to the machine's own limits, and writes report.json and PNG charts to
// bench/results/<timestamp>/. See package bench for what each section
// measures.
//
//	go run -C bench ./ojabench                       # everything, ~7 min on 2 cores
//	go run -C bench ./ojabench --quick               # a smoke run of seconds
//	go run -C bench ./ojabench --sections http,wal   # some sections
//	go run -C bench ./ojabench --profile             # plus CPU/heap profiles per section
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/oja-exchange/oja/bench"
)

func main() {
	if code, ok := bench.ChildMain(); ok {
		os.Exit(code)
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ojabench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("ojabench", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "a smoke run of seconds: short rounds, small logs (indicative figures only)")
	sections := fs.String("sections", "", "comma-separated sections to run (default all): "+strings.Join(bench.Sections, ","))
	out := fs.String("out", "bench/results", "results root; the run writes <out>/<timestamp>/")
	work := fs.String("work", "", "scratch directory for the stores (its disk is the one measured; default: the system's temporary directory)")
	keep := fs.Bool("keep", false, "keep the scratch directory (the generated recovery logs) after the run")
	server := fs.String("server", bench.ServerBinary, `HTTP server: "binary" (go build ./cmd/oja, run oja serve) or "inprocess"`)
	profile := fs.Bool("profile", false, "write CPU profiles per section (and a heap profile) next to the report; misses get `go tool pprof -top`")
	rounds := fs.Int("rounds", 0, "rounds per paired measurement (default 5, quick 1)")
	sizes := fs.String("sizes", "", "quotes for recovery and memory, comma-separated (default 100000,1000000; quick 10000,50000)")
	seed := fs.Uint64("seed", 0, "seed of the generated logs and the request mix (default 1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	cfg := bench.Config{Quick: *quick, Out: *out, Work: *work, Keep: *keep, Server: *server, Profile: *profile,
		Rounds: *rounds, Seed: *seed}
	if *sections != "" {
		cfg.Sections = strings.Split(*sections, ",")
	}
	if *sizes != "" {
		for _, s := range strings.Split(*sizes, ",") {
			n, err := strconv.Atoi(strings.ReplaceAll(strings.TrimSpace(s), "_", ""))
			if err != nil {
				return fmt.Errorf("--sizes: %w", err)
			}
			cfg.Sizes = append(cfg.Sizes, n)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.Run(ctx, cfg, os.Stderr)
	if err != nil {
		return err
	}
	bench.WriteSummary(os.Stdout, rep)
	return nil
}
