package hashindex

import (
	"math/rand/v2"
	"testing"
)

// item is a Table's value in the tests: a key of two bytes.
type item struct{ key [2]byte }

func itemIs(key [2]byte) func(*item) bool { return func(v *item) bool { return v.key == key } }

// TestTableAgainstAMap drives a Table and a Go map with the same random
// adds, sets and deletes and compares them: with a hash of few values,
// keys share whole hashes and home slots, runs grow long and wrap around
// the table's end, and deletes shift them back; the table grows by half
// from empty or from the length Init gives (no power of two). DeleteIf
// drops a random part now and then.
func TestTableAgainstAMap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hashes uint64 // distinct hashes the keys get; 0: a well-spread hash
		sized  int
	}{
		{"spread", 0, 0},
		{"sized", 0, 3000},
		{"256 hashes", 256, 0}, // a dozen keys a hash
		{"64 hashes", 64, 0},   // some 50 keys a hash, in long runs
		// A length no power of two (1,501 slots), with runs that wrap.
		{"sized, 64 hashes", 64, 1001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var x Table[*item]
			if tc.sized > 0 {
				x.Init(tc.sized)
			}
			hash := func(k [2]byte) uint64 {
				if tc.hashes != 0 {
					// The top bits pick the home slot: spread the few
					// values over them, so that runs fill and wrap.
					return (uint64(k[0]) % tc.hashes) * (^uint64(0) / tc.hashes)
				}
				return (uint64(k[0])<<8 | uint64(k[1])) * 0x9e3779b97f4a7c15
			}
			want := map[[2]byte]*item{}
			var keys [][2]byte
			for step := range 20_000 {
				switch r := rng.IntN(30); {
				case r < 10 && len(keys) > 0:
					i := rng.IntN(len(keys))
					k := keys[i]
					_, had := want[k]
					if got := x.Delete(hash(k), itemIs(k)); got != had {
						t.Fatalf("step %d: Delete(%x) = %v, held %v", step, k, got, had)
					}
					delete(want, k)
					keys[i] = keys[len(keys)-1]
					keys = keys[:len(keys)-1]
				case r == 10 && step%97 == 0:
					drop := func(v *item) bool { return v.key[0]%5 == byte(step)%5 }
					calls := map[*item]int{}
					x.DeleteIf(func(v *item) bool { calls[v]++; return drop(v) })
					for _, n := range calls {
						if n != 1 {
							t.Fatalf("step %d: DeleteIf asks about a value %d times", step, n)
						}
					}
					if len(calls) != len(want) {
						t.Fatalf("step %d: DeleteIf asks about %d values, %d held", step, len(calls), len(want))
					}
					kept := keys[:0]
					for _, k := range keys {
						if drop(want[k]) {
							delete(want, k)
						} else {
							kept = append(kept, k)
						}
					}
					keys = kept
				default:
					var k [2]byte
					k[0], k[1] = byte(rng.Uint32()), byte(rng.IntN(12)) // repeats: about 3,000 keys
					v := &item{key: k}
					_, had := want[k]
					if r%2 == 0 {
						if got := x.Add(hash(k), v, itemIs(k)); got == had {
							t.Fatalf("step %d: Add(%x) = %v, held %v", step, k, got, had)
						}
						if had {
							break
						}
					} else {
						x.Set(hash(k), v, itemIs(k))
					}
					if !had {
						keys = append(keys, k)
					}
					want[k] = v
				}
				if x.Len() != len(want) {
					t.Fatalf("step %d: Len %d, want %d", step, x.Len(), len(want))
				}
				if step%1009 == 0 || step > 19_980 {
					// Reading ahead changes nothing and keeps nothing queued.
					for k := range want {
						x.ReadAhead(hash(k))
					}
					x.Warm()
					if len(x.ahead) != 0 {
						t.Fatalf("step %d: %d reads still queued after Warm", step, len(x.ahead))
					}
					for k, v := range want {
						if got, ok := x.Get(hash(k), itemIs(k)); !ok || got != v {
							t.Fatalf("step %d: Get(%x) = %p, want %p", step, k, got, v)
						}
					}
					n := 0
					for v := range x.All() {
						if want[v.key] != v {
							t.Fatalf("step %d: All yields %x, not held", step, v.key)
						}
						n++
					}
					if n != len(want) {
						t.Fatalf("step %d: All yields %d values, want %d", step, n, len(want))
					}
				}
			}
			absent := [2]byte{0, 200} // no step makes it
			if _, ok := x.Get(hash(absent), itemIs(absent)); ok || x.Delete(hash(absent), itemIs(absent)) {
				t.Fatal("a key never added is found")
			}
		})
	}
}

// TestTableSizing: Init(n) holds n values two thirds full (tableMin
// slots at the least), so that filling it does not grow it; a table
// grown from empty is half to three quarters full.
func TestTableSizing(t *testing.T) {
	for _, n := range []int{0, 1, 6, 7, 1000, 1 << 20} {
		var x Table[*item]
		x.Init(n)
		slots := len(x.slots)
		if want := max(tableMin, (n*3+1)/2); slots != want {
			t.Fatalf("Init(%d): %d slots, want %d", n, slots, want)
		}
		if n > 100_000 {
			continue
		}
		for i := range n {
			k := [2]byte{byte(i), byte(i >> 8)}
			x.Add(uint64(i)*0x9e3779b97f4a7c15, &item{key: k}, itemIs(k))
		}
		if len(x.slots) != slots {
			t.Fatalf("Init(%d) grew to %d slots while filling", n, len(x.slots))
		}
	}
	var x Table[*item]
	for i := range 100_000 {
		k := [2]byte{byte(i), byte(i >> 8)}
		x.Add(uint64(i)*0x9e3779b97f4a7c15, &item{key: k}, itemIs(k))
		if n := x.Len(); n > tableMin && (2*n < len(x.slots) || 4*n > 3*len(x.slots)) {
			t.Fatalf("%d values in %d slots", n, len(x.slots))
		}
	}
}
