package clientcheck_test

// Tests of the partner client against a real service (gatewaytest: the
// actors, a Pebble log and both listeners on loopback), plus a few
// httptest servers for what a real service does not do on demand (hang,
// answer HTML).

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/client"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// market is a running service with one partner and funded sandbox pools.
type market struct {
	srv     *gatewaytest.Server
	partner gatewaytest.Partner
	c       *client.Client
	poolA   *engine.Pool // NGN/USDT 0.000625, 1000 USDT
	poolB   *engine.Pool // NGN/USDT 0.00062, 1000 USDT
}

func newMarket(t *testing.T) *market {
	t.Helper()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	m := &market{srv: s, partner: s.NewPartner(t, "client-test")}
	m.poolA = s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Desk A", "0.000625", "1000")
	m.poolB = s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Desk B", "0.00062", "1000")
	s.NewPool(t, engine.ModeSandbox, gatewaytest.GHSUSDT, "Desk C", "0.08", "1000")
	var err error
	m.c, err = client.New(s.URL, m.partner.SandboxKey, client.WithTimeout(10*time.Second), client.WithServiceSource("client-test"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *market) wallet(t *testing.T, currency engine.Currency) string {
	t.Helper()
	for _, w := range m.partner.Client.Wallets {
		if w.Mode == engine.ModeSandbox && w.Currency == currency {
			return w.Account.String()
		}
	}
	t.Fatalf("no sandbox %s wallet", currency)
	return ""
}

func wantEqual(t *testing.T, what string, got, want decimal.Decimal) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s: got %s, want %s", what, got, want)
	}
}

// apiError asserts err is an *APIError with status and code.
func apiError(t *testing.T, err error, status int, code string) *client.APIError {
	t.Helper()
	var e *client.APIError
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want *client.APIError %d %s", err, err, status, code)
	}
	if e.Status != status || e.Code != code || e.Message == "" || e.RequestID == "" {
		t.Fatalf("APIError %+v, want status %d code %s with a message and a request id", e, status, code)
	}
	return e
}

func TestQuoteLifecycle(t *testing.T) {
	t.Parallel()
	m := newMarket(t)
	ctx := context.Background()

	// 1,200,000.55 NGN at 0.00062 or better: both desks qualify, and Desk A
	// (the best rate, 0.000625) fills it alone (750 of its 1000 USDT).
	req := client.CreateQuoteRequest{SourceCurrency: "NGN", DestinationCurrency: "USDT", Amount: d("1200000.55"),
		Rate: d("0.00062"), AmountDirection: client.DirectionSource}
	q, err := m.c.CreateQuote(ctx, req, client.IdempotencyKey("lifecycle-1"))
	if err != nil {
		t.Fatal(err)
	}
	if q.Status != client.StatusPending || q.Replayed || q.Mode != client.ModeSandbox || q.Chain != "TRON" ||
		q.Source != "NGN" || q.Destination != "USDT" || q.ClientID != m.partner.Client.ID.String() {
		t.Fatalf("created quote %+v", q)
	}
	wantEqual(t, "amount", q.Amount, d("1200000.55"))
	wantEqual(t, "totalSourceAmount", q.TotalSourceAmount, d("1200000.55"))
	// 1200000.55 × 0.000625 = 750.00034375, rounded down to 6 places.
	wantEqual(t, "totalDestinationAmount", q.TotalDestinationAmount, d("750.000343"))
	if len(q.AllocationResult.Allocations) != 1 {
		t.Fatalf("allocations %+v, want one slice from Desk A", q.AllocationResult.Allocations)
	}
	a := q.AllocationResult.Allocations[0]
	if a.PoolID != m.poolA.ID.String() || a.PoolAccountID != m.poolA.Liquidity.ID.String() || a.Metadata["poolName"] != "Desk A" ||
		a.Metadata["pair"] != "NGN/USDT" || a.Reference == "" || a.ID == "" {
		t.Errorf("allocation %+v", a)
	}
	wantEqual(t, "allocation rate", a.Rate, d("0.000625"))
	wantEqual(t, "weightedAverageRate", q.AllocationResult.WeightedAverageRate,
		d("750.000343").Div(d("1200000.55")).RoundBank(18))
	if q.TTL <= 0 || q.TTL > 300 || q.ExpiresAt == nil || q.Metadata != nil || q.CreatedAt.IsZero() {
		t.Errorf("pending quote: ttl %d expiresAt %v metadata %+v createdAt %v", q.TTL, q.ExpiresAt, q.Metadata, q.CreatedAt)
	}

	got, err := m.c.GetQuote(ctx, q.QuoteID)
	if err != nil || got.QuoteID != q.QuoteID || got.Status != client.StatusPending || !got.TotalDestinationAmount.Equal(q.TotalDestinationAmount) {
		t.Fatalf("GetQuote: %+v %v", got, err)
	}

	accepted, err := m.c.AcceptQuote(ctx, q.QuoteID, a.PoolAccountID)
	if err != nil {
		t.Fatal(err)
	}
	if accepted.Status != client.StatusAwaitingPayment || accepted.Metadata == nil || accepted.Metadata.BankPayIn == nil ||
		accepted.Metadata.BankPayIn.Reference == "" || accepted.Metadata.BankPayIn.AccountNumber == "" {
		t.Fatalf("accepted quote %+v", accepted)
	}
	if st := accepted.Settlement; st == nil || st.Type != "wallet" || st.AccountID == "" {
		t.Fatalf("accepted quote's settlement %+v", st)
	}
	// Repeating it is safe.
	if again, err := m.c.AcceptQuote(ctx, q.QuoteID, a.PoolAccountID); err != nil || again.Status != client.StatusAwaitingPayment {
		t.Errorf("accept again: %+v %v", again, err)
	}

	done, err := m.c.CompleteQuote(ctx, q.QuoteID)
	if err != nil || done.Status != client.StatusCompleted || done.TTL != 0 || done.ExpiresAt != nil || !done.Status.Terminal() {
		t.Fatalf("CompleteQuote: %+v %v", done, err)
	}

	// The USDT landed in the partner's wallet, exactly.
	usdt := m.wallet(t, engine.CurrencyUSDT)
	b, err := m.c.Balance(ctx, usdt)
	if err != nil || b.AccountID != usdt || b.Currency != "USDT" {
		t.Fatalf("Balance: %+v %v", b, err)
	}
	wantEqual(t, "USDT balance", b.Balance, d("750.000343"))
	wantEqual(t, "USDT available", b.AvailableBalance, d("750.000343"))
	all, err := m.c.Balances(ctx)
	if err != nil || len(all) != 3 {
		t.Fatalf("Balances: %+v %v", all, err)
	}
	byCurrency, err := m.c.BalancesByCurrency(ctx, "USDT")
	if err != nil || len(byCurrency) != 1 || byCurrency[0].AccountID != usdt || !byCurrency[0].Balance.Equal(b.Balance) {
		t.Fatalf("BalancesByCurrency(USDT): %+v %v, want [%+v]", byCurrency, err, b)
	}

	// Cancel: a second quote, by destination amount, with 6 places.
	q2, err := m.c.CreateQuote(ctx, client.CreateQuoteRequest{SourceCurrency: "NGN", DestinationCurrency: "USDT",
		Amount: d("10.123457"), Rate: d("0.000625"), AmountDirection: client.DirectionDestination})
	if err != nil {
		t.Fatal(err)
	}
	wantEqual(t, "destination amount", q2.TotalDestinationAmount, d("10.123457"))
	// 10.123457 ÷ 0.000625 = 16197.5312, rounded up to 2 places.
	wantEqual(t, "source amount", q2.TotalSourceAmount, d("16197.54"))
	cancelled, err := m.c.CancelQuote(ctx, q2.QuoteID)
	if err != nil || cancelled.Status != client.StatusCancelled {
		t.Fatalf("CancelQuote: %+v %v", cancelled, err)
	}
}

func TestCreateIdempotency(t *testing.T) {
	t.Parallel()
	m := newMarket(t)
	ctx := context.Background()
	req := client.CreateQuoteRequest{SourceCurrency: "NGN", DestinationCurrency: "USDT", Amount: d("1600"),
		Rate: d("0.0006"), AmountDirection: client.DirectionSource}
	first, err := m.c.CreateQuote(ctx, req, client.IdempotencyKey("idem-1"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := m.c.CreateQuote(ctx, req, client.IdempotencyKey("idem-1"))
	if err != nil || !again.Replayed || again.QuoteID != first.QuoteID || first.Replayed {
		t.Fatalf("replay: first %s (replayed %v), again %s (replayed %v), %v", first.QuoteID, first.Replayed, again.QuoteID, again.Replayed, err)
	}
	req.Amount = d("1601")
	_, err = m.c.CreateQuote(ctx, req, client.IdempotencyKey("idem-1"))
	apiError(t, err, 422, client.CodeIdempotencyKeyReused)
	other, err := m.c.CreateQuote(ctx, req, client.IdempotencyKey("idem-2"))
	if err != nil || other.QuoteID == first.QuoteID {
		t.Fatalf("a new key: %+v %v", other, err)
	}
}

func TestAPIErrors(t *testing.T) {
	t.Parallel()
	m := newMarket(t)
	ctx := context.Background()
	create := func(src, dst, amount, rate string, dir client.AmountDirection) error {
		_, err := m.c.CreateQuote(ctx, client.CreateQuoteRequest{SourceCurrency: src, DestinationCurrency: dst,
			Amount: d(amount), Rate: d(rate), AmountDirection: dir})
		return err
	}

	e := apiError(t, create("NGN", "USDT", "1.001", "0.0006", client.DirectionSource), 400, client.CodeValidation)
	if _, ok := e.Details["amount"].(string); !ok || len(e.Details) != 1 {
		t.Errorf("validation details %v, want the amount's problem", e.Details)
	}
	apiError(t, create("USDT", "NGN", "1", "1", client.DirectionSource), 400, client.CodeInvalidCurrency)
	apiError(t, create("GHS", "NGN", "1", "1", client.DirectionSource), 400, client.CodeInvalidCurrencyPair)

	e = apiError(t, create("NGN", "USDT", "5000000", "0.0006", client.DirectionSource), 422, client.CodeInsufficientLiquidity)
	// Details numbers stay exact: json.Number, never float64.
	for _, k := range []string{"requested", "fillable", "bestRate"} {
		if _, ok := e.Details[k].(json.Number); !ok {
			t.Errorf("details.%s = %v (%T), want a json.Number", k, e.Details[k], e.Details[k])
		}
	}
	if n, _ := e.Details["requested"].(json.Number); n.String() != "5000000" {
		t.Errorf("details.requested = %v", e.Details["requested"])
	}

	_, err := m.c.GetQuote(ctx, "7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4")
	apiError(t, err, 404, client.CodeQuoteNotFound)
	_, err = m.c.Balance(ctx, "7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4")
	apiError(t, err, 404, client.CodeAccountNotFound)
	_, err = m.c.BalancesByCurrency(ctx, "XYZ")
	apiError(t, err, 400, client.CodeInvalidCurrency)

	q, err := m.c.CreateQuote(ctx, client.CreateQuoteRequest{SourceCurrency: "NGN", DestinationCurrency: "USDT",
		Amount: d("1600"), Rate: d("0.0006"), AmountDirection: client.DirectionSource})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.c.CompleteQuote(ctx, q.QuoteID)
	e = apiError(t, err, 409, client.CodeInvalidState)
	if e.Details["status"] != "pending" || !reflect.DeepEqual(e.Details["allowedFrom"], []any{"awaiting_payment"}) {
		t.Errorf("INVALID_STATE details %v", e.Details)
	}
	_, err = m.c.AcceptQuote(ctx, q.QuoteID, m.poolB.Liquidity.ID.String()) // not one of the quote's pools
	apiError(t, err, 422, client.CodeInvalidAccount)

	bad, err := client.New(m.srv.URL, "oja_sandbox_not_a_real_key_0000000000000000")
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Balances(ctx)
	e = apiError(t, err, 401, client.CodeUnauthorized)
	if !strings.Contains(e.Error(), "401 UNAUTHORIZED") || !strings.Contains(e.Error(), e.RequestID) {
		t.Errorf("Error() = %q", e.Error())
	}
	// The request id the caller sends is the one the error carries.
	_, err = bad.Balances(ctx, client.RequestID("trace-123"))
	if e := apiError(t, err, 401, client.CodeUnauthorized); e.RequestID != "trace-123" {
		t.Errorf("RequestID %q, want the one sent", e.RequestID)
	}
}

func TestStreamRates(t *testing.T) {
	t.Parallel()
	m := newMarket(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []client.RateUpdate
	errDone := errors.New("done")
	err := m.c.StreamRates(ctx, "NGN", "USDT", func(u client.RateUpdate) error {
		got = append(got, u)
		return errDone
	})
	if !errors.Is(err, errDone) || len(got) != 1 {
		t.Fatalf("StreamRates: %v, %d updates", err, len(got))
	}
	u := got[0]
	if u.From != "NGN" || u.To != "USDT" || u.Source != "CONSENSUS" || u.ID == "" || u.Timestamp.IsZero() || u.Rate.Sign() <= 0 {
		t.Errorf("rate update %+v", u)
	}
	err = m.c.StreamRates(ctx, "GHS", "NGN", func(client.RateUpdate) error { return nil })
	apiError(t, err, 400, client.CodeInvalidCurrencyPair)

	// A cancelled context ends a stream that is waiting for updates.
	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	n := 0
	err = m.c.StreamRates(short, "", "", func(client.RateUpdate) error { n++; return nil })
	if !errors.Is(err, context.DeadlineExceeded) || n != 2 {
		t.Errorf("stream of every pair until the deadline: %v after %d updates, want DeadlineExceeded after 2 (the pairs with a rate)", err, n)
	}
}

func TestTimeoutsAndContexts(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)

	c, err := client.New(hang.URL, "oja_sandbox_x", client.WithTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.GetQuote(context.Background(), "q")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("per-call timeout: %v after %v", err, time.Since(start))
	}

	c, err = client.New(hang.URL, "oja_sandbox_x", client.WithTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err = c.Balances(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestNonJSONErrorAndBaseURL(t *testing.T) {
	t.Parallel()
	var paths []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		if r.Header.Get("Authorization") != "Bearer oja_sandbox_x" || r.Header.Get("x-service-source") != client.DefaultServiceSource {
			t.Errorf("headers %v", r.Header)
		}
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte("<html>bad gateway</html>"))
	}))
	defer proxy.Close()
	for _, base := range []string{proxy.URL, proxy.URL + "/", proxy.URL + "/api/v1", proxy.URL + "/api/v1/"} {
		c, err := client.New(base, "oja_sandbox_x")
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Balances(context.Background())
		var e *client.APIError
		if !errors.As(err, &e) || e.Status != 502 || e.Code != "" || !strings.Contains(e.Message, "bad gateway") ||
			e.RetryAfter != 7*time.Second || e.Temporary() {
			t.Errorf("base %s: %#v", base, err)
		}
	}
	for _, p := range paths {
		if p != "/api/v1/partners/balances" {
			t.Errorf("requested %s, want /api/v1/partners/balances", p)
		}
	}
	for _, base := range []string{"", "ftp://x", "http://", "http://h/?q=1", "://"} {
		if _, err := client.New(base, "k"); err == nil {
			t.Errorf("New(%q) accepted", base)
		}
	}
	if _, err := client.New("http://h", ""); err == nil {
		t.Error("New without a key accepted")
	}
}

// TestNoFloat64 walks every exported type of the package: no amount or
// rate may ever sit in a float (spec §1).
func TestNoFloat64(t *testing.T) {
	t.Parallel()
	seen := map[reflect.Type]bool{}
	var walk func(path string, ty reflect.Type)
	walk = func(path string, ty reflect.Type) {
		if seen[ty] {
			return
		}
		seen[ty] = true
		switch ty.Kind() {
		case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
			t.Errorf("%s is a %s", path, ty)
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(path+"[]", ty.Elem())
		case reflect.Map:
			walk(path+"{}", ty.Elem())
		case reflect.Struct:
			if ty.PkgPath() != "github.com/oja-exchange/oja/client" {
				return // decimal.Decimal, time.Time
			}
			for i := range ty.NumField() {
				f := ty.Field(i)
				walk(path+"."+f.Name, f.Type)
			}
		}
	}
	for _, v := range []any{client.Quote{}, client.CreateQuoteRequest{}, client.Balance{}, client.RateUpdate{},
		client.APIError{}, client.Pool{}, client.CreatePoolRequest{}, client.LedgerReport{}, client.APIKey{}, client.Partner{}} {
		walk(reflect.TypeOf(v).Name(), reflect.TypeOf(v))
	}
}

// TestRequestNumbers checks the wire form of a create: amounts and rates
// are JSON numbers in plain decimal text, whatever their size.
func TestRequestNumbers(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(client.CreateQuoteRequest{SourceCurrency: "NGN", DestinationCurrency: "USDT",
		Amount: d("123456789012.34"), Rate: d("0.000000000000000001"), AmountDirection: client.DirectionSource})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":123456789012.34,"rate":0.000000000000000001,"amountDirection":"source"}`
	if string(raw) != want {
		t.Errorf("got  %s\nwant %s", raw, want)
	}
}

// TestKeyFromFile: a key as read from data/demo.key, newline included,
// works (it used to fail the first call with an invalid header value).
func TestKeyFromFile(t *testing.T) {
	t.Parallel()
	m := newMarket(t)
	c, err := client.New(m.srv.URL, m.partner.SandboxKey+"\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Balances(context.Background()); err != nil {
		t.Fatalf("a key with a trailing newline: %v", err)
	}
	if _, err := client.New(m.srv.URL, " \n"); err == nil {
		t.Fatal("a blank key was accepted")
	}
}

// TestListQuotes: the iterator walks every page, newest first, and stops
// when the caller does.
func TestListQuotes(t *testing.T) {
	t.Parallel()
	m := newMarket(t)
	ctx := context.Background()
	var made []string
	for i := 0; i < 5; i++ {
		q, err := m.c.CreateQuote(ctx, client.CreateQuoteRequest{SourceCurrency: "NGN", DestinationCurrency: "USDT",
			Amount: d("1000"), Rate: d("0.0006"), AmountDirection: client.DirectionSource})
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, q.QuoteID)
		m.srv.Advance(time.Second)
	}
	var got []string
	for q, err := range m.c.ListQuotes(ctx, client.ListQuotesParams{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, q.QuoteID)
	}
	slices.Reverse(made)
	if !slices.Equal(got, made) {
		t.Fatalf("listed %v, want newest first %v", got, made)
	}
	n := 0
	for range m.c.ListQuotes(ctx, client.ListQuotesParams{Limit: 2, Status: client.StatusPending}) {
		if n++; n == 3 {
			break
		}
	}
	if n != 3 {
		t.Fatalf("stopped after %d, want 3", n)
	}
	for _, err := range m.c.ListQuotes(ctx, client.ListQuotesParams{Limit: 500}) {
		apiError(t, err, 400, client.CodeValidation)
	}
}
