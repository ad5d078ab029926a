package gateway

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestErrorTableInSpec: every engine result's answer is in docs/spec.md's
// error table (spec §9) under its HTTP status, so a partner reading the table
// meets no code it does not list.
func TestErrorTableInSpec(t *testing.T) {
	text := readFile(t, "../docs/spec.md")
	from := strings.Index(text, "## 9. Errors")
	if from < 0 {
		t.Fatal("docs/spec.md has no \"## 9. Errors\"")
	}
	section := text[from:]
	if next := strings.Index(section[1:], "\n## "); next >= 0 {
		section = section[:next+1]
	}
	codes := map[int]string{} // status → its row's codes
	row := regexp.MustCompile(`(?m)^\| ([0-9]{3}) \| ([^|]*) \|`)
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		status, _ := strconv.Atoi(m[1])
		codes[status] += m[2]
	}
	if len(codes) == 0 {
		t.Fatal("docs/spec.md: spec §9 has no table rows")
	}
	for r, e := range resultErrors {
		if e.code == "" || e.status < 400 {
			continue
		}
		if !strings.Contains(codes[e.status], "`"+e.code+"`") {
			t.Errorf("result %v answers %d %s, which docs/spec.md's error table does not list under %d", r, e.status, e.code, e.status)
		}
	}
}

// TestConsolePagesDocumented: every page of the console's menu has its row
// in docs/operating.md's table of pages.
func TestConsolePagesDocumented(t *testing.T) {
	doc := readFile(t, "../docs/operating.md")
	labels := regexp.MustCompile(`<a href="/console/[a-z]*\?mode=\{\{\.Mode\}\}"[^>]*>([A-Za-z-]+)</a>`).
		FindAllStringSubmatch(readFile(t, "console/templates/layout.html"), -1)
	if len(labels) < 8 {
		t.Fatalf("%d pages in the console's menu: the pattern no longer reads it", len(labels))
	}
	for _, m := range labels {
		if !regexp.MustCompile(`(?m)^\| ` + m[1] + ` \|`).MatchString(doc) {
			t.Errorf("the console's %s page has no row in docs/operating.md's table of pages", m[1])
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
