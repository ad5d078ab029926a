package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdminCommandsParse: every command of the table parses a well-formed
// call and refuses an unknown flag, so a command added to the table
// without a line here fails.
func TestAdminCommandsParse(t *testing.T) {
	examples := map[string]string{
		"clients create":        "Acme Remit",
		"clients list":          "--limit 5 --starting-after cl_1",
		"clients get":           "cl_1",
		"clients credit":        "cl_1 --currency NGN --limit 1000.50 --mode live",
		"quotes get":            "q_1",
		"quotes cancel":         "q_1",
		"quotes complete":       "q_1",
		"webhooks":              "cl_1",
		"payins get":            "pi_1",
		"payins seen":           "pi_1 --amount 100.5 --tx-hash 0xabc --log-index 2",
		"payins bank":           "OJA-REF --amount 1000 --bank-transaction-id FT123 --mode sandbox",
		"payins duplicates":     "",
		"payins import":         "statement.xml",
		"payins unapplied":      "--mode live --limit 10",
		"payins apply":          "u_1 --quote q_1",
		"payins return":         "u_1 --reference RET-1",
		"payins reverse":        "rcpt_l0123 --reason typo",
		"keys create":           "cl_1 --mode live",
		"keys revoke":           "key_1",
		"pools create":          "--name Desk --source NGN --destination USDT --rate 0.000625",
		"pools list":            "--mode all",
		"pools rate":            "p_1 0.00063",
		"pools status":          "p_1 suspended",
		"pools deposit":         "p_1 1000",
		"pools withdraw":        "p_1 10",
		"accounts deposit":      "acct_1 100 --reference FT1",
		"accounts withdraw":     "acct_1 100 --reference PAYOUT-1",
		"accounts transactions": "acct_1 --limit 10",
		"ledger check":          "--mode live",
		"chains":                "",
		"chains unapplied":      "--limit 5 --starting-after ETHEREUM:0xab:1",
		"backup":                "/tmp/oja-backup --copy=false",
		"cluster":               "",
		"cluster replace":       "n3",
		"cluster add":           "n4 127.0.0.1:7004",
		"cluster remove":        "n4",
		"operators create":      "Ngozi --role viewer",
		"operators list":        "",
		"operators revoke":      "op_1",
		"audit":                 "--limit 10",
	}
	for _, c := range adminCommands {
		name := strings.Join(c.words, " ")
		example, ok := examples[name]
		if !ok {
			t.Errorf("admin %s: no example here", name)
			continue
		}
		args := append(append([]string{}, c.words...), strings.Fields(example)...)
		if call, err := parseAdminCall(args); err != nil || call == nil {
			t.Errorf("admin %s: %v", strings.Join(args, " "), err)
		}
		if !strings.Contains(adminUsage, "  "+name+" ") {
			t.Errorf("the usage lacks %q", name)
		}
		delete(examples, name)
	}
	for name := range examples {
		t.Errorf("an example for %q, which the table lacks", name)
	}
	for _, bad := range [][]string{
		{"clients"}, {"pools", "rate", "p_1"}, {"pools", "rate", "p_1", "x"}, {"cluster", "status"},
		{"accounts", "deposit", "acct_1", "100"}, {"payins", "seen", "pi_1", "--amount", "1"}, {"nothing"},
		{"operators", "list", "extra"}, {"audit", "--limit", "-1"},
	} {
		if _, err := parseAdminCall(bad); err == nil {
			t.Errorf("admin %s parsed", strings.Join(bad, " "))
		}
	}
}

// TestAdminCommandsDocumented: every oja admin command is shown in
// docs/operating.md or docs/cluster.md, where an operator looks for it.
func TestAdminCommandsDocumented(t *testing.T) {
	// A command may wrap across lines in a paragraph.
	docs := strings.Join(strings.Fields(readDocs(t, "operating.md", "cluster.md")), " ")
	for _, c := range adminCommands {
		if name := "oja admin " + strings.Join(c.words, " "); !strings.Contains(docs, name+" ") && !strings.Contains(docs, name+"`") {
			t.Errorf("%q is in neither docs/operating.md nor docs/cluster.md", name)
		}
	}
}

// readDocs is the named files of docs/, one after the other.
func readDocs(t *testing.T, names ...string) string {
	t.Helper()
	var docs strings.Builder
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join("../../docs", name))
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	return docs.String()
}
