package actors

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/oja-exchange/oja/internal/poll"
)

// The expiry wheel fires each armed quote once, at or after its deadline
// and never before; a re-armed quote fires only at its new deadline, a
// disarmed one never, and nothing fires after stop.
func TestExpiryWheel(t *testing.T) {
	var mu sync.Mutex
	fired := map[*quoteRef]int64{}
	now := func() int64 { return time.Now().UnixMilli() }
	w := newExpiryWheel(now, func(ref *quoteRef) {
		mu.Lock()
		defer mu.Unlock()
		if _, twice := fired[ref]; twice {
			t.Errorf("fired twice")
		}
		fired[ref] = now()
	})
	w.start()
	start := now()
	refs := make([]*quoteRef, 200)
	for i := range refs {
		refs[i] = &quoteRef{}
		w.arm(refs[i], start+int64(i%50)*3) // 0..147 ms, many in one bucket
	}
	moved, disarmed, past := refs[7], refs[8], &quoteRef{}
	w.arm(moved, start+400) // an accept moves the deadline later
	w.disarm(disarmed)      // terminal
	w.arm(past, start-1000) // already due
	// Every armed quote fires (199 of refs, moved included, and past); the
	// disarmed one, due at +24 ms, would have fired long before moved (+400).
	poll.Until(t, 10*time.Second, func() string {
		mu.Lock()
		n := len(fired)
		mu.Unlock()
		if n < len(refs) {
			return fmt.Sprintf("%d of %d quotes fired", n, len(refs))
		}
		return ""
	})
	mu.Lock()
	for i, ref := range refs {
		at, ok := fired[ref]
		switch {
		case ref == disarmed:
			if ok {
				t.Errorf("disarmed quote fired")
			}
		case !ok:
			t.Errorf("quote %d never fired", i)
		case at < ref.deadline.Load():
			t.Errorf("quote %d fired %d ms early", i, ref.deadline.Load()-at)
		}
	}
	if at := fired[moved]; at < start+400 {
		t.Errorf("re-armed quote fired at +%d ms, before its new deadline +400", at-start)
	}
	if _, ok := fired[past]; !ok {
		t.Error("a deadline already past did not fire")
	}
	mu.Unlock()
	late := &quoteRef{}
	w.arm(late, now()+20)
	w.stop()
	// Stopped, the wheel holds nothing that could fire.
	w.mu.Lock()
	held := len(w.buckets)
	w.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if _, ok := fired[late]; ok || held != 0 {
		t.Errorf("after stop: late fired %v, %d buckets still armed", ok, held)
	}
}

// The bucket heap pops its numbers smallest first, whatever the order they
// were pushed in and however pushes and pops interleave: checked against a
// sorted copy.
func TestBucketHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h bucketHeap
	var want []int64
	for i := range 20_000 {
		if len(want) > 0 && rng.IntN(3) == 0 {
			slices.Sort(want)
			if got := h.pop(); got != want[0] {
				t.Fatalf("step %d: popped %d, want %d", i, got, want[0])
			}
			want = want[1:]
			continue
		}
		// Mostly increasing, as a start arms them, with repeats and
		// stragglers.
		b := int64(i/4) + rng.Int64N(50) - 25
		h.push(b)
		want = append(want, b)
	}
	slices.Sort(want)
	for _, w := range want {
		if got := h.pop(); got != w {
			t.Fatalf("drain: popped %d, want %d", got, w)
		}
	}
	if len(h) != 0 {
		t.Fatalf("%d numbers left", len(h))
	}
}

// Arms made before start (a start's quotes) are filed in runs of one
// bucket, each run a bucket's list as it is (no room to spare), and fire
// as the others do; a bucket armed again later takes the arms too.
func TestExpiryWheelFilesEarlyArms(t *testing.T) {
	var mu sync.Mutex
	fired := map[*quoteRef]int{}
	now := func() int64 { return time.Now().UnixMilli() }
	w := newExpiryWheel(now, func(ref *quoteRef) {
		mu.Lock()
		defer mu.Unlock()
		fired[ref]++
	})
	// Half a second ahead: nothing fires before the buckets are read.
	start := now() + 500
	refs := make([]*quoteRef, 70)
	for i := range refs {
		refs[i] = &quoteRef{}
		// Six buckets in runs of ten, then the first again.
		w.arm(refs[i], start+int64(i/10%6)*expiryBucketMillis*3)
	}
	w.start()
	w.mu.Lock()
	first := w.buckets[bucketOf(start)]
	if len(w.buckets) != 6 || first == nil || len(first.refs) != 20 {
		t.Errorf("%d buckets, the first with %v", len(w.buckets), first)
	}
	for _, b := range w.buckets {
		if b != first && (len(b.refs) != 10 || cap(b.refs) != 10) {
			t.Errorf("a bucket of one run: %d refs, room for %d, want 10 and 10", len(b.refs), cap(b.refs))
		}
	}
	w.mu.Unlock()
	poll.Until(t, 10*time.Second, func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(fired) < len(refs) {
			return fmt.Sprintf("%d of %d quotes fired", len(fired), len(refs))
		}
		return ""
	})
	mu.Lock()
	defer mu.Unlock()
	for i, ref := range refs {
		if fired[ref] != 1 {
			t.Errorf("quote %d fired %d times", i, fired[ref])
		}
	}
	w.stop()
}
