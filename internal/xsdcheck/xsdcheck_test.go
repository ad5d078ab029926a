package xsdcheck_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oja-exchange/oja/internal/xsdcheck"
)

func TestValidate(t *testing.T) {
	lint := xsdcheck.Lint(t)
	xsd := filepath.Join(t.TempDir(), "n.xsd")
	if err := os.WriteFile(xsd, []byte(`<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:element name="N" type="xs:decimal"/></xs:schema>`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := xsdcheck.Validate(lint, xsd, []byte(`<N>1.5</N>`)); err != nil {
		t.Fatalf("a valid document refused: %v", err)
	}
	for _, bad := range []string{`<N>x</N>`, `<M>1</M>`, `<N>1`} {
		if err := xsdcheck.Validate(lint, xsd, []byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
