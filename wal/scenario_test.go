package wal

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output in testdata/*.txt from the actual output")

// TestScenarios runs the scripts in testdata/*.txt. A script is a sequence of
// cases separated by blank lines; '#' lines are comments. A case is one
// command line, a "----" line, and the expected output:
//
//	append a b
//	----
//	seq 1
//
// Commands (a Log on a crashable in-memory FS; dir defaults to "db"):
//
//	open [dir=D] [nosync] [readonly]   close
//	append REC...                      replay [from=N]
//	snapshot-save seq=N data=S         snapshot-latest
//	stats                              checkpoint dir=D
//	corrupt seq=N                      delete seq=N
//	corrupt-snapshot seq=N             crash (keep only synced data)
//
// Run with -rewrite to regenerate the expected output; review it as a diff.
func TestScenarios(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			runScenario(t, path)
		})
	}
}

func runScenario(t *testing.T, path string) {
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(content), "\n"), "\n")
	s := &scenario{fs: vfs.NewCrashableMem()}
	defer s.closeAll()
	var out []string
	for i := 0; i < len(lines); {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out = append(out, line)
			i++
			continue
		}
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: command %q not followed by ----", path, i+1, line)
		}
		end := i + 2
		for end < len(lines) && strings.TrimSpace(lines[end]) != "" {
			end++
		}
		want := strings.Join(lines[i+2:end], "\n")
		got := strings.TrimRight(s.run(t, line), "\n")
		if got != want && !*rewrite {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, i+1, line, got, want)
		}
		out = append(out, line, "----")
		if got != "" {
			out = append(out, got)
		}
		i = end
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// scenario is the driver's state: the filesystem and the open log, if any.
type scenario struct {
	fs *vfs.MemFS
	l  *Log
}

func (s *scenario) closeAll() {
	if s.l != nil {
		_ = s.l.Close()
	}
}

// run executes one command line and returns its output.
func (s *scenario) run(t *testing.T, line string) string {
	fields := strings.Fields(line)
	command, words, args := fields[0], []string{}, map[string]string{}
	for _, field := range fields[1:] {
		if key, value, ok := strings.Cut(field, "="); ok {
			args[key] = value
		} else {
			words = append(words, field)
		}
	}
	seqArg := func() uint64 {
		seq, err := strconv.ParseUint(args["seq"], 10, 64)
		if err != nil {
			t.Fatalf("%s: bad seq=: %v", line, err)
		}
		return seq
	}
	needLog := func() {
		if s.l == nil {
			t.Fatalf("%s: no open log", line)
		}
	}
	switch command {
	case "open":
		if s.l != nil {
			t.Fatalf("%s: a log is already open", line)
		}
		dir := cmp.Or(args["dir"], "db")
		l, err := Open(dir, Options{
			FS:       s.fs,
			Sync:     !slices.Contains(words, "nosync"),
			ReadOnly: slices.Contains(words, "readonly"),
		})
		if err != nil {
			return "error: " + err.Error()
		}
		s.l = l
		return fmt.Sprintf("ok last-seq=%d", l.LastSeq())
	case "close":
		needLog()
		err := s.l.Close()
		s.l = nil
		if err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "append":
		needLog()
		recs := make([][]byte, len(words))
		for i, word := range words {
			recs[i] = []byte(word)
		}
		first, err := s.l.AppendWait(recs...)
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("seq %d", first)
	case "replay":
		needLog()
		from := uint64(0)
		if args["from"] != "" {
			from, _ = strconv.ParseUint(args["from"], 10, 64)
		}
		var b strings.Builder
		err := s.l.Replay(from, func(seq uint64, rec []byte) error {
			fmt.Fprintf(&b, "%d: %s\n", seq, rec)
			return nil
		})
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
		}
		if b.Len() == 0 {
			return "(empty)"
		}
		return b.String()
	case "snapshot-save":
		needLog()
		if err := s.l.SaveSnapshot(seqArg(), []byte(args["data"])); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "snapshot-latest":
		needLog()
		seq, data, ok, err := s.l.LatestSnapshot()
		switch {
		case err != nil:
			return "error: " + err.Error()
		case !ok:
			return "none"
		}
		return fmt.Sprintf("seq=%d data=%s", seq, data)
	case "stats":
		needLog()
		stats, err := s.l.Stats()
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("records=%d bytes=%d first=%d last=%d snapshots=%d",
			stats.Records, stats.Bytes, stats.FirstSeq, stats.LastSeq, stats.Snapshots)
	case "checkpoint":
		needLog()
		if err := s.l.Checkpoint(args["dir"]); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "corrupt", "corrupt-snapshot":
		needLog()
		prefix := byte(recordPrefix)
		if command == "corrupt-snapshot" {
			prefix = snapshotPrefix
		}
		value := []byte{0, 0, 0, 0, 'b', 'a', 'd'} // checksum 0 does not match "bad"
		if err := s.l.db.Set(makeKey(prefix, seqArg()), value, pebble.Sync); err != nil {
			t.Fatal(err)
		}
		return "ok"
	case "delete":
		needLog()
		if err := s.l.db.Delete(makeKey(recordPrefix, seqArg()), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		return "ok"
	case "crash":
		crashed := s.fs.CrashClone(vfs.CrashCloneCfg{})
		if s.l != nil {
			_ = s.l.Close() // too late: the clone is taken
			s.l = nil
		}
		s.fs = crashed
		return "ok"
	}
	t.Fatalf("unknown command %q", command)
	return ""
}
