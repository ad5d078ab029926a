package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/client"
)

const adminUsage = `usage: oja admin [--addr http://127.0.0.1:8081] [--token T | --data DIR] <command>

  clients create NAME
  clients list [--limit N] [--starting-after CLIENT_ID]   (newest first)
  clients get CLIENT_ID   (its keys, never a secret, and its accounts in both modes)
  clients credit CLIENT_ID --currency CUR --limit AMOUNT [--mode M]
                          (a credit line: completions may take that wallet down to -limit; 0 removes it)
  quotes get QUOTE_ID     (any client's quote, either mode, with the payments received for it)
  quotes cancel QUOTE_ID  (cancel any client's open quote; the log records it as the operator's)
  quotes complete QUOTE_ID (complete any client's quote; the partner's wallet must cover it, as for the partner)
  webhooks CLIENT_ID      (the client's webhook endpoints in both modes, with each one's delivery backlog)
  payins get ADDRESS_ID   (a crypto pay-in: its address, quote, client, status and the deposits credited)
  payins seen ADDRESS_ID --amount AMOUNT --tx-hash HASH [--log-index N]
                          (a deposit seen on chain: credited to the partner's wallet, once per chain, hash and log index)
  payins bank REFERENCE --amount AMOUNT --bank-transaction-id ID [--mode live|sandbox]
                          (a bank transfer carrying a quote's reference: credited to the partner's wallet, once per
                          bank transaction id however typed; --mode is the quote's, default live)
  payins duplicates       (receipts recorded before identities that name one payment: candidates for reverse)
  payins reverse RECEIPT_ID --reason TEXT   (take a receipt back: wallet → clearing, a reversal row)
  keys create CLIENT_ID [--mode live|sandbox]
  keys revoke KEY_ID
  pools create [--mode M] --name NAME --source CUR --destination CUR --rate R [--owner CLIENT_ID]
  pools list [--mode live|sandbox|all]
  pools rate POOL_ID RATE
  pools status POOL_ID active|suspended
  pools deposit POOL_ID AMOUNT
  pools withdraw POOL_ID AMOUNT
  accounts deposit ACCOUNT_ID AMOUNT --reference REF
                          (a prefunding: clearing → the wallet; REF is the bank's or chain's id of the transfer)
  accounts withdraw ACCOUNT_ID AMOUNT --reference REF
                          (a payout of the wallet's available money: wallet → clearing; REF is the payout's
                          bank or chain id: the same payout again changes nothing)
  accounts transactions ACCOUNT_ID [--limit N] [--starting-after ID]   (a wallet's statement, newest first)
  ledger check [--mode live|sandbox]
  backup DIR [--copy=false]   (a consistent copy of the live store, every file its own;
                          --copy=false: a checkpoint, hard-linked to the store on the same file system)
  cluster                 (cluster mode: leader, term, each node's state)
  cluster replace NODE_ID (cluster mode: re-add a member whose data was lost; see docs/cluster.md)
  cluster add NODE_ID RAFT_ADDRESS (cluster mode: a new voter, started with --join; see docs/cluster.md)
  cluster remove NODE_ID  (cluster mode: the member leaves the cluster and serves nothing)
  operators create NAME --role viewer|operator   (root only: a named operator; its token is shown once)
  operators list          (named operators, revoked ones too)
  operators revoke OPERATOR_ID   (root only: its token fails from the next request on)
  audit [--limit N] [--starting-after AUDIT_ID]   (every operator write, who made it, newest first)

Every --mode defaults to sandbox, the mode where nothing real moves: pass
--mode live for live money (pools list --mode all lists both).
-h, --help or help anywhere prints this and does nothing else.
The token is --token, else $OJA_ADMIN_TOKEN, else <data>/admin.token.
The address is --addr, else $OJA_ADMIN_ADDR.
`

// adminClientTimeout bounds one admin call.
const adminClientTimeout = 30 * time.Second

// adminCall is one parsed `oja admin` command: a call of the typed operator
// client (client.Admin), made with opts.
type adminCall func(ctx context.Context, a *client.Admin, opts ...client.CallOption) error

func admin(args []string) error {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	addr := fs.String("addr", envOr("OJA_ADMIN_ADDR", "http://127.0.0.1:8081"), "admin API address")
	token := fs.String("token", "", "admin token")
	data := fs.String("data", envOr("OJA_DATA", "./data"), "data dir holding admin.token")
	printUsage := func(w io.Writer) { fmt.Fprint(w, adminUsage) }
	if err := parseFlags(fs, args, printUsage); err != nil {
		return err
	}
	if rest := fs.Args(); len(rest) == 1 && (rest[0] == "help" || rest[0] == "-h" || rest[0] == "--help") {
		printUsage(os.Stdout)
		return nil
	}
	call, err := parseAdminCall(fs.Args())
	if errors.Is(err, flag.ErrHelp) {
		printUsage(os.Stdout)
		return err
	}
	if err != nil {
		return usageError{err.Error() + " (oja admin help)"}
	}
	t := *token
	if t == "" {
		t = os.Getenv("OJA_ADMIN_TOKEN")
	}
	if t == "" {
		b, err := os.ReadFile(filepath.Join(*data, "admin.token"))
		if err != nil {
			return fmt.Errorf("no admin token: pass --token, set OJA_ADMIN_TOKEN or --data: %w", err)
		}
		t = strings.TrimSpace(string(b))
	}
	base := *addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	a, err := client.NewAdmin(base, t, client.WithTimeout(adminClientTimeout), client.WithUserAgent("oja-admin"))
	if err != nil {
		return err
	}
	return runAdminCall(a, call, os.Stdout, os.Stderr)
}

// runAdminCall makes call and prints the service's JSON answer, indented,
// exactly as it came (numbers stay numbers, no member is lost): on stdout
// for a success, on stderr for a refusal, which is also returned.
func runAdminCall(a *client.Admin, call adminCall, out, errOut io.Writer) error {
	var raw []byte
	err := call(context.Background(), a, client.ResponseBody(&raw))
	var pretty bytes.Buffer
	if len(raw) > 0 && json.Indent(&pretty, raw, "", "  ") == nil {
		raw = append(pretty.Bytes(), '\n')
	}
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		errOut.Write(raw)
		if apiErr.Code != "" {
			return fmt.Errorf("admin: %s (%d): %s", apiErr.Code, apiErr.Status, apiErr.Message)
		}
		return fmt.Errorf("admin: status %d", apiErr.Status)
	}
	if err != nil {
		return err
	}
	_, err = out.Write(raw)
	return err
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// decimalArg parses a number argument exactly; what names it says which.
func decimalArg(what, text string) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(text)
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("%s %q is not a decimal number", what, text)
	}
	return d, nil
}

// parseSub parses a subcommand's flags: -h is flag.ErrHelp (the caller
// prints the admin usage), any other problem an error naming it.
func parseSub(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("admin %s: %v", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("admin %s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// modeFlag is --mode of every admin subcommand that takes one: one rule,
// default sandbox, the mode where nothing real moves (spec §2).
func modeFlag(fs *flag.FlagSet, listing bool) *string {
	help := "live or sandbox"
	if listing {
		help = "live, sandbox or all"
	}
	return fs.String("mode", "sandbox", help)
}

// idCall is the call of a command that takes exactly one id (args[2]).
func idCall(args []string, call func(ctx context.Context, a *client.Admin, id string, o ...client.CallOption) error) (adminCall, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("admin %s %s: give one id", args[0], args[1])
	}
	return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
		return call(ctx, a, args[2], o...)
	}, nil
}

// discard adapts a typed call whose answer is only printed.
func discard[T any](_ T, err error) error { return err }

func parseAdminCall(args []string) (adminCall, error) {
	if len(args) < 1 {
		return nil, errors.New("admin: missing command")
	}
	// Help anywhere only helps: never a client named "--help", never a
	// backup written into ./--help.
	if helpAsked(args) {
		return nil, flag.ErrHelp
	}
	need := func(n int) error {
		if len(args) < n {
			return fmt.Errorf("admin %s: missing arguments", strings.Join(args, " "))
		}
		return nil
	}
	sub := ""
	if len(args) > 1 {
		sub = args[1]
	}
	switch args[0] + " " + sub {
	case "clients create":
		if err := need(3); err != nil {
			return nil, err
		}
		name := strings.Join(args[2:], " ")
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.CreateClient(ctx, name, o...))
		}, nil
	case "clients list":
		fs := flag.NewFlagSet("clients list", flag.ContinueOnError)
		limit := fs.Int("limit", 0, "clients per page, 1 to 100 (default 20)")
		after := fs.String("starting-after", "", "the last client id of the previous page")
		if err := parseSub(fs, args[2:]); err != nil {
			return nil, err
		}
		if *limit < 0 {
			return nil, errors.New("admin clients list: --limit must be from 1 to 100")
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.ListClients(ctx, *limit, *after, o...))
		}, nil
	case "clients get":
		return idCall(args, func(ctx context.Context, a *client.Admin, id string, o ...client.CallOption) error {
			return discard(a.GetClient(ctx, id, o...))
		})
	case "operators create":
		if len(args) < 3 || strings.HasPrefix(args[2], "-") {
			return nil, errors.New("admin operators create: give the operator's NAME, then --role viewer|operator")
		}
		fs := flag.NewFlagSet("operators create", flag.ContinueOnError)
		role := fs.String("role", "", "viewer (reads only) or operator (reads and acts)")
		if err := parseSub(fs, args[3:]); err != nil {
			return nil, err
		}
		if *role != "viewer" && *role != "operator" {
			return nil, errors.New("admin operators create: --role viewer or --role operator")
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.CreateOperator(ctx, args[2], *role, o...))
		}, nil
	case "operators list":
		if len(args) != 2 {
			return nil, errors.New("admin operators list: no arguments")
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.Operators(ctx, o...))
		}, nil
	case "operators revoke":
		return idCall(args, func(ctx context.Context, a *client.Admin, id string, o ...client.CallOption) error {
			return discard(a.RevokeOperator(ctx, id, o...))
		})
	case "quotes get":
		return idCall(args, func(ctx context.Context, a *client.Admin, id string, o ...client.CallOption) error {
			return discard(a.GetQuote(ctx, id, o...))
		})
	case "quotes cancel":
		return idCall(args, func(ctx context.Context, a *client.Admin, id string, o ...client.CallOption) error {
			return discard(a.CancelQuote(ctx, id, o...))
		})
	case "quotes complete":
		return idCall(args, func(ctx context.Context, a *client.Admin, id string, o ...client.CallOption) error {
			return discard(a.CompleteQuote(ctx, id, o...))
		})
	case "clients credit":
		if err := need(3); err != nil {
			return nil, err
		}
		fs := flag.NewFlagSet("clients credit", flag.ContinueOnError)
		mode := modeFlag(fs, false)
		currency := fs.String("currency", "", "the wallet's currency")
		limitText := fs.String("limit", "", "the credit limit, 0 or more")
		if err := parseSub(fs, args[3:]); err != nil {
			return nil, err
		}
		if *currency == "" || *limitText == "" {
			return nil, errors.New("admin clients credit: --currency and --limit are required")
		}
		limit, err := decimalArg("admin clients credit: --limit", *limitText)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.SetCreditLimit(ctx, args[2], client.Mode(*mode), *currency, limit, o...))
		}, nil
	case "payins bank":
		if err := need(3); err != nil {
			return nil, err
		}
		fs := flag.NewFlagSet("payins bank", flag.ContinueOnError)
		amountText := fs.String("amount", "", "what arrived, in the quote's source currency")
		txID := fs.String("bank-transaction-id", "", "the bank's id of the transfer")
		mode := fs.String("mode", "live", "the quote's mode: live or sandbox")
		if err := parseSub(fs, args[3:]); err != nil {
			return nil, err
		}
		if *amountText == "" || *txID == "" {
			return nil, errors.New("admin payins bank: --amount and --bank-transaction-id are required")
		}
		amount, err := decimalArg("admin payins bank: --amount", *amountText)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.RecordBankReceipt(ctx, client.BankReceipt{Reference: args[2], Amount: amount,
				BankTransactionID: *txID, Mode: client.Mode(*mode)}, o...))
		}, nil
	case "accounts withdraw", "accounts deposit":
		if err := need(4); err != nil {
			return nil, err
		}
		fs := flag.NewFlagSet("accounts "+sub, flag.ContinueOnError)
		reference := fs.String("reference", "", "the bank's or chain's id of the transfer")
		if err := parseSub(fs, args[4:]); err != nil {
			return nil, err
		}
		d, err := decimalArg("admin accounts "+sub+": AMOUNT", args[3])
		if err != nil {
			return nil, err
		}
		if *reference == "" {
			return nil, fmt.Errorf("admin accounts %s: --reference is required (the bank's or chain's id of the transfer)", sub)
		}
		move := (*client.Admin).WithdrawAccount
		if sub == "deposit" {
			move = (*client.Admin).DepositAccount
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(move(a, ctx, args[2], d, *reference, o...))
		}, nil
	case "payins duplicates":
		if len(args) > 2 {
			return nil, fmt.Errorf("admin payins duplicates: unexpected argument %q", args[2])
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.Duplicates(ctx, o...))
		}, nil
	case "payins reverse":
		if err := need(3); err != nil {
			return nil, err
		}
		fs := flag.NewFlagSet("payins reverse", flag.ContinueOnError)
		reason := fs.String("reason", "", "why the receipt is taken back (the audit keeps it)")
		if err := parseSub(fs, args[3:]); err != nil {
			return nil, err
		}
		if *reason == "" {
			return nil, errors.New("admin payins reverse: --reason is required")
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.ReverseReceipt(ctx, args[2], *reason, o...))
		}, nil
	case "accounts transactions":
		if err := need(3); err != nil {
			return nil, err
		}
		fs := flag.NewFlagSet("accounts transactions", flag.ContinueOnError)
		limit := fs.Int("limit", 0, "postings per page, 1 to 100 (default 20)")
		after := fs.String("starting-after", "", "the last posting id of the previous page")
		if err := parseSub(fs, args[3:]); err != nil {
			return nil, err
		}
		if *limit < 0 {
			return nil, errors.New("admin accounts transactions: --limit must be from 1 to 100")
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.Transactions(ctx, args[2], *limit, *after, o...))
		}, nil
	case "payins get":
		return idCall(args, func(ctx context.Context, a *client.Admin, id string, o ...client.CallOption) error {
			return discard(a.GetPayIn(ctx, id, o...))
		})
	case "payins seen":
		if err := need(3); err != nil {
			return nil, err
		}
		fs := flag.NewFlagSet("payins seen", flag.ContinueOnError)
		amountText := fs.String("amount", "", "the deposit, in the token (e.g. 100.5)")
		txHash := fs.String("tx-hash", "", "the deposit's transaction hash")
		logIndex := fs.Int("log-index", 0, "the transfer's log index in its transaction (several transfers in one transaction)")
		if err := parseSub(fs, args[3:]); err != nil {
			return nil, err
		}
		if *logIndex < 0 {
			return nil, errors.New("admin payins seen: --log-index must be 0 or more")
		}
		if *amountText == "" || *txHash == "" {
			return nil, errors.New("admin payins seen: --amount and --tx-hash are required")
		}
		amount, err := decimalArg("admin payins seen: --amount", *amountText)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.RecordPayIn(ctx, args[2], amount, *txHash, *logIndex, o...))
		}, nil
	case "keys create":
		if err := need(3); err != nil {
			return nil, err
		}
		fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
		mode := modeFlag(fs, false)
		if err := parseSub(fs, args[3:]); err != nil {
			return nil, err
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.CreateKey(ctx, args[2], client.Mode(*mode), o...))
		}, nil
	case "keys revoke":
		if err := need(3); err != nil {
			return nil, err
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return a.RevokeKey(ctx, args[2], o...)
		}, nil
	case "pools create":
		fs := flag.NewFlagSet("pools create", flag.ContinueOnError)
		mode := modeFlag(fs, false)
		name := fs.String("name", "", "pool name")
		source := fs.String("source", "", "source currency")
		destination := fs.String("destination", "", "destination currency")
		rate := fs.String("rate", "", "destination units per source unit")
		owner := fs.String("owner", "", "owner client id")
		if err := parseSub(fs, args[2:]); err != nil {
			return nil, err
		}
		var missing []string
		for _, f := range []struct{ name, value string }{{"--name", *name}, {"--source", *source}, {"--destination", *destination}, {"--rate", *rate}} {
			if f.value == "" {
				missing = append(missing, f.name)
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("admin pools create: missing %s", strings.Join(missing, ", "))
		}
		r, err := decimalArg("admin pools create: --rate", *rate)
		if err != nil {
			return nil, err
		}
		req := client.CreatePoolRequest{Mode: client.Mode(*mode), Name: *name, Source: *source, Destination: *destination,
			Rate: r, OwnerClientID: *owner}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.CreatePool(ctx, req, o...))
		}, nil
	case "pools list":
		fs := flag.NewFlagSet("pools list", flag.ContinueOnError)
		mode := modeFlag(fs, true)
		if err := parseSub(fs, args[2:]); err != nil {
			return nil, err
		}
		m := client.Mode(*mode)
		if *mode == "all" {
			m = ""
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.Pools(ctx, m, o...))
		}, nil
	case "pools rate", "pools status", "pools deposit", "pools withdraw":
		if err := need(4); err != nil {
			return nil, err
		}
		if len(args) > 4 {
			return nil, fmt.Errorf("admin pools %s: unexpected argument %q", sub, args[4])
		}
		id, value := args[2], args[3]
		if sub == "status" {
			return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
				return discard(a.SetPoolStatus(ctx, id, client.PoolStatus(value), o...))
			}, nil
		}
		what := "AMOUNT"
		if sub == "rate" {
			what = "RATE"
		}
		d, err := decimalArg("admin pools "+sub+": "+what, value)
		if err != nil {
			return nil, err
		}
		calls := map[string]func(*client.Admin, context.Context, string, decimal.Decimal, ...client.CallOption) (client.Pool, error){
			"rate": (*client.Admin).SetPoolRate, "deposit": (*client.Admin).DepositPool, "withdraw": (*client.Admin).WithdrawPool,
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(calls[sub](a, ctx, id, d, o...))
		}, nil
	case "ledger check":
		fs := flag.NewFlagSet("ledger check", flag.ContinueOnError)
		mode := modeFlag(fs, false)
		if err := parseSub(fs, args[2:]); err != nil {
			return nil, err
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.LedgerCheck(ctx, client.Mode(*mode), o...))
		}, nil
	}
	switch {
	case args[0] == "webhooks":
		if len(args) != 2 {
			return nil, errors.New("admin webhooks: give one client id")
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.ClientWebhooks(ctx, args[1], o...))
		}, nil
	case args[0] == "cluster" && len(args) == 1:
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.ClusterStatus(ctx, o...))
		}, nil
	case args[0] == "cluster" && len(args) == 3 && args[1] == "replace":
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.ReplaceNode(ctx, args[2], o...))
		}, nil
	case args[0] == "cluster" && len(args) == 4 && args[1] == "add":
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.AddNode(ctx, args[2], args[3], o...))
		}, nil
	case args[0] == "cluster" && len(args) == 3 && args[1] == "remove":
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.RemoveNode(ctx, args[2], o...))
		}, nil
	case args[0] == "audit":
		fs := flag.NewFlagSet("audit", flag.ContinueOnError)
		limit := fs.Int("limit", 0, "entries per page, 1 to 500 (default 50)")
		after := fs.String("starting-after", "", "the last entry id of the previous page")
		if err := parseSub(fs, args[1:]); err != nil {
			return nil, err
		}
		if *limit < 0 {
			return nil, errors.New("admin audit: --limit must be from 1 to 500")
		}
		return func(ctx context.Context, a *client.Admin, o ...client.CallOption) error {
			return discard(a.Audit(ctx, *limit, *after, o...))
		}, nil
	case args[0] == "backup" && (len(args) < 2 || strings.HasPrefix(args[1], "-")):
		return nil, errors.New("admin backup: give one DIR, the new backup directory")
	case args[0] == "backup":
		fs := flag.NewFlagSet("backup", flag.ContinueOnError)
		copyFiles := fs.Bool("copy", true, "write every file anew (false: a checkpoint, hard-linked to the live store where the file system allows)")
		if err := parseSub(fs, args[2:]); err != nil {
			return nil, err
		}
		dir, err := filepath.Abs(args[1])
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
	return nil, fmt.Errorf("admin: unknown command %q", strings.Join(args, " "))
}
