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
	doc, err := os.ReadFile("../docs/spec.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
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
