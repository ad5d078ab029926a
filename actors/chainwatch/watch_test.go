package chainwatch_test

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/shopspring/decimal"
	"go.uber.org/goleak"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/client"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
	"github.com/oja-exchange/oja/internal/poll"
	"github.com/oja-exchange/oja/internal/simchain"
)

func TestMain(m *testing.M) {
	// Every goroutine of Oja's must be gone at the end; the simulated
	// chain leaves some of go-ethereum's, and fasthttp its process-wide
	// clock and idle workers (gateway/leak_test.go says why).
	goleak.VerifyTestMain(m, append(simchain.IgnoredGoroutines(),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*TCPDialer).tcpAddrsClean"),
	)...)
}

// usdt is 1 USDT in the test token's base units (6 decimals, as USDT).
var usdt = big.NewInt(1_000_000)

func units(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), usdt) }

// markets is a markets file with USDT on ETHEREUM, USDT→NGN, and the
// chain watched at url (the token at token) with confirmations.
func markets(t testing.TB, url string, token common.Address, confirmations int) *engine.MarketsConfig {
	t.Helper()
	cfg, err := engine.ParseMarketsConfig([]byte(fmt.Sprintf(`{
 "currencies": [{"code":"NGN","kind":"fiat","minorUnits":2},
                {"code":"USDT","kind":"token","minorUnits":6,"chains":["ETHEREUM"]}],
 "pairs": [{"source":"USDT","destination":"NGN","minSourceAmount":"1","maxSourceAmount":"1000000"}],
 "depositKeys": {"USDT": {"ETHEREUM": "xpub661MyMwAqRbcFW31YEwpkMuc5THy2PSt5bDMsktWQcFF8syAmRUapSCGu8ED9W6oDMSgv6Zz8idoc4a6mr8BDzTJY47LJhkJ8UB7WEGuduB"}},
 "chainWatch": {"ETHEREUM": {"rpc": %q, "confirmations": %d, "pollMillis": 50, "tokens": {"USDT": %q}}}}`,
		url, confirmations, token.Hex())))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// desk is a partner of a running service with a live USDT→NGN pool.
type desk struct {
	srv     *gatewaytest.Server
	liveKey string
	live    *client.Client
	sandbox *client.Client
}

// statuses are srv's watchers' reports.
func statuses(srv *gatewaytest.Server) []actors.ChainWatchStatus { return srv.Term.Chains().Statuses() }

func start(t *testing.T, dir string, cfg *engine.MarketsConfig) *gatewaytest.Server {
	t.Helper()
	return gatewaytest.Start(t, gatewaytest.Options{Dir: dir, Sync: true, Markets: cfg})
}

func newDesk(t *testing.T, srv *gatewaytest.Server) *desk {
	t.Helper()
	pair := engine.Pair{Source: engine.CurrencyUSDT, Destination: engine.CurrencyNGN}
	for _, m := range engine.Modes {
		srv.NewPool(t, m, pair, "Lagos OTC", "1600", "100000000")
	}
	p := srv.NewPartner(t, "desk")
	d := &desk{srv: srv, liveKey: p.LiveKey}
	var err error
	if d.live, err = client.New(srv.URL, p.LiveKey); err != nil {
		t.Fatal(err)
	}
	if d.sandbox, err = client.New(srv.URL, p.SandboxKey); err != nil {
		t.Fatal(err)
	}
	return d
}

// payIn creates and accepts a USDT→NGN quote of c and returns its
// deposit address.
func payIn(t *testing.T, c *client.Client) common.Address {
	t.Helper()
	ctx := context.Background()
	q, err := c.CreateQuote(ctx, client.CreateQuoteRequest{SourceCurrency: "USDT", DestinationCurrency: "NGN",
		Amount: decimal.NewFromInt(100), Rate: decimal.NewFromInt(1500), AmountDirection: client.DirectionSource, Chain: "ETHEREUM"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.AcceptQuote(ctx, q.QuoteID, q.AllocationResult.Allocations[0].PoolAccountID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Metadata.CryptoPayIn == nil || !common.IsHexAddress(a.Metadata.CryptoPayIn.Address) {
		t.Fatalf("accepted without a deposit address: %+v", a.Metadata)
	}
	return common.HexToAddress(a.Metadata.CryptoPayIn.Address)
}

// balance is c's USDT wallet balance.
func balance(t *testing.T, c *client.Client) decimal.Decimal {
	t.Helper()
	bs, err := c.BalancesByCurrency(context.Background(), "USDT")
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 {
		t.Fatalf("%d USDT wallets", len(bs))
	}
	return bs[0].Balance
}

// waitBalance waits until c's USDT balance is want.
func waitBalance(t *testing.T, c *client.Client, want int64) {
	t.Helper()
	poll.Until(t, 15*time.Second, func() string {
		if got := balance(t, c); !got.Equal(decimal.NewFromInt(want)) {
			return fmt.Sprintf("USDT balance %s, want %d", got, want)
		}
		return ""
	})
}

// waitProcessed waits until the watcher has processed block n.
func waitProcessed(t *testing.T, srv *gatewaytest.Server, n uint64) {
	t.Helper()
	poll.Until(t, 15*time.Second, func() string {
		st, ok := srv.Sys.ChainState(engine.ChainEthereum)
		if !ok || st.Cursor.Block < n {
			return fmt.Sprintf("processed through %d (%v), want %d", st.Cursor.Block, ok, n)
		}
		return ""
	})
}

// TestDepositsConfirmedOnce: a transfer to a live deposit address is
// credited once it has its confirmations, never before; two in one block
// are each credited; transfers to an address Oja never issued or to a
// sandbox quote's address are not; the cursor follows the chain.
func TestDepositsConfirmedOnce(t *testing.T) {
	chain := simchain.Start(t, 6, units(4_000_000))
	srv := start(t, t.TempDir(), markets(t, chain.URL, chain.Token, 3))
	d := newDesk(t, srv)
	deposit := payIn(t, d.live)
	sandbox := payIn(t, d.sandbox)

	chain.Transfer(1, deposit, units(100))
	chain.Transfer(2, sandbox, units(50))
	chain.Transfer(3, common.HexToAddress("0x00000000000000000000000000000000000000aa"), units(5))
	chain.Commit()
	n := chain.Head()
	waitProcessed(t, srv, n-3) // the watcher has read the head; the block has one confirmation of three
	chain.Commit()
	if got := balance(t, d.live); !got.IsZero() {
		t.Fatalf("credited %s with two confirmations of three", got)
	}
	chain.Commit()
	waitBalance(t, d.live, 100)
	// Two transfers in one block.
	chain.Transfer(1, deposit, units(10))
	chain.Transfer(2, deposit, units(20))
	for range 3 {
		chain.Commit()
	}
	waitBalance(t, d.live, 130)
	for range 3 {
		chain.Commit()
	}
	waitProcessed(t, srv, chain.Head()-2)
	if got := balance(t, d.live); !got.Equal(decimal.NewFromInt(130)) {
		t.Fatalf("balance %s after more blocks: a transfer credited twice?", got)
	}
	if got := balance(t, d.sandbox); !got.IsZero() {
		t.Fatalf("a sandbox address credited %s", got)
	}
	st := statuses(srv)
	if len(st) != 1 || st[0].Processed != chain.Head()-2 || st[0].Head != chain.Head() || st[0].LastError != "" {
		t.Fatalf("status %+v, head %d", st, chain.Head())
	}
}

// TestReorgRemovesUnconfirmedTransfer: a transfer whose block is replaced
// before it has its confirmations is never credited.
func TestReorgRemovesUnconfirmedTransfer(t *testing.T) {
	chain := simchain.Start(t, 6, units(4_000_000))
	srv := start(t, t.TempDir(), markets(t, chain.URL, chain.Token, 3))
	d := newDesk(t, srv)
	deposit := payIn(t, d.live)
	before := chain.Head()
	chain.Transfer(1, deposit, units(100))
	chain.Commit()
	waitProcessed(t, srv, before-2)
	// The block is replaced: the same sender's nonce spent elsewhere.
	chain.Fork(before)
	chain.Replace(1, common.HexToAddress("0x00000000000000000000000000000000000000bb"), units(100))
	for range 5 {
		chain.Commit()
	}
	waitProcessed(t, srv, chain.Head()-2)
	if got := balance(t, d.live); !got.IsZero() {
		t.Fatalf("credited %s from a block the chain dropped", got)
	}
	if got := chain.BalanceOf(deposit); got.Sign() != 0 {
		t.Fatalf("the chain still pays the deposit address %v", got)
	}
}

// TestRewindAfterReorgBelowCursor: with one confirmation, a reorganisation
// replaces a block already processed; the watcher sees its hash change,
// reads the blocks again and credits what the new chain holds (a transfer
// credited from the replaced block is not taken back).
func TestRewindAfterReorgBelowCursor(t *testing.T) {
	chain := simchain.Start(t, 6, units(4_000_000))
	srv := start(t, t.TempDir(), markets(t, chain.URL, chain.Token, 1))
	d := newDesk(t, srv)
	deposit := payIn(t, d.live)
	before := chain.Head()
	chain.Transfer(1, deposit, units(100))
	chain.Commit()
	waitBalance(t, d.live, 100)
	old, _ := srv.Sys.ChainState(engine.ChainEthereum)
	chain.Fork(before)
	chain.Replace(1, common.HexToAddress("0x00000000000000000000000000000000000000bb"), units(100))
	chain.Transfer(2, deposit, units(7))
	chain.Commit()
	chain.Commit()
	waitBalance(t, d.live, 107)
	waitProcessed(t, srv, chain.Head())
	now, _ := srv.Sys.ChainState(engine.ChainEthereum)
	if now.Cursor.Block < old.Cursor.Block || now.Cursor.Hash == old.Cursor.Hash {
		t.Fatalf("cursor %+v after the reorganisation, was %+v", now.Cursor, old.Cursor)
	}
}

// TestRestartResumes: transfers made while the service is down are
// credited after it starts again, each once, from the durable cursor.
func TestRestartResumes(t *testing.T) {
	chain := simchain.Start(t, 6, units(4_000_000))
	dir := t.TempDir()
	cfg := markets(t, chain.URL, chain.Token, 2)
	srv := start(t, dir, cfg)
	d := newDesk(t, srv)
	deposit := payIn(t, d.live)
	chain.Transfer(1, deposit, units(100))
	chain.Commit()
	chain.Commit()
	waitBalance(t, d.live, 100)
	srv.Stop()
	chain.Transfer(2, deposit, units(20))
	chain.Commit()
	chain.Transfer(3, deposit, units(3))
	chain.Commit()
	chain.Commit()
	srv = start(t, dir, cfg)
	var err error
	if d.live, err = client.New(srv.URL, d.liveKey); err != nil {
		t.Fatal(err)
	}
	waitBalance(t, d.live, 123)
	waitProcessed(t, srv, chain.Head()-1)
	if got := balance(t, d.live); !got.Equal(decimal.NewFromInt(123)) {
		t.Fatalf("balance %s once caught up", got)
	}
}

// TestRPCFailsAndRecovers: while the node answers with errors the watcher
// reports them and credits nothing; once it answers again the watcher
// catches up.
func TestRPCFailsAndRecovers(t *testing.T) {
	chain := simchain.Start(t, 6, units(4_000_000))
	var failing atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "node down", http.StatusBadGateway)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, chain.URL, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		req.Header = r.Header.Clone()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		_, _ = io.Copy(w, res.Body)
	}))
	t.Cleanup(proxy.Close)
	srv := start(t, t.TempDir(), markets(t, proxy.URL+"/v3/secret-key", chain.Token, 1))
	d := newDesk(t, srv)
	deposit := payIn(t, d.live)
	failing.Store(true)
	chain.Transfer(1, deposit, units(100))
	chain.Commit()
	poll.Until(t, 15*time.Second, func() string {
		st := statuses(srv)
		if len(st) != 1 || st[0].LastError == "" || st[0].RPCErrors == 0 {
			return fmt.Sprintf("no error reported: %+v", st)
		}
		if strings.Contains(st[0].LastError, "secret-key") {
			t.Fatalf("the RPC URL's key is shown: %s", st[0].LastError)
		}
		return ""
	})
	if got := balance(t, d.live); !got.IsZero() {
		t.Fatalf("credited %s while the node failed", got)
	}
	failing.Store(false)
	waitBalance(t, d.live, 100)
	poll.True(t, 15*time.Second, "the error cleared", func() bool { return statuses(srv)[0].LastError == "" })
}

// TestUnappliedNotRounded: a token with 18 decimals credits a value the
// currency holds exactly, and lists one it cannot, never rounding it.
func TestUnappliedNotRounded(t *testing.T) {
	one := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	chain := simchain.Start(t, 18, new(big.Int).Mul(one, big.NewInt(4_000_000)))
	srv := start(t, t.TempDir(), markets(t, chain.URL, chain.Token, 1))
	d := newDesk(t, srv)
	deposit := payIn(t, d.live)
	chain.Transfer(1, deposit, new(big.Int).Mul(one, big.NewInt(100)))
	odd := new(big.Int).Add(one, big.NewInt(1)) // 1.000000000000000001
	chain.Transfer(2, deposit, odd)
	chain.Commit()
	waitBalance(t, d.live, 100)
	waitProcessed(t, srv, chain.Head())
	st, _ := srv.Sys.ChainState(engine.ChainEthereum)
	if len(st.Unapplied) != 1 || st.Unapplied[0].Value != odd.String() || st.Unapplied[0].Decimals != 18 ||
		st.Unapplied[0].Reason != engine.UnappliedPrecision {
		t.Fatalf("unapplied %+v", st.Unapplied)
	}
	if got := balance(t, d.live); !got.Equal(decimal.NewFromInt(100)) {
		t.Fatalf("balance %s: the odd value was rounded in", got)
	}
	// The operator's view, through the Go client.
	admin, err := client.NewAdmin(srv.Admin, gatewaytest.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	page, err := admin.ChainUnapplied(context.Background(), 10, "")
	if err != nil || len(page.Data) != 1 || page.HasMore || page.Data[0].Value != odd.String() || page.Data[0].Chain != "ETHEREUM" {
		t.Fatalf("unapplied through the client: %v %+v", err, page)
	}
	chains, err := admin.Chains(context.Background())
	if err != nil || len(chains) != 1 || chains[0].Processed != chain.Head() || chains[0].LastError != nil || chains[0].LastPollAt == nil {
		t.Fatalf("chains through the client: %v %+v", err, chains)
	}
}
