package hashindex

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

type value struct {
	key string
	n   int
}

func keyOf(v *value) string { return v.key }

// collidingHash gives every key one of three hashes in each of two shards.
func collidingHash(k string) uint64 { return uint64(len(k)%2)<<shardShift | uint64(k[len(k)-1])%3 }

// TestIndexAgainstAMap drives an index whose hash collides constantly and
// a plain map through the same random puts, forgets and prunes, and
// requires them to agree after every step: Get on every key, Len, All and
// ValuesIn. A second index takes the same writes in bulk (Writes, applied
// every few steps) and must agree whenever applied.
func TestIndexAgainstAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 29))
	x, bulk := New(0, keyOf), New(0, keyOf)
	x.HashOf, bulk.HashOf = collidingHash, collidingHash
	writes := bulk.Writes()
	var keys []string
	for i := range 30 {
		keys = append(keys, fmt.Sprint("key-", i, i*i))
	}
	want := map[string]*value{}
	put := []*value{{key: "never put"}} // every value put, and one never put
	var shared [2]int                   // the most values held at once whose hash another held
	check := func(step int, x *Index[string, *value], want map[string]*value) {
		t.Helper()
		for _, k := range keys {
			got, ok := x.Get(k)
			if w, wok := want[k]; ok != wok || got != w {
				t.Fatalf("step %d: Get(%s) = %v, %v; want %v, %v", step, k, got, ok, w, wok)
			}
		}
		if x.Len() != len(want) {
			t.Fatalf("step %d: Len %d, want %d", step, x.Len(), len(want))
		}
		seen := map[string]bool{}
		for k, v := range x.All() {
			if seen[k] || want[k] != v {
				t.Fatalf("step %d: All yields %s (again: %v) with a value the map does not hold", step, k, seen[k])
			}
			seen[k] = true
		}
		values := 0
		for i := range x.shards {
			for v := range x.ValuesIn(i) {
				if want[v.key] != v {
					t.Fatalf("step %d: ValuesIn(%d) yields %v, which the map does not hold", step, i, v)
				}
				values++
			}
		}
		if values != len(want) {
			t.Fatalf("step %d: ValuesIn yields %d values, want %d", step, values, len(want))
		}
	}
	for step := range 3000 {
		k := keys[rng.IntN(len(keys))]
		switch r := rng.IntN(10); {
		case r < 6:
			v := &value{k, step}
			x.Put(v)
			writes.Put(v)
			want[k] = v
			put = append(put, v)
		case r < 9:
			// A value put earlier, whose key may hold a newer one since.
			v := put[rng.IntN(len(put))]
			x.Forget(v)
			writes.Forget(v)
			if want[v.key] == v {
				delete(want, v.key)
			}
		default:
			cutoff := step - 50
			drop := func(v *value) bool { return v.n < cutoff }
			x.DeleteIf(drop)
			writes.Apply(nil)
			bulk.DeleteIf(drop)
			for k, v := range want {
				if drop(v) {
					delete(want, k)
				}
			}
		}
		check(step, x, want)
		for i := range shared {
			shared[i] = max(shared[i], sharedHashes(x, i))
		}
		if step%7 == 0 {
			writes.Apply(nil)
			check(step, bulk, want)
		}
	}
	if shared[0] == 0 || shared[1] == 0 {
		t.Fatalf("values held at once shared a hash %v times in shards 0 and 1: the test tests less than it says", shared)
	}
}

// sharedHashes is how many values in shard i have a hash another value
// there has.
func sharedHashes(x *Index[string, *value], i int) int {
	byHash := map[uint64]int{}
	for v := range x.ValuesIn(i) {
		byHash[x.Hash(v.key)]++
	}
	n := 0
	for _, c := range byHash {
		if c > 1 {
			n += c
		}
	}
	return n
}

// TestWritesApplyUnderLocks applies bulk writes holding each shard's lock
// while readers take the same locks: the race detector sees no unguarded
// access, and every value is found after.
func TestWritesApplyUnderLocks(t *testing.T) {
	x := New(1000, keyOf)
	var locks [Shards]sync.RWMutex
	w := x.Writes()
	for i := range 1000 {
		w.Put(&value{key: fmt.Sprint(i), n: i})
	}
	var readers sync.WaitGroup
	stop := make(chan struct{})
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			h := x.Hash("7")
			locks[Shard(h)].RLock()
			x.GetHashed(h, "7")
			locks[Shard(h)].RUnlock()
		}
	})
	w.Apply(func(i int) sync.Locker { return &locks[i] })
	close(stop)
	readers.Wait()
	for i := range 1000 {
		if v, ok := x.Get(fmt.Sprint(i)); !ok || v.n != i {
			t.Fatalf("Get(%d) = %v, %v after a bulk write", i, v, ok)
		}
	}
}

// TestWritesAcrossChunks keeps more writes in one shard than a chunk
// holds, puts and forgets of the same keys on both sides of the chunks'
// bounds, and requires the index they leave to be the one direct writes
// leave.
func TestWritesAcrossChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	oneShard := func(k string) uint64 { return uint64(len(k)) } // shard 0, few collisions
	direct, bulk := New(0, keyOf), New(0, keyOf)
	direct.HashOf, bulk.HashOf = oneShard, oneShard
	w := bulk.Writes()
	var put []*value
	for n := range 3*writeChunk + 17 {
		if len(put) > 0 && rng.IntN(3) == 0 {
			v := put[rng.IntN(len(put))]
			direct.Forget(v)
			w.Forget(v)
			continue
		}
		v := &value{key: fmt.Sprint(rng.IntN(50)), n: n}
		direct.Put(v)
		w.Put(v)
		put = append(put, v)
	}
	if chunks := len(w.pending[0]); chunks < 3 {
		t.Fatalf("the writes fill %d chunks: the test crosses no chunk bound", chunks)
	}
	w.Apply(nil)
	if bulk.Len() != direct.Len() {
		t.Fatalf("bulk writes leave %d values, direct ones %d", bulk.Len(), direct.Len())
	}
	for k, v := range direct.All() {
		if got, ok := bulk.Get(k); !ok || got != v {
			t.Errorf("Get(%s) after bulk writes = %v, %v; direct writes leave %v", k, got, ok, v)
		}
	}
}
