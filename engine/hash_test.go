package engine

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
)

// hashWhole is State.Hash as it was written before it streamed: the whole
// encoding, then the book entries, then the idempotency records sorted by
// their keys' texts as strings. Hash must give what it gives.
func hashWhole(s *State) [32]byte {
	h := sha256.New()
	h.Write(EncodeState(s))
	buf := appendBookEntries(nil, s)
	type keyRecord struct {
		scope IdempotencyScope
		key   string
		rec   *Quote
	}
	var records []keyRecord
	for scope, rec := range s.Idempotency.All() {
		records = append(records, keyRecord{scope, scope.Key.String(), rec})
	}
	slices.SortFunc(records, func(a, b keyRecord) int {
		return cmp.Or(bytes.Compare(a.scope.Client[:], b.scope.Client[:]), cmp.Compare(a.scope.Mode, b.scope.Mode),
			strings.Compare(a.key, b.key))
	})
	for _, k := range records {
		buf = append(buf, k.scope.Client[:]...)
		buf = append(buf, byte(k.scope.Mode))
		buf = binary.AppendUvarint(buf, uint64(len(k.key)))
		buf = append(buf, k.key...)
		buf = append(buf, k.rec.ID[:]...)
		buf = append(buf, k.rec.RequestHash[:]...)
		buf = binary.AppendVarint(buf, k.rec.CreatedAt)
	}
	h.Write(buf)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// TestHashStreamsTheSameDigest: State.Hash, which streams the encoding
// and orders the idempotency records by integers before texts, gives the
// digest of the whole encoding and the records in their texts' order —
// for replayed workloads, and for keys of every form in an order where
// the first 8 bytes, a client's halves and the modes all decide: packed
// UUIDs in either case, keys shorter than 8 bytes, keys that are
// another's prefix, keys alike for their first 8 bytes, a key behind the
// escape byte, bytes above 0x7f.
func TestHashStreamsTheSameDigest(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		s, _ := workload(t, seed, 400)
		if got, want := s.Hash(), hashWhole(s); got != want {
			t.Fatalf("seed %d: Hash %x, the whole encoding's %x", seed, got[:8], want[:8])
		}
	}
	s, _ := workload(t, 5, 200)
	texts := []string{
		"0190a5b4-7c3e-7d21-9f00-3b2a1c0d9e8f", "0190A5B4-7C3E-7D21-9F00-3B2A1C0D9E8F",
		"6f1c2d3e-4b5a-4c6d-8e7f-901a2b3c4d5e", "a", "ab", "ab\x00", "abcdefgh", "abcdefgh1", "abcdefgh0",
		"abcdefg", "abcdefgi", "k-1", "k-10", "k-2", "\x05escaped", "\xffhigh", "zz",
	}
	clients := []ClientID{{1}, {1, 0, 0, 0, 0, 0, 0, 0, 2}, {2}, {0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}}
	n := 0
	for _, c := range clients {
		for _, m := range Modes {
			for _, text := range texts {
				n++
				q := &Quote{ID: QuoteID{byte(n), byte(n >> 8), 0xaa}, Client: c, Mode: m, IdempotencyKey: MakeIdemKey(text),
					RequestHash: [32]byte{byte(n)}, CreatedAt: int64(n)}
				s.Idempotency.Put(q)
			}
		}
	}
	if got, want := s.Hash(), hashWhole(s); got != want {
		t.Fatalf("keys of every form: Hash %x, the whole encoding's %x", got[:8], want[:8])
	}
}

// A stateEncoder with a sink hands it exactly the encoding, a section or
// a block at a time (here blocks of a few quotes, so there are many).
func TestStreamedEncodingIsTheEncoding(t *testing.T) {
	s, _ := workload(t, 6, 400)
	var sink countingWriter
	tail := (&stateEncoder{s: s, version: snapshotVersion, blockLen: per, sink: &sink}).state()
	if want := encodeInBlocks(s, per); !bytes.Equal(append(sink.Bytes(), tail...), want) {
		t.Fatalf("streamed %d bytes and %d left, want the %d of the encoding", sink.Len(), len(tail), len(want))
	}
	if blocks := (s.Quotes.Len() + per - 1) / per; sink.writes < blocks {
		t.Fatalf("%d writes for %d blocks of quotes", sink.writes, blocks)
	}
}

type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(b []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(b)
}
