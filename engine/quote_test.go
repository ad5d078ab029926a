package engine_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// The quote lifecycle (spec §4) as a table over status × operation.

const (
	quoteCreatedAt     = int64(1_763_712_000_000)
	quoteTTLMillis     = int64(300_000)
	quoteAcceptedAt    = quoteCreatedAt + 20_000
	quoteWindowMillis  = int64(1_800_000)
	quoteDecisionDelay = int64(5_000) // decisions below are made this long after the last event
)

var (
	quoteAccountA  = engine.AccountID{0xA1}
	quoteAccountB  = engine.AccountID{0xB1}
	quoteForeign   = engine.AccountID{0xF1}
	quoteWallet    = engine.AccountID{0x77}
	quoteWallet2   = engine.AccountID{0x78}
	walletSettle   = engine.Settlement{Kind: engine.SettlementWallet, Account: quoteWallet}
	ownerWallets   = []engine.WalletAccount{{Mode: engine.ModeSandbox, Currency: engine.CurrencyUSDT, Account: quoteWallet}}
	acceptJSONA    = engine.AcceptQuote{NamesPoolAccount: true, PoolAccount: quoteAccountA, Settlement: walletSettle, OwnerWallets: ownerWallets}
	acceptJSONB    = engine.AcceptQuote{NamesPoolAccount: true, PoolAccount: quoteAccountB, Settlement: walletSettle, OwnerWallets: ownerWallets}
	acceptForeign  = engine.AcceptQuote{NamesPoolAccount: true, PoolAccount: quoteForeign, Settlement: walletSettle, OwnerWallets: ownerWallets}
	acceptZero     = engine.AcceptQuote{NamesPoolAccount: true, Settlement: walletSettle, OwnerWallets: ownerWallets}
	acceptWallet2  = engine.AcceptQuote{NamesPoolAccount: true, PoolAccount: quoteAccountA, Settlement: engine.Settlement{Kind: engine.SettlementWallet, Account: quoteWallet2}, OwnerWallets: ownerWallets}
	acceptChainBad = engine.AcceptQuote{Settlement: engine.Settlement{Kind: engine.SettlementChain, Address: "0x52908400098527886E0F7030069857D2E4169EE7"}}
	acceptBank     = engine.AcceptQuote{Settlement: engine.Settlement{Kind: engine.SettlementBank, AccountName: "Ada Obi", AccountNumber: "0123456789", BankCode: "058"}}
	acceptChain    = engine.AcceptQuote{Settlement: engine.Settlement{Kind: engine.SettlementChain, Address: "TQ1h2d3CqWn2C8pR9vJ5kW7uXyZ4aB6cDe"}}
	acceptNoTarget = engine.AcceptQuote{NamesPoolAccount: true, PoolAccount: quoteAccountA}
)

// newTestQuote returns a quote of two slices (pool accounts A and B) in
// status st, reached through the lifecycle events; an awaiting_payment or
// completed quote was accepted with acceptJSONA.
func newTestQuote(t *testing.T, st engine.Status) *engine.Quote {
	t.Helper()
	q := engine.NewQuote(&engine.QuoteCreated{
		At: quoteCreatedAt, Quote: engine.QuoteID{0x51}, Client: engine.ClientID{0xC1}, Mode: engine.ModeSandbox,
		Pair: pairNGNUSDT, Direction: engine.DirectionDestination, Amount: 150_000_000, ProposedRate: engine.RateFromUnits(600_000_000_000_000),
		Chain: engine.ChainTron, Reference: engine.MustRef("OJA-4F7Q9D2M"), ExpiresAt: quoteCreatedAt + quoteTTLMillis,
		Allocations: []engine.Allocation{
			{ID: engine.AllocationID{1}, Pool: engine.PoolID{0xA}, PoolAccount: quoteAccountA, PoolName: "a",
				Rate: engine.RateFromUnits(625_000_000_000_000), Source: 160_000_00, Destination: 100_000_000, Reference: engine.MustRef("ALC-A")},
			{ID: engine.AllocationID{2}, Pool: engine.PoolID{0xB}, PoolAccount: quoteAccountB, PoolName: "b",
				Rate: engine.RateFromUnits(620_000_000_000_000), Source: 80_645_17, Destination: 50_000_000, Reference: engine.MustRef("ALC-B")},
		},
	})
	var evs []engine.Event
	switch st {
	case engine.StatusAwaitingPayment:
		evs = append(evs, acceptedEvent(q))
	case engine.StatusCompleted:
		evs = append(evs, acceptedEvent(q), &engine.QuoteCompleted{At: quoteAcceptedAt + 1_000, Quote: q.ID})
	case engine.StatusCancelled:
		evs = append(evs, &engine.QuoteCancelled{At: quoteCreatedAt + 1_000, Quote: q.ID})
	case engine.StatusExpired:
		evs = append(evs, &engine.QuoteExpired{At: q.ExpiresAt, Quote: q.ID})
	}
	for _, ev := range evs {
		q.Apply(ev)
	}
	if q.Status != st {
		t.Fatalf("fixture: status %s, want %s", q.Status, st)
	}
	return q
}

func acceptedEvent(q *engine.Quote) *engine.QuoteAccepted {
	return &engine.QuoteAccepted{At: quoteAcceptedAt, Quote: q.ID, PoolAccount: acceptJSONA.PoolAccount,
		Settlement: acceptJSONA.Settlement, ExpiresAt: quoteAcceptedAt + quoteWindowMillis}
}

// decisionTime is a time at which q is still before its deadline.
func decisionTime(q *engine.Quote) int64 { return q.UpdatedAt + quoteDecisionDelay }

func TestNewQuote(t *testing.T) {
	q := newTestQuote(t, engine.StatusPending)
	tests := []struct {
		name      string
		got, want any
	}{
		{"status", q.Status, engine.StatusPending},
		{"total source", q.TotalSource(), engine.Amount(160_000_00 + 80_645_17)},
		{"total destination", q.TotalDestination(), engine.Amount(150_000_000)},
		{"TTL seconds", q.TTL, int32(300)},
		{"created at", q.CreatedAt, quoteCreatedAt},
		{"updated at", q.UpdatedAt, quoteCreatedAt},
		{"expires at", q.ExpiresAt, quoteCreatedAt + quoteTTLMillis},
		{"accepted at", q.AcceptanceOrZero().At, int64(0)},
		{"has pool account A", q.HasPoolAccount(quoteAccountA), true},
		{"has pool account B", q.HasPoolAccount(quoteAccountB), true},
		{"has a foreign account", q.HasPoolAccount(quoteForeign), false},
		{"has the zero account", q.HasPoolAccount(engine.AccountID{}), false},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestQuoteAccept: accept from every status with every kind of input.
func TestQuoteAccept(t *testing.T) {
	tests := []struct {
		name      string
		status    engine.Status
		cmd       engine.AcceptQuote
		want      engine.Result
		wantEvent bool
	}{
		{"pending/json first pool account", engine.StatusPending, acceptJSONA, engine.ResultOK, true},
		{"pending/json second pool account", engine.StatusPending, acceptJSONB, engine.ResultOK, true},
		{"pending/json account not of the quote", engine.StatusPending, acceptForeign, engine.ResultInvalidAccount, false},
		{"pending/json zero account", engine.StatusPending, acceptZero, engine.ResultInvalidAccount, false},
		{"pending/json wallet not the owner's", engine.StatusPending, acceptWallet2, engine.ResultInvalidAccount, false},
		{"pending/xml bank for a token destination", engine.StatusPending, acceptBank, engine.ResultValidation, false},
		{"pending/xml chain", engine.StatusPending, acceptChain, engine.ResultOK, true},
		{"pending/xml chain, address of another chain", engine.StatusPending, acceptChainBad, engine.ResultValidation, false},
		{"pending/no settlement", engine.StatusPending, acceptNoTarget, engine.ResultValidation, false},
		{"awaiting_payment/same input repeated", engine.StatusAwaitingPayment, acceptJSONA, engine.ResultOK, false},
		{"awaiting_payment/other pool account", engine.StatusAwaitingPayment, acceptJSONB, engine.ResultInvalidState, false},
		{"awaiting_payment/other wallet", engine.StatusAwaitingPayment, acceptWallet2, engine.ResultInvalidState, false},
		{"awaiting_payment/account not of the quote", engine.StatusAwaitingPayment, acceptForeign, engine.ResultInvalidState, false},
		{"awaiting_payment/xml bank", engine.StatusAwaitingPayment, acceptBank, engine.ResultInvalidState, false},
		{"completed/same input as accepted", engine.StatusCompleted, acceptJSONA, engine.ResultInvalidState, false},
		{"completed/bank", engine.StatusCompleted, acceptBank, engine.ResultInvalidState, false},
		{"cancelled/json", engine.StatusCancelled, acceptJSONA, engine.ResultInvalidState, false},
		{"cancelled/account not of the quote", engine.StatusCancelled, acceptForeign, engine.ResultInvalidState, false},
		{"expired/json", engine.StatusExpired, acceptJSONA, engine.ResultInvalidState, false},
		{"expired/bank", engine.StatusExpired, acceptBank, engine.ResultInvalidState, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newTestQuote(t, tc.status)
			before := q.Clone()
			now := decisionTime(q)
			res, ev := q.Accept(tc.cmd, now, quoteWindowMillis)
			if res != tc.want {
				t.Errorf("result: got %s, want %s", res, tc.want)
			}
			if !reflect.DeepEqual(q, before) {
				t.Errorf("Accept changed the quote: got %+v, want %+v", q, before)
			}
			if !tc.wantEvent {
				if ev != nil {
					t.Errorf("event: got %+v, want none", ev)
				}
				return
			}
			want := &engine.QuoteAccepted{At: now, Quote: q.ID, PoolAccount: tc.cmd.PoolAccount,
				Settlement: tc.cmd.Settlement, ExpiresAt: now + quoteWindowMillis}
			if !reflect.DeepEqual(ev, want) {
				t.Fatalf("event: got %+v, want %+v", ev, want)
			}
			if release := q.Apply(ev); release {
				t.Errorf("applying an accept released the holds")
			}
			got := struct {
				Status                           engine.Status
				UpdatedAt, AcceptedAt, ExpiresAt int64
				PoolAccount                      engine.AccountID
				Settlement                       engine.Settlement
				SecondsLeft                      int64
			}{q.Status, q.UpdatedAt, q.AcceptanceOrZero().At, q.ExpiresAt, q.AcceptanceOrZero().PoolAccount, q.SettlementOrZero(), q.SecondsLeft(now)}
			wantQuote := got
			wantQuote.Status, wantQuote.UpdatedAt, wantQuote.AcceptedAt = engine.StatusAwaitingPayment, now, now
			wantQuote.ExpiresAt, wantQuote.PoolAccount, wantQuote.Settlement = now+quoteWindowMillis, tc.cmd.PoolAccount, tc.cmd.Settlement
			wantQuote.SecondsLeft = quoteWindowMillis / 1000
			if got != wantQuote {
				t.Errorf("after apply: got %+v, want %+v", got, wantQuote)
			}
			// The same input again is a safe repeat: OK, no event.
			if res, ev := q.Accept(tc.cmd, now+1, quoteWindowMillis); res != engine.ResultOK || ev != nil {
				t.Errorf("repeat: got %s %+v, want OK and no event", res, ev)
			}
		})
	}
}

// TestQuoteCancelComplete: cancel and complete from every status.
func TestQuoteCancelComplete(t *testing.T) {
	type decision struct {
		want       engine.Result
		wantEvent  bool
		wantStatus engine.Status // after applying the event
	}
	tests := []struct {
		status   engine.Status
		cancel   decision
		complete decision
	}{
		{engine.StatusPending,
			decision{engine.ResultOK, true, engine.StatusCancelled},
			decision{engine.ResultInvalidState, false, engine.StatusPending}},
		{engine.StatusAwaitingPayment,
			decision{engine.ResultOK, true, engine.StatusCancelled},
			decision{engine.ResultOK, true, engine.StatusCompleted}},
		{engine.StatusCompleted,
			decision{engine.ResultInvalidState, false, engine.StatusCompleted},
			decision{engine.ResultOK, false, engine.StatusCompleted}},
		{engine.StatusCancelled,
			decision{engine.ResultOK, false, engine.StatusCancelled},
			decision{engine.ResultInvalidState, false, engine.StatusCancelled}},
		{engine.StatusExpired,
			decision{engine.ResultInvalidState, false, engine.StatusExpired},
			decision{engine.ResultInvalidState, false, engine.StatusExpired}},
	}
	for _, tc := range tests {
		for _, op := range []string{"cancel", "complete"} {
			t.Run(tc.status.String()+"/"+op, func(t *testing.T) {
				q := newTestQuote(t, tc.status)
				before := q.Clone()
				now := decisionTime(q)
				var (
					res  engine.Result
					ev   engine.Event
					want decision
				)
				if op == "cancel" {
					r, e := q.Cancel(now)
					res, want = r, tc.cancel
					if e != nil {
						ev = e
						if *e != (engine.QuoteCancelled{At: now, Quote: q.ID}) {
							t.Errorf("event: got %+v", e)
						}
					}
				} else {
					r, e := q.Complete(now)
					res, want = r, tc.complete
					if e != nil {
						ev = e
						if *e != (engine.QuoteCompleted{At: now, Quote: q.ID}) {
							t.Errorf("event: got %+v", e)
						}
					}
				}
				if res != want.want {
					t.Errorf("result: got %s, want %s", res, want.want)
				}
				if got := ev != nil; got != want.wantEvent {
					t.Fatalf("event: got %v, want an event: %v", ev, want.wantEvent)
				}
				if !reflect.DeepEqual(q, before) {
					t.Errorf("the decision changed the quote")
				}
				if ev == nil {
					return
				}
				release := q.Apply(ev)
				if got, want := release, op == "cancel"; got != want {
					t.Errorf("release: got %v, want %v", got, want)
				}
				if q.Status != want.wantStatus || q.UpdatedAt != now {
					t.Errorf("after apply: status %s updated %d, want %s %d", q.Status, q.UpdatedAt, want.wantStatus, now)
				}
				if got := q.SecondsLeft(now); got != 0 {
					t.Errorf("SecondsLeft of a terminal quote: %d", got)
				}
				// The same operation again is a safe repeat; the other is refused.
				var again engine.Result
				var againEvent bool
				if op == "cancel" {
					r, e := q.Cancel(now + 1)
					again, againEvent = r, e != nil
				} else {
					r, e := q.Complete(now + 1)
					again, againEvent = r, e != nil
				}
				if again != engine.ResultOK || againEvent {
					t.Errorf("repeat %s: got %s (event %v), want OK without event", op, again, againEvent)
				}
				if res, e := q.Accept(acceptJSONA, now+1, quoteWindowMillis); res != engine.ResultInvalidState || e != nil {
					t.Errorf("accept after %s: got %s %v, want INVALID_STATE", op, res, e)
				}
			})
		}
	}
}

// TestQuoteAllowedFrom: the 409 details list exactly the statuses from which
// an operation makes an event.
func TestQuoteAllowedFrom(t *testing.T) {
	for _, st := range engine.Statuses {
		q := newTestQuote(t, st)
		now := decisionTime(q)
		_, accept := q.Accept(acceptJSONB, now, quoteWindowMillis)
		_, cancel := q.Cancel(now)
		_, complete := q.Complete(now)
		for _, tc := range []struct {
			op      string
			made    bool
			allowed []engine.Status
		}{
			{"accept", accept != nil, engine.Accepting.From},
			{"cancel", cancel != nil, engine.Cancelling.From},
			{"complete", complete != nil, engine.Completing.From},
		} {
			if got, want := tc.made, slices.Contains(tc.allowed, st); got != want {
				t.Errorf("%s from %s: made an event %v, allowed-from says %v", tc.op, st, got, want)
			}
		}
	}
}

// TestLifecycleTable pins the lifecycle's one table to spec §4, written
// out here independently: which statuses each operation moves a quote from,
// and to which status Apply then moves it.
func TestLifecycleTable(t *testing.T) {
	P, A := engine.StatusPending, engine.StatusAwaitingPayment
	for _, tc := range []struct {
		name  string
		row   engine.Transition
		from  []engine.Status
		to    engine.Status
		event func(q *engine.Quote) engine.Event
	}{
		{"accept", engine.Accepting, []engine.Status{P}, A, func(q *engine.Quote) engine.Event { return acceptedEvent(q) }},
		{"cancel", engine.Cancelling, []engine.Status{P, A}, engine.StatusCancelled,
			func(q *engine.Quote) engine.Event { return &engine.QuoteCancelled{At: decisionTime(q), Quote: q.ID} }},
		{"complete", engine.Completing, []engine.Status{A}, engine.StatusCompleted,
			func(q *engine.Quote) engine.Event { return &engine.QuoteCompleted{At: decisionTime(q), Quote: q.ID} }},
		{"expire", engine.Expiring, []engine.Status{P, A}, engine.StatusExpired,
			func(q *engine.Quote) engine.Event { return &engine.QuoteExpired{At: q.ExpiresAt, Quote: q.ID} }},
	} {
		if !slices.Equal(tc.row.From, tc.from) || tc.row.To != tc.to {
			t.Errorf("%s: table says %v → %s, spec §4 %v → %s", tc.name, tc.row.From, tc.row.To, tc.from, tc.to)
		}
		for _, st := range tc.from {
			q := newTestQuote(t, st)
			release := q.Apply(tc.event(q))
			if q.Status != tc.to {
				t.Errorf("%s from %s: Apply moved the quote to %s, want %s", tc.name, st, q.Status, tc.to)
			}
			if want := tc.to == engine.StatusCancelled || tc.to == engine.StatusExpired; release != want {
				t.Errorf("%s from %s: Apply says release %v, want %v", tc.name, st, release, want)
			}
		}
	}
}

// TestQuoteExpireIfDue: only open quotes, only at or after the current
// deadline (the TTL while pending, the payment window once accepted).
func TestQuoteExpireIfDue(t *testing.T) {
	tests := []struct {
		status engine.Status
		offset int64 // from the current deadline
		want   bool
	}{
		{engine.StatusPending, -quoteTTLMillis, false},
		{engine.StatusPending, -1, false},
		{engine.StatusPending, 0, true},
		{engine.StatusPending, 1, true},
		{engine.StatusPending, 10 * quoteWindowMillis, true},
		{engine.StatusAwaitingPayment, -1, false},
		{engine.StatusAwaitingPayment, 0, true},
		{engine.StatusAwaitingPayment, 1, true},
		{engine.StatusCompleted, -1, false},
		{engine.StatusCompleted, 0, false},
		{engine.StatusCompleted, quoteWindowMillis, false},
		{engine.StatusCancelled, 0, false},
		{engine.StatusCancelled, quoteWindowMillis, false},
		{engine.StatusExpired, 0, false},
		{engine.StatusExpired, quoteWindowMillis, false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%+d", tc.status, tc.offset), func(t *testing.T) {
			q := newTestQuote(t, tc.status)
			now := q.ExpiresAt + tc.offset
			ev := q.ExpireIfDue(now)
			if got := ev != nil; got != tc.want {
				t.Fatalf("ExpireIfDue(deadline%+d): got %v, want an event: %v", tc.offset, ev, tc.want)
			}
			if ev == nil {
				return
			}
			if *ev != (engine.QuoteExpired{At: now, Quote: q.ID}) {
				t.Errorf("event: got %+v", ev)
			}
			if release := q.Apply(ev); !release || q.Status != engine.StatusExpired || q.UpdatedAt != now {
				t.Errorf("after apply: release %v status %s updated %d", release, q.Status, q.UpdatedAt)
			}
			if again := q.ExpireIfDue(now + 1); again != nil {
				t.Errorf("an expired quote expired again")
			}
		})
	}
	// The payment window replaces the TTL: an accepted quote does not
	// expire at its old TTL deadline.
	q := newTestQuote(t, engine.StatusAwaitingPayment)
	if ev := q.ExpireIfDue(quoteCreatedAt + quoteTTLMillis); ev != nil {
		t.Errorf("accepted quote expired at its TTL deadline")
	}
}

// TestQuoteSecondsLeft: seconds to the current deadline, rounded up (so a
// fresh quote shows its whole TTL and an open quote never shows 0); 0 when
// past due or terminal.
func TestQuoteSecondsLeft(t *testing.T) {
	tests := []struct {
		status engine.Status
		before int64 // milliseconds before the deadline
		want   int64
	}{
		{engine.StatusPending, quoteTTLMillis, 300},
		{engine.StatusPending, 299_999, 300},
		{engine.StatusPending, 299_000, 299},
		{engine.StatusPending, 1_001, 2},
		{engine.StatusPending, 1_000, 1},
		{engine.StatusPending, 999, 1},
		{engine.StatusPending, 1, 1},
		{engine.StatusPending, 0, 0},
		{engine.StatusPending, -5_000, 0},
		{engine.StatusAwaitingPayment, quoteWindowMillis, 1800},
		{engine.StatusAwaitingPayment, 60_500, 61},
		{engine.StatusAwaitingPayment, -1, 0},
		{engine.StatusCompleted, 60_000, 0},
		{engine.StatusCancelled, 60_000, 0},
		{engine.StatusExpired, 60_000, 0},
	}
	for _, tc := range tests {
		q := newTestQuote(t, tc.status)
		if got := q.SecondsLeft(q.ExpiresAt - tc.before); got != tc.want {
			t.Errorf("%s, %d ms before the deadline: got %d, want %d", tc.status, tc.before, got, tc.want)
		}
	}
}

// TestQuoteApplyAsserts: Apply is for events decided on this state; any
// other transition is a programmer bug and panics.
func TestQuoteApplyAsserts(t *testing.T) {
	events := map[string]func(q *engine.Quote) engine.Event{
		"accept":   func(q *engine.Quote) engine.Event { return acceptedEvent(q) },
		"cancel":   func(q *engine.Quote) engine.Event { return &engine.QuoteCancelled{At: decisionTime(q), Quote: q.ID} },
		"expire":   func(q *engine.Quote) engine.Event { return &engine.QuoteExpired{At: q.ExpiresAt, Quote: q.ID} },
		"complete": func(q *engine.Quote) engine.Event { return &engine.QuoteCompleted{At: decisionTime(q), Quote: q.ID} },
		"deposit":  func(q *engine.Quote) engine.Event { return &engine.PoolDeposited{Pool: engine.PoolID{0xA}, Amount: 1} },
		"created":  func(q *engine.Quote) engine.Event { return &engine.QuoteCreated{Quote: q.ID} },
	}
	allowed := map[string][]engine.Status{
		"accept":   engine.Accepting.From,
		"cancel":   engine.Cancelling.From,
		"expire":   engine.Expiring.From,
		"complete": engine.Completing.From,
	}
	for _, st := range engine.Statuses {
		for name, event := range events {
			wantPanic := !slices.Contains(allowed[name], st)
			t.Run(st.String()+"/"+name, func(t *testing.T) {
				q := newTestQuote(t, st)
				ev := event(q)
				panicked := func() (p any) {
					defer func() { p = recover() }()
					q.Apply(ev)
					return nil
				}()
				if got := panicked != nil; got != wantPanic {
					t.Errorf("Apply(%s) from %s: panicked %v (%v), want panic %v", ev.Type(), st, got, panicked, wantPanic)
				}
			})
		}
	}
}

func TestStatusStrings(t *testing.T) {
	want := map[engine.Status]string{
		engine.StatusPending: "pending", engine.StatusAwaitingPayment: "awaiting_payment",
		engine.StatusCompleted: "completed", engine.StatusCancelled: "cancelled", engine.StatusExpired: "expired",
	}
	for _, st := range engine.Statuses {
		if got := st.String(); got != want[st] {
			t.Errorf("Status(%d).String() = %q, want %q", st, got, want[st])
		}
		if got, want := st.Open(), st == engine.StatusPending || st == engine.StatusAwaitingPayment; got != want {
			t.Errorf("%s.Open() = %v, want %v", st, got, want)
		}
	}
	if len(engine.Statuses) != len(want) {
		t.Errorf("Statuses lists %d, want %d", len(engine.Statuses), len(want))
	}
}
