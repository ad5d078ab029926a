package cluster

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestRaftLogger: Raft's lines come out through the service's slog handler
// in its schema, with the logger's attributes (the node), the component
// (named sub-loggers appended), implied args and the line's own; lines
// below the level are dropped; the standard-library bridge infers levels.
func TestRaftLogger(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug - 4})).With("node", "n2")
	l := newRaftLogger(base, hclog.Info)
	l.Debug("dropped: below the level")
	l.Info("entering follower state", "follower", "n2", "leader-address", "n1")
	l.Warn("entering candidate state", "node", struct{ ID string }{"n2"}, "term", 3)
	l.Named("snapshot").With("path", "/x").Warn("slow", "took", "2s")
	l.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}).Print("[ERR] raft: failed to contact")
	l.SetLevel(hclog.Trace)
	if !l.IsTrace() {
		t.Fatal("SetLevel(Trace) did not take")
	}
	l.Trace("heartbeat")

	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		lines = append(lines, m)
	}
	want := []map[string]string{
		{"level": "INFO", "msg": "entering follower state", "component": "raft", "raft_follower": "n2", "raft_leader-address": "n1"},
		{"level": "WARN", "msg": "entering candidate state", "component": "raft"},
		{"level": "WARN", "msg": "slow", "component": "raft.snapshot", "raft_path": "/x", "raft_took": "2s"},
		{"level": "ERROR", "msg": "raft: failed to contact", "component": "raft"},
		{"level": "DEBUG-4", "msg": "heartbeat", "component": "raft"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	// One "node" key a line, the node's id: Raft's own (a struct, on the
	// candidate line) is raft_node.
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if n := topLevelKeys(t, line)["node"]; n != 1 {
			t.Errorf("%d node keys in %s", n, line)
		}
	}
	if lines[1]["raft_node"] == nil || lines[1]["raft_term"] != float64(3) {
		t.Errorf("the candidate line: %v", lines[1])
	}
	for i, w := range want {
		if lines[i]["node"] != "n2" || lines[i]["time"] == nil {
			t.Errorf("line %d lacks the node or the time: %v", i, lines[i])
		}
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s = %v, want %q (%v)", i, k, lines[i][k], v, lines[i])
			}
		}
	}
}

// topLevelKeys counts each key of a JSON object's top level (a map would
// keep one of two duplicates).
func topLevelKeys(t *testing.T, line string) map[string]int {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(line))
	counts := map[string]int{}
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", line)
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		counts[tok.(string)]++
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return counts
}
