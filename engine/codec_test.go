package engine_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// codecID is a recognisable id: every byte b.
func codecID(b byte) [16]byte {
	var id [16]byte
	for i := range id {
		id[i] = b
	}
	return id
}

// codecSamples has at least one event of every type, with every field set,
// plus edge values: negative and extreme times, the largest amounts and
// rates, empty and maximal strings, the most slices and wallets.
func codecSamples() []struct {
	name  string
	event engine.Event
} {
	wallets := func(n int) []engine.WalletAccount {
		var out []engine.WalletAccount
		for i := range n {
			out = append(out, engine.WalletAccount{Mode: engine.Modes[i%2], Currency: engine.DefaultMarkets().CurrencyList()[i%3],
				Account: codecID(byte(0x40 + i))})
		}
		return out
	}
	allocations := func(n int) []engine.Allocation {
		var out []engine.Allocation
		for i := range n {
			out = append(out, engine.Allocation{ID: codecID(byte(0x80 + i)), Pool: codecID(byte(i)),
				PoolAccount: codecID(byte(0xC0 + i)), PoolName: fmt.Sprintf("pool %d", i), Rate: engine.RateFromUnits(uint64(625_000_000_000_000 + i)),
				Source: engine.Amount(1_600_00 * (i + 1)), Destination: engine.Amount(1_000_000 * (i + 1)),
				Reference: engine.MustRef(fmt.Sprintf("ALC-%010d", i))})
		}
		return out
	}
	long := strings.Repeat("ọ", 4096/len("ọ")) // at the decoder's string limit
	return []struct {
		name  string
		event engine.Event
	}{
		{"client", &engine.ClientCreated{At: 1_763_712_000_123, Client: codecID(1), Name: "Adaeze Okafor — Ọjà Ltd", Wallets: wallets(6)}},
		{"client most wallets", &engine.ClientCreated{At: 0, Client: codecID(2), Name: "", Wallets: wallets(64)}},
		{"key", &engine.KeyCreated{At: 1, Key: codecID(3), Client: codecID(1), Mode: engine.ModeSandbox, Hash: sha256.Sum256([]byte("oja_sandbox_x"))}},
		{"key live", &engine.KeyCreated{At: -1, Key: codecID(4), Client: codecID(1), Mode: engine.ModeLive}},
		{"key revoked", &engine.KeyRevoked{At: math.MaxInt64, Key: codecID(3)}},
		{"key rolled", &engine.KeyRolled{At: 9, Old: codecID(3), Key: codecID(11), Hash: sha256.Sum256([]byte("oja_live_y")), ExpiresAt: 9 + 86_400_000}},
		{"key rolled at once", &engine.KeyRolled{At: math.MinInt64, Old: codecID(3), Key: codecID(12), ExpiresAt: math.MinInt64}},
		{"keys used", &engine.KeysUsed{At: 9, Uses: []engine.KeyUse{{Key: codecID(3), At: 8}, {Key: codecID(11), At: math.MaxInt64}}}},
		{"operator", &engine.OperatorCreated{At: 10, Operator: codecID(13), Name: "Ngozi Eze", Role: engine.RoleOperator, Hash: sha256.Sum256([]byte("oja_op_x"))}},
		{"viewer", &engine.OperatorCreated{At: math.MinInt64, Operator: codecID(14), Name: "v", Role: engine.RoleViewer}},
		{"operator revoked", &engine.OperatorRevoked{At: 11, Operator: codecID(13)}},
		{"operator acted", &engine.OperatorActed{At: 12, Audit: codecID(15), Operator: "Ngozi Eze", OperatorID: codecID(13),
			Action: "POST /admin/v1/pools/{poolId}/rate", Target: "/admin/v1/pools/00000000-0000-0000-0000-000000000005/rate", Status: 200}},
		{"root acted", &engine.OperatorActed{At: math.MaxInt64, Audit: codecID(16), Operator: "root", Action: "DELETE /admin/v1/operators/{operatorId}", Status: 999}},
		{"pool owned", &engine.PoolCreated{At: 7, Pool: codecID(5), Mode: engine.ModeLive, Name: "Lagos Desk 1", Pair: pairNGNUSDT,
			Rate: engine.RateFromUnits(625_000_000_000_000), Owner: codecID(1), LiquidityAccount: codecID(6), ProceedsAccount: codecID(7)}},
		{"pool marketplace", &engine.PoolCreated{At: math.MinInt64, Pool: codecID(8), Mode: engine.ModeSandbox, Name: long, Pair: pairNGNGHS,
			Rate: engine.RateMax, LiquidityAccount: codecID(9), ProceedsAccount: codecID(10)}},
		{"rate set", &engine.PoolRateSet{At: 8, Pool: codecID(5), Rate: engine.RateFromUnits(1)}},
		{"rate set largest", &engine.PoolRateSet{At: 8, Pool: codecID(5), Rate: engine.RateFromUnits(math.MaxUint64)}},
		{"status active", &engine.PoolStatusSet{At: 9, Pool: codecID(5), Active: true}},
		{"status suspended", &engine.PoolStatusSet{At: 9, Pool: codecID(5), Active: false}},
		{"pool deposit", &engine.PoolDeposited{At: 10, Pool: codecID(5), Amount: engine.AmountMax}},
		{"pool withdrawal", &engine.PoolWithdrawn{At: 11, Pool: codecID(5), Amount: 1}},
		{"account deposit", &engine.AccountDeposited{At: 12, Account: codecID(0x40), Amount: 250_000_00}},
		{"account deposit negative", &engine.AccountDeposited{At: 12, Account: codecID(0x40), Amount: math.MinInt64}},
		{"quote full", &engine.QuoteCreated{At: 13, Quote: codecID(0x20), Client: codecID(1), Mode: engine.ModeLive, Pair: pairNGNUSDT,
			Direction: engine.DirectionSource, Amount: 4_800_00, ProposedRate: engine.RateFromUnits(600_000_000_000_000), Chain: engine.ChainSolana,
			Reference: engine.MustRef("OJA-4F7Q9D2M"), ExpiresAt: 300_013, Allocations: allocations(3),
			Chat: &engine.Chat{ConversationID: "conv-1", ChatQuoteID: "cq-9", ListingID: "5b1e…", InitialListingRate: engine.RateFromUnits(625_000_000_000_000),
				NegotiationStartedAt: "2026-11-21T10:00:00.123Z", QuoteSentAt: "2026-11-21T10:01:00.000Z"},
			IdempotencyKey: engine.MakeIdemKey("idem-" + strings.Repeat("k", 250)), RequestHash: sha256.Sum256([]byte("request")), Channel: engine.ChannelXML}},
		{"quote minimal", &engine.QuoteCreated{At: 14, Quote: codecID(0x21), Client: codecID(1), Mode: engine.ModeSandbox, Pair: pairGHSUSDT,
			Direction: engine.DirectionDestination, Amount: 1, ProposedRate: engine.RateFromUnits(1), Allocations: allocations(1)}},
		{"quote empty chat", &engine.QuoteCreated{At: 14, Quote: codecID(0x22), Client: codecID(1), Mode: engine.ModeSandbox, Pair: pairGHSUSDT,
			Direction: engine.DirectionDestination, Amount: 1, ProposedRate: engine.RateFromUnits(1), Chain: engine.ChainTron, Allocations: allocations(1), Chat: &engine.Chat{}}},
		{"quote most slices", &engine.QuoteCreated{At: 15, Quote: codecID(0x23), Client: codecID(1), Mode: engine.ModeLive, Pair: pairNGNGHS,
			Direction: engine.DirectionDestination, Amount: engine.AmountMax, ProposedRate: engine.RateMax, Chain: engine.ChainPolygon,
			Allocations: allocations(engine.SlicesMax)}},
		{"accept wallet", &engine.QuoteAccepted{At: 16, Quote: codecID(0x20), PoolAccount: codecID(6),
			Settlement: engine.Settlement{Kind: engine.SettlementWallet, Account: codecID(0x41)}, ExpiresAt: 1_800_016}},
		{"accept bank", &engine.QuoteAccepted{At: 16, Quote: codecID(0x20),
			Settlement: engine.Settlement{Kind: engine.SettlementBank, AccountName: "Ada Obi", AccountNumber: "0123456789", BankCode: "058"}, ExpiresAt: -1}},
		{"accept chain", &engine.QuoteAccepted{At: 16, Quote: codecID(0x20),
			Settlement: engine.Settlement{Kind: engine.SettlementChain, Address: "TQ1h2d3CqWn2C8pR9vJ5kW7uXyZ4aB6cDe"}, ExpiresAt: math.MaxInt64}},
		{"cancel", &engine.QuoteCancelled{At: 17, Quote: codecID(0x20)}},
		{"operator cancel", &engine.QuoteCancelled{At: 18, Quote: codecID(0x21), ByOperator: true}},
		{"expire", &engine.QuoteExpired{At: 18, Quote: codecID(0x21)}},
		{"complete", &engine.QuoteCompleted{At: 19, Quote: codecID(0x22)}},
		{"webhook", &engine.WebhookCreated{At: 20, Webhook: codecID(0x30), Client: codecID(1), Mode: engine.ModeLive,
			URL: "https://hooks.example.com/oja?x=1", Events: engine.WebhookEventsAll, Secret: "whsec_" + strings.Repeat("a", 64)}},
		{"webhook one kind", &engine.WebhookCreated{At: 20, Webhook: codecID(0x31), Client: codecID(1), Mode: engine.ModeSandbox,
			URL: "http://127.0.0.1:9/h", Events: engine.WebhookQuoteExpired, Secret: "s"}},
		{"webhook deleted", &engine.WebhookDeleted{At: 21, Webhook: codecID(0x30)}},
		{"webhook updated", &engine.WebhookUpdated{At: 23, Webhook: codecID(0x30), URL: "https://hooks.example.com/v2", Events: engine.WebhookQuoteCompleted | engine.WebhookPayInReceived}},
		{"webhook secret rotated", &engine.WebhookSecretRotated{At: 22, Webhook: codecID(0x30), Secret: "whsec_" + long[:40], PreviousUntil: 22 + 86_400_000}},
		{"webhook delivered", &engine.WebhookSettled{At: 22, Webhook: codecID(0x31), Event: codecID(0x32), Delivered: true}},
		{"webhook abandoned", &engine.WebhookSettled{At: 23, Webhook: codecID(0x31), Event: codecID(0x33)}},
		{"markets", &engine.MarketsSet{At: 24, Markets: engine.DefaultMarkets()}},
		{"accept with pay-in", &engine.QuoteAccepted{At: 25, Quote: codecID(0x23), Settlement: engine.Settlement{Kind: engine.SettlementWallet, Account: codecID(0x41)},
			ExpiresAt: 1_800_025, PayIn: &engine.PayIn{Address: codecID(0x50), Deposit: "0x52908400098527886E0F7030069857D2E4169EE7",
				Currency: engine.CurrencyUSDT, Chain: engine.ChainEthereum, Index: 7, CreatedAt: 25}}},
		{"pay-in seen", &engine.PayInSeen{At: 26, Quote: codecID(0x23), Amount: 100_000_000, TxHash: "0x" + strings.Repeat("ab", 32)}},
		{"receipt before identities", &engine.PaymentReceived{At: 27, Method: engine.ReceiptBank, Quote: codecID(0x20), Account: codecID(0x41),
			Amount: 4_800_00, Reference: "NIP/0001"}},
		{"receipt identified", &engine.PaymentReceived{At: 28, Method: engine.ReceiptCrypto, Quote: codecID(0x23), Account: codecID(0x42),
			Amount: 100_000_000, Reference: "0x" + strings.Repeat("cd", 32), Address: codecID(0x50),
			Identity: engine.ChainIdentity(engine.ChainEthereum, strings.Repeat("cd", 32), 3)}},
		{"payout before identities", &engine.AccountWithdrawn{At: 29, Account: codecID(0x41), Amount: 1}},
		{"payout", &engine.AccountWithdrawn{At: 30, Account: codecID(0x41), Amount: 2_500_00, Reference: mustIdentity(engine.OutboundIdentity(engine.CurrencyNGN, "PAYOUT-1")),
			IdempotencyKey: "k-1", RequestHash: sha256.Sum256([]byte("payout"))}},
		{"prefund", &engine.AccountDeposited{At: 31, Account: codecID(0x41), Amount: 2_500_00, Reference: mustIdentity(engine.InboundIdentity(engine.CurrencyNGN, "FT-1")),
			IdempotencyKey: "k-2", RequestHash: sha256.Sum256([]byte("prefund"))}},
		{"credit limit", &engine.CreditLimitSet{At: 32, Account: codecID(0x41), Limit: 0}},
		{"funded completion", &engine.QuoteCompleted{At: 33, Quote: codecID(0x20), Wallet: codecID(0x41), Simulated: 4_800_00}},
		{"reversal", &engine.ReceiptReversed{At: 34, Receipt: engine.ReceiptID{Mode: engine.ModeLive, Seq: 27}, Account: codecID(0x41), Amount: 4_800_00, Reason: "duplicate"}},
		{"operator acted with details", &engine.OperatorActed{At: 35, Audit: codecID(17), Operator: "root", Action: "POST /admin/v1/accounts/{accountId}/withdraw",
			Status: 200, Details: &engine.AuditDetails{Amount: 2_500_00, Currency: engine.CurrencyNGN, Reference: "PAYOUT-1", Account: codecID(0x41)}}},
		{"markets with sandbox accounts", &engine.MarketsSet{At: 36, Markets: sandboxMarkets()}},
		{"chain progressed", &engine.ChainProgressed{At: 37, Chain: engine.ChainEthereum,
			Cursor: engine.ChainCursor{Block: 19_000_000, Hash: sha256.Sum256([]byte("block"))}}},
		{"chain progressed with unapplied", &engine.ChainProgressed{At: 38, Chain: engine.ChainTron, Cursor: engine.ChainCursor{Block: 5},
			Unapplied: []engine.ChainDeposit{{Tx: "0x" + strings.Repeat("ef", 32), LogIndex: 2, Block: 5, Address: codecID(0x51), Currency: engine.CurrencyUSDT,
				Value: "1000000000000000001", Decimals: 18, Reason: engine.UnappliedPrecision}}}},
		{"receipt unapplied", &engine.ReceiptUnapplied{At: 39, Receipt: engine.UnappliedReceipt{ID: codecID(0x60), Mode: engine.ModeLive,
			Currency: engine.CurrencyNGN, Amount: 25_000_00, Identity: mustIdentity(engine.InboundIdentity(engine.CurrencyNGN, "FT-2")),
			Remittance: "school fees " + long[:100], Debtor: "Ada Obi", At: 39}}},
		{"unapplied applied", &engine.UnappliedSettled{At: 40, Mode: engine.ModeLive, Unapplied: codecID(0x60), Amount: 25_000_00, Account: codecID(0x41), Quote: codecID(0x20)}},
		{"unapplied returned", &engine.UnappliedSettled{At: 41, Mode: engine.ModeSandbox, Unapplied: codecID(0x61), Amount: 1,
			Return: mustIdentity(engine.OutboundIdentity(engine.CurrencyNGN, "RET-1"))}},
	}
}

// sameEvent compares events as the codec keeps them: markets by
// Markets.Equal (they hold derived indexes), the rest field by field.
func sameEvent(a, b engine.Event) bool {
	if ma, ok := a.(*engine.MarketsSet); ok {
		mb, ok := b.(*engine.MarketsSet)
		return ok && ma.At == mb.At && ma.Markets.Equal(mb.Markets) &&
			reflect.DeepEqual(ma.Markets.SandboxCollection, mb.Markets.SandboxCollection)
	}
	return reflect.DeepEqual(a, b)
}

func mustIdentity(id engine.Identity, err error) engine.Identity {
	if err != nil {
		panic(err)
	}
	return id
}

// sandboxMarkets are the default markets with a sandbox collection account.
func sandboxMarkets() *engine.Markets {
	m := engine.DefaultMarkets()
	c := *m
	c.SandboxCollection = map[engine.Currency]engine.BankAccount{
		engine.CurrencyNGN: {AccountName: "Oja Sandbox", AccountNumber: "0000000001", BankName: "Sandbox Bank"},
	}
	return &c
}

// TestCodecRoundTrip: every event decodes to what was encoded, by
// DecodeEvent and by an EventDecoder shared by all (its chunks filled by
// the events before); every event type is covered.
func TestCodecRoundTrip(t *testing.T) {
	seen := make(map[engine.EventType]bool)
	var bulk engine.EventDecoder
	for _, tc := range codecSamples() {
		t.Run(tc.name, func(t *testing.T) {
			seen[tc.event.Type()] = true
			enc := engine.AppendEvent(nil, tc.event)
			got, err := engine.DecodeEvent(enc)
			if err != nil {
				t.Fatalf("DecodeEvent: %v", err)
			}
			if !sameEvent(got, tc.event) {
				t.Errorf("round trip:\ngot  %#v\nwant %#v", got, tc.event)
			}
			for range 3 {
				if got, err := bulk.Decode(enc); err != nil || !sameEvent(got, tc.event) {
					t.Errorf("EventDecoder: %v\ngot  %#v\nwant %#v", err, got, tc.event)
				}
			}
			if got.Type() != tc.event.Type() || got.Time() != tc.event.Time() {
				t.Errorf("type/time: got %s/%d, want %s/%d", got.Type(), got.Time(), tc.event.Type(), tc.event.Time())
			}
		})
	}
	for typ := engine.EventClientCreated; typ <= engine.EventUnappliedSettled; typ++ {
		if !seen[typ] {
			t.Errorf("no sample of %s", typ)
		}
	}
}

// TestCodecTags: the type tags are stored in the log and must never be
// renumbered; the encoding starts with the version and the tag.
func TestCodecTags(t *testing.T) {
	want := map[string]byte{
		"ClientCreated": 1, "KeyCreated": 2, "KeyRevoked": 3, "PoolCreated": 4, "PoolRateSet": 5,
		"PoolStatusSet": 6, "PoolDeposited": 7, "PoolWithdrawn": 8, "AccountDeposited": 9, "QuoteCreated": 10,
		"QuoteAccepted": 11, "QuoteCancelled": 12, "QuoteExpired": 13, "QuoteCompleted": 14, "QuoteCancelledByOperator": 15,
		"WebhookCreated": 16, "WebhookDeleted": 17, "WebhookSettled": 18, "KeyRolled": 26, "WebhookSecretRotated": 27, "WebhookUpdated": 28, "KeysUsed": 29,
		"OperatorCreated": 30, "OperatorRevoked": 31, "OperatorActed": 32,
		"MarketsSet": 19, "QuoteAcceptedWithPayIn": 20, "PayInSeen": 21, "PaymentReceived": 22, "AccountWithdrawn": 23,
		"CreditLimitSet": 24, "QuoteCompletedFunded": 25, "PaymentIdentified": 33, "AccountDepositedRef": 34,
		"AccountWithdrawnRef": 35, "ReceiptReversed": 36, "OperatorActedInline": 37, "MarketsSetSandbox": 38,
		"ChainProgressed": 39, "ReceiptUnapplied": 40, "UnappliedSettled": 41,
	}
	for _, tc := range codecSamples() {
		enc := engine.AppendEvent(nil, tc.event)
		name := tc.event.Type().String()
		version := byte(1)
		if name == "QuoteCreated" {
			version = 2 // the quote's fixed-width record (codec.go)
		}
		if enc[0] != version || enc[1] != want[name] {
			t.Errorf("%s: encoding starts %d %d, want version %d and tag %d", tc.name, enc[0], enc[1], version, want[name])
		}
	}
	// A golden encoding pins the layout of one event.
	got := engine.AppendEvent(nil, &engine.QuoteCancelled{At: 300, Quote: codecID(0xAB)})
	golden := append([]byte{1, 12, 0xd8, 0x04}, bytes.Repeat([]byte{0xAB}, 16)...)
	if !bytes.Equal(got, golden) {
		t.Errorf("QuoteCancelled{At: 300}: got % x, want % x", got, golden)
	}
	if got := engine.EventType(0).String(); got != "Unknown" {
		t.Errorf("EventType(0).String() = %q", got)
	}
}

// TestCodecDeterministic: the same event always encodes to the same bytes,
// and AppendEvent appends without touching what dst held.
func TestCodecDeterministic(t *testing.T) {
	for _, tc := range codecSamples() {
		first := engine.AppendEvent(nil, tc.event)
		for range 3 {
			if again := engine.AppendEvent(nil, tc.event); !bytes.Equal(again, first) {
				t.Fatalf("%s: encodings differ:\n% x\n% x", tc.name, first, again)
			}
		}
		decoded, err := engine.DecodeEvent(first)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if re := engine.AppendEvent(nil, decoded); !bytes.Equal(re, first) {
			t.Errorf("%s: re-encoding the decoded event differs", tc.name)
		}
		prefix := []byte("prefix")
		dst := engine.AppendEvent(append(make([]byte, 0, 4), prefix...), tc.event)
		if !bytes.HasPrefix(dst, prefix) || !bytes.Equal(dst[len(prefix):], first) {
			t.Errorf("%s: AppendEvent onto a prefix: got % x", tc.name, dst)
		}
	}
}

// TestCodecTruncated: every strict prefix of every encoding is refused with
// ErrCorruptEvent, never a panic.
func TestCodecTruncated(t *testing.T) {
	var bulk engine.EventDecoder
	for _, tc := range codecSamples() {
		enc := engine.AppendEvent(nil, tc.event)
		for n := range len(enc) {
			ev, err := decodeRecovering(t, enc[:n])
			if err == nil || !errors.Is(err, engine.ErrCorruptEvent) {
				t.Fatalf("%s truncated to %d of %d bytes: got %v, %v; want ErrCorruptEvent", tc.name, n, len(enc), ev, err)
			}
			if ev, err := bulk.Decode(enc[:n]); err == nil || !errors.Is(err, engine.ErrCorruptEvent) {
				t.Fatalf("%s truncated to %d of %d bytes, by an EventDecoder: got %v, %v", tc.name, n, len(enc), ev, err)
			}
		}
	}
}

// TestCodecTrailingBytes: bytes after a whole event are refused.
func TestCodecTrailingBytes(t *testing.T) {
	for _, tc := range codecSamples() {
		enc := engine.AppendEvent(nil, tc.event)
		for _, extra := range [][]byte{{0}, {1}, {0xff, 0xff}, engine.AppendEvent(nil, tc.event)} {
			if ev, err := decodeRecovering(t, append(enc[:len(enc):len(enc)], extra...)); !errors.Is(err, engine.ErrCorruptEvent) {
				t.Errorf("%s + % x: got %v, %v; want ErrCorruptEvent", tc.name, extra, ev, err)
			}
		}
	}
}

// TestCodecInvalid: bytes that are not a valid event, field by field.
func TestCodecInvalid(t *testing.T) {
	encode := func(ev engine.Event) []byte { return engine.AppendEvent(nil, ev) }
	// patch returns enc with the byte at i (negative: from the end) set to v.
	patch := func(enc []byte, i int, v byte) []byte {
		out := bytes.Clone(enc)
		if i < 0 {
			i += len(out)
		}
		out[i] = v
		return out
	}
	quote := func(change func(q *engine.QuoteCreated)) []byte {
		q := &engine.QuoteCreated{At: 1, Quote: codecID(1), Client: codecID(2), Mode: engine.ModeLive, Pair: pairNGNUSDT,
			Direction: engine.DirectionSource, Amount: 100, ProposedRate: engine.RateFromUnits(1), Allocations: []engine.Allocation{{Destination: 1}}}
		change(q)
		return encode(q)
	}
	accept := func(kind engine.SettlementKind) []byte {
		return encode(&engine.QuoteAccepted{At: 1, Quote: codecID(1), Settlement: engine.Settlement{Kind: kind}})
	}
	// header is version, tag and At = 0.
	header := func(tag engine.EventType) []byte { return []byte{1, byte(tag), 0} }
	tests := []struct {
		name string
		enc  []byte
	}{
		{"empty", nil},
		{"version 0", patch(encode(&engine.KeyRevoked{At: 1}), 0, 0)},
		{"version 2", patch(encode(&engine.KeyRevoked{At: 1}), 0, 2)},
		{"type 0", patch(encode(&engine.KeyRevoked{At: 1}), 1, 0)},
		{"type 16", patch(encode(&engine.KeyRevoked{At: 1}), 1, 16)},
		{"type 255", patch(encode(&engine.KeyRevoked{At: 1}), 1, 255)},
		{"time varint overflows", append([]byte{1, 3}, bytes.Repeat([]byte{0xff}, 11)...)},
		{"client wallet count over 64", encode(&engine.ClientCreated{Wallets: slices.Repeat([]engine.WalletAccount{
			{Mode: engine.ModeLive, Currency: engine.CurrencyNGN}}, 65)})},
		{"client wallet count huge", binary.AppendUvarint(append(header(engine.EventClientCreated), make([]byte, 17)...), math.MaxUint64)},
		{"client wallet without mode", encode(&engine.ClientCreated{Wallets: []engine.WalletAccount{{Currency: engine.CurrencyNGN}}})},
		{"client wallet without currency", encode(&engine.ClientCreated{Wallets: []engine.WalletAccount{{Mode: engine.ModeLive}}})},
		{"client wallet currency 4", encode(&engine.ClientCreated{Wallets: []engine.WalletAccount{{Mode: engine.ModeLive, Currency: 4}}})},
		{"client name over 4096 bytes", encode(&engine.ClientCreated{Name: strings.Repeat("x", 4097)})},
		{"client name longer than the record", binary.AppendUvarint(append(header(engine.EventClientCreated), make([]byte, 16)...), 100)},
		{"client name length huge", binary.AppendUvarint(append(header(engine.EventClientCreated), make([]byte, 16)...), math.MaxUint64)},
		{"key mode 0", encode(&engine.KeyCreated{})},
		{"key mode 3", encode(&engine.KeyCreated{Mode: 3})},
		{"pool source currency 0", encode(&engine.PoolCreated{Mode: engine.ModeLive, Pair: engine.Pair{Destination: engine.CurrencyUSDT}})},
		{"pool destination currency 9", encode(&engine.PoolCreated{Mode: engine.ModeLive, Pair: engine.Pair{Source: engine.CurrencyNGN, Destination: 9}})},
		{"pool mode 0", encode(&engine.PoolCreated{Pair: pairNGNUSDT})},
		{"pool rate varint overflows", append(append(header(engine.EventPoolRateSet), make([]byte, 16)...), bytes.Repeat([]byte{0xff}, 10)...)},
		{"status bool 2", patch(encode(&engine.PoolStatusSet{Active: true}), -1, 2)},
		{"quote direction 0", quote(func(q *engine.QuoteCreated) { q.Direction = 0 })},
		{"quote direction 3", quote(func(q *engine.QuoteCreated) { q.Direction = 3 })},
		{"quote chain 6", quote(func(q *engine.QuoteCreated) { q.Chain = 6 })},
		{"quote chain 255", quote(func(q *engine.QuoteCreated) { q.Chain = 255 })},
		{"quote mode 0", quote(func(q *engine.QuoteCreated) { q.Mode = 0 })},
		{"quote pair invalid", quote(func(q *engine.QuoteCreated) { q.Pair = engine.Pair{} })},
		{"quote without allocations", quote(func(q *engine.QuoteCreated) { q.Allocations = nil })},
		{"quote over SlicesMax allocations", quote(func(q *engine.QuoteCreated) {
			q.Allocations = make([]engine.Allocation, engine.SlicesMax+1)
		})},
		{"quote chat flag 2", func() []byte {
			// The chat flag ends a pending quote's record (version 2; version 1:
			// TestCodecQuoteCreatedVersion1).
			return patch(quote(func(q *engine.QuoteCreated) {}), -1, 2)
		}()},
		{"quote channel 2", quote(func(q *engine.QuoteCreated) { q.Channel = 2 })},
		{"accept settlement none", accept(engine.SettlementNone)},
		{"accept settlement 4", accept(engine.SettlementChain + 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := decodeRecovering(t, tc.enc)
			if err == nil {
				t.Fatalf("DecodeEvent(% x) = %#v; want ErrCorruptEvent", tc.enc, ev)
			}
			if !errors.Is(err, engine.ErrCorruptEvent) {
				t.Errorf("error %v does not wrap ErrCorruptEvent", err)
			}
			if !strings.HasPrefix(err.Error(), "engine: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			if ev != nil {
				t.Errorf("DecodeEvent returned an event with its error: %#v", ev)
			}
		})
	}
}

// decodeRecovering decodes b, failing the test on a panic.
func decodeRecovering(t testing.TB, b []byte) (ev engine.Event, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("DecodeEvent(% x) panicked: %v", b, r)
		}
	}()
	return engine.DecodeEvent(b)
}

// FuzzDecodeEvent: DecodeEvent never panics on hostile bytes, and what it
// decodes re-encodes to bytes that decode to an equal event (and encode
// to the same bytes again).
func FuzzDecodeEvent(f *testing.F) {
	for _, tc := range codecSamples() {
		enc := engine.AppendEvent(nil, tc.event)
		f.Add(enc)
		f.Add(enc[:len(enc)/2])
		if q, ok := tc.event.(*engine.QuoteCreated); ok {
			f.Add(appendQuoteCreatedV1(nil, q))
		}
	}
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := decodeRecovering(t, b)
		if err != nil {
			if !errors.Is(err, engine.ErrCorruptEvent) {
				t.Fatalf("error %v does not wrap ErrCorruptEvent", err)
			}
			return
		}
		if ev.Type() != engine.EventType(b[1]) {
			t.Fatalf("decoded a %s from tag %d", ev.Type(), b[1])
		}
		enc := engine.AppendEvent(nil, ev)
		again, err := engine.DecodeEvent(enc)
		if err != nil {
			t.Fatalf("re-encoding of %#v does not decode: %v", ev, err)
		}
		if !reflect.DeepEqual(again, ev) {
			t.Fatalf("re-encoded event differs:\ngot  %#v\nwant %#v", again, ev)
		}
		if third := engine.AppendEvent(nil, again); !bytes.Equal(third, enc) {
			t.Fatalf("encoding is not stable:\n% x\n% x", enc, third)
		}
		// A QuoteCreated of version 1 re-encodes in version 2's fixed
		// record, longer; every other record is its canonical encoding.
		if len(enc) > len(b) && (b[0] != 1 || ev.Type() != engine.EventQuoteCreated) {
			t.Fatalf("canonical encoding (%d bytes) longer than the input (%d)", len(enc), len(b))
		}
	})
}

// TestEventOfNil: a nil event pointer becomes a nil Event (stored as is in
// an interface it would not be), a set one the same event.
func TestEventOfNil(t *testing.T) {
	if ev := engine.EventOf((*engine.QuoteCancelled)(nil)); ev != nil {
		t.Errorf("EventOf(nil pointer) = %#v, want nil", ev)
	}
	c := &engine.QuoteCancelled{At: 7}
	if ev := engine.EventOf(c); ev != engine.Event(c) {
		t.Errorf("EventOf(%p) = %#v, want the same event", c, ev)
	}
}

// TestEveryRecordInTheLogDoc: docs/log.md's table of records names every
// event type the codec writes, so an operator reading `oja wal dump` finds
// each one.
func TestEveryRecordInTheLogDoc(t *testing.T) {
	doc, err := os.ReadFile("../docs/log.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for typ := engine.EventType(1); typ.String() != "Unknown"; typ++ {
		n++
		if !bytes.Contains(doc, []byte("`"+typ.String()+"`")) {
			t.Errorf("docs/log.md does not name the record %s (tag %d)", typ, typ)
		}
	}
	if n < 40 {
		t.Fatalf("only %d event types: the walk stopped early", n)
	}
}
