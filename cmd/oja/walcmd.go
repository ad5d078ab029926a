package main

// The offline log tools (contract §12): `oja wal stats|dump|verify|replay`
// on a stopped server's data dir.
//
// Each one opens the store read-only. Pebble first replays its own WAL and
// drops a torn, unsynced tail (what a crash or kill -9 leaves); the tools
// cannot see those bytes as records, but they report them (walTail) from
// what Pebble says while opening. A running server holds the store's lock,
// so a tool on its data dir is refused (exit status 3) rather than reading a
// store that is being written.

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway"
	"github.com/oja-exchange/oja/wal"
)

const walUsage = `usage: oja wal <command> [--data DIR] [flags]

  stats                         records, bytes, first/last sequence and time, snapshots,
                                counts by event type, a torn tail if Pebble dropped one
  dump [--from N] [--limit N] [--json]
                                one record per line: "SEQ AT TYPE {event}", or with
                                --json one JSON object per line (shape below)
  verify                        every record's checksum and sequence continuity, decode and
                                replay into a scratch engine, every snapshot against the state
                                replay reaches at its sequence (State.Hash), and the ledger
                                check (contract §3) of both modes; names the FIRST bad
                                sequence ("FAIL: corrupt record at seq 42: checksum mismatch")
  replay --until <seq|RFC3339>  the state as of that point: quotes by status, balances, pools,
                                ledger check and the state hash

All work offline on a stopped server's data dir; a running server's is refused (its lock is
held): stop it, or take an online copy with "oja admin backup DIR" and inspect the copy.
A torn tail (the unsynced end of Pebble's WAL after a crash) is dropped by Pebble when the
store opens; it never holds an acknowledged record (with --sync=true, the default), so it is
reported and tolerated.

Exit status: 0 success; 1 a fault was found (verify) or the command failed; 2 usage;
3 the data dir is in use by a running server.

dump --json: one object per record; the shape is stable (fields are added, never renamed):

  {"seq": 42, "type": "QuoteCreated", "at": "2026-11-21T10:00:00.123Z", "event": {...}}

  seq    the record's sequence number (integer)
  type   the event type: ClientCreated, KeyCreated, KeyRevoked, PoolCreated, PoolRateSet,
         PoolStatusSet, PoolDeposited, PoolWithdrawn, AccountDeposited, QuoteCreated,
         QuoteAccepted, QuoteCancelled, QuoteExpired, QuoteCompleted
  at     when it happened, RFC 3339 UTC with milliseconds
  event  its fields, lower camel case. Ids are UUID strings. Amounts are integers in minor
         units of their currency (NGN and GHS: 2 places, USDT: 6), e.g. 150000 = 1500.00 NGN.
         Rates are JSON numbers in plain decimal (destination units per source unit).
         Optional fields (?) are omitted when empty; all others are always present.

    ClientCreated     clientId, name, wallets: [{accountId, mode, currency}]
    KeyCreated        keyId, clientId, mode, keyHash (hex SHA-256 of the key; never the key)
    KeyRevoked        keyId
    PoolCreated       poolId, mode, name, pair, source, destination, rate, ownerClientId?,
                      poolAccountId, proceedsAccountId
    PoolRateSet       poolId, rate
    PoolStatusSet     poolId, status ("active" or "suspended")
    PoolDeposited     poolId, amount (pool's destination currency)
    PoolWithdrawn     poolId, amount (pool's destination currency)
    AccountDeposited  accountId, amount (the wallet's currency)
    QuoteCreated      quoteId, clientId, keyId, mode, pair, source, destination,
                      amountDirection, amount (source or destination currency, per
                      amountDirection), proposedRate, chain?, reference, channel ("json" or
                      "xml"), idempotencyKey?, requestHash (hex), expiresAt,
                      allocations: [{allocationId, poolId, poolAccountId, poolName, rate,
                      sourceAmount, destinationAmount, reference}],
                      chatMetadata?: {conversationId?, chatQuoteId?, listingId?,
                      initialListingRate?, negotiationStartedAt?, quoteSentAt?}
    QuoteAccepted     quoteId, poolAccountId? (the accountId of a JSON accept), expiresAt,
                      settlement: {kind ("wallet", "bank" or "chain"), accountId?,
                      accountName?, accountNumber?, bankCode?, address?}
    QuoteCancelled    quoteId
    QuoteExpired      quoteId
    QuoteCompleted    quoteId
`

const (
	// walProgressEvery is how many records pass between progress lines on
	// a terminal.
	walProgressEvery = 100000
	// walLedgerCheckEvery is how many records verify replays between two
	// ledger checks. A failing check is then narrowed down to the first bad
	// record by replaying the interval again (verifyLedgerFrom), so a check
	// per record, O(accounts) each, is paid only where the ledger broke.
	walLedgerCheckEvery = 4096
	// walEOFTrailerBytesMax is the most a cleanly closed Pebble WAL file
	// holds after its last batch (its EOF trailer chunk). More than this
	// after the point where Pebble stopped reading is reported as a tail.
	walEOFTrailerBytesMax = 11
)

// Exit statuses of the wal tools (see walUsage).
const (
	walExitFault = exitCode(1)
	walExitUsage = exitCode(2)
	walExitInUse = exitCode(3)
)

func walCommand(args []string) error {
	return runWal(args, os.Stdout, os.Stderr)
}

// runWal runs one wal tool, writing its report to stdout and notes to
// stderr.
func runWal(args []string, stdout, stderr io.Writer) error {
	if len(args) < 1 {
		fmt.Fprint(stderr, walUsage)
		return walExitUsage
	}
	cmd := args[0]
	switch cmd {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, walUsage)
		return nil
	case "stats", "dump", "verify", "replay":
	default:
		fmt.Fprintf(stderr, "oja wal: unknown command %q\n%s", cmd, walUsage)
		return walExitUsage
	}
	fs := flag.NewFlagSet("wal "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", envOr("OJA_DATA", "./data"), "data dir of a stopped server")
	from := fs.Uint64("from", 0, "dump: first sequence to print")
	limit := fs.Uint64("limit", 0, "dump: at most this many records (0 = all)")
	asJSON := fs.Bool("json", false, "dump: one JSON object per line")
	until := fs.String("until", "", "replay: last sequence number, or an RFC 3339 time")
	fs.Usage = func() { fmt.Fprint(stderr, walUsage) }
	if err := fs.Parse(args[1:]); err != nil {
		return walExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "oja wal %s: unexpected argument %q\n", cmd, fs.Arg(0))
		return walExitUsage
	}
	if cmd == "replay" {
		if _, err := parseUntil(*until); err != nil {
			return err
		}
	}
	dir := storeDir(*data)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("wal: no store in %s: %w", *data, err)
	}
	tails := &walTailLogger{}
	log, err := wal.Open(dir, wal.Options{ReadOnly: true, Logger: tails})
	if err != nil {
		// NB: wal has no sentinel for a held lock; its message is the
		// documented one ("wal: data dir is in use").
		if errors.Is(err, wal.ErrInUse) {
			fmt.Fprintf(stderr, "oja wal %s: refused: %s is in use by a running server (the store's lock is held).\n"+
				"Stop the server first, or take an online copy with \"oja admin backup DIR\" and run the tools on DIR.\n", cmd, *data)
			return walExitInUse
		}
		if cmd == "verify" {
			fmt.Fprintf(stdout, "FAIL: the store does not open: %v\n", err)
			return walExitFault
		}
		return err
	}
	defer log.Close()
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	tail := tails.report()
	for _, e := range tails.pebbleErrors() {
		fmt.Fprintf(stderr, "oja wal: pebble reported: %s\n", e)
	}
	switch cmd {
	case "stats":
		return walStats(log, out, tail)
	case "dump":
		writeTailNotes(stderr, tail)
		return walDump(log, out, *from, *limit, *asJSON)
	case "verify":
		return walVerify(log, out, tail)
	default:
		writeTailNotes(stderr, tail)
		return walReplay(log, out, *until)
	}
}

// ---- Torn tails -----------------------------------------------------------------

// walTail is one WAL file whose end Pebble did not replay.
type walTail struct {
	file    string // base name, e.g. 000012.log
	offset  int64  // where Pebble stopped reading
	size    int64  // the file's size
	dropped int64  // bytes after offset
	statErr error  // the file could not be examined
}

func (t walTail) String() string {
	if t.statErr != nil {
		return fmt.Sprintf("WAL %s: replay stopped at byte %d; size unknown: %v", t.file, t.offset, t.statErr)
	}
	return fmt.Sprintf("WAL %s: %d bytes after byte %d (of %d) are not a complete batch; Pebble dropped them on open "+
		"(a torn, unsynced write, or stale space of a recycled WAL file); with --sync=true no acknowledged record is in them",
		t.file, t.dropped, t.offset, t.size)
}

// walTailLogger is the Pebble logger of the tools' read-only open. Pebble
// reports, per WAL file it replays, "WAL … stopped reading at offset:
// (PATH: N)"; comparing N with the file's size tells how much of the file
// was not a complete record. Everything else Pebble says is dropped, except
// errors, which are kept and reported.
//
// NB: this reads a log message, not an API; should Pebble reword it, the
// tools simply report no tail. Verifying the records does not depend on it.
type walTailLogger struct {
	mu     sync.Mutex
	stops  []walTail
	errors []string
}

var walStoppedAt = regexp.MustCompile(`stopped reading at offset: \(([^:()]+): (\d+)\)`)

func (l *walTailLogger) Infof(format string, args ...any) {
	m := walStoppedAt.FindStringSubmatch(fmt.Sprintf(format, args...))
	if m == nil {
		return
	}
	offset, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stops = append(l.stops, walTail{file: m[1], offset: offset})
}

func (l *walTailLogger) Errorf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors = append(l.errors, fmt.Sprintf(format, args...))
}

func (l *walTailLogger) Fatalf(format string, args ...any) { l.Errorf(format, args...) }

// pebbleErrors returns what Pebble reported as errors while opening.
func (l *walTailLogger) pebbleErrors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errors)
}

// report returns the WAL files with a dropped tail.
func (l *walTailLogger) report() []walTail {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []walTail
	for _, t := range l.stops {
		path := t.file
		t.file = filepath.Base(path)
		info, err := os.Stat(path)
		if err != nil {
			t.statErr = err
			out = append(out, t)
			continue
		}
		t.size = info.Size()
		if t.dropped = t.size - t.offset; t.dropped > walEOFTrailerBytesMax {
			out = append(out, t)
		}
	}
	return out
}

func writeTailNotes(w io.Writer, tails []walTail) {
	for _, t := range tails {
		fmt.Fprintf(w, "oja wal: note: torn tail: %s\n", t)
	}
}

// ---- Progress ---------------------------------------------------------------------

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

// ---- stats --------------------------------------------------------------------------

func walStats(log *wal.Log, out io.Writer, tails []walTail) error {
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
	for _, t := range tails {
		fmt.Fprintf(out, "torn tail   %s\n", t)
	}
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

// ---- dump ---------------------------------------------------------------------------

// dumpRecord is one --json line (shape documented in walUsage).
type dumpRecord struct {
	Seq   uint64    `json:"seq"`
	Type  string    `json:"type"`
	At    string    `json:"at"`
	Event dumpEvent `json:"event"`
}

// dumpEvent is the stable JSON form of every event type: which fields each
// type carries is listed in walUsage. Fields that a type always carries are
// set for it even when zero (pointers and non-empty strings); the optional
// ones are omitted when empty.
//
// NB: an explicit conversion rather than json.Marshal of the engine's
// structs: those are free to change shape (and their Go field names are not
// the wire's), while operators' scripts parse this.
type dumpEvent struct {
	QuoteID           string            `json:"quoteId,omitempty"`
	PoolID            string            `json:"poolId,omitempty"`
	ClientID          string            `json:"clientId,omitempty"`
	KeyID             string            `json:"keyId,omitempty"`
	AccountID         string            `json:"accountId,omitempty"`
	Mode              string            `json:"mode,omitempty"`
	Name              *string           `json:"name,omitempty"`
	Pair              string            `json:"pair,omitempty"`
	Source            string            `json:"source,omitempty"`
	Destination       string            `json:"destination,omitempty"`
	Rate              json.Number       `json:"rate,omitempty"`
	Status            string            `json:"status,omitempty"`
	AmountDirection   string            `json:"amountDirection,omitempty"`
	Amount            *int64            `json:"amount,omitempty"`
	ProposedRate      json.Number       `json:"proposedRate,omitempty"`
	Chain             string            `json:"chain,omitempty"`
	Reference         *string           `json:"reference,omitempty"`
	Channel           string            `json:"channel,omitempty"`
	IdempotencyKey    string            `json:"idempotencyKey,omitempty"`
	RequestHash       string            `json:"requestHash,omitempty"`
	OwnerClientID     string            `json:"ownerClientId,omitempty"`
	PoolAccountID     string            `json:"poolAccountId,omitempty"`
	ProceedsAccountID string            `json:"proceedsAccountId,omitempty"`
	KeyHash           string            `json:"keyHash,omitempty"`
	Wallets           *[]dumpWallet     `json:"wallets,omitempty"`
	Allocations       *[]dumpAllocation `json:"allocations,omitempty"`
	ChatMetadata      *dumpChat         `json:"chatMetadata,omitempty"`
	Settlement        *dumpSettlement   `json:"settlement,omitempty"`
	ExpiresAt         string            `json:"expiresAt,omitempty"`
}

type dumpWallet struct {
	AccountID string `json:"accountId"`
	Mode      string `json:"mode"`
	Currency  string `json:"currency"`
}

type dumpAllocation struct {
	AllocationID      string      `json:"allocationId"`
	PoolID            string      `json:"poolId"`
	PoolAccountID     string      `json:"poolAccountId"`
	PoolName          string      `json:"poolName"`
	Rate              json.Number `json:"rate"`
	SourceAmount      int64       `json:"sourceAmount"`
	DestinationAmount int64       `json:"destinationAmount"`
	Reference         string      `json:"reference"`
}

type dumpChat struct {
	ConversationID       string      `json:"conversationId,omitempty"`
	ChatQuoteID          string      `json:"chatQuoteId,omitempty"`
	ListingID            string      `json:"listingId,omitempty"`
	InitialListingRate   json.Number `json:"initialListingRate,omitempty"`
	NegotiationStartedAt string      `json:"negotiationStartedAt,omitempty"`
	QuoteSentAt          string      `json:"quoteSentAt,omitempty"`
}

type dumpSettlement struct {
	Kind          string `json:"kind"`
	AccountID     string `json:"accountId,omitempty"`
	AccountName   string `json:"accountName,omitempty"`
	AccountNumber string `json:"accountNumber,omitempty"`
	BankCode      string `json:"bankCode,omitempty"`
	Address       string `json:"address,omitempty"`
}

func dumpRate(r engine.Rate) json.Number { return json.Number(engine.AppendRate(nil, r)) }

func dumpAmount(a engine.Amount) *int64 { v := int64(a); return &v }

// dumpEventOf converts ev to its stable dump form.
func dumpEventOf(ev engine.Event) dumpEvent {
	var d dumpEvent
	switch ev := ev.(type) {
	case *engine.ClientCreated:
		d.ClientID, d.Name = ev.Client.String(), &ev.Name
		wallets := make([]dumpWallet, len(ev.Wallets))
		for i, w := range ev.Wallets {
			wallets[i] = dumpWallet{AccountID: w.Account.String(), Mode: w.Mode.String(), Currency: w.Currency.String()}
		}
		d.Wallets = &wallets
	case *engine.KeyCreated:
		d.KeyID, d.ClientID, d.Mode, d.KeyHash = ev.Key.String(), ev.Client.String(), ev.Mode.String(), hex.EncodeToString(ev.Hash[:])
	case *engine.KeyRevoked:
		d.KeyID = ev.Key.String()
	case *engine.PoolCreated:
		d.PoolID, d.Mode, d.Name = ev.Pool.String(), ev.Mode.String(), &ev.Name
		d.Pair, d.Source, d.Destination = ev.Pair.String(), ev.Pair.Source.String(), ev.Pair.Destination.String()
		d.Rate = dumpRate(ev.Rate)
		if !ev.Owner.IsZero() {
			d.OwnerClientID = ev.Owner.String()
		}
		d.PoolAccountID, d.ProceedsAccountID = ev.LiquidityAccount.String(), ev.ProceedsAccount.String()
	case *engine.PoolRateSet:
		d.PoolID, d.Rate = ev.Pool.String(), dumpRate(ev.Rate)
	case *engine.PoolStatusSet:
		d.PoolID, d.Status = ev.Pool.String(), "suspended"
		if ev.Active {
			d.Status = "active"
		}
	case *engine.PoolDeposited:
		d.PoolID, d.Amount = ev.Pool.String(), dumpAmount(ev.Amount)
	case *engine.PoolWithdrawn:
		d.PoolID, d.Amount = ev.Pool.String(), dumpAmount(ev.Amount)
	case *engine.AccountDeposited:
		d.AccountID, d.Amount = ev.Account.String(), dumpAmount(ev.Amount)
	case *engine.QuoteCreated:
		d.QuoteID, d.ClientID, d.KeyID, d.Mode = ev.Quote.String(), ev.Client.String(), ev.Key.String(), ev.Mode.String()
		d.Pair, d.Source, d.Destination = ev.Pair.String(), ev.Pair.Source.String(), ev.Pair.Destination.String()
		d.AmountDirection, d.Amount, d.ProposedRate = ev.Direction.String(), dumpAmount(ev.Amount), dumpRate(ev.ProposedRate)
		d.Chain, d.Reference = ev.Chain.String(), &ev.Reference
		d.Channel = "json"
		if ev.Channel == engine.ChannelXML {
			d.Channel = "xml"
		}
		d.IdempotencyKey, d.RequestHash = ev.IdempotencyKey, hex.EncodeToString(ev.RequestHash[:])
		d.ExpiresAt = fmtMillis(ev.ExpiresAt)
		allocations := make([]dumpAllocation, len(ev.Allocations))
		for i := range ev.Allocations {
			a := &ev.Allocations[i]
			allocations[i] = dumpAllocation{AllocationID: a.ID.String(), PoolID: a.Pool.String(),
				PoolAccountID: a.PoolAccount.String(), PoolName: a.PoolName, Rate: dumpRate(a.Rate),
				SourceAmount: int64(a.Source), DestinationAmount: int64(a.Destination), Reference: a.Reference}
		}
		d.Allocations = &allocations
		if c := ev.Chat; c != nil {
			d.ChatMetadata = &dumpChat{ConversationID: c.ConversationID, ChatQuoteID: c.ChatQuoteID, ListingID: c.ListingID,
				NegotiationStartedAt: c.NegotiationStartedAt, QuoteSentAt: c.QuoteSentAt}
			if c.InitialListingRate != 0 {
				d.ChatMetadata.InitialListingRate = dumpRate(c.InitialListingRate)
			}
		}
	case *engine.QuoteAccepted:
		d.QuoteID, d.ExpiresAt = ev.Quote.String(), fmtMillis(ev.ExpiresAt)
		if !ev.PoolAccount.IsZero() {
			d.PoolAccountID = ev.PoolAccount.String()
		}
		st := &ev.Settlement
		d.Settlement = &dumpSettlement{Kind: st.Kind.String(), AccountName: st.AccountName,
			AccountNumber: st.AccountNumber, BankCode: st.BankCode, Address: st.Address}
		if !st.Account.IsZero() {
			d.Settlement.AccountID = st.Account.String()
		}
	case *engine.QuoteCancelled:
		d.QuoteID = ev.Quote.String()
	case *engine.QuoteExpired:
		d.QuoteID = ev.Quote.String()
	case *engine.QuoteCompleted:
		d.QuoteID = ev.Quote.String()
	}
	return d
}

func walDump(log *wal.Log, out io.Writer, from, limit uint64, asJSON bool) error {
	printed := uint64(0)
	errStop := errors.New("limit reached")
	start := uint64(0)
	if from > 0 {
		start = from - 1
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	err := log.Replay(start, func(seq uint64, rec []byte) error {
		if limit > 0 && printed >= limit {
			return errStop
		}
		ev, err := engine.DecodeEvent(rec)
		if err != nil {
			return fmt.Errorf("wal: corrupt record at seq %d: %w", seq, err)
		}
		printed++
		if asJSON {
			return enc.Encode(dumpRecord{Seq: seq, Type: ev.Type().String(), At: fmtMillis(ev.Time()), Event: dumpEventOf(ev)})
		}
		if _, err := fmt.Fprintf(out, "%d %s %s ", seq, fmtMillis(ev.Time()), ev.Type()); err != nil {
			return err
		}
		return enc.Encode(dumpEventOf(ev)) // ends the line
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// ---- replay ---------------------------------------------------------------------------

// walSource is what the tools read of a log (*wal.Log); an interface so
// that tests can hand verify a log with faults no real store produces.
type walSource interface {
	Replay(from uint64, fn func(seq uint64, rec []byte) error) error
	Stats() (wal.Stats, error)
	LatestSnapshot() (seq uint64, data []byte, ok bool, err error)
}

// snapshotWalker is a log that can list every snapshot it keeps, oldest
// first, not only the latest.
//
// NB: wal.Log has no such method yet (it keeps wal.SnapshotsKept snapshots
// but exposes only LatestSnapshot); verify uses it as soon as it exists.
type snapshotWalker interface {
	Snapshots(fn func(seq uint64, data []byte) error) error
}

// replayInto rebuilds state from the whole log (from seq 1: the events are
// the truth, snapshots only a shortcut) up to a stop condition.
func replayInto(log walSource, stop func(seq uint64, ev engine.Event) bool) (*engine.State, uint64, error) {
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

// parseUntil reads replay's --until: a sequence number or an RFC 3339 time.
func parseUntil(until string) (func(uint64, engine.Event) bool, error) {
	if until == "" {
		return nil, errors.New("wal replay: --until <seq|RFC3339 time> is required")
	}
	if n, err := strconv.ParseUint(until, 10, 64); err == nil {
		return func(seq uint64, _ engine.Event) bool { return seq > n }, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, until); err == nil {
		ms := t.UnixMilli()
		return func(_ uint64, ev engine.Event) bool { return ev.Time() > ms }, nil
	}
	return nil, fmt.Errorf("wal replay: --until %q is neither a sequence number nor an RFC 3339 time", until)
}

func walReplay(log walSource, out io.Writer, until string) error {
	stop, err := parseUntil(until)
	if err != nil {
		return err
	}
	state, last, err := replayInto(log, stop)
	if err != nil {
		return err
	}
	hash := state.Hash()
	fmt.Fprintf(out, "state as of seq %d (%s)\nstate hash %x\n", last, fmtMillis(state.LastAt), hash)
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

// ---- verify ----------------------------------------------------------------------------

// walFault is one fault verify found, at the sequence it concerns.
type walFault struct {
	seq  uint64
	text string
}

func (f *walFault) Error() string { return f.text }

// verifiedSnapshot is one snapshot, decoded, waiting for replay to reach
// its sequence.
type verifiedSnapshot struct {
	seq    uint64
	hash   [32]byte
	latest bool
	ok     bool // matched the replay
}

// loadSnapshots reads every snapshot the log exposes: all of them when it
// is a snapshotWalker, else the latest. Unreadable ones become faults.
func loadSnapshots(log walSource, faults *[]*walFault) (snaps map[uint64]*verifiedSnapshot, checkedAll bool) {
	snaps = map[uint64]*verifiedSnapshot{}
	add := func(seq uint64, data []byte) {
		state, err := engine.DecodeState(data)
		if err != nil {
			*faults = append(*faults, &walFault{seq, fmt.Sprintf("corrupt snapshot at seq %d: %v", seq, err)})
			return
		}
		snaps[seq] = &verifiedSnapshot{seq: seq, hash: state.Hash()}
	}
	asFault := func(err error) { *faults = append(*faults, faultOf(err, 0)) }
	if walker, ok := log.(snapshotWalker); ok {
		if err := walker.Snapshots(func(seq uint64, data []byte) error { add(seq, data); return nil }); err != nil {
			asFault(err)
		}
		checkedAll = true
	}
	seq, data, ok, err := log.LatestSnapshot()
	switch {
	case err != nil:
		if !checkedAll { // a walker reported it already
			asFault(err)
		}
	case ok:
		if _, seen := snaps[seq]; !seen && !checkedAll {
			add(seq, data)
		}
		if s := snaps[seq]; s != nil {
			s.latest = true
		}
	}
	return snaps, checkedAll
}

func walVerify(log walSource, out io.Writer, tails []walTail) error {
	var faults []*walFault
	st, statsErr := log.Stats()
	snaps, checkedAll := loadSnapshots(log, &faults)

	// One replay from seq 1 into a scratch engine: checksums and continuity
	// (Replay), decoding, State.Apply's consistency checks, each snapshot's
	// hash at its sequence, and the ledger every walLedgerCheckEvery records.
	state := engine.NewState()
	if statsErr != nil {
		faults = append(faults, faultOf(statsErr, 0))
	}
	if s := snaps[0]; s != nil {
		if s.ok = s.hash == state.Hash(); !s.ok {
			faults = append(faults, &walFault{0, "snapshot at seq 0 is not the empty state"})
		}
	}
	var last, ledgerGood uint64
	p := newProgress(st.LastSeq)
	replayErr := log.Replay(0, func(seq uint64, rec []byte) error {
		p.tick(seq)
		ev, err := engine.DecodeEvent(rec)
		if err != nil {
			return &walFault{seq, fmt.Sprintf("corrupt record at seq %d: does not decode: %v", seq, err)}
		}
		if err := state.Apply(ev); err != nil {
			return &walFault{seq, fmt.Sprintf("record at seq %d does not apply: %v", seq, err)}
		}
		last = seq
		if s := snaps[seq]; s != nil {
			if s.ok = s.hash == state.Hash(); !s.ok {
				// Not fatal to the replay: later records may still be checked.
				faults = append(faults, &walFault{seq, fmt.Sprintf(
					"snapshot at seq %d differs from the state replay reaches at seq %d (hash %x, replay %x)",
					seq, seq, s.hash[:8], hashPrefix(state))})
			}
		}
		if seq%walLedgerCheckEvery == 0 {
			if !ledgerOK(state) {
				return errLedger
			}
			ledgerGood = seq
		}
		return nil
	})
	p.done()
	switch {
	case replayErr == nil:
		if !ledgerOK(state) {
			faults = append(faults, verifyLedgerFrom(log, ledgerGood, last))
		}
	case errors.Is(replayErr, errLedger):
		faults = append(faults, verifyLedgerFrom(log, ledgerGood, last))
	default:
		faults = append(faults, faultOf(replayErr, last+1))
	}
	stopped := replayErr != nil
	for _, s := range snaps {
		if s.seq > last && !s.ok {
			text := fmt.Sprintf("snapshot at seq %d is beyond the last record (seq %d)", s.seq, last)
			if stopped {
				text = fmt.Sprintf("snapshot at seq %d not compared: replay stopped before it", s.seq)
			}
			faults = append(faults, &walFault{s.seq, text})
		}
	}

	// The report: what was checked, then the verdict.
	if statsErr == nil {
		fmt.Fprintf(out, "store: %d records (seq %d..%d), %d payload bytes, %d on disk\n",
			st.Records, st.FirstSeq, st.LastSeq, st.Bytes, st.DiskBytes)
	}
	for _, t := range tails {
		fmt.Fprintf(out, "torn tail (tolerated): %s\n", t)
	}
	seqs := make([]uint64, 0, len(snaps))
	for seq := range snaps {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		if s := snaps[seq]; s.ok {
			which := ""
			if s.latest {
				which = " (latest)"
			}
			fmt.Fprintf(out, "snapshot at seq %d%s matches the replayed state (hash %x)\n", seq, which, s.hash[:8])
		}
	}
	if statsErr == nil && !checkedAll && st.Snapshots > 1 {
		fmt.Fprintf(out, "snapshots: %d older kept snapshot(s) not checked (the log exposes only the latest)\n", st.Snapshots-1)
	}
	if !stopped {
		for _, m := range engine.Modes {
			fmt.Fprintf(out, "ledger %-7s %s\n", m, gateway.AppendLedgerReport(nil, state.LedgerCheck(m)))
		}
		hash := state.Hash()
		if last == 0 {
			fmt.Fprintf(out, "no records; state hash %x\n", hash)
		} else {
			fmt.Fprintf(out, "records 1..%d verified; state hash %x\n", last, hash)
		}
	} else if last > 0 {
		fmt.Fprintf(out, "records 1..%d verified before the fault\n", last)
	}
	if len(faults) == 0 {
		fmt.Fprintln(out, "OK")
		return nil
	}
	slices.SortStableFunc(faults, func(a, b *walFault) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	for _, f := range faults[1:] {
		fmt.Fprintf(out, "also: %s\n", f.text)
	}
	fmt.Fprintf(out, "FAIL: %s\n", faults[0].text)
	return walExitFault
}

// faultOf turns a read error into a fault: at its own sequence when it is
// a *walFault or a *wal.CorruptError, else at seq.
func faultOf(err error, seq uint64) *walFault {
	var fault *walFault
	var corrupt *wal.CorruptError
	switch {
	case errors.As(err, &fault):
		return fault
	case errors.As(err, &corrupt) && corrupt.Snapshot:
		return &walFault{corrupt.Seq, fmt.Sprintf("corrupt snapshot at seq %d: %s", corrupt.Seq, corrupt.Reason)}
	case errors.As(err, &corrupt):
		return &walFault{corrupt.Seq, fmt.Sprintf("corrupt record at seq %d: %s", corrupt.Seq, corrupt.Reason)}
	}
	return &walFault{seq, fmt.Sprintf("reading the store at seq %d: %v", seq, err)}
}

// errLedger stops verify's replay at a failed periodic ledger check.
var errLedger = errors.New("ledger check failed")

func ledgerOK(s *engine.State) bool {
	for _, m := range engine.Modes {
		if !s.LedgerCheck(m).OK {
			return false
		}
	}
	return true
}

func hashPrefix(s *engine.State) []byte {
	h := s.Hash()
	return h[:8]
}

// verifyLedgerFrom finds the first record after good (where the ledger
// was known to hold) and at most bad after which the ledger check fails,
// by replaying again and checking after every record of that interval.
func verifyLedgerFrom(log walSource, good, bad uint64) *walFault {
	state := engine.NewState()
	var found *walFault
	errFound := errors.New("found")
	err := log.Replay(0, func(seq uint64, rec []byte) error {
		ev, err := engine.DecodeEvent(rec)
		if err != nil {
			return err
		}
		if err := state.Apply(ev); err != nil {
			return err
		}
		if seq <= good {
			return nil
		}
		for _, m := range engine.Modes {
			if r := state.LedgerCheck(m); !r.OK {
				found = &walFault{seq, fmt.Sprintf("ledger check fails after the record at seq %d (%s): %s",
					seq, m, strings.Join(r.Problems, "; "))}
				return errFound
			}
		}
		if seq >= bad {
			return errFound
		}
		return nil
	})
	if found != nil {
		return found
	}
	return &walFault{bad, fmt.Sprintf("ledger check fails by seq %d (not located: %v)", bad, err)}
}
