package engine

import (
	"maps"
	"slices"
)

// Clone returns a State equal to s that shares nothing either may change:
// applying events to one leaves the other as it was. A new cluster leader
// starts its actors from a clone of its replica (which keeps applying the
// log), instead of encoding and decoding it (5–7 µs a quote against about
// 1 µs: BenchmarkReplicaCopy).
//
// What it shares is immutable: strings, the markets, a quote's
// allocations, chat, acceptance and pay-in (a sighting replaces the
// pay-in), receipts, and the leading part of append-only slices (wallet
// postings, a client's wallets, the audit trail), whose copies are clipped
// to their length so that an append to either reallocates instead of
// writing into the other's array. Everything a method changes in place —
// quotes (into slabs of the clone's own), pools, books, tickers, accounts,
// keys, operators, webhook outboxes, receipt lists, the maps and the
// Idempotency-Key index (to the clone's quotes) — is copied. Effects
// being collected are not carried over, and the clone collects none (as a
// decoded snapshot).
//
// TestCloneIsolated applies different events to a state and its clone and
// requires each to end as a replay of its own events would.
func (s *State) Clone() *State {
	c := &State{
		Keys:            clonePointees(s.Keys),
		Clients:         make(map[ClientID]*Client, len(s.Clients)),
		Pools:           make(map[PoolID]*Pool, len(s.Pools)),
		Books:           make(map[BookKey]*Book, len(s.Books)),
		Tickers:         make(map[BookKey]*Ticker, len(s.Tickers)),
		Treasuries:      make(map[Mode]*Treasury, len(s.Treasuries)),
		Quotes:          make(map[QuoteID]*Quote, len(s.Quotes)),
		Webhooks:        make(map[WebhookID]*Webhook, len(s.Webhooks)),
		Operators:       clonePointees(s.Operators),
		Audit:           slices.Clip(s.Audit),
		Markets:         s.Markets,
		PayIns:          maps.Clone(s.PayIns),
		PayInNext:       maps.Clone(s.PayInNext),
		webhooksOf:      make(map[ClientID][]*Webhook, len(s.webhooksOf)),
		accountPool:     maps.Clone(s.accountPool),
		LastAt:          s.LastAt,
		ForgottenBefore: s.ForgottenBefore,
	}
	for id, cl := range s.Clients {
		cc := *cl
		cc.Wallets = slices.Clip(cl.Wallets)
		c.Clients[id] = &cc
	}
	for id, p := range s.Pools {
		c.Pools[id] = p.Clone()
	}
	for key, b := range s.Books {
		c.Books[key] = b.clone()
	}
	for key, t := range s.Tickers {
		c.Tickers[key] = t.Clone()
	}
	for m, t := range s.Treasuries {
		c.Treasuries[m] = t.clone()
	}
	// The quotes in slabs, as a replay allocates them (allocQuote), read
	// in the original's memory order and kept in it.
	for q := range s.QuotesInOrder() {
		cq := c.allocQuote()
		*cq = *q
		c.Quotes[q.ID] = cq
	}
	// Each Idempotency-Key to the clone's copy of its quote (every quote a
	// key names is in Quotes: ForgetEnded drops the key with its quote).
	c.Idempotency = s.Idempotency.Remapped(func(q *Quote) *Quote { return c.Quotes[q.ID] })
	for id, w := range s.Webhooks {
		c.Webhooks[id] = w.clone()
	}
	for client, hooks := range s.webhooksOf {
		own := make([]*Webhook, len(hooks))
		for j, w := range hooks {
			own[j] = c.Webhooks[w.ID]
		}
		c.webhooksOf[client] = own
	}
	return c
}

// clone is b with entries and index of its own.
func (b *Book) clone() *Book {
	c := *b
	c.entries = slices.Clone(b.entries)
	c.index = maps.Clone(b.index)
	return &c
}

// clone is t with every account, wallet index and receipt list of its own;
// postings are append-only (Forget replaces a trimmed history with a copy)
// and receipts immutable, so they are shared, clipped.
func (t *Treasury) clone() *Treasury {
	c := &Treasury{
		Mode:       t.Mode,
		Wallets:    clonePointees(t.Wallets),
		byClient:   clonePointees(t.byClient),
		Clearing:   t.Clearing,
		Credit:     maps.Clone(t.Credit),
		History:    make(map[AccountID][]Posting, len(t.History)),
		PostingSeq: t.PostingSeq,
		Receipts:   maps.Clone(t.Receipts),
		receiptsOf: make(map[QuoteID][]*PaymentReceived, len(t.receiptsOf)),
	}
	for id, h := range t.History {
		c.History[id] = slices.Clip(h)
	}
	for q, rs := range t.receiptsOf {
		c.receiptsOf[q] = slices.Clone(rs) // Forget filters these in place
	}
	return c
}

// clone is w with an outbox of its own.
func (w *Webhook) clone() *Webhook {
	c := *w
	c.owed = slices.Clone(w.owed)
	c.owedAt = maps.Clone(w.owedAt)
	return &c
}

// clonePointees is m with a copy of each value it points to.
func clonePointees[K comparable, V any](m map[K]*V) map[K]*V {
	c := make(map[K]*V, len(m))
	for k, v := range m {
		own := *v
		c[k] = &own
	}
	return c
}
