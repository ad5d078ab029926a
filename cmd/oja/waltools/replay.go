package waltools

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway"
	"github.com/oja-exchange/oja/wal"
)

// ---- replay ---------------------------------------------------------------------------

// Source is what the tools read of a log (*wal.Log); an interface so
// that tests can hand verify a log with faults no real store produces.
// LatestSnapshot is the newest snapshot Snapshots passes to its fn, when
// that walk ends without an error: verify relies on it.
type Source interface {
	Replay(from uint64, fn func(seq uint64, rec []byte) error) error
	Stats() (wal.Stats, error)
	LatestSnapshot() (seq uint64, data []byte, ok bool, err error)
	FirstRetained() (uint64, error)
	Snapshots(fn func(seq uint64, data []byte) error) error
}

// retainedStart is where a replay of the log starts: the empty state
// before seq 1 or — once log retention deleted the records before
// FirstRetained — the base snapshot at FirstRetained-1, into which they
// were folded (the events are the truth; that snapshot is the only
// stand-in the log keeps for the deleted ones).
func retainedStart(log Source) (*engine.State, uint64, error) {
	first, err := log.FirstRetained()
	if err != nil {
		return nil, 0, err
	}
	if first <= 1 {
		return engine.NewState(), 0, nil
	}
	base := first - 1
	var state *engine.State
	err = log.Snapshots(func(seq uint64, data []byte) error {
		if seq != base {
			return nil
		}
		s, err := actors.DecodeState(data)
		if err != nil {
			return fmt.Errorf("wal: the snapshot at seq %d, where the retained log starts, does not decode: %w", base, err)
		}
		state = s
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if state == nil {
		return nil, 0, fmt.Errorf("wal: records 1..%d were deleted by log retention and the snapshot at seq %d "+
			"that stands for them is missing: restore from a backup", base, base)
	}
	return state, base, nil
}

// errBeforeRetention is a point asked for that log retention deleted.
type errBeforeRetention struct {
	base   uint64
	baseAt int64
}

func (e *errBeforeRetention) Error() string {
	return fmt.Sprintf("wal replay: that point is before the log's retention: records 1..%d were deleted by "+
		"--log-retention; the oldest state kept is at seq %d (%s); ask for a point at or after it, or use an older backup",
		e.base, e.base, fmtMillis(e.baseAt))
}

// ReplayInto rebuilds state from the log (from seq 1, or from the retained
// log's base snapshot) up to a stop condition: stop(seq, at) is true for
// the first record not to apply (at: its time, unix ms). A stop point
// before the retained log's start is an error. The records apply through
// an actors.Replica, as on the live service: every ForgetEvery records it
// forgets the quotes that ended longer than quoteRetention (the service's
// --retention; 0 keeps every one) before, so the state is the one the
// service's replica holds at that record.
func ReplayInto(log Source, stop func(seq uint64, at int64) bool, quoteRetention time.Duration) (*engine.State, uint64, error) {
	state, from, err := retainedStart(log)
	if err != nil {
		return nil, 0, err
	}
	if from > 0 && stop != nil && stop(from, state.LastAt) {
		return nil, 0, &errBeforeRetention{from, state.LastAt}
	}
	st, err := log.Stats()
	if err != nil {
		return nil, 0, err
	}
	p := newProgress(st.LastSeq)
	errStop := errors.New("stop")
	last := from
	replica := actors.NewReplica(state, from, quoteRetention)
	err = log.Replay(from, func(seq uint64, rec []byte) error {
		p.tick(seq)
		ev, err := engine.DecodeEvent(rec)
		if err != nil {
			return fmt.Errorf("wal: corrupt record at seq %d: %w", seq, err)
		}
		if stop != nil && stop(seq, ev.Time()) {
			if from == 0 && seq == 1 {
				// Before the log's first record there is no state to
				// show: the empty one is no point the service was at.
				return fmt.Errorf("wal replay: that point is before the log's first record (seq 1, %s): ask for a point at or after it",
					fmtMillis(ev.Time()))
			}
			return errStop
		}
		if err := replica.ApplyRecord(seq, ev); err != nil {
			var refused *actors.RecordError
			if errors.As(err, &refused) {
				return fmt.Errorf("wal: record at seq %d does not apply: %w", seq, refused.Err)
			}
			return fmt.Errorf("wal: %w", err)
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

// parseUntil reads replay's --until: a sequence number or an RFC 3339 time.
func parseUntil(until string) (func(uint64, int64) bool, error) {
	if until == "" {
		return nil, errors.New("wal replay: --until <seq|RFC3339 time> is required")
	}
	if n, err := strconv.ParseUint(until, 10, 64); err == nil {
		return func(seq uint64, _ int64) bool { return seq > n }, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, until); err == nil {
		ms := t.UnixMilli()
		return func(_ uint64, at int64) bool { return at > ms }, nil
	}
	return nil, fmt.Errorf("wal replay: --until %q is neither a sequence number nor an RFC 3339 time", until)
}

func walReplay(log Source, out io.Writer, until string, quoteRetention time.Duration) error {
	stop, err := parseUntil(until)
	if err != nil {
		return err
	}
	state, last, err := ReplayInto(log, stop, quoteRetention)
	if err != nil {
		return err
	}
	hash := state.Hash()
	fmt.Fprintf(out, "state as of seq %d (%s)\nstate hash %x\n", last, fmtMillis(state.LastAt), hash)
	for _, m := range engine.Modes {
		byStatus := map[engine.Status]int{}
		for q := range state.Quotes.All() {
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
		for _, c := range state.Markets.CurrencyList() {
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
		for _, pair := range bookPairs(state, m) {
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

// bookPairs are the pairs of m's books: the ones in force in the markets'
// order, then any other (pairs no longer in force) in currency order.
func bookPairs(state *engine.State, m engine.Mode) []engine.Pair {
	var pairs []engine.Pair
	for key := range state.Books {
		if key.Mode == m {
			pairs = append(pairs, key.Pair)
		}
	}
	slices.SortFunc(pairs, state.Markets.ComparePairs)
	return pairs
}
