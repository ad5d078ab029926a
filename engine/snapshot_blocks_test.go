package engine

import (
	"bytes"
	"encoding/binary"
	"maps"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// sideBySide is a Loading that decodes on up to decoders goroutines and
// indexes inline.
func sideBySide(decoders int) Loading {
	return Loading{Decoders: decoders, Together: func(fns ...func()) {
		var wg sync.WaitGroup
		for _, fn := range fns {
			wg.Go(fn)
		}
		wg.Wait()
	}}
}

// encodeInBlocks is EncodeState with blocks of per quotes.
func encodeInBlocks(s *State, per int) []byte {
	return (&stateEncoder{s: s, version: snapshotVersion, blockLen: per}).state()
}

// per is the block length the tests write.
const per = 7

// Version 13's blocks of quotes decode side by side into the state one
// decoder gives: the same hash, the same bytes again, the quotes in
// creation order in full slabs; and the blocks are read at any number of
// decoders, with the block length the snapshot says.
func TestSnapshotQuoteBlocks(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		s, _ := workload(t, seed, 400)
		enc := encodeInBlocks(s, per)
		if s.Quotes.Len() < 3*per {
			t.Fatalf("fixture: %d quotes, want several blocks of %d", s.Quotes.Len(), per)
		}
		for _, load := range []Loading{{}, sideBySide(1), sideBySide(2), sideBySide(5)} {
			got, err := DecodeStateWith(enc, load)
			if err != nil {
				t.Fatalf("seed %d, %d decoders: %v", seed, load.Decoders, err)
			}
			if got.Hash() != s.Hash() || !bytes.Equal(encodeInBlocks(got, per), enc) {
				t.Fatalf("seed %d, %d decoders: another state", seed, load.Decoders)
			}
			var prev *Quote
			for q := range got.QuotesInOrder() {
				if prev != nil && !createdBefore(prev, q) {
					t.Fatalf("seed %d: quote %s before %s", seed, prev.ID, q.ID)
				}
				prev = q
			}
			for i, slab := range got.slabs[:len(got.slabs)-1] {
				if len(slab) != cap(slab) || slab[len(slab)-1].Status == 0 {
					t.Fatalf("seed %d: slab %d of %d not full", seed, i, len(got.slabs))
				}
			}
		}
		// Written with another block length, read the same.
		for _, other := range []int{1, 100, quoteBlockLen} {
			if got, err := DecodeStateWith(encodeInBlocks(s, other), sideBySide(2)); err != nil || got.Hash() != s.Hash() {
				t.Fatalf("seed %d: blocks of %d: %v", seed, other, err)
			}
		}
	}
}

// A version 13 snapshot whose blocks are out of order, or whose block
// lengths or count are wrong, is refused, at any number of decoders.
func TestSnapshotQuoteBlocksRefused(t *testing.T) {
	s, _ := workload(t, 2, 400)
	enc := encodeInBlocks(s, per)
	quotes, _ := quotesToEncode(s, snapshotVersion)
	// The first block starts 4 bytes before the first quote's record, the
	// second 4 bytes before the eighth's.
	first := bytes.Index(enc, quotes[0].ID[:]) - 4
	second := bytes.Index(enc, quotes[per].ID[:]) - 4
	third := bytes.Index(enc, quotes[2*per].ID[:]) - 4
	if first < 1 || second <= first || third <= second || enc[first-1] != byte(per) {
		t.Fatal("fixture: blocks not where expected")
	}
	swapped := bytes.Clone(enc[:first])
	swapped = append(swapped, enc[second:third]...)
	swapped = append(swapped, enc[first:second]...)
	swapped = append(swapped, enc[third:]...)
	cases := map[string][]byte{"blocks out of order": swapped}
	for name, change := range map[string]func(b []byte){
		"a block one byte longer":  func(b []byte) { le.PutUint32(b[first:], le.Uint32(b[first:])+1) },
		"a block one byte shorter": func(b []byte) { le.PutUint32(b[first:], le.Uint32(b[first:])-1) },
		"a block past the end":     func(b []byte) { le.PutUint32(b[second:], 1<<31) },
		"blocks of no quotes":      func(b []byte) { b[first-1] = 0 },
		"blocks of 8 quotes":       func(b []byte) { b[first-1] = 8 },
	} {
		bad := bytes.Clone(enc)
		change(bad)
		cases[name] = bad
	}
	for name, bad := range cases {
		for _, load := range []Loading{{}, sideBySide(2)} {
			if _, err := DecodeStateWith(bad, load); err == nil {
				t.Errorf("%s, %d decoders: decoded", name, load.Decoders)
			}
		}
	}
	// No change to the block length, a block's length or the first bytes
	// of a block makes the decoders panic (a panic on a decoder's
	// goroutine would end the process).
	for _, at := range []int{first - 1, first, first + 1, first + 3, first + 4, second, second + 2, third + 5} {
		for _, v := range []byte{0, 1, 0x7f, 0x80, 0xff} {
			bad := bytes.Clone(enc)
			bad[at] = v
			_, _ = DecodeStateWith(bad, sideBySide(2))
		}
	}
}

// FuzzDecodeState: no bytes make DecodeStateWith panic, on one goroutine
// or on several; what decodes encodes again to bytes that decode to the
// same state. The seeds are snapshots of versions 9, 12 and 13 (in blocks
// of 7 quotes).
func FuzzDecodeState(f *testing.F) {
	s, _ := workload(&testing.T{}, 4, 200)
	f.Add(encodeInBlocks(s, per))
	f.Add(appendState(nil, s, 12))
	f.Add(appendState(nil, s, 9))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeStateWith(b, sideBySide(2))
		if inline, inlineErr := DecodeState(b); (err == nil) != (inlineErr == nil) {
			t.Fatalf("side by side: %v, inline: %v", err, inlineErr)
		} else if err == nil && inline.Hash() != got.Hash() {
			t.Fatal("side by side and inline decode to different states")
		}
		if err != nil {
			return
		}
		again, err := DecodeState(EncodeState(got))
		if err != nil || again.Hash() != got.Hash() {
			t.Fatalf("re-encoded: %v", err)
		}
	})
}

// A count of clients, or of a wallet's postings, more than the bytes left
// could hold is refused before anything is sized for it: a count of one
// item a byte left asked for 40 to 57 times those bytes (an item with
// an id takes 16 bytes at the least: snapshotIDItemBytesMin).
func TestSnapshotRefusesCountsPastTheEnd(t *testing.T) {
	s, _ := workload(t, 5, 400)
	enc := EncodeState(s)
	// The clients' count comes right before the first client's id (in id
	// order); a wallet's count of postings right after its id, before its
	// first posting's sequence.
	first := slices.MinFunc(slices.Collect(maps.Keys(s.Clients)), func(a, b ClientID) int { return bytes.Compare(a[:], b[:]) })
	counts := map[string]int{"clients": bytes.Index(enc, first[:]) - 1, "postings": -1}
	if len(s.Clients) > 127 || enc[counts["clients"]] != byte(len(s.Clients)) {
		t.Fatal("fixture: the clients' count is not where expected")
	}
	for _, m := range Modes {
		for id, h := range s.Treasuries[m].History {
			if len(h) == 0 || len(h) > 127 {
				continue
			}
			pattern := append(append(append([]byte(nil), id[:]...), byte(len(h))), binary.AppendUvarint(nil, h[0].Seq)...)
			if i := bytes.LastIndex(enc, pattern); i >= 0 {
				counts["postings"] = i + len(id)
			}
		}
	}
	if counts["postings"] < 0 {
		t.Fatal("fixture: no wallet's statement found in the snapshot")
	}
	for what, at := range counts {
		// 4 Mi items, then 8 MiB of bytes that are none.
		const claimed, padding = 4 << 20, 8 << 20
		bad := binary.AppendUvarint(bytes.Clone(enc[:at]), claimed)
		bad = append(append(bad, make([]byte, padding)...), enc[at+1:]...)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := DecodeState(bad)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatalf("4 Mi %s in 8 MiB decoded", what)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 2*padding {
			t.Errorf("refusing 4 Mi %s in 8 MiB allocated %d MiB", what, grew>>20)
		}
	}
}
