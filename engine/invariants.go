package engine

// Invariant checks too expensive for production (STYLE.md, "Errors, three
// channels"; pebble's internal/invariants). A build with `-tags invariants`
// sets InvariantsEnabled, and State.Apply then calls checkInvariants after
// every event it applies, so that a bug which breaks the ledger panics at
// the event that broke it rather than surfacing later as a wrong balance.
// `make test` runs the engine and actors tests so built.
//
// What is checked after each event:
//
//  1. the ledger of each mode sums to zero per currency, and no non-clearing
//     account has a negative balance, a negative hold or a hold above its
//     balance (State.LedgerCheck);
//  2. for each pool the event touched: its holds equal the slices of its
//     open quotes, its proceeds hold nothing, and its book entry agrees with
//     it (available liquidity, rate, when the rate was set, status); and
//     then the quotes QuotesInOrder reads from the slabs are exactly those
//     of Quotes.
//
// Cost: (1) is linear in accounts and pools, (2) in quotes, per event; a
// replay of n events costs O(n × state), which is why production builds
// leave it out (InvariantsEnabled is a constant, so the call compiles away).

// checkInvariants panics (through assert) when s breaks an invariant after
// applying ev.
func (s *State) checkInvariants(ev Event) {
	for _, m := range Modes {
		report := s.LedgerCheck(m)
		assert(report.OK, "after %s: ledger of %s: %v", ev.Type(), m, report.Problems)
	}
	touched := s.touchedPools(ev)
	if len(touched) == 0 {
		return
	}
	held := make(map[PoolID]Amount, len(touched))
	for _, id := range touched {
		held[id] = 0
	}
	inOrder := 0
	for q := range s.QuotesInOrder() {
		inOrder++
		assert(s.Quotes.Get(q.ID) == q, "after %s: quote %s in a slab is not the state's", ev.Type(), q.ID)
		if !q.Status.Open() {
			continue
		}
		as := q.Allocations()
		for i := range as {
			a := &as[i]
			if sum, ok := held[a.Pool]; ok {
				held[a.Pool] = sum + a.Destination
			}
		}
	}
	assert(inOrder == s.Quotes.Len(), "after %s: %d quotes in the slabs, %d in Quotes", ev.Type(), inOrder, s.Quotes.Len())
	for _, id := range touched {
		p := s.Pools[id]
		assert(p.Liquidity.Held == held[id], "after %s: pool %s holds %d, its open quotes' slices %d",
			ev.Type(), id, p.Liquidity.Held, held[id])
		assert(p.Proceeds.Held == 0, "after %s: pool %s proceeds hold %d", ev.Type(), id, p.Proceeds.Held)
		e, ok := s.Book(p.Mode, p.Pair).Entry(id)
		assert(ok, "after %s: pool %s missing from its book", ev.Type(), id)
		assert(e.Available == p.Liquidity.Available() && e.Rate == p.Rate && e.RateSetAt == p.RateSetAt &&
			e.Active == p.Active, "after %s: pool %s book entry %+v, pool available %d rate %d set at %d active %v",
			ev.Type(), id, e, p.Liquidity.Available(), p.Rate, p.RateSetAt, p.Active)
	}
}

// touchedPools names the pools an applied event changed.
func (s *State) touchedPools(ev Event) []PoolID {
	switch ev := ev.(type) {
	case *PoolCreated:
		return []PoolID{ev.Pool}
	case *PoolRateSet:
		return []PoolID{ev.Pool}
	case *PoolStatusSet:
		return []PoolID{ev.Pool}
	case *PoolDeposited:
		return []PoolID{ev.Pool}
	case *PoolWithdrawn:
		return []PoolID{ev.Pool}
	case *QuoteCreated, *QuoteAccepted, *QuoteCancelled, *QuoteExpired, *QuoteCompleted:
		// Exactly the pools the event's routed outcome reached.
		out := make([]PoolID, 0, len(s.outcome.Slices))
		for _, e := range s.outcome.Slices {
			out = append(out, e.Pool)
		}
		return out
	}
	return nil
}
