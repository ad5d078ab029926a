package engine

import (
	"fmt"
	"strings"
	"testing"
)

// TestBulkArena: pieces keep their contents whatever is handed out after
// them, across chunks, and an allocation list cannot grow into its
// neighbour.
func TestBulkArena(t *testing.T) {
	var a bulkArena
	var strs []string
	var lists [][]Allocation
	for i := range 5000 { // several chunks of each kind
		b := []byte(fmt.Sprintf("ref-%d-%s", i, strings.Repeat("x", i%40)))
		strs = append(strs, a.str(b))
		b[0] = '!' // the caller's buffer is not the string's
		l := a.allocations(1 + i%3)
		for j := range l {
			l[j].PoolName = strs[i]
		}
		lists = append(lists, l)
	}
	long := a.str([]byte(strings.Repeat("L", arenaStringMax+1)))
	if a.str(nil) != "" || len(long) != arenaStringMax+1 || strings.Trim(long, "L") != "" {
		t.Errorf("empty or long string wrong: %q…", long[:8])
	}
	if n := len(a.allocations(arenaAllocMax + 1)); n != arenaAllocMax+1 {
		t.Errorf("a long list has %d allocations", n)
	}
	for i, s := range strs {
		if want := fmt.Sprintf("ref-%d-%s", i, strings.Repeat("x", i%40)); s != want {
			t.Fatalf("string %d = %q, want %q", i, s, want)
		}
		if len(lists[i]) != 1+i%3 || cap(lists[i]) != len(lists[i]) {
			t.Fatalf("list %d: len %d cap %d", i, len(lists[i]), cap(lists[i]))
		}
		for _, al := range lists[i] {
			if al.PoolName != s {
				t.Fatalf("list %d holds %q, want %q", i, al.PoolName, s)
			}
		}
	}
	// Growing a list copies it rather than writing over the next one.
	grown := append(lists[0], Allocation{PoolName: "grown"})
	if lists[1][0].PoolName != strs[1] || grown[0].PoolName != strs[0] {
		t.Error("appending to a list wrote into its neighbour")
	}
}
