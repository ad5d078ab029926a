package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Webhooks: a partner registers endpoints that receive its quotes' state
// changes. The registrations and the outbox of events owed to each endpoint
// are part of the State, so they follow from the log alone: a quote event
// applied in log order owes one webhook event to every endpoint of the
// quote's client and mode subscribed to its kind at that point of the log,
// and a WebhookSettled record (delivered, or abandoned after the retry
// window) pays it. Replay, a snapshot and a replica therefore owe exactly
// what the running service owed when it stopped; nothing is lost by a crash
// between a quote event and its delivery (at least once, never silently
// none).

// WebhookID identifies a partner's webhook endpoint.
type WebhookID [16]byte

func (id WebhookID) String() string { return uuid.UUID(id).String() }

// IsZero reports whether id is the zero id.
func (id WebhookID) IsZero() bool { return id == WebhookID{} }

// EventID identifies one webhook event (rendered "evt_" + 32 hex digits).
// It is derived from the quote and the kind (a quote goes through each kind
// at most once), so every endpoint and every attempt sees the same id, and
// so does a restarted server.
type EventID [16]byte

func (id EventID) String() string { return fmt.Sprintf("evt_%x", id[:]) }

// ParseEventID reads an event id as String renders it ("evt_" and 32
// hexadecimal digits); the zero id is no event's and is refused.
func ParseEventID(s string) (EventID, bool) {
	var id EventID
	digits, ok := strings.CutPrefix(s, "evt_")
	if !ok || len(digits) != 2*len(id) {
		return id, false
	}
	if _, err := hex.Decode(id[:], []byte(digits)); err != nil {
		return id, false
	}
	return id, id != EventID{}
}

// WebhookEvents is a set of the quote event kinds a webhook receives.
type WebhookEvents uint8

const (
	WebhookQuoteCreated WebhookEvents = 1 << iota
	WebhookQuoteAccepted
	WebhookQuoteCompleted
	WebhookQuoteCancelled
	WebhookQuoteExpired
	// WebhookPayInReceived: a payment for one of the client's quotes was
	// credited to its wallet (PaymentReceived; data.payin).
	WebhookPayInReceived
	// WebhookEventsAll is every kind.
	WebhookEventsAll = WebhookQuoteCreated | WebhookQuoteAccepted | WebhookQuoteCompleted |
		WebhookQuoteCancelled | WebhookQuoteExpired | WebhookPayInReceived
)

// webhookKinds lists the kinds in lifecycle order with their wire names.
var webhookKinds = []struct {
	kind WebhookEvents
	name string
}{
	{WebhookQuoteCreated, "quote.created"},
	{WebhookQuoteAccepted, "quote.accepted"},
	{WebhookQuoteCompleted, "quote.completed"},
	{WebhookQuoteCancelled, "quote.cancelled"},
	{WebhookQuoteExpired, "quote.expired"},
	{WebhookPayInReceived, "payin.received"},
}

// ParseWebhookEvent maps a wire name ("quote.created", …) to its kind.
func ParseWebhookEvent(s string) (WebhookEvents, bool) {
	for _, k := range webhookKinds {
		if k.name == s {
			return k.kind, true
		}
	}
	return 0, false
}

// Names lists the kinds in the set, in lifecycle order.
func (w WebhookEvents) Names() []string {
	var out []string
	for _, k := range webhookKinds {
		if w&k.kind != 0 {
			out = append(out, k.name)
		}
	}
	return out
}

// String is the wire name of a single kind ("" for a set or none).
func (w WebhookEvents) String() string {
	for _, k := range webhookKinds {
		if w == k.kind {
			return k.name
		}
	}
	return ""
}

// WebhookKind is the kind of webhook event a quote event is (0: none).
func WebhookKind(ev Event) WebhookEvents {
	switch ev.(type) {
	case *QuoteCreated:
		return WebhookQuoteCreated
	case *QuoteAccepted:
		return WebhookQuoteAccepted
	case *QuoteCompleted:
		return WebhookQuoteCompleted
	case *QuoteCancelled:
		return WebhookQuoteCancelled
	case *QuoteExpired:
		return WebhookQuoteExpired
	}
	return 0
}

// WebhookEventID is the id of the kind event of quote q.
func WebhookEventID(q QuoteID, kind WebhookEvents) EventID {
	h := sha256.New()
	h.Write([]byte("oja webhook event\x00"))
	h.Write(q[:])
	h.Write([]byte{byte(kind)})
	var sum [32]byte
	h.Sum(sum[:0])
	return EventID(sum[:16])
}

// Limits of webhooks, enforced by State.check so that replay refuses what
// the service would have refused.
const (
	// WebhooksPerClientMax bounds the endpoints of one client (both modes).
	WebhooksPerClientMax = 16
	// WebhookURLBytesMax bounds an endpoint's URL.
	WebhookURLBytesMax = 2048
	// WebhookOwedMax bounds the events owed to one endpoint (the outbox);
	// beyond it new events for that endpoint are counted in Dropped, not
	// owed, so a dead endpoint cannot grow the state without bound.
	WebhookOwedMax = 10000
)

// Webhook is a registered endpoint and its outbox.
type Webhook struct {
	ID        WebhookID
	Client    ClientID
	Mode      Mode
	URL       string
	Events    WebhookEvents
	Secret    string // the whsec_ signing secret (shown to the partner once)
	CreatedAt int64
	// PreviousSecret is the secret a rotation replaced; it signs too, as a
	// second v1, until PreviousUntil (Unix ms; 0: no previous secret).
	PreviousSecret string
	PreviousUntil  int64
	// owed are the events not yet delivered nor abandoned, in log order,
	// with holes where events were settled since the last compaction
	// (OwedEvents reads them without the holes); owedAt is each owed
	// event's index in owed. Settling one is O(1): a hole and a map delete,
	// and owed is compacted once it is half holes (amortised O(1)) — it was
	// a scan and a shift of the whole outbox per settlement, which a
	// restart replaying 20,000 settlements of full outboxes paid for in
	// seconds.
	owed   []OwedEvent
	owedAt map[EventID]int
	// Dropped counts events not owed because the outbox was full.
	Dropped uint64
}

// OwedCount is how many events the endpoint is owed.
func (w *Webhook) OwedCount() int { return len(w.owedAt) }

// OwedEvents returns the events owed, in log order. It is the outbox
// itself when it has no holes (read only), else a copy without them.
func (w *Webhook) OwedEvents() []OwedEvent {
	if len(w.owed) == len(w.owedAt) {
		return w.owed
	}
	out := make([]OwedEvent, 0, len(w.owedAt))
	for i := range w.owed {
		if !w.owed[i].settled {
			out = append(out, w.owed[i])
		}
	}
	return out
}

// addOwed appends e to the outbox and returns it in place.
func (w *Webhook) addOwed(e OwedEvent) *OwedEvent {
	if w.owedAt == nil {
		w.owedAt = make(map[EventID]int)
	}
	if _, dup := w.owedAt[e.ID]; !dup {
		w.owedAt[e.ID] = len(w.owed)
	}
	w.owed = append(w.owed, e)
	return &w.owed[len(w.owed)-1]
}

// webhookCompactMin is the fewest holes a compaction of an outbox is worth.
const webhookCompactMin = 64

// settle removes the owed event id, if owed.
func (w *Webhook) settle(id EventID) {
	i, ok := w.owedAt[id]
	if !ok {
		return
	}
	delete(w.owedAt, id)
	w.owed[i] = OwedEvent{settled: true} // a hole; its quote is no longer referenced
	holes := len(w.owed) - len(w.owedAt)
	if len(w.owedAt) == 0 {
		w.owed = w.owed[:0]
		return
	}
	if holes < webhookCompactMin || holes*2 < len(w.owed) {
		return
	}
	kept := w.owed[:0]
	for _, e := range w.owed {
		if !e.settled {
			w.owedAt[e.ID] = len(kept)
			kept = append(kept, e)
		}
	}
	clear(w.owed[len(kept):])
	w.owed = kept
}

// Registration is w without its outbox.
func (w *Webhook) Registration() Webhook {
	c := *w
	c.owed, c.owedAt = nil, nil
	return c
}

// OwedEvent is one webhook event owed to an endpoint.
type OwedEvent struct {
	ID    EventID
	Kind  WebhookEvents
	At    int64 // the quote event's time
	Quote Quote // the quote as that event left it (immutable parts shared)
	// Receipt is a payin.received event's payment (immutable); nil for
	// the quote kinds. Quote is then only its subject (receiptSubject).
	Receipt *PaymentReceived
	// Markets are the markets in force at the event (immutable; their
	// collection accounts are the bank pay-in instructions), and PaidIn
	// whether a deposit to the quote's crypto pay-in had been credited:
	// what a body shows besides the quote, as of the event, so it renders
	// the same on every replica and at every attempt.
	Markets *Markets
	PaidIn  bool
	// settled marks a hole in an outbox (Webhook.settle).
	settled bool
}

// ReceiptEventID is the id of the payin.received event of a receipt:
// derived from its idempotency key, so each receipt is one event.
func ReceiptEventID(k ReceiptKey) EventID {
	h := sha256.New()
	h.Write([]byte("oja webhook payin\x00"))
	h.Write([]byte{byte(k.Method)})
	h.Write(k.Address[:])
	h.Write([]byte(k.Reference))
	var sum [32]byte
	h.Sum(sum[:0])
	return EventID(sum[:16])
}

// WebhookObserver is told of webhook endpoints and owed events: seeded
// with State.TellWebhooks, then fed the effects of each record
// (Effects.Tell). The pointers are valid during the call only.
type WebhookObserver interface {
	// Registered: w (without an outbox yet) was created, or (told again)
	// its URL, events or signing secrets changed.
	Registered(w *Webhook)
	// Deleted: w was deleted with the events it was owed.
	Deleted(w *Webhook)
	// Owed: e was appended to w's outbox.
	Owed(w *Webhook, e *OwedEvent)
	// Dropped: e was not owed because w's outbox was full.
	Dropped(w *Webhook, e *OwedEvent)
}

// WebhookCreated registers an endpoint.
type WebhookCreated struct {
	At      int64
	Webhook WebhookID
	Client  ClientID
	Mode    Mode
	URL     string
	Events  WebhookEvents
	Secret  string
}

// WebhookSecretRotated replaces an endpoint's signing secret with Secret;
// the secret it replaces keeps signing, as a second v1 signature, until
// PreviousUntil (a secret older than that stops at once).
type WebhookSecretRotated struct {
	At            int64
	Webhook       WebhookID
	Secret        string
	PreviousUntil int64
}

// WebhookUpdated sets an endpoint's URL and event set (both, as they are
// from then on). Events owed already stay owed, and go to the new URL.
type WebhookUpdated struct {
	At      int64
	Webhook WebhookID
	URL     string
	Events  WebhookEvents
}

func (*WebhookUpdated) Type() EventType { return EventWebhookUpdated }
func (e *WebhookUpdated) Time() int64   { return e.At }

func (*WebhookSecretRotated) Type() EventType { return EventWebhookSecretRotated }
func (e *WebhookSecretRotated) Time() int64   { return e.At }

// WebhookDeleted removes an endpoint; the events it was owed are dropped.
type WebhookDeleted struct {
	At      int64
	Webhook WebhookID
}

// WebhookSettled pays an owed event: delivered (a 2xx), or abandoned after
// the retry window. It settles nothing when the event is no longer owed
// (its endpoint was deleted meanwhile, or it was settled before), so a
// delivery that finishes after a delete is still a record replay accepts.
type WebhookSettled struct {
	At        int64
	Webhook   WebhookID
	Event     EventID
	Delivered bool
}

func (*WebhookCreated) Type() EventType { return EventWebhookCreated }
func (*WebhookDeleted) Type() EventType { return EventWebhookDeleted }
func (*WebhookSettled) Type() EventType { return EventWebhookSettled }

func (e *WebhookCreated) Time() int64 { return e.At }
func (e *WebhookDeleted) Time() int64 { return e.At }
func (e *WebhookSettled) Time() int64 { return e.At }

// ClientWebhooks returns the client's endpoints (both modes) in creation
// order.
func (s *State) ClientWebhooks(c ClientID) []*Webhook { return s.webhooksOf[c] }

// TellWebhooks tells o of every endpoint and every event owed now (in
// WebhooksInOrder, log order within each): how a dispatcher is seeded
// before it takes the effects of later records (Effects).
func (s *State) TellWebhooks(o WebhookObserver) {
	for _, w := range s.WebhooksInOrder() {
		o.Registered(w)
		for i := range w.owed {
			if !w.owed[i].settled {
				o.Owed(w, &w.owed[i])
			}
		}
	}
}

// CheckWebhookCreated decides whether ev may register an endpoint beside
// the client's existing ones: the live service and replay share it.
func CheckWebhookCreated(existing []*Webhook, ev *WebhookCreated) error {
	switch {
	case ev.Webhook.IsZero():
		return fmt.Errorf("webhook id is zero")
	case ev.Events == 0 || ev.Events&^WebhookEventsAll != 0:
		return fmt.Errorf("webhook events %#x not a non-empty set of known kinds", uint8(ev.Events))
	case ev.URL == "" || len(ev.URL) > WebhookURLBytesMax:
		return fmt.Errorf("webhook url empty or over %d bytes", WebhookURLBytesMax)
	case ev.Secret == "":
		return fmt.Errorf("webhook secret empty")
	case len(existing) >= WebhooksPerClientMax:
		return fmt.Errorf("%w: client has %d", ErrTooManyWebhooks, len(existing))
	}
	return nil
}

// ErrTooManyWebhooks is CheckWebhookCreated's refusal of a client's
// endpoint beyond WebhooksPerClientMax (ResultTooManyWebhooks).
var ErrTooManyWebhooks = errors.New("engine: too many webhooks")

func (s *State) checkWebhook(ev Event) error {
	switch ev := ev.(type) {
	case *WebhookCreated:
		if _, ok := s.Clients[ev.Client]; !ok {
			return fmt.Errorf("unknown client %s", ev.Client)
		}
		if _, dup := s.Webhooks[ev.Webhook]; dup {
			return fmt.Errorf("webhook %s exists", ev.Webhook)
		}
		return CheckWebhookCreated(s.webhooksOf[ev.Client], ev)
	case *WebhookDeleted:
		if _, ok := s.Webhooks[ev.Webhook]; !ok {
			return fmt.Errorf("unknown webhook %s", ev.Webhook)
		}
	case *WebhookUpdated:
		switch _, ok := s.Webhooks[ev.Webhook]; {
		case !ok:
			return fmt.Errorf("unknown webhook %s", ev.Webhook)
		case ev.URL == "" || len(ev.URL) > WebhookURLBytesMax:
			return fmt.Errorf("webhook %s: URL empty or over %d bytes", ev.Webhook, WebhookURLBytesMax)
		case ev.Events == 0 || ev.Events&^WebhookEventsAll != 0:
			return fmt.Errorf("webhook %s: events %#x", ev.Webhook, uint8(ev.Events))
		}
	case *WebhookSecretRotated:
		switch w, ok := s.Webhooks[ev.Webhook]; {
		case !ok:
			return fmt.Errorf("unknown webhook %s", ev.Webhook)
		case ev.Secret == "" || ev.Secret == w.Secret:
			return fmt.Errorf("webhook %s: the new secret is empty or the current one", ev.Webhook)
		case ev.PreviousUntil < ev.At:
			return fmt.Errorf("webhook %s: the previous secret would stop before the rotation", ev.Webhook)
		}
	}
	return nil
}

func (s *State) applyWebhook(ev Event) {
	switch ev := ev.(type) {
	case *WebhookCreated:
		w := &Webhook{ID: ev.Webhook, Client: ev.Client, Mode: ev.Mode, URL: ev.URL,
			Events: ev.Events, Secret: ev.Secret, CreatedAt: ev.At}
		s.addWebhook(w)
		s.webhookEffect(EffectRegistered, w, nil)
	case *WebhookDeleted:
		w := s.Webhooks[ev.Webhook]
		s.webhookEffect(EffectDeleted, w, nil)
		delete(s.Webhooks, ev.Webhook)
		hooks := s.webhooksOf[w.Client]
		hooks = slices.DeleteFunc(slices.Clone(hooks), func(x *Webhook) bool { return x.ID == w.ID })
		if len(hooks) == 0 {
			delete(s.webhooksOf, w.Client)
		} else {
			s.webhooksOf[w.Client] = hooks
		}
	case *WebhookSettled:
		w, ok := s.Webhooks[ev.Webhook]
		if !ok {
			return
		}
		w.settle(ev.Event)
	case *WebhookUpdated:
		w := s.Webhooks[ev.Webhook]
		w.URL, w.Events = ev.URL, ev.Events
		s.webhookEffect(EffectRegistered, w, nil)
	case *WebhookSecretRotated:
		w := s.Webhooks[ev.Webhook]
		w.PreviousSecret, w.PreviousUntil, w.Secret = w.Secret, ev.PreviousUntil, ev.Secret
		s.webhookEffect(EffectRegistered, w, nil)
	}
}

// addWebhook indexes a registered endpoint (creation order per client).
func (s *State) addWebhook(w *Webhook) {
	s.Webhooks[w.ID] = w
	s.webhooksOf[w.Client] = append(s.webhooksOf[w.Client], w)
}

// owe records the webhook event a quote event is, for every endpoint of the
// quote's client and mode subscribed to its kind.
func (s *State) owe(q *Quote, ev Event) {
	kind := WebhookKind(ev)
	if kind == 0 {
		return
	}
	// NB: the event's id (a SHA-256) only when it may be owed: for a
	// client with no endpoint it was 8 % of a replay's State.Apply.
	hooks, owes := s.hooksOf(q.Client)
	if !owes {
		return
	}
	s.oweEvent(q, hooks, OwedEvent{ID: WebhookEventID(q.ID, kind), Kind: kind, At: ev.Time()})
}

// hooksOf is client c's endpoints, and whether an event of c's may be owed
// at all: c has an endpoint, or the state collects every event (the event
// history's applier).
func (s *State) hooksOf(c ClientID) (hooks []*Webhook, owes bool) {
	hooks = s.webhooksOf[c]
	return hooks, len(hooks) > 0 || s.collectEvents
}

// oweReceipt records the payin.received event of a receipt r into a
// wallet of t. Its Quote is the receipt's subject (receiptSubject), not
// the quote as it is: the event carries the receipt only.
func (s *State) oweReceipt(t *Treasury, r *PaymentReceived) {
	q := receiptSubject(t, r)
	if hooks, owes := s.hooksOf(q.Client); owes {
		s.oweEvent(&q, hooks, OwedEvent{ID: ReceiptEventID(r.Key()), Kind: WebhookPayInReceived, At: r.At, Receipt: r})
	}
}

// receiptSubject is what a payin.received event needs of its quote — its
// id, and the client, mode and source currency of the wallet credited — so
// that it is the same whether or not the quote is still held (snapshots
// keep the receipt alone).
func receiptSubject(t *Treasury, r *PaymentReceived) Quote {
	w := t.Wallets[r.Account]
	return Quote{ID: r.Quote, Client: ClientID(w.Owner), Mode: t.Mode, Pair: Pair{Source: w.Currency}}
}

// oweEvent owes e (its Quote filled in here) to every endpoint of hooks,
// q's client's (hooksOf), of q's mode and subscribed to its kind.
func (s *State) oweEvent(q *Quote, hooks []*Webhook, owed OwedEvent) {
	s.fillBody(&owed, q)
	if s.collectEvents {
		e := owed
		e.Quote = *q
		s.effects.Events = append(s.effects.Events, e)
	}
	kind := owed.Kind
	for _, w := range hooks {
		if w.Mode != q.Mode || w.Events&kind == 0 {
			continue
		}
		e := owed
		e.Quote = *q
		if w.OwedCount() >= WebhookOwedMax {
			w.Dropped++
			s.webhookEffect(EffectDropped, w, &e)
			continue
		}
		added := w.addOwed(e)
		s.webhookEffect(EffectOwed, w, added)
	}
}

// fillBody sets what e's body shows besides its quote q, as the state
// has it now: the markets in force and whether q's crypto pay-in was
// credited. Owing an event and restoring an outbox from a snapshot both
// fill it here.
func (s *State) fillBody(e *OwedEvent, q *Quote) {
	e.Markets = s.Markets
	if q.PayIn != nil && e.Receipt == nil {
		if t := s.Treasuries[q.Mode]; t != nil {
			e.PaidIn = len(t.ReceiptsOf(q.ID)) > 0
		}
	}
}

// WebhooksInOrder returns every endpoint, by client then creation order
// (deterministic; for snapshots and seeding a dispatcher).
func (s *State) WebhooksInOrder() []*Webhook {
	var out []*Webhook
	for _, c := range sortedKeys(s.webhooksOf) {
		out = append(out, s.webhooksOf[c]...)
	}
	return out
}
