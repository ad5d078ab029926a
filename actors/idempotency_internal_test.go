package actors

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/oja-exchange/oja/engine"
)

// The Idempotency-Key index through a key's life: a claim waits out one in
// flight and then replays its quote; a released create leaves its key to
// the created keys and nothing in flight; a create that made no quote
// frees its key; a quote stored without a claim (a create whose caller
// gave up) is found; keys past the retention are forgotten; a recovered
// key is shadowed by one created since.
func TestIdempotencyIndexLife(t *testing.T) {
	var now atomic.Int64
	now.Store(1_000_000)
	recovered := engine.NewIdempotencyIndex(0)
	var x idempotencyIndex
	known := map[engine.QuoteID]*engine.Quote{}
	x.init(recovered, func(id engine.QuoteID) *engine.Quote { return known[id] }, now.Load)
	client := engine.ClientID{1}
	quote := func(id byte, key string, hash byte) *engine.Quote {
		q := engine.NewQuote(&engine.QuoteCreated{At: now.Load(), Quote: engine.QuoteID{id}, Client: client,
			Mode: engine.ModeSandbox, ExpiresAt: now.Load() + 1000, IdempotencyKey: engine.MakeIdemKey(key),
			RequestHash: [32]byte{hash}})
		known[q.ID] = q
		return q
	}
	scope := func(key string) engine.IdempotencyScope {
		return engine.IdempotencyScope{Client: client, Mode: engine.ModeSandbox, Key: engine.MakeIdemKey(key)}
	}

	// A claim, and a second request with the key while it is in flight.
	if reply, claimed := x.claim(scope("a"), [32]byte{1}); !claimed || reply != nil {
		t.Fatalf("first claim: %v, %v", reply, claimed)
	}
	waited := make(chan *QuoteReply)
	go func() {
		reply, _ := x.claim(scope("a"), [32]byte{1})
		waited <- reply
	}()
	// Most likely waiting by now; if it comes later it replays from the
	// created keys: the same answer.
	time.Sleep(20 * time.Millisecond)
	qa := quote(1, "a", 1)
	x.store(scope("a"), qa)
	x.release(scope("a"))
	if r := <-waited; r == nil || !r.Replayed || r.Quote.ID != qa.ID {
		t.Fatalf("the waiting request got %+v, want a replay of %s", r, qa.ID)
	}
	if len(x.entries) != 0 || x.created.Len() != 1 {
		t.Fatalf("after the release: %d in flight, %d created; want 0 and 1", len(x.entries), x.created.Len())
	}
	if r, claimed := x.claim(scope("a"), [32]byte{2}); claimed || r.Result != engine.ResultIdempotencyKeyReused {
		t.Fatalf("the key with another request: %+v, %v", r, claimed)
	}

	// A create that made no quote frees the key.
	if _, claimed := x.claim(scope("b"), [32]byte{1}); !claimed {
		t.Fatal("claim b")
	}
	x.release(scope("b"))
	if _, claimed := x.claim(scope("b"), [32]byte{1}); !claimed {
		t.Fatal("a key whose create made no quote is not free")
	}
	x.release(scope("b"))

	// A quote stored after its caller released the claim is found.
	x.store(scope("c"), quote(3, "c", 1))
	if r, claimed := x.claim(scope("c"), [32]byte{1}); claimed || !r.Replayed {
		t.Fatalf("a quote stored without a claim: %+v, %v", r, claimed)
	}

	// A recovered key is shadowed by the same key created since.
	old := quote(4, "d", 1)
	recovered.Put(old)
	x.store(scope("d"), quote(5, "d", 1))
	if e, ok := x.lookup(scope("d")); !ok || e.quote.ID != (engine.QuoteID{5}) {
		t.Fatalf("key d: %+v, want the quote created since", e)
	}

	// Past the retention, every key is forgotten.
	now.Add(engine.IdempotencyRetentionMillis + 1)
	if _, ok := x.lookup(scope("a")); ok {
		t.Error("a key past its retention is found before a prune")
	}
	x.prune(now.Load())
	if x.created.Len() != 0 || recovered.Len() != 0 {
		t.Errorf("after a prune: %d created and %d recovered keys kept", x.created.Len(), recovered.Len())
	}
}
