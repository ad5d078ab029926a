package waltools

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway"
	"github.com/oja-exchange/oja/internal/pathcheck"
	"github.com/oja-exchange/oja/wal"
)

// ---- salvage ---------------------------------------------------------------------------

// salvageListMax bounds the lost quotes and events listed one per line;
// the counts are always complete.
const salvageListMax = 200

// salvage writes the intact prefix of a damaged data dir's log into the new
// data dir to (wal.Salvage) with the files a data dir carries besides the
// store, and reports what was kept and what was lost.
func salvage(data, to string, verbose bool, stdout, stderr io.Writer) error {
	if to == "" {
		fmt.Fprintln(stderr, "oja wal salvage: --to NEWDIR is required (a new data dir; the damaged one is never changed)")
		return ExitUsage
	}
	if inside, err := pathcheck.Within(to, data); err != nil || inside {
		fmt.Fprintf(stderr, "oja wal salvage: refused: --to %s is inside the damaged data dir %s; name a directory outside it\n", to, data)
		return ExitUsage
	}
	if entries, err := os.ReadDir(to); err == nil && len(entries) > 0 {
		fmt.Fprintf(stderr, "oja wal salvage: refused: %s is not empty; name a new directory\n", to)
		return ExitUsage
	}
	res, err := wal.Salvage(StoreDir(data), StoreDir(to))
	if errors.Is(err, wal.ErrInUse) {
		fmt.Fprintf(stderr, "oja wal salvage: refused: %s is in use by a running server (the store's lock is held); stop it first\n", data)
		return ExitInUse
	}
	if err != nil {
		fmt.Fprintf(stdout, "FAIL: %v\n", err)
		return ExitFault
	}
	if res.Damage == nil {
		fmt.Fprintf(stdout, "the log in %s is intact (records %d..%d): nothing to salvage, nothing written\n",
			data, res.FirstRetained, res.LastIntact)
		return nil
	}
	for _, name := range []string{"admin.token", "demo.key"} {
		if b, err := os.ReadFile(filepath.Join(data, name)); err == nil {
			if err := os.WriteFile(filepath.Join(to, name), b, 0o600); err != nil {
				return fmt.Errorf("wal salvage: %w", err)
			}
		}
	}
	log, err := wal.Open(StoreDir(to), wal.Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("wal salvage: the salvaged store does not open: %w", err)
	}
	defer log.Close()
	state, last, err := ReplayInto(log, nil, 0)
	if err != nil {
		return fmt.Errorf("wal salvage: the salvaged store does not replay: %w", err)
	}
	out := stdout
	fmt.Fprintf(out, "damage: %v\n", res.Damage)
	fmt.Fprintf(out, "kept: records %d..%d, the state as of %s, written to %s (the damaged %s is unchanged)\n",
		res.FirstRetained, last, fmtMillis(state.LastAt), StoreDir(to), StoreDir(data))
	reportLoss(out, res, state, verbose)
	for _, m := range engine.Modes {
		fmt.Fprintf(out, "ledger %-7s %s\n", m, gateway.AppendLedgerReport(nil, state.LedgerCheck(m)))
	}
	fmt.Fprintf(out, "state hash %x\n", state.Hash())
	fmt.Fprintf(out, "next: check it with \"oja wal verify --data %s\", then serve it with \"oja serve --data %s\"\n", to, to)
	return nil
}

// lostQuote is a quote's events readable past the damage, and the first
// one's sequence.
type lostQuote struct {
	first  uint64
	events []string
}

// lostRecords is what the records readable past the damage held, in
// sequence order: each quote's events (quotes in the order first seen),
// the other events and a count of each type, and the sequences that did
// not decode.
type lostRecords struct {
	quotes     map[engine.QuoteID]*lostQuote
	order      []engine.QuoteID
	others     []string
	otherTypes map[engine.EventType]int
	unreadable []uint64
}

// sortLost sorts the records readable past the damage by what they held.
func sortLost(res *wal.SalvageResult) *lostRecords {
	lost := &lostRecords{quotes: map[engine.QuoteID]*lostQuote{}, otherTypes: map[engine.EventType]int{}}
	for _, seq := range slices.Sorted(maps.Keys(res.PastDamage)) {
		rec := res.PastDamage[seq]
		ev, err := engine.DecodeEvent(rec)
		if rec == nil || err != nil {
			lost.unreadable = append(lost.unreadable, seq)
			continue
		}
		what := fmt.Sprintf("seq %d %s %s", seq, fmtMillis(ev.Time()), ev.Type())
		id, isQuote := quoteOf(ev)
		if !isQuote {
			lost.others = append(lost.others, what)
			lost.otherTypes[ev.Type()]++
			continue
		}
		q := lost.quotes[id]
		if q == nil {
			q = &lostQuote{first: seq}
			lost.quotes[id] = q
			lost.order = append(lost.order, id)
		}
		q.events = append(q.events, fmt.Sprintf("%s (seq %d)", ev.Type(), seq))
	}
	return lost
}

// reportLoss prints the lost sequences and what the records still readable
// past the damage say was in them.
func reportLoss(out io.Writer, res *wal.SalvageResult, kept *engine.State, verbose bool) {
	switch {
	case res.Acknowledged > res.LastIntact:
		fmt.Fprintf(out, "LOST: records %d..%d (%d records); %d of them still readable past the damage, listed below\n",
			res.LastIntact+1, res.Acknowledged, res.Acknowledged-res.LastIntact, readable(res.PastDamage))
	default:
		fmt.Fprintf(out, "LOST: records from %d on, if any were acknowledged: nothing past the damage is readable "+
			"and no acknowledgement mark says how far the log reached\n", res.LastIntact+1)
	}
	lost := sortLost(res)
	fmt.Fprintf(out, "lost quotes: %d with an event past the damage\n", len(lost.order))
	for i, id := range lost.order {
		if i == salvageListMax {
			fmt.Fprintf(out, "  … %d more\n", len(lost.order)-i)
			break
		}
		state := "absent from the kept state"
		if q := kept.Quotes.Get(id); q != nil {
			state = "kept as " + q.Status.String()
		}
		fmt.Fprintf(out, "  quote %s: %s; %s\n", id, strings.Join(lost.quotes[id].events, ", "), state)
	}
	// The other events by type (78 rate changes are one line, not 78);
	// --verbose lists each.
	var byType []string
	for _, typ := range slices.Sorted(maps.Keys(lost.otherTypes)) {
		byType = append(byType, fmt.Sprintf("%s %d", typ, lost.otherTypes[typ]))
	}
	if len(byType) > 0 {
		fmt.Fprintf(out, "lost other events: %d (%s)\n", len(lost.others), strings.Join(byType, ", "))
	} else {
		fmt.Fprintln(out, "lost other events: 0")
	}
	if verbose {
		for _, o := range lost.others {
			fmt.Fprintf(out, "  %s\n", o)
		}
	}
	if res.Acknowledged > res.LastIntact {
		for seq := res.LastIntact + 1; seq <= res.Acknowledged; seq++ {
			if _, ok := res.PastDamage[seq]; !ok {
				lost.unreadable = append(lost.unreadable, seq)
			}
		}
	}
	slices.Sort(lost.unreadable)
	fmt.Fprintf(out, "unreadable lost records: %d%s (what they held is unknown; each may be a quote's event)\n",
		len(lost.unreadable), seqRanges(lost.unreadable))
}

// seqRanges formats ascending sequences as " (seqs 3..7, 9)", or "".
func seqRanges(seqs []uint64) string {
	if len(seqs) == 0 {
		return ""
	}
	var parts []string
	for i := 0; i < len(seqs); {
		j := i
		for j+1 < len(seqs) && seqs[j+1] == seqs[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(seqs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d..%d", seqs[i], seqs[j]))
		}
		i = j + 1
	}
	if len(parts) > salvageListMax {
		parts = append(parts[:salvageListMax], "…")
	}
	return " (seqs " + strings.Join(parts, ", ") + ")"
}

func readable(recs map[uint64][]byte) int {
	n := 0
	for _, rec := range recs {
		if rec != nil {
			n++
		}
	}
	return n
}

// quoteOf is the quote a quote event concerns.
func quoteOf(ev engine.Event) (engine.QuoteID, bool) {
	switch e := ev.(type) {
	case *engine.QuoteCreated:
		return e.Quote, true
	case *engine.QuoteAccepted:
		return e.Quote, true
	case *engine.QuoteCancelled:
		return e.Quote, true
	case *engine.QuoteExpired:
		return e.Quote, true
	case *engine.QuoteCompleted:
		return e.Quote, true
	}
	return engine.QuoteID{}, false
}
