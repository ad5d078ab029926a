package actors

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFirstN: what firstN keeps is the n first of everything offered, in
// order, whatever the order of offering; and a page of it is that slice
// of the whole sorted list.
func TestFirstN(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 5, 6, 7, 100, 1000} {
		all := make([]int, size)
		for i := range all {
			all[i] = r.IntN(50) // duplicates too
		}
		want := slices.Clone(all)
		slices.Sort(want)
		for _, n := range []int{1, 6, 2000} {
			f := &firstN[int]{n: n, cmp: cmp.Compare[int]}
			for _, x := range all {
				f.offer(x)
			}
			got := f.sorted()
			if w := want[:min(n, size)]; !slices.Equal(got, w) {
				t.Fatalf("size %d, n %d: kept %v, want %v", size, n, got, w)
			}
		}
		f := &firstN[int]{n: 2 + 3 + 1, cmp: cmp.Compare[int]}
		for _, x := range all {
			f.offer(x)
		}
		page, more := f.page(2, 3)
		if w := want[min(2, size):min(5, size)]; !slices.Equal(page, w) || more != (size > 5) {
			t.Fatalf("size %d: page %v more %v, want %v %v", size, page, more, w, size > 5)
		}
	}
}
