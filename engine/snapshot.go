package engine

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/oja-exchange/oja/internal/hashindex"
)

// A snapshot is the whole State in the event codec's primitives, so that
// recovery can start from it instead of from the first event. Derivable
// parts (books, idempotency index, account index, quote totals) are rebuilt
// on decode rather than stored, so a snapshot cannot disagree with itself.
// Decode(Encode(s)).Hash() == s.Hash() (tested).

// snapshotVersion 2 adds, after the quotes, ForgottenBefore and the
// webhooks with their outboxes; version 3 the markets in force (first, so
// their currencies are registered before anything names one), clearing
// shards and tickers as lists instead of one per default currency and
// pair; version 4 (funds first) each owed payin.received event's receipt
// and, at the end, each treasury's credit limits, statements and receipts.
// Versions 1 to 3 still decode (with no credit, statements or receipts:
// they had none). Version 5 adds, at the end, the expiry of each rolled
// key (KeyRolled) and each rotated webhook's previous secret
// (WebhookSecretRotated); earlier versions had none. Version 6 adds, at
// the end, each key's recorded last use (KeysUsed); version 7 the named
// operators and the audit trail kept (operator.go). Version 8 changes no
// field: it writes the quotes by creation time (then id) instead of by id,
// so that a decode assigns each Idempotency-Key its newest quote by
// overwriting, without first looking up the older quote it replaces, and
// lays the quotes out in memory as a replay would. Version 9 changes no
// field either: each quote starts with a fixed-width record
// (snapshot_quote.go), read without a varint loop. Version 10 (the
// identity of money, payments.go) writes each statement posting's Of and
// each treasury's receipts cutoff instead of its receipts, each audit
// line's details and, at the end, every payment recorded (State.Payments)
// and each rolled key's predecessor. A version 4 to 9 snapshot's receipts
// become payments recorded before identities, each with the sequence of
// its statement posting. Version 11 adds, at the end, each watched
// chain's cursor and unapplied deposits (chain.go). Version 12 writes the
// currency of each payment with no wallet (money held in suspense, or
// returned from it) and adds, at the end, each treasury's suspense
// balances and the receipts it holds (suspense.go).
const snapshotVersion = 12

// snapshotCountMax bounds every count in a snapshot, so hostile bytes
// cannot make decoding allocate without bound.
const snapshotCountMax = 1 << 28

// EncodeState encodes s. Entities are written in id order: equal states
// encode to equal bytes.
func EncodeState(s *State) []byte { return AppendState(make([]byte, 0, 1<<16), s) }

// AppendState appends s encoded to buf: a caller that snapshots again and
// again reuses one buffer instead of making a state-sized garbage each time.
func AppendState(buf []byte, s *State) []byte { return appendState(buf, s, snapshotVersion) }

// appendState encodes s as snapshot version (7, 8 or 9: they differ only
// in the quotes' order and layout; tests write 7 and 8 to check they are
// still read).
func appendState(buf []byte, s *State, version uint8) []byte {
	e := encoder{buf: buf}
	e.byte1(version)
	e.varint(s.LastAt)
	e.markets(s.Markets)
	if version >= 10 {
		e.sandboxCollection(s.Markets)
	}
	e.uvarint(uint64(len(s.Clients)))
	for _, id := range sortedKeys(s.Clients) {
		c := s.Clients[id]
		e.id(c.ID)
		e.str(c.Name)
		e.varint(c.CreatedAt)
		e.uvarint(uint64(len(c.Wallets)))
		for _, w := range c.Wallets {
			e.byte1(uint8(w.Mode))
			e.byte1(uint8(w.Currency))
			e.id(w.Account)
		}
	}
	e.uvarint(uint64(len(s.Keys)))
	for _, id := range sortedKeys(s.Keys) {
		k := s.Keys[id]
		e.id(k.ID)
		e.id(k.Client)
		e.byte1(uint8(k.Mode))
		e.hash(k.Hash)
		e.boolean(k.Revoked)
		e.varint(k.CreatedAt)
	}
	e.uvarint(uint64(len(s.Pools)))
	for _, id := range sortedKeys(s.Pools) {
		p := s.Pools[id]
		e.id(p.ID)
		e.byte1(uint8(p.Mode))
		e.str(p.Name)
		e.pair(p.Pair)
		e.rate(p.Rate)
		e.varint(p.RateSetAt)
		e.boolean(p.Active)
		e.id(p.Owner)
		e.varint(p.CreatedAt)
		e.id(p.Liquidity.ID)
		e.amount(p.Liquidity.Balance)
		e.amount(p.Liquidity.Held)
		e.id(p.Proceeds.ID)
		e.amount(p.Proceeds.Balance)
		e.amount(p.ClearingSource)
		e.amount(p.ClearingDestination)
		e.uvarint(p.Accepted)
		e.uvarint(p.Completed)
	}
	for _, m := range Modes {
		t := s.Treasuries[m]
		currencies := KnownCurrencies()
		e.uvarint(uint64(len(currencies)))
		for _, c := range currencies {
			e.byte1(uint8(c))
			e.amount(t.Clearing[c])
		}
		e.uvarint(uint64(len(t.Wallets)))
		for _, id := range sortedKeys(t.Wallets) {
			e.id(id)
			e.amount(t.Wallets[id].Balance)
			e.amount(t.Wallets[id].Held)
		}
		pairs := make([]Pair, 0, len(s.Tickers)/2)
		for key := range s.Tickers {
			if key.Mode == m {
				pairs = append(pairs, key.Pair)
			}
		}
		slices.SortFunc(pairs, ComparePairs)
		e.uvarint(uint64(len(pairs)))
		for _, p := range pairs {
			e.pair(p)
			encodeTicker(&e, s.Tickers[BookKey{m, p}])
		}
	}
	e.uvarint(uint64(s.Quotes.Len()))
	quotes, quoteBytes := quotesToEncode(s, version)
	// NB: the buffer grows once, to about the snapshot's size: grown by
	// append, a 1M-quote snapshot (330 MB) was copied again and again
	// (Go grows a large slice by a quarter), 1.0-4.2 s of EncodeState
	// (median 2.2 s) against 0.15-0.2 s into a buffer already that size.
	e.buf = slices.Grow(e.buf, quoteBytes+restBytesHint(s))
	for _, q := range quotes {
		if version >= 9 {
			encodeQuoteFixed(&e, q)
		} else {
			encodeQuote(&e, q)
		}
	}
	e.varint(s.ForgottenBefore)
	hooks := s.WebhooksInOrder()
	e.uvarint(uint64(len(hooks)))
	for _, w := range hooks {
		e.webhookCreated(&WebhookCreated{Webhook: w.ID, Client: w.Client, Mode: w.Mode, URL: w.URL, Events: w.Events, Secret: w.Secret})
		e.varint(w.CreatedAt)
		e.uvarint(w.Dropped)
		owed := w.OwedEvents()
		e.uvarint(uint64(len(owed)))
		for i := range owed {
			o := &owed[i]
			e.id(o.ID)
			e.byte1(uint8(o.Kind))
			e.varint(o.At)
			if o.Kind == WebhookPayInReceived { // version 4: the receipt, not a quote
				e.receipt(o.Receipt)
			} else {
				encodeQuote(&e, &o.Quote)
			}
		}
	}
	// version 3: after the webhooks, each pay-in series' next index.
	series := slices.SortedFunc(maps.Keys(s.PayInNext), func(a, b PayInSeries) int {
		return cmp.Or(cmp.Compare(a.Currency, b.Currency), cmp.Compare(a.Chain, b.Chain))
	})
	e.uvarint(uint64(len(series)))
	for _, k := range series {
		e.byte1(uint8(k.Currency))
		e.byte1(uint8(k.Chain))
		e.uvarint(uint64(s.PayInNext[k]))
	}
	// version 4: each treasury's credit limits, statements and receipts.
	for _, m := range Modes {
		encodeTreasuryFunds(&e, s.Treasuries[m], version)
	}
	// Version 5: the expiry of every rolled key.
	encodeKeyTimes(&e, s, func(k *Key) int64 { return k.ExpiresAt })
	// and each rotated webhook's previous secret.
	var rotated []*Webhook
	for _, w := range s.WebhooksInOrder() {
		if w.PreviousUntil != 0 {
			rotated = append(rotated, w)
		}
	}
	e.uvarint(uint64(len(rotated)))
	for _, w := range rotated {
		e.id(w.ID)
		e.str(w.PreviousSecret)
		e.varint(w.PreviousUntil)
	}
	// Version 6: when each key was last used, of those recorded.
	encodeKeyTimes(&e, s, func(k *Key) int64 { return k.LastUsedAt })
	// Version 7: the operators, then the audit trail kept, oldest first.
	e.uvarint(uint64(len(s.Operators)))
	for _, id := range sortedKeys(s.Operators) {
		o := s.Operators[id]
		e.id(o.ID)
		e.str(o.Name)
		e.byte1(uint8(o.Role))
		e.hash(o.Hash)
		e.varint(o.CreatedAt)
		e.varint(o.RevokedAt)
	}
	e.uvarint(uint64(len(s.Audit)))
	for _, a := range s.Audit {
		e.id(a.ID)
		e.varint(a.At)
		e.str(a.Operator)
		e.id(a.OperatorID)
		e.str(a.Action)
		e.str(a.Target)
		e.uvarint(uint64(a.Status))
		if version >= 10 {
			e.boolean(a.Details != nil)
			if a.Details != nil {
				e.auditDetails(a.Details)
			}
		}
	}
	if version >= 10 {
		encodePayments(&e, s.Payments)
		var rolled []KeyID
		for _, id := range sortedKeys(s.Keys) {
			if !s.Keys[id].RolledFrom.IsZero() {
				rolled = append(rolled, id)
			}
		}
		e.uvarint(uint64(len(rolled)))
		for _, id := range rolled {
			e.id(id)
			e.id(s.Keys[id].RolledFrom)
		}
	}
	if version >= 11 {
		chains := slices.Sorted(maps.Keys(s.Chains))
		e.uvarint(uint64(len(chains)))
		for _, ch := range chains {
			e.byte1(uint8(ch))
			e.chainState(s.Chains[ch])
		}
	}
	if version >= 12 {
		for _, m := range Modes {
			t := s.Treasuries[m]
			var held []Currency
			for c, v := range t.Suspense {
				if v != 0 {
					held = append(held, Currency(c))
				}
			}
			e.uvarint(uint64(len(held)))
			for _, c := range held {
				e.byte1(uint8(c))
				e.amount(t.Suspense[c])
			}
			list := t.UnappliedList()
			slices.Reverse(list) // oldest first
			e.uvarint(uint64(len(list)))
			for _, u := range list {
				e.unapplied(u)
			}
		}
	}
	return e.buf
}

// encodePayments writes every payment in log order.
func encodePayments(e *encoder, ps *Payments) {
	e.uvarint(uint64(ps.Len()))
	for p := range ps.All() {
		e.byte1(uint8(p.Kind))
		e.byte1(uint8(p.Mode))
		e.uvarint(p.Seq)
		e.id(p.Account)
		e.amount(p.Amount)
		if p.Kind >= PaymentUnapplied { // no wallet to take it from (version 12)
			e.byte1(uint8(p.Currency))
		}
		e.varint(p.At)
		e.boolean(p.Legacy)
		if p.Legacy {
			e.byte1(uint8(p.Identity.Kind))
			e.byte1(uint8(p.Identity.Chain))
			e.byte1(uint8(p.Identity.Currency))
			e.str(p.Identity.Ref)
		} else {
			e.identity(p.Identity)
		}
		e.str(p.Reference)
		e.varint(p.ReversedAt)
		if p.Kind == PaymentReceipt {
			e.byte1(uint8(p.Method))
			e.id(p.Quote)
			e.id(p.Address)
		} else {
			e.str(p.IdempotencyKey)
			e.hash(p.RequestHash)
		}
	}
}

// decodePayments reads what encodePayments wrote, after the treasuries
// (each payment's wallet must be one of them).
func decodePayments(d *decoder, s *State, count func() uint64) {
	for n := count(); n > 0 && d.err == nil; n-- {
		p := &Payment{Kind: PaymentKind(d.byte1()), Mode: d.mode(), Seq: d.uvarint(), Account: d.id(), Amount: d.amount()}
		walletless := p.Kind >= PaymentUnapplied
		if walletless {
			p.Currency = d.currency()
		}
		p.At = d.varint()
		if p.Legacy = d.boolean(); p.Legacy {
			p.Identity = Identity{Kind: IdentityKind(d.byte1()), Chain: Chain(d.byte1()), Currency: Currency(d.byte1()), Ref: d.str()}
		} else {
			p.Identity = d.identity()
		}
		p.Reference, p.ReversedAt = d.str(), d.varint()
		if p.Kind == PaymentReceipt {
			p.Method, p.Quote, p.Address = ReceiptMethod(d.byte1()), d.id(), d.id()
		} else {
			p.IdempotencyKey, p.RequestHash = d.str(), d.hash()
		}
		if walletless {
			if d.err != nil || p.Kind > PaymentReturn || p.Amount <= 0 || !p.Account.IsZero() || p.Seq != 0 {
				d.fail()
				return
			}
			s.Payments.record(p)
			continue
		}
		w, ok := s.Treasuries[p.Mode].Wallets[p.Account]
		if d.err != nil || !ok || p.Kind < PaymentReceipt || p.Kind > PaymentPayout || p.Amount <= 0 || p.Seq == 0 {
			d.fail()
			return
		}
		p.Client, p.Currency = ClientID(w.Owner), w.Currency
		s.Payments.record(p)
		if t := s.Treasuries[p.Mode]; p.Kind == PaymentReceipt && p.At >= t.receiptsFrom {
			t.receiptsOf[p.Quote] = append(t.receiptsOf[p.Quote], p)
		}
	}
}

// quotesToEncode is s's quotes in a snapshot's order: from version 8 by
// creation time, then id; before, by id. size is about what they encode
// to (quoteBytesHint).
func quotesToEncode(s *State, version uint8) (quotes []*Quote, size int) {
	// NB: sorted by keys copied beside the pointers: comparing through the
	// pointers would miss the cache at every comparison. QuotesInOrder is
	// nearly in creation order already, which the sort finds fast.
	type entry struct {
		at int64
		id QuoteID
		q  *Quote
	}
	entries := make([]entry, 0, s.Quotes.Len())
	for q := range s.QuotesInOrder() {
		entries = append(entries, entry{q.CreatedAt, q.ID, q})
		size += quoteBytesHint(q)
	}
	slices.SortFunc(entries, func(a, b entry) int {
		if version >= 8 {
			return creationOrder(a.at, a.id, b.at, b.id)
		}
		return bytes.Compare(a.id[:], b.id[:])
	})
	quotes = make([]*Quote, len(entries))
	for i := range entries {
		quotes[i] = entries[i].q
	}
	return quotes, size
}

// quoteBytesHint is about the bytes q encodes to, at least version 9's
// (the varints of the earlier versions' layout take less than its fixed
// fields): the fixed records and strings exactly, a bound for the rest.
func quoteBytesHint(q *Quote) int {
	n := quoteFixedLen + len(q.Reference) + len(q.IdempotencyKey) + 1 // + the chat's flag
	for i := range q.Allocations {
		a := &q.Allocations[i]
		n += allocationFixedLen + len(a.PoolName) + len(a.Reference)
	}
	if c := q.Chat; c != nil {
		n += 6*binary.MaxVarintLen64 + len(c.ConversationID) + len(c.ChatQuoteID) + len(c.ListingID) +
			len(c.NegotiationStartedAt) + len(c.QuoteSentAt) + 19
	}
	if a := q.Accepted; a != nil {
		st := &a.Settlement
		n += 2*binary.MaxVarintLen64 + 33 + 4*binary.MaxVarintLen16 + len(st.AccountName) + len(st.AccountNumber) +
			len(st.BankCode) + len(st.Address)
	}
	if p := q.PayIn; p != nil {
		n += 16 + 2 + 5*binary.MaxVarintLen64 + len(p.Deposit) + len(p.SeenTx)
	}
	return n
}

// restBytesHint is about the bytes of what follows the quotes: the parts
// that grow with the traffic — the webhooks' outboxes (a quote or receipt
// each), the statements' postings and the receipts (a posting or receipt
// is some 60 bytes and its reference), the audit trail — and a margin for
// the rest.
func restBytesHint(s *State) int {
	n := 64 << 10
	for _, list := range s.webhooksOf {
		for _, w := range list {
			n += len(w.owed) * 512
		}
	}
	for _, t := range s.Treasuries {
		for _, h := range t.History {
			n += len(h) * 96
		}
	}
	return n + len(s.Audit)*160 + s.Payments.Len()*160
}

// creationOrder compares two quotes, by creation time and id, in the
// order snapshot version 8 writes them.
func creationOrder(at1 int64, id1 QuoteID, at2 int64, id2 QuoteID) int {
	return cmp.Or(cmp.Compare(at1, at2), bytes.Compare(id1[:], id2[:]))
}

// encodeKeyTimes writes the keys whose time of(key) is set, in id order:
// a count, then each key's id and that time.
func encodeKeyTimes(e *encoder, s *State, of func(*Key) int64) {
	var ids []KeyID
	for _, id := range sortedKeys(s.Keys) {
		if of(s.Keys[id]) != 0 {
			ids = append(ids, id)
		}
	}
	e.uvarint(uint64(len(ids)))
	for _, id := range ids {
		e.id(id)
		e.varint(of(s.Keys[id]))
	}
}

// receipt writes a PaymentReceived with its time (the event codec's field
// order).
func (e *encoder) receipt(r *PaymentReceived) {
	e.varint(r.At)
	e.byte1(uint8(r.Method))
	e.id(r.Quote)
	e.id(r.Account)
	e.amount(r.Amount)
	e.str(r.Reference)
	e.id(r.Address)
}

func (d *decoder) receipt() *PaymentReceived {
	r := &PaymentReceived{At: d.varint(), Method: ReceiptMethod(d.byte1()), Quote: d.id(), Account: d.id(),
		Amount: d.amount(), Reference: d.str(), Address: d.id()}
	if r.Method != ReceiptCrypto && r.Method != ReceiptBank || r.Amount <= 0 || r.Reference == "" {
		d.fail()
	}
	return r
}

// encodeTreasuryFunds writes what funds first keeps in a treasury, each
// part in a deterministic order.
func encodeTreasuryFunds(e *encoder, t *Treasury, version uint8) {
	e.uvarint(uint64(len(t.Credit)))
	for _, id := range sortedKeys(t.Credit) {
		e.id(id)
		e.amount(t.Credit[id])
	}
	e.uvarint(t.PostingSeq)
	e.uvarint(uint64(len(t.History)))
	for _, id := range sortedKeys(t.History) {
		h := t.History[id]
		e.id(id)
		e.uvarint(uint64(len(h)))
		for i := range h {
			p := &h[i]
			e.uvarint(p.Seq)
			e.byte1(uint8(p.Type))
			e.amount(p.Amount)
			e.amount(p.BalanceAfter)
			e.id(p.Quote)
			e.str(p.Reference)
			e.varint(p.At)
			if version >= 10 {
				e.uvarint(p.Of)
			}
		}
	}
	if version >= 10 { // the receipts are State.Payments'
		e.varint(t.receiptsFrom)
		return
	}
	// Receipts in log order (by their postings' sequence).
	var receipts []*Payment
	for _, rs := range t.receiptsOf {
		receipts = append(receipts, rs...)
	}
	slices.SortFunc(receipts, func(a, b *Payment) int { return cmp.Compare(a.Seq, b.Seq) })
	e.uvarint(uint64(len(receipts)))
	for _, r := range receipts {
		e.receipt(&PaymentReceived{At: r.At, Method: r.Method, Quote: r.Quote, Account: r.Account, Amount: r.Amount,
			Reference: r.Reference, Address: r.Address})
	}
}

func decodeTreasuryFunds(d *decoder, s *State, t *Treasury, count func() uint64, version uint8) {
	for n := count(); n > 0 && d.err == nil; n-- {
		id, limit := AccountID(d.id()), d.amount()
		if _, ok := t.Wallets[id]; !ok || limit <= 0 {
			d.fail()
		}
		t.Credit[id] = limit
	}
	t.PostingSeq = d.uvarint()
	for n := count(); n > 0 && d.err == nil; n-- {
		id := AccountID(d.id())
		if _, ok := t.Wallets[id]; !ok {
			d.fail()
			return
		}
		postings := count()
		h := make([]Posting, 0, postings)
		for i := uint64(0); i < postings && d.err == nil; i++ {
			p := Posting{Seq: d.uvarint(), Type: PostingType(d.byte1()), Amount: d.amount(), BalanceAfter: d.amount(),
				Quote: d.id(), Reference: d.str(), At: d.varint()}
			if version >= 10 {
				p.Of = d.uvarint()
			}
			if p.Type == 0 || p.Type >= postingTypeEnd || p.Seq > t.PostingSeq || len(h) > 0 && p.Seq <= h[len(h)-1].Seq {
				d.fail()
			}
			h = append(h, p)
		}
		t.History[id] = h
	}
	if version >= 10 {
		t.receiptsFrom = d.varint()
		return
	}
	// Before version 10: the receipts kept, recorded before identities,
	// each with its statement posting's sequence (the statement is kept as
	// long as its receipts are).
	for n := count(); n > 0 && d.err == nil; n-- {
		r := d.receipt()
		w, ok := t.Wallets[r.Account]
		if d.err != nil || !ok {
			d.fail()
			return
		}
		seq := receiptPosting(t.History[r.Account], r)
		if seq == 0 {
			d.fail()
			return
		}
		p := &Payment{Kind: PaymentReceipt, Mode: t.Mode, Seq: seq, Account: r.Account, Client: ClientID(w.Owner),
			Currency: w.Currency, Amount: r.Amount, At: r.At, Method: r.Method, Quote: r.Quote, Address: r.Address,
			Reference: r.Reference, Legacy: true}
		p.Identity = legacyIdentity(r.Method, s.payInChain(r.Address), w.Currency, r.Reference)
		s.Payments.record(p)
		t.receiptsOf[r.Quote] = append(t.receiptsOf[r.Quote], p)
	}
}

// receiptPosting is the sequence of the payin posting of r in a wallet's
// statement h (0: none).
func receiptPosting(h []Posting, r *PaymentReceived) uint64 {
	for i := range h {
		p := &h[i]
		if p.Type == PostingPayIn && p.At == r.At && p.Quote == r.Quote && p.Amount == r.Amount && p.Reference == r.Reference {
			return p.Seq
		}
	}
	return 0
}

func encodeTicker(e *encoder, t *Ticker) {
	e.rate(t.Consensus)
	e.varint(t.ConsensusAt)
	e.boolean(t.HasConsensus)
	e.rate(t.Best)
	e.varint(t.BestSetAt)
	e.boolean(t.HasBest)
	for _, h := range []*RateHistory{&t.ConsensusPast, &t.BestPast} {
		e.uvarint(uint64(len(h.samples)))
		for _, sample := range h.samples {
			e.varint(sample.At)
			e.rate(sample.Rate)
		}
	}
}

func encodeQuote(e *encoder, q *Quote) {
	e.id(q.ID)
	e.id(q.Client)
	e.byte1(uint8(q.Mode))
	e.pair(q.Pair)
	e.byte1(uint8(q.Direction))
	e.amount(q.Amount)
	e.rate(q.ProposedRate)
	e.byte1(uint8(q.Chain))
	e.str(q.Reference)
	e.byte1(uint8(q.Channel))
	e.allocations(q.Allocations)
	e.chat(q.Chat)
	e.str(q.IdempotencyKey)
	e.hash(q.RequestHash)
	e.id(q.Key)
	e.byte1(uint8(q.Status))
	e.varint(q.CreatedAt)
	e.varint(q.UpdatedAt)
	e.varint(q.ExpiresAt)
	e.varint(q.TTL)
	accepted := q.AcceptanceOrZero()
	e.acceptance(&accepted)
	e.boolean(q.PayIn != nil) // version 3
	if p := q.PayIn; p != nil {
		e.quotePayIn(p)
	}
}

// acceptance writes what a quote's accept set.
func (e *encoder) acceptance(a *Acceptance) {
	e.varint(a.At)
	e.id(a.PoolAccount)
	e.settlement(&a.Settlement)
}

func (d *decoder) acceptance() Acceptance {
	return Acceptance{At: d.varint(), PoolAccount: d.id(), Settlement: d.settlement()}
}

// quotePayIn writes a quote's pay-in: as issued, then its sighting.
func (e *encoder) quotePayIn(p *PayIn) {
	e.payIn(p)
	e.varint(p.CreatedAt)
	e.amount(p.SeenAmount)
	e.str(p.SeenTx)
	e.varint(p.SeenAt)
}

func (d *decoder) quotePayIn() *PayIn {
	p := d.payIn(0)
	p.CreatedAt = d.varint()
	p.SeenAmount, p.SeenTx, p.SeenAt = d.amount(), d.str(), d.varint()
	return p
}

// DecodeState rebuilds a State from EncodeState's bytes, indexing its
// quotes as it decodes them (IndexInline). It never panics on hostile bytes.
func DecodeState(b []byte) (*State, error) { return DecodeStateWith(b, IndexInline) }

// DecodeStateWith is DecodeState with the decoded quotes indexed by
// indexing (SlabIndexing): the quotes are decoded a slab at a time and
// every slab is handed to the index's parts, which a caller that owns
// goroutines can run beside the decoding (actors.DecodeState).
func DecodeStateWith(b []byte, indexing SlabIndexing) (*State, error) {
	d := decoder{buf: b, arena: new(bulkArena)}
	version := d.byte1()
	if version < 1 || version > snapshotVersion {
		return nil, fmt.Errorf("%w: unknown snapshot version", ErrCorruptEvent)
	}
	s := NewState()
	s.LastAt = d.varint()
	if version >= 3 {
		m := d.markets()
		if version >= 10 {
			d.sandboxCollection(m)
		}
		if d.err != nil {
			return nil, fmt.Errorf("engine: corrupt snapshot: markets: %w", d.err)
		}
		s.applyMarkets(&MarketsSet{Markets: m})
	}
	count := func() uint64 {
		n := d.uvarint()
		if n > snapshotCountMax || n > uint64(len(d.buf)) {
			d.fail()
			return 0
		}
		return n
	}
	clients := count()
	s.Clients = make(map[ClientID]*Client, clients)
	for n := clients; n > 0 && d.err == nil; n-- {
		ev := &ClientCreated{Client: d.id(), Name: d.str(), At: d.varint()}
		for w := count(); w > 0 && d.err == nil; w-- {
			wa := WalletAccount{Mode: d.mode(), Currency: Currency(d.byte1()), Account: d.id()}
			if !wa.Currency.Valid() {
				d.fail()
			}
			ev.Wallets = append(ev.Wallets, wa)
		}
		if d.err == nil {
			s.Clients[ev.Client] = &Client{ID: ev.Client, Name: ev.Name, CreatedAt: ev.At, Wallets: ev.Wallets}
			for _, t := range s.Treasuries {
				t.ApplyClientCreated(ev)
			}
		}
	}
	for n := count(); n > 0 && d.err == nil; n-- {
		k := &Key{ID: d.id(), Client: d.id(), Mode: d.mode(), Hash: d.hash(), Revoked: d.boolean(), CreatedAt: d.varint()}
		s.Keys[k.ID] = k
	}
	for n := count(); n > 0 && d.err == nil; n-- {
		ev := &PoolCreated{Pool: d.id(), Mode: d.mode(), Name: d.str(), Pair: d.pair(), Rate: d.rate()}
		rateSetAt, active := d.varint(), d.boolean()
		ev.Owner, ev.At = d.id(), d.varint()
		ev.LiquidityAccount = d.id()
		if d.err != nil || !ev.Pair.Valid() {
			d.fail()
			break
		}
		s.ensureBook(BookKey{ev.Mode, ev.Pair})
		p := NewPool(ev)
		p.RateSetAt, p.Active = rateSetAt, active
		p.Liquidity.Balance, p.Liquidity.Held = d.amount(), d.amount()
		p.Proceeds.ID = d.id()
		p.Proceeds.Balance = d.amount()
		p.ClearingSource, p.ClearingDestination = d.amount(), d.amount()
		p.Accepted, p.Completed = d.uvarint(), d.uvarint()
		s.Pools[p.ID] = p
		s.accountPool[p.Liquidity.ID] = p.ID
		s.accountPool[p.Proceeds.ID] = p.ID
		s.Book(p.Mode, p.Pair).Upsert(p.BookEntry())
	}
	for _, m := range Modes {
		t := s.Treasuries[m]
		if version >= 3 {
			for n := count(); n > 0 && d.err == nil; n-- {
				c := d.currency()
				t.Clearing[c] = d.amount()
			}
		} else {
			for _, c := range []Currency{CurrencyGHS, CurrencyNGN, CurrencyUSDT} {
				t.Clearing[c] = d.amount()
			}
		}
		for n := count(); n > 0 && d.err == nil; n-- {
			id := AccountID(d.id())
			balance, held := d.amount(), d.amount()
			if a, ok := t.Wallets[id]; ok {
				a.Balance, a.Held = balance, held
			} else {
				d.fail()
			}
		}
		if version >= 3 {
			for n := count(); n > 0 && d.err == nil; n-- {
				key := BookKey{m, d.pair()}
				if d.err != nil {
					break
				}
				s.ensureBook(key)
				decodeTicker(&d, s.Tickers[key], count)
			}
		} else {
			for _, p := range DefaultMarkets().Pairs {
				decodeTicker(&d, s.Tickers[BookKey{m, p.Pair}], count)
			}
		}
	}
	quotes := count()
	if quotes > uint64(len(d.buf))/snapshotQuoteBytesMin {
		d.fail() // more quotes than the bytes left can hold: no slab that size
		quotes = 0
	}
	s.Quotes = NewQuoteIndex(int(quotes))
	s.Idempotency = NewIdempotencyIndex(int(quotes))
	// NB: the quotes are decoded here and indexed a slab at a time by
	// indexing: the indexes' writes (a cache miss each, at a million
	// quotes) take as long as the decoding, so run beside it on two cores
	// they overlap. The index's parts alone write the maps until wait
	// returns.
	ix := &snapshotIndex{s: s, version: version}
	if version >= 8 {
		ix.writes = s.Idempotency.Writes()
	}
	send, wait := indexing(ix.ids, ix.keys)
	var prev *Quote
	for range quotes {
		if d.err != nil {
			break
		}
		q := s.allocQuote()
		if version >= 9 {
			decodeQuoteFixed(&d, q)
		} else {
			decodeQuote(&d, q, version)
		}
		if d.err != nil {
			break
		}
		if version >= 8 && prev != nil && creationOrder(prev.CreatedAt, prev.ID, q.CreatedAt, q.ID) >= 0 {
			d.fail() // not in creation order: the Idempotency-Keys rely on it
			break
		}
		prev = q
		if len(s.quoteSlab) == 0 { // the slab is full: its quotes are decoded
			send(s.slabs[len(s.slabs)-1])
		}
	}
	if last := len(s.slabs) - 1; last >= 0 && len(s.quoteSlab) > 0 && d.err == nil {
		send(s.slabs[last][:len(s.slabs[last])-len(s.quoteSlab)])
	}
	wait()
	if ix.corrupt {
		d.fail()
	}
	if version >= 2 {
		s.ForgottenBefore = d.varint()
		decodeWebhooks(&d, s, count, version)
	}
	if version >= 3 {
		for n := count(); n > 0 && d.err == nil; n-- {
			k := PayInSeries{d.currency(), d.chain()}
			next := d.uvarint()
			if next > 1<<31 {
				d.fail()
			}
			s.PayInNext[k] = uint32(next)
		}
	}
	if version >= 4 {
		for _, m := range Modes {
			decodeTreasuryFunds(&d, s, s.Treasuries[m], count, version)
		}
	}
	if version >= 5 {
		for n := count(); n > 0 && d.err == nil; n-- {
			id, at := KeyID(d.id()), d.varint()
			k, ok := s.Keys[id]
			if !ok || at == 0 {
				d.fail()
				break
			}
			k.ExpiresAt = at
		}
		for n := count(); n > 0 && d.err == nil; n-- {
			id, secret, until := WebhookID(d.id()), d.str(), d.varint()
			w, ok := s.Webhooks[id]
			if !ok || until == 0 {
				d.fail()
				break
			}
			w.PreviousSecret, w.PreviousUntil = secret, until
		}
	}
	if version >= 6 {
		for n := count(); n > 0 && d.err == nil; n-- {
			id, at := KeyID(d.id()), d.varint()
			k, ok := s.Keys[id]
			if !ok || at <= 0 {
				d.fail()
				break
			}
			k.LastUsedAt = at
		}
	}
	if version >= 7 {
		for n := count(); n > 0 && d.err == nil; n-- {
			o := &Operator{ID: d.id(), Name: d.str(), Role: Role(d.byte1()), Hash: d.hash(), CreatedAt: d.varint(), RevokedAt: d.varint()}
			if _, dup := s.Operators[o.ID]; dup || o.ID.IsZero() || (o.Role != RoleViewer && o.Role != RoleOperator) {
				d.fail()
				break
			}
			s.Operators[o.ID] = o
		}
		n := count()
		if n > AuditKeptMax+auditTrimSlack {
			d.fail()
			n = 0
		}
		s.Audit = make([]AuditEntry, 0, n)
		for ; n > 0 && d.err == nil; n-- {
			a := AuditEntry{ID: d.id(), At: d.varint(), Operator: d.str(), OperatorID: d.id(), Action: d.str(), Target: d.str()}
			st := d.uvarint()
			if st > 999 {
				d.fail()
			}
			a.Status = uint16(st)
			if version >= 10 && d.boolean() {
				a.Details = d.auditDetails()
			}
			s.Audit = append(s.Audit, a)
		}
	}
	if version >= 10 {
		decodePayments(&d, s, count)
		for n := count(); n > 0 && d.err == nil; n-- {
			id, from := KeyID(d.id()), KeyID(d.id())
			k, ok := s.Keys[id]
			if _, known := s.Keys[from]; !ok || !known {
				d.fail()
				break
			}
			k.RolledFrom = from
		}
	}
	if version >= 11 {
		for n := count(); n > 0 && d.err == nil; n-- {
			ch := d.chain()
			c := d.chainState(ChainUnappliedKeptMax)
			if _, dup := s.Chains[ch]; dup {
				d.fail()
			}
			s.Chains[ch] = &c
		}
	}
	if version >= 12 {
		for _, m := range Modes {
			t := s.Treasuries[m]
			for n := count(); n > 0 && d.err == nil; n-- {
				c := d.currency()
				t.Suspense[c] = d.amount()
			}
			for n := count(); n > 0 && d.err == nil; n-- {
				u := d.unapplied()
				p, ok := s.Payments.Lookup(u.Identity)
				if _, dup := t.unapplied[u.ID]; dup || !ok || p.Kind != PaymentUnapplied || u.Mode != m {
					d.fail()
					break
				}
				t.unapplied[u.ID], t.unappliedPayment[u.ID] = &u, p
			}
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("engine: corrupt snapshot: %w", d.err)
	}
	if len(d.buf) != 0 {
		return nil, fmt.Errorf("engine: corrupt snapshot: %d trailing bytes", len(d.buf))
	}
	// What an owed event's body shows besides its quote is not stored: as
	// the snapshot has it (the treasuries are read last).
	for _, w := range s.Webhooks {
		for i := range w.owed {
			s.fillBody(&w.owed[i], &w.owed[i].Quote)
		}
	}
	return s, nil
}

// SlabIndexing runs the parts of a snapshot's quote index over the slabs
// of quotes DecodeStateWith decodes. Each part must be called with every
// slab, in order, and then with nil (the end); the parts write different
// indexes, so they may run side by side and beside the decoding. send is
// called with each slab as it is decoded, wait once after the last slab,
// and returns once every part has seen the end. A slab stays valid and
// unchanged once sent.
type SlabIndexing func(parts ...func(slab []Quote)) (send func(slab []Quote), wait func())

// IndexInline is the SlabIndexing that runs the parts on the decoder's
// goroutine, one after the other.
func IndexInline(parts ...func(slab []Quote)) (send func(slab []Quote), wait func()) {
	run := func(slab []Quote) {
		for _, part := range parts {
			part(slab)
		}
	}
	return run, func() { run(nil) }
}

// snapshotIndex indexes a snapshot's decoded quotes in two parts
// (SlabIndexing): ids writes Quotes and PayIns, keys writes Idempotency.
// Each index's writes are a cache miss a quote at a million quotes
// (Quotes reads a slab's slots ahead together, the key index sorts its
// writes by shard).
type snapshotIndex struct {
	s       *State
	version uint8
	writes  *hashindex.Writes[IdempotencyScope, *Quote] // from version 8
	corrupt bool                                        // a repeated quote id or pay-in address (ids)
}

// ids adds a slab's quotes to Quotes and PayIns.
func (ix *snapshotIndex) ids(slab []Quote) {
	// The slab's slots are read ahead together (State.Warm).
	for i := range slab {
		ix.s.Quotes.readAhead(slab[i].ID)
	}
	ix.s.Quotes.warm()
	for i := range slab {
		if !ix.corrupt && !ix.indexID(&slab[i]) {
			ix.corrupt = true
		}
	}
}

// keys adds a slab's Idempotency-Keys; at the end (nil) it writes them.
func (ix *snapshotIndex) keys(slab []Quote) {
	if slab == nil {
		if ix.writes != nil {
			ix.writes.Apply(nil)
		}
		return
	}
	for i := range slab {
		ix.indexKey(&slab[i])
	}
}

// indexID adds q to Quotes and PayIns, false if its id or pay-in address
// is already taken.
func (ix *snapshotIndex) indexID(q *Quote) bool {
	s := ix.s
	// Put finds a repeated id by the probe that places a new one.
	if !s.Quotes.Put(q) {
		return false
	}
	if q.PayIn != nil {
		if _, dup := s.PayIns[q.PayIn.Address]; dup {
			return false
		}
		s.PayIns[q.PayIn.Address] = q.ID
	}
	return true
}

// indexKey adds q's Idempotency-Key, if it has one, to the writes (from
// version 8) or to the index. (A quote whose id is repeated is indexed
// too: the decode fails then, and the state with it.)
func (ix *snapshotIndex) indexKey(q *Quote) {
	if q.IdempotencyKey == "" {
		return
	}
	// A key reused after its retention maps to its newest quote, as replay
	// (which overwrites in log order) leaves it. From version 8 the quotes
	// come oldest first: the last write is the newest, and the writes are
	// applied in bulk, in order.
	if ix.writes != nil {
		ix.writes.Put(q)
		return
	}
	if old, ok := ix.s.Idempotency.Get(ScopeOf(q)); ok && old.CreatedAt >= q.CreatedAt {
		return
	}
	ix.s.Idempotency.Put(q)
}

func decodeTicker(d *decoder, t *Ticker, count func() uint64) {
	t.Consensus, t.ConsensusAt, t.HasConsensus = d.rate(), d.varint(), d.boolean()
	t.Best, t.BestSetAt, t.HasBest = d.rate(), d.varint(), d.boolean()
	for _, h := range []*RateHistory{&t.ConsensusPast, &t.BestPast} {
		for n := count(); n > 0 && d.err == nil; n-- {
			h.samples = append(h.samples, RateSample{At: d.varint(), Rate: d.rate()})
		}
	}
}

// snapshotQuoteBytesMin is less than any encoded quote takes (its three
// ids and request hash alone take 80 bytes), so a count of quotes is
// checked against the bytes left before a slab is allocated for them.
const snapshotQuoteBytesMin = 80

func decodeQuote(d *decoder, q *Quote, version uint8) {
	ev := QuoteCreated{Quote: d.id(), Client: d.id(), Mode: d.mode(), Pair: d.pair(),
		Direction: Direction(d.byte1()), Amount: d.amount(), ProposedRate: d.rate(), Chain: Chain(d.byte1()),
		Reference: d.str(), Channel: Channel(d.byte1())}
	ev.Allocations = d.allocations()
	ev.Chat = d.chat()
	ev.IdempotencyKey, ev.RequestHash, ev.Key = d.str(), d.hash(), d.id()
	q.init(&ev)
	q.Status = Status(d.byte1())
	q.CreatedAt, q.UpdatedAt, q.ExpiresAt, q.TTL = d.varint(), d.varint(), d.varint(), d.varint()
	// A quote never accepted encodes its acceptance as zeros. NB: copied
	// to the heap only when set: taking a's address moved it there for
	// every quote (a 112-byte allocation each, nine in ten garbage).
	if a := d.acceptance(); a != (Acceptance{}) {
		q.Accepted = new(Acceptance)
		*q.Accepted = a
	}
	if q.Status < StatusPending || q.Status > StatusExpired {
		d.fail()
	}
	if version >= 3 && d.boolean() {
		q.PayIn = d.quotePayIn()
	}
}

// decodeWebhooks reads the endpoints and their outboxes (version 2).
func decodeWebhooks(d *decoder, s *State, count func() uint64, version uint8) {
	for n := count(); n > 0 && d.err == nil; n-- {
		reg := d.webhookCreated(0)
		w := &Webhook{ID: reg.Webhook, Client: reg.Client, Mode: reg.Mode, URL: reg.URL, Events: reg.Events,
			Secret: reg.Secret, CreatedAt: d.varint(), Dropped: d.uvarint()}
		owed := count()
		if owed > WebhookOwedMax || owed > uint64(len(d.buf))/snapshotQuoteBytesMin {
			d.fail()
			return
		}
		w.owed = make([]OwedEvent, owed)
		w.owedAt = make(map[EventID]int, owed)
		for i := range w.owed {
			o := &w.owed[i]
			o.ID, o.Kind, o.At = d.id(), WebhookEvents(d.byte1()), d.varint()
			if o.Kind == WebhookPayInReceived {
				o.Receipt = d.receipt()
				if t, ok := s.walletTreasury(o.Receipt.Account); ok && d.err == nil {
					o.Quote = receiptSubject(t, o.Receipt)
				} else {
					d.fail()
				}
			} else {
				decodeQuote(d, &o.Quote, version)
			}
			if _, dup := w.owedAt[o.ID]; o.Kind.String() == "" || dup {
				d.fail()
			}
			w.owedAt[o.ID] = i
		}
		_, known := s.Clients[w.Client]
		_, dup := s.Webhooks[w.ID]
		if d.err != nil || !known || dup || w.Events == 0 {
			d.fail()
			return
		}
		s.addWebhook(w)
	}
}
