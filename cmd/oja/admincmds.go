package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/client"
)

// adminCommand is one `oja admin` command: the words that name it, what
// follows them in the usage, and how the arguments after the words become
// a call of the typed operator client. The usage is made from the table,
// so a command and its line of help are written once.
type adminCommand struct {
	words []string
	usage string
	parse func(name string, args []string) (adminCall, error)
}

// adminCommands are every `oja admin` command, in the usage's order.
var adminCommands = []adminCommand{
	{words("clients create"), "NAME", parseCreateClient},
	{words("clients list"), "[--limit N] [--starting-after CLIENT_ID]   (newest first)", pageCall(20, 100, "clients per page", "client",
		func(ctx context.Context, a *client.Admin, limit int, after string, o ...client.CallOption) error {
			return discard(a.ListClients(ctx, limit, after, o...))
		})},
	{words("clients get"), "CLIENT_ID   (its keys, never a secret, and its accounts in both modes)", idCall((*client.Admin).GetClient)},
	{words("clients credit"), "CLIENT_ID --currency CUR --limit AMOUNT [--mode M]\n" +
		"                          (a credit line: completions may take that wallet down to -limit; 0 removes it)", parseCredit},
	{words("quotes get"), "QUOTE_ID     (any client's quote, either mode, with the payments received for it)", idCall((*client.Admin).GetQuote)},
	{words("quotes cancel"), "QUOTE_ID  (cancel any client's open quote; the log records it as the operator's)", idCall((*client.Admin).CancelQuote)},
	{words("quotes complete"), "QUOTE_ID (complete any client's quote; the partner's wallet must cover it, as for the partner)", idCall((*client.Admin).CompleteQuote)},
	{words("webhooks"), "CLIENT_ID      (the client's webhook endpoints in both modes, with each one's delivery backlog)", idCall((*client.Admin).ClientWebhooks)},
	{words("payins get"), "ADDRESS_ID   (a crypto pay-in: its address, quote, client, status and the deposits credited)", idCall((*client.Admin).GetPayIn)},
	{words("payins seen"), "ADDRESS_ID --amount AMOUNT --tx-hash HASH [--log-index N]\n" +
		"                          (a deposit seen on chain: credited to the partner's wallet, once per chain, hash and log index)", parseSeen},
	{words("payins bank"), "REFERENCE --amount AMOUNT --bank-transaction-id ID [--mode live|sandbox]\n" +
		"                          (a bank transfer carrying a quote's reference: credited to the partner's wallet, once per\n" +
		"                          bank transaction id however typed; --mode is the quote's, default live)", parseBankReceipt},
	{words("payins import"), "FILE    (a bank's ISO 20022 camt.053 statement or camt.054 notification: each booked credit on a\n" +
		"                          collection account recorded once; one naming an open quote pays it, any other is held in suspense)", parseImport},
	{words("payins unapplied"), "[--mode M] [--limit N] [--starting-after ID]   (money held in suspense, newest first)", parseUnappliedList},
	{words("payins apply"), "UNAPPLIED_ID (--quote QUOTE_ID | --client CLIENT_ID --mode M)   (suspense → that quote's or client's wallet)", parseApplyUnapplied},
	{words("payins return"), "UNAPPLIED_ID --reference REF   (suspense → back to its sender; REF is the return transfer's bank id)", parseReturnUnapplied},
	{words("payins duplicates"), "      (receipts recorded before identities that name one payment: candidates for reverse)", noArgs((*client.Admin).Duplicates)},
	{words("payins reverse"), "RECEIPT_ID --reason TEXT   (take a receipt back: wallet → clearing, a reversal row)", parseReverse},
	{words("keys create"), "CLIENT_ID [--mode live|sandbox]", parseCreateKey},
	{words("keys revoke"), "KEY_ID", idCall(func(a *client.Admin, ctx context.Context, id string, o ...client.CallOption) (struct{}, error) {
		return struct{}{}, a.RevokeKey(ctx, id, o...)
	})},
	{words("pools create"), "[--mode M] --name NAME --source CUR --destination CUR --rate R [--owner CLIENT_ID]", parseCreatePool},
	{words("pools list"), "[--mode live|sandbox|all]", parsePools},
	{words("pools rate"), "POOL_ID RATE", poolChange("RATE", (*client.Admin).SetPoolRate)},
	{words("pools status"), "POOL_ID active|suspended", parsePoolStatus},
	{words("pools deposit"), "POOL_ID AMOUNT", poolChange("AMOUNT", (*client.Admin).DepositPool)},
	{words("pools withdraw"), "POOL_ID AMOUNT", poolChange("AMOUNT", (*client.Admin).WithdrawPool)},
	{words("accounts deposit"), "ACCOUNT_ID AMOUNT --reference REF\n" +
		"                          (a prefunding: clearing → the wallet; REF is the bank's or chain's id of the transfer)",
		moneyMove((*client.Admin).DepositAccount)},
	{words("accounts withdraw"), "ACCOUNT_ID AMOUNT --reference REF\n" +
		"                          (a payout of the wallet's available money: wallet → clearing; REF is the payout's\n" +
		"                          bank or chain id: the same payout again changes nothing)", moneyMove((*client.Admin).WithdrawAccount)},
	{words("accounts transactions"), "ACCOUNT_ID [--limit N] [--starting-after ID]   (a wallet's statement, newest first)", parseTransactions},
	{words("ledger check"), "[--mode live|sandbox]", parseLedgerCheck},
	{words("chains"), "                 (watched chains: head, last block processed, confirmations, last error)", noArgs((*client.Admin).Chains)},
	{words("chains unapplied"), "[--limit N] [--starting-after ID]   (deposits not credited: value not exact in the currency)",
		pageCall(50, 500, "deposits per page", "unapplied deposit",
			func(ctx context.Context, a *client.Admin, limit int, after string, o ...client.CallOption) error {
				return discard(a.ChainUnapplied(ctx, limit, after, o...))
			})},
	{words("backup"), "DIR [--copy=false]   (a consistent copy of the live store, every file its own;\n" +
		"                          --copy=false: a checkpoint, hard-linked to the store on the same file system)", parseBackup},
	{words("cluster"), "                (cluster mode: leader, term, each node's state)", noArgs((*client.Admin).ClusterStatus)},
	{words("cluster replace"), "NODE_ID (cluster mode: re-add a member whose data was lost; see docs/cluster.md)", idCall((*client.Admin).ReplaceNode)},
	{words("cluster add"), "NODE_ID RAFT_ADDRESS (cluster mode: a new voter, started with --join; see docs/cluster.md)", parseAddNode},
	{words("cluster remove"), "NODE_ID  (cluster mode: the member leaves the cluster and serves nothing)", idCall((*client.Admin).RemoveNode)},
	{words("operators create"), "NAME --role viewer|operator   (root only: a named operator; its token is shown once)", parseCreateOperator},
	{words("operators list"), "         (named operators, revoked ones too)", noArgs((*client.Admin).Operators)},
	{words("operators revoke"), "OPERATOR_ID   (root only: its token fails from the next request on)", idCall((*client.Admin).RevokeOperator)},
	{words("audit"), "[--limit N] [--starting-after AUDIT_ID]   (every operator write, who made it, newest first)", pageCall(50, 500, "entries per page", "entry",
		func(ctx context.Context, a *client.Admin, limit int, after string, o ...client.CallOption) error {
			return discard(a.Audit(ctx, limit, after, o...))
		})},
}

const adminUsageHead = `usage: oja admin [--addr http://127.0.0.1:8081] [--token T | --data DIR] <command>

`

const adminUsageTail = `
Every --mode defaults to sandbox, the mode where nothing real moves: pass
--mode live for live money (pools list --mode all lists both). Except:
payins bank is live unless told (a bank transfer is real money), payins
unapplied lists both modes unless told, payins apply --client needs one.
-h, --help or help anywhere prints this and does nothing else.
The token is --token, else $OJA_ADMIN_TOKEN, else <data>/admin.token.
The address is --addr, else $OJA_ADMIN_ADDR.
`

// adminUsage is the usage of `oja admin`: every command of the table.
var adminUsage = func() string {
	var b strings.Builder
	b.WriteString(adminUsageHead)
	for _, c := range adminCommands {
		fmt.Fprintf(&b, "  %s %s\n", strings.Join(c.words, " "), c.usage)
	}
	b.WriteString(adminUsageTail)
	return b.String()
}()

func words(s string) []string { return strings.Fields(s) }

// parseAdminCall finds the command args name — the one whose words begin
// args, the longest such — and parses the rest of args with it.
func parseAdminCall(args []string) (adminCall, error) {
	if len(args) < 1 {
		return nil, errors.New("admin: missing command")
	}
	// Help anywhere only helps: never a client named "--help", never a
	// backup written into ./--help.
	if helpAsked(args) {
		return nil, flag.ErrHelp
	}
	var found *adminCommand
	for i := range adminCommands {
		c := &adminCommands[i]
		if len(c.words) <= len(args) && slices.Equal(c.words, args[:len(c.words)]) &&
			(found == nil || len(c.words) > len(found.words)) {
			found = c
		}
	}
	if found == nil {
		return nil, fmt.Errorf("admin: unknown command %q", strings.Join(args, " "))
	}
	return found.parse("admin "+strings.Join(found.words, " "), args[len(found.words):])
}

// discard adapts a typed call whose answer is only printed.
func discard[T any](_ T, err error) error { return err }

// idCall is a command that takes exactly one id.
func idCall[T any](call func(a *client.Admin, ctx context.Context, id string, o ...client.CallOption) (T, error)) func(string, []string) (adminCall, error) {
	return func(name string, args []string) (adminCall, error) {
		if len(args) != 1 {
			return nil, fmt.Errorf("%s: give one id", name)
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(call(a, ctx, args[0], o...))
		}, nil
	}
}

// noArgs is a command that takes no argument.
func noArgs[T any](call func(a *client.Admin, ctx context.Context, o ...client.CallOption) (T, error)) func(string, []string) (adminCall, error) {
	return func(name string, args []string) (adminCall, error) {
		if len(args) > 0 {
			return nil, fmt.Errorf("%s: unexpected argument %q", name, args[0])
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(call(a, ctx, o...))
		}, nil
	}
}

// atLeast refuses fewer than n arguments.
func atLeast(name string, args []string, n int) error {
	if len(args) < n {
		return fmt.Errorf("%s: missing arguments", strings.Join(append([]string{name}, args...), " "))
	}
	return nil
}

// pageCall is a listing with --limit (1 to max; 0: the service's
// default, def) and --starting-after.
func pageCall(def, max int, perPage, item string,
	call func(ctx context.Context, a *client.Admin, limit int, after string, o ...client.CallOption) error) func(string, []string) (adminCall, error) {
	return func(name string, args []string) (adminCall, error) {
		fs := flag.NewFlagSet(strings.TrimPrefix(name, "admin "), flag.ContinueOnError)
		limit := fs.Int("limit", 0, fmt.Sprintf("%s, 1 to %d (default %d)", perPage, max, def))
		after := fs.String("starting-after", "", "the last "+item+" id of the previous page")
		if err := parseSub(fs, args); err != nil {
			return nil, err
		}
		if *limit < 0 {
			return nil, fmt.Errorf("%s: --limit must be from 1 to %d", name, max)
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return call(ctx, a, *limit, *after, o...)
		}, nil
	}
}

func parseCreateClient(name string, args []string) (adminCall, error) {
	if err := atLeast(name, args, 1); err != nil {
		return nil, err
	}
	clientName := strings.Join(args, " ")
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return discard(a.CreateClient(ctx, clientName, o...))
	}, nil
}

func parseCreateOperator(name string, args []string) (adminCall, error) {
	if len(args) < 1 || strings.HasPrefix(args[0], "-") {
		return nil, fmt.Errorf("%s: give the operator's NAME, then --role viewer|operator", name)
	}
	fs := flag.NewFlagSet("operators create", flag.ContinueOnError)
	role := fs.String("role", "", "viewer (reads only) or operator (reads and acts)")
	if err := parseSub(fs, args[1:]); err != nil {
		return nil, err
	}
	if *role != "viewer" && *role != "operator" {
		return nil, fmt.Errorf("%s: --role viewer or --role operator", name)
	}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return discard(a.CreateOperator(ctx, args[0], *role, o...))
	}, nil
}

func parseCredit(name string, args []string) (adminCall, error) {
	if err := atLeast(name, args, 1); err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet("clients credit", flag.ContinueOnError)
	mode := modeFlag(fs, false)
	currency := fs.String("currency", "", "the wallet's currency")
	limitText := fs.String("limit", "", "the credit limit, 0 or more")
	if err := parseSub(fs, args[1:]); err != nil {
		return nil, err
	}
	if *currency == "" || *limitText == "" {
		return nil, fmt.Errorf("%s: --currency and --limit are required", name)
	}
	limit, err := decimalArg(name+": --limit", *limitText)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return discard(a.SetCreditLimit(ctx, args[0], client.Mode(*mode), *currency, limit, o...))
	}, nil
}

func parseBankReceipt(name string, args []string) (adminCall, error) {
	if err := atLeast(name, args, 1); err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet("payins bank", flag.ContinueOnError)
	amountText := fs.String("amount", "", "what arrived, in the quote's source currency")
	txID := fs.String("bank-transaction-id", "", "the bank's id of the transfer")
	mode := fs.String("mode", "live", "the quote's mode: live or sandbox")
	if err := parseSub(fs, args[1:]); err != nil {
		return nil, err
	}
	if *amountText == "" || *txID == "" {
		return nil, fmt.Errorf("%s: --amount and --bank-transaction-id are required", name)
	}
	amount, err := decimalArg(name+": --amount", *amountText)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return discard(a.RecordBankReceipt(ctx, client.BankReceipt{Reference: args[0], Amount: amount,
			BankTransactionID: *txID, Mode: client.Mode(*mode)}, o...))
	}, nil
}

func parseSeen(name string, args []string) (adminCall, error) {
	if err := atLeast(name, args, 1); err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet("payins seen", flag.ContinueOnError)
	amountText := fs.String("amount", "", "the deposit, in the token (e.g. 100.5)")
	txHash := fs.String("tx-hash", "", "the deposit's transaction hash")
	logIndex := fs.Int("log-index", 0, "the transfer's log index in its transaction (several transfers in one transaction)")
	if err := parseSub(fs, args[1:]); err != nil {
		return nil, err
	}
	if *logIndex < 0 {
		return nil, fmt.Errorf("%s: --log-index must be 0 or more", name)
	}
	if *amountText == "" || *txHash == "" {
		return nil, fmt.Errorf("%s: --amount and --tx-hash are required", name)
	}
	amount, err := decimalArg(name+": --amount", *amountText)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return discard(a.RecordPayIn(ctx, args[0], amount, *txHash, *logIndex, o...))
	}, nil
}

func parseReverse(name string, args []string) (adminCall, error) {
	if err := atLeast(name, args, 1); err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet("payins reverse", flag.ContinueOnError)
	reason := fs.String("reason", "", "why the receipt is taken back (the audit keeps it)")
	if err := parseSub(fs, args[1:]); err != nil {
		return nil, err
	}
	if *reason == "" {
		return nil, fmt.Errorf("%s: --reason is required", name)
	}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return discard(a.ReverseReceipt(ctx, args[0], *reason, o...))
	}, nil
}

// moneyMove is accounts deposit or withdraw: ACCOUNT_ID AMOUNT --reference.
func moneyMove(move func(a *client.Admin, ctx context.Context, account string, amount decimal.Decimal, reference string, o ...client.CallOption) (client.Movement, error)) func(string, []string) (adminCall, error) {
	return func(name string, args []string) (adminCall, error) {
		if err := atLeast(name, args, 2); err != nil {
			return nil, err
		}
		fs := flag.NewFlagSet(strings.TrimPrefix(name, "admin "), flag.ContinueOnError)
		reference := fs.String("reference", "", "the bank's or chain's id of the transfer")
		if err := parseSub(fs, args[2:]); err != nil {
			return nil, err
		}
		d, err := decimalArg(name+": AMOUNT", args[1])
		if err != nil {
			return nil, err
		}
		if *reference == "" {
			return nil, fmt.Errorf("%s: --reference is required (the bank's or chain's id of the transfer)", name)
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(move(a, ctx, args[0], d, *reference, o...))
		}, nil
	}
}

func parseTransactions(name string, args []string) (adminCall, error) {
	if err := atLeast(name, args, 1); err != nil {
		return nil, err
	}
	list := pageCall(20, 100, "postings per page", "posting",
		func(ctx context.Context, a *client.Admin, limit int, after string, o ...client.CallOption) error {
			return discard(a.Transactions(ctx, args[0], limit, after, o...))
		})
	return list(name, args[1:])
}

func parseCreateKey(name string, args []string) (adminCall, error) {
	if err := atLeast(name, args, 1); err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	mode := modeFlag(fs, false)
	if err := parseSub(fs, args[1:]); err != nil {
		return nil, err
	}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return discard(a.CreateKey(ctx, args[0], client.Mode(*mode), o...))
	}, nil
}

func parseCreatePool(name string, args []string) (adminCall, error) {
	fs := flag.NewFlagSet("pools create", flag.ContinueOnError)
	mode := modeFlag(fs, false)
	poolName := fs.String("name", "", "pool name")
	source := fs.String("source", "", "source currency")
	destination := fs.String("destination", "", "destination currency")
	rate := fs.String("rate", "", "destination units per source unit")
	owner := fs.String("owner", "", "owner client id")
	if err := parseSub(fs, args); err != nil {
		return nil, err
	}
	var missing []string
	for _, f := range []struct{ name, value string }{{"--name", *poolName}, {"--source", *source}, {"--destination", *destination}, {"--rate", *rate}} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: missing %s", name, strings.Join(missing, ", "))
	}
	r, err := decimalArg(name+": --rate", *rate)
	if err != nil {
		return nil, err
	}
	req := client.CreatePoolRequest{Mode: client.Mode(*mode), Name: *poolName, Source: *source, Destination: *destination,
		Rate: r, OwnerClientID: *owner}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return discard(a.CreatePool(ctx, req, o...))
	}, nil
}

func parsePools(_ string, args []string) (adminCall, error) {
	fs := flag.NewFlagSet("pools list", flag.ContinueOnError)
	mode := modeFlag(fs, true)
	if err := parseSub(fs, args); err != nil {
		return nil, err
	}
	m := client.Mode(*mode)
	if *mode == "all" {
		m = ""
	}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return discard(a.Pools(ctx, m, o...))
	}, nil
}

// poolArgs refuses anything but POOL_ID VALUE.
func poolArgs(name string, args []string) error {
	if err := atLeast(name, args, 2); err != nil {
		return err
	}
	if len(args) > 2 {
		return fmt.Errorf("%s: unexpected argument %q", name, args[2])
	}
	return nil
}

// poolChange is pools rate, deposit or withdraw: POOL_ID and a number.
func poolChange(what string, call func(*client.Admin, context.Context, string, decimal.Decimal, ...client.CallOption) (client.Pool, error)) func(string, []string) (adminCall, error) {
	return func(name string, args []string) (adminCall, error) {
		if err := poolArgs(name, args); err != nil {
			return nil, err
		}
		d, err := decimalArg(name+": "+what, args[1])
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(call(a, ctx, args[0], d, o...))
		}, nil
	}
}

func parsePoolStatus(name string, args []string) (adminCall, error) {
	if err := poolArgs(name, args); err != nil {
		return nil, err
	}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return discard(a.SetPoolStatus(ctx, args[0], client.PoolStatus(args[1]), o...))
	}, nil
}

func parseLedgerCheck(_ string, args []string) (adminCall, error) {
	fs := flag.NewFlagSet("ledger check", flag.ContinueOnError)
	mode := modeFlag(fs, false)
	if err := parseSub(fs, args); err != nil {
		return nil, err
	}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return discard(a.LedgerCheck(ctx, client.Mode(*mode), o...))
	}, nil
}

func parseAddNode(name string, args []string) (adminCall, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("%s: give NODE_ID and RAFT_ADDRESS", name)
	}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return discard(a.AddNode(ctx, args[0], args[1], o...))
	}, nil
}

func parseBackup(name string, args []string) (adminCall, error) {
	if len(args) < 1 || strings.HasPrefix(args[0], "-") {
		return nil, fmt.Errorf("%s: give one DIR, the new backup directory", name)
	}
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	copyFiles := fs.Bool("copy", true, "write every file anew (false: a checkpoint, hard-linked to the live store where the file system allows)")
	if err := parseSub(fs, args[1:]); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(args[0])
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		if !*copyFiles {
			return a.Checkpoint(ctx, dir, o...)
		}
		return a.Backup(ctx, dir, o...)
	}, nil
}

func parseImport(name string, args []string) (adminCall, error) {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return nil, fmt.Errorf("%s: give one FILE, the statement", name)
	}
	path := args[0]
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		doc, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return discard(a.ImportStatement(ctx, doc, o...))
	}, nil
}

func parseUnappliedList(name string, args []string) (adminCall, error) {
	fs := flag.NewFlagSet(strings.TrimPrefix(name, "admin "), flag.ContinueOnError)
	mode := fs.String("mode", "", "live or sandbox (default: both)")
	limit := fs.Int("limit", 0, "receipts per page, 1 to 500 (default 50)")
	after := fs.String("starting-after", "", "the last unappliedId of the previous page")
	if err := parseSub(fs, args); err != nil {
		return nil, err
	}
	if *limit < 0 {
		return nil, fmt.Errorf("%s: --limit must be from 1 to 500", name)
	}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return discard(a.UnappliedList(ctx, client.Mode(*mode), *limit, *after, o...))
	}, nil
}

func parseApplyUnapplied(name string, args []string) (adminCall, error) {
	if err := atLeast(name, args, 1); err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet(strings.TrimPrefix(name, "admin "), flag.ContinueOnError)
	quote := fs.String("quote", "", "the quote it pays")
	clientID := fs.String("client", "", "the client whose wallet it credits")
	mode := fs.String("mode", "", "the client's wallet's mode: the receipt's")
	if err := parseSub(fs, args[1:]); err != nil {
		return nil, err
	}
	if (*quote == "") == (*clientID == "") || (*clientID != "" && *mode == "") {
		return nil, fmt.Errorf("%s: give --quote QUOTE_ID, or --client CLIENT_ID and --mode", name)
	}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return discard(a.ApplyUnapplied(ctx, args[0], *quote, *clientID, client.Mode(*mode), o...))
	}, nil
}

func parseReturnUnapplied(name string, args []string) (adminCall, error) {
	if err := atLeast(name, args, 1); err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet(strings.TrimPrefix(name, "admin "), flag.ContinueOnError)
	reference := fs.String("reference", "", "the return transfer's bank id")
	if err := parseSub(fs, args[1:]); err != nil {
		return nil, err
	}
	if *reference == "" {
		return nil, fmt.Errorf("%s: --reference is required (the return transfer's bank id)", name)
	}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return discard(a.ReturnUnapplied(ctx, args[0], *reference, o...))
	}, nil
}
