package engine

import "fmt"

// A partner event's stored form (the event history, wal/eventlog): the
// event with the quote as it left it — or, for payin.received, the receipt
// and its subject — in the snapshot's primitives, a few hundred bytes
// where the rendered JSON body is one to two thousand. The history stores
// this and renders the body when it is read, so the applier that feeds it
// does not render every event of every quote.

// eventRecordVersion is the layout below.
const eventRecordVersion = 1

// AppendEventRecord appends e's stored form to buf. e.Markets is not
// stored: the reader renders with the markets in force.
func AppendEventRecord(buf []byte, e *OwedEvent) []byte {
	enc := encoder{buf: buf}
	enc.byte1(eventRecordVersion)
	enc.id(e.ID)
	enc.byte1(uint8(e.Kind))
	enc.varint(e.At)
	enc.boolean(e.PaidIn)
	if e.Receipt != nil {
		enc.boolean(true)
		enc.receipt(e.Receipt)
		q := &e.Quote // the receipt's subject (receiptSubject)
		enc.id(q.ID)
		enc.id(q.Client)
		enc.byte1(uint8(q.Mode))
		enc.byte1(uint8(q.Pair.Source))
	} else {
		enc.boolean(false)
		encodeQuote(&enc, &e.Quote)
	}
	return enc.buf
}

// DecodeEventRecord reads what AppendEventRecord wrote.
func DecodeEventRecord(b []byte) (OwedEvent, error) {
	d := decoder{buf: b}
	var e OwedEvent
	if v := d.byte1(); v != eventRecordVersion && d.err == nil {
		return e, fmt.Errorf("engine: event record version %d, want %d", v, eventRecordVersion)
	}
	e.ID, e.Kind, e.At, e.PaidIn = d.id(), WebhookEvents(d.byte1()), d.varint(), d.boolean()
	if d.boolean() {
		e.Receipt = d.receipt()
		e.Quote = Quote{ID: d.id(), Client: d.id(), Mode: d.mode(), Pair: Pair{Source: d.currency()}}
	} else {
		decodeQuote(&d, &e.Quote, snapshotVersion)
	}
	if d.err == nil && len(d.buf) != 0 {
		return e, fmt.Errorf("engine: event record: %d trailing bytes", len(d.buf))
	}
	if d.err != nil || e.Kind.String() == "" {
		return e, fmt.Errorf("engine: corrupt event record: %v", d.err)
	}
	return e, nil
}

// EventRecordKind is the kind of the event a stored form holds, read
// without decoding it (0: not a stored form).
func EventRecordKind(b []byte) WebhookEvents {
	if len(b) < 18 || b[0] != eventRecordVersion {
		return 0
	}
	return WebhookEvents(b[17]) // after the version and the id
}
