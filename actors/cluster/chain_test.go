package cluster

import (
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/internal/poll"
	"github.com/oja-exchange/oja/internal/simchain"
)

// TestChainWatchFailover: only the leader watches the chain; when it is
// cut off mid-stream, the new leader's watcher resumes from the durable
// cursor, and every deposit — made before, during and after the failover
// — is credited exactly once on every replica.
func TestChainWatchFailover(t *testing.T) {
	chain := simchain.Start(t, 6, big.NewInt(4_000_000_000_000))
	cfg, err := engine.ParseMarketsConfig([]byte(fmt.Sprintf(`{
 "currencies": [{"code":"NGN","kind":"fiat","minorUnits":2},
                {"code":"USDT","kind":"token","minorUnits":6,"chains":["ETHEREUM"]}],
 "pairs": [{"source":"USDT","destination":"NGN"}],
 "depositKeys": {"USDT": {"ETHEREUM": "xpub661MyMwAqRbcFW31YEwpkMuc5THy2PSt5bDMsktWQcFF8syAmRUapSCGu8ED9W6oDMSgv6Zz8idoc4a6mr8BDzTJY47LJhkJ8UB7WEGuduB"}},
 "chainWatch": {"ETHEREUM": {"rpc": %q, "confirmations": 1, "pollMillis": 50, "tokens": {"USDT": %q}}}}`, chain.URL, chain.Token.Hex())))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClusterClock(t, nil, cfg)
	old := c.leader()
	sys := old.node.System()
	cl := sys.Admin(&actors.CreateClient{Name: "usdt desk"})
	if err := cl.Failure(); err != nil {
		t.Fatal(err)
	}
	pair := engine.Pair{Source: engine.CurrencyUSDT, Destination: engine.CurrencyNGN}
	rate, _ := engine.RateFromDecimal(decimal.RequireFromString("1600"))
	pool := sys.Admin(&actors.CreatePool{Mode: engine.ModeLive, Name: "otc", Pair: pair, Rate: rate})
	if err := pool.Failure(); err != nil {
		t.Fatal(err)
	}
	if err := sys.ChangePool(&actors.PoolCommand{Pool: pool.Pool.ID, Deposit: 100_000_000_00}).Failure(); err != nil {
		t.Fatal(err)
	}
	min, _ := engine.RateFromDecimal(decimal.RequireFromString("1500"))
	q := sys.CreateQuote(&actors.CreateQuote{Client: cl.Client.ID, Mode: engine.ModeLive, Pair: pair, Direction: engine.DirectionSource,
		Amount: 100_000_000, Rate: min, Chain: engine.ChainEthereum})
	if q.Err != nil || q.Result != engine.ResultOK {
		t.Fatalf("create: %v %v", q.Err, q.Result)
	}
	ngn, _ := cl.Client.Wallet(engine.ModeLive, engine.CurrencyNGN)
	a := sys.TransitionQuote(cl.Client.ID, engine.ModeLive, q.Quote.ID, &actors.TransitionQuote{Operation: actors.OperationAccept,
		Accept: engine.AcceptQuote{NamesPoolAccount: true, PoolAccount: q.Quote.Allocations()[0].PoolAccount,
			Settlement: engine.Settlement{Kind: engine.SettlementWallet, Account: ngn}}})
	if a.Err != nil || a.Result != engine.ResultOK || a.Quote.PayIn == nil {
		t.Fatalf("accept: %v %v", a.Err, a.Result)
	}
	deposit := common.HexToAddress(a.Quote.PayIn.Deposit)
	usdt, _ := cl.Client.Wallet(engine.ModeLive, engine.CurrencyUSDT)
	// credited reads n's replica: the USDT wallet's balance and the
	// quote's receipts.
	credited := func(n *testNode) (engine.Amount, int) {
		var balance engine.Amount
		var receipts int
		if err := n.node.fsm.read(func(s *engine.State, _ uint64) error {
			t := s.Treasuries[engine.ModeLive]
			balance = t.Wallets[usdt].Balance
			receipts = len(t.ReceiptsOf(q.Quote.ID))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return balance, receipts
	}
	waitCredited := func(n *testNode, want engine.Amount) {
		t.Helper()
		poll.Until(t, 20*time.Second, func() string {
			if got, _ := credited(n); got != want {
				return fmt.Sprintf("%s credited %d, want %d", n.id, got, want)
			}
			return ""
		})
	}
	deposits := []int64{100, 20, 3, 40, 5, 60}
	var total engine.Amount
	send := func(i int) {
		chain.Transfer(i%simchain.Senders, deposit, big.NewInt(deposits[i]*1_000_000))
		chain.Commit()
		total += engine.Amount(deposits[i] * 1_000_000)
	}
	send(0)
	send(1)
	waitCredited(old, total)
	// Mid-stream: the leader is cut off as a deposit lands.
	send(2)
	c.isolate(old)
	send(3)
	next := c.leader(old)
	send(4)
	waitCredited(next, total)
	c.heal(old)
	send(5)
	waitCredited(next, total)
	c.converge()
	for _, n := range c.nodes {
		if got, receipts := credited(n); got != total || receipts != len(deposits) {
			t.Errorf("%s: credited %d in %d receipts, want %d in %d", n.id, got, receipts, total, len(deposits))
		}
	}
}
