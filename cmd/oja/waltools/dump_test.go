package waltools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/oja-exchange/oja/engine"
	"github.com/shopspring/decimal"
)

// dumpShapes is the documented top-level event members of each type
// (walUsage), optional ones included when the event sets them.
var dumpShapes = map[string][]string{
	"ClientCreated":        {"clientId", "name", "wallets"},
	"KeyCreated":           {"keyId", "clientId", "mode", "keyHash"},
	"KeyRevoked":           {"keyId"},
	"KeyRolled":            {"oldKeyId", "keyId", "keyHash", "expiresAt"},
	"KeysUsed":             {"keys"},
	"OperatorCreated":      {"operatorId", "name", "role", "tokenHash"},
	"OperatorRevoked":      {"operatorId"},
	"OperatorActed":        {"auditId", "operator", "operatorId", "action", "target", "httpStatus"},
	"WebhookSecretRotated": {"webhookId", "previousSecretUntil"},
	"WebhookUpdated":       {"webhookId", "url", "events"},
	"PoolCreated":          {"poolId", "mode", "name", "pair", "source", "destination", "rate", "ownerClientId", "poolAccountId", "proceedsAccountId"},
	"PoolRateSet":          {"poolId", "rate"},
	"PoolStatusSet":        {"poolId", "status"},
	"PoolDeposited":        {"poolId", "amount"},
	"PoolWithdrawn":        {"poolId", "amount"},
	"AccountDeposited":     {"accountId", "amount"},
	"QuoteCreated": {"quoteId", "clientId", "keyId", "mode", "pair", "source", "destination", "amountDirection", "amount",
		"proposedRate", "chain", "reference", "channel", "idempotencyKey", "requestHash", "expiresAt", "allocations", "chatMetadata"},
	"QuoteAccepted":            {"quoteId", "poolAccountId", "expiresAt", "settlement"},
	"QuoteCancelled":           {"quoteId"},
	"QuoteCancelledByOperator": {"quoteId"},
	"QuoteExpired":             {"quoteId"},
	"QuoteCompleted":           {"quoteId"},
	"WebhookCreated":           {"webhookId", "clientId", "mode", "url", "events"},
	"WebhookDeleted":           {"webhookId"},
	"WebhookSettled":           {"webhookId", "eventId", "delivered"},
}

// TestWalDumpShape pins `oja wal dump --json`: every event type, with
// every optional member set, has exactly its documented members; amounts
// are integers in minor units, rates plain decimal numbers, ids UUIDs.
func TestWalDumpShape(t *testing.T) {
	t.Parallel()
	id := func() [16]byte { return uuid.New() }
	rate, _ := engine.RateFromDecimal(decimal.RequireFromString("0.000625"))
	at := time.Date(2026, 11, 21, 10, 0, 0, 123e6, time.UTC).UnixMilli()
	events := []engine.Event{
		&engine.ClientCreated{At: at, Client: id(), Name: "Acme", Wallets: []engine.WalletAccount{{Mode: engine.ModeLive, Currency: engine.CurrencyNGN, Account: id()}}},
		&engine.KeyCreated{At: at, Key: id(), Client: id(), Mode: engine.ModeLive, Hash: [32]byte{1}},
		&engine.KeyRevoked{At: at, Key: id()},
		&engine.KeyRolled{At: at, Old: id(), Key: id(), Hash: [32]byte{2}, ExpiresAt: at + 3_600_000},
		&engine.KeysUsed{At: at, Uses: []engine.KeyUse{{Key: id(), At: at - 60_000}, {Key: id(), At: at}}},
		&engine.OperatorCreated{At: at, Operator: id(), Name: "Ngozi", Role: engine.RoleViewer, Hash: [32]byte{3}},
		&engine.OperatorRevoked{At: at, Operator: id()},
		&engine.OperatorActed{At: at, Audit: id(), Operator: "Ngozi", OperatorID: id(), Action: "POST /admin/v1/clients", Target: "/admin/v1/clients", Status: 201},
		&engine.PoolCreated{At: at, Pool: id(), Mode: engine.ModeSandbox, Name: "Desk", Pair: engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT}, Rate: rate, Owner: id(), LiquidityAccount: id(), ProceedsAccount: id()},
		&engine.PoolRateSet{At: at, Pool: id(), Rate: rate},
		&engine.PoolStatusSet{At: at, Pool: id(), Active: false},
		&engine.PoolDeposited{At: at, Pool: id(), Amount: 150000},
		&engine.PoolWithdrawn{At: at, Pool: id(), Amount: 1},
		&engine.AccountDeposited{At: at, Account: id(), Amount: 250},
		&engine.QuoteCreated{At: at, Quote: id(), Client: id(), Mode: engine.ModeLive, Pair: engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT},
			Direction: engine.DirectionSource, Amount: 160000, ProposedRate: rate, Chain: engine.ChainTron, Reference: engine.MustRef("OJA-4F7Q9D2M"),
			ExpiresAt: at + 300000, IdempotencyKey: engine.MakeIdemKey("k-1"), Channel: engine.ChannelXML, Key: id(),
			Allocations: []engine.Allocation{{ID: id(), Pool: id(), PoolAccount: id(), PoolName: "Desk", Rate: rate, Source: 160000, Destination: 1000000, Reference: engine.MustRef("ALC-7K3M9Q2XPB")}},
			Chat:        &engine.Chat{ConversationID: "c", ChatQuoteID: "q", ListingID: "l", InitialListingRate: rate, NegotiationStartedAt: "t1", QuoteSentAt: "t2"}},
		&engine.QuoteAccepted{At: at, Quote: id(), PoolAccount: id(), ExpiresAt: at + 1800000,
			Settlement: engine.Settlement{Kind: engine.SettlementBank, AccountName: "A", AccountNumber: "1", BankCode: "B"}},
		&engine.QuoteCancelled{At: at, Quote: id()},
		&engine.QuoteCancelled{At: at, Quote: id(), ByOperator: true},
		&engine.QuoteExpired{At: at, Quote: id()},
		&engine.QuoteCompleted{At: at, Quote: id()},
		&engine.WebhookCreated{At: at, Webhook: id(), Client: id(), Mode: engine.ModeLive, URL: "https://h.example/x",
			Events: engine.WebhookEventsAll, Secret: "whsec_never_dumped"},
		&engine.WebhookDeleted{At: at, Webhook: id()},
		&engine.WebhookSecretRotated{At: at, Webhook: id(), Secret: "whsec_rotated", PreviousUntil: at + 86_400_000},
		&engine.WebhookUpdated{At: at, Webhook: id(), URL: "https://hooks.example.com/v2", Events: engine.WebhookQuoteCreated},
		&engine.WebhookSettled{At: at, Webhook: id(), Event: id(), Delivered: false},
	}
	seen := map[string]bool{}
	for i, ev := range events {
		name := ev.Type().String()
		seen[name] = true
		if !strings.Contains(walUsage, "    "+name+" ") {
			t.Errorf("%s: not documented in oja wal help", name)
		}
		raw, err := json.Marshal(dumpRecord{Seq: uint64(i + 1), Type: name, At: fmtMillis(ev.Time()), Event: dumpEventOf(ev)})
		if err != nil {
			t.Fatal(err)
		}
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var rec map[string]any
		if err := d.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		if rec["at"] != "2026-11-21T10:00:00.123Z" || rec["type"] != name || rec["seq"] != json.Number(fmt.Sprint(i+1)) {
			t.Errorf("%s: record %s", name, raw)
		}
		event, _ := rec["event"].(map[string]any)
		if got, want := slices.Sorted(maps.Keys(event)), slices.Sorted(slices.Values(dumpShapes[name])); !slices.Equal(got, want) {
			t.Errorf("%s: event members %q, want %q", name, got, want)
		}
		for k, v := range event {
			switch {
			case k == "eventId":
				if s, _ := v.(string); !strings.HasPrefix(s, "evt_") || len(s) != 36 {
					t.Errorf("%s.eventId = %v, want evt_ and 32 hex digits", name, v)
				}
			case strings.HasSuffix(k, "Id") && k != "idempotencyKey":
				if s, _ := v.(string); uuid.Validate(s) != nil {
					t.Errorf("%s.%s = %v, want a UUID", name, k, v)
				}
			case k == "amount":
				if v != json.Number("150000") && v != json.Number("1") && v != json.Number("250") && v != json.Number("160000") {
					t.Errorf("%s.amount = %v, want the minor units as an integer", name, v)
				}
			case k == "rate" || k == "proposedRate":
				if v != json.Number("0.000625") {
					t.Errorf("%s.%s = %v (%T), want the number 0.000625", name, k, v, v)
				}
			}
		}
	}
	for name := range dumpShapes {
		if !seen[name] {
			t.Errorf("%s: no test event", name)
		}
	}
	if len(dumpShapes) != 25 {
		t.Errorf("%d event types pinned here; want 25 (MarketsSet, the pay-in and funds records are checked over the real binary, cmd/oja)", len(dumpShapes))
	}
	for _, ev := range events { // WebhookCreated and WebhookSecretRotated carry secrets
		if raw, _ := json.Marshal(dumpEventOf(ev)); strings.Contains(string(raw), "whsec_") {
			t.Errorf("the dump shows a webhook secret: %s", raw)
		}
	}
}
