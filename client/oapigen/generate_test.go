package oapigen_test

import (
	"bytes"
	"flag"
	"io"
	"net/http"
	"os"
	"regexp"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"

	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

var update = flag.Bool("update", false, "rewrite partnerapi/partnerapi.gen.go from the served document")

const generated = "partnerapi/partnerapi.gen.go"

// generate makes the client from the document s serves, as
// `oapi-codegen -generate types,client -package partnerapi` does.
func generate(t *testing.T, s *gatewaytest.Server) []byte {
	t.Helper()
	resp, err := http.Get(s.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/openapi.json: %d %v", resp.StatusCode, err)
	}
	loader := openapi3.NewLoader()
	spec, err := loader.LoadFromData(doc)
	if err != nil {
		t.Fatalf("load the served document: %v", err)
	}
	code, err := codegen.Generate(spec, codegen.Configuration{
		PackageName: "partnerapi",
		Generate:    codegen.GenerateOptions{Models: true, Client: true},
	})
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	return []byte(code)
}

// TestGeneratedClientIsCurrent regenerates the client from the served
// document and compares it with the committed one, which the package's
// other tests compile and drive: so the client proven exact is the one a
// partner generates today.
func TestGeneratedClientIsCurrent(t *testing.T) {
	s := gatewaytest.Start(t, gatewaytest.Options{})
	code := generate(t, s)
	if *update {
		if err := os.WriteFile(generated, code, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(generated)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(code, committed) {
		t.Fatalf("%s differs from what the served document generates; run go test -run TestGeneratedClientIsCurrent -update in client/oapigen", generated)
	}
}

// TestGeneratedClientHasNoBinaryFloat: no member of any generated type is
// a float32 or float64, so no amount, rate or percentage can be rounded
// by the client.
func TestGeneratedClientHasNoBinaryFloat(t *testing.T) {
	code, err := os.ReadFile(generated)
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^.*\bfloat(32|64)\b.*$`).FindAll(code, 5); len(m) > 0 {
		t.Fatalf("binary floats in the generated client:\n%s", bytes.Join(m, []byte("\n")))
	}
	if !bytes.Contains(code, []byte("decimal.Decimal")) {
		t.Fatal("the generated client has no decimal.Decimal: the document's money hints were lost")
	}
}
