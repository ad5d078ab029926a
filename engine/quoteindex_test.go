package engine

import "testing"

// TestQuoteIndexSharedHash drives the QuoteIndex over the path the Table's
// own tests (internal/hashindex) do not take: ids whose hashes are equal,
// where Get finds another quote first (Table.First) and must look on
// (Table.Get) by the id. Every id is found, once, through deletes from the
// middle of the run; an id never put is not found. The id hash itself is
// checked to spread counters, as the tests' ids are.
func TestQuoteIndexSharedHash(t *testing.T) {
	x := NewQuoteIndex(0)
	x.hashOf = func(id QuoteID) uint64 { return uint64(id[0] % 2) } // two hashes, one home slot
	quotes := map[QuoteID]*Quote{}
	for i := range 40 {
		q := &Quote{ID: QuoteID{byte(i), 0xee}}
		if !x.Put(q) {
			t.Fatalf("Put(%x) refused a new id", q.ID[:2])
		}
		quotes[q.ID] = q
	}
	if x.Put(&Quote{ID: QuoteID{7, 0xee}}) {
		t.Fatal("Put accepted an id already held")
	}
	for i := 0; i < 40; i += 3 {
		id := QuoteID{byte(i), 0xee}
		if !x.Delete(id) || x.Delete(id) {
			t.Fatalf("Delete(%x) did not delete exactly once", id[:2])
		}
		delete(quotes, id)
	}
	for id, q := range quotes {
		if got := x.Get(id); got != q {
			t.Fatalf("Get(%x) = %p, want %p", id[:2], got, q)
		}
	}
	if x.Get(QuoteID{0, 0xee}) != nil || x.Get(QuoteID{41, 0xee}) != nil || x.Len() != len(quotes) {
		t.Fatalf("a deleted or never-put id is found, or Len %d is not %d", x.Len(), len(quotes))
	}

	// The id hash spreads counters over the home slots of a table.
	y := NewQuoteIndex(1 << 12)
	homes := map[uint64]bool{}
	for i := range 1 << 12 {
		homes[y.hash(QuoteID{byte(i), byte(i >> 8)})>>52] = true // the top 12 bits
	}
	if len(homes) < 1<<11 {
		t.Fatalf("4,096 counter ids fall on %d of 4,096 home slots", len(homes))
	}
}
