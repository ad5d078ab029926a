package camt_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oja-exchange/oja/gateway/camt"
	"github.com/oja-exchange/oja/internal/camttest"
	"github.com/oja-exchange/oja/internal/xsdcheck"
)

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSamplesAreSchemaValid: every sample this package and the import's
// tests read, and what camttest builds, is valid against the ISO 20022
// XSD of its message.
func TestSamplesAreSchemaValid(t *testing.T) {
	lint := xsdcheck.Lint(t)
	dir := t.TempDir()
	built := map[string][]byte{
		"built-statement.xml": camttest.Statement("M-1", "0123456789", "NGN",
			camttest.Entry{Amount: "1.00", Currency: "NGN", AcctSvcrRef: "R1", Remittance: []string{"OJA-AAAAAAAAAA"}, Debtor: "A & B <Ltd>"},
			camttest.Entry{Amount: "2.50", Currency: "NGN", NtryRef: "N2", Debit: true},
			camttest.Entry{Amount: "3", Currency: "NGN", Pending: true}),
		"built-notification.xml": camttest.Notification("M-2", "GH1002003004", "GHS",
			camttest.Entry{Amount: "9.99", Currency: "GHS", AcctSvcrRef: "G1"}),
	}
	for name, b := range built {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ file, xsd string }{
		{filepath.Join("testdata", "statement.xml"), camt.Statement},
		{filepath.Join("testdata", "notification.xml"), camt.Notification},
		{filepath.Join(dir, "built-statement.xml"), camt.Statement},
		{filepath.Join(dir, "built-notification.xml"), camt.Notification},
	} {
		doc, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if err := xsdcheck.Validate(lint, filepath.Join("testdata", "xsd", tc.xsd+".xsd"), doc); err != nil {
			t.Errorf("%s is not a valid %s: %v", tc.file, tc.xsd, err)
		}
	}
}

// TestParseStatement: a statement's account and each entry's reference
// (AcctSvcrRef, else NtryRef), amount, currency, direction, status,
// remittance and debtor, in document order.
func TestParseStatement(t *testing.T) {
	doc, err := camt.Parse(read(t, "statement.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Message != camt.Statement || doc.ID != "STMT-20261128-NGN" || len(doc.Accounts) != 1 || doc.Accounts[0].ID != "0123456789" ||
		doc.Accounts[0].Currency != "NGN" || len(doc.Accounts[0].Entries) != 5 {
		t.Fatalf("document %+v", doc)
	}
	want := []camt.Entry{
		{Number: 1, Ref: "NIP/261128/000001", Amount: "100000.00", Currency: "NGN", Credit: true, Booked: true,
			Remittance: "Payment for OJA-4F7Q9D2MXK school fees", Debtor: "Ada Obi"},
		{Number: 2, Ref: "NIP/261128/000002", Amount: "25000.00", Currency: "NGN", Credit: true, Booked: true, Remittance: "rent november", Debtor: "Chinedu Eze"},
		{Number: 3, Ref: "FT2611280003", Amount: "5000.50", Currency: "NGN", Credit: true, Booked: true, Remittance: "ref oja4f7q9d2mxk top up"},
		{Number: 4, Ref: "CHG/261128/1", Amount: "750.00", Currency: "NGN", Credit: false, Booked: true, Remittance: "account maintenance fee"},
		{Number: 5, Ref: "NIP/261128/000009", Amount: "1000.00", Currency: "NGN", Credit: true, Booked: false},
	}
	for i, e := range doc.Accounts[0].Entries {
		if e != want[i] {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i+1, e, want[i])
		}
	}
}

// TestParseNotification: a camt.054's Ntfctn reads as a statement's Stmt.
func TestParseNotification(t *testing.T) {
	doc, err := camt.Parse(read(t, "notification.xml"))
	if err != nil {
		t.Fatal(err)
	}
	e := doc.Accounts[0].Entries[0]
	if doc.Message != camt.Notification || doc.Accounts[0].ID != "GH1002003004" || e.Ref != "GIP-771203" || e.Amount != "1500.00" ||
		e.Currency != "GHS" || !e.Credit || !e.Booked || e.Remittance != "OJA-PQ8M3ZT2RW" || e.Debtor != "Kofi Mensah" {
		t.Fatalf("notification %+v, entry %+v", doc, e)
	}
}

// TestParseRefuses: what is not a camt.053.001.08 or camt.054.001.08
// document is refused, naming why.
func TestParseRefuses(t *testing.T) {
	deep := "<Document xmlns=\"urn:iso:std:iso:20022:tech:xsd:camt.053.001.08\">" + strings.Repeat("<a>", camt.DepthMax+1) +
		strings.Repeat("</a>", camt.DepthMax+1) + "</Document>"
	for _, tc := range []struct {
		name string
		doc  []byte
		want string
	}{
		{"a DTD and an external entity", read(t, "dtd.xml"), "DTD"},
		{"another message", read(t, "camt052.xml"), "camt.052.001.08"},
		{"not XML", read(t, "csv.xml"), "outside the root element"},
		{"empty", nil, "no root element"},
		{"too deep", []byte(deep), "nested more than"},
		{"too large", make([]byte, camt.BytesMax+1), "over the"},
		{"another root", []byte(`<Statement xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"/>`), "not <Document>"},
		{"no namespace", []byte(`<Document><BkToCstmrStmt/></Document>`), "no namespace"},
		{"two roots", []byte(`<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"/><Document/>`), "more than one root"},
		{"no statement", []byte(`<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"><BkToCstmrStmt><GrpHdr><MsgId>x</MsgId></GrpHdr></BkToCstmrStmt></Document>`), "no account"},
		{"a processing instruction", []byte(`<?php x ?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"/>`), "processing instruction"},
		{"unclosed", []byte(`<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"><BkToCstmrStmt>`), "not well-formed"},
	} {
		_, err := camt.Parse(tc.doc)
		if !errors.Is(err, camt.ErrDocument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a refusal naming %q", tc.name, err, tc.want)
		}
	}
}

// FuzzParse: no input makes Parse panic; what it accepts is a message it
// reads, with at least one account and entries numbered in order.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"statement.xml", "notification.xml", "dtd.xml", "camt052.xml", "csv.xml"} {
		f.Add(read(f, name))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := camt.Parse(b)
		if err != nil {
			if !errors.Is(err, camt.ErrDocument) {
				t.Fatalf("error %v does not wrap ErrDocument", err)
			}
			return
		}
		if doc.Message != camt.Statement && doc.Message != camt.Notification || len(doc.Accounts) == 0 {
			t.Fatalf("accepted %+v", doc)
		}
		n := 0
		for _, a := range doc.Accounts {
			if a.ID == "" {
				t.Fatal("an account without an id")
			}
			for _, e := range a.Entries {
				if n++; e.Number != n {
					t.Fatalf("entry %d numbered %d", n, e.Number)
				}
			}
		}
	})
}
