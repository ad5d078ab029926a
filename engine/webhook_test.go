package engine_test

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// recorder is a WebhookObserver that keeps what it was told.
type recorder struct{ hooks, owed, dropped []string }

func (r *recorder) Registered(w *engine.Webhook) { r.hooks = append(r.hooks, "+"+w.URL) }
func (r *recorder) Deleted(w *engine.Webhook)    { r.hooks = append(r.hooks, "-"+w.URL) }

func (r *recorder) Owed(w *engine.Webhook, e *engine.OwedEvent) {
	r.owed = append(r.owed, fmt.Sprintf("%s %s %s", w.URL, e.Kind, e.Quote.Status))
}

func (r *recorder) Dropped(w *engine.Webhook, e *engine.OwedEvent) {
	r.dropped = append(r.dropped, fmt.Sprintf("%s %s", w.URL, e.Kind))
}

func (w *world) webhook(client engine.ClientID, m engine.Mode, url string, kinds engine.WebhookEvents) engine.WebhookID {
	w.t.Helper()
	id := engine.WebhookID(w.newID())
	w.apply(&engine.WebhookCreated{At: w.now, Webhook: id, Client: client, Mode: m, URL: url, Events: kinds, Secret: "whsec_t"})
	return id
}

// TestWebhookOutbox: a quote event owes one event to each endpoint of the
// quote's client and mode subscribed to its kind, carrying the quote as
// that event left it; settling pays it once; a delete drops the outbox;
// settling what is no longer owed is accepted and changes nothing.
func TestWebhookOutbox(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("Ada").Client
	bola := w.createClient("Bola").Client
	pool := w.createPool(engine.ModeSandbox, pairNGNUSDT, "p", decimalRate(t, "0.000625"))
	w.deposit(pool, decimalAmount(t, "1000", engine.CurrencyUSDT))
	var rec recorder
	w.observe(&rec)

	all := w.webhook(ada, engine.ModeSandbox, "https://all", engine.WebhookEventsAll)
	done := w.webhook(ada, engine.ModeSandbox, "https://done", engine.WebhookQuoteCompleted)
	live := w.webhook(ada, engine.ModeLive, "https://live", engine.WebhookEventsAll)
	other := w.webhook(bola, engine.ModeSandbox, "https://bola", engine.WebhookEventsAll)

	_, q := w.createQuote(quoteRequest{client: ada, mode: engine.ModeSandbox, pair: pairNGNUSDT,
		direction: engine.DirectionSource, amount: decimalAmount(t, "1600", engine.CurrencyNGN), rate: engine.RateFromUnits(1)})
	if res := w.accept(q, w.walletAccept(q)); res != engine.ResultOK {
		t.Fatalf("accept: %v", res)
	}
	if res := w.complete(q); res != engine.ResultOK {
		t.Fatalf("complete: %v", res)
	}
	want := []string{"https://all quote.created pending", "https://all quote.accepted awaiting_payment",
		"https://all quote.completed completed", "https://done quote.completed completed"}
	if got := strings.Join(rec.owed, "|"); got != strings.Join(want, "|") {
		t.Fatalf("owed:\n%s\nwant\n%s", got, strings.Join(want, "|"))
	}
	s := w.state
	if n := s.Webhooks[live].OwedCount() + s.Webhooks[other].OwedCount(); n != 0 {
		t.Fatalf("%d events owed to another mode's or client's endpoint", n)
	}
	owed := s.Webhooks[all].OwedEvents()
	if owed[0].Quote.Status != engine.StatusPending {
		t.Fatalf("created event carries status %s", owed[0].Quote.Status)
	}
	completed := engine.WebhookEventID(q.ID, engine.WebhookQuoteCompleted)
	if owed[2].ID != completed || s.Webhooks[done].OwedEvents()[0].ID != completed {
		t.Fatalf("one event has different ids per endpoint")
	}
	if owed[0].ID == owed[1].ID || !strings.HasPrefix(owed[0].ID.String(), "evt_") || len(owed[0].ID.String()) != 36 {
		t.Fatalf("event ids %s %s", owed[0].ID, owed[1].ID)
	}

	// Settle the accepted one (not the head): the others stay in order.
	accepted := owed[1].ID
	w.apply(&engine.WebhookSettled{At: w.now, Webhook: all, Event: accepted, Delivered: true})
	got := s.Webhooks[all].OwedEvents()
	if len(got) != 2 || got[0].Kind != engine.WebhookQuoteCreated || got[1].Kind != engine.WebhookQuoteCompleted {
		t.Fatalf("after settling one: %d owed", len(got))
	}
	hash := s.Hash()
	w.apply(&engine.WebhookSettled{At: w.now, Webhook: all, Event: accepted, Delivered: true}) // again
	w.apply(&engine.WebhookSettled{At: w.now, Webhook: engine.WebhookID(idOf("nope")), Event: accepted})
	if s.Hash() != hash {
		t.Fatalf("settling what is not owed changed the state")
	}

	w.apply(&engine.WebhookDeleted{At: w.now, Webhook: all})
	if _, ok := s.Webhooks[all]; ok || len(s.ClientWebhooks(ada)) != 2 {
		t.Fatalf("deleted webhook still there (%d left)", len(s.ClientWebhooks(ada)))
	}
	w.apply(&engine.WebhookSettled{At: w.now, Webhook: all, Event: completed, Delivered: true})
	if err := s.Apply(&engine.WebhookDeleted{At: w.now, Webhook: all}); err == nil {
		t.Fatal("a second delete applied")
	}
	// A cancel after the delete owes nothing to it; the others still get theirs.
	_, q2 := w.createQuote(quoteRequest{client: ada, mode: engine.ModeSandbox, pair: pairNGNUSDT,
		direction: engine.DirectionSource, amount: decimalAmount(t, "1600", engine.CurrencyNGN), rate: engine.RateFromUnits(1)})
	w.cancel(q2)
	if n := len(rec.owed); n != len(want) {
		t.Fatalf("%d owed after the delete, want %d (the deleted endpoint was the only one for those kinds)", n, len(want))
	}
	if got := strings.Join(rec.hooks, " "); got != "+https://all +https://done +https://live +https://bola -https://all" {
		t.Fatalf("registrations observed: %s", got)
	}
	// A new observer is told of what is there now.
	var late recorder
	s.TellWebhooks(&late)
	if got := strings.Join(late.hooks, " "); len(late.hooks) != 3 || len(late.owed) != 1 {
		t.Fatalf("seeded with %s and %d owed, want the 3 endpoints and the 1 completed event owed to done", got, len(late.owed))
	}
}

// TestWebhookCreatedChecks: replay refuses what the service refuses.
func TestWebhookCreatedChecks(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("Ada").Client
	first := w.webhook(ada, engine.ModeSandbox, "https://x", engine.WebhookQuoteCreated)
	ok := engine.WebhookCreated{At: w.now, Webhook: engine.WebhookID(idOf("new")), Client: ada, Mode: engine.ModeSandbox,
		URL: "https://x", Events: engine.WebhookQuoteCreated, Secret: "whsec_x"}
	for name, mutate := range map[string]func(e *engine.WebhookCreated){
		"unknown client": func(e *engine.WebhookCreated) { e.Client = engine.ClientID(idOf("ghost")) },
		"duplicate id":   func(e *engine.WebhookCreated) { e.Webhook = first },
		"zero id":        func(e *engine.WebhookCreated) { e.Webhook = engine.WebhookID{} },
		"no events":      func(e *engine.WebhookCreated) { e.Events = 0 },
		"unknown kind":   func(e *engine.WebhookCreated) { e.Events = 1 << 6 },
		"empty url":      func(e *engine.WebhookCreated) { e.URL = "" },
		"long url":       func(e *engine.WebhookCreated) { e.URL = strings.Repeat("u", engine.WebhookURLBytesMax+1) },
		"no secret":      func(e *engine.WebhookCreated) { e.Secret = "" },
	} {
		ev := ok
		mutate(&ev)
		hash := w.state.Hash()
		if err := w.state.Apply(&ev); err == nil {
			t.Errorf("%s: applied", name)
		}
		if w.state.Hash() != hash {
			t.Errorf("%s: refused event changed the state", name)
		}
	}
	for len(w.state.ClientWebhooks(ada)) < engine.WebhooksPerClientMax {
		w.webhook(ada, engine.ModeLive, "https://y", engine.WebhookEventsAll)
	}
	if err := w.state.Apply(&ok); err == nil {
		t.Errorf("webhook %d of one client applied", engine.WebhooksPerClientMax+1)
	}
}

// TestWebhookOwedBounded: a dead endpoint's outbox stops growing at
// WebhookOwedMax; further events are counted as dropped, and a snapshot
// keeps both.
func TestWebhookOwedBounded(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("Ada").Client
	pool := w.createPool(engine.ModeSandbox, pairNGNUSDT, "p", decimalRate(t, "0.000625"))
	w.deposit(pool, decimalAmount(t, "1000000", engine.CurrencyUSDT))
	hook := w.webhook(ada, engine.ModeSandbox, "https://dead", engine.WebhookEventsAll)
	var rec recorder
	w.observe(&rec)
	for range engine.WebhookOwedMax/2 + 3 {
		_, q := w.createQuote(quoteRequest{client: ada, mode: engine.ModeSandbox, pair: pairNGNUSDT,
			direction: engine.DirectionSource, amount: decimalAmount(t, "16", engine.CurrencyNGN), rate: engine.RateFromUnits(1)})
		w.cancel(q)
	}
	h := w.state.Webhooks[hook]
	if h.OwedCount() != engine.WebhookOwedMax || h.Dropped != 6 || len(rec.dropped) != 6 {
		t.Fatalf("owed %d (max %d), dropped %d, observed %d", h.OwedCount(), engine.WebhookOwedMax, h.Dropped, len(rec.dropped))
	}
	decoded, err := engine.DecodeState(engine.EncodeState(w.state))
	if err != nil {
		t.Fatal(err)
	}
	if d := decoded.Webhooks[hook]; d.OwedCount() != engine.WebhookOwedMax || d.Dropped != 6 || d.OwedEvents()[0].Quote.ID != h.OwedEvents()[0].Quote.ID {
		t.Fatalf("snapshot lost the outbox")
	}
	if decoded.Hash() != w.state.Hash() {
		t.Fatal("snapshot hash differs")
	}
}

// TestEffectsCollected: with collecting on, Apply leaves each partner
// event (an endpoint subscribed or not) and each webhook change as data
// for the caller; off, it leaves none; ClearEffects empties them.
func TestEffectsCollected(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("Ada").Client
	pool := w.createPool(engine.ModeSandbox, pairNGNUSDT, "p", decimalRate(t, "0.000625"))
	w.deposit(pool, decimalAmount(t, "1000", engine.CurrencyUSDT))
	create := func() *engine.Quote {
		_, q := w.createQuote(quoteRequest{client: ada, mode: engine.ModeSandbox, pair: pairNGNUSDT,
			direction: engine.DirectionSource, amount: decimalAmount(t, "1600", engine.CurrencyNGN), rate: engine.RateFromUnits(1)})
		return q
	}
	create()
	if e := w.state.Effects(); len(e.Events) != 0 || len(e.Webhooks) != 0 {
		t.Fatalf("collected while off: %d events, %d webhook effects", len(e.Events), len(e.Webhooks))
	}
	w.state.CollectEffects(true, true)
	q := create() // no endpoint yet: a partner event, no webhook effect
	if e := w.state.Effects(); len(e.Events) != 1 || e.Events[0].Kind != engine.WebhookQuoteCreated ||
		e.Events[0].Quote.ID != q.ID || e.Events[0].Markets == nil || len(e.Webhooks) != 0 {
		t.Fatalf("effects %+v", e)
	}
	w.state.ClearEffects()
	w.webhook(ada, engine.ModeSandbox, "https://a", engine.WebhookQuoteCancelled)
	w.cancel(q)
	e := w.state.Effects()
	if len(e.Webhooks) != 2 || e.Webhooks[0].Kind != engine.EffectRegistered || e.Webhooks[0].Webhook.URL != "https://a" ||
		e.Webhooks[1].Kind != engine.EffectOwed || e.Webhooks[1].Event.Kind != engine.WebhookQuoteCancelled ||
		len(e.Events) != 1 || e.Events[0].Quote.Status != engine.StatusCancelled {
		t.Fatalf("after a registration and a cancel: %+v", e)
	}
	w.state.ClearEffects()
	if e := w.state.Effects(); len(e.Events)+len(e.Webhooks) != 0 {
		t.Fatal("ClearEffects left effects")
	}
}

// TestEventRecordRoundTrip: a partner event's stored form reads back as
// the event (the markets aside: the reader renders with those in force),
// for a quote event and a receipt's; damaged bytes are refused.
func TestEventRecordRoundTrip(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("Ada").Client
	pool := w.createPool(engine.ModeSandbox, pairNGNUSDT, "p", decimalRate(t, "0.000625"))
	w.deposit(pool, decimalAmount(t, "1000", engine.CurrencyUSDT))
	w.state.CollectEffects(false, true)
	_, q := w.createQuote(quoteRequest{client: ada, mode: engine.ModeSandbox, pair: pairNGNUSDT,
		direction: engine.DirectionSource, amount: decimalAmount(t, "1600", engine.CurrencyNGN), rate: engine.RateFromUnits(1)})
	events := append([]engine.OwedEvent(nil), w.state.Effects().Events...)
	receipt := &engine.PaymentReceived{At: w.now, Method: engine.ReceiptBank, Quote: q.ID, Account: engine.AccountID(w.newID()),
		Amount: 160000, Reference: "bank-tx-1"}
	events = append(events, engine.OwedEvent{ID: engine.ReceiptEventID(receipt.Key()), Kind: engine.WebhookPayInReceived,
		At: w.now, Receipt: receipt, PaidIn: true,
		Quote: engine.Quote{ID: q.ID, Client: ada, Mode: engine.ModeSandbox, Pair: engine.Pair{Source: engine.CurrencyNGN}}})
	if len(events) != 2 {
		t.Fatalf("%d events", len(events))
	}
	for _, e := range events {
		b := engine.AppendEventRecord(nil, &e)
		if k := engine.EventRecordKind(b); k != e.Kind {
			t.Fatalf("EventRecordKind %s, want %s", k, e.Kind)
		}
		got, err := engine.DecodeEventRecord(b)
		e.Markets = nil
		if err != nil || !reflect.DeepEqual(got, e) || !reflect.DeepEqual(got.Quote.Allocations(), e.Quote.Allocations()) {
			t.Fatalf("%s: %v\n%+v\nwant\n%+v", e.Kind, err, got, e)
		}
		if _, err := engine.DecodeEventRecord(b[:len(b)-1]); err == nil {
			t.Fatalf("%s: a truncated record decoded", e.Kind)
		}
		if _, err := engine.DecodeEventRecord(append(b, 0)); err == nil {
			t.Fatalf("%s: a record with a trailing byte decoded", e.Kind)
		}
	}
}

// TestWebhookEventIDIsStable pins the derivation of event ids: partners
// deduplicate deliveries by them, so the same quote and kind must give the
// same id in every release.
func TestWebhookEventIDIsStable(t *testing.T) {
	for _, q := range []engine.QuoteID{{}, {1, 2, 3}, {0xff, 0xee, 15: 0x01}} {
		for _, kind := range []engine.WebhookEvents{engine.WebhookQuoteCreated, engine.WebhookQuoteCompleted, engine.WebhookQuoteExpired} {
			sum := sha256.Sum256(append(append([]byte("oja webhook event\x00"), q[:]...), byte(kind)))
			if got, want := engine.WebhookEventID(q, kind), engine.EventID(sum[:16]); got != want {
				t.Errorf("WebhookEventID(%x, %v) = %x, want %x", q, kind, got, want)
			}
		}
	}
	if got := fmt.Sprintf("%x", [16]byte(engine.WebhookEventID(engine.QuoteID{1, 2, 3}, engine.WebhookQuoteCreated))); got != webhookEventIDGolden {
		t.Errorf("event id of quote 010203…, created = %s, want %s", got, webhookEventIDGolden)
	}
	if n := testing.AllocsPerRun(100, func() { _ = engine.WebhookEventID(engine.QuoteID{1}, engine.WebhookQuoteCreated) }); n != 0 {
		t.Errorf("WebhookEventID allocates %v times", n)
	}
}

// webhookEventIDGolden is the id of quote 01020300…00's created event,
// computed outside Go (Python's hashlib) from the derivation.
const webhookEventIDGolden = "cca391788773bda1003123336b65eeb0"
