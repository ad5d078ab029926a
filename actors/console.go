package actors

import (
	"cmp"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/oja-exchange/oja/engine"
)

// Read models for the operator console: what happened to quotes minute by
// minute, which keys hold the most open quotes, which quotes wait for
// money. Each is read off what the system already keeps; only the minute
// counts are new, and they are in memory only (since this system started
// serving: a restart or a new cluster leader starts them again).

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
	counts [2][6]uint32
}

// note counts one quote of mode m reaching status at (unix ms).
func (a *activity) note(m engine.Mode, status engine.Status, at int64) {
	mi, si := modeIndex(m), int(status)
	if mi < 0 || si <= 0 || si >= 6 {
		return
	}
	minute := at / 60_000
	a.mu.Lock()
	b := &a.minutes[minute%ActivityMinutes]
	if b.minute != minute {
		*b = activityMinute{minute: minute}
	}
	b.counts[mi][si]++
	a.mu.Unlock()
}

func modeIndex(m engine.Mode) int {
	for i, x := range engine.Modes {
		if x == m {
			return i
		}
	}
	return -1
}

// MinuteActivity is one minute of a mode's quote activity.
type MinuteActivity struct {
	Minute int64                 // unix minutes
	Counts map[engine.Status]int // quotes that reached each status
}

// Activity is the last ActivityMinutes minutes of mode m's quote activity,
// oldest first, ending with the current minute (minutes without any are
// there, with zero counts).
func (s *System) Activity(m engine.Mode) []MinuteActivity {
	mi := modeIndex(m)
	now := s.cfg.Clock().UnixMilli() / 60_000
	out := make([]MinuteActivity, 0, ActivityMinutes)
	s.activity.mu.Lock()
	defer s.activity.mu.Unlock()
	for minute := now - ActivityMinutes + 1; minute <= now; minute++ {
		row := MinuteActivity{Minute: minute, Counts: make(map[engine.Status]int, len(engine.Statuses))}
		b := &s.activity.minutes[((minute%ActivityMinutes)+ActivityMinutes)%ActivityMinutes]
		for _, st := range engine.Statuses {
			if b.minute == minute && mi >= 0 {
				row.Counts[st] = int(b.counts[mi][st])
			} else {
				row.Counts[st] = 0
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
		pid, ok := s.pairs[engine.BookKey{Mode: m, Pair: p}]
		if !ok {
			continue
		}
		res, err := s.request(pid, &readExposures{n: n})
		if err != nil {
			return nil, err
		}
		read := res.(*exposuresRead)
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
			if v, ok := s.open.Load(kr.key); ok {
				x.Open = int(v.(*atomic.Int64).Load())
			}
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

// AwaitingPayment is a page of mode m's quotes awaiting payment, the
// soonest to expire first, after the quote after (zero: from the first),
// and whether more follow. It sorts every awaiting quote: for an
// operator's page, not a hot path.
func (s *System) AwaitingPayment(m engine.Mode, after engine.QuoteID, limit int) ([]*engine.Quote, bool) {
	var all []*engine.Quote
	s.awaiting.mu.Lock()
	for ref := range s.awaiting.refs {
		if ref.mode == m {
			if q := ref.view.Load(); q.Status == engine.StatusAwaitingPayment {
				all = append(all, q)
			}
		}
	}
	s.awaiting.mu.Unlock()
	slices.SortFunc(all, func(a, b *engine.Quote) int {
		return cmp.Or(cmp.Compare(a.ExpiresAt, b.ExpiresAt), slices.Compare(a.ID[:], b.ID[:]))
	})
	start := 0
	if !after.IsZero() {
		start = slices.IndexFunc(all, func(q *engine.Quote) bool { return q.ID == after }) + 1
	}
	end := min(start+limit, len(all))
	return all[start:end], end < len(all)
}

// RecentReceipts is a page of mode m's payments received (bank and
// crypto), newest first, from offset on, and whether more follow: the
// receipts the treasuries keep (within --retention). It sorts them all: for
// an operator's page, not a hot path.
func (s *System) RecentReceipts(m engine.Mode, offset, limit int) ([]*engine.PaymentReceived, bool) {
	var all []*engine.PaymentReceived
	s.receipts.m.Range(func(_, v any) bool {
		for _, r := range v.([]*engine.PaymentReceived) {
			if a, ok := s.Account(r.Account); ok && a.Mode == m {
				all = append(all, r)
			}
		}
		return true
	})
	slices.SortFunc(all, func(a, b *engine.PaymentReceived) int {
		return cmp.Or(cmp.Compare(b.At, a.At), slices.Compare(a.Quote[:], b.Quote[:]), cmp.Compare(a.Reference, b.Reference))
	})
	start := min(max(offset, 0), len(all))
	end := min(start+limit, len(all))
	return all[start:end], end < len(all)
}
