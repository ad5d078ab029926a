package waltools

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/oja-exchange/oja/wal"
)

// ---- Torn tails -----------------------------------------------------------------

// tornTail formats a torn tail for the reports.
func tornTail(t wal.TornTail) string {
	return fmt.Sprintf("WAL %s: %d bytes after byte %d (of %d) are not a complete batch; Pebble dropped them on open "+
		"(a torn, unsynced write); nothing later in the log vouches for them, and with --sync=true no acknowledged record is in them",
		t.File, t.Size-t.Offset, t.Offset, t.Size)
}

func writeTailNotes(w io.Writer, tails []wal.TornTail) {
	for _, t := range tails {
		fmt.Fprintf(w, "oja wal: note: torn tail: %s\n", tornTail(t))
	}
}

// errorLogger is the Pebble logger of the tools' read-only open: it keeps
// what Pebble reports as errors, to be shown, and drops the rest.
type errorLogger struct {
	mu     sync.Mutex
	errors []string
}

func (l *errorLogger) Infof(string, ...any) {}

func (l *errorLogger) Errorf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors = append(l.errors, fmt.Sprintf(format, args...))
}

func (l *errorLogger) Fatalf(format string, args ...any) { l.Errorf(format, args...) }

func (l *errorLogger) reported() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errors)
}

// ---- Progress ---------------------------------------------------------------------

// progress prints a line on stderr every walProgressEvery records when
// stderr is a terminal.
type progress struct {
	on    bool
	total uint64
	start time.Time
}

func newProgress(total uint64) *progress {
	info, err := os.Stderr.Stat()
	return &progress{on: err == nil && info.Mode()&os.ModeCharDevice != 0, total: total, start: time.Now()}
}

func (p *progress) tick(seq uint64) {
	if p.on && seq%walProgressEvery == 0 {
		fmt.Fprintf(os.Stderr, "\r%d / %d records (%.0f/s)", seq, p.total, float64(seq)/time.Since(p.start).Seconds())
	}
}

func (p *progress) done() {
	if p.on {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
}
