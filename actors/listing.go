package actors

import (
	"bytes"
	"cmp"
	"errors"
	"slices"
	"sync"

	"github.com/oja-exchange/oja/engine"
)

// quoteIndex keeps each (client, mode)'s quotes in creation order, for the
// partner's listing: a page is a binary search and a walk back from there,
// never a scan of every quote. A scope's list is built on its first
// listing, from one pass over the registry (so a start with a million
// quotes builds nothing), and kept from then on: quotes registered later
// are added, quotes the registry forgets are dropped (Maintain).
type quoteIndex struct {
	mu    sync.RWMutex
	lists map[listScope]*quoteList
}

type listScope struct {
	client engine.ClientID
	mode   engine.Mode
}

type quoteList struct {
	mu      sync.RWMutex
	entries []listEntry // ascending by (at, id)
}

type listEntry struct {
	at  int64 // CreatedAt, unix ms
	id  engine.QuoteID
	ref *quoteRef
}

func compareEntries(a, b listEntry) int {
	return cmp.Or(cmp.Compare(a.at, b.at), bytes.Compare(a.id[:], b.id[:]))
}

// list returns the scope's list, building it from the registry on first
// use. The new list is published at once, locked, and filled under its
// own lock: only that scope's creates wait for the pass, never another
// client's (add takes the index lock for a map look-up only).
func (x *quoteIndex) list(s listScope, registry *quoteRegistry) *quoteList {
	x.mu.RLock()
	l := x.lists[s]
	x.mu.RUnlock()
	if l != nil {
		return l
	}
	x.mu.Lock()
	if l = x.lists[s]; l != nil {
		x.mu.Unlock()
		return l
	}
	if x.lists == nil {
		x.lists = make(map[listScope]*quoteList)
	}
	l = &quoteList{}
	l.mu.Lock()
	x.lists[s] = l
	x.mu.Unlock()
	// NB: a quote registered during this pass may be added as well once the
	// pass releases the list; add skips an entry already present.
	registry.Range(func(id engine.QuoteID, ref *quoteRef) bool {
		if q, owned := ref.viewOf(s.client, s.mode); owned {
			l.entries = append(l.entries, listEntry{q.CreatedAt, id, ref})
		}
		return true
	})
	slices.SortFunc(l.entries, compareEntries)
	l.mu.Unlock()
	return l
}

// add indexes a newly registered quote if its scope's list exists. Quotes
// arrive nearly in creation order, so the insertion point is found from
// the end.
func (x *quoteIndex) add(q *engine.Quote, ref *quoteRef) {
	x.mu.RLock()
	l := x.lists[listScope{q.Client, q.Mode}]
	x.mu.RUnlock()
	if l == nil {
		return // built from the registry on its first listing
	}
	// NB: registered before this add, so a build under way finds it or
	// this insert does; the duplicate check below keeps one.
	e := listEntry{q.CreatedAt, q.ID, ref}
	l.mu.Lock()
	defer l.mu.Unlock()
	i := len(l.entries)
	for i > 0 && compareEntries(l.entries[i-1], e) > 0 {
		i--
	}
	if i > 0 && compareEntries(l.entries[i-1], e) == 0 {
		return // the build's registry pass found it
	}
	l.entries = slices.Insert(l.entries, i, e)
}

// drop removes the entries whose quotes the registry forgot.
func (x *quoteIndex) drop(forgotten func(ref *quoteRef) bool) {
	x.mu.RLock()
	lists := make([]*quoteList, 0, len(x.lists))
	for _, l := range x.lists {
		lists = append(lists, l)
	}
	x.mu.RUnlock()
	for _, l := range lists {
		l.mu.Lock()
		l.entries = slices.DeleteFunc(l.entries, func(e listEntry) bool { return forgotten(e.ref) })
		l.mu.Unlock()
	}
}

// QuoteFilter narrows a listing.
type QuoteFilter struct {
	Status        engine.Status  // 0 = any
	CreatedGte    int64          // unix ms; 0 = no lower bound
	CreatedLt     int64          // unix ms; 0 = no upper bound
	Limit         int            // page size, at least 1
	StartingAfter engine.QuoteID // the last quote of the previous page; zero = from the newest
}

// ErrUnknownCursor is a listing's startingAfter that names no quote of the
// caller's (or one no longer held).
var ErrUnknownCursor = errors.New("actors: startingAfter names no quote of this client and mode")

// ListQuotes returns a page of the caller's quotes held in memory (open,
// or terminal within the retention), newest first, and whether more
// follow.
func (s *System) ListQuotes(client engine.ClientID, mode engine.Mode, f QuoteFilter) ([]*engine.Quote, bool, error) {
	l := s.listing.list(listScope{client, mode}, &s.quotes)
	var zero engine.QuoteID
	l.mu.RLock()
	defer l.mu.RUnlock()
	e := l.entries
	hi := len(e)
	if f.CreatedLt != 0 {
		hi, _ = slices.BinarySearchFunc(e, f.CreatedLt, func(x listEntry, at int64) int { return cmp.Compare(x.at, at) })
	}
	if f.StartingAfter != zero {
		ref, ok := s.quotes.Load(f.StartingAfter)
		var cursor *engine.Quote
		if ok {
			cursor, ok = ref.viewOf(client, mode)
		}
		if !ok {
			return nil, false, ErrUnknownCursor
		}
		i, found := slices.BinarySearchFunc(e, listEntry{at: cursor.CreatedAt, id: f.StartingAfter}, compareEntries)
		if !found {
			return nil, false, ErrUnknownCursor
		}
		hi = min(hi, i)
	}
	lo := 0
	if f.CreatedGte != 0 {
		lo, _ = slices.BinarySearchFunc(e, f.CreatedGte, func(x listEntry, at int64) int { return cmp.Compare(x.at, at) })
	}
	var page []*engine.Quote
	for i := hi - 1; i >= lo; i-- {
		q := e[i].ref.view.Load()
		if f.Status != 0 && q.Status != f.Status {
			continue
		}
		if len(page) == f.Limit {
			return page, true, nil
		}
		page = append(page, q)
	}
	return page, false, nil
}
