package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestIdempotencyIndexCollisions drives an index whose hash collides
// constantly (three values for every scope, in two shards) and a plain
// map by scope through the same random puts, forgets and prunes, and
// requires them to agree after every step: Get on every scope, Len, All,
// and a remapped copy. A third index takes the same writes in bulk
// (keyWrites, applied every few steps) and must agree whenever applied.
func TestIdempotencyIndexCollisions(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 29))
	hash := func(s IdempotencyScope) uint64 {
		return uint64(s.Client[0]%2)<<idempotencyShardShift | uint64(len(s.Key)+int(s.Mode))%3
	}
	x, bulk := NewIdempotencyIndex(0), NewIdempotencyIndex(0)
	x.hashOf, bulk.hashOf = hash, hash
	writes := newKeyWrites(bulk)
	want := map[IdempotencyScope]*Quote{}
	var scopes []IdempotencyScope
	for c := range 3 {
		for m := range 2 {
			for k := range 5 {
				scopes = append(scopes, IdempotencyScope{ClientID{byte(c + 1)}, Mode(m + 1), fmt.Sprint("key-", k, k*k)})
			}
		}
	}
	quoteFor := func(s IdempotencyScope, n int) *Quote {
		return &Quote{ID: QuoteID{byte(n), byte(n >> 8)}, Client: s.Client, Mode: s.Mode, IdempotencyKey: s.Key, CreatedAt: int64(n)}
	}
	// put are the quotes put so far, and one never put.
	put := []*Quote{quoteFor(IdempotencyScope{Key: "never put"}, -1)}
	check := func(step int, x *IdempotencyIndex, want map[IdempotencyScope]*Quote) {
		t.Helper()
		for _, s := range scopes {
			got, ok := x.Get(s)
			if w, wok := want[s]; ok != wok || got != w {
				t.Fatalf("step %d: Get(%v) = %v, %v; want %v, %v", step, s, got, ok, w, wok)
			}
		}
		if x.Len() != len(want) {
			t.Fatalf("step %d: Len %d, want %d", step, x.Len(), len(want))
		}
		seen := map[IdempotencyScope]bool{}
		for s, q := range x.All() {
			if seen[s] || want[s] != q {
				t.Fatalf("step %d: All yields %v (again: %v) with a quote the map does not hold", step, s, seen[s])
			}
			seen[s] = true
		}
	}
	for step := range 2000 {
		s := scopes[rng.IntN(len(scopes))]
		switch r := rng.IntN(10); {
		case r < 6:
			q := quoteFor(s, step)
			x.Put(q)
			writes.add(q, false)
			want[s] = q
			put = append(put, q)
		case r < 9:
			// A quote put earlier, whose key may name a newer one since.
			q := put[rng.IntN(len(put))]
			x.Forget(q)
			writes.add(q, true)
			if want[ScopeOf(q)] == q {
				delete(want, ScopeOf(q))
			}
		default:
			cutoff := int64(step - 50)
			x.DeleteIf(func(q *Quote) bool { return q.CreatedAt < cutoff })
			writes.apply()
			bulk.DeleteIf(func(q *Quote) bool { return q.CreatedAt < cutoff })
			for s, q := range want {
				if q.CreatedAt < cutoff {
					delete(want, s)
				}
			}
		}
		check(step, x, want)
		if step%7 == 0 {
			writes.apply()
			check(step, bulk, want)
		}
	}
	if x.shards[0].collided == nil || x.shards[1].collided == nil {
		t.Fatal("a shard had no collision: the test tests less than it says")
	}
	if x.collisions() == 0 {
		t.Fatal("no scope collided: the test tests nothing")
	}
	copies := map[*Quote]*Quote{}
	c := x.remapped(func(q *Quote) *Quote { cq := *q; copies[q] = &cq; return &cq })
	remapped := map[IdempotencyScope]*Quote{}
	for s, q := range want {
		remapped[s] = copies[q]
	}
	check(-1, c, remapped)
}
