package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway"
	"github.com/oja-exchange/oja/wal"
)

const walUsage = `usage: oja wal <command> [--data DIR] [flags]

  stats                         records, bytes, first/last sequence and time, counts by event type
  dump [--from N] [--limit N] [--json]
                                one record per line (--json: one JSON object per line)
  verify                        checksums, sequence continuity, replay and ledger check;
                                exits 1 naming the first bad sequence
  replay --until <seq|RFC3339>  the state as of that point: quotes by status, balances,
                                pools, ledger check

All work offline on a stopped server's data dir; a running server's is refused.
`

// walProgressEvery is how many records pass between progress lines on a
// terminal.
const walProgressEvery = 100000

func walCommand(args []string) error {
	if len(args) < 1 {
		fmt.Fprint(os.Stderr, walUsage)
		return exitCode(2)
	}
	cmd := args[0]
	fs := flag.NewFlagSet("wal "+cmd, flag.ContinueOnError)
	data := fs.String("data", envOr("OJA_DATA", "./data"), "data dir of a stopped server")
	from := fs.Uint64("from", 0, "dump: first sequence to print")
	limit := fs.Uint64("limit", 0, "dump: at most this many records (0 = all)")
	asJSON := fs.Bool("json", false, "dump: one JSON object per line")
	until := fs.String("until", "", "replay: last sequence number, or an RFC 3339 time")
	fs.Usage = func() { fmt.Fprint(os.Stderr, walUsage) }
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if _, err := os.Stat(storeDir(*data)); err != nil {
		return fmt.Errorf("wal: no store in %s: %w", *data, err)
	}
	log, err := wal.Open(storeDir(*data), wal.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer log.Close()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	switch cmd {
	case "stats":
		return walStats(log, out)
	case "dump":
		return walDump(log, out, *from, *limit, *asJSON)
	case "verify":
		return walVerify(log, out)
	case "replay":
		return walReplay(log, out, *until)
	}
	fmt.Fprint(os.Stderr, walUsage)
	return exitCode(2)
}

// progress prints a line on stderr every walProgressEvery records when
// stderr is a terminal.
type progress struct {
	on    bool
	total uint64
	start time.Time
}

func newProgress(total uint64) *progress {
	info, err := os.Stderr.Stat()
	return &progress{on: err == nil && info.Mode()&os.ModeCharDevice != 0, total: total, start: time.Now()}
}

func (p *progress) tick(seq uint64) {
	if p.on && seq%walProgressEvery == 0 {
		fmt.Fprintf(os.Stderr, "\r%d / %d records (%.0f/s)", seq, p.total, float64(seq)/time.Since(p.start).Seconds())
	}
}

func (p *progress) done() {
	if p.on {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
}

func walStats(log *wal.Log, out io.Writer) error {
	st, err := log.Stats()
	if err != nil {
		return err
	}
	counts := map[engine.EventType]uint64{}
	var firstAt, lastAt int64
	p := newProgress(st.LastSeq)
	err = log.Replay(0, func(seq uint64, rec []byte) error {
		p.tick(seq)
		ev, err := engine.DecodeEvent(rec)
		if err != nil {
			return fmt.Errorf("wal: record %d: %w", seq, err)
		}
		counts[ev.Type()]++
		if firstAt == 0 {
			firstAt = ev.Time()
		}
		lastAt = ev.Time()
		return nil
	})
	p.done()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "records     %d\nbytes       %d\ndisk bytes  %d\nfirst seq   %d  %s\nlast seq    %d  %s\nsnapshots   %d\n",
		st.Records, st.Bytes, st.DiskBytes, st.FirstSeq, fmtMillis(firstAt), st.LastSeq, fmtMillis(lastAt), st.Snapshots)
	types := make([]engine.EventType, 0, len(counts))
	for t := range counts {
		types = append(types, t)
	}
	slices.Sort(types)
	for _, t := range types {
		fmt.Fprintf(out, "  %-18s %d\n", t, counts[t])
	}
	return nil
}

func fmtMillis(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// dumpRecord is one --json line. Field names are stable: seq, type, at,
// event (the event's own fields; amounts in minor units, rates as decimals).
type dumpRecord struct {
	Seq   uint64       `json:"seq"`
	Type  string       `json:"type"`
	At    string       `json:"at"`
	Event engine.Event `json:"event"`
}

func walDump(log *wal.Log, out io.Writer, from, limit uint64, asJSON bool) error {
	printed := uint64(0)
	errStop := errors.New("limit reached")
	start := uint64(0)
	if from > 0 {
		start = from - 1
	}
	enc := json.NewEncoder(out)
	err := log.Replay(start, func(seq uint64, rec []byte) error {
		if limit > 0 && printed >= limit {
			return errStop
		}
		ev, err := engine.DecodeEvent(rec)
		if err != nil {
			return fmt.Errorf("wal: record %d: %w", seq, err)
		}
		printed++
		if asJSON {
			return enc.Encode(dumpRecord{Seq: seq, Type: ev.Type().String(), At: fmtMillis(ev.Time()), Event: ev})
		}
		body, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%d %s %s %s\n", seq, fmtMillis(ev.Time()), ev.Type(), body)
		return err
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// replayInto rebuilds state from the log up to a stop condition.
func replayInto(log *wal.Log, stop func(seq uint64, ev engine.Event) bool) (*engine.State, uint64, error) {
	state := engine.NewState()
	st, err := log.Stats()
	if err != nil {
		return nil, 0, err
	}
	p := newProgress(st.LastSeq)
	errStop := errors.New("stop")
	var last uint64
	err = log.Replay(0, func(seq uint64, rec []byte) error {
		p.tick(seq)
		ev, err := engine.DecodeEvent(rec)
		if err != nil {
			return fmt.Errorf("wal: corrupt record at seq %d: %w", seq, err)
		}
		if stop != nil && stop(seq, ev) {
			return errStop
		}
		if err := state.Apply(ev); err != nil {
			return fmt.Errorf("wal: record at seq %d does not apply: %w", seq, err)
		}
		last = seq
		return nil
	})
	p.done()
	if err != nil && !errors.Is(err, errStop) {
		return nil, last, err
	}
	return state, last, nil
}

func walVerify(log *wal.Log, out io.Writer) error {
	state, last, err := replayInto(log, nil)
	if err != nil {
		fmt.Fprintln(out, "FAIL:", err)
		return exitCode(1)
	}
	ok := true
	for _, m := range engine.Modes {
		r := state.LedgerCheck(m)
		fmt.Fprintf(out, "ledger %-7s %s\n", m, string(gateway.AppendLedgerReport(nil, r)))
		ok = ok && r.OK
	}
	hash := state.Hash()
	fmt.Fprintf(out, "records 1..%d verified; state hash %x\n", last, hash[:8])
	if !ok {
		fmt.Fprintln(out, "FAIL: ledger check")
		return exitCode(1)
	}
	fmt.Fprintln(out, "OK")
	return nil
}

func walReplay(log *wal.Log, out io.Writer, until string) error {
	if until == "" {
		return errors.New("wal replay: --until <seq|RFC3339 time> is required")
	}
	var stop func(uint64, engine.Event) bool
	if n, err := strconv.ParseUint(until, 10, 64); err == nil {
		stop = func(seq uint64, _ engine.Event) bool { return seq > n }
	} else if t, err := time.Parse(time.RFC3339Nano, until); err == nil {
		ms := t.UnixMilli()
		stop = func(_ uint64, ev engine.Event) bool { return ev.Time() > ms }
	} else {
		return fmt.Errorf("wal replay: --until %q is neither a sequence number nor an RFC 3339 time", until)
	}
	state, last, err := replayInto(log, stop)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "state as of seq %d (%s)\n", last, fmtMillis(state.LastAt))
	for _, m := range engine.Modes {
		byStatus := map[engine.Status]int{}
		for _, q := range state.Quotes {
			if q.Mode == m {
				byStatus[q.Status]++
			}
		}
		fmt.Fprintf(out, "\n[%s]\nquotes:", m)
		for _, s := range engine.Statuses {
			fmt.Fprintf(out, " %s=%d", s, byStatus[s])
		}
		fmt.Fprintln(out)
		fmt.Fprintln(out, "balances (clearing = money outside the marketplace):")
		for _, c := range engine.Currencies {
			var wallets, liquidity, held, proceeds engine.Amount
			for _, a := range state.Treasuries[m].Wallets {
				if a.Currency == c {
					wallets += a.Balance
				}
			}
			for _, p := range state.Pools {
				if p.Mode != m {
					continue
				}
				if p.Pair.Destination == c {
					liquidity += p.Liquidity.Balance
					held += p.Liquidity.Held
				}
				if p.Pair.Source == c {
					proceeds += p.Proceeds.Balance
				}
			}
			fmt.Fprintf(out, "  %-4s wallets=%s pool_liquidity=%s held=%s pool_proceeds=%s clearing=%s\n", c,
				engine.AppendAmount(nil, wallets, c), engine.AppendAmount(nil, liquidity, c),
				engine.AppendAmount(nil, held, c), engine.AppendAmount(nil, proceeds, c),
				engine.AppendAmount(nil, state.ClearingBalance(m, c), c))
		}
		fmt.Fprintln(out, "pools (by pair, then price-time priority):")
		for _, pair := range engine.Pairs {
			for _, e := range state.Book(m, pair).Entries() {
				p := state.Pools[e.Pool]
				status := "suspended"
				if p.Active {
					status = "active"
				}
				fmt.Fprintf(out, "  %s %-8s %-28q rate=%s balance=%s available=%s %s trades=%d\n", p.ID, p.Pair, p.Name,
					engine.AppendRate(nil, p.Rate), engine.AppendAmount(nil, p.Liquidity.Balance, p.Pair.Destination),
					engine.AppendAmount(nil, p.Liquidity.Available(), p.Pair.Destination), status, p.Completed)
			}
		}
		r := state.LedgerCheck(m)
		fmt.Fprintf(out, "ledger check: %s\n", gateway.AppendLedgerReport(nil, r))
	}
	return nil
}
