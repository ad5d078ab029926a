package wal

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestScenarios runs the scripts in testdata/*.txt (cockroachdb/datadriven
// files). A case is one command line, a "----" line, and the expected
// output; cases are separated by blank lines and '#' lines are comments:
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
// Run with -rewrite (datadriven's flag) to regenerate the expected output;
// review it as a diff.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &scenario{fs: vfs.NewCrashableMem()}
		defer s.closeAll()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return s.run(t, d.FullCmd())
		})
	})
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
		skipped := ""
		if c := s.l.CorruptSnapshots(); len(c) > 0 {
			skipped = fmt.Sprintf(" (skipped corrupt %v)", c)
		}
		switch {
		case err != nil:
			return "error: " + err.Error()
		case !ok:
			return "none" + skipped
		}
		return fmt.Sprintf("seq=%d data=%s", seq, data) + skipped
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
