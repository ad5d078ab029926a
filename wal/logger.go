package wal

import (
	"fmt"
	"log"

	"github.com/cockroachdb/pebble/v2"
)

// guardLogger is the pebble.Logger every Log gives Pebble. It exists because
// Pebble's default logger calls os.Exit on Fatalf, and Pebble calls Fatalf
// for operating failures, not only for bugs: a failed WAL write or sync
// ("pebble: fatal commit error"), a failed MANIFEST write. Exiting would skip
// the caller's orderly shutdown and any response to requests in flight.
//
// Fatalf therefore records the message as the log's failure (so Append stops
// writing and every caller sees ErrFailed) and returns. It never exits and
// never panics.
//
// NB: panicking was rejected: Pebble calls Fatalf from its own background
// goroutines too, where a panic cannot be recovered and would end the process
// just as os.Exit does. Every Fatalf site in Pebble either follows a failed
// I/O and then returns (the commit path returns nil from Apply, which is why
// the committer checks Failed after Apply), or reports an internal invariant
// violation; in both cases refusing all further writes is the safe response.
type guardLogger struct {
	next pebble.Logger // the caller's logger; nil = quiet
	fail func(error) error
}

var _ pebble.Logger = (*guardLogger)(nil)

// Infof forwards to the caller's logger; the quiet logger drops it.
func (g *guardLogger) Infof(format string, args ...any) {
	if g.next != nil {
		g.next.Infof(format, args...)
	}
}

// Errorf forwards to the caller's logger; the quiet logger writes it to the
// standard log, since Pebble reports background failures this way.
func (g *guardLogger) Errorf(format string, args ...any) {
	if g.next != nil {
		g.next.Errorf(format, args...)
		return
	}
	log.Printf("wal: pebble: "+format, args...)
}

// Fatalf fails the log and forwards the message as an error. The caller's
// Fatalf is never called (it may exit the process).
func (g *guardLogger) Fatalf(format string, args ...any) {
	err := fmt.Errorf("pebble fatal: "+format, args...)
	g.fail(err)
	g.Errorf("%v (log failed; the process keeps running)", err)
}
