package repocheck

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// root is the repository's top directory.
const root = "../.."

// engineAllowed are the engine files allowed what the rest of the engine
// is not, and why: ARCHITECTURE.md ("The engine") says the same.
var engineAllowed = map[string]string{
	// The currency table is process-wide: the log codec turns a byte into
	// a Currency with no state at hand. It only grows and an entry never
	// changes, so it is read without a lock and written under one.
	"engine/currency.go": "sync",
}

// TestEnginePure: no file of engine/ (its subpackages too) starts a
// goroutine, makes or uses a channel, takes a lock, reads a clock or draws
// randomness — except what engineAllowed names. The engine is a function
// of its state and the events applied to it, which is what lets every
// replica of one log reach the same state.
func TestEnginePure(t *testing.T) {
	forbiddenImports := map[string]bool{
		"sync": true, "sync/atomic": true, "math/rand": true, "math/rand/v2": true,
		"crypto/rand": true, "hash/maphash": true, "os": true, "net": true,
	}
	forbiddenTime := map[string]bool{
		"Now": true, "Since": true, "Until": true, "After": true, "AfterFunc": true,
		"Tick": true, "NewTimer": true, "NewTicker": true, "Sleep": true,
	}
	files := 0
	walkGo(t, filepath.Join(root, "engine"), func(path string, f *ast.File, fset *token.FileSet) {
		files++
		rel := relPath(t, path)
		allowed := engineAllowed[rel]
		timeName := ""
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "time" {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
			if forbiddenImports[p] && !(allowed != "" && strings.HasPrefix(p, allowed)) {
				t.Errorf("%s imports %s", rel, p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: a go statement", fset.Position(n.Pos()))
			case *ast.ChanType:
				t.Errorf("%s: a channel type", fset.Position(n.Pos()))
			case *ast.SendStmt:
				t.Errorf("%s: a channel send", fset.Position(n.Pos()))
			case *ast.UnaryExpr:
				if n.Op == token.ARROW {
					t.Errorf("%s: a channel receive", fset.Position(n.Pos()))
				}
			case *ast.SelectStmt:
				t.Errorf("%s: a select", fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName && forbiddenTime[n.Sel.Name] {
					t.Errorf("%s: reads the clock (time.%s)", fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	})
	if files < 20 {
		t.Fatalf("only %d engine files read: is the path right?", files)
	}
}

// TestGatewayOverServices: of the gateway's own files (its subpackages
// aside), only services.go names actors.System; every handler and helper
// reaches the actors through the narrow services it declares there, as
// gateway/doc.go and ARCHITECTURE.md say.
func TestGatewayOverServices(t *testing.T) {
	files := 0
	walkGo(t, filepath.Join(root, "gateway"), func(path string, f *ast.File, fset *token.FileSet) {
		rel := relPath(t, path)
		if filepath.Dir(rel) != "gateway" {
			return
		}
		files++
		actorsName := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/oja-exchange/oja/actors" {
				actorsName = "actors"
				if imp.Name != nil {
					actorsName = imp.Name.Name
				}
			}
		}
		if actorsName == "" || rel == "gateway/services.go" {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "System" {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == actorsName {
					t.Errorf("%s: names actors.System; take one of gateway/services.go's services", fset.Position(n.Pos()))
				}
			}
			return true
		})
	})
	if files < 20 {
		t.Fatalf("only %d gateway files read: is the path right?", files)
	}
}

// walkGo parses every non-test Go file under dir (testdata aside).
func walkGo(t *testing.T, dir string, fn func(path string, f *ast.File, fset *token.FileSet)) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		fn(path, f, fset)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func relPath(t *testing.T, path string) string {
	t.Helper()
	rel, err := filepath.Rel(root, path)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(rel)
}

// sourceFiles lists the repository's Go and Markdown files: its own, not
// vendored assets, node_modules, data dirs or test data.
func sourceFiles(t *testing.T) (goFiles, mdFiles []string) {
	t.Helper()
	skip := map[string]bool{"node_modules": true, "testdata": true, ".git": true, "data": true, "data-cluster": true}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (skip[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(path, ".go"):
			goFiles = append(goFiles, path)
		case strings.HasSuffix(path, ".md"):
			mdFiles = append(mdFiles, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return goFiles, mdFiles
}

var (
	// citeChain is a citation with its section signs: "spec §4", "spec
	// §4, §15.1", "spec §12 and §13", or a public standard's ("XML 1.0
	// §2.8", "UTS #39 §5.1", "RFC 9110 §15").
	citeChain     = regexp.MustCompile(`([Ss]pec|XML 1\.0|UTS #\d+|RFC \d+|ISO \d+(?:-\d+)?) §\s?(\d+(?:\.\d+)*)((?:\s+[A-Z][a-z]+)?(?:\s*(?:,|;|and|or|–|-)\s*§?\s?\d+(?:\.\d+)*(?:\s+[A-Z][a-z]+)?)*)`)
	sectionNumber = regexp.MustCompile(`\d+(?:\.\d+)*`)
	// issueCite is a citation of a tracker's issue: "issue 29", "issues
	// 12 and 13", "#29" after a space — but not a public standard's
	// number ("UTS #39").
	issueCite  = regexp.MustCompile(`(?i)\bissues? #?\d+|(?:^|[\s(])#\d+\b`)
	standard   = regexp.MustCompile(`UTS #\d+`)
	hashNumber = regexp.MustCompile(`#\d`)
)

// joinWrapped undoes comment and paragraph wrapping, so that a citation
// split over two lines reads as one: each line's leading space and comment
// marker go, and the lines are joined with a space.
func joinWrapped(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimPrefix(strings.TrimPrefix(line, "//"), "* ")
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strings.TrimSpace(line))
	}
	return b.String()
}

// specSections reads docs/spec.md's numbered headings: "## 4. The quote's
// life" is §4, "### 15.1 Money arrives…" §15.1.
func specSections(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "spec.md"))
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`(?m)^#{2,4} (\d+(?:\.\d+)?)\.? `)
	sections := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(string(b), -1) {
		sections[m[1]] = true
	}
	if len(sections) < 16 {
		t.Fatalf("docs/spec.md has %d numbered sections: not the spec?", len(sections))
	}
	return sections
}

// TestCitations: every "spec §N" in the code and the documents names a
// section docs/spec.md has; every other section sign is a public
// standard's; nothing cites a tracker's issue: a reader can follow every
// citation inside the repository or to a published standard.
func TestCitations(t *testing.T) {
	sections := specSections(t)
	goFiles, mdFiles := sourceFiles(t)
	cited := 0
	for _, path := range slices.Concat(goFiles, mdFiles) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel := relPath(t, path)
		// Most files cite nothing: the regular expressions (slow under
		// -race) run only on those that might.
		if !bytes.Contains(b, []byte("§")) && !bytes.Contains(bytes.ToLower(b), []byte("issue")) && !hashNumber.Match(b) {
			continue
		}
		text := joinWrapped(string(b))
		covered := make([]bool, len(text))
		for _, m := range citeChain.FindAllStringSubmatchIndex(text, -1) {
			for i := m[0]; i < m[1]; i++ {
				covered[i] = true
			}
			if !strings.EqualFold(text[m[2]:m[3]], "spec") {
				continue
			}
			for _, n := range append([]string{text[m[4]:m[5]]}, sectionNumber.FindAllString(text[m[6]:m[7]], -1)...) {
				cited++
				if !sections[n] {
					t.Errorf("%s cites spec §%s: docs/spec.md has no such section (%q)", rel, n, text[m[0]:m[1]])
				}
			}
		}
		// The spec numbers its own sections; this package's files talk
		// about the pattern ("§N").
		if rel != "docs/spec.md" && !strings.HasPrefix(rel, "internal/repocheck/") {
			for i := 0; i < len(text); {
				j := strings.Index(text[i:], "§")
				if j < 0 {
					break
				}
				at := i + j
				placeholder := strings.HasPrefix(text[at+len("§"):], "N") // "spec §N", the pattern itself
				if !covered[at] && !placeholder {
					t.Errorf("%s: a § that cites no section of docs/spec.md and no standard: %q", rel, around(text, at))
				}
				i = at + len("§")
			}
		}
		if strings.HasPrefix(rel, "internal/repocheck/") {
			continue
		}
		for _, loc := range issueCite.FindAllStringIndex(standard.ReplaceAllString(text, "UTS"), -1) {
			t.Errorf("%s cites %q: the tracker is not in the repository", rel, around(text, loc[0]))
		}
	}
	if cited < 50 {
		t.Fatalf("only %d spec citations found: is the pattern right?", cited)
	}
}

// around is the text around byte at, for a message.
func around(text string, at int) string {
	from, to := max(0, at-40), min(len(text), at+40)
	for from > 0 && !utf8.RuneStart(text[from]) {
		from--
	}
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to++
	}
	return text[from:to]
}

var (
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan = regexp.MustCompile("`([a-z][a-z0-9_./-]*/[a-z0-9_.-]+\\.(?:go|md|json|yml|yaml|html|sh|txt|service|xsd))`")
)

// TestDocLinks: every relative link of every document (README, ARCHITECTURE,
// CHANGELOG, docs/…) reaches a file of the repository, and its #anchor a
// heading of that file; every repository path a top-level document or
// docs/ names in code type exists. A document that moved, or a file a
// document describes that is gone, fails here.
func TestDocLinks(t *testing.T) {
	_, mdFiles := sourceFiles(t)
	checked := 0
	for _, path := range mdFiles {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel := relPath(t, path)
		text := string(b)
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := path
			if file != "" {
				dest = filepath.Join(filepath.Dir(path), file)
			}
			checked++
			st, err := os.Stat(dest)
			if err != nil {
				t.Errorf("%s links to %s: no such file", rel, target)
				continue
			}
			if anchor != "" && !st.IsDir() {
				if !slices.Contains(anchors(t, dest), anchor) {
					t.Errorf("%s links to %s: %s has no heading #%s", rel, target, relPath(t, dest), anchor)
				}
			}
		}
		top := !strings.Contains(rel, "/") || strings.HasPrefix(rel, "docs/")
		if !top {
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(text, -1) {
			p := m[1]
			if strings.HasPrefix(p, "data/") || strings.HasPrefix(p, "data-cluster/") || strings.Contains(p, "<") {
				continue // made by make run, not in the repository
			}
			checked++
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("%s names `%s`: no such file in the repository", rel, p)
			}
		}
	}
	if checked < 40 {
		t.Fatalf("only %d links and paths checked: is the pattern right?", checked)
	}
}

// anchors are the GitHub anchors of a Markdown file's headings.
func anchors(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	seen := map[string]int{}
	inCode := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var a strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
				a.WriteRune(r)
			case r == ' ':
				a.WriteRune('-')
			}
		}
		s := a.String()
		if n := seen[s]; n > 0 {
			out = append(out, s+"-"+strconv.Itoa(n))
		} else {
			out = append(out, s)
		}
		seen[s]++
	}
	return out
}

// TestServerModuleLean: the server's go.mod requires nothing only the
// benchmark harness uses (plotting, fonts, histograms): bench/ is a module
// of its own, as client/ is.
func TestServerModuleLean(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range []string{"gonum.org/", "github.com/HdrHistogram/", "codeberg.org/go-fonts/", "codeberg.org/go-latex/", "codeberg.org/go-pdf/"} {
		if strings.Contains(string(b), dep) {
			t.Errorf("go.mod requires %s…: the benchmark harness's, which belongs in bench/go.mod", dep)
		}
	}
	for _, mod := range []string{"bench/go.mod", "client/go.mod"} {
		if _, err := os.Stat(filepath.Join(root, mod)); err != nil {
			t.Errorf("%s: %v", mod, err)
		}
	}
}

// TestCitedTestsExist: every test, fuzz target and benchmark a document
// (the CHANGELOG aside: it is history) or a Go comment names is defined
// in the repository, so a reader can follow every "proved by".
func TestCitedTestsExist(t *testing.T) {
	goFiles, mdFiles := sourceFiles(t)
	name := regexp.MustCompile(`\b(?:Test|Fuzz|Benchmark)[A-Z][A-Za-z0-9_]*`)
	defined := map[string]bool{}
	definition := regexp.MustCompile(`(?m)^(?:func (?:\([^)]*\) )?|type )((?:Test|Fuzz|Benchmark)[A-Z][A-Za-z0-9_]*)`)
	comment := regexp.MustCompile(`//.*`)
	cited := map[string][]string{} // name → where
	for _, path := range goFiles {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range definition.FindAllSubmatch(b, -1) {
			defined[string(m[1])] = true
		}
		for _, c := range comment.FindAll(b, -1) {
			for _, n := range name.FindAll(c, -1) {
				cited[string(n)] = append(cited[string(n)], relPath(t, path))
			}
		}
	}
	for _, path := range mdFiles {
		if rel := relPath(t, path); rel != "CHANGELOG.md" {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range name.FindAll(b, -1) {
				cited[string(n)] = append(cited[string(n)], rel)
			}
		}
	}
	if len(defined) < 500 || len(cited) < 100 {
		t.Fatalf("%d tests defined, %d cited: the patterns no longer read the sources", len(defined), len(cited))
	}
	for n, where := range cited {
		if !defined[n] {
			slices.Sort(where)
			t.Errorf("%s, named in %s, is defined nowhere", n, strings.Join(slices.Compact(where), ", "))
		}
	}
}
