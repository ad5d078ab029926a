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
