package gateway

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/oja-exchange/oja/engine"
)

func limiterKey(i uint64) engine.KeyID {
	var k engine.KeyID
	binary.BigEndian.PutUint64(k[:8], i*0x9e3779b97f4a7c15)
	binary.BigEndian.PutUint64(k[8:], i)
	return k
}

// The key table never holds more than its bound, however many keys pass.
func TestRateLimiterKeysBounded(t *testing.T) {
	const keysMax = 64
	l := newRateLimiterSized(5, keysMax)
	now := time.Unix(1_700_000_000, 0)
	for i := range uint64(20_000) {
		if ok, _, _ := l.take(limiterKey(i), now); !ok {
			t.Fatalf("key %d: first request refused", i)
		}
		if n := l.size(); n > keysMax {
			t.Fatalf("after %d keys the limiter holds %d buckets, bound %d", i+1, n, keysMax)
		}
	}
}

// Eviction takes the least recently used bucket: a key in steady use keeps
// its (empty) bucket while thousands of one-off keys come and go, so a
// flood of new keys cannot reset a busy key's limit.
func TestRateLimiterEvictsLeastRecentlyUsed(t *testing.T) {
	l := newRateLimiterSized(1, 64) // burst of one
	now := time.Unix(1_700_000_000, 0)
	hot := limiterKey(1 << 40)
	if ok, _, _ := l.take(hot, now); !ok {
		t.Fatal("hot key: first request refused")
	}
	for i := range uint64(5_000) {
		l.take(limiterKey(i), now)
		if ok, _, _ := l.take(hot, now); ok {
			t.Fatalf("hot key allowed again after %d other keys: its bucket was evicted", i+1)
		}
	}
	// Tokens come back with time.
	if ok, _, _ := l.take(hot, now.Add(time.Second)); !ok {
		t.Fatal("hot key still refused a second later")
	}
}

func TestRateLimiterRefill(t *testing.T) {
	l := newRateLimiterSized(10, 100)
	now := time.Unix(1_700_000_000, 0)
	k := limiterKey(7)
	for i := range 10 {
		if ok, _, _ := l.take(k, now); !ok {
			t.Fatalf("request %d of the burst of 10 refused", i+1)
		}
	}
	ok, _, wait := l.take(k, now)
	if ok {
		t.Fatal("11th request within the same instant allowed")
	}
	if wait <= 0 || wait > 0.1 {
		t.Fatalf("wait %v s, want in (0, 0.1]", wait)
	}
	if ok, _, _ := l.take(k, now.Add(100*time.Millisecond)); !ok {
		t.Fatal("a token should be back after 100 ms at 10/s")
	}
}
