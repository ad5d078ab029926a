package poll

import (
	"sync/atomic"
	"testing"
	"time"
)

type recorder struct {
	testing.TB
	failed atomic.Bool
	msg    string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed.Store(true)
	r.msg = format
	panic(r) // stop the poll like t.Fatalf's Goexit would
}

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var n int
	Until(t, time.Second, func() string {
		if n++; n < 3 {
			return "not yet"
		}
		return ""
	})
	if n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
}

func TestUntilFailsAfterTheTimeout(t *testing.T) {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if v := recover(); v != nil && v != any(r) {
				panic(v)
			}
		}()
		True(r, 30*time.Millisecond, "never", func() bool { return false })
	}()
	if !r.failed.Load() {
		t.Fatal("Until returned without failing for a condition that never holds")
	}
}
