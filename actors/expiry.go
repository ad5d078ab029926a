package actors

import (
	"sync"
	"time"
)

// expiryBucketMillis is the width of one bucket of the expiry wheel: a
// deadline fires at the end of its bucket, so at most this late (never
// early), which the quote actor's own deadline check makes harmless.
const expiryBucketMillis = 10

// expiryWheel fires quote deadlines: one timer and one goroutine at a time
// for every open quote, instead of a runtime timer each. A million open
// quotes cost a slice slot each, and a start arms them in one pass.
//
// A quote is armed by storing its deadline in the quoteRef and adding the
// ref to the deadline's bucket; re-arming (an accept moves the deadline)
// adds it to the new bucket, and the entry left in the old one is stale:
// a bucket fires a ref only if the ref's deadline still falls in it. A
// terminal quote is disarmed by a zero deadline.
type expiryWheel struct {
	fire func(*quoteRef)
	now  func() int64 // unix ms

	mu      sync.Mutex
	buckets map[int64]*expiryBucket // by bucket number
	order   bucketHeap              // the bucket numbers in buckets
	// last is the bucket armed last, and its number: quotes armed one after
	// the other mostly share a deadline's bucket (a start arms them in
	// creation order), found without a map lookup.
	last    *expiryBucket
	lastNum int64
	timer   *time.Timer
	armed   int64 // the bucket the timer is set for; 0: none
	started bool  // start was called: the timer may be set
	stopped bool
	// early is the chunk of arms made before start (armEarly); those
	// from run on are of bucket runBucket and not yet filed.
	early     []*quoteRef
	run       int
	runBucket int64
}

// expiryBucket is the refs armed for deadlines in one bucket.
type expiryBucket struct{ refs []*quoteRef }

// expiryBucketCap is the first capacity of a bucket made after start
// (quotes created live, several to a bucket, would otherwise grow each
// list from one ref); a start's buckets are cut from its arms
// (armEarly).
const expiryBucketCap = 8

func newExpiryWheel(now func() int64, fire func(*quoteRef)) *expiryWheel {
	return &expiryWheel{fire: fire, now: now, buckets: make(map[int64]*expiryBucket)}
}

func bucketOf(deadline int64) int64 {
	return (deadline + expiryBucketMillis - 1) / expiryBucketMillis
}

// arm (re)sets ref's deadline (unix ms).
func (w *expiryWheel) arm(ref *quoteRef, deadline int64) {
	ref.deadline.Store(deadline)
	b := bucketOf(deadline)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if !w.started {
		w.armEarly(ref, b)
		return
	}
	bucket := w.bucket(b)
	bucket.refs = append(bucket.refs, ref)
	if w.armed == 0 || b < w.armed {
		w.schedule(b)
	}
}

// bucket is bucket b, made if new; it is w.last from then on.
// REQUIRES: w.mu held.
func (w *expiryWheel) bucket(b int64) *expiryBucket {
	if w.last == nil || w.lastNum != b {
		bucket, ok := w.buckets[b]
		if !ok {
			bucket = &expiryBucket{refs: make([]*quoteRef, 0, expiryBucketCap)}
			w.buckets[b] = bucket
			w.order.push(b)
		}
		w.last, w.lastNum = bucket, b
	}
	return w.last
}

// armEarly arms ref in bucket b before start (a start arms its quotes in
// creation order, some ten to a bucket): the arms go into chunks in
// order, and each run of one bucket becomes its bucket's list as it is,
// not copied, instead of a list grown from expiryBucketCap slots (a third
// of them empty). REQUIRES: w.mu held.
func (w *expiryWheel) armEarly(ref *quoteRef, b int64) {
	if len(w.early) > w.run && (b != w.runBucket || len(w.early) == cap(w.early)) {
		w.fileRun()
	}
	if len(w.early) == cap(w.early) {
		w.early, w.run = make([]*quoteRef, 0, expiryEarlyChunk), 0
	}
	w.early = append(w.early, ref)
	w.runBucket = b
}

// fileRun adds the current run of early arms to its bucket.
// REQUIRES: w.mu held.
func (w *expiryWheel) fileRun() {
	run := w.early[w.run:len(w.early):len(w.early)]
	w.run = len(w.early)
	if len(run) == 0 {
		return
	}
	if bucket, ok := w.buckets[w.runBucket]; ok {
		bucket.refs = append(bucket.refs, run...)
		return
	}
	w.buckets[w.runBucket] = &expiryBucket{refs: run}
	w.order.push(w.runBucket)
}

// expiryEarlyChunk is the arms of one chunk before start.
const expiryEarlyChunk = 4096

// start lets the wheel fire: the quotes armed before (at Start, while the
// actors they would reach are still being spawned) from now on.
func (w *expiryWheel) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started = true
	if w.early != nil {
		w.fileRun()
		w.early, w.run = nil, 0
	}
	if !w.stopped && len(w.order) > 0 {
		w.schedule(w.order[0])
	}
}

// disarm makes ref's pending firing (if any) a no-op.
func (w *expiryWheel) disarm(ref *quoteRef) { ref.deadline.Store(0) }

// schedule sets the timer for bucket b. REQUIRES: w.mu held.
func (w *expiryWheel) schedule(b int64) {
	wait := max(time.Duration(b*expiryBucketMillis-w.now())*time.Millisecond, 0)
	w.armed = b
	if w.timer == nil {
		w.timer = time.AfterFunc(wait, w.tick)
		return
	}
	w.timer.Reset(wait)
}

// tick fires every bucket that is due, then sets the timer for the next.
func (w *expiryWheel) tick() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	// Only the buckets whose end has passed, whatever the timer was set
	// for: a Reset of a timer that had already expired runs tick once more,
	// possibly after a previous tick set the timer for a later bucket, and
	// that extra run must not fire the later bucket early.
	upTo := w.now() / expiryBucketMillis
	w.armed = 0
	type due struct {
		bucket int64
		refs   []*quoteRef
	}
	var fired []due
	for len(w.order) > 0 && w.order[0] <= upTo {
		b := w.order.pop()
		fired = append(fired, due{b, w.buckets[b].refs})
		delete(w.buckets, b)
		if w.lastNum == b {
			w.last = nil
		}
	}
	if len(w.order) > 0 {
		w.schedule(w.order[0])
	}
	w.mu.Unlock()
	for _, d := range fired {
		for _, ref := range d.refs {
			if deadline := ref.deadline.Load(); deadline != 0 && bucketOf(deadline) == d.bucket {
				w.fire(ref)
			}
		}
	}
}

// stop cancels every pending firing.
func (w *expiryWheel) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
	clear(w.buckets)
	w.order, w.last, w.early = nil, nil, nil
}

// bucketHeap is a min-heap of bucket numbers. Typed rather than through
// container/heap, whose Push boxes every number (an allocation each).
type bucketHeap []int64

// push adds b. Buckets are mostly armed in increasing order, so the
// sift-up mostly stops at once.
func (h *bucketHeap) push(b int64) {
	*h = append(*h, b)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if s[parent] <= s[i] {
			break
		}
		s[parent], s[i] = s[i], s[parent]
		i = parent
	}
}

// pop removes and returns the smallest number; h must not be empty.
func (h *bucketHeap) pop() int64 {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(s) && s[l] < s[least] {
			least = l
		}
		if r < len(s) && s[r] < s[least] {
			least = r
		}
		if least == i {
			break
		}
		s[i], s[least] = s[least], s[i]
		i = least
	}
	*h = s
	return top
}
