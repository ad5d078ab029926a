package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const adminUsage = `usage: oja admin [--addr http://127.0.0.1:8081] [--token T | --data DIR] <command>

  clients create NAME
  clients list [--limit N] [--starting-after CLIENT_ID]   (newest first)
  clients get CLIENT_ID   (its keys, never a secret, and its accounts in both modes)
  quotes get QUOTE_ID     (any client's quote, either mode)
  quotes cancel QUOTE_ID  (cancel any client's open quote; the log records it as the operator's)
  webhooks CLIENT_ID      (the client's webhook endpoints in both modes, with each one's delivery backlog)
  keys create CLIENT_ID [--mode live|sandbox]
  keys revoke KEY_ID
  pools create [--mode M] --name NAME --source CUR --destination CUR --rate R [--owner CLIENT_ID]
  pools list [--mode live|sandbox|all]
  pools rate POOL_ID RATE
  pools status POOL_ID active|suspended
  pools deposit POOL_ID AMOUNT
  pools withdraw POOL_ID AMOUNT
  accounts deposit ACCOUNT_ID AMOUNT
  ledger check [--mode live|sandbox]
  backup DIR
  cluster                 (cluster mode: leader, term, each node's state)
  cluster replace NODE_ID (cluster mode: re-add a member whose data was lost; see README)

Every --mode defaults to sandbox, the mode where nothing real moves: pass
--mode live for live money (pools list --mode all lists both).
The token is --token, else $OJA_ADMIN_TOKEN, else <data>/admin.token.
The address is --addr, else $OJA_ADMIN_ADDR.
`

// adminClientTimeout bounds one admin call.
const adminClientTimeout = 30 * time.Second

type adminCall struct {
	method string
	path   string
	body   map[string]any
}

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
	return doAdminCall(base, t, call, os.Stdout)
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// jsonNumber keeps a number argument exact on its way into the JSON body.
type jsonNumber string

func (n jsonNumber) MarshalJSON() ([]byte, error) {
	if !json.Valid([]byte(n)) || strings.ContainsAny(string(n), `"{}[]`) {
		return nil, fmt.Errorf("not a number: %q", string(n))
	}
	return []byte(n), nil
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
// default sandbox, the mode where nothing real moves (README).
func modeFlag(fs *flag.FlagSet, listing bool) *string {
	help := "live or sandbox"
	if listing {
		help = "live, sandbox or all"
	}
	return fs.String("mode", "sandbox", help)
}

func parseAdminCall(args []string) (*adminCall, error) {
	if len(args) < 1 {
		return nil, errors.New("admin: missing command")
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
		return &adminCall{"POST", "/admin/v1/clients", map[string]any{"name": strings.Join(args[2:], " ")}}, nil
	case "clients list":
		fs := flag.NewFlagSet("clients list", flag.ContinueOnError)
		limit := fs.Int("limit", 0, "clients per page, 1 to 100 (default 20)")
		after := fs.String("starting-after", "", "the last client id of the previous page")
		if err := parseSub(fs, args[2:]); err != nil {
			return nil, err
		}
		q := url.Values{}
		if *limit != 0 {
			q.Set("limit", strconv.Itoa(*limit))
		}
		if *after != "" {
			q.Set("startingAfter", *after)
		}
		path := "/admin/v1/clients"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		return &adminCall{"GET", path, nil}, nil
	case "clients get", "quotes get":
		if len(args) != 3 {
			return nil, fmt.Errorf("admin %s %s: give one id", args[0], sub)
		}
		return &adminCall{"GET", "/admin/v1/" + args[0] + "/" + url.PathEscape(args[2]), nil}, nil
	case "quotes cancel":
		if len(args) != 3 {
			return nil, errors.New("admin quotes cancel: give one quote id")
		}
		return &adminCall{"POST", "/admin/v1/quotes/" + url.PathEscape(args[2]) + "/cancel", nil}, nil
	case "keys create":
		if err := need(3); err != nil {
			return nil, err
		}
		fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
		mode := modeFlag(fs, false)
		if err := parseSub(fs, args[3:]); err != nil {
			return nil, err
		}
		return &adminCall{"POST", "/admin/v1/clients/" + url.PathEscape(args[2]) + "/keys", map[string]any{"mode": *mode}}, nil
	case "keys revoke":
		if err := need(3); err != nil {
			return nil, err
		}
		return &adminCall{"DELETE", "/admin/v1/keys/" + url.PathEscape(args[2]), nil}, nil
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
		body := map[string]any{"mode": *mode, "name": *name, "source": *source, "destination": *destination, "rate": jsonNumber(*rate)}
		if *owner != "" {
			body["ownerClientId"] = *owner
		}
		return &adminCall{"POST", "/admin/v1/pools", body}, nil
	case "pools list":
		fs := flag.NewFlagSet("pools list", flag.ContinueOnError)
		mode := modeFlag(fs, true)
		if err := parseSub(fs, args[2:]); err != nil {
			return nil, err
		}
		path := "/admin/v1/pools"
		if *mode != "all" {
			path += "?mode=" + url.QueryEscape(*mode)
		}
		return &adminCall{"GET", path, nil}, nil
	case "pools rate", "pools status", "pools deposit", "pools withdraw":
		if err := need(4); err != nil {
			return nil, err
		}
		path := "/admin/v1/pools/" + url.PathEscape(args[2]) + "/" + sub
		switch sub {
		case "rate":
			return &adminCall{"PUT", path, map[string]any{"rate": jsonNumber(args[3])}}, nil
		case "status":
			return &adminCall{"PUT", path, map[string]any{"status": args[3]}}, nil
		}
		return &adminCall{"POST", path, map[string]any{"amount": jsonNumber(args[3])}}, nil
	case "accounts deposit":
		if err := need(4); err != nil {
			return nil, err
		}
		return &adminCall{"POST", "/admin/v1/accounts/" + url.PathEscape(args[2]) + "/deposit", map[string]any{"amount": jsonNumber(args[3])}}, nil
	case "ledger check":
		fs := flag.NewFlagSet("ledger check", flag.ContinueOnError)
		mode := modeFlag(fs, false)
		if err := parseSub(fs, args[2:]); err != nil {
			return nil, err
		}
		return &adminCall{"GET", "/admin/v1/ledger/check?mode=" + url.QueryEscape(*mode), nil}, nil
	}
	if args[0] == "webhooks" {
		if len(args) != 2 {
			return nil, errors.New("admin webhooks: give one client id")
		}
		return &adminCall{"GET", "/admin/v1/clients/" + url.PathEscape(args[1]) + "/webhooks", nil}, nil
	}
	if args[0] == "cluster" && len(args) == 1 {
		return &adminCall{"GET", "/admin/v1/cluster", nil}, nil
	}
	if args[0] == "cluster" && len(args) == 3 && args[1] == "replace" {
		return &adminCall{"POST", "/admin/v1/cluster/nodes/" + url.PathEscape(args[2]) + "/replace", nil}, nil
	}
	if args[0] == "backup" && len(args) != 2 {
		return nil, errors.New("admin backup: give one DIR, the new backup directory")
	}
	if args[0] == "backup" {
		dir, err := filepath.Abs(args[1])
		if err != nil {
			return nil, err
		}
		return &adminCall{"POST", "/admin/v1/backup", map[string]any{"dir": dir}}, nil
	}
	return nil, fmt.Errorf("admin: unknown command %q", strings.Join(args, " "))
}

// doAdminCall performs call and prints the JSON answer indented. A non-2xx
// answer is printed to stderr and returned as an error.
func doAdminCall(base, token string, call *adminCall, out io.Writer) error {
	var body io.Reader
	if call.body != nil {
		b, err := json.Marshal(call.body)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(call.method, strings.TrimRight(base, "/")+call.path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: adminClientTimeout}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	var pretty bytes.Buffer
	if len(raw) > 0 && json.Indent(&pretty, raw, "", "  ") == nil {
		raw = append(pretty.Bytes(), '\n')
	}
	if resp.StatusCode/100 != 2 {
		os.Stderr.Write(raw)
		return fmt.Errorf("admin: %s %s: %s", call.method, call.path, resp.Status)
	}
	_, err = out.Write(raw)
	return err
}
