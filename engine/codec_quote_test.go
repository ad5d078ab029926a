package engine_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// appendQuoteCreatedV1 is a QuoteCreated in the event codec's version 1,
// the layout logs written before version 2 hold: the fields in
// declaration order, as varints, fixed ids and length-prefixed strings.
// AppendEvent no longer writes it; the decoder still reads it.
func appendQuoteCreatedV1(dst []byte, ev *engine.QuoteCreated) []byte {
	b := append(dst, 1, byte(engine.EventQuoteCreated))
	b = binary.AppendVarint(b, ev.At)
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	b = append(b, ev.Quote[:]...)
	b = append(b, ev.Client[:]...)
	b = append(b, byte(ev.Mode), byte(ev.Pair.Source), byte(ev.Pair.Destination), byte(ev.Direction))
	b = binary.AppendVarint(b, int64(ev.Amount))
	b = engine.AppendRateUvarint(b, ev.ProposedRate)
	b = append(b, byte(ev.Chain))
	str(ev.Reference.String())
	b = binary.AppendVarint(b, ev.ExpiresAt)
	b = binary.AppendUvarint(b, uint64(len(ev.Allocations)))
	for _, a := range ev.Allocations {
		b = append(b, a.ID[:]...)
		b = append(b, a.Pool[:]...)
		b = append(b, a.PoolAccount[:]...)
		str(a.PoolName)
		b = engine.AppendRateUvarint(b, a.Rate)
		b = binary.AppendVarint(b, int64(a.Source))
		b = binary.AppendVarint(b, int64(a.Destination))
		str(a.Reference.String())
	}
	if c := ev.Chat; c == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		str(c.ConversationID)
		str(c.ChatQuoteID)
		str(c.ListingID)
		b = engine.AppendRateUvarint(b, c.InitialListingRate)
		str(c.NegotiationStartedAt)
		str(c.QuoteSentAt)
	}
	str(ev.IdempotencyKey.String())
	b = append(b, ev.RequestHash[:]...)
	b = append(b, byte(ev.Channel))
	return append(b, ev.Key[:]...)
}

// quoteSamples are codecSamples' QuoteCreated events.
func quoteSamples(t testing.TB) []*engine.QuoteCreated {
	var out []*engine.QuoteCreated
	for _, tc := range codecSamples() {
		if q, ok := tc.event.(*engine.QuoteCreated); ok {
			out = append(out, q)
		}
	}
	if len(out) < 4 {
		t.Fatalf("%d QuoteCreated samples", len(out))
	}
	return out
}

// TestCodecQuoteCreatedVersion1: a QuoteCreated in version 1 decodes, by
// both decoders, to the event it was written from, and re-encodes in
// version 2; a version 1 record is refused field by field as before.
func TestCodecQuoteCreatedVersion1(t *testing.T) {
	var bulk engine.EventDecoder
	for _, q := range quoteSamples(t) {
		old := appendQuoteCreatedV1(nil, q)
		for _, decode := range []func([]byte) (engine.Event, error){engine.DecodeEvent, bulk.Decode} {
			got, err := decode(old)
			if err != nil {
				t.Fatalf("%s: version 1: %v", q.Reference, err)
			}
			if !sameEvent(got, q) {
				t.Errorf("version 1:\ngot  %#v\nwant %#v", got, q)
			}
		}
		re := engine.AppendEvent(nil, q)
		if re[0] != 2 || bytes.Equal(re, old) {
			t.Errorf("%s: re-encoded as % x", q.Reference, re[:2])
		}
		for n := range len(old) {
			if _, err := engine.DecodeEvent(old[:n]); !errors.Is(err, engine.ErrCorruptEvent) {
				t.Fatalf("version 1 truncated to %d of %d bytes: %v", n, len(old), err)
			}
		}
	}
	base := quoteSamples(t)[1]
	for name, change := range map[string]func(q *engine.QuoteCreated){
		"direction 3": func(q *engine.QuoteCreated) { q.Direction = 3 },
		"chain 255":   func(q *engine.QuoteCreated) { q.Chain = 255 },
		"channel 2":   func(q *engine.QuoteCreated) { q.Channel = 2 },
		"mode 0":      func(q *engine.QuoteCreated) { q.Mode = 0 },
		"no slices":   func(q *engine.QuoteCreated) { q.Allocations = nil },
	} {
		q := *base
		change(&q)
		if ev, err := engine.DecodeEvent(appendQuoteCreatedV1(nil, &q)); !errors.Is(err, engine.ErrCorruptEvent) {
			t.Errorf("version 1, %s: got %v, %v", name, ev, err)
		}
	}
	// The chat flag is followed by the Idempotency-Key (its length, 0),
	// the request hash (32), the channel (1) and the key id (16).
	if base.Chat != nil || !base.IdempotencyKey.IsZero() {
		t.Fatal("the base sample has a chat or a key: the chat flag is elsewhere")
	}
	enc := appendQuoteCreatedV1(nil, base)
	enc[len(enc)-(1+32+1+16)-1] = 2
	if ev, err := engine.DecodeEvent(enc); !errors.Is(err, engine.ErrCorruptEvent) {
		t.Errorf("version 1, chat flag 2: got %v, %v", ev, err)
	}
}

// TestCodecQuoteCreatedVersion2: a version 2 record holds the pending
// quote its event creates and nothing else: a record whose quote is not
// exactly that (another status, an acceptance, times or TTL that are not
// the event's), or a version 2 record of another event, is refused.
func TestCodecQuoteCreatedVersion2(t *testing.T) {
	base := quoteSamples(t)[1]
	enc := engine.AppendEvent(nil, base)
	if enc[0] != 2 || enc[1] != byte(engine.EventQuoteCreated) {
		t.Fatalf("encoding starts % x", enc[:2])
	}
	// Offsets in the quote's fixed record (snapshot_quote.go), after the
	// version, the tag and At as a varint.
	at := len(binary.AppendVarint(nil, base.At))
	record := 2 + at
	const (
		createdAt = 104
		updatedAt = 112
		ttl       = 128
		status    = 142
		flags     = 143
	)
	patch := func(i int, v byte) []byte {
		out := bytes.Clone(enc)
		out[record+i] ^= v
		return out
	}
	tests := map[string][]byte{
		"created at":        patch(createdAt, 1),
		"updated at":        patch(updatedAt, 1),
		"ttl":               patch(ttl, 1),
		"status accepted":   patch(status, byte(engine.StatusPending^engine.StatusAwaitingPayment)),
		"status 0":          patch(status, byte(engine.StatusPending)),
		"flags accepted":    patch(flags, 1),
		"flags unknown":     patch(flags, 0x80),
		"chat flag 2":       func() []byte { b := bytes.Clone(enc); b[len(b)-1] = 2; return b }(),
		"a version 2 pool":  append([]byte{2, byte(engine.EventPoolRateSet)}, engine.AppendEvent(nil, &engine.PoolRateSet{At: 1})[2:]...),
		"a version 2 empty": {2, byte(engine.EventQuoteCreated), 0},
	}
	if base.Chat != nil {
		t.Fatal("the base sample has a chat: the chat flag is not the last byte")
	}
	for name, b := range tests {
		if ev, err := decodeRecovering(t, b); !errors.Is(err, engine.ErrCorruptEvent) {
			t.Errorf("%s: got %#v, %v", name, ev, err)
		}
	}
	// Unchanged, it decodes: the patches above are what make them fail.
	if _, err := engine.DecodeEvent(enc); err != nil {
		t.Fatal(err)
	}
}

// typicalQuoteCreated is a quote as partners make them: one slice, an
// Idempotency-Key, no chat.
func typicalQuoteCreated(tb testing.TB) *engine.QuoteCreated {
	q := *quoteSamples(tb)[1]
	q.At, q.ExpiresAt = 1_795_000_000_000, 1_795_000_300_000
	q.Reference, q.IdempotencyKey, q.Chain = engine.MustRef("OJA-6F1C2A9B0D"), engine.MakeIdemKey("3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b"), engine.ChainTron
	q.Allocations = []engine.Allocation{{ID: codecID(9), Pool: codecID(10), PoolAccount: codecID(11), PoolName: "Lagos Desk 1",
		Rate: engine.RateFromUnits(1_600_250_000_000_000_000), Source: 160_025_00, Destination: 100_000_000, Reference: engine.MustRef("ALC-7E2B4C1D9A0F")}}
	return &q
}

// BenchmarkDecodeQuoteCreated decodes a typical QuoteCreated (one slice,
// an Idempotency-Key, no chat) as a replay does (an EventDecoder), in
// each version's layout.
//
//	go test -run '^$' -bench DecodeQuoteCreated -count 5 ./engine
func BenchmarkDecodeQuoteCreated(b *testing.B) {
	q := typicalQuoteCreated(b)
	for _, v := range []struct {
		name string
		enc  []byte
	}{{"version=1", appendQuoteCreatedV1(nil, q)}, {"version=2", engine.AppendEvent(nil, q)}} {
		b.Run(v.name, func(b *testing.B) {
			var x engine.EventDecoder
			b.SetBytes(int64(len(v.enc)))
			for b.Loop() {
				if _, err := x.Decode(v.enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendQuoteCreated encodes the same QuoteCreated as
// BenchmarkDecodeQuoteCreated, as a write does (AppendEvent), beside its
// version 1 layout (this file's encoder of it).
//
//	go test -run '^$' -bench AppendQuoteCreated -count 5 ./engine
func BenchmarkAppendQuoteCreated(b *testing.B) {
	q := typicalQuoteCreated(b)
	b.Run("version=1", func(b *testing.B) {
		buf := make([]byte, 0, 640)
		for b.Loop() {
			buf = appendQuoteCreatedV1(buf[:0], q)
		}
	})
	b.Run("version=2", func(b *testing.B) {
		buf := make([]byte, 0, 640)
		for b.Loop() {
			buf = engine.AppendEvent(buf[:0], q)
		}
	})
}
