package gateway_test

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
	"github.com/oja-exchange/oja/internal/poll"
)

var (
	allocationReferencePattern = regexp.MustCompile(`^ALC-[0-9A-HJKMNP-TV-Z]{6,}$`)
	payInReferencePattern      = regexp.MustCompile(`^OJA-[0-9A-HJKMNP-TV-Z]{6,}$`)
)

// quoteKeys are the members every quote has (spec §6); callers add the
// conditional ones.
var quoteKeys = []string{
	"quoteId", "status", "source", "destination", "amount", "totalSourceAmount",
	"totalDestinationAmount", "clientId", "mode", "ttl", "allocationResult", "createdAt", "updatedAt",
}

func wantQuoteKeys(t testing.TB, q map[string]any, extra ...string) {
	t.Helper()
	wantKeys(t, "quote", q, append(slices.Clone(quoteKeys), extra...)...)
	wantKeys(t, "allocationResult", getObject(t, q, "allocationResult"),
		"totalSourceAmount", "weightedAverageRate", "totalDestinationAmount", "allocations")
	wantTimestamp(t, q, "createdAt")
	wantTimestamp(t, q, "updatedAt")
	if _, ok := q["expiresAt"]; ok {
		wantTimestamp(t, q, "expiresAt")
	}
}

func wantQuoteStatus(t testing.TB, q map[string]any, want string) {
	t.Helper()
	if got := getString(t, q, "status"); got != want {
		t.Fatalf("status: got %q, want %q", got, want)
	}
}

// wantTTL fails unless ttl is an integer in [low, high].
func wantTTL(t testing.TB, q map[string]any, low, high int64) {
	t.Helper()
	ttl := number(t, q, "ttl")
	if !ttl.IsInteger() || ttl.IntPart() < low || ttl.IntPart() > high {
		t.Errorf("ttl: got %s, want an integer in [%d, %d]", ttl, low, high)
	}
}

// wantSpan fails unless to − from (two timestamps of q) is want.
func wantSpan(t testing.TB, q map[string]any, from, to string, want time.Duration) {
	t.Helper()
	if got := wantTimestamp(t, q, to).Sub(wantTimestamp(t, q, from)); got != want {
		t.Errorf("%s − %s: got %s, want %s", to, from, got, want)
	}
}

type poolSpec struct {
	name      string
	pair      engine.Pair
	rate      string
	liquidity string
}

type sliceWant struct {
	pool      string // pool name
	allocated string // destination
	source    string
	rate      string
}

func TestCreateQuoteAllocation(t *testing.T) {
	t.Parallel()
	ngnUSDT, ghsUSDT, ngnGHS := gatewaytest.NGNUSDT, gatewaytest.GHSUSDT, gatewaytest.NGNGHS
	cases := []struct {
		name  string
		pools []poolSpec
		// setup runs after the pools are created.
		setup           func(t *testing.T, s *gatewaytest.Server, pools map[string]*engine.Pool)
		body            map[string]any
		wantSource      string
		wantDestination string
		wantRate        string // weightedAverageRate
		wantChain       string // "" = absent
		wantSlices      []sliceWant
	}{
		{
			name:            "source amount, exact",
			pools:           []poolSpec{{"alpha", ngnUSDT, "0.000625", "1000"}},
			body:            quoteRequest("NGN", "USDT", "1000", "0.000625", "source"),
			wantSource:      "1000",
			wantDestination: "0.625",
			wantRate:        "0.000625",
			wantChain:       "TRON",
			wantSlices:      []sliceWant{{"alpha", "0.625", "1000", "0.000625"}},
		},
		{
			// 1000.01 × 0.000625 = 0.62500625: floor to 6 places.
			name:            "source amount, destination rounded down",
			pools:           []poolSpec{{"alpha", ngnUSDT, "0.000625", "1000"}},
			body:            quoteRequest("NGN", "USDT", "1000.01", "0.000625", "source"),
			wantSource:      "1000.01",
			wantDestination: "0.625006",
			wantRate:        "0.0006249997500025",
			wantChain:       "TRON",
			wantSlices:      []sliceWant{{"alpha", "0.625006", "1000.01", "0.000625"}},
		},
		{
			// 1.000001 ÷ 0.000625 = 1600.0016: ceil to 2 places.
			name:            "destination amount, source rounded up",
			pools:           []poolSpec{{"alpha", ngnUSDT, "0.000625", "1000"}},
			body:            quoteRequest("NGN", "USDT", "1.000001", "0.000625", "destination"),
			wantSource:      "1600.01",
			wantDestination: "1.000001",
			wantRate:        "0.000624996718770508",
			wantChain:       "TRON",
			wantSlices:      []sliceWant{{"alpha", "1.000001", "1600.01", "0.000625"}},
		},
		{
			// 0.000001 ÷ 0.000625 = 0.0016 NGN: the pool is paid one kobo.
			name:            "destination amount of one minor unit",
			pools:           []poolSpec{{"alpha", ngnUSDT, "0.000625", "1000"}},
			body:            quoteRequest("NGN", "USDT", "0.000001", "0.000625", "destination"),
			wantSource:      "0.01",
			wantDestination: "0.000001",
			wantRate:        "0.0001",
			wantChain:       "TRON",
			wantSlices:      []sliceWant{{"alpha", "0.000001", "0.01", "0.000625"}},
		},
		{
			// alpha can take at most 16000 NGN (10 USDT; 16000.01 would need
			// 10.00000625 > 10.000003); the rest goes to beta; gamma is
			// below the proposed rate.
			name: "source amount split by price",
			pools: []poolSpec{
				{"gamma", ngnUSDT, "0.00055", "1000"},
				{"beta", ngnUSDT, "0.0006", "1000"},
				{"alpha", ngnUSDT, "0.000625", "10.000003"},
			},
			body:            quoteRequest("NGN", "USDT", "20000", "0.0006", "source"),
			wantSource:      "20000",
			wantDestination: "12.4",
			wantRate:        "0.00062",
			wantChain:       "TRON",
			wantSlices: []sliceWant{
				{"alpha", "10", "16000", "0.000625"},
				{"beta", "2.4", "4000", "0.0006"},
			},
		},
		{
			// alpha gives all of 10.000003 for ceil(16000.0048) = 16000.01;
			// beta 1.999997 for ceil(3333.328333…) = 3333.33.
			name: "destination amount split by price",
			pools: []poolSpec{
				{"beta", ngnUSDT, "0.0006", "1000"},
				{"alpha", ngnUSDT, "0.000625", "10.000003"},
			},
			body:            quoteRequest("NGN", "USDT", "12", "0.0006", "destination"),
			wantSource:      "19333.34",
			wantDestination: "12",
			wantRate:        "0.000620689441141572",
			wantChain:       "TRON",
			wantSlices: []sliceWant{
				{"alpha", "10.000003", "16000.01", "0.000625"},
				{"beta", "1.999997", "3333.33", "0.0006"},
			},
		},
		{
			// Equal rates: the earlier rate first. first can take 8333.33
			// NGN (4.999998 USDT); second gets the remaining 1666.67.
			name: "equal rates by time the rate was set",
			pools: []poolSpec{
				{"first", ngnUSDT, "0.0006", "5"},
				{"second", ngnUSDT, "0.0006", "1000"},
			},
			body:            quoteRequest("NGN", "USDT", "10000", "0.0006", "source"),
			wantSource:      "10000",
			wantDestination: "6",
			wantRate:        "0.0006",
			wantChain:       "TRON",
			wantSlices: []sliceWant{
				{"first", "4.999998", "8333.33", "0.0006"},
				{"second", "1.000002", "1666.67", "0.0006"},
			},
		},
		{
			name: "a re-set rate loses its time priority",
			pools: []poolSpec{
				{"first", ngnUSDT, "0.0006", "5"},
				{"second", ngnUSDT, "0.0006", "1000"},
			},
			setup: func(t *testing.T, s *gatewaytest.Server, pools map[string]*engine.Pool) {
				r := admin(t, s, http.MethodPut, "/admin/v1/pools/"+pools["first"].ID.String()+"/rate",
					map[string]any{"rate": n("0.0006")})
				wantStatus(t, r, http.StatusOK)
			},
			body:            quoteRequest("NGN", "USDT", "10000", "0.0006", "source"),
			wantSource:      "10000",
			wantDestination: "6",
			wantRate:        "0.0006",
			wantChain:       "TRON",
			wantSlices:      []sliceWant{{"second", "6", "10000", "0.0006"}},
		},
		{
			// 1234.56 × 0.0085 = 10.49376 GHS: floor to 10.49.
			name:            "NGN to GHS has no chain",
			pools:           []poolSpec{{"cedi", ngnGHS, "0.0085", "1000"}},
			body:            quoteRequest("NGN", "GHS", "1234.56", "0.0085", "source"),
			wantSource:      "1234.56",
			wantDestination: "10.49",
			wantRate:        "0.008496954380508035",
			wantSlices:      []sliceWant{{"cedi", "10.49", "1234.56", "0.0085"}},
		},
		{
			name:            "GHS to USDT on a requested chain",
			pools:           []poolSpec{{"accra", ghsUSDT, "0.0625", "1000"}},
			body:            with(quoteRequest("GHS", "USDT", "100", "0.06", "source"), "chain", "ETHEREUM"),
			wantSource:      "100",
			wantDestination: "6.25",
			wantRate:        "0.0625",
			wantChain:       "ETHEREUM",
			wantSlices:      []sliceWant{{"accra", "6.25", "100", "0.0625"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Without bounds: the cases size quotes for the allocation's
			// arithmetic, down to one minor unit.
			s := gatewaytest.Start(t, gatewaytest.Options{Markets: gatewaytest.WideMarkets()})
			partner := s.NewPartner(t, "partner")
			pools := map[string]*engine.Pool{}
			for _, p := range tc.pools {
				pools[p.name] = newPool(t, s, engine.ModeSandbox, p.pair, p.name, p.rate, p.liquidity)
			}
			if tc.setup != nil {
				tc.setup(t, s, pools)
			}
			q := mustCreateQuote(t, s, partner.SandboxKey, tc.body)

			extra := []string{"expiresAt"}
			if tc.wantChain != "" {
				extra = append(extra, "chain")
				if got := getString(t, q, "chain"); got != tc.wantChain {
					t.Errorf("chain: got %q, want %q", got, tc.wantChain)
				}
			}
			wantQuoteKeys(t, q, extra...)
			wantQuoteStatus(t, q, "pending")
			wantUUID(t, q, "quoteId")
			if got, want := getString(t, q, "clientId"), partner.Client.ID.String(); got != want {
				t.Errorf("clientId: got %s, want %s", got, want)
			}
			if got := getString(t, q, "mode"); got != "sandbox" {
				t.Errorf("mode: got %q, want sandbox", got)
			}
			if got, want := getString(t, q, "source"), tc.body["sourceCurrency"]; got != want {
				t.Errorf("source: got %q, want %v", got, want)
			}
			if got, want := getString(t, q, "destination"), tc.body["destinationCurrency"]; got != want {
				t.Errorf("destination: got %q, want %v", got, want)
			}
			wantNumber(t, q, "amount", fmt.Sprint(tc.body["amount"]))
			for _, prefix := range []string{"", "allocationResult."} {
				wantNumber(t, q, prefix+"totalSourceAmount", tc.wantSource)
				wantNumber(t, q, prefix+"totalDestinationAmount", tc.wantDestination)
			}
			wantNumber(t, q, "allocationResult.weightedAverageRate", tc.wantRate)

			allocations := getArray(t, q, "allocationResult.allocations")
			if len(allocations) != len(tc.wantSlices) {
				t.Fatalf("allocations: got %d, want %d: %v", len(allocations), len(tc.wantSlices), allocations)
			}
			pair := tc.body["sourceCurrency"].(string) + "/" + tc.body["destinationCurrency"].(string)
			seen := map[string]bool{}
			for i, want := range tc.wantSlices {
				a := allocations[i].(map[string]any)
				wantKeys(t, "allocation", a, "id", "clientId", "poolId", "poolAccountId", "allocatedAmount",
					"sourceAmount", "rate", "reference", "metadata")
				p := pools[want.pool]
				if got := getString(t, a, "poolId"); got != p.ID.String() {
					t.Errorf("allocation %d poolId: got %s, want %s (%s)", i, got, p.ID, want.pool)
				}
				if got := getString(t, a, "poolAccountId"); got != p.Liquidity.ID.String() {
					t.Errorf("allocation %d poolAccountId: got %s, want %s", i, got, p.Liquidity.ID)
				}
				if got := getString(t, a, "clientId"); got != partner.Client.ID.String() {
					t.Errorf("allocation %d clientId: got %s, want %s", i, got, partner.Client.ID)
				}
				wantNumber(t, a, "allocatedAmount", want.allocated)
				wantNumber(t, a, "sourceAmount", want.source)
				wantNumber(t, a, "rate", want.rate)
				id := wantUUID(t, a, "id")
				ref := getString(t, a, "reference")
				if !allocationReferencePattern.MatchString(ref) {
					t.Errorf("allocation %d reference: got %q, want ALC-<base32>", i, ref)
				}
				if seen[id] || seen[ref] {
					t.Errorf("allocation %d: id %s or reference %s repeats", i, id, ref)
				}
				seen[id], seen[ref] = true, true
				meta := getObject(t, a, "metadata")
				if got := meta["poolName"]; got != want.pool {
					t.Errorf("allocation %d metadata.poolName: got %v, want %s", i, got, want.pool)
				}
				if got := meta["pair"]; got != pair {
					t.Errorf("allocation %d metadata.pair: got %v, want %s", i, got, pair)
				}
				for k, v := range meta {
					if _, ok := v.(string); !ok {
						t.Errorf("allocation %d metadata.%s: got %T, want a string", i, k, v)
					}
				}
			}
		})
	}
}

func TestQuoteLifecycle(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	alpha := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	key := partner.SandboxKey

	q := mustCreateQuote(t, s, key, quoteRequest("NGN", "USDT", "1000", "0.000625", "source"))
	id := getString(t, q, "quoteId")
	wantQuoteKeys(t, q, "chain", "expiresAt")
	wantQuoteStatus(t, q, "pending")
	wantTTL(t, q, 299, 300)
	wantSpan(t, q, "createdAt", "expiresAt", 300*time.Second)
	if q["createdAt"] != q["updatedAt"] {
		t.Errorf("a new quote: createdAt %v, updatedAt %v, want equal", q["createdAt"], q["updatedAt"])
	}

	got := wantOK(t, getQuote(t, s, key, id))
	wantQuoteStatus(t, got, "pending")
	wantQuoteKeys(t, got, "chain", "expiresAt")
	for _, k := range []string{"quoteId", "createdAt", "expiresAt", "chain"} {
		if got[k] != q[k] {
			t.Errorf("GET %s: got %v, want %v", k, got[k], q[k])
		}
	}
	p := syncPool(t, s, alpha.ID.String())
	wantNumber(t, p, "balance", "1000")
	wantNumber(t, p, "available", "999.375")

	accepted := mustAccept(t, s, key, q)
	wantQuoteStatus(t, accepted, "awaiting_payment")
	wantQuoteKeys(t, accepted, "chain", "expiresAt", "metadata", "settlement")
	wantTTL(t, accepted, 1799, 1800)
	wantSpan(t, accepted, "updatedAt", "expiresAt", 30*time.Minute)
	meta := getObject(t, accepted, "metadata")
	wantKeys(t, "metadata", meta, "bankPayIn")
	bank := getObject(t, meta, "bankPayIn")
	wantKeys(t, "bankPayIn", bank, "accountName", "accountNumber", "bankName", "reference")
	// A sandbox quote never shows the real collection account.
	for k, want := range map[string]string{
		"accountName":   engine.SandboxCollectionDefault.AccountName,
		"accountNumber": engine.SandboxCollectionDefault.AccountNumber,
		"bankName":      engine.SandboxCollectionDefault.BankName,
	} {
		if got := getString(t, bank, k); got != want {
			t.Errorf("bankPayIn.%s: got %q, want %q", k, got, want)
		}
	}
	payIn := getString(t, bank, "reference")
	if !payInReferencePattern.MatchString(payIn) {
		t.Errorf("bankPayIn.reference: got %q, want OJA-<base32>", payIn)
	}
	got = wantOK(t, getQuote(t, s, key, id))
	wantQuoteStatus(t, got, "awaiting_payment")
	if ref := getString(t, got, "metadata.bankPayIn.reference"); ref != payIn {
		t.Errorf("GET bankPayIn.reference: got %q, want %q", ref, payIn)
	}

	completed := wantOK(t, transition(t, s, key, id, "complete", nil))
	wantQuoteStatus(t, completed, "completed")
	wantQuoteKeys(t, completed, "chain", "metadata", "settlement")
	wantTTL(t, completed, 0, 0)
	got = wantOK(t, getQuote(t, s, key, id))
	wantQuoteStatus(t, got, "completed")
	wantQuoteKeys(t, got, "chain", "metadata", "settlement")

	p = syncPool(t, s, alpha.ID.String())
	wantNumber(t, p, "balance", "999.375")
	wantNumber(t, p, "available", "999.375")
	wantNumber(t, p, "tradesCount", "1")
	wantNumber(t, p, "completionRate", "100")
	syncTreasury(t, s, "sandbox")
	balances := array(t, do(t, http.MethodGet, s.URL+balancesPath+"/currency/USDT", key, nil))
	if len(balances) != 1 {
		t.Fatalf("USDT balances: got %d, want 1", len(balances))
	}
	wantNumber(t, balances[0], "balance", "0.625")
	wantNumber(t, balances[0], "availableBalance", "0.625")
	check := syncTreasury(t, s, "sandbox")
	if check["ok"] != true {
		t.Errorf("ledger check after a completed quote: %v", check)
	}
}

// TestQuoteTransitions drives every operation from every reachable status.
func TestQuoteTransitions(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "100000")
	key := partner.SandboxKey

	// reach returns a fresh quote in one of the statuses below.
	reach := func(t *testing.T, path ...string) map[string]any {
		q := mustCreateQuote(t, s, key, quoteRequest("NGN", "USDT", "1000", "0.000625", "source"))
		id := getString(t, q, "quoteId")
		for _, op := range path {
			var body any
			if op == "accept" {
				body = acceptBody(firstPoolAccount(t, q))
			}
			r := transition(t, s, key, id, op, body)
			wantStatus(t, r, http.StatusOK)
			q = object(t, r)
		}
		return q
	}
	pending := []string{}
	awaiting := []string{"accept"}
	completed := []string{"accept", "complete"}
	cancelled := []string{"cancel"}
	cancelledAwaiting := []string{"accept", "cancel"}
	cases := []struct {
		name        string
		from        []string
		op          string
		otherAcct   bool // accept with an accountId that is not the quote's
		wantStatus  int
		wantQuote   string   // status after; for 409 the details.status
		allowedFrom []string // 409 details.allowedFrom
		unchanged   bool     // safe repeat: the quote must not change
	}{
		{name: "pending accept", from: pending, op: "accept", wantStatus: 200, wantQuote: "awaiting_payment"},
		{name: "pending cancel", from: pending, op: "cancel", wantStatus: 200, wantQuote: "cancelled"},
		{name: "pending complete", from: pending, op: "complete", wantStatus: 409, wantQuote: "pending",
			allowedFrom: []string{"awaiting_payment"}},
		{name: "awaiting_payment accept again", from: awaiting, op: "accept", wantStatus: 200,
			wantQuote: "awaiting_payment", unchanged: true},
		{name: "awaiting_payment accept with another account", from: awaiting, op: "accept", otherAcct: true,
			wantStatus: 409, wantQuote: "awaiting_payment", allowedFrom: []string{"pending"}},
		{name: "awaiting_payment cancel", from: awaiting, op: "cancel", wantStatus: 200, wantQuote: "cancelled"},
		{name: "awaiting_payment complete", from: awaiting, op: "complete", wantStatus: 200, wantQuote: "completed"},
		{name: "completed accept", from: completed, op: "accept", wantStatus: 409, wantQuote: "completed",
			allowedFrom: []string{"pending"}},
		{name: "completed cancel", from: completed, op: "cancel", wantStatus: 409, wantQuote: "completed",
			allowedFrom: []string{"pending", "awaiting_payment"}},
		{name: "completed complete again", from: completed, op: "complete", wantStatus: 200,
			wantQuote: "completed", unchanged: true},
		{name: "cancelled accept", from: cancelled, op: "accept", wantStatus: 409, wantQuote: "cancelled",
			allowedFrom: []string{"pending"}},
		{name: "cancelled cancel again", from: cancelled, op: "cancel", wantStatus: 200,
			wantQuote: "cancelled", unchanged: true},
		{name: "cancelled complete", from: cancelled, op: "complete", wantStatus: 409, wantQuote: "cancelled",
			allowedFrom: []string{"awaiting_payment"}},
		{name: "cancelled after accept: accept", from: cancelledAwaiting, op: "accept", wantStatus: 409,
			wantQuote: "cancelled", allowedFrom: []string{"pending"}},
		{name: "cancelled after accept: complete", from: cancelledAwaiting, op: "complete", wantStatus: 409,
			wantQuote: "cancelled", allowedFrom: []string{"awaiting_payment"}},
		{name: "cancelled after accept: cancel again", from: cancelledAwaiting, op: "cancel", wantStatus: 200,
			wantQuote: "cancelled", unchanged: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := reach(t, tc.from...)
			id := getString(t, before, "quoteId")
			var body any
			if tc.op == "accept" {
				account := firstPoolAccount(t, before)
				if tc.otherAcct {
					account = randomUUID
				}
				body = acceptBody(account)
			}
			r := transition(t, s, key, id, tc.op, body)
			if tc.wantStatus == http.StatusConflict {
				details := wantError(t, r, http.StatusConflict, "INVALID_STATE")
				wantDetailsNames(t, details, "status", "allowedFrom")
				if got := details["status"]; got != tc.wantQuote {
					t.Errorf("details.status: got %v, want %s", got, tc.wantQuote)
				}
				var allowed []string
				for _, v := range getArray(t, details, "allowedFrom") {
					allowed = append(allowed, v.(string))
				}
				if !slices.Equal(allowed, tc.allowedFrom) {
					t.Errorf("details.allowedFrom: got %q, want %q", allowed, tc.allowedFrom)
				}
				after := wantOK(t, getQuote(t, s, key, id))
				if after["status"] != before["status"] || after["updatedAt"] != before["updatedAt"] {
					t.Errorf("a refused %s changed the quote: %v/%v → %v/%v", tc.op,
						before["status"], before["updatedAt"], after["status"], after["updatedAt"])
				}
				return
			}
			wantStatus(t, r, tc.wantStatus)
			got := object(t, r)
			wantQuoteStatus(t, got, tc.wantQuote)
			if tc.unchanged {
				for _, k := range []string{"status", "updatedAt", "expiresAt", "metadata", "totalSourceAmount"} {
					if !equalJSON(got[k], before[k]) {
						t.Errorf("safe repeat changed %s: %v → %v", k, before[k], got[k])
					}
				}
			}
			if tc.wantQuote == "cancelled" || tc.wantQuote == "completed" {
				wantTTL(t, got, 0, 0)
				if _, ok := got["expiresAt"]; ok {
					t.Errorf("expiresAt present on a %s quote", tc.wantQuote)
				}
			}
		})
	}
}

// equalJSON compares two decoded JSON values.
func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if !equalJSON(v, bm[k]) {
				return false
			}
		}
		return true
	case []any:
		ba, ok := b.([]any)
		if !ok || len(a) != len(ba) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], ba[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

func TestAcceptAccount(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	other := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "other", "0.0005", "1000")
	key := partner.SandboxKey

	cases := []struct {
		name       string
		body       func(q map[string]any) any
		wantStatus int
		wantCode   string
		wantFields []string
	}{
		{"unknown account", func(map[string]any) any { return acceptBody(randomUUID) },
			422, "INVALID_ACCOUNT", nil},
		{"another pool's account", func(map[string]any) any { return acceptBody(other.Liquidity.ID.String()) },
			422, "INVALID_ACCOUNT", nil},
		{"the pool's proceeds account", func(map[string]any) any { return acceptBody(other.Proceeds.ID.String()) },
			422, "INVALID_ACCOUNT", nil},
		{"the partner's own wallet", func(map[string]any) any {
			return acceptBody(wallet(t, partner, engine.ModeSandbox, engine.CurrencyUSDT))
		}, 422, "INVALID_ACCOUNT", nil},
		{"the nil uuid", func(map[string]any) any { return acceptBody("00000000-0000-0000-0000-000000000000") },
			422, "INVALID_ACCOUNT", nil},
		{"accountId missing", func(map[string]any) any { return map[string]any{} },
			400, "VALIDATION_ERROR", []string{"accountId"}},
		{"accountId null", func(map[string]any) any { return `{"accountId":null}` },
			400, "VALIDATION_ERROR", []string{"accountId"}},
		{"accountId not a uuid", func(map[string]any) any { return acceptBody("pool-1") },
			400, "VALIDATION_ERROR", []string{"accountId"}},
		{"accountId a number", func(map[string]any) any { return map[string]any{"accountId": n("7")} },
			400, "VALIDATION_ERROR", []string{"accountId"}},
		{"unknown member", func(q map[string]any) any { return with(acceptBody(firstPoolAccount(t, q)), "bank", "x") },
			400, "VALIDATION_ERROR", []string{"bank"}},
		{"empty body", func(map[string]any) any { return "" }, 400, "VALIDATION_ERROR", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := mustCreateQuote(t, s, key, quoteRequest("NGN", "USDT", "1000", "0.000625", "source"))
			id := getString(t, q, "quoteId")
			r := transition(t, s, key, id, "accept", tc.body(q))
			details := wantError(t, r, tc.wantStatus, tc.wantCode)
			if tc.wantFields != nil {
				wantDetailsNames(t, details, tc.wantFields...)
			}
			wantQuoteStatus(t, wantOK(t, getQuote(t, s, key, id)), "pending")
			// After the refusal the quote still accepts its own pool account.
			wantQuoteStatus(t, mustAccept(t, s, key, q), "awaiting_payment")
		})
	}
}

// TestAcceptAnyAllocation: a split quote is accepted whole through the
// pool account of any of its allocations.
func TestAcceptAnyAllocation(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	alpha := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1")
	beta := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "beta", "0.0006", "1000")
	key := partner.SandboxKey
	q := mustCreateQuote(t, s, key, quoteRequest("NGN", "USDT", "2", "0.0006", "destination"))
	allocations := getArray(t, q, "allocationResult.allocations")
	if len(allocations) != 2 {
		t.Fatalf("allocations: got %d, want 2", len(allocations))
	}
	second := getString(t, allocations[1], "poolAccountId")
	if second != beta.Liquidity.ID.String() {
		t.Fatalf("second allocation: got account %s, want beta's %s", second, beta.Liquidity.ID)
	}
	r := transition(t, s, key, getString(t, q, "quoteId"), "accept", acceptBody(second))
	wantQuoteStatus(t, wantOK(t, r), "awaiting_payment")
	wantOK(t, transition(t, s, key, getString(t, q, "quoteId"), "complete", nil))
	// Both pools settled their slices.
	wantNumber(t, syncPool(t, s, alpha.ID.String()), "balance", "0")
	wantNumber(t, syncPool(t, s, beta.ID.String()), "balance", "999")
}

// fakeClock is a clock the test moves forward.
type fakeClock struct {
	base   time.Time
	offset atomic.Int64
}

func (c *fakeClock) Now() time.Time          { return c.base.Add(time.Duration(c.offset.Load())) }
func (c *fakeClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// TestTransitionAfterDeadline: a command that arrives after the deadline
// (before the expiry timer ran) finds the quote expired, and says so.
func TestTransitionAfterDeadline(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{base: time.Now()}
	s := gatewaytest.Start(t, gatewaytest.Options{Clock: clock.Now})
	partner := s.NewPartner(t, "partner")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	key := partner.SandboxKey
	for _, op := range []string{"accept", "cancel"} {
		t.Run(op, func(t *testing.T) {
			q := mustCreateQuote(t, s, key, quoteRequest("NGN", "USDT", "1000", "0.000625", "source"))
			clock.Advance(301 * time.Second)
			var body any
			if op == "accept" {
				body = acceptBody(firstPoolAccount(t, q))
			}
			r := transition(t, s, key, getString(t, q, "quoteId"), op, body)
			details := wantError(t, r, http.StatusConflict, "INVALID_STATE")
			if got := details["status"]; got != "expired" {
				t.Errorf("details.status after the deadline: got %v, want expired", got)
			}
			poll.True(t, 2*time.Second, "quote expired", func() bool {
				return wantOK(t, getQuote(t, s, key, getString(t, q, "quoteId")))["status"] == "expired"
			})
		})
	}
}

func TestQuoteNotFound(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	owner := s.NewPartner(t, "owner")
	stranger := s.NewPartner(t, "stranger")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	q := mustCreateQuote(t, s, owner.SandboxKey, quoteRequest("NGN", "USDT", "1000", "0.000625", "source"))
	id := getString(t, q, "quoteId")
	account := firstPoolAccount(t, q)

	cases := []struct {
		name     string
		key      string
		id       string
		status   int
		code     string
		wantName string // details member for 400
	}{
		{"another client's quote", stranger.SandboxKey, id, 404, "QUOTE_NOT_FOUND", ""},
		{"own quote with the live key", owner.LiveKey, id, 404, "QUOTE_NOT_FOUND", ""},
		{"unknown quote", owner.SandboxKey, randomUUID, 404, "QUOTE_NOT_FOUND", ""},
		{"malformed id", owner.SandboxKey, "not-a-uuid", 400, "VALIDATION_ERROR", "id"},
		{"uuid with braces", owner.SandboxKey, "{" + id + "}", 400, "VALIDATION_ERROR", "id"},
		{"uuid without dashes", owner.SandboxKey, strings.ReplaceAll(id, "-", ""), 400, "VALIDATION_ERROR", "id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, op := range []struct {
				method, suffix string
				body           any
			}{
				{http.MethodGet, "", nil},
				{http.MethodPut, "/accept", acceptBody(account)},
				{http.MethodPut, "/cancel", nil},
				{http.MethodPut, "/complete", nil},
			} {
				r := do(t, op.method, s.URL+quotePath+tc.id+op.suffix, tc.key, op.body)
				details := wantError(t, r, tc.status, tc.code)
				if tc.wantName != "" {
					wantDetailsNames(t, details, tc.wantName)
				}
			}
		})
	}
	// None of the refused calls touched the owner's quote.
	got := wantOK(t, getQuote(t, s, owner.SandboxKey, id))
	wantQuoteStatus(t, got, "pending")
}

func TestCreateQuoteValidation(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	base := quoteRequest("NGN", "USDT", "1000", "0.000625", "source")
	toUSDT := quoteRequest("NGN", "USDT", "1", "0.000625", "destination")
	toGHS := quoteRequest("NGN", "GHS", "1000", "0.0085", "source")
	cases := []struct {
		name string
		body any
		want []string // details members
	}{
		{"missing sourceCurrency", with(base, "sourceCurrency", nil), []string{"sourceCurrency"}},
		{"missing destinationCurrency", with(base, "destinationCurrency", nil), []string{"destinationCurrency"}},
		{"missing amount", with(base, "amount", nil), []string{"amount"}},
		{"missing rate", with(base, "rate", nil), []string{"rate"}},
		{"missing amountDirection", with(base, "amountDirection", nil), []string{"amountDirection"}},
		{"null amount", `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":null,"rate":0.000625,"amountDirection":"source"}`,
			[]string{"amount"}},
		{"amount as a string", with(base, "amount", "1000"), []string{"amount"}},
		{"rate as a string", with(base, "rate", "0.000625"), []string{"rate"}},
		{"sourceCurrency as a number", with(base, "sourceCurrency", n("566")), []string{"sourceCurrency"}},
		{"amountDirection as a bool", with(base, "amountDirection", true), []string{"amountDirection"}},
		{"unknown member", with(base, "fee", n("1")), []string{"fee"}},
		{"zero amount", with(base, "amount", n("0")), []string{"amount"}},
		{"negative amount", with(base, "amount", n("-1000")), []string{"amount"}},
		{"NGN amount with 3 decimals", with(base, "amount", n("1000.001")), []string{"amount"}},
		{"USDT amount with 7 decimals", with(toUSDT, "amount", n("1.0000001")), []string{"amount"}},
		{"GHS amount with 3 decimals", with(toGHS, "amount", n("10.005"), "amountDirection", "destination"),
			[]string{"amount"}},
		{"zero rate", with(base, "rate", n("0")), []string{"rate"}},
		{"negative rate", with(base, "rate", n("-0.000625")), []string{"rate"}},
		{"rate with 19 decimals", with(base, "rate", n("0.0006250000000000001")), []string{"rate"}},
		{"bad amountDirection", with(base, "amountDirection", "sideways"), []string{"amountDirection"}},
		{"amountDirection in upper case", with(base, "amountDirection", "SOURCE"), []string{"amountDirection"}},
		{"unknown chain", with(base, "chain", "BITCOIN"), []string{"chain"}},
		{"chain in lower case", with(base, "chain", "tron"), []string{"chain"}},
		{"chain as a number", with(base, "chain", n("1")), []string{"chain"}},
		{"chain on NGN to GHS", with(toGHS, "chain", "TRON"), []string{"chain"}},
		{"listingId not a uuid", with(base, "listingId", "alpha"), []string{"listingId"}},
		{"chatMetadata not an object", with(base, "chatMetadata", "chat"), []string{"chatMetadata"}},
		{"chatMetadata unknown member", with(base, "chatMetadata", map[string]any{"mood": "good"}),
			[]string{"chatMetadata.mood"}},
		{"chatMetadata mistyped member", with(base, "chatMetadata", map[string]any{"conversationId": n("5")}),
			[]string{"chatMetadata.conversationId"}},
		{"chatMetadata time not a date-time", with(base, "chatMetadata", map[string]any{"quoteSentAt": "yesterday"}),
			[]string{"chatMetadata.quoteSentAt"}},
		{"chatMetadata time without a zone", with(base, "chatMetadata", map[string]any{"negotiationStartedAt": "2026-11-21T10:00:00"}),
			[]string{"chatMetadata.negotiationStartedAt"}},
		{"chatMetadata time finer than a millisecond", with(base, "chatMetadata",
			map[string]any{"quoteSentAt": "2026-11-21T10:00:00.0001Z"}), []string{"chatMetadata.quoteSentAt"}},
		{"several problems at once", with(base, "amount", nil, "rate", "x", "extra", true),
			[]string{"amount", "rate", "extra"}},
		{"non-positive amount and missing destination", with(base, "destinationCurrency", nil, "amount", n("-5")),
			[]string{"destinationCurrency", "amount"}},
		{"non-positive amount and bad direction", with(base, "amountDirection", "up", "amount", n("-1")),
			[]string{"amountDirection", "amount"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodPost, s.URL+intentPath, partner.SandboxKey, tc.body)
			details := wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
			wantDetailsNames(t, details, tc.want...)
		})
	}
	// A valid request on the same server succeeds: the refusals above are
	// about their bodies, not the book.
	mustCreateQuote(t, s, partner.SandboxKey, base)
}

func TestCreateQuoteCurrency(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	cases := []struct {
		name        string
		source      string
		destination string
		code        string
	}{
		{"token source", "USDT", "NGN", "INVALID_CURRENCY"},
		{"token to token", "USDT", "USDT", "INVALID_CURRENCY"},
		{"unknown source", "XYZ", "USDT", "INVALID_CURRENCY"},
		{"lower-case source", "ngn", "USDT", "INVALID_CURRENCY"},
		{"GHS to NGN", "GHS", "NGN", "INVALID_CURRENCY_PAIR"},
		{"NGN to NGN", "NGN", "NGN", "INVALID_CURRENCY_PAIR"},
		{"GHS to GHS", "GHS", "GHS", "INVALID_CURRENCY_PAIR"},
		{"unknown destination", "NGN", "EUR", "INVALID_CURRENCY_PAIR"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodPost, s.URL+intentPath, partner.SandboxKey,
				quoteRequest(tc.source, tc.destination, "100", "0.5", "source"))
			wantError(t, r, http.StatusBadRequest, tc.code)
			msg := getString(t, object(t, r), "message")
			if tc.code == "INVALID_CURRENCY" && (!strings.Contains(msg, "NGN") || !strings.Contains(msg, "GHS")) {
				t.Errorf("message: got %q, want it to name NGN and GHS", msg)
			}
		})
	}
}

func TestInsufficientLiquidity(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	alpha := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "10")
	beta := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "beta", "0.0006", "5")
	cases := []struct {
		name         string
		body         map[string]any
		wantFillable string
		wantBestRate string // "" = null
	}{
		{
			// alpha: 16000 NGN for 10 USDT; beta: floor(5 ÷ 0.0006) = 8333.33.
			name:         "source amount over both pools",
			body:         quoteRequest("NGN", "USDT", "30000", "0.0006", "source"),
			wantFillable: "24333.33",
			wantBestRate: "0.000625",
		},
		{
			name:         "destination amount over both pools",
			body:         quoteRequest("NGN", "USDT", "20", "0.0006", "destination"),
			wantFillable: "15",
			wantBestRate: "0.000625",
		},
		{
			name:         "proposed rate excludes beta",
			body:         quoteRequest("NGN", "USDT", "20000", "0.000625", "source"),
			wantFillable: "16000",
			wantBestRate: "0.000625",
		},
		{
			name:         "proposed rate above every pool",
			body:         quoteRequest("NGN", "USDT", "1000", "0.0007", "source"),
			wantFillable: "0",
			wantBestRate: "0.000625",
		},
		{
			name:         "no pool for the pair",
			body:         quoteRequest("GHS", "USDT", "100", "0.06", "source"),
			wantFillable: "0",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodPost, s.URL+intentPath, partner.SandboxKey, tc.body)
			details := wantError(t, r, http.StatusUnprocessableEntity, "INSUFFICIENT_LIQUIDITY")
			wantDetailsNames(t, details, "requested", "fillable", "bestRate")
			wantNumber(t, details, "requested", fmt.Sprint(tc.body["amount"]))
			wantNumber(t, details, "fillable", tc.wantFillable)
			if tc.wantBestRate == "" {
				if v, ok := details["bestRate"]; !ok || v != nil {
					t.Errorf("bestRate: got %v, want null", v)
				}
			} else {
				wantNumber(t, details, "bestRate", tc.wantBestRate)
			}
		})
	}
	// Nothing was reserved by the refused quotes.
	for _, p := range []struct {
		pool *engine.Pool
		want string
	}{{alpha, "10"}, {beta, "5"}} {
		got := syncPool(t, s, p.pool.ID.String())
		wantNumber(t, got, "available", p.want)
		wantNumber(t, got, "balance", p.want)
	}
	// And the whole book is still there for a quote that fits exactly.
	q := mustCreateQuote(t, s, partner.SandboxKey, quoteRequest("NGN", "USDT", "15", "0.0006", "destination"))
	wantNumber(t, q, "totalDestinationAmount", "15")
	if got := len(getArray(t, q, "allocationResult.allocations")); got != 2 {
		t.Errorf("allocations: got %d, want 2", got)
	}
}

func TestAmountTooSmall(t *testing.T) {
	t.Parallel()
	// Without bounds: the default ones refuse these amounts first.
	s := gatewaytest.Start(t, gatewaytest.Options{Markets: gatewaytest.WideMarkets()})
	partner := s.NewPartner(t, "partner")
	cedi := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNGHS, "cedi", "0.0085", "1000")
	cases := []struct {
		name   string
		amount string
		want   int // status
	}{
		{"0.01 NGN buys 0.000085 GHS", "0.01", 422},
		{"1.17 NGN buys 0.009945 GHS", "1.17", 422},
		{"1.18 NGN buys 0.01003 GHS", "1.18", 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodPost, s.URL+intentPath, partner.SandboxKey,
				quoteRequest("NGN", "GHS", tc.amount, "0.0085", "source"))
			if tc.want == 200 {
				wantNumber(t, wantOK(t, r), "totalDestinationAmount", "0.01")
				return
			}
			wantError(t, r, tc.want, "AMOUNT_TOO_SMALL")
		})
	}
	wantNumber(t, syncPool(t, s, cedi.ID.String()), "available", "999.99")
}

func TestListingID(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	beta := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "beta", "0.0006", "5")
	cedi := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNGHS, "cedi", "0.0085", "1000")
	live := newPool(t, s, engine.ModeLive, gatewaytest.NGNUSDT, "live", "0.0006", "1000")
	key := partner.SandboxKey

	t.Run("restricts allocation to the listing", func(t *testing.T) {
		body := with(quoteRequest("NGN", "USDT", "1000", "0.0006", "source"), "listingId", beta.ID.String())
		q := mustCreateQuote(t, s, key, body)
		allocations := getArray(t, q, "allocationResult.allocations")
		if len(allocations) != 1 || getString(t, allocations[0], "poolId") != beta.ID.String() {
			t.Fatalf("allocations: got %v, want one from beta", allocations)
		}
		wantNumber(t, q, "totalDestinationAmount", "0.6")
	})
	t.Run("the listing alone must fill the quote", func(t *testing.T) {
		body := with(quoteRequest("NGN", "USDT", "10000", "0.0006", "source"), "listingId", beta.ID.String())
		r := do(t, http.MethodPost, s.URL+intentPath, key, body)
		details := wantError(t, r, http.StatusUnprocessableEntity, "INSUFFICIENT_LIQUIDITY")
		wantNumber(t, details, "fillable", "7333.33") // (5 − 0.6) ÷ 0.0006, floored
		wantNumber(t, details, "bestRate", "0.0006")
	})
	for _, tc := range []struct {
		name    string
		listing string
	}{
		{"unknown listing", randomUUID},
		{"listing of another pair", cedi.ID.String()},
		{"listing of the other mode", live.ID.String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := with(quoteRequest("NGN", "USDT", "1000", "0.0006", "source"), "listingId", tc.listing)
			details := wantError(t, do(t, http.MethodPost, s.URL+intentPath, key, body),
				http.StatusBadRequest, "VALIDATION_ERROR")
			wantDetailsNames(t, details, "listingId")
		})
	}
}

func TestChatMetadata(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	beta := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "beta", "0.0006", "1000")
	key := partner.SandboxKey
	chat := map[string]any{
		"conversationId":       "conv-81",
		"chatQuoteId":          "cq-7",
		"listingId":            beta.ID.String(),
		"negotiationStartedAt": "2026-11-21T09:58:00.000Z",
		"quoteSentAt":          "2026-11-21T09:59:30.000Z",
	}
	body := with(quoteRequest("NGN", "USDT", "1000", "0.0006", "source"), "listingId", beta.ID.String(),
		"chatMetadata", chat)
	q := mustCreateQuote(t, s, key, body)
	wantQuoteKeys(t, q, "chain", "expiresAt", "chatMetadata")
	got := getObject(t, q, "chatMetadata")
	wantKeys(t, "chatMetadata", got, "conversationId", "chatQuoteId", "listingId", "negotiationStartedAt",
		"quoteSentAt", "initialListingRate")
	for k, want := range chat {
		if got[k] != want {
			t.Errorf("chatMetadata.%s: got %v, want %v", k, got[k], want)
		}
	}
	// initialListingRate is a string in the interface; accept a number too.
	switch v := got["initialListingRate"].(type) {
	case string:
		wantNumber(t, map[string]any{"r": n(v)}, "r", "0.0006")
	default:
		wantNumber(t, got, "initialListingRate", "0.0006")
	}

	accepted := mustAccept(t, s, key, q)
	chatAfter := getObject(t, accepted, "chatMetadata")
	wantTimestamp(t, chatAfter, "acceptedAt")
	if chatAfter["acceptedAt"] != accepted["updatedAt"] {
		t.Errorf("acceptedAt %v, want the accept's updatedAt %v", chatAfter["acceptedAt"], accepted["updatedAt"])
	}
	if chatAfter["conversationId"] != "conv-81" {
		t.Errorf("chatMetadata lost on accept: %v", chatAfter)
	}

	// A quote without chat metadata has no chatMetadata member.
	plain := mustCreateQuote(t, s, key, quoteRequest("NGN", "USDT", "1000", "0.0006", "source"))
	if _, ok := plain["chatMetadata"]; ok {
		t.Errorf("chatMetadata present on a quote created without it")
	}
}

// Chat timestamps are kept in the spec's form (spec §1: UTC, milliseconds)
// whatever offset and precision the partner wrote, and the same instant
// written two ways is the same request for Idempotency-Key.
func TestChatMetadataTimestampsNormalised(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	key := partner.SandboxKey
	body := func(started, sent string) map[string]any {
		return with(quoteRequest("NGN", "USDT", "1000", "0.000625", "source"), "chatMetadata",
			map[string]any{"negotiationStartedAt": started, "quoteSentAt": sent})
	}
	q := mustCreateQuote(t, s, key, body("2026-11-21T11:58:00+01:00", "2026-11-21T09:59:30.5-00:30"),
		"Idempotency-Key", "chat-times")
	for _, view := range []map[string]any{q, wantOK(t, getQuote(t, s, key, getString(t, q, "quoteId")))} {
		chat := getObject(t, view, "chatMetadata")
		if got := chat["negotiationStartedAt"]; got != "2026-11-21T10:58:00.000Z" {
			t.Errorf("negotiationStartedAt: got %v, want 2026-11-21T10:58:00.000Z", got)
		}
		if got := chat["quoteSentAt"]; got != "2026-11-21T10:29:30.500Z" {
			t.Errorf("quoteSentAt: got %v, want 2026-11-21T10:29:30.500Z", got)
		}
	}
	r := do(t, http.MethodPost, s.URL+intentPath, key, body("2026-11-21T10:58:00.000Z", "2026-11-21T10:29:30.500Z"),
		"Idempotency-Key", "chat-times")
	if r.status != http.StatusOK || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the same instants in UTC with the same key: got %s, want the original replayed", r)
	}
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	partner := s.NewPartner(t, "partner")
	stranger := s.NewPartner(t, "stranger")
	alpha := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	key := partner.SandboxKey
	body := quoteRequest("NGN", "USDT", "1000", "0.000625", "source")

	first := do(t, http.MethodPost, s.URL+intentPath, key, body, "Idempotency-Key", "order-42")
	original := wantOK(t, first)
	if got := first.header.Get("Idempotent-Replayed"); got != "" {
		t.Errorf("first create: Idempotent-Replayed %q, want absent", got)
	}
	id := getString(t, original, "quoteId")

	replays := []struct {
		name string
		body any
	}{
		{"same body", body},
		{"same members, other order and spacing",
			"{ \"amountDirection\": \"source\", \"rate\": 0.000625,\n \"amount\": 1000.00, \"destinationCurrency\": \"USDT\", \"sourceCurrency\": \"NGN\" }"},
	}
	for _, tc := range replays {
		t.Run("replay: "+tc.name, func(t *testing.T) {
			r := do(t, http.MethodPost, s.URL+intentPath, key, tc.body, "Idempotency-Key", "order-42")
			got := wantOK(t, r)
			if h := r.header.Get("Idempotent-Replayed"); h != "true" {
				t.Errorf("Idempotent-Replayed: got %q, want true", h)
			}
			for _, k := range []string{"quoteId", "createdAt", "allocationResult", "status"} {
				if !equalJSON(got[k], original[k]) {
					t.Errorf("%s: got %v, want the original %v", k, got[k], original[k])
				}
			}
		})
	}
	p := syncPool(t, s, alpha.ID.String())
	wantNumber(t, p, "available", "999.375") // reserved once

	t.Run("same key, different body", func(t *testing.T) {
		r := do(t, http.MethodPost, s.URL+intentPath, key, with(body, "amount", n("1001")),
			"Idempotency-Key", "order-42")
		wantError(t, r, http.StatusUnprocessableEntity, "IDEMPOTENCY_KEY_REUSED")
	})
	t.Run("same key, another client", func(t *testing.T) {
		r := do(t, http.MethodPost, s.URL+intentPath, stranger.SandboxKey, body, "Idempotency-Key", "order-42")
		got := wantOK(t, r)
		if getString(t, got, "quoteId") == id || r.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("another client's key replayed this client's quote")
		}
	})
	t.Run("key of 255 characters", func(t *testing.T) {
		r := do(t, http.MethodPost, s.URL+intentPath, key, body, "Idempotency-Key", strings.Repeat("k", 255))
		wantOK(t, r)
	})
	t.Run("key of 256 characters", func(t *testing.T) {
		r := do(t, http.MethodPost, s.URL+intentPath, key, body, "Idempotency-Key", strings.Repeat("k", 256))
		details := wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		wantDetailsNames(t, details, "Idempotency-Key")
	})
	t.Run("replay after the quote moved on", func(t *testing.T) {
		wantOK(t, transition(t, s, key, id, "cancel", nil))
		r := do(t, http.MethodPost, s.URL+intentPath, key, body, "Idempotency-Key", "order-42")
		got := wantOK(t, r)
		if getString(t, got, "quoteId") != id || r.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay after cancel: got quote %v (replayed %q), want %s replayed",
				got["quoteId"], r.header.Get("Idempotent-Replayed"), id)
		}
	})
	// Quotes: the original (cancelled), the stranger's and the 255-char one.
	wantNumber(t, syncPool(t, s, alpha.ID.String()), "available", "998.75")
}

func TestQuoteExpiry(t *testing.T) {
	t.Parallel()
	// Two services: one whose quotes expire pending, one whose accepted
	// quotes run out of payment window.
	cases := []struct {
		name   string
		opts   gatewaytest.Options
		accept bool
	}{
		{"quote TTL", gatewaytest.Options{QuoteTTL: time.Second}, false},
		{"payment window", gatewaytest.Options{QuoteTTL: time.Minute, PaymentWindow: time.Second}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := gatewaytest.Start(t, tc.opts)
			partner := s.NewPartner(t, "partner")
			alpha := newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
			key := partner.SandboxKey

			q := mustCreateQuote(t, s, key, quoteRequest("NGN", "USDT", "1000", "0.000625", "source"))
			id := getString(t, q, "quoteId")
			extra := []string{"chain"}
			if tc.accept {
				q = mustAccept(t, s, key, q)
				wantSpan(t, q, "updatedAt", "expiresAt", time.Second)
				extra = append(extra, "metadata", "settlement")
			} else {
				wantSpan(t, q, "createdAt", "expiresAt", time.Second)
			}
			wantTTL(t, q, 0, 1)

			var last map[string]any
			poll.True(t, 3*time.Second, "quote expired", func() bool {
				last = wantOK(t, getQuote(t, s, key, id))
				return last["status"] == "expired"
			})
			wantQuoteKeys(t, last, extra...)
			wantTTL(t, last, 0, 0)
			poll.True(t, 2*time.Second, "holds released", func() bool {
				return number(t, pool(t, s, alpha.ID.String()), "available").Equal(decimal.NewFromInt(1000))
			})
			p := syncPool(t, s, alpha.ID.String())
			wantNumber(t, p, "available", "1000")
			wantNumber(t, p, "balance", "1000")
			wantNumber(t, p, "tradesCount", "0")

			for _, op := range []struct {
				name    string
				allowed []string
			}{
				{"accept", []string{"pending"}},
				{"cancel", []string{"pending", "awaiting_payment"}},
				{"complete", []string{"awaiting_payment"}},
			} {
				var body any
				if op.name == "accept" {
					body = acceptBody(firstPoolAccount(t, q))
				}
				r := transition(t, s, key, id, op.name, body)
				details := wantError(t, r, http.StatusConflict, "INVALID_STATE")
				if details["status"] != "expired" {
					t.Errorf("%s: details.status: got %v, want expired", op.name, details["status"])
				}
				var allowed []string
				for _, v := range getArray(t, details, "allowedFrom") {
					allowed = append(allowed, v.(string))
				}
				if !slices.Equal(allowed, op.allowed) {
					t.Errorf("%s: details.allowedFrom: got %q, want %q", op.name, allowed, op.allowed)
				}
			}
		})
	}
}

// TestTooManyOpenQuotes: the per-key open quote limit answers 429
// RATE_LIMITED, which the spec says carries Retry-After.
func TestTooManyOpenQuotes(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{MaxOpenQuotes: 1})
	partner := s.NewPartner(t, "partner")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "alpha", "0.000625", "1000")
	body := quoteRequest("NGN", "USDT", "1000", "0.000625", "source")
	q := mustCreateQuote(t, s, partner.SandboxKey, body)
	r := do(t, http.MethodPost, s.URL+intentPath, partner.SandboxKey, body)
	wantError(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
	if r.header.Get("Retry-After") == "" {
		t.Errorf("429 RATE_LIMITED without Retry-After")
	}
	wantOK(t, transition(t, s, partner.SandboxKey, getString(t, q, "quoteId"), "cancel", nil))
	mustCreateQuote(t, s, partner.SandboxKey, body)
}
