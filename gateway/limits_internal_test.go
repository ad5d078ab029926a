package gateway

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLimitsListedInDoc: every limit of the gateway — each constant whose
// name ends in Max, Min or Timeout, here and the exported ones of fxmsg —
// is listed in the package doc (STYLE.md: "the gateway's package doc lists
// them all"), so the list cannot fall behind the code.
func TestLimitsListedInDoc(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	limit := regexp.MustCompile(`(Max|Min|Timeout)$`)
	webhookLimit := regexp.MustCompile(`(Max|Min|Timeout|Default)$`)
	for _, dir := range []struct {
		path, prefix string
		pattern      *regexp.Regexp
		unexported   bool // unexported constants are limits too
	}{
		{".", "", limit, true},
		{filepath.Join("..", "client", "fxmsg"), "fxmsg.", limit, false},
		{"webhook", "webhook.", webhookLimit, true},
	} {
		files, err := filepath.Glob(filepath.Join(dir.path, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				gen, ok := decl.(*ast.GenDecl)
				if !ok || gen.Tok != token.CONST {
					continue
				}
				for _, spec := range gen.Specs {
					for _, name := range spec.(*ast.ValueSpec).Names {
						if !dir.pattern.MatchString(name.Name) || !dir.unexported && !name.IsExported() {
							continue
						}
						found++
						if !regexp.MustCompile(`\b` + regexp.QuoteMeta(dir.prefix+name.Name) + `\b`).Match(doc) {
							t.Errorf("limit %s%s (%s) is not listed in the package doc (doc.go)", dir.prefix, name.Name, file)
						}
					}
				}
			}
		}
		if found == 0 {
			t.Errorf("no limit constant found in %s: the test looks in the wrong place", dir.path)
		}
	}
}

// TestServerLimits: both listeners are built with the limits of limits.go
// (the admin one reads a bank statement's body; every other admin request
// keeps bodyBytesMax: TestErrors).
func TestServerLimits(t *testing.T) {
	s := New(Config{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
	for name, srv := range map[string]struct {
		concurrency, perIP, body, header int
		read, write, idle                string
		bodyMax                          int
	}{
		"public": {s.public.Concurrency, s.public.MaxConnsPerIP, s.public.MaxRequestBodySize, s.public.ReadBufferSize,
			s.public.ReadTimeout.String(), s.public.WriteTimeout.String(), s.public.IdleTimeout.String(), bodyBytesMax},
		"admin": {s.admin.Concurrency, s.admin.MaxConnsPerIP, s.admin.MaxRequestBodySize, s.admin.ReadBufferSize,
			s.admin.ReadTimeout.String(), s.admin.WriteTimeout.String(), s.admin.IdleTimeout.String(), statementBytesMax},
	} {
		switch {
		case srv.concurrency != connectionsMax || srv.perIP != connectionsPerIPMax:
			t.Errorf("%s: connections %d (per address %d), want %d (%d)", name, srv.concurrency, srv.perIP,
				connectionsMax, connectionsPerIPMax)
		case srv.body != srv.bodyMax || srv.header != headerBytesMax:
			t.Errorf("%s: body %d, headers %d bytes, want %d, %d", name, srv.body, srv.header, srv.bodyMax, headerBytesMax)
		case srv.read != readTimeout.String() || srv.write != writeTimeout.String() || srv.idle != idleTimeout.String():
			t.Errorf("%s: timeouts read %s, write %s, idle %s; want %s, %s, %s", name, srv.read, srv.write, srv.idle,
				readTimeout, writeTimeout, idleTimeout)
		}
	}
}

func TestJSONDepthWithin(t *testing.T) {
	for _, tc := range []struct {
		body string
		max  int
		want bool
	}{
		{`{}`, 1, true},
		{`{"a":{}}`, 1, false},
		{`{"a":[1,[2]]}`, 3, true},
		{`{"a":[1,[2]]}`, 2, false},
		{`{"a":"[[[[[{{{{"}`, 1, true},
		{`{"a":"\"[[[["}`, 1, true},
		{`{"a":"\\"}`, 1, true},
		{`{"a":"\\",` + strings.Repeat("[", 3), 4, true},
		{strings.Repeat("[", 33) + strings.Repeat("]", 33), 32, false},
		{strings.Repeat("[", 32) + strings.Repeat("]", 32), 32, true},
		{strings.Repeat("]", 100) + strings.Repeat("[", 3), 3, true},
		{`"unterminated [[[[`, 1, true},
	} {
		if got := jsonDepthWithin([]byte(tc.body), tc.max); got != tc.want {
			t.Errorf("jsonDepthWithin(%q, %d) = %v, want %v", tc.body, tc.max, got, tc.want)
		}
	}
}
