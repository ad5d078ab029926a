package waltools

import (
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/oja-exchange/oja/actors/cluster"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/wal"
)

const walUsage = `usage: oja wal <command> [--data DIR] [flags]

  stats                         records, bytes, first/last sequence and time, snapshots, the
                                first sequence log retention kept, the last acknowledged
                                sequence (the acknowledgement mark), counts by event type, a
                                torn tail if the last write was incomplete
  dump [--from N] [--limit N] [--json]
                                one record per line: "SEQ AT TYPE {event}", or with
                                --json one JSON object per line (shape below)
  verify                        every record's checksum and sequence continuity, decode and
                                replay into a scratch engine, every snapshot against the state
                                replay reaches at its sequence (State.Hash), and the ledger
                                check (spec §3) of both modes; names the FIRST bad
                                sequence ("FAIL: corrupt record at seq 42: checksum mismatch")
  replay --until <seq|RFC3339> [--retention D]
                                the state as of that point: quotes by status, balances, pools,
                                ledger check and the state hash; a point before the log's
                                retention (--log-retention) is refused, naming the oldest kept.
                                The records apply as the service's replica applies them: every
                                65,536 records, the quotes that ended longer than --retention
                                (give the server's; default 168h, 0 keeps all) are forgotten
  salvage --to NEWDIR [--verbose]  for a damaged log: writes its intact prefix (records 1..N
                                with no gap, and the snapshots up to N) into the new data dir
                                NEWDIR and prints exactly what is lost: the sequences, the quotes
                                still readable past the damage, the other events counted by type
                                (--verbose: each on its line), and the ledger check of what
                                remains. The damaged data dir is never changed.

All work offline on a stopped server's data dir; a running server's is refused (its lock is
held): stop it, or take an online copy with "oja admin backup DIR" and inspect the copy.
On a stopped cluster node's data dir (raft/, no store/), stats, dump, verify and replay read
its Raft log and snapshots, numbering records as its replica does (from its oldest snapshot
the log reaches past, or from 1); the log may end in entries the cluster never committed.
salvage refuses a cluster node's dir: a damaged node is replaced from the others.
A torn tail (the unsynced end of Pebble's WAL after a crash) is dropped by Pebble when the
store opens; it never holds an acknowledged record (with --sync=true, the default), so it is
reported and tolerated. Damage to synced data is not a torn tail: the store does not open,
and the tools (like oja serve) exit 1 naming the file, the byte offset and the last intact
record; restore from a backup, or salvage.

Exit status: 0 success; 1 a fault was found (verify) or the command failed (salvage: nothing
could be salvaged); 2 usage; 3 the data dir is in use by a running server.

dump --json: one object per record; the shape is stable (fields are added, never renamed):

  {"seq": 42, "type": "QuoteCreated", "at": "2026-11-21T10:00:00.123Z", "event": {...}}

  seq    the record's sequence number (integer)
  type   the event type: ClientCreated, KeyCreated, KeyRevoked, PoolCreated, PoolRateSet,
         PoolStatusSet, PoolDeposited, PoolWithdrawn, AccountDeposited, QuoteCreated,
         QuoteAccepted, QuoteAcceptedWithPayIn, QuoteCancelled, QuoteCancelledByOperator,
         QuoteExpired, QuoteCompleted, QuoteCompletedFunded, PayInSeen, PaymentReceived,
         AccountWithdrawn, CreditLimitSet, WebhookCreated, WebhookDeleted, WebhookSettled,
         MarketsSet, KeyRolled, WebhookSecretRotated, WebhookUpdated, KeysUsed, OperatorCreated,
         OperatorRevoked, OperatorActed
  at     when it happened, RFC 3339 UTC with milliseconds
  event  its fields, lower camel case. Ids are UUID strings. Amounts are integers in minor
         units of their currency (NGN and GHS: 2 places, USDT: 6), e.g. 150000 = 1500.00 NGN.
         Rates are JSON numbers in plain decimal (destination units per source unit).
         Optional fields (?) are omitted when empty; all others are always present.

    ClientCreated     clientId, name, wallets: [{accountId, mode, currency}]
    KeyCreated        keyId, clientId, mode, keyHash (hex SHA-256 of the key; never the key)
    KeyRevoked        keyId
    KeyRolled         oldKeyId, keyId (the new key), keyHash, expiresAt (when oldKeyId stops working)
    KeysUsed          keys: [{keyId, lastUsedAt}] (each key's last authenticated request, to the minute)
    OperatorCreated   operatorId, name, role ("viewer" or "operator"), tokenHash (hex SHA-256; never the token)
    OperatorRevoked   operatorId
    OperatorActed     auditId, operator (the name; "root" for the admin token), operatorId? (absent for
                      root), action ("METHOD /route/{param}"), target (the path), httpStatus
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
    QuoteAcceptedWithPayIn  as QuoteAccepted, with payIn: {addressId, address, token, chain,
                      derivationIndex} (the crypto pay-in it issued; never a key)
    QuoteCancelled    quoteId (the partner cancelled it)
    QuoteCancelledByOperator  quoteId (an operator cancelled it: POST /admin/v1/quotes/{id}/cancel)
    QuoteExpired      quoteId
    QuoteCompleted    quoteId (logged before funds first: nothing debited)
    QuoteCompletedFunded  quoteId, walletId (the source wallet debited), simulatedAmount
                      (sandbox: the shortfall simulated as a pay-in; 0 otherwise)
    PayInSeen         quoteId, amount, txHash (a deposit recorded before funds first: credited
                      nothing)
    PaymentReceived   quoteId, accountId (the wallet credited), amount, method ("bank" or
                      "crypto"), bankTransactionId? (bank), addressId? and txHash? (crypto)
    AccountWithdrawn  accountId, amount (an operator's payout: wallet → clearing)
    CreditLimitSet    accountId (the wallet), limit
    MarketsSet        markets: {currencies, pairs, collection?, depositKeys?} (never a key:
                      depositKeys lists TOKEN/CHAIN)
    WebhookCreated    webhookId, clientId, mode, url, events (never the signing secret)
    WebhookDeleted    webhookId
    WebhookSecretRotated webhookId, previousSecretUntil (never a secret)
    WebhookUpdated    webhookId, url, events (both as they are from then on)
    WebhookSettled    webhookId, eventId ("evt_" + 32 hex digits), delivered (false: abandoned
                      after its 72 h retry window)
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
)

// ExitCode is an error that has already been reported and carries the
// process exit status.
type ExitCode int

func (e ExitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// ExitStatus is the process exit status.
func (e ExitCode) ExitStatus() int { return int(e) }

// Exit statuses of the wal tools (see walUsage).
const (
	ExitFault = ExitCode(1)
	ExitUsage = ExitCode(2)
	ExitInUse = ExitCode(3)
)

// StoreDir is where the Pebble store lives inside a data dir.
func StoreDir(data string) string { return filepath.Join(data, "store") }

// RetentionDefault is `oja serve --retention`'s default, and replay's.
const RetentionDefault = 168 * time.Hour

// StateOf is the state a stopped single node's data dir (a backup) holds
// after its last record, and that record's sequence, read as `oja wal
// replay` reads it; a damaged store is an error.
func StateOf(data string) (*engine.State, uint64, error) {
	dir := StoreDir(data)
	if _, err := os.Stat(dir); err != nil {
		return nil, 0, fmt.Errorf("no single node's store in %s: %w", data, err)
	}
	log, err := wal.Open(dir, wal.Options{ReadOnly: true})
	if err != nil {
		return nil, 0, err
	}
	defer log.Close()
	return ReplayInto(log, nil, 0)
}

// Run runs one wal tool, writing its report to stdout and notes to
// stderr.
func Run(args []string, stdout, stderr io.Writer) error {
	if len(args) < 1 {
		fmt.Fprint(stderr, walUsage)
		return ExitUsage
	}
	cmd := args[0]
	switch cmd {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, walUsage)
		return nil
	case "stats", "dump", "verify", "replay", "salvage":
	default:
		fmt.Fprintf(stderr, "oja wal: unknown command %q (oja wal help)\n", cmd)
		return ExitUsage
	}
	f, err := parseWalFlags(cmd, args[1:], stdout, stderr)
	if f == nil {
		return err // help (nil), or a usage error already written
	}
	if cmd == "replay" {
		if _, err := parseUntil(f.until); err != nil {
			return err
		}
	}
	dir := StoreDir(f.data)
	if _, err := os.Stat(dir); err != nil {
		if _, rerr := os.Stat(filepath.Join(f.data, "raft", "log")); rerr == nil {
			return runCluster(cmd, f, stdout, stderr)
		}
		return fmt.Errorf("wal: no store in %s (neither a single node's store/ nor a cluster node's raft/): %w", f.data, err)
	}
	if cmd == "salvage" {
		return salvage(f.data, f.to, f.verbose, stdout, stderr)
	}
	pebbleErrors := &errorLogger{}
	log, err := wal.Open(dir, wal.Options{ReadOnly: true, Logger: pebbleErrors})
	if err != nil {
		// NB: wal has no sentinel for a held lock; its message is the
		// documented one ("wal: data dir is in use").
		if errors.Is(err, wal.ErrInUse) {
			fmt.Fprintf(stderr, "oja wal %s: refused: %s is in use by a running server (the store's lock is held).\n"+
				"Stop the server first, or take an online copy with \"oja admin backup DIR\" and run the tools on DIR.\n", cmd, f.data)
			return ExitInUse
		}
		if cmd == "verify" {
			fmt.Fprintf(stdout, "FAIL: the store does not open: %v\n", err)
			return ExitFault
		}
		return err
	}
	defer log.Close()
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	tail, err := wal.TornTails(nil, dir)
	if err != nil {
		return fmt.Errorf("wal: reading the WAL files of %s: %w", dir, err)
	}
	for _, e := range pebbleErrors.reported() {
		fmt.Fprintf(stderr, "oja wal: pebble reported: %s\n", e)
	}
	switch cmd {
	case "stats":
		return walStats(log, dir, out, tail)
	case "dump":
		writeTailNotes(stderr, tail)
		return walDump(log, out, f.from, f.limit, f.asJSON)
	case "verify":
		return Verify(log, out, tail)
	default:
		writeTailNotes(stderr, tail)
		return walReplay(log, out, f.until, f.retention)
	}
}

// walFlags are the flags of an oja wal command.
type walFlags struct {
	data        string
	from, limit uint64
	asJSON      bool
	until       string
	retention   time.Duration
	to          string
	verbose     bool
}

// parseWalFlags reads cmd's flags from args. nil means the command ends
// with the error returned: nil after printing the usage (-h), ExitUsage
// after writing why to stderr.
func parseWalFlags(cmd string, args []string, stdout, stderr io.Writer) (*walFlags, error) {
	f := &walFlags{}
	fs := flag.NewFlagSet("wal "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.data, "data", cmp.Or(os.Getenv("OJA_DATA"), "./data"), "data dir of a stopped server")
	fs.Uint64Var(&f.from, "from", 0, "dump: first sequence to print")
	fs.Uint64Var(&f.limit, "limit", 0, "dump: at most this many records (0 = all)")
	fs.BoolVar(&f.asJSON, "json", false, "dump: one JSON object per line")
	fs.StringVar(&f.until, "until", "", "replay: last sequence number, or an RFC 3339 time")
	fs.DurationVar(&f.retention, "retention", RetentionDefault, "replay: the service's --retention (its replica forgets the quotes that ended longer before every 65,536 records; 0 keeps every one)")
	fs.StringVar(&f.to, "to", "", "salvage: the new data dir to write the intact prefix to")
	fs.BoolVar(&f.verbose, "verbose", false, "salvage: list each lost event, not only their counts by type")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, walUsage)
			return nil, nil
		}
		fmt.Fprintf(stderr, "oja wal %s: %v (oja wal help)\n", cmd, err)
		return nil, ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "oja wal %s: unexpected argument %q\n", cmd, fs.Arg(0))
		return nil, ExitUsage
	}
	return f, nil
}

// runCluster runs cmd on a stopped cluster node's Raft log
// (cluster.LogSource): the same tools on the records its replica applies.
func runCluster(cmd string, f *walFlags, stdout, stderr io.Writer) error {
	data := f.data
	if cmd == "salvage" {
		fmt.Fprintf(stderr, "oja wal salvage: refused: %s is a cluster node's; a node whose log is damaged is replaced, "+
			"its replica copied from the others (docs/cluster.md: oja admin cluster replace)\n", data)
		return ExitUsage
	}
	log, err := cluster.OpenLogSource(filepath.Join(data, "raft"))
	if errors.Is(err, wal.ErrInUse) {
		fmt.Fprintf(stderr, "oja wal %s: refused: %s is in use by a running node (its Raft store's lock is held).\n"+
			"Stop the node first, or take an online copy with \"oja admin backup DIR\" and run the tools on DIR.\n", cmd, data)
		return ExitInUse
	}
	if err != nil {
		if cmd == "verify" {
			fmt.Fprintf(stdout, "FAIL: the Raft log does not open: %v\n", err)
			return ExitFault
		}
		return err
	}
	defer log.Close()
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	switch cmd {
	case "stats":
		return walStats(log, "", out, nil)
	case "dump":
		return walDump(log, out, f.from, f.limit, f.asJSON)
	case "verify":
		return Verify(log, out, nil)
	default:
		return walReplay(log, out, f.until, f.retention)
	}
}
