package engine

import (
	"math/rand/v2"
	"testing"
)

// TestQuoteIndexAgainstAMap drives a QuoteIndex and a Go map with the same
// random puts and deletes and compares them: with a hash of few values,
// ids share whole hashes and home slots, runs grow long and wrap around the
// table's end, and deletes shift them back; the table doubles from empty.
func TestQuoteIndexAgainstAMap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hashes uint64 // distinct hashes the ids get; 0: the seeded hash
		sized  int
	}{
		{"seeded hash", 0, 0},
		{"sized", 0, 3000},
		{"256 hashes", 256, 0}, // a dozen ids a hash
		{"64 hashes", 64, 0},   // some 50 ids a hash, in long runs
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			x := NewQuoteIndex(tc.sized)
			if tc.hashes != 0 {
				// The top bits pick the home slot: spread the few values
				// over them, so that runs fill and wrap.
				x.hashOf = func(id QuoteID) uint64 {
					return (uint64(id[0]) % tc.hashes) * (^uint64(0) / tc.hashes)
				}
			}
			want := map[QuoteID]*Quote{}
			var ids []QuoteID
			for step := range 20_000 {
				if len(ids) > 0 && rng.IntN(3) == 0 {
					i := rng.IntN(len(ids))
					id := ids[i]
					_, had := want[id]
					if got := x.Delete(id); got != had {
						t.Fatalf("step %d: Delete(%x) = %v, held %v", step, id[:2], got, had)
					}
					delete(want, id)
					ids[i] = ids[len(ids)-1]
					ids = ids[:len(ids)-1]
				} else {
					var id QuoteID
					id[0], id[1] = byte(rng.Uint32()), byte(rng.IntN(12)) // repeats: about 3,000 ids
					q := &Quote{ID: id}
					_, had := want[id]
					if got := x.Put(q); got == had {
						t.Fatalf("step %d: Put(%x) = %v, held %v", step, id[:2], got, had)
					}
					if !had {
						want[id] = q
						ids = append(ids, id)
					}
				}
				if x.Len() != len(want) {
					t.Fatalf("step %d: Len %d, want %d", step, x.Len(), len(want))
				}
				if step%1009 == 0 || step > 19_980 {
					// Reading ahead changes nothing.
					for id := range want {
						x.readAhead(id)
					}
					x.warm()
					for id, q := range want {
						if got := x.Get(id); got != q {
							t.Fatalf("step %d: Get(%x) = %p, want %p", step, id[:2], got, q)
						}
					}
					n := 0
					for q := range x.All() {
						if want[q.ID] != q {
							t.Fatalf("step %d: All yields %x, not held", step, q.ID[:2])
						}
						n++
					}
					if n != len(want) {
						t.Fatalf("step %d: All yields %d quotes, want %d", step, n, len(want))
					}
				}
			}
			var absent QuoteID
			absent[2] = 1 // no step makes it
			if x.Get(absent) != nil || x.Delete(absent) {
				t.Fatal("an id never put is found")
			}
		})
	}
}
