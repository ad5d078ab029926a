// Package poll is the one way tests wait for something that happens
// asynchronously (an actor's view catching up, an expiry firing): poll a
// condition until it holds or a deadline passes. It is for tests only; the
// product's one poll of its own, the log follower looking for new durable
// records every 20 ms, does not use it.
package poll

import (
	"testing"
	"time"
)

// Interval is how often Until asks again.
const Interval = 10 * time.Millisecond

// Until calls cond until it returns "" or timeout passes, then fails t
// with cond's last answer, which should say what was still missing.
func Until(t testing.TB, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, msg)
		}
		time.Sleep(Interval)
	}
}

// True is Until for a yes/no condition; what names what is awaited.
func True(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Until(t, timeout, func() string {
		if cond() {
			return ""
		}
		return what + ": not reached"
	})
}

// For is Until for a value: get returns the value and "" once it has one,
// else what is still missing; For returns the value.
func For[T any](t testing.TB, timeout time.Duration, get func() (T, string)) T {
	t.Helper()
	var v T
	Until(t, timeout, func() string {
		var msg string
		v, msg = get()
		return msg
	})
	return v
}
