package actors

import (
	"cmp"
	"container/heap"
	"math/bits"
	"slices"
	"sync"

	"github.com/oja-exchange/oja/engine"
)

// Read models for the operator console: what happened to quotes minute by
// minute, what each key's open quotes reserve, which quotes wait for
// money, what was received. The minute counts and the index of quotes
// awaiting payment are kept as quotes move, in memory only (a restart or
// a new cluster leader starts them again); the rest is read off what the
// system already keeps.

// ActivityMinutes is how many minutes of quote activity are kept.
const ActivityMinutes = 60

// activity counts, per minute, the quotes that reached each status (a
// creation is "pending") through this system's own writes.
type activity struct {
	mu      sync.Mutex
	minutes [ActivityMinutes]activityMinute
}

type activityMinute struct {
	minute int64 // unix minutes; 0: unused
	// counts[mode][status], shaped as System.quoteCounts.
	counts [engine.ModeSandbox + 1][engine.StatusExpired + 1]uint32
}

// note counts one quote of mode m reaching status at (unix ms).
func (a *activity) note(m engine.Mode, status engine.Status, at int64) {
	if m > engine.ModeSandbox || status > engine.StatusExpired {
		return
	}
	minute := at / 60_000
	a.mu.Lock()
	b := &a.minutes[minute%ActivityMinutes]
	if b.minute != minute {
		*b = activityMinute{minute: minute}
	}
	b.counts[m][status]++
	a.mu.Unlock()
}

// MinuteActivity is one minute of a mode's quote activity.
type MinuteActivity struct {
	Minute int64                 // unix minutes
	Counts map[engine.Status]int // quotes that reached each status (absent: none)
}

// Activity is the last ActivityMinutes minutes of mode m's quote activity,
// oldest first, ending with the current minute (a minute without any is
// there, with no counts).
func (s *System) Activity(m engine.Mode) []MinuteActivity {
	now := s.cfg.Clock().UnixMilli() / 60_000
	out := make([]MinuteActivity, 0, ActivityMinutes)
	s.activity.mu.Lock()
	defer s.activity.mu.Unlock()
	for minute := now - ActivityMinutes + 1; minute <= now; minute++ {
		row := MinuteActivity{Minute: minute, Counts: make(map[engine.Status]int, len(engine.Statuses))}
		if b := &s.activity.minutes[minute%ActivityMinutes]; b.minute == minute && m <= engine.ModeSandbox {
			for _, st := range engine.Statuses {
				if n := b.counts[m][st]; n > 0 {
					row.Counts[st] = int(n)
				}
			}
		}
		out = append(out, row)
	}
	return out
}

// KeyExposure is what one API key's open quotes reserve in a book.
type KeyExposure struct {
	Key      engine.Key
	Client   *engine.Client
	Reserved engine.Amount // in the pair's destination currency
	Share    uint32        // of all the book's open quotes reserve, in parts per million
	Open     int           // the key's open quotes, every pair
}

// BookExposures is a book's largest key reservations.
type BookExposures struct {
	Pair  engine.Pair
	Total engine.Amount // all its open quotes reserve
	Keys  []KeyExposure
}

// readExposures asks a pair actor for its n largest key reservations.
type readExposures struct{ n int }

// exposuresRead answers readExposures.
type exposuresRead struct {
	top   []keyReserved
	total engine.Amount
}

type keyReserved struct {
	key      engine.KeyID
	reserved engine.Amount
}

// largest is the n keys reserving the most, most first.
func (x *exposure) largest(n int) *exposuresRead {
	out := &exposuresRead{total: x.total}
	for k, v := range x.byKey {
		out.top = append(out.top, keyReserved{key: k, reserved: v})
	}
	slices.SortFunc(out.top, func(a, b keyReserved) int {
		return cmp.Or(cmp.Compare(b.reserved, a.reserved), slices.Compare(a.key[:], b.key[:]))
	})
	out.top = out.top[:min(n, len(out.top))]
	return out
}

// LargestExposures is, for each pair of mode m in the markets' order, the
// n keys whose open quotes reserve the most of it (each pair actor's own
// figures, the ones --max-key-share is decided on).
func (s *System) LargestExposures(m engine.Mode, n int) ([]BookExposures, error) {
	var out []BookExposures
	for _, p := range s.markets.PairList() {
		to, ok := s.pairs[engine.BookKey{Mode: m, Pair: p}]
		if !ok {
			continue
		}
		read, err := ask[*exposuresRead](s, to, &readExposures{n: n})
		if err != nil {
			return nil, err
		}
		book := BookExposures{Pair: p, Total: read.total}
		for _, kr := range read.top {
			x := KeyExposure{Reserved: kr.reserved}
			if ref, ok := s.directory.key(kr.key); ok {
				x.Key = ref.key
				x.Client, _ = s.directory.client(ref.key.Client)
			} else {
				x.Key.ID = kr.key
			}
			if read.total > 0 && kr.reserved > 0 && kr.reserved <= read.total {
				hi, lo := bits.Mul64(uint64(kr.reserved), ShareScale)
				share, _ := bits.Div64(hi, lo, uint64(read.total)) // hi < total: the share is at most ShareScale
				x.Share = uint32(share)
			}
			x.Open = s.open.count(kr.key)
			book.Keys = append(book.Keys, x)
		}
		out = append(out, book)
	}
	return out, nil
}

// awaitingIndex is the set of quotes awaiting payment (a quote enters it
// when accepted and leaves it when completed, cancelled or expired).
type awaitingIndex struct {
	mu   sync.Mutex
	refs map[*quoteRef]struct{}
}

// moved notes ref's move from status from to status to.
func (x *awaitingIndex) moved(ref *quoteRef, from, to engine.Status) {
	if from != engine.StatusAwaitingPayment && to != engine.StatusAwaitingPayment {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if to == engine.StatusAwaitingPayment {
		if x.refs == nil {
			x.refs = make(map[*quoteRef]struct{})
		}
		x.refs[ref] = struct{}{}
	} else {
		delete(x.refs, ref)
	}
}

// firstN keeps the n first of the items offered, in the order cmp gives
// (a max-heap of n): a page of a long list costs O(items·log n), not a
// sort of every item.
type firstN[T any] struct {
	n     int
	cmp   func(a, b T) int
	items []T
}

func (f *firstN[T]) Len() int           { return len(f.items) }
func (f *firstN[T]) Less(i, j int) bool { return f.cmp(f.items[i], f.items[j]) > 0 }
func (f *firstN[T]) Swap(i, j int)      { f.items[i], f.items[j] = f.items[j], f.items[i] }
func (f *firstN[T]) Push(x any)         { f.items = append(f.items, x.(T)) }
func (f *firstN[T]) Pop() any {
	x := f.items[len(f.items)-1]
	f.items = f.items[:len(f.items)-1]
	return x
}

func (f *firstN[T]) offer(x T) {
	switch {
	case len(f.items) < f.n:
		heap.Push(f, x)
	case f.n > 0 && f.cmp(x, f.items[0]) < 0:
		f.items[0] = x
		heap.Fix(f, 0)
	}
}

// sorted is what was kept, in order.
func (f *firstN[T]) sorted() []T {
	slices.SortFunc(f.items, f.cmp)
	return f.items
}

// page is rows [start, start+limit) of the kept (n = start+limit+1), and
// whether more follow.
func (f *firstN[T]) page(start, limit int) ([]T, bool) {
	all := f.sorted()
	start = min(start, len(all))
	end := min(start+limit, len(all))
	return all[start:end], end < len(all)
}

// byExpiry orders quotes soonest to expire first (ties by id).
func byExpiry(a, b *engine.Quote) int {
	return cmp.Or(cmp.Compare(a.ExpiresAt, b.ExpiresAt), slices.Compare(a.ID[:], b.ID[:]))
}

// AwaitingPayment is a page of mode m's quotes awaiting payment, the
// soonest to expire first, after the quote after (zero, or a quote no
// longer awaiting payment: from the first), and whether more follow. It
// walks every awaiting quote: for an operator's page, not a hot path.
func (s *System) AwaitingPayment(m engine.Mode, after engine.QuoteID, limit int) ([]*engine.Quote, bool) {
	var cursor *engine.Quote
	if !after.IsZero() {
		if ref, ok := s.quoteRef(after); ok {
			if q := ref.view.Load(); q.Status == engine.StatusAwaitingPayment {
				cursor = q
			}
		}
	}
	first := &firstN[*engine.Quote]{n: limit + 1, cmp: byExpiry}
	s.awaiting.mu.Lock()
	for ref := range s.awaiting.refs {
		// NB: a quote's view moves before the index does.
		if q := ref.view.Load(); q.Mode == m && q.Status == engine.StatusAwaitingPayment && (cursor == nil || byExpiry(q, cursor) > 0) {
			first.offer(q)
		}
	}
	s.awaiting.mu.Unlock()
	return first.page(0, limit)
}

// newestReceipt orders receipts newest first.
func newestReceipt(a, b engine.Payment) int {
	return cmp.Or(cmp.Compare(b.At, a.At), cmp.Compare(a.Mode, b.Mode), cmp.Compare(b.Seq, a.Seq))
}

// RecentReceipts is a page of mode m's payments received (bank and
// crypto), newest first, from offset on, and whether more follow: the
// receipts the treasuries keep (within --retention). It walks them all:
// for an operator's page, not a hot path.
func (s *System) RecentReceipts(m engine.Mode, offset, limit int) ([]engine.Payment, bool) {
	offset = max(offset, 0)
	first := &firstN[engine.Payment]{n: offset + limit + 1, cmp: newestReceipt}
	s.receipts.m.Range(func(_, v any) bool {
		for _, r := range v.([]engine.Payment) {
			if r.Mode == m {
				first.offer(r)
			}
		}
		return true
	})
	return first.page(offset, limit)
}
