package main

import (
	"flag"
	"regexp"
	"strings"
	"testing"
)

// --max-key-share (and OJA_MAX_KEY_SHARE) is a share in (0, 1], exact,
// default 0.5.
func TestMaxKeyShareFlag(t *testing.T) {
	c, err := parseServe(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.maxKeyShare != 500_000 {
		t.Errorf("default %d ppm, want 500000", c.maxKeyShare)
	}
	for _, tc := range []struct {
		value string
		ppm   uint32
		ok    bool
	}{
		{"0.5", 500_000, true}, {"1", 1_000_000, true}, {"0.000001", 1, true}, {"0.25", 250_000, true},
		{"0", 0, false}, {"-0.5", 0, false}, {"1.5", 0, false}, {"0.0000001", 0, false}, {"half", 0, false}, {"", 0, false},
	} {
		c, err := parseServe([]string{"--max-key-share", tc.value})
		if (err == nil) != tc.ok || tc.ok && uint32(c.maxKeyShare) != tc.ppm {
			t.Errorf("--max-key-share %q: err %v, ppm %v; want ok %v, %d", tc.value, err, c, tc.ok, tc.ppm)
		}
	}
	t.Setenv("OJA_MAX_KEY_SHARE", "0.3")
	if c, err := parseServe(nil); err != nil || c.maxKeyShare != 300_000 {
		t.Errorf("OJA_MAX_KEY_SHARE=0.3: %v %v", c, err)
	}
}

// TestServeFlagsDocumented: docs/operating.md's list of oja serve's flags
// names every flag the command takes.
func TestServeFlagsDocumented(t *testing.T) {
	text := readDocs(t, "operating.md")
	from := strings.Index(text, "`oja serve` flags")
	to := strings.Index(text[max(from, 0):], "SIGTERM")
	if from < 0 || to < 0 {
		t.Fatal("docs/operating.md: no paragraph from \"`oja serve` flags\" to \"SIGTERM\"")
	}
	list := text[from : from+to]
	serveFlags(&serveConfig{}).VisitAll(func(f *flag.Flag) {
		if !regexp.MustCompile("[`\\s]--" + regexp.QuoteMeta(f.Name) + "[`\\s=]").MatchString(list) {
			t.Errorf("docs/operating.md's list of oja serve's flags does not name --%s", f.Name)
		}
	})
}
