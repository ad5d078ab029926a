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
		{"level": "INFO", "msg": "entering follower state", "component": "raft", "follower": "n2", "leader-address": "n1"},
		{"level": "WARN", "msg": "slow", "component": "raft.snapshot", "path": "/x", "took": "2s"},
		{"level": "ERROR", "msg": "raft: failed to contact", "component": "raft"},
		{"level": "DEBUG-4", "msg": "heartbeat", "component": "raft"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
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
