package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMarketsFlag: a markets file with problems stops `oja serve` before
// anything starts (exit 2), naming every problem, from the flag or
// OJA_MARKETS; the example file starts, and the markets it puts in force
// are in the log for the offline tools.
func TestMarketsFlag(t *testing.T) {
	bin := ojaBinary(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{
	 "currencies": [{"code":"NGN","kind":"fiat","minorUnits":2}, {"code":"USDT","kind":"token","minorUnits":6}],
	 "pairs": [{"source":"NGN","destination":"USDT"}, {"source":"USDT","destination":"XAF"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	want := []string{
		`markets: currencies[1] "USDT": a token needs chains`,
		"markets: pairs[0] NGN/USDT: fiat source NGN has no collectionAccounts entry",
		`markets: pairs[1] USDT/XAF: unknown currency "XAF"`,
	}
	for _, args := range [][]string{{"serve", "--data", data, "--markets", bad}, {"serve", "--data", data}} {
		env := childEnv()
		if len(args) == 3 {
			env = childEnv("OJA_MARKETS=" + bad)
		}
		_, stderr, code := runOja(t, bin, env, args...)
		if code != 2 {
			t.Fatalf("%v: exit %d, want 2; stderr %s", args, code, stderr)
		}
		for _, w := range want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q\nlacks %q", args, stderr, w)
			}
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("%v: the data dir was created (%v) before the markets were checked", args, err)
		}
	}

	example, err := filepath.Abs("../../markets.example.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := newOjaServer(t, "--markets", example)
	srv.start()
	srv.stop()
	out, errOut, code := runOja(t, bin, childEnv(), "wal", "dump", "--data", srv.data, "--json")
	if code != 0 {
		t.Fatalf("wal dump: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `"type":"MarketsSet"`) ||
		!strings.Contains(out, `{"source":"USDT","destination":"NGN","minSourceAmount":1,"maxSourceAmount":300000}`) {
		t.Errorf("wal dump shows no MarketsSet with USDT/NGN:\n%s", out)
	}
}
