package engine

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// workload drives a State through a random but valid sequence of events,
// deciding each with the engine itself, and returns the events applied.
func workload(t *testing.T, seed uint64, steps int) (*State, []Event) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	s := NewState()
	var events []Event
	now := int64(1_800_000_000_000)
	newID := func() (id [16]byte) {
		for i := range id {
			id[i] = byte(rng.Uint32())
		}
		return id
	}
	apply := func(ev Event) {
		t.Helper()
		if err := s.Apply(ev); err != nil {
			t.Fatalf("seed %d: apply %s: %v", seed, ev.Type(), err)
		}
		events = append(events, ev)
	}
	// The default markets and the off-ramp USDT→NGN (a token source: its
	// acceptances issue pay-ins; rates above 2^64 units).
	markets := DefaultMarkets()
	markets.Pairs = append(markets.Pairs, PairSpec{Pair: Pair{CurrencyUSDT, CurrencyNGN}, MinSource: 1, MaxSource: AmountMax})
	markets.DepositKeys = map[Currency]map[Chain]string{CurrencyUSDT: {ChainTron: "xpub-tron"}}
	apply(&MarketsSet{At: now, Markets: markets})
	client := &ClientCreated{At: now, Client: ClientID(newID()), Name: "partner"}
	for _, m := range Modes {
		for _, c := range DefaultMarkets().CurrencyList() {
			client.Wallets = append(client.Wallets, WalletAccount{Mode: m, Currency: c, Account: AccountID(newID())})
		}
	}
	apply(client)
	apply(&KeyCreated{At: now, Key: KeyID(newID()), Client: client.Client, Mode: ModeSandbox, Hash: [32]byte{1}})
	hookAll := &WebhookCreated{At: now, Webhook: WebhookID(newID()), Client: client.Client, Mode: ModeSandbox,
		URL: "https://a.example/h", Events: WebhookEventsAll, Secret: "whsec_a"}
	apply(hookAll)
	apply(&WebhookCreated{At: now, Webhook: WebhookID(newID()), Client: client.Client, Mode: ModeLive,
		URL: "https://b.example/h", Events: WebhookQuoteCreated | WebhookQuoteCompleted, Secret: "whsec_b"})
	var pools []PoolID
	pairs := markets.PairList()
	for i := 0; i < 8; i++ {
		pair := pairs[i%len(pairs)]
		rate := RateFromUnits(uint64(600_000_000_000_000 + rng.Uint64N(50_000_000_000_000)))
		if pair.Source == CurrencyUSDT {
			rate, _ = RateTimesPow10(1_600_000_000+rng.Uint64N(20_000_000), 12) // ~1612
		}
		ev := &PoolCreated{At: now, Pool: PoolID(newID()), Mode: Modes[i%2], Name: "pool", Pair: pair,
			Rate: rate, LiquidityAccount: AccountID(newID()), ProceedsAccount: AccountID(newID())}
		apply(ev)
		apply(&PoolDeposited{At: now, Pool: ev.Pool, Amount: Amount(1 + rng.Int64N(1_000_000_000))})
		pools = append(pools, ev.Pool)
	}
	var open []QuoteID
	buf := make([]Slice, 0, SlicesMax)
	for step := 0; step < steps; step++ {
		now += rng.Int64N(5000)
		switch op := rng.IntN(10); {
		case op < 5:
			p := s.Pools[pools[rng.IntN(len(pools))]]
			out := s.Book(p.Mode, p.Pair).Allocate(AllocationRequest{Direction: DirectionSource,
				Amount: Amount(1 + rng.Int64N(10_000_000)), MinRate: RateFromUnits(1)}, buf)
			if out.Result != ResultOK {
				continue
			}
			ev := &QuoteCreated{At: now, Quote: QuoteID(newID()), Client: client.Client, Mode: p.Mode, Pair: p.Pair,
				Direction: DirectionSource, Amount: out.TotalSource, ProposedRate: RateFromUnits(1), Reference: MustRef("OJA-X"), Chain: ChainTron,
				ExpiresAt: now + 300_000, IdempotencyKey: MakeIdemKey("k"), RequestHash: [32]byte{byte(step)}}
			for _, sl := range out.Slices {
				ev.Allocations = append(ev.Allocations, Allocation{ID: AllocationID(newID()), Pool: sl.Pool,
					PoolAccount: s.Pools[sl.Pool].Liquidity.ID, Rate: sl.Rate, Source: sl.Source,
					Destination: sl.Destination, Reference: MustRef("ALC-X")})
			}
			ev.IdempotencyKey = MakeIdemKey(string(rune('a' + step%26)))
			apply(ev)
			open = append(open, ev.Quote)
		case op < 9 && len(open) > 0:
			i := rng.IntN(len(open))
			q := s.Quotes.Get(open[i])
			var ev Event
			switch q.Status {
			case StatusPending:
				if rng.IntN(2) == 0 {
					wallet, _ := s.Treasuries[q.Mode].Wallet(q.Client, q.Pair.Destination)
					var acc *QuoteAccepted
					_, acc = q.Accept(AcceptQuote{Settlement: Settlement{Kind: SettlementWallet, Account: wallet.ID},
						OwnerWallets: s.Clients[q.Client].Wallets}, now, 1_800_000)
					if acc != nil && q.Pair.Source.IsToken() {
						series := PayInSeries{q.Pair.Source, ChainTron}
						acc.PayIn = &PayIn{Address: AddressID(newID()), Deposit: "T-address", Currency: q.Pair.Source,
							Chain: ChainTron, Index: s.PayInNext[series] + uint32(rng.IntN(2)), CreatedAt: now}
					}
					if acc != nil {
						ev = acc
					}
				} else {
					_, ev = q.Cancel(now)
				}
			case StatusAwaitingPayment:
				if q.PayIn != nil && q.PayIn.SeenAt == 0 && rng.IntN(2) == 0 {
					if _, seen := q.RecordPayIn(q.TotalSource(), "0xabc", now); seen != nil {
						ev = seen
					}
				} else {
					_, ev = q.Complete(now)
				}
			}
			if ev == nil {
				open = append(open[:i], open[i+1:]...)
				continue
			}
			apply(ev)
		default:
			for _, ev := range s.Expired(now - 200_000) {
				apply(ev)
			}
			// Pay the oldest owed event of the first endpoint.
			if owed := s.Webhooks[hookAll.Webhook].OwedEvents(); len(owed) > 0 {
				apply(&WebhookSettled{At: now, Webhook: hookAll.Webhook, Event: owed[0].ID, Delivered: rng.IntN(2) == 0})
			}
		}
	}
	return s, events
}

func TestSnapshotRoundTrip(t *testing.T) {
	seenAny := false
	for seed := uint64(1); seed <= 20; seed++ {
		s, _ := workload(t, seed, 400)
		byStatus := map[Status]int{}
		for q := range s.Quotes.All() {
			byStatus[q.Status]++
		}
		if s.Quotes.Len() == 0 || byStatus[StatusCompleted] == 0 || byStatus[StatusCancelled] == 0 {
			t.Fatalf("seed %d: workload too thin to test anything: %v", seed, byStatus)
		}
		payIns, seen := 0, 0
		for q := range s.Quotes.All() {
			if q.PayIn != nil {
				payIns++
				if q.PayIn.SeenAt != 0 {
					seen++
				}
			}
		}
		if payIns == 0 || len(s.PayInNext) == 0 {
			t.Fatalf("seed %d: no pay-ins issued", seed)
		}
		seenAny = seenAny || seen > 0
		encoded := EncodeState(s)
		decoded, err := DecodeState(encoded)
		if err != nil {
			t.Fatalf("seed %d: decode: %v", seed, err)
		}
		if got, want := decoded.Hash(), s.Hash(); got != want {
			t.Fatalf("seed %d: hash after round trip %x, want %x", seed, got[:8], want[:8])
		}
		if again := EncodeState(decoded); !bytes.Equal(again, encoded) {
			t.Fatalf("seed %d: re-encoding differs (%d vs %d bytes)", seed, len(again), len(encoded))
		}
		for _, m := range Modes {
			if r := decoded.LedgerCheck(m); !r.OK {
				t.Fatalf("seed %d: ledger after round trip: %v", seed, r.Problems)
			}
		}
	}
	if !seenAny {
		t.Fatalf("no workload recorded a deposit")
	}
}

// TestSnapshotOlderVersions reads snapshots of the versions before the
// current one into the same state: version 7 (quotes in id order),
// version 8 (quotes field by field) and version 12 (quotes not in
// blocks). It refuses version 8 bytes whose quotes are not in creation
// order (its Idempotency-Keys rely on it).
func TestSnapshotOlderVersions(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		s, _ := workload(t, seed, 400)
		for _, version := range []uint8{7, 8, 12} {
			old := appendState(nil, s, version)
			if bytes.Equal(old, EncodeState(s)) {
				t.Fatalf("seed %d: version %d encodes as the current version", seed, version)
			}
			decoded, err := DecodeState(old)
			if err != nil {
				t.Fatalf("seed %d: version %d: %v", seed, version, err)
			}
			if got, want := decoded.Hash(), s.Hash(); got != want {
				t.Fatalf("seed %d: version %d decodes to hash %x, want %x", seed, version, got[:8], want[:8])
			}
			if !bytes.Equal(EncodeState(decoded), EncodeState(s)) {
				t.Fatalf("seed %d: version %d re-encodes differently", seed, version)
			}
		}
		v7 := appendState(nil, s, 7)
		v7[0] = 8
		if _, err := DecodeState(v7); err == nil {
			t.Fatalf("seed %d: quotes in id order decoded as version 8", seed)
		}
	}
}

// TestSnapshotQuoteRecordRefuses: a version 9 quote record holding what
// the encoder never writes is refused, and no change to a record's bytes
// makes the decode panic.
func TestSnapshotQuoteRecordRefuses(t *testing.T) {
	s, _ := workload(t, 3, 400)
	enc := EncodeState(s)
	var q *Quote
	quotes, _ := quotesToEncode(s, snapshotVersion)
	for _, c := range quotes {
		if c.Accepted == nil && !c.Reference.IsZero() {
			q = c
			break
		}
	}
	if q == nil {
		t.Fatal("fixture: no quote left unaccepted")
	}
	at := bytes.Index(enc, q.ID[:]) // a record starts with the quote's id
	if at < 0 {
		t.Fatal("fixture: the quote's id is not in the snapshot")
	}
	if _, err := DecodeState(enc); err != nil {
		t.Fatalf("unchanged: %v", err)
	}
	for _, c := range []struct {
		name   string
		change func(rec []byte)
	}{
		{"an unknown flag", func(rec []byte) { rec[qoFlags] |= 0x80 }},
		{"an unknown mode", func(rec []byte) { rec[qoMode] = 0xff }},
		{"an unknown currency", func(rec []byte) { rec[qoDestination] = 0xff }},
		{"an unknown status", func(rec []byte) { rec[qoStatus] = 0xff }},
		{"no allocation", func(rec []byte) { le.PutUint16(rec[qoAllocations:], 0) }},
		{"too many allocations", func(rec []byte) { le.PutUint16(rec[qoAllocations:], SlicesMax+1) }},
		{"a reference over its bound", func(rec []byte) { le.PutUint16(rec[qoReference:], stringBytesMax+1) }},
		{"a reference past the end", func(rec []byte) { le.PutUint16(rec[qoReference:], 0xffff) }},
	} {
		bad := bytes.Clone(enc)
		c.change(bad[at : at+quoteFixedLen])
		if _, err := DecodeState(bad); err == nil {
			t.Errorf("%s: decoded", c.name)
		}
	}
	for i := range quoteFixedLen + allocationFixedLen {
		for _, v := range []byte{0, 1, 0x7f, 0xff} {
			bad := bytes.Clone(enc)
			bad[at+i] = v
			_, _ = DecodeState(bad) // must not panic
		}
	}
}

// TestSnapshotRefusesRepeatedQuote: two quotes with one id are corrupt
// bytes, found by the indexer DecodeState runs beside its decoding.
func TestSnapshotRefusesRepeatedQuote(t *testing.T) {
	s, _ := workload(t, 3, 400)
	var ids []QuoteID
	for q := range s.Quotes.All() {
		ids = append(ids, q.ID)
	}
	slices.SortFunc(ids, func(a, b QuoteID) int { return bytes.Compare(a[:], b[:]) })
	for _, version := range []uint8{7, 8, 9, 13} {
		enc := appendState(nil, s, version)
		// A quote's encoding starts with its id; the second quote's
		// becomes the first's.
		at := bytes.Index(enc, ids[1][:])
		if at < 0 || bytes.Count(enc, ids[1][:]) < 1 {
			t.Fatal("fixture: the quote's id is not in the snapshot")
		}
		copy(enc[at:], ids[0][:])
		if _, err := DecodeState(enc); err == nil {
			t.Fatalf("version %d: a repeated quote id decoded", version)
		}
	}
}

// TestSnapshotThenReplay: snapshot at event k plus the events after k gives
// the same state as replaying everything.
func TestSnapshotThenReplay(t *testing.T) {
	full, events := workload(t, 7, 600)
	for _, k := range []int{0, 1, len(events) / 3, len(events) - 1, len(events)} {
		prefix := NewState()
		for _, ev := range events[:k] {
			if err := prefix.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		s, err := DecodeState(EncodeState(prefix))
		if err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		for _, ev := range events[k:] {
			if err := s.Apply(ev); err != nil {
				t.Fatalf("k=%d: apply after snapshot: %v", k, err)
			}
		}
		if got, want := s.Hash(), full.Hash(); got != want {
			t.Fatalf("k=%d: hash %x, want %x", k, got[:8], want[:8])
		}
	}
}

func TestDecodeStateRefusesGarbage(t *testing.T) {
	s, _ := workload(t, 3, 100)
	encoded := EncodeState(s)
	for n := 0; n < len(encoded); n += 1 + n/7 {
		if _, err := DecodeState(encoded[:n]); err == nil {
			t.Fatalf("truncated snapshot of %d/%d bytes decoded", n, len(encoded))
		}
	}
	if _, err := DecodeState(append(encoded[:len(encoded):len(encoded)], 0)); err == nil {
		t.Fatal("snapshot with a trailing byte decoded")
	}
}

// TestQuoteSlabFillsItsPages keeps a quote slab a whole number of the
// runtime's 8 KiB heap pages. A quote's size changed: choose quoteSlabLen
// again, the smallest length that fills whole pages (or near it).
func TestQuoteSlabFillsItsPages(t *testing.T) {
	const page = 8192
	if size := quoteSlabLen * unsafe.Sizeof(Quote{}); size%page != 0 {
		t.Errorf("a slab of %d quotes of %d bytes is %d bytes, %d short of a whole page",
			quoteSlabLen, unsafe.Sizeof(Quote{}), size, page-size%page)
	}
}

// TestQuoteBytesHintCovers: a quote never encodes to more than
// quoteBytesHint, in version 9's layout or the earlier one, so that the
// encoder's one Grow holds the quotes (a hint short of them would copy the
// whole buffer again): the workload's quotes, and each with every
// optional part filled and its varints at their longest.
func TestQuoteBytesHintCovers(t *testing.T) {
	s, _ := workload(t, 5, 400)
	long := strings.Repeat("x", stringBytesMax)
	checked := 0
	for q := range s.QuotesInOrder() {
		full := *q
		full.Chat = &Chat{ConversationID: long, ChatQuoteID: long, ListingID: long, InitialListingRate: Rate{math.MaxUint64, math.MaxUint64},
			NegotiationStartedAt: long, QuoteSentAt: long}
		full.Accepted = &Acceptance{At: math.MinInt64, PoolAccount: AccountID(q.ID), Settlement: Settlement{Kind: SettlementBank,
			Account: AccountID(q.ID), AccountName: long, AccountNumber: long, BankCode: long, Address: long}}
		full.PayIn = &PayIn{Address: AddressID(q.ID), Deposit: long, Index: 1<<31 - 1, CreatedAt: math.MinInt64,
			SeenAmount: math.MinInt64, SeenTx: long, SeenAt: math.MinInt64}
		full.Amount, full.CreatedAt, full.UpdatedAt, full.ExpiresAt, full.TTL = math.MinInt64, math.MinInt64, math.MinInt64, math.MinInt64, math.MinInt32
		for _, c := range []*Quote{q, &full} {
			for _, enc := range []func(*encoder, *Quote){encodeQuoteFixed, encodeQuote} {
				var e encoder
				enc(&e, c)
				if hint := quoteBytesHint(c); len(e.buf) > hint {
					t.Fatalf("quote %x encodes to %d bytes, hint %d", c.ID[:4], len(e.buf), hint)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no quote checked")
	}
}

// TestDeferKeyWrites: a state whose Idempotency-Key writes were deferred
// (DeferKeyWrites) and written by a KeyWriter ends as the same state as one
// that wrote them inline, with quotes forgotten along the way (their keys
// forgotten through the same batches, in order) and keys reused.
func TestDeferKeyWrites(t *testing.T) {
	forgot := 0
	for seed := uint64(1); seed <= 6; seed++ {
		_, events := workload(t, seed, 600)
		inline, aside := NewState(), NewState()
		var batches [][]KeyOp
		w, flush := aside.DeferKeyWrites(func(b []KeyOp) { batches = append(batches, b) })
		for i, ev := range events {
			for _, s := range []*State{inline, aside} {
				if err := s.Apply(ev); err != nil {
					t.Fatalf("seed %d: %s: %v", seed, ev.Type(), err)
				}
			}
			if i%97 == 96 {
				cutoff := ev.Time() - 30_000
				forgot += inline.ForgetEnded(cutoff)
				aside.ForgetEnded(cutoff)
			}
		}
		flush()
		flush() // a second call does nothing
		for _, b := range batches {
			w.Write(b)
		}
		w.Finish()
		if inline.Idempotency.Len() == 0 {
			t.Fatalf("seed %d: no Idempotency-Key recorded", seed)
		}
		if got, want := aside.Hash(), inline.Hash(); got != want {
			t.Fatalf("seed %d: keys indexed aside give hash %x, inline %x", seed, got[:8], want[:8])
		}
	}
	if forgot == 0 {
		t.Fatal("no quote forgotten: the forget path went untested")
	}
}

// TestSnapshotPayments: payments of every kind, a reversal, an audit
// line's details and a rolled key's predecessor survive a snapshot; a
// version 9 snapshot's receipts (all recorded before identities, then)
// come back as those payments, each with its statement posting's
// sequence, and their duplicates are found again.
func TestSnapshotPayments(t *testing.T) {
	s, _ := workload(t, 7, 50)
	apply := func(ev Event) {
		t.Helper()
		if err := s.Apply(ev); err != nil {
			t.Fatalf("apply %s: %v", ev.Type(), err)
		}
	}
	now := s.LastAt + 1
	var client *Client
	for _, c := range s.Clients {
		client = c
	}
	live := s.Treasuries[ModeLive]
	wallet, _ := live.Wallet(client.ID, CurrencyNGN)
	quote := QuoteID{9}
	// Receipts as recorded before identities: one transfer typed twice.
	legacy := []*PaymentReceived{
		{At: now, Method: ReceiptBank, Quote: quote, Account: wallet.ID, Amount: 6000, Reference: "NIP-VAR-1"},
		{At: now, Method: ReceiptBank, Quote: quote, Account: wallet.ID, Amount: 6000, Reference: " nip-var-1"},
		{At: now, Method: ReceiptBank, Quote: quote, Account: wallet.ID, Amount: 100, Reference: "NIP-2"},
	}
	for _, ev := range legacy {
		apply(ev)
	}
	v9 := appendState(nil, s, 9)
	old, err := DecodeState(v9)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := old.Hash(), s.Hash(); got != want {
		t.Fatalf("version 9 with receipts decodes to hash %x, want %x", got[:8], want[:8])
	}
	if d := old.Payments.Duplicates(); len(d) != 1 || len(d[0].Payments) != 2 || d[0].Payments[1].Seq != d[0].Payments[0].Seq+1 {
		t.Fatalf("duplicates from version 9: %+v", d)
	}

	inbound, _ := InboundIdentity(CurrencyNGN, "NIP-3")
	apply(&PaymentReceived{At: now, Method: ReceiptBank, Quote: quote, Account: wallet.ID, Amount: 50, Reference: inbound.Text(), Identity: inbound})
	prefund, _ := InboundIdentity(CurrencyNGN, "NIP-PREFUND")
	apply(&AccountDeposited{At: now, Account: wallet.ID, Amount: 70, Reference: prefund, IdempotencyKey: "k1", RequestHash: [32]byte{1}})
	payout, _ := OutboundIdentity(CurrencyNGN, "PAYOUT-1")
	apply(&AccountWithdrawn{At: now, Account: wallet.ID, Amount: 30, Reference: payout})
	second := legacy[1]
	r, _ := s.Payments.Lookup(legacyIdentity(ReceiptBank, ChainNone, CurrencyNGN, second.Reference))
	dup := s.Payments.clashes[r.Identity][1]
	apply(&ReceiptReversed{At: now, Receipt: dup.ReceiptID(), Account: dup.Account, Amount: dup.Amount, Reason: "typed twice"})
	apply(&OperatorActed{At: now, Audit: AuditID{1}, Operator: "root", Action: "POST /x", Target: "/x", Status: 200,
		Details: &AuditDetails{Amount: 30, Currency: CurrencyNGN, Reference: "payout-1", Account: wallet.ID, Receipt: dup.ReceiptID()}})
	for _, k := range s.Keys {
		apply(&KeyRolled{At: now, Old: k.ID, Key: KeyID{7}, Hash: [32]byte{7}, ExpiresAt: now + 1})
		break
	}

	enc := EncodeState(s)
	decoded, err := DecodeState(enc)
	if err != nil {
		t.Fatal(err)
	}
	if decoded.Hash() != s.Hash() || !bytes.Equal(EncodeState(decoded), enc) {
		t.Fatal("a snapshot with payments decodes to another state")
	}
	if p, ok := decoded.Payments.ByKey("k1"); !ok || p.Identity != prefund || p.RequestHash != [32]byte{1} {
		t.Errorf("prefund by key: %+v", p)
	}
	if p, ok := decoded.Payments.Receipt(dup.ReceiptID()); !ok || !p.Reversed() || !p.Legacy {
		t.Errorf("reversed receipt: %+v", p)
	}
	if a := decoded.Audit[len(decoded.Audit)-1]; a.Details == nil || a.Details.Receipt != dup.ReceiptID() || a.Details.Reference != "payout-1" {
		t.Errorf("audit details: %+v", a.Details)
	}
	if k := decoded.Keys[KeyID{7}]; k == nil || k.RolledFrom.IsZero() {
		t.Errorf("rolled key: %+v", k)
	}
	if got := decoded.Treasuries[ModeLive].ReceiptsOf(quote); len(got) != 4 {
		t.Errorf("receipts of the quote after decode: %d, want 4", len(got))
	}
}
