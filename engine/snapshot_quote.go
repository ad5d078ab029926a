package engine

import (
	"encoding/binary"

	"github.com/oja-exchange/oja/internal/prefault"
)

// A quote in snapshot version 9, and a QuoteCreated in the event codec's
// version 2 (codec.go), starts with a fixed-width record: its ids,
// hash, amounts, rate and times at fixed offsets, little-endian, so that a
// decode reads them without a varint loop or a bounds check each (a rate
// took a loop of up to 19 bytes). Its strings follow, their lengths in the
// record, then each allocation (a fixed record of its own, then its two
// strings), then what only some quotes have, in the earlier versions'
// form: the chat (a flag byte, then its fields), the acceptance (only when
// the flags say accepted) and the pay-in (only when the flags say so).
//
// Versions 1 to 8 write the quote field by field (encodeQuote); so do the
// webhook outboxes' quotes of every version and the event history's
// records.
const (
	quoteFixedLen      = 150
	allocationFixedLen = 84
)

// A quote's flags.
const (
	quoteAccepted uint8 = 1 << iota // an acceptance follows
	quotePaidIn                     // a pay-in follows
)

// The offsets of a quote's fixed record.
const (
	qoID          = 0
	qoClient      = 16
	qoKey         = 32
	qoRequestHash = 48
	qoAmount      = 80
	qoRate        = 88 // lo, then hi
	qoCreatedAt   = 104
	qoUpdatedAt   = 112
	qoExpiresAt   = 120
	qoTTL         = 128
	qoMode        = 136
	qoSource      = 137
	qoDestination = 138
	qoDirection   = 139
	qoChain       = 140
	qoChannel     = 141
	qoStatus      = 142
	qoFlags       = 143
	qoReference   = 144 // the lengths: reference, Idempotency-Key, allocations
	qoKeyLen      = 146
	qoAllocations = 148
)

// The offsets of an allocation's fixed record.
const (
	aoID          = 0
	aoPool        = 16
	aoPoolAccount = 32
	aoRate        = 48
	aoSource      = 64
	aoDestination = 72
	aoPoolName    = 80 // the lengths: pool name, reference
	aoReference   = 82
)

var le = binary.LittleEndian

func putRate(b []byte, r Rate) {
	le.PutUint64(b, r.lo)
	le.PutUint64(b[8:], r.hi)
}

func getRate(b []byte) Rate { return Rate{lo: le.Uint64(b), hi: le.Uint64(b[8:])} }

// encodeQuoteFixed writes q in version 9's layout. Its strings are at most
// stringBytesMax bytes and its allocations at most SlicesMax, as every
// quote the engine accepts: their lengths fit the record's 16 bits.
func encodeQuoteFixed(e *encoder, q *Quote) {
	var f [quoteFixedLen]byte
	copy(f[qoID:], q.ID[:])
	copy(f[qoClient:], q.Client[:])
	copy(f[qoKey:], q.Key[:])
	copy(f[qoRequestHash:], q.RequestHash[:])
	le.PutUint64(f[qoAmount:], uint64(q.Amount))
	putRate(f[qoRate:], q.ProposedRate)
	le.PutUint64(f[qoCreatedAt:], uint64(q.CreatedAt))
	le.PutUint64(f[qoUpdatedAt:], uint64(q.UpdatedAt))
	le.PutUint64(f[qoExpiresAt:], uint64(q.ExpiresAt))
	le.PutUint64(f[qoTTL:], uint64(q.TTL))
	f[qoMode], f[qoSource], f[qoDestination] = uint8(q.Mode), uint8(q.Pair.Source), uint8(q.Pair.Destination)
	f[qoDirection], f[qoChain], f[qoChannel], f[qoStatus] = uint8(q.Direction), uint8(q.Chain), uint8(q.Channel), uint8(q.Status)
	accepted := q.AcceptanceOrZero()
	if accepted != (Acceptance{}) {
		f[qoFlags] |= quoteAccepted
	}
	if q.PayIn != nil {
		f[qoFlags] |= quotePaidIn
	}
	le.PutUint16(f[qoReference:], uint16(q.Reference.Len()))
	le.PutUint16(f[qoKeyLen:], uint16(q.IdempotencyKey.Len()))
	le.PutUint16(f[qoAllocations:], uint16(len(q.Allocations())))
	e.buf = append(e.buf, f[:]...)
	e.buf = q.Reference.AppendText(e.buf)
	e.buf = q.IdempotencyKey.AppendText(e.buf)
	as := q.Allocations()
	for i := range as {
		a := &as[i]
		var g [allocationFixedLen]byte
		copy(g[aoID:], a.ID[:])
		copy(g[aoPool:], a.Pool[:])
		copy(g[aoPoolAccount:], a.PoolAccount[:])
		putRate(g[aoRate:], a.Rate)
		le.PutUint64(g[aoSource:], uint64(a.Source))
		le.PutUint64(g[aoDestination:], uint64(a.Destination))
		le.PutUint16(g[aoPoolName:], uint16(len(a.PoolName)))
		le.PutUint16(g[aoReference:], uint16(a.Reference.Len()))
		e.buf = append(e.buf, g[:]...)
		e.buf = append(e.buf, a.PoolName...)
		e.buf = a.Reference.AppendText(e.buf)
	}
	e.chat(q.Chat)
	if f[qoFlags]&quoteAccepted != 0 {
		e.acceptance(&accepted)
	}
	if p := q.PayIn; p != nil {
		e.quotePayIn(p)
	}
}

// decodeQuoteFixed reads what encodeQuoteFixed wrote into q. Like the
// rest of the decoder it never panics on hostile bytes, and it refuses
// what the encoder never writes (an unknown flag, an acceptance of zeros,
// a string or list over its bound), so that the bytes it accepts are the
// ones a re-encode gives.
func decodeQuoteFixed(d *decoder, q *Quote) {
	if len(d.buf) < quoteFixedLen {
		d.fail()
		return
	}
	f := d.buf[:quoteFixedLen]
	d.buf = d.buf[quoteFixedLen:]
	*q = Quote{
		Mode:      Mode(f[qoMode]),
		Pair:      Pair{Currency(f[qoSource]), Currency(f[qoDestination])},
		Direction: Direction(f[qoDirection]), Chain: Chain(f[qoChain]), Channel: Channel(f[qoChannel]),
		Status:       Status(f[qoStatus]),
		Amount:       Amount(le.Uint64(f[qoAmount:])),
		ProposedRate: getRate(f[qoRate:]),
		CreatedAt:    int64(le.Uint64(f[qoCreatedAt:])),
		UpdatedAt:    int64(le.Uint64(f[qoUpdatedAt:])),
		ExpiresAt:    int64(le.Uint64(f[qoExpiresAt:])),
	}
	ttl := int64(le.Uint64(f[qoTTL:]))
	q.TTL = int32(ttl)
	copy(q.ID[:], f[qoID:])
	copy(q.Client[:], f[qoClient:])
	copy(q.Key[:], f[qoKey:])
	copy(q.RequestHash[:], f[qoRequestHash:])
	flags := f[qoFlags]
	allocations := int(le.Uint16(f[qoAllocations:]))
	if (q.Mode != ModeLive && q.Mode != ModeSandbox) || !q.Pair.Source.Valid() || !q.Pair.Destination.Valid() ||
		(q.Direction != DirectionSource && q.Direction != DirectionDestination) || q.Chain >= chainEnd || q.Channel > ChannelXML ||
		q.Status < StatusPending || q.Status > StatusExpired || flags&^(quoteAccepted|quotePaidIn) != 0 ||
		allocations == 0 || allocations > SlicesMax || int64(q.TTL) != ttl {
		d.fail()
		return
	}
	q.Reference = d.refN(uint64(le.Uint16(f[qoReference:])))
	q.IdempotencyKey = d.idemKeyN(uint64(le.Uint16(f[qoKeyLen:])))
	list := d.allocationList(allocations)
	for i := range list {
		if len(d.buf) < allocationFixedLen {
			d.fail()
			return
		}
		g := d.buf[:allocationFixedLen]
		d.buf = d.buf[allocationFixedLen:]
		a := &list[i]
		copy(a.ID[:], g[aoID:])
		copy(a.Pool[:], g[aoPool:])
		copy(a.PoolAccount[:], g[aoPoolAccount:])
		a.Rate = getRate(g[aoRate:])
		a.Source = Amount(le.Uint64(g[aoSource:]))
		a.Destination = Amount(le.Uint64(g[aoDestination:]))
		a.PoolName = d.strN(uint64(le.Uint16(g[aoPoolName:])))
		a.Reference = d.refN(uint64(le.Uint16(g[aoReference:])))
	}
	q.setAllocations(list)
	q.Chat = d.chat()
	if flags&quoteAccepted != 0 {
		a := d.acceptance()
		if a == (Acceptance{}) {
			d.fail()
		}
		q.Accepted = &a
	}
	if flags&quotePaidIn != 0 {
		q.PayIn = d.quotePayIn()
	}
}

// From snapshot version 13 the quotes are written in blocks, so that
// decoders on several goroutines read them at once: after the count of
// quotes, the quotes a block holds (every block but the last holds as
// many), then each block as its length in bytes (4, little-endian) and
// its quotes in the fixed-width layout above. A block's quotes decode
// into slabs of their own, quoteSlabMax at a time (the last one cut to
// what is left), so that the state's slabs are the blocks' in order, each
// full.

// quoteBlockLen is how many quotes EncodeState writes to a block (tests
// write blocks of a few: stateEncoder.blockLen).
const quoteBlockLen = 16 * quoteSlabMax

// encodeQuoteBlocks writes quotes in blocks of per, calling blockDone
// after each (stateEncoder.flush).
func encodeQuoteBlocks(e *encoder, quotes []*Quote, per int, blockDone func()) {
	e.uvarint(uint64(per))
	for start := 0; start < len(quotes); start += per {
		at := len(e.buf)
		e.buf = append(e.buf, 0, 0, 0, 0)
		for _, q := range quotes[start:min(start+per, len(quotes))] {
			encodeQuoteFixed(e, q)
		}
		le.PutUint32(e.buf[at:], uint32(len(e.buf)-at-4))
		blockDone()
	}
}

// quoteBlock is a block of a snapshot's quotes, and what decoding it made.
type quoteBlock struct {
	buf   []byte
	n     int
	slabs [][]Quote
	err   error
}

// splitQuoteBlocks reads the block length and the blocks' bounds of n
// quotes from d, leaving d past the last block.
func splitQuoteBlocks(d *decoder, n uint64) []quoteBlock {
	per := d.uvarint()
	if d.err != nil || per == 0 {
		d.fail()
		return nil
	}
	blocks := make([]quoteBlock, 0, (n+per-1)/per)
	for left := n; left > 0 && d.err == nil; left -= min(left, per) {
		if len(d.buf) < 4 {
			d.fail()
			break
		}
		size := uint64(le.Uint32(d.buf))
		if size > uint64(len(d.buf)-4) || size/snapshotQuoteBytesMin < min(left, per) {
			d.fail()
			break
		}
		blocks = append(blocks, quoteBlock{buf: d.buf[4 : 4+size], n: int(min(left, per))})
		d.buf = d.buf[4+size:]
	}
	return blocks
}

// decode decodes b's quotes into slabs of its own, strings and allocation
// lists from arena, and checks that they come in creation order.
func (b *quoteBlock) decode(arena *bulkArena) {
	d := decoder{buf: b.buf, arena: arena}
	var prev *Quote
	for left := b.n; left > 0 && d.err == nil; {
		slab := make([]Quote, min(left, quoteSlabMax))
		prefault.Slice(slab) // written whole: mapped in at once
		left -= len(slab)
		for i := range slab {
			q := &slab[i]
			decodeQuoteFixed(&d, q)
			if d.err != nil {
				break
			}
			if prev != nil && !createdBefore(prev, q) {
				d.fail() // not in creation order: the Idempotency-Keys rely on it
				break
			}
			prev = q
		}
		b.slabs = append(b.slabs, slab)
	}
	if d.err == nil && len(d.buf) != 0 {
		d.fail()
	}
	b.err = d.err
}

// first and last are the block's first and last quotes.
func (b *quoteBlock) first() *Quote { return &b.slabs[0][0] }
func (b *quoteBlock) last() *Quote {
	s := b.slabs[len(b.slabs)-1]
	return &s[len(s)-1]
}
