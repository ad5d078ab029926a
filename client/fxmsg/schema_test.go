package fxmsg_test

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oja-exchange/oja/client/fxmsg"
)

// xmllint finds xmllint (Debian package libxml2-utils): in CI it must be
// there (make test installs it); elsewhere its absence skips the schema
// checks. (The server's tests use internal/xsdcheck; this module imports
// nothing of the server.)
func xmllint(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("xmllint is missing in CI: make test installs it (Debian package libxml2-utils)")
		}
		t.Skip("xmllint not installed (Debian package libxml2-utils): the documents are not checked against xsd/")
	}
	return path
}

// schemaValid runs xmllint on doc against the schema of its root element,
// xsd/<root>.xsd. A request root in no namespace (which the service also
// reads) is given its message type's namespace first: the schemas describe
// the namespaced form.
func schemaValid(t *testing.T, lint string, doc []byte) error {
	t.Helper()
	root := rootOf(t, doc)
	if root.Space == "" {
		doc = bytes.Replace(doc, []byte("<"+root.Local+">"),
			[]byte("<"+root.Local+` xmlns="`+fxmsg.NamespacePrefix+fxmsg.TypeTradeInstruction+`">`), 1)
	}
	cmd := exec.Command(lint, "--noout", "--nonet", "--schema", filepath.Join("xsd", root.Local+".xsd"), "-")
	cmd.Stdin = bytes.NewReader(doc)
	if out, err := cmd.CombinedOutput(); err != nil {
		return &schemaError{string(out)}
	}
	return nil
}

type schemaError struct{ out string }

func (e *schemaError) Error() string { return e.out }

func rootOf(t *testing.T, doc []byte) xml.Name {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("no root element: %v", err)
		}
		if s, ok := tok.(xml.StartElement); ok {
			return s.Name
		}
	}
}

// TestSchemas: every golden document (each response the writers produce,
// each request example) is valid against its message's schema in xsd/,
// every schema has a golden document, and documents the API refuses or
// never writes are invalid.
func TestSchemas(t *testing.T) {
	lint := xmllint(t)
	files, err := filepath.Glob(filepath.Join("testdata", "*.xml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden documents: %v", err)
	}
	covered := map[string]bool{}
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		covered[rootOf(t, doc).Local] = true
		if err := schemaValid(t, lint, doc); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	schemas, _ := filepath.Glob(filepath.Join("xsd", "*.xsd"))
	for _, s := range schemas {
		if name := strings.TrimSuffix(filepath.Base(s), ".xsd"); name != "common" && !covered[name] {
			t.Errorf("no golden document for %s", s)
		}
	}
	if len(schemas) != 10 {
		t.Errorf("%d schemas, want one per message (9) and common.xsd", len(schemas))
	}

	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, bad := range []struct{ name, doc string }{
		{"exponent rate", strings.Replace(read("FXTradInstr_sell.xml"), "0.000625", "6.25e-4", 1)},
		{"unknown element", strings.Replace(read("FXTradInstr_sell.xml"), "<AmtDrctn>", "<Memo>x</Memo><AmtDrctn>", 1)},
		{"unknown direction", strings.Replace(read("FXTradInstr_sell.xml"), "SELL", "HOLD", 1)},
		{"both destinations", strings.Replace(read("FXTradAccptReq_internal.xml"), "</FXTradAccptReq>", "<SttlmDstn><BlkChnDstn><Adr>T</Adr></BlkChnDstn></SttlmDstn></FXTradAccptReq>", 1)},
		{"no TTL", strings.Replace(read("FXTradCxlRspn.xml"), "<TTL>0</TTL>", "", 1)},
		{"amount without currency", strings.Replace(read("FXTradStsAndDtlsNtfctn.xml"), `<TradgCcyAmt Ccy="NGN">`, "<TradgCcyAmt>", 1)},
		{"unknown status", strings.Replace(read("FXTradCxlRspn.xml"), "<Sts>CANC</Sts>", "<Sts>DONE</Sts>", 1)},
		{"pair not base/quoted", strings.Replace(read("FndPrcgPsptRpt.xml"), "NGN/USDT", "NGN-USDT", 1)},
		{"timestamp without milliseconds", strings.Replace(read("MsgRjct.xml"), "10:00:00.123Z", "10:00:00Z", 1)},
	} {
		if err := schemaValid(t, lint, []byte(bad.doc)); err == nil {
			t.Errorf("%s: valid, want refused", bad.name)
		}
	}
}
