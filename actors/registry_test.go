package actors

import (
	"maps"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

func registryRef(id engine.QuoteID) *quoteRef {
	ref := &quoteRef{}
	ref.view.Store(&engine.Quote{ID: id})
	return ref
}

// registryHeld is what Range yields, checked against what Load finds.
func registryHeld(t *testing.T, r *quoteRegistry) map[engine.QuoteID]*quoteRef {
	t.Helper()
	held := make(map[engine.QuoteID]*quoteRef)
	r.Range(func(id engine.QuoteID, ref *quoteRef) bool {
		if _, twice := held[id]; twice {
			t.Errorf("Range yields %x twice", id)
		}
		held[id] = ref
		return true
	})
	for id, ref := range held {
		if got, ok := r.Load(id); !ok || got != ref {
			t.Errorf("Load(%x) = %p, %v; Range yields %p", id, got, ok, ref)
		}
	}
	return held
}

// TestQuoteRegistryCollisions drives the registry with a hash that makes
// ids collide: every id is found, once, through deletions of ids in the
// middle of a run of equal hashes.
func TestQuoteRegistryCollisions(t *testing.T) {
	var r quoteRegistry
	r.init(0)
	r.index.HashOf = func(id engine.QuoteID) uint64 { return uint64(id[0] % 3) } // 3 slots, one shard
	want := make(map[engine.QuoteID]*quoteRef)
	for i := range 12 {
		id := engine.QuoteID{byte(i), 0xee}
		want[id] = registryRef(id)
		r.Store(id, want[id])
	}
	if got := registryHeld(t, &r); !maps.Equal(got, want) {
		t.Fatalf("registry holds %d quotes, want %d", len(got), len(want))
	}
	if _, ok := r.Load(engine.QuoteID{12, 0xee}); ok {
		t.Error("an id never stored is found (its hash's slot is taken)")
	}

	// Storing again replaces, first of its hash or not.
	for _, i := range []byte{0, 7} {
		id := engine.QuoteID{i, 0xee}
		want[id] = registryRef(id)
		r.Store(id, want[id])
	}
	// Drop the first of each hash (0, 1, 2) and some after them: the rest
	// move back and are still found.
	drop := map[byte]bool{0: true, 1: true, 2: true, 4: true, 9: true}
	r.DeleteIf(func(id engine.QuoteID, ref *quoteRef) bool {
		if ref.view.Load().ID != id {
			t.Errorf("DeleteIf is given %x with the ref of %x", id, ref.view.Load().ID)
		}
		return drop[id[0]]
	})
	for i := range drop {
		delete(want, engine.QuoteID{i, 0xee})
	}
	if got := registryHeld(t, &r); !maps.Equal(got, want) {
		t.Fatalf("after DeleteIf the registry holds %d quotes, want %d", len(got), len(want))
	}

	// Range stops when told to.
	n := 0
	r.Range(func(engine.QuoteID, *quoteRef) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("Range went on for %d entries after being told to stop at 2", n)
	}
}

// TestQuoteRegistryBulkStore registers refs in bulk (a start's,
// startRegistering) and one by one, with ids whose hashes collide and ids
// stored twice, and requires the same registry: every id found once, its
// last ref held.
func TestQuoteRegistryBulkStore(t *testing.T) {
	for _, collide := range []bool{false, true} {
		var bulk, one quoteRegistry
		bulk.init(64)
		one.init(64)
		if collide {
			// Three slots in each of two shards.
			hash := func(id engine.QuoteID) uint64 { return uint64(id[0]%2)<<58 | uint64(id[1]%3) }
			bulk.index.HashOf, one.index.HashOf = hash, hash
		}
		refs := make([]quoteRef, 0, 300)
		for i := range 300 {
			id := engine.QuoteID{byte(i), byte(i % 7), 0xee}
			if i >= 250 {
				id = engine.QuoteID{byte(i - 250), byte((i - 250) % 7), 0xee} // stored again
			}
			refs = append(refs, quoteRef{})
			refs[i].view.Store(&engine.Quote{ID: id})
		}
		g := startRegistering(&bulk)
		g.in <- refs[:100]
		g.in <- refs[100:]
		close(g.in)
		<-g.done
		for i := range refs {
			one.Store(refs[i].view.Load().ID, &refs[i])
		}
		got, want := registryHeld(t, &bulk), registryHeld(t, &one)
		if len(want) != 250 {
			t.Fatalf("collide=%v: one by one holds %d ids, want 250", collide, len(want))
		}
		if !maps.Equal(got, want) {
			t.Errorf("collide=%v: the bulk store holds %d ids, one by one %d (or other refs)", collide, len(got), len(want))
		}
	}
}
