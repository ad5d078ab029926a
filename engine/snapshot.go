package engine

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
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
// balances and the receipts it holds (suspense.go). Version 13 changes no
// field: it writes the quotes in blocks that decode side by side
// (snapshot_quote.go).
const snapshotVersion = 13

// snapshotCountMax bounds every count in a snapshot, so hostile bytes
// cannot make decoding allocate without bound.
const snapshotCountMax = 1 << 28

// EncodeState encodes s. Entities are written in id order: equal states
// encode to equal bytes.
func EncodeState(s *State) []byte { return AppendState(make([]byte, 0, 1<<16), s) }

// AppendState appends s encoded to buf: a caller that snapshots again and
// again reuses one buffer instead of making a state-sized garbage each time.
func AppendState(buf []byte, s *State) []byte { return appendState(buf, s, snapshotVersion) }

// appendState encodes s as snapshot version: tests write earlier versions
// (7 to 12) to check that they are still read.
func appendState(buf []byte, s *State, version uint8) []byte {
	return (&stateEncoder{e: encoder{buf: buf}, s: s, version: version, blockLen: quoteBlockLen}).state()
}

// state writes the snapshot.
func (x *stateEncoder) state() []byte {
	s, version := x.s, x.version
	x.e.byte1(version)
	x.e.varint(s.LastAt)
	x.e.markets(s.Markets)
	if version >= 10 {
		x.e.sandboxCollection(s.Markets)
	}
	for _, section := range snapshotSections {
		if version >= section.since {
			section.encode(x)
			x.flush()
		}
	}
	return x.e.buf
}

// stateEncoder writes a snapshot of s as version, a section at a time
// (snapshotSections). Each section's method mirrors stateDecoder's.
type stateEncoder struct {
	e        encoder
	s        *State
	version  uint8
	blockLen int // quotes a block, from version 13 (quoteBlockLen)
	// sink, when set, takes the encoding a section, or a block of
	// quotes, at a time (flush), so that it is never held whole
	// (State.Hash); state then returns only what is left unflushed.
	sink io.Writer
}

// flush hands what is encoded so far to the sink, if there is one, and
// empties the buffer.
func (x *stateEncoder) flush() {
	if x.sink != nil {
		_, _ = x.sink.Write(x.e.buf) // a hash.Hash never fails
		x.e.buf = x.e.buf[:0]
	}
}

func (x *stateEncoder) clients() {
	x.e.uvarint(uint64(len(x.s.Clients)))
	for _, id := range sortedKeys(x.s.Clients) {
		c := x.s.Clients[id]
		x.e.id(c.ID)
		x.e.str(c.Name)
		x.e.varint(c.CreatedAt)
		x.e.uvarint(uint64(len(c.Wallets)))
		for _, w := range c.Wallets {
			x.e.byte1(uint8(w.Mode))
			x.e.byte1(uint8(w.Currency))
			x.e.id(w.Account)
		}
	}
}

func (x *stateEncoder) keys() {
	x.e.uvarint(uint64(len(x.s.Keys)))
	for _, id := range sortedKeys(x.s.Keys) {
		k := x.s.Keys[id]
		x.e.id(k.ID)
		x.e.id(k.Client)
		x.e.byte1(uint8(k.Mode))
		x.e.hash(k.Hash)
		x.e.boolean(k.Revoked)
		x.e.varint(k.CreatedAt)
	}
}

func (x *stateEncoder) pools() {
	x.e.uvarint(uint64(len(x.s.Pools)))
	for _, id := range sortedKeys(x.s.Pools) {
		p := x.s.Pools[id]
		x.e.id(p.ID)
		x.e.byte1(uint8(p.Mode))
		x.e.str(p.Name)
		x.e.pair(p.Pair)
		x.e.rate(p.Rate)
		x.e.varint(p.RateSetAt)
		x.e.boolean(p.Active)
		x.e.id(p.Owner)
		x.e.varint(p.CreatedAt)
		x.e.id(p.Liquidity.ID)
		x.e.amount(p.Liquidity.Balance)
		x.e.amount(p.Liquidity.Held)
		x.e.id(p.Proceeds.ID)
		x.e.amount(p.Proceeds.Balance)
		x.e.amount(p.ClearingSource)
		x.e.amount(p.ClearingDestination)
		x.e.uvarint(p.Accepted)
		x.e.uvarint(p.Completed)
	}
}

func (x *stateEncoder) treasuries() {
	for _, m := range Modes {
		t := x.s.Treasuries[m]
		currencies := KnownCurrencies()
		x.e.uvarint(uint64(len(currencies)))
		for _, c := range currencies {
			x.e.byte1(uint8(c))
			x.e.amount(t.Clearing[c])
		}
		x.e.uvarint(uint64(len(t.Wallets)))
		for _, id := range sortedKeys(t.Wallets) {
			x.e.id(id)
			x.e.amount(t.Wallets[id].Balance)
			x.e.amount(t.Wallets[id].Held)
		}
		pairs := make([]Pair, 0, len(x.s.Tickers)/2)
		for key := range x.s.Tickers {
			if key.Mode == m {
				pairs = append(pairs, key.Pair)
			}
		}
		slices.SortFunc(pairs, ComparePairs)
		x.e.uvarint(uint64(len(pairs)))
		for _, p := range pairs {
			x.e.pair(p)
			encodeTicker(&x.e, x.s.Tickers[BookKey{m, p}])
		}
	}
}

func (x *stateEncoder) quotes() {
	x.e.uvarint(uint64(x.s.Quotes.Len()))
	quotes, quoteBytes := quotesToEncode(x.s, x.version)
	// NB: the buffer grows once, to about the snapshot's size: grown by
	// append, a 1M-quote snapshot (330 MB) was copied again and again
	// (Go grows a large slice by a quarter), 1.0-4.2 s of EncodeState
	// (median 2.2 s) against 0.15-0.2 s into a buffer already that size.
	if x.sink == nil {
		x.e.buf = slices.Grow(x.e.buf, quoteBytes+restBytesHint(x.s))
	}
	if x.version >= 13 {
		encodeQuoteBlocks(&x.e, quotes, x.blockLen, x.flush)
		return
	}
	for _, q := range quotes {
		if x.version >= 9 {
			encodeQuoteFixed(&x.e, q)
		} else {
			encodeQuote(&x.e, q)
		}
	}
}

func (x *stateEncoder) webhooks() {
	x.e.varint(x.s.ForgottenBefore)
	hooks := x.s.WebhooksInOrder()
	x.e.uvarint(uint64(len(hooks)))
	for _, w := range hooks {
		x.e.webhookCreated(&WebhookCreated{Webhook: w.ID, Client: w.Client, Mode: w.Mode, URL: w.URL, Events: w.Events, Secret: w.Secret})
		x.e.varint(w.CreatedAt)
		x.e.uvarint(w.Dropped)
		owed := w.OwedEvents()
		x.e.uvarint(uint64(len(owed)))
		for i := range owed {
			o := &owed[i]
			x.e.id(o.ID)
			x.e.byte1(uint8(o.Kind))
			x.e.varint(o.At)
			if o.Kind == WebhookPayInReceived { // version 4: the receipt, not a quote
				x.e.receipt(o.Receipt)
			} else {
				encodeQuote(&x.e, &o.Quote)
			}
		}
	}
}

func (x *stateEncoder) payInSeries() {
	// version 3: after the webhooks, each pay-in series' next index.
	series := slices.SortedFunc(maps.Keys(x.s.PayInNext), func(a, b PayInSeries) int {
		return cmp.Or(cmp.Compare(a.Currency, b.Currency), cmp.Compare(a.Chain, b.Chain))
	})
	x.e.uvarint(uint64(len(series)))
	for _, k := range series {
		x.e.byte1(uint8(k.Currency))
		x.e.byte1(uint8(k.Chain))
		x.e.uvarint(uint64(x.s.PayInNext[k]))
	}
}

func (x *stateEncoder) funds() {
	// version 4: each treasury's credit limits, statements and receipts.
	for _, m := range Modes {
		encodeTreasuryFunds(&x.e, x.s.Treasuries[m], x.version)
	}
}

func (x *stateEncoder) keyExpiriesAndSecrets() {
	// Version 5: the expiry of every rolled key.
	encodeKeyTimes(&x.e, x.s, func(k *Key) int64 { return k.ExpiresAt })
	// and each rotated webhook's previous secret.
	var rotated []*Webhook
	for _, w := range x.s.WebhooksInOrder() {
		if w.PreviousUntil != 0 {
			rotated = append(rotated, w)
		}
	}
	x.e.uvarint(uint64(len(rotated)))
	for _, w := range rotated {
		x.e.id(w.ID)
		x.e.str(w.PreviousSecret)
		x.e.varint(w.PreviousUntil)
	}
}

func (x *stateEncoder) keysLastUsed() {
	// Version 6: when each key was last used, of those recorded.
	encodeKeyTimes(&x.e, x.s, func(k *Key) int64 { return k.LastUsedAt })
}

func (x *stateEncoder) operators() {
	// Version 7: the operators, then the audit trail kept, oldest first.
	x.e.uvarint(uint64(len(x.s.Operators)))
	for _, id := range sortedKeys(x.s.Operators) {
		o := x.s.Operators[id]
		x.e.id(o.ID)
		x.e.str(o.Name)
		x.e.byte1(uint8(o.Role))
		x.e.hash(o.Hash)
		x.e.varint(o.CreatedAt)
		x.e.varint(o.RevokedAt)
	}
	x.e.uvarint(uint64(len(x.s.Audit)))
	for _, a := range x.s.Audit {
		x.e.id(a.ID)
		x.e.varint(a.At)
		x.e.str(a.Operator)
		x.e.id(a.OperatorID)
		x.e.str(a.Action)
		x.e.str(a.Target)
		x.e.uvarint(uint64(a.Status))
		if x.version >= 10 {
			x.e.boolean(a.Details != nil)
			if a.Details != nil {
				x.e.auditDetails(a.Details)
			}
		}
	}
}

func (x *stateEncoder) payments() {
	encodePayments(&x.e, x.s.Payments)
	var rolled []KeyID
	for _, id := range sortedKeys(x.s.Keys) {
		if !x.s.Keys[id].RolledFrom.IsZero() {
			rolled = append(rolled, id)
		}
	}
	x.e.uvarint(uint64(len(rolled)))
	for _, id := range rolled {
		x.e.id(id)
		x.e.id(x.s.Keys[id].RolledFrom)
	}
}

func (x *stateEncoder) chains() {
	chains := slices.Sorted(maps.Keys(x.s.Chains))
	x.e.uvarint(uint64(len(chains)))
	for _, ch := range chains {
		x.e.byte1(uint8(ch))
		x.e.chainState(x.s.Chains[ch])
	}
}

func (x *stateEncoder) suspense() {
	for _, m := range Modes {
		t := x.s.Treasuries[m]
		var held []Currency
		for c, v := range t.Suspense {
			if v != 0 {
				held = append(held, Currency(c))
			}
		}
		x.e.uvarint(uint64(len(held)))
		for _, c := range held {
			x.e.byte1(uint8(c))
			x.e.amount(t.Suspense[c])
		}
		list := t.UnappliedList()
		slices.Reverse(list) // oldest first
		x.e.uvarint(uint64(len(list)))
		for _, u := range list {
			x.e.unapplied(u)
		}
	}
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
		t := s.Treasuries[p.Mode]
		if d.err != nil || t == nil {
			d.fail() // an unknown mode has no treasury
			return
		}
		w, ok := t.Wallets[p.Account]
		if !ok || p.Kind < PaymentReceipt || p.Kind > PaymentPayout || p.Amount <= 0 || p.Seq == 0 {
			d.fail()
			return
		}
		p.Client, p.Currency = ClientID(w.Owner), w.Currency
		s.Payments.record(p)
		if p.Kind == PaymentReceipt && p.At >= t.receiptsFrom {
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
	n := quoteFixedLen + q.Reference.Len() + q.IdempotencyKey.Len() + 1 // + the chat's flag
	as := q.Allocations()
	for i := range as {
		a := &as[i]
		n += allocationFixedLen + len(a.PoolName) + a.Reference.Len()
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

// createdBefore reports whether a comes strictly before b in creation
// order: what a decode checks of each quote against the one before it
// (from version 8 the Idempotency-Keys rely on it).
func createdBefore(a, b *Quote) bool {
	return creationOrder(a.CreatedAt, a.ID, b.CreatedAt, b.ID) < 0
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
		if postings > uint64(len(d.buf))/snapshotIDItemBytesMin {
			d.fail() // more postings than the bytes left can hold: no slice that size
			return
		}
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
	e.ref(&q.Reference)
	e.byte1(uint8(q.Channel))
	e.allocations(q.Allocations())
	e.chat(q.Chat)
	e.idemKey(q.IdempotencyKey)
	e.hash(q.RequestHash)
	e.id(q.Key)
	e.byte1(uint8(q.Status))
	e.varint(q.CreatedAt)
	e.varint(q.UpdatedAt)
	e.varint(q.ExpiresAt)
	e.varint(int64(q.TTL))
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

// DecodeState rebuilds a State from EncodeState's bytes, on the caller's
// goroutine (the zero Loading). It never panics on hostile bytes.
func DecodeState(b []byte) (*State, error) { return DecodeStateWith(b, Loading{}) }

// Loading is how DecodeStateWith spreads a snapshot's decode over
// goroutines, which the caller's layer owns (actors.DecodeState): the zero
// Loading does everything on the caller's goroutine, in turn.
type Loading struct {
	// Indexing runs the quote index's parts (SlabIndexing; nil:
	// IndexInline).
	Indexing SlabIndexing
	// Together runs a version 13 snapshot's quote decoders, at most
	// Decoders of them, each on a goroutine of its own, and returns once
	// all have returned (nil: one after the other).
	Decoders int
	Together func(fns ...func())
}

func (l Loading) together(fns ...func()) {
	if l.Together == nil {
		for _, fn := range fns {
			fn()
		}
		return
	}
	l.Together(fns...)
}

// DecodeStateWith is DecodeState with the work spread as load says: the
// quotes are decoded a slab at a time and every slab is handed to the
// index's parts, which may run beside the decoding; a version 13
// snapshot's blocks of quotes are decoded side by side and their slabs
// handed over, in order, once all are decoded.
func DecodeStateWith(b []byte, load Loading) (*State, error) {
	if load.Indexing == nil {
		load.Indexing = IndexInline
	}
	x := &stateDecoder{d: decoder{buf: b, arena: new(bulkArena)}, load: load}
	x.version = x.d.byte1()
	if x.version < 1 || x.version > snapshotVersion {
		return nil, fmt.Errorf("%w: unknown snapshot version", ErrCorruptEvent)
	}
	s := NewState()
	x.s = s
	s.LastAt = x.d.varint()
	if x.version >= 3 {
		m := x.d.markets()
		if x.version >= 10 {
			x.d.sandboxCollection(m)
		}
		if x.d.err != nil {
			return nil, fmt.Errorf("engine: corrupt snapshot: markets: %w", x.d.err)
		}
		s.applyMarkets(&MarketsSet{Markets: m})
	}
	for _, section := range snapshotSections {
		if x.version < section.since {
			continue
		}
		section.decode(x)
		if x.d.err != nil {
			return nil, fmt.Errorf("engine: corrupt snapshot: %s: %w", section.name, x.d.err)
		}
	}
	if len(x.d.buf) != 0 {
		return nil, fmt.Errorf("engine: corrupt snapshot: %d trailing bytes", len(x.d.buf))
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

// snapshotSections are a snapshot's sections after its header (version,
// time, markets), in the order appendState writes them; since is the
// snapshot version that added the section (an older snapshot lacks it).
var snapshotSections = []struct {
	name   string
	since  uint8
	encode func(*stateEncoder)
	decode func(*stateDecoder)
}{
	{"clients", 1, (*stateEncoder).clients, (*stateDecoder).clients},
	{"keys", 1, (*stateEncoder).keys, (*stateDecoder).keys},
	{"pools", 1, (*stateEncoder).pools, (*stateDecoder).pools},
	{"treasuries", 1, (*stateEncoder).treasuries, (*stateDecoder).treasuries},
	{"quotes", 1, (*stateEncoder).quotes, (*stateDecoder).quotes},
	{"webhooks", 2, (*stateEncoder).webhooks, (*stateDecoder).webhooks},
	{"pay-in series", 3, (*stateEncoder).payInSeries, (*stateDecoder).payInSeries},
	{"funds", 4, (*stateEncoder).funds, (*stateDecoder).funds},
	{"key expiries", 5, (*stateEncoder).keyExpiriesAndSecrets, (*stateDecoder).keyExpiriesAndSecrets},
	{"keys last used", 6, (*stateEncoder).keysLastUsed, (*stateDecoder).keysLastUsed},
	{"operators", 7, (*stateEncoder).operators, (*stateDecoder).operators},
	{"payments", 10, (*stateEncoder).payments, (*stateDecoder).payments},
	{"chains", 11, (*stateEncoder).chains, (*stateDecoder).chains},
	{"suspense", 12, (*stateEncoder).suspense, (*stateDecoder).suspense},
}

// stateDecoder reads a snapshot into s, a section at a time.
type stateDecoder struct {
	d       decoder
	s       *State
	version uint8
	load    Loading
}

// count reads a count, failing on one no snapshot could hold.
func (x *stateDecoder) count() uint64 {
	n := x.d.uvarint()
	if n > snapshotCountMax || n > uint64(len(x.d.buf)) {
		x.d.fail()
		return 0
	}
	return n
}

// clients: each client and its wallets.
func (x *stateDecoder) clients() {
	clients := x.count()
	if clients > uint64(len(x.d.buf))/snapshotIDItemBytesMin {
		x.d.fail() // more clients than the bytes left can hold: no map that size
		clients = 0
	}
	x.s.Clients = make(map[ClientID]*Client, clients)
	for n := clients; n > 0 && x.d.err == nil; n-- {
		ev := &ClientCreated{Client: x.d.id(), Name: x.d.str(), At: x.d.varint()}
		for w := x.count(); w > 0 && x.d.err == nil; w-- {
			wa := WalletAccount{Mode: x.d.mode(), Currency: Currency(x.d.byte1()), Account: x.d.id()}
			if !wa.Currency.Valid() {
				x.d.fail()
			}
			ev.Wallets = append(ev.Wallets, wa)
		}
		if x.d.err == nil {
			x.s.Clients[ev.Client] = &Client{ID: ev.Client, Name: ev.Name, CreatedAt: ev.At, Wallets: ev.Wallets}
			for _, t := range x.s.Treasuries {
				t.ApplyClientCreated(ev)
			}
		}
	}
}

// keys: the API keys.
func (x *stateDecoder) keys() {
	for n := x.count(); n > 0 && x.d.err == nil; n-- {
		k := &Key{ID: x.d.id(), Client: x.d.id(), Mode: x.d.mode(), Hash: x.d.hash(), Revoked: x.d.boolean(), CreatedAt: x.d.varint()}
		x.s.Keys[k.ID] = k
	}
}

// pools: each pool, its accounts and counters, in its book.
func (x *stateDecoder) pools() {
	for n := x.count(); n > 0 && x.d.err == nil; n-- {
		ev := &PoolCreated{Pool: x.d.id(), Mode: x.d.mode(), Name: x.d.str(), Pair: x.d.pair(), Rate: x.d.rate()}
		rateSetAt, active := x.d.varint(), x.d.boolean()
		ev.Owner, ev.At = x.d.id(), x.d.varint()
		ev.LiquidityAccount = x.d.id()
		if x.d.err != nil || !ev.Pair.Valid() {
			x.d.fail()
			break
		}
		x.s.ensureBook(BookKey{ev.Mode, ev.Pair})
		p := NewPool(ev)
		p.RateSetAt, p.Active = rateSetAt, active
		p.Liquidity.Balance, p.Liquidity.Held = x.d.amount(), x.d.amount()
		p.Proceeds.ID = x.d.id()
		p.Proceeds.Balance = x.d.amount()
		p.ClearingSource, p.ClearingDestination = x.d.amount(), x.d.amount()
		p.Accepted, p.Completed = x.d.uvarint(), x.d.uvarint()
		if e := p.BookEntry(); x.d.err != nil || e.Rate.IsZero() || e.Available < 0 || x.s.Pools[p.ID] != nil {
			x.d.fail() // no book takes it (Book.Upsert), or a pool twice
			break
		}
		x.s.Pools[p.ID] = p
		x.s.accountPool[p.Liquidity.ID] = p.ID
		x.s.accountPool[p.Proceeds.ID] = p.ID
		x.s.Book(p.Mode, p.Pair).Upsert(p.BookEntry())
	}
}

// treasuries: per mode, clearing balances, wallets and the tickers.
func (x *stateDecoder) treasuries() {
	for _, m := range Modes {
		t := x.s.Treasuries[m]
		if x.version >= 3 {
			for n := x.count(); n > 0 && x.d.err == nil; n-- {
				c := x.d.currency()
				t.Clearing[c] = x.d.amount()
			}
		} else {
			for _, c := range []Currency{CurrencyGHS, CurrencyNGN, CurrencyUSDT} {
				t.Clearing[c] = x.d.amount()
			}
		}
		for n := x.count(); n > 0 && x.d.err == nil; n-- {
			id := AccountID(x.d.id())
			balance, held := x.d.amount(), x.d.amount()
			if a, ok := t.Wallets[id]; ok {
				a.Balance, a.Held = balance, held
			} else {
				x.d.fail()
			}
		}
		if x.version >= 3 {
			for n := x.count(); n > 0 && x.d.err == nil; n-- {
				key := BookKey{m, x.d.pair()}
				if x.d.err != nil {
					break
				}
				x.s.ensureBook(key)
				decodeTicker(&x.d, x.s.Tickers[key], x.count)
			}
		} else {
			for _, p := range DefaultMarkets().Pairs {
				decodeTicker(&x.d, x.s.Tickers[BookKey{m, p.Pair}], x.count)
			}
		}
	}
}

// quotes: every quote held, in creation order, indexed beside the
// decoding (indexing).
func (x *stateDecoder) quotes() {
	quotes := x.count()
	if quotes > uint64(len(x.d.buf))/snapshotQuoteBytesMin {
		x.d.fail() // more quotes than the bytes left can hold: no slab that size
		quotes = 0
	}
	x.s.Quotes = NewQuoteIndex(int(quotes))
	x.s.Idempotency = NewIdempotencyIndex(int(quotes))
	// NB: the quotes are decoded here and indexed a slab at a time by
	// indexing: the indexes' writes (a cache miss each, at a million
	// quotes) take as long as the decoding, so run beside it on two cores
	// they overlap. The index's parts alone write the maps until wait
	// returns.
	ix := &snapshotIndex{s: x.s, version: x.version}
	if x.version >= 8 {
		ix.writes = x.s.Idempotency.Writes()
	}
	send, wait := x.load.Indexing(ix.ids, ix.keys)
	if x.version >= 13 {
		x.quoteBlocks(quotes, send)
		wait()
		if ix.corrupt {
			x.d.fail()
		}
		return
	}
	var prev *Quote
	for range quotes {
		if x.d.err != nil {
			break
		}
		q := x.s.allocQuote()
		if x.version >= 9 {
			decodeQuoteFixed(&x.d, q)
		} else {
			decodeQuote(&x.d, q, x.version)
		}
		if x.d.err != nil {
			break
		}
		if x.version >= 8 && prev != nil && !createdBefore(prev, q) {
			x.d.fail() // not in creation order: the Idempotency-Keys rely on it
			break
		}
		prev = q
		if len(x.s.quoteSlab) == 0 { // the slab is full: its quotes are decoded
			send(x.s.slabs[len(x.s.slabs)-1])
		}
	}
	if last := len(x.s.slabs) - 1; last >= 0 && len(x.s.quoteSlab) > 0 && x.d.err == nil {
		send(x.s.slabs[last][:len(x.s.slabs[last])-len(x.s.quoteSlab)])
	}
	wait()
	if ix.corrupt {
		x.d.fail()
	}
}

// quoteBlocks decodes a version 13 snapshot's n quotes, their blocks
// side by side (Loading), and hands their slabs to send in order once all
// are decoded: the key index relies on creation order.
func (x *stateDecoder) quoteBlocks(n uint64, send func(slab []Quote)) {
	blocks := splitQuoteBlocks(&x.d, n)
	if x.d.err != nil || len(blocks) == 0 {
		return
	}
	decoders := min(max(x.load.Decoders, 1), len(blocks))
	work := make([]func(), decoders)
	for w := range work {
		arena := x.d.arena
		if w > 0 {
			arena = new(bulkArena)
		}
		work[w] = func() {
			for i := w; i < len(blocks); i += decoders {
				if blocks[i].decode(arena); blocks[i].err != nil {
					return
				}
			}
		}
	}
	x.load.together(work...)
	for i := range blocks {
		b := &blocks[i]
		if b.err != nil {
			x.d.fail()
			return
		}
		if i > 0 && !createdBefore(blocks[i-1].last(), b.first()) {
			x.d.fail() // not in creation order across blocks
			return
		}
	}
	for i := range blocks {
		for _, slab := range blocks[i].slabs {
			x.s.slabs = append(x.s.slabs, slab)
			send(slab)
		}
	}
}

// webhooks: the retention cut, the endpoints and what they are owed.
func (x *stateDecoder) webhooks() {
	x.s.ForgottenBefore = x.d.varint()
	decodeWebhooks(&x.d, x.s, x.count, x.version)
}

// payInSeries: the next pay-in address index per currency and chain.
func (x *stateDecoder) payInSeries() {
	for n := x.count(); n > 0 && x.d.err == nil; n-- {
		k := PayInSeries{x.d.currency(), x.d.chain()}
		next := x.d.uvarint()
		if next > 1<<31 {
			x.d.fail()
		}
		x.s.PayInNext[k] = uint32(next)
	}
}

// funds: per mode, receipts, credit and the rest of the funds ledger.
func (x *stateDecoder) funds() {
	for _, m := range Modes {
		decodeTreasuryFunds(&x.d, x.s, x.s.Treasuries[m], x.count, x.version)
	}
}

// keyExpiriesAndSecrets: rolled keys' expiries and webhooks' previous
// secrets.
func (x *stateDecoder) keyExpiriesAndSecrets() {
	for n := x.count(); n > 0 && x.d.err == nil; n-- {
		id, at := KeyID(x.d.id()), x.d.varint()
		k, ok := x.s.Keys[id]
		if !ok || at == 0 {
			x.d.fail()
			break
		}
		k.ExpiresAt = at
	}
	for n := x.count(); n > 0 && x.d.err == nil; n-- {
		id, secret, until := WebhookID(x.d.id()), x.d.str(), x.d.varint()
		w, ok := x.s.Webhooks[id]
		if !ok || until == 0 {
			x.d.fail()
			break
		}
		w.PreviousSecret, w.PreviousUntil = secret, until
	}
}

// keysLastUsed: when each key was last used.
func (x *stateDecoder) keysLastUsed() {
	for n := x.count(); n > 0 && x.d.err == nil; n-- {
		id, at := KeyID(x.d.id()), x.d.varint()
		k, ok := x.s.Keys[id]
		if !ok || at <= 0 {
			x.d.fail()
			break
		}
		k.LastUsedAt = at
	}
}

// operators: the named operators and the audit trail.
func (x *stateDecoder) operators() {
	for n := x.count(); n > 0 && x.d.err == nil; n-- {
		o := &Operator{ID: x.d.id(), Name: x.d.str(), Role: Role(x.d.byte1()), Hash: x.d.hash(), CreatedAt: x.d.varint(), RevokedAt: x.d.varint()}
		if _, dup := x.s.Operators[o.ID]; dup || o.ID.IsZero() || (o.Role != RoleViewer && o.Role != RoleOperator) {
			x.d.fail()
			break
		}
		x.s.Operators[o.ID] = o
	}
	n := x.count()
	if n > AuditKeptMax+auditTrimSlack {
		x.d.fail()
		n = 0
	}
	x.s.Audit = make([]AuditEntry, 0, n)
	for ; n > 0 && x.d.err == nil; n-- {
		a := AuditEntry{ID: x.d.id(), At: x.d.varint(), Operator: x.d.str(), OperatorID: x.d.id(), Action: x.d.str(), Target: x.d.str()}
		st := x.d.uvarint()
		if st > 999 {
			x.d.fail()
		}
		a.Status = uint16(st)
		if x.version >= 10 && x.d.boolean() {
			a.Details = x.d.auditDetails()
		}
		x.s.Audit = append(x.s.Audit, a)
	}
}

// payments: every payment's identity, and which key each rolled key
// came from.
func (x *stateDecoder) payments() {
	decodePayments(&x.d, x.s, x.count)
	for n := x.count(); n > 0 && x.d.err == nil; n-- {
		id, from := KeyID(x.d.id()), KeyID(x.d.id())
		k, ok := x.s.Keys[id]
		if _, known := x.s.Keys[from]; !ok || !known {
			x.d.fail()
			break
		}
		k.RolledFrom = from
	}
}

// chains: each watched chain's cursor and what it holds unapplied.
func (x *stateDecoder) chains() {
	for n := x.count(); n > 0 && x.d.err == nil; n-- {
		ch := x.d.chain()
		c := x.d.chainState(ChainUnappliedKeptMax)
		if _, dup := x.s.Chains[ch]; dup {
			x.d.fail()
		}
		x.s.Chains[ch] = &c
	}
}

// suspense: per mode, suspense balances and the unapplied payments.
func (x *stateDecoder) suspense() {
	for _, m := range Modes {
		t := x.s.Treasuries[m]
		for n := x.count(); n > 0 && x.d.err == nil; n-- {
			c := x.d.currency()
			t.Suspense[c] = x.d.amount()
		}
		for n := x.count(); n > 0 && x.d.err == nil; n-- {
			u := x.d.unapplied()
			p, ok := x.s.Payments.Lookup(u.Identity)
			if _, dup := t.unapplied[u.ID]; dup || !ok || p.Kind != PaymentUnapplied || u.Mode != m {
				x.d.fail()
				break
			}
			t.unapplied[u.ID], t.unappliedPayment[u.ID] = &u, p
		}
	}
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
	if q.IdempotencyKey.IsZero() {
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

// snapshotIDItemBytesMin is less than any encoded item that holds an id
// takes (a client, a statement posting): a count of them is checked
// against the bytes left before anything is sized for it.
const snapshotIDItemBytesMin = 16

// snapshotQuoteBytesMin is less than any encoded quote takes (its three
// ids and request hash alone take 80 bytes), so a count of quotes is
// checked against the bytes left before a slab is allocated for them.
const snapshotQuoteBytesMin = 80

func decodeQuote(d *decoder, q *Quote, version uint8) {
	ev := QuoteCreated{Quote: d.id(), Client: d.id(), Mode: d.mode(), Pair: d.pair(),
		Direction: Direction(d.byte1()), Amount: d.amount(), ProposedRate: d.rate(), Chain: Chain(d.byte1()),
		Reference: d.ref(), Channel: Channel(d.byte1())}
	ev.Allocations = d.allocations()
	ev.Chat = d.chat()
	ev.IdempotencyKey, ev.RequestHash, ev.Key = d.idemKey(), d.hash(), d.id()
	q.init(&ev)
	q.Status = Status(d.byte1())
	var ttl int64
	q.CreatedAt, q.UpdatedAt, q.ExpiresAt, ttl = d.varint(), d.varint(), d.varint(), d.varint()
	if q.TTL = int32(ttl); int64(q.TTL) != ttl {
		d.fail()
	}
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
