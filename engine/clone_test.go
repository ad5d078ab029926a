package engine_test

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// TestCloneIsolated: a state and its clone share nothing either changes.
// Halfway through each command program (the fuzz driver's seeds and random
// ones, with webhook endpoints owed every event of the two first clients
// and an operator) the state is cloned; the
// original then runs the rest of the program and the clone must still
// encode as the state did when cloned; the clone then applies the same
// events, and the original must still encode as it did, while the clone
// must end equal to it, while another clone gets events of its own; the
// original must still encode and derive what it did.
func TestCloneIsolated(t *testing.T) {
	programs := commandSeeds()
	rng := rand.New(rand.NewPCG(29, 25))
	for range 8 {
		programs = append(programs, randomProgram(rng, 500))
	}
	for i, code := range programs {
		var same, own *engine.State // two clones: one gets the state's events, one its own first
		var cloned, owned []byte    // the state's encoding when cloned; own's after its own events
		at := 0                     // events applied then
		var ownAt int64
		begin := func(r *commandRun) {
			w := r.w
			w.apply(&engine.OperatorCreated{At: w.now, Operator: cloneOperator, Name: "Ngozi Eze", Role: engine.RoleOperator})
			for j := range 3 { // an audit trail of 3 with room for a 4th
				w.apply(acted(w.now, byte(j)))
			}
			for _, client := range r.clients {
				for _, m := range engine.Modes {
					w.apply(&engine.WebhookCreated{At: w.now, Webhook: engine.WebhookID(w.newID()), Client: client,
						Mode: m, URL: "https://a.example/h", Events: engine.WebhookEventsAll, Secret: "whsec_t"})
				}
			}
		}
		r := runCommandsWith(t, code, begin, func(r *commandRun) {
			w := r.w
			cloned = engine.EncodeState(w.state)
			same, own = w.state.Clone(), w.state.Clone()
			at, ownAt = len(w.events), w.now
			if got := engine.EncodeState(same); !bytes.Equal(got, cloned) {
				t.Fatalf("program %d: the clone encodes differently from the state", i)
			}
			// own appends where the state will append its later events
			// (a shared array would show it): a posting to every wallet;
			// and changes what the state's events never touch: the
			// operator acts and is revoked. (The program's final replay
			// check would see any of it leak into the state.)
			depositAll(t, own, ownAt)
			actAndRevoke(t, own, ownAt)
			owned = engine.EncodeState(own)
			w.apply(acted(w.now, 3)) // where own appended its own line
		})
		if same == nil {
			continue // a program too short to reach its middle
		}
		state := r.w.state
		if got := engine.EncodeState(same); !bytes.Equal(got, cloned) {
			t.Fatalf("program %d: the state's %d later events changed its clone", i, len(r.w.events)-at)
		}
		if got := engine.EncodeState(own); !bytes.Equal(got, owned) {
			t.Fatalf("program %d: the state's %d later events changed the clone that had appended its own", i, len(r.w.events)-at)
		}
		before, views := engine.EncodeState(state), viewsOf(state)
		unchanged := func(what string) {
			t.Helper()
			if got := engine.EncodeState(state); !bytes.Equal(got, before) {
				t.Fatalf("program %d: %s changed the state it was cloned from", i, what)
			}
			if got := viewsOf(state); !got.equal(views) {
				t.Fatalf("program %d: %s changed the state's derived views", i, what)
			}
		}
		// Both clones get the state's later events; the one that got
		// nothing else ends equal to the state.
		for _, c := range []*engine.State{same, own} {
			for j, ev := range r.w.events[at:] {
				copied, err := engine.DecodeEvent(engine.AppendEvent(nil, ev))
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Apply(copied); err != nil {
					t.Fatalf("program %d: a clone refused event %d (%s): %v", i, at+j, ev.Type(), err)
				}
			}
		}
		unchanged("the same events applied to its clones")
		for _, c := range []*engine.State{same, own} {
			for scope, rec := range viewsOf(c).idempotency {
				if !rec.own {
					t.Fatalf("program %d: a clone's Idempotency-Key %q names a quote the clone does not hold", i, scope.Key)
				}
			}
		}
		if same.Hash() != state.Hash() {
			t.Fatalf("program %d: the clone, given the same events, hashes %x; the state %x", i, same.Hash(), state.Hash())
		}
		// Then own changes in place what the state holds too: every owed
		// webhook event settled (the outbox), ended quotes forgotten
		// (postings trimmed, receipt lists filtered, Idempotency-Keys
		// dropped).
		now := r.w.now + 1
		settled := 0
		for id, hook := range own.Webhooks {
			for _, e := range hook.OwedEvents() {
				if err := own.Apply(&engine.WebhookSettled{At: now, Webhook: id, Event: e.ID, Delivered: true}); err != nil {
					t.Fatal(err)
				}
				settled++
			}
		}
		own.ForgetEnded(now + 1)
		unchanged("the clone's own events")
		for _, s := range []*engine.State{state, same, own} {
			slabsHoldQuotes(t, s)
		}
		t.Logf("program %d: %d events before the clone, %d after; %d owed events settled on the clone", i, at, len(r.w.events)-at, settled)
	}
}

// slabsHoldQuotes requires the quotes QuotesInOrder reads from s's slabs
// to be exactly those of s.Quotes.
func slabsHoldQuotes(t *testing.T, s *engine.State) {
	t.Helper()
	n := 0
	for q := range s.QuotesInOrder() {
		if s.Quotes[q.ID] != q {
			t.Fatalf("quote %s in a slab is not the state's", q.ID)
		}
		n++
	}
	if n != len(s.Quotes) {
		t.Fatalf("%d quotes in the slabs, %d in Quotes", n, len(s.Quotes))
	}
}

// cloneOperator is the operator TestCloneIsolated's states start with.
var cloneOperator = engine.OperatorID{0xC1, 0x0E}

// acted is an audit line of cloneOperator, its id made of n.
func acted(at int64, n byte) *engine.OperatorActed {
	return &engine.OperatorActed{At: at, Audit: engine.AuditID{0xA0, n}, Operator: "Ngozi Eze", OperatorID: cloneOperator,
		Action: "POST /admin/v1/clients", Target: "/admin/v1/clients", Status: 201}
}

// actAndRevoke records on s an action of cloneOperator, then its
// revocation.
func actAndRevoke(t *testing.T, s *engine.State, at int64) {
	t.Helper()
	for _, ev := range []engine.Event{acted(at, 0xA0), &engine.OperatorRevoked{At: at, Operator: cloneOperator}} {
		if err := s.Apply(ev); err != nil {
			t.Fatalf("%s on the clone: %v", ev.Type(), err)
		}
	}
}

// depositAll deposits one minor unit to every wallet of s.
func depositAll(t *testing.T, s *engine.State, at int64) {
	t.Helper()
	for _, m := range engine.Modes {
		for id := range s.Treasuries[m].Wallets {
			if err := s.Apply(&engine.AccountDeposited{At: at, Account: id, Amount: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// stateViews are what a state derives beside its encoding: Idempotency-Key
// records (rebuilt from the quotes on decoding), each quote's receipts as
// the treasuries list them, each endpoint's owed events.
type stateViews struct {
	idempotency map[engine.IdempotencyScope]idempotencyRecord
	receipts    map[engine.QuoteID][]engine.PaymentReceived
	owed        map[engine.WebhookID][]engine.EventID
}

// idempotencyRecord is what a state's Idempotency-Key record says, and
// whether it points at the state's own quote (not another state's copy).
type idempotencyRecord struct {
	quote engine.QuoteID
	hash  [32]byte
	at    int64
	own   bool
}

func viewsOf(s *engine.State) stateViews {
	v := stateViews{idempotency: map[engine.IdempotencyScope]idempotencyRecord{}, receipts: map[engine.QuoteID][]engine.PaymentReceived{},
		owed: map[engine.WebhookID][]engine.EventID{}}
	for scope, q := range s.Idempotency.All() {
		v.idempotency[scope] = idempotencyRecord{q.ID, q.RequestHash, q.CreatedAt, s.Quotes[q.ID] == q}
	}
	for id, q := range s.Quotes {
		for _, r := range s.Treasuries[q.Mode].ReceiptsOf(id) {
			v.receipts[id] = append(v.receipts[id], *r)
		}
	}
	for id, hook := range s.Webhooks {
		for _, e := range hook.OwedEvents() {
			v.owed[id] = append(v.owed[id], e.ID)
		}
		if n := hook.OwedCount(); n != len(v.owed[id]) {
			v.owed[id] = append(v.owed[id], engine.EventID{}) // an outbox index that disagrees with it
		}
	}
	return v
}

func (v stateViews) equal(o stateViews) bool {
	return maps.Equal(v.idempotency, o.idempotency) &&
		maps.EqualFunc(v.receipts, o.receipts, slices.Equal) && maps.EqualFunc(v.owed, o.owed, slices.Equal)
}
