package main

import (
	"strings"
	"testing"
)

// TestCommandLine: help exits 0 on stdout; a usage mistake is one line
// naming it on stderr, exit 2; `oja version` names the Go version.
func TestCommandLine(t *testing.T) {
	bin := ojaBinary(t)
	env := childEnv()
	for _, tc := range []struct {
		args     []string
		code     int
		stdout   string // substring of stdout
		stderr   string // the whole stderr line, when code is 2
		noStdout bool
	}{
		{args: []string{"help"}, stdout: "oja admin <clients|quotes|webhooks|payins|keys|pools|accounts|ledger|chains|backup|cluster|operators|audit>"},
		{args: []string{"--help"}, stdout: "oja serve"},
		{args: []string{"version"}, stdout: "go1."},
		{args: []string{"admin", "help"}, stdout: "clients create NAME"},
		{args: []string{"admin", "--help"}, stdout: "clients create NAME"},
		{args: []string{"admin", "keys", "create", "x", "-h"}, stdout: "clients create NAME"},
		// Help anywhere after a subcommand only helps: no client named
		// "--help", no backup written into ./--help (no server runs here:
		// acting would fail on the connection).
		{args: []string{"admin", "clients", "create", "--help"}, stdout: "clients create NAME"},
		{args: []string{"admin", "backup", "--help"}, stdout: "backup DIR"},
		{args: []string{"admin", "pools", "--help"}, stdout: "pools list"},
		{args: []string{"admin", "payins", "bank", "help"}, stdout: "payins bank REFERENCE"},
		{args: []string{"serve", "--help"}, stdout: "-quote-ttl"},
		{args: []string{"serve", "-h"}, stdout: "-snapshot-every"},
		{args: []string{"wal", "help"}, stdout: "verify"},
		{args: []string{"help"}, stdout: "oja cluster certs --cluster FILE --out DIR"},
		{args: []string{"cluster", "certs", "--cluster", "c.json", "--out", "certs", "--help"}, stdout: "ca-key.pem"},
		{args: []string{"cluster", "certs"}, code: 2, stderr: "oja: cluster certs: --cluster FILE and --out DIR (and --node ID), nothing else (oja cluster help)"},
		{args: []string{"serve", "--cluster", "c.json", "--node", "n1"}, code: 2,
			stderr: "oja: --cluster needs --cluster-tls DIR (mutual TLS between nodes; oja cluster certs makes the files), or --cluster-insecure to run Raft over plain TCP, where anyone who reaches a Raft port can write"},
		{args: []string{"serve", "--cluster-insecure"}, code: 2, stderr: "oja: --cluster-tls and --cluster-insecure need --cluster"},
		{args: []string{"frob"}, code: 2, stderr: `oja: unknown command "frob" (oja help lists them)`},
		{args: []string{"serve", "--bogus"}, code: 2, stderr: "oja: serve: flag provided but not defined: -bogus (oja serve --help)"},
		{args: []string{"serve", "--quote-ttl", "1ms"}, code: 2, stderr: "oja: --quote-ttl must be a whole number of seconds, at least 1s"},
		{args: []string{"serve", "--join"}, code: 2, stderr: "oja: --join needs --cluster and --node"},
		{args: []string{"serve", "--raft-timeout", "10ms"}, code: 2, stderr: "oja: --raft-timeout 10ms: must be from 100ms to 1m0s"},
		{args: []string{"admin"}, code: 2, stderr: "oja: admin: missing command (oja admin help)"},
		{args: []string{"admin", "backup"}, code: 2, stderr: "oja: admin backup: give one DIR, the new backup directory (oja admin help)"},
		{args: []string{"admin", "pools", "create", "--mode", "live"}, code: 2,
			stderr: "oja: admin pools create: missing --name, --source, --destination, --rate (oja admin help)"},
		{args: []string{"admin", "keys", "create", "x", "--mode"}, code: 2, stderr: "oja: admin keys create: flag needs an argument: -mode (oja admin help)"},
		{args: []string{"admin", "payins", "seen", "7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4"}, code: 2,
			stderr: "oja: admin payins seen: --amount and --tx-hash are required (oja admin help)"},
		{args: []string{"admin", "payins", "seen", "x", "--amount", "lots", "--tx-hash", "0x1"}, code: 2,
			stderr: `oja: admin payins seen: --amount "lots" is not a decimal number (oja admin help)`},
		{args: []string{"admin", "payins", "bank", "OJA-1", "--amount", "1"}, code: 2,
			stderr: "oja: admin payins bank: --amount and --bank-transaction-id are required (oja admin help)"},
		{args: []string{"admin", "clients", "credit", "x", "--limit", "1"}, code: 2,
			stderr: "oja: admin clients credit: --currency and --limit are required (oja admin help)"},
		{args: []string{"admin", "accounts", "withdraw", "x", "ten"}, code: 2,
			stderr: `oja: admin accounts withdraw: AMOUNT "ten" is not a decimal number (oja admin help)`},
		{args: []string{"wal", "stats", "-h"}, stdout: "salvage"},
		{args: []string{"wal", "frob"}, code: 2, stderr: `oja wal: unknown command "frob" (oja wal help)`},
		{args: []string{"wal", "stats", "--bogus"}, code: 2, stderr: "oja wal stats: flag provided but not defined: -bogus (oja wal help)"},
	} {
		stdout, stderr, code := runOja(t, bin, env, tc.args...)
		name := "oja " + strings.Join(tc.args, " ")
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d (stderr %q)", name, code, tc.code, stderr)
			continue
		}
		if tc.code == 0 && (!strings.Contains(stdout, tc.stdout) || stderr != "") {
			t.Errorf("%s: stdout %q (want it to contain %q), stderr %q (want none)", name, stdout, tc.stdout, stderr)
		}
		if tc.code == 2 && (strings.TrimSuffix(stderr, "\n") != tc.stderr || stdout != "") {
			t.Errorf("%s: stderr %q, want the one line %q; stdout %q", name, stderr, tc.stderr, stdout)
		}
	}
}
