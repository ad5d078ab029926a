package engine

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/oja-exchange/oja/internal/prefault"
)

// The event codec is a hand-written binary format: one version byte, one
// EventType byte, the event's time as a varint, then its fields. In
// version 1 they follow in declaration order as varints, fixed 16-byte ids
// and length-prefixed strings. Version 2 is a QuoteCreated alone, and the
// most common record of a log: its body is the pending quote it creates in
// the fixed-width layout a snapshot keeps a quote in (snapshot_quote.go),
// so that events and snapshots share one quote schema and a replay reads
// a quote's fields at fixed offsets. AppendEvent writes every QuoteCreated
// in version 2 and every other event in version 1; a QuoteCreated of
// version 1, which logs written before version 2 hold, still decodes.
//
// It is deterministic (the same event always encodes to the same bytes)
// and decodes without reflection, so replay runs at hundreds of thousands
// of events per second.
// NB: JSON was rejected for the log: ~10x slower to decode and it would make
// the bytes depend on a library's formatting choices.

const (
	codecVersion           = 1
	codecVersionQuoteFixed = 2
	// stringBytesMax bounds every decoded string (names, references, chat
	// fields); the gateway refuses longer inputs well before this.
	stringBytesMax = 4096
	// walletsMax bounds the wallets one ClientCreated may carry.
	walletsMax = 64
)

// ErrCorruptEvent is returned for bytes that are not a valid event.
var ErrCorruptEvent = errors.New("engine: corrupt event")

type encoder struct{ buf []byte }

func (e *encoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *encoder) varint(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }
func (e *encoder) byte1(v uint8)    { e.buf = append(e.buf, v) }
func (e *encoder) id(v [16]byte)    { e.buf = append(e.buf, v[:]...) }
func (e *encoder) hash(v [32]byte)  { e.buf = append(e.buf, v[:]...) }
func (e *encoder) amount(v Amount)  { e.varint(int64(v)) }
func (e *encoder) rate(v Rate)      { e.buf = AppendRateUvarint(e.buf, v) }
func (e *encoder) pair(p Pair)      { e.byte1(uint8(p.Source)); e.byte1(uint8(p.Destination)) }
func (e *encoder) boolean(v bool)   { e.byte1(boolByte(v)) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.buf = append(e.buf, s...) }

// ref writes r's text, as str writes a string.
func (e *encoder) ref(r *Ref) { e.uvarint(uint64(r.Len())); e.buf = r.AppendText(e.buf) }

// idemKey writes k's text, as str writes a string.
func (e *encoder) idemKey(k IdemKey) { e.uvarint(uint64(k.Len())); e.buf = k.AppendText(e.buf) }
func boolByte(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}

type decoder struct {
	buf []byte
	err error
	// arena, when set (a snapshot's decode), is where strings and
	// allocation lists come from (arena.go).
	arena *bulkArena
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = ErrCorruptEvent
	}
	d.buf = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.buf)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) byte1() uint8 {
	if len(d.buf) < 1 {
		d.fail()
		return 0
	}
	v := d.buf[0]
	d.buf = d.buf[1:]
	return v
}

func (d *decoder) id() (v [16]byte) {
	if len(d.buf) < 16 {
		d.fail()
		return v
	}
	copy(v[:], d.buf)
	d.buf = d.buf[16:]
	return v
}

func (d *decoder) hash() (v [32]byte) {
	if len(d.buf) < 32 {
		d.fail()
		return v
	}
	copy(v[:], d.buf)
	d.buf = d.buf[32:]
	return v
}

func (d *decoder) amount() Amount { return Amount(d.varint()) }
func (d *decoder) rate() Rate {
	r, n := rateUvarint(d.buf)
	if n <= 0 {
		d.fail()
		return Rate{}
	}
	d.buf = d.buf[n:]
	return r
}

func (d *decoder) pair() Pair {
	p := Pair{Currency(d.byte1()), Currency(d.byte1())}
	if !p.Source.Valid() || !p.Destination.Valid() {
		d.fail()
	}
	return p
}

func (d *decoder) mode() Mode {
	m := Mode(d.byte1())
	if m != ModeLive && m != ModeSandbox {
		d.fail()
	}
	return m
}

func (d *decoder) boolean() bool {
	switch d.byte1() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail()
	return false
}

func (d *decoder) str() string { return d.strN(d.uvarint()) }

// text reads the n bytes of a string (its length read before it, or given
// by a fixed record), in place: the caller copies what it keeps.
func (d *decoder) text(n uint64) ([]byte, bool) {
	if n > stringBytesMax || n > uint64(len(d.buf)) {
		d.fail()
		return nil, false
	}
	b := d.buf[:n]
	d.buf = d.buf[n:]
	return b, true
}

// strN reads a string of n bytes.
func (d *decoder) strN(n uint64) string {
	b, _ := d.text(n)
	if d.arena != nil {
		return d.arena.str(b)
	}
	return string(b)
}

// ref reads a reference written as a string.
func (d *decoder) ref() Ref { return d.refN(d.uvarint()) }

// refN reads a reference of n bytes; a text that is no Ref's (MakeRef) is
// corrupt.
func (d *decoder) refN(n uint64) Ref {
	b, ok := d.text(n)
	r, fits := MakeRef(b)
	if ok && !fits {
		d.fail()
	}
	return r
}

// idemKey reads an Idempotency-Key written as a string.
func (d *decoder) idemKey() IdemKey { return d.idemKeyN(d.uvarint()) }

// idemKeyN reads an Idempotency-Key of n bytes.
func (d *decoder) idemKeyN(n uint64) IdemKey {
	b, _ := d.text(n)
	return idemKeyOf(b, d.arena)
}

// The parts a QuoteCreated and a snapshot's quote share.

func (e *encoder) allocations(as []Allocation) {
	e.uvarint(uint64(len(as)))
	for i := range as {
		a := &as[i]
		e.id(a.ID)
		e.id(a.Pool)
		e.id(a.PoolAccount)
		e.str(a.PoolName)
		e.rate(a.Rate)
		e.amount(a.Source)
		e.amount(a.Destination)
		e.ref(&a.Reference)
	}
}

func (e *encoder) chat(c *Chat) {
	e.boolean(c != nil)
	if c != nil {
		e.str(c.ConversationID)
		e.str(c.ChatQuoteID)
		e.str(c.ListingID)
		e.rate(c.InitialListingRate)
		e.str(c.NegotiationStartedAt)
		e.str(c.QuoteSentAt)
	}
}

func (e *encoder) settlement(s *Settlement) {
	e.byte1(uint8(s.Kind))
	e.id(s.Account)
	e.str(s.AccountName)
	e.str(s.AccountNumber)
	e.str(s.BankCode)
	e.str(s.Address)
}

// allocations decodes 1..SlicesMax allocations.
func (d *decoder) allocations() []Allocation {
	n := d.uvarint()
	if n == 0 || n > SlicesMax {
		d.fail()
		return nil
	}
	out := d.allocationList(int(n))[:0]
	for i := uint64(0); i < n && d.err == nil; i++ {
		out = append(out, Allocation{ID: d.id(), Pool: d.id(), PoolAccount: d.id(),
			PoolName: d.str(), Rate: d.rate(), Source: d.amount(), Destination: d.amount(), Reference: d.ref()})
	}
	return out
}

// allocationList is a list of n zero allocations, from the arena if set.
func (d *decoder) allocationList(n int) []Allocation {
	if d.arena != nil {
		return d.arena.allocations(n)
	}
	return make([]Allocation, n)
}

func (d *decoder) chat() *Chat {
	if !d.boolean() {
		return nil
	}
	return &Chat{ConversationID: d.str(), ChatQuoteID: d.str(), ListingID: d.str(),
		InitialListingRate: d.rate(), NegotiationStartedAt: d.str(), QuoteSentAt: d.str()}
}

func (d *decoder) settlement() Settlement {
	s := Settlement{Kind: SettlementKind(d.byte1()), Account: d.id(), AccountName: d.str(),
		AccountNumber: d.str(), BankCode: d.str(), Address: d.str()}
	if s.Kind > SettlementChain {
		d.fail()
	}
	return s
}

// webhookCreated writes an endpoint's registration: the WebhookCreated
// record and a snapshot's endpoint share it.
func (e *encoder) webhookCreated(ev *WebhookCreated) {
	e.id(ev.Webhook)
	e.id(ev.Client)
	e.byte1(uint8(ev.Mode))
	e.str(ev.URL)
	e.byte1(uint8(ev.Events))
	e.str(ev.Secret)
}

func (d *decoder) webhookCreated(at int64) *WebhookCreated {
	ev := &WebhookCreated{At: at, Webhook: d.id(), Client: d.id(), Mode: d.mode(), URL: d.str(),
		Events: WebhookEvents(d.byte1()), Secret: d.str()}
	if ev.Events&^WebhookEventsAll != 0 {
		d.fail()
	}
	return ev
}

// AppendEvent appends the encoding of ev to dst.
func AppendEvent(dst []byte, ev Event) []byte {
	e := encoder{buf: dst}
	if ev, ok := ev.(*QuoteCreated); ok {
		// The pending quote it creates, as a snapshot holds it.
		e.byte1(codecVersionQuoteFixed)
		e.byte1(uint8(EventQuoteCreated))
		e.varint(ev.At)
		var q Quote
		q.init(ev)
		encodeQuoteFixed(&e, &q)
		return e.buf
	}
	e.byte1(codecVersion)
	e.byte1(uint8(ev.Type()))
	e.varint(ev.Time())
	switch ev.(type) {
	case *ClientCreated, *KeyCreated, *KeyRevoked, *KeyRolled, *KeysUsed, *OperatorCreated, *OperatorRevoked, *OperatorActed:
		e.registryEvent(ev)
	case *PoolCreated, *PoolRateSet, *PoolStatusSet, *PoolDeposited, *PoolWithdrawn:
		e.poolEvent(ev)
	case *QuoteAccepted, *PayInSeen, *QuoteCancelled, *QuoteExpired, *QuoteCompleted:
		e.quoteEvent(ev)
	case *AccountDeposited, *PaymentReceived, *AccountWithdrawn, *ReceiptReversed, *CreditLimitSet, *ReceiptUnapplied, *UnappliedSettled:
		e.fundsEvent(ev)
	case *WebhookCreated, *WebhookDeleted, *WebhookSettled, *WebhookUpdated, *WebhookSecretRotated:
		e.webhookEvent(ev)
	case *MarketsSet, *ChainProgressed:
		e.marketEvent(ev)
	default:
		panic(fmt.Sprintf("engine: AppendEvent: unknown event %T", ev))
	}
	return e.buf
}

// registryEvent writes the fields of an event of clients, their keys and operators.
func (e *encoder) registryEvent(ev Event) {
	switch ev := ev.(type) {
	case *ClientCreated:
		e.id(ev.Client)
		e.str(ev.Name)
		e.uvarint(uint64(len(ev.Wallets)))
		for _, w := range ev.Wallets {
			e.byte1(uint8(w.Mode))
			e.byte1(uint8(w.Currency))
			e.id(w.Account)
		}
	case *KeyCreated:
		e.id(ev.Key)
		e.id(ev.Client)
		e.byte1(uint8(ev.Mode))
		e.hash(ev.Hash)
	case *KeyRevoked:
		e.id(ev.Key)
	case *KeyRolled:
		e.id(ev.Old)
		e.id(ev.Key)
		e.hash(ev.Hash)
		e.varint(ev.ExpiresAt)
	case *KeysUsed:
		e.uvarint(uint64(len(ev.Uses)))
		for _, u := range ev.Uses {
			e.id(u.Key)
			e.varint(u.At)
		}
	case *OperatorCreated:
		e.id(ev.Operator)
		e.str(ev.Name)
		e.byte1(uint8(ev.Role))
		e.hash(ev.Hash)
	case *OperatorRevoked:
		e.id(ev.Operator)
	case *OperatorActed:
		e.id(ev.Audit)
		e.str(ev.Operator)
		e.id(ev.OperatorID)
		e.str(ev.Action)
		e.str(ev.Target)
		e.uvarint(uint64(ev.Status))
		if ev.Details != nil {
			e.auditDetails(ev.Details)
		}
	}
}

// poolEvent writes the fields of an event of pools.
func (e *encoder) poolEvent(ev Event) {
	switch ev := ev.(type) {
	case *PoolCreated:
		e.id(ev.Pool)
		e.byte1(uint8(ev.Mode))
		e.str(ev.Name)
		e.pair(ev.Pair)
		e.rate(ev.Rate)
		e.id(ev.Owner)
		e.id(ev.LiquidityAccount)
		e.id(ev.ProceedsAccount)
	case *PoolRateSet:
		e.id(ev.Pool)
		e.rate(ev.Rate)
	case *PoolStatusSet:
		e.id(ev.Pool)
		e.boolean(ev.Active)
	case *PoolDeposited:
		e.id(ev.Pool)
		e.amount(ev.Amount)
	case *PoolWithdrawn:
		e.id(ev.Pool)
		e.amount(ev.Amount)
	}
}

// quoteEvent writes the fields of an event of a quote's lifecycle after its creation.
func (e *encoder) quoteEvent(ev Event) {
	switch ev := ev.(type) {
	case *QuoteAccepted:
		e.id(ev.Quote)
		e.id(ev.PoolAccount)
		e.settlement(&ev.Settlement)
		e.varint(ev.ExpiresAt)
		if ev.PayIn != nil {
			e.payIn(ev.PayIn)
		}
	case *PayInSeen:
		e.id(ev.Quote)
		e.amount(ev.Amount)
		e.str(ev.TxHash)
	case *QuoteCancelled:
		e.id(ev.Quote)
	case *QuoteExpired:
		e.id(ev.Quote)
	case *QuoteCompleted:
		e.id(ev.Quote)
		if ev.Funded() {
			e.id(ev.Wallet)
			e.amount(ev.Simulated)
		}
	}
}

// fundsEvent writes the fields of an event of money in wallets: receipts, deposits, withdrawals, credit, suspense.
func (e *encoder) fundsEvent(ev Event) {
	switch ev := ev.(type) {
	case *AccountDeposited:
		e.id(ev.Account)
		e.amount(ev.Amount)
		if !ev.Reference.IsZero() {
			e.identity(ev.Reference)
			e.str(ev.IdempotencyKey)
			e.hash(ev.RequestHash)
		}
	case *PaymentReceived:
		e.byte1(uint8(ev.Method))
		e.id(ev.Quote)
		e.id(ev.Account)
		e.amount(ev.Amount)
		if ev.Identity.IsZero() {
			e.str(ev.Reference)
			e.id(ev.Address)
		} else { // the reference is the identity's text
			e.id(ev.Address)
			e.identity(ev.Identity)
		}
	case *AccountWithdrawn:
		e.id(ev.Account)
		e.amount(ev.Amount)
		if !ev.Reference.IsZero() {
			e.identity(ev.Reference)
			e.str(ev.IdempotencyKey)
			e.hash(ev.RequestHash)
		}
	case *ReceiptReversed:
		e.receiptID(ev.Receipt)
		e.id(ev.Account)
		e.amount(ev.Amount)
		e.str(ev.Reason)
	case *CreditLimitSet:
		e.id(ev.Account)
		e.amount(ev.Limit)
	case *ReceiptUnapplied:
		e.unapplied(&ev.Receipt)
	case *UnappliedSettled:
		e.byte1(uint8(ev.Mode))
		e.id(ev.Unapplied)
		e.amount(ev.Amount)
		e.id(ev.Account)
		e.id(ev.Quote)
		e.boolean(!ev.Return.IsZero())
		if !ev.Return.IsZero() {
			e.identity(ev.Return)
		}
	}
}

// webhookEvent writes the fields of an event of webhook endpoints and their deliveries.
func (e *encoder) webhookEvent(ev Event) {
	switch ev := ev.(type) {
	case *WebhookUpdated:
		e.id(ev.Webhook)
		e.str(ev.URL)
		e.byte1(uint8(ev.Events))
	case *WebhookSecretRotated:
		e.id(ev.Webhook)
		e.str(ev.Secret)
		e.varint(ev.PreviousUntil)
	case *WebhookCreated:
		e.webhookCreated(ev)
	case *WebhookDeleted:
		e.id(ev.Webhook)
	case *WebhookSettled:
		e.id(ev.Webhook)
		e.id(ev.Event)
		e.boolean(ev.Delivered)
	}
}

// marketEvent writes the fields of an event of markets and the chains watched.
func (e *encoder) marketEvent(ev Event) {
	switch ev := ev.(type) {
	case *MarketsSet:
		e.markets(ev.Markets)
		if len(ev.Markets.SandboxCollection) > 0 {
			e.sandboxCollection(ev.Markets)
		}
	case *ChainProgressed:
		e.chainProgressed(ev)
	}
}

// DecodeEvent decodes one event. It never panics on hostile bytes.
func DecodeEvent(b []byte) (Event, error) { return decodeEvent(b, nil) }

// EventDecoder decodes a long run of records (a replay of thousands). The
// strings and allocation lists of the quotes it decodes come from shared
// chunks (arena.go), as a snapshot's decode takes them, instead of an
// allocation each: a run's quotes are created together and age out
// together. For a few records DecodeEvent is the better choice: each
// decoder's last chunks are held as long as any quote in them.
//
// Not safe for concurrent use.
type EventDecoder struct {
	arena bulkArena
	// created is the free tail of the current chunk of QuoteCreated
	// events: a replay's most common record, allocated a chunk at a time
	// too (nothing keeps an applied one).
	created []QuoteCreated
}

// eventChunk is how many QuoteCreated events an EventDecoder allocates at
// once: a chunk of some 832 KB (unsafe.Sizeof(QuoteCreated{}) is 208),
// mapped in with one call (internal/prefault), like the arena's chunks:
// on a virtual machine the first write to each page of 128-event chunks
// took a tenth of the decoding of a replay of a million quotes.
const eventChunk = 4096

// Decode is DecodeEvent.
func (x *EventDecoder) Decode(b []byte) (Event, error) { return decodeEvent(b, x) }

// Reuse makes buf's elements the QuoteCreated events x decodes next, in
// order, until they are used up (then x takes chunks of its own again).
// The events buf held must no longer be read: a replay hands a batch's
// events back once they are applied (nothing keeps an applied one), so
// that each batch is decoded into memory the processor's cache still
// holds rather than into a fresh chunk's pages: a replay of a million
// quotes wrote some 200 MB of events once each, and the writes that
// missed the cache took a third of its decoding.
func (x *EventDecoder) Reuse(buf []QuoteCreated) { x.created = buf[:cap(buf)] }

// newQuoteCreated is a zero QuoteCreated, from x's chunk if x is set.
func (x *EventDecoder) newQuoteCreated() *QuoteCreated {
	if x == nil {
		return new(QuoteCreated)
	}
	if len(x.created) == 0 {
		x.created = make([]QuoteCreated, eventChunk)
		prefault.Slice(x.created)
	}
	e := &x.created[0]
	x.created = x.created[1:]
	return e
}

// quoteCreatedVarint reads the body of a version 1 QuoteCreated into e.
func (d *decoder) quoteCreatedVarint(e *QuoteCreated, at int64) *QuoteCreated {
	e.At, e.Quote, e.Client, e.Mode, e.Pair = at, d.id(), d.id(), d.mode(), d.pair()
	e.Direction, e.Amount, e.ProposedRate, e.Chain = Direction(d.byte1()), d.amount(), d.rate(), Chain(d.byte1())
	e.Reference, e.ExpiresAt = d.ref(), d.varint()
	if e.Direction != DirectionSource && e.Direction != DirectionDestination || e.Chain >= chainEnd {
		d.fail()
	}
	e.Allocations = d.allocations()
	e.Chat = d.chat()
	e.IdempotencyKey = d.idemKey()
	e.RequestHash = d.hash()
	e.Channel = Channel(d.byte1())
	e.Key = d.id()
	if e.Channel > ChannelXML {
		d.fail()
	}
	return e
}

// quoteCreatedFixed reads the body of a version 2 QuoteCreated into e: a
// quote in the snapshot's layout that is exactly the pending quote an
// event at at creates (NewQuote), so that what decodes re-encodes to the
// same bytes.
func (d *decoder) quoteCreatedFixed(e *QuoteCreated, at int64) *QuoteCreated {
	var q Quote
	decodeQuoteFixed(d, &q)
	if d.err != nil {
		return e
	}
	*e = QuoteCreated{At: at, Quote: q.ID, Client: q.Client, Mode: q.Mode, Pair: q.Pair, Direction: q.Direction,
		Amount: q.Amount, ProposedRate: q.ProposedRate, Chain: q.Chain, Reference: q.Reference, ExpiresAt: q.ExpiresAt,
		Allocations: q.Allocations(), Chat: q.Chat, IdempotencyKey: q.IdempotencyKey, RequestHash: q.RequestHash,
		Channel: q.Channel, Key: q.Key}
	// What the record holds beyond the event's fields: as Quote.init sets it.
	if q.Status != StatusPending || q.CreatedAt != at || q.UpdatedAt != at || q.TTL != ttlSeconds(at, q.ExpiresAt) ||
		q.Accepted != nil || q.PayIn != nil {
		d.fail()
	}
	return e
}

// decodeEvent is DecodeEvent; with x set, as x decodes.
func decodeEvent(b []byte, x *EventDecoder) (Event, error) {
	d := decoder{buf: b}
	version := d.byte1()
	if version != codecVersion && version != codecVersionQuoteFixed {
		return nil, fmt.Errorf("%w: unknown codec version", ErrCorruptEvent)
	}
	typ := EventType(d.byte1())
	at := d.varint()
	if x != nil && typ == EventQuoteCreated {
		d.arena = &x.arena // for the quote's strings and allocations alone
	}
	var ev Event
	switch {
	case version == codecVersionQuoteFixed && typ == EventQuoteCreated:
		ev = d.quoteCreatedFixed(x.newQuoteCreated(), at)
	case version == codecVersionQuoteFixed:
		return nil, fmt.Errorf("%w: codec version %d of a %s", ErrCorruptEvent, version, typ)
	default:
		ev = d.event(typ, at, x)
		if ev == nil {
			return nil, fmt.Errorf("%w: unknown event type %d", ErrCorruptEvent, typ)
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: truncated or invalid %s", ErrCorruptEvent, typ)
	}
	if len(d.buf) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after %s", ErrCorruptEvent, len(d.buf), typ)
	}
	return ev, nil
}

// event decodes the body of a version 1 record of type typ (nil for an
// unknown type): the fields in declaration order, as AppendEvent writes
// them.
func (d *decoder) event(typ EventType, at int64, x *EventDecoder) Event {
	switch typ {
	case EventQuoteCreated:
		return d.quoteCreatedVarint(x.newQuoteCreated(), at)
	case EventClientCreated, EventKeyCreated, EventKeyRevoked, EventKeyRolled, EventKeysUsed, EventOperatorCreated, EventOperatorRevoked, EventOperatorActed, EventOperatorActedInline:
		return d.registryEvent(typ, at)
	case EventPoolCreated, EventPoolRateSet, EventPoolStatusSet, EventPoolDeposited, EventPoolWithdrawn:
		return d.poolEvent(typ, at)
	case EventQuoteAccepted, EventQuoteAcceptedWithPayIn, EventPayInSeen, EventQuoteCancelled, EventQuoteCancelledByOperator, EventQuoteExpired, EventQuoteCompleted, EventQuoteCompletedFunded:
		return d.quoteEvent(typ, at)
	case EventAccountDeposited, EventAccountDepositedRef, EventPaymentReceived, EventPaymentIdentified, EventAccountWithdrawn, EventAccountWithdrawnRef, EventReceiptReversed, EventCreditLimitSet, EventReceiptUnapplied, EventUnappliedSettled:
		return d.fundsEvent(typ, at)
	case EventWebhookUpdated, EventWebhookSecretRotated, EventWebhookCreated, EventWebhookDeleted, EventWebhookSettled:
		return d.webhookEvent(typ, at)
	case EventMarketsSet, EventMarketsSetSandbox, EventChainProgressed:
		return d.marketEvent(typ, at)
	}
	return nil
}

// registryEvent reads the body of an event of clients, their keys and operators.
func (d *decoder) registryEvent(typ EventType, at int64) Event {
	switch typ {
	case EventClientCreated:
		e := &ClientCreated{At: at, Client: d.id(), Name: d.str()}
		n := d.uvarint()
		if n > walletsMax {
			d.fail()
			n = 0
		}
		e.Wallets = make([]WalletAccount, 0, n)
		for i := uint64(0); i < n && d.err == nil; i++ {
			w := WalletAccount{Mode: d.mode(), Currency: Currency(d.byte1()), Account: d.id()}
			if !w.Currency.Valid() {
				d.fail()
			}
			e.Wallets = append(e.Wallets, w)
		}
		return e
	case EventKeyCreated:
		return &KeyCreated{At: at, Key: d.id(), Client: d.id(), Mode: d.mode(), Hash: d.hash()}
	case EventKeyRevoked:
		return &KeyRevoked{At: at, Key: d.id()}
	case EventKeyRolled:
		return &KeyRolled{At: at, Old: d.id(), Key: d.id(), Hash: d.hash(), ExpiresAt: d.varint()}
	case EventKeysUsed:
		n := d.uvarint()
		if n == 0 || n > KeysUsedMax {
			d.fail()
			n = 0
		}
		e := &KeysUsed{At: at, Uses: make([]KeyUse, 0, n)}
		for i := uint64(0); i < n && d.err == nil; i++ {
			e.Uses = append(e.Uses, KeyUse{Key: d.id(), At: d.varint()})
		}
		return e
	case EventOperatorCreated:
		return &OperatorCreated{At: at, Operator: d.id(), Name: d.str(), Role: Role(d.byte1()), Hash: d.hash()}
	case EventOperatorRevoked:
		return &OperatorRevoked{At: at, Operator: d.id()}
	case EventOperatorActed, EventOperatorActedInline:
		e := &OperatorActed{At: at, Audit: d.id(), Operator: d.str(), OperatorID: d.id(), Action: d.str(), Target: d.str()}
		if st := d.uvarint(); st <= 999 {
			e.Status = uint16(st)
		} else {
			d.fail()
		}
		if typ == EventOperatorActedInline {
			e.Details = d.auditDetails()
		}
		return e
	}
	return nil
}

// poolEvent reads the body of an event of pools.
func (d *decoder) poolEvent(typ EventType, at int64) Event {
	switch typ {
	case EventPoolCreated:
		return &PoolCreated{At: at, Pool: d.id(), Mode: d.mode(), Name: d.str(), Pair: d.pair(),
			Rate: d.rate(), Owner: d.id(), LiquidityAccount: d.id(), ProceedsAccount: d.id()}
	case EventPoolRateSet:
		return &PoolRateSet{At: at, Pool: d.id(), Rate: d.rate()}
	case EventPoolStatusSet:
		return &PoolStatusSet{At: at, Pool: d.id(), Active: d.boolean()}
	case EventPoolDeposited:
		return &PoolDeposited{At: at, Pool: d.id(), Amount: d.amount()}
	case EventPoolWithdrawn:
		return &PoolWithdrawn{At: at, Pool: d.id(), Amount: d.amount()}
	}
	return nil
}

// quoteEvent reads the body of an event of a quote's lifecycle after its creation.
func (d *decoder) quoteEvent(typ EventType, at int64) Event {
	switch typ {
	case EventQuoteAccepted, EventQuoteAcceptedWithPayIn:
		e := &QuoteAccepted{At: at, Quote: d.id(), PoolAccount: d.id()}
		e.Settlement = d.settlement()
		e.ExpiresAt = d.varint()
		if e.Settlement.Kind == SettlementNone || e.Settlement.Kind > SettlementChain {
			d.fail()
		}
		if typ == EventQuoteAcceptedWithPayIn {
			e.PayIn = d.payIn(at)
		}
		return e
	case EventPayInSeen:
		e := &PayInSeen{At: at, Quote: d.id(), Amount: d.amount(), TxHash: d.str()}
		if e.Amount <= 0 || e.Amount > AmountMax || e.TxHash == "" || len(e.TxHash) > PayInTxHashMax {
			d.fail()
		}
		return e
	case EventQuoteCancelled, EventQuoteCancelledByOperator:
		return &QuoteCancelled{At: at, Quote: d.id(), ByOperator: typ == EventQuoteCancelledByOperator}
	case EventQuoteExpired:
		return &QuoteExpired{At: at, Quote: d.id()}
	case EventQuoteCompleted:
		return &QuoteCompleted{At: at, Quote: d.id()}
	case EventQuoteCompletedFunded:
		e := &QuoteCompleted{At: at, Quote: d.id(), Wallet: d.id(), Simulated: d.amount()}
		if !e.Funded() || e.Simulated < 0 || e.Simulated > AmountMax {
			d.fail()
		}
		return e
	}
	return nil
}

// fundsEvent reads the body of an event of money in wallets: receipts, deposits, withdrawals, credit, suspense.
func (d *decoder) fundsEvent(typ EventType, at int64) Event {
	switch typ {
	case EventAccountDeposited, EventAccountDepositedRef:
		e := &AccountDeposited{At: at, Account: d.id(), Amount: d.amount()}
		if typ == EventAccountDepositedRef {
			e.Reference, e.IdempotencyKey, e.RequestHash = d.referenceIdentity(), d.str(), d.hash()
		}
		return e
	case EventPaymentReceived, EventPaymentIdentified:
		e := &PaymentReceived{At: at, Method: ReceiptMethod(d.byte1()), Quote: d.id(), Account: d.id(), Amount: d.amount()}
		if typ == EventPaymentReceived {
			e.Reference, e.Address = d.str(), d.id()
		} else {
			e.Address, e.Identity = d.id(), d.identity()
			e.Reference = e.Identity.Text()
		}
		if e.Method != ReceiptCrypto && e.Method != ReceiptBank || e.Amount <= 0 || e.Amount > AmountMax ||
			e.Reference == "" || len(e.Reference) > ReceiptReferenceBytesMax {
			d.fail()
		}
		return e
	case EventAccountWithdrawn, EventAccountWithdrawnRef:
		e := &AccountWithdrawn{At: at, Account: d.id(), Amount: d.amount()}
		if typ == EventAccountWithdrawnRef {
			e.Reference, e.IdempotencyKey, e.RequestHash = d.referenceIdentity(), d.str(), d.hash()
		}
		if e.Amount <= 0 || e.Amount > AmountMax {
			d.fail()
		}
		return e
	case EventReceiptReversed:
		e := &ReceiptReversed{At: at, Receipt: d.receiptID(), Account: d.id(), Amount: d.amount(), Reason: d.str()}
		if e.Amount <= 0 || e.Amount > AmountMax || len(e.Reason) > ReversalReasonBytesMax {
			d.fail()
		}
		return e
	case EventCreditLimitSet:
		e := &CreditLimitSet{At: at, Account: d.id(), Limit: d.amount()}
		if e.Limit < 0 || e.Limit > AmountMax {
			d.fail()
		}
		return e
	case EventReceiptUnapplied:
		return &ReceiptUnapplied{At: at, Receipt: d.unapplied()}
	case EventUnappliedSettled:
		e := &UnappliedSettled{At: at, Mode: d.mode(), Unapplied: d.id(), Amount: d.amount(), Account: d.id(), Quote: d.id()}
		if d.boolean() {
			e.Return = d.identity()
		}
		return e
	}
	return nil
}

// webhookEvent reads the body of an event of webhook endpoints and their deliveries.
func (d *decoder) webhookEvent(typ EventType, at int64) Event {
	switch typ {
	case EventWebhookUpdated:
		e := &WebhookUpdated{At: at, Webhook: d.id(), URL: d.str(), Events: WebhookEvents(d.byte1())}
		if e.Events&^WebhookEventsAll != 0 {
			d.fail()
		}
		return e
	case EventWebhookSecretRotated:
		return &WebhookSecretRotated{At: at, Webhook: d.id(), Secret: d.str(), PreviousUntil: d.varint()}
	case EventWebhookCreated:
		return d.webhookCreated(at)
	case EventWebhookDeleted:
		return &WebhookDeleted{At: at, Webhook: d.id()}
	case EventWebhookSettled:
		return &WebhookSettled{At: at, Webhook: d.id(), Event: d.id(), Delivered: d.boolean()}
	}
	return nil
}

// marketEvent reads the body of an event of markets and the chains watched.
func (d *decoder) marketEvent(typ EventType, at int64) Event {
	switch typ {
	case EventMarketsSet, EventMarketsSetSandbox:
		m := d.markets()
		if typ == EventMarketsSetSandbox {
			d.sandboxCollection(m)
			if len(m.SandboxCollection) == 0 {
				d.fail()
			}
		}
		return &MarketsSet{At: at, Markets: m}
	case EventChainProgressed:
		return d.chainProgressed(at)
	}
	return nil
}

// identity writes a payment's identity (identity.go).
func (e *encoder) identity(id Identity) {
	e.byte1(uint8(id.Kind))
	e.byte1(uint8(id.Chain))
	e.byte1(uint8(id.Currency))
	e.uvarint(uint64(id.LogIndex))
	e.str(id.Ref)
}

// identity reads what encoder.identity wrote: a well-formed identity, else
// the record is corrupt.
func (d *decoder) identity() Identity {
	id := Identity{Kind: IdentityKind(d.byte1()), Chain: Chain(d.byte1()), Currency: Currency(d.byte1())}
	if n := d.uvarint(); n <= LogIndexMax {
		id.LogIndex = uint32(n)
	} else {
		d.fail()
	}
	id.Ref = d.str()
	if d.err == nil && !id.valid() {
		d.fail()
	}
	return id
}

// referenceIdentity reads a prefund's or payout's identity: one of the
// reference kinds.
func (d *decoder) referenceIdentity() Identity {
	id := d.identity()
	if id.Kind != IdentityInbound && id.Kind != IdentityOutbound {
		d.fail()
	}
	return id
}

func (e *encoder) receiptID(id ReceiptID) {
	e.byte1(uint8(id.Mode))
	e.uvarint(id.Seq)
}

func (d *decoder) receiptID() ReceiptID {
	id := ReceiptID{Mode: d.mode(), Seq: d.uvarint()}
	if id.Seq == 0 {
		d.fail()
	}
	return id
}

// auditDetails writes an audit line's details; an empty reference is one
// byte.
func (e *encoder) auditDetails(a *AuditDetails) {
	e.amount(a.Amount)
	e.byte1(uint8(a.Currency))
	e.str(a.Reference)
	e.str(a.TxHash)
	e.str(a.BankTransactionID)
	e.id(a.Quote)
	e.id(a.Account)
	e.byte1(uint8(a.Receipt.Mode))
	e.uvarint(a.Receipt.Seq)
}

func (d *decoder) auditDetails() *AuditDetails {
	a := &AuditDetails{Amount: d.amount(), Currency: Currency(d.byte1()), Reference: d.str(), TxHash: d.str(),
		BankTransactionID: d.str(), Quote: d.id(), Account: d.id()}
	a.Receipt = ReceiptID{Mode: Mode(d.byte1()), Seq: d.uvarint()}
	if a.Amount < 0 || a.Currency != CurrencyNone && !a.Currency.Valid() ||
		a.Receipt.Seq != 0 && a.Receipt.Mode != ModeLive && a.Receipt.Mode != ModeSandbox {
		d.fail()
	}
	return a
}

// AppendRateUvarint appends r as an unsigned LEB128 varint of up to 19
// bytes. For a rate below 2^64 units it is byte for byte the uvarint
// encoding/binary writes, so every record written before rates were 128
// bits decodes unchanged (and request hashes stay the same).
func AppendRateUvarint(b []byte, r Rate) []byte {
	hi, lo := r.hi, r.lo
	for hi != 0 || lo >= 0x80 {
		b = append(b, byte(lo)|0x80)
		lo = lo>>7 | hi<<57
		hi >>= 7
	}
	return append(b, byte(lo))
}

// rateUvarint decodes AppendRateUvarint's bytes: the rate and the bytes it
// took, or n <= 0 when they are truncated or hold more than 128 bits.
func rateUvarint(b []byte) (r Rate, n int) {
	var shift uint
	for i, c := range b {
		if i == 19 || (i == 18 && c > 3) {
			return Rate{}, -1 // over 128 bits
		}
		v := uint64(c & 0x7f)
		if shift < 64 {
			r.lo |= v << shift
			if shift > 57 {
				r.hi |= v >> (64 - shift)
			}
		} else {
			r.hi |= v << (shift - 64)
		}
		if c < 0x80 {
			return r, i + 1
		}
		shift += 7
	}
	return Rate{}, 0
}

// payIn writes an issued pay-in (not its sighting: PayInSeen records that).
func (e *encoder) payIn(p *PayIn) {
	e.id(p.Address)
	e.str(p.Deposit)
	e.byte1(uint8(p.Currency))
	e.byte1(uint8(p.Chain))
	e.uvarint(uint64(p.Index))
}

func (d *decoder) payIn(at int64) *PayIn {
	p := &PayIn{Address: d.id(), Deposit: d.str(), Currency: d.currency(), Chain: d.chain(), CreatedAt: at}
	index := d.uvarint()
	if index >= 1<<31 {
		d.fail()
	}
	p.Index = uint32(index)
	return p
}
