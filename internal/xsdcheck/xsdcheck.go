// Package xsdcheck validates XML documents against an XML Schema with
// xmllint (Debian package libxml2-utils), for tests. In CI (CI set) a
// missing xmllint fails the test: make test installs it. Elsewhere its
// absence skips the schema checks.
package xsdcheck

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// Lint returns xmllint's path, or fails or skips t as above.
func Lint(t testing.TB) string {
	t.Helper()
	path := Optional(t)
	if path == "" {
		t.Skip("xmllint not installed (Debian package libxml2-utils): documents are not checked against their schemas here")
	}
	return path
}

// Optional is Lint for a test whose other checks run anyway: "" (no
// schema checks) where Lint would skip.
func Optional(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("xmllint is missing in CI: make test installs it (Debian package libxml2-utils)")
		}
		return ""
	}
	return path
}

// Validate checks doc against the schema file xsd with the xmllint at
// lint, without network access; it returns xmllint's complaint, or nil.
func Validate(lint, xsd string, doc []byte) error {
	cmd := exec.Command(lint, "--noout", "--nonet", "--schema", xsd, "-")
	cmd.Stdin = bytes.NewReader(doc)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return &Error{Err: err, Output: out.String()}
	}
	return nil
}

// Error is a document xmllint refused (or could not check).
type Error struct {
	Err    error
	Output string
}

func (e *Error) Error() string { return e.Err.Error() + ": " + e.Output }
