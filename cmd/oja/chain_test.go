package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/shopspring/decimal"

	ojaclient "github.com/oja-exchange/oja/client"
	"github.com/oja-exchange/oja/internal/poll"
	"github.com/oja-exchange/oja/internal/simchain"
)

// chainMarkets writes markets.example.json with its ETHEREUM USDT watched
// on chain (confirmations as given) and returns the file's path.
func chainMarkets(t *testing.T, chain *simchain.Chain, confirmations int) string {
	t.Helper()
	raw, err := os.ReadFile("../../markets.example.json")
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]any
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	file["chainWatch"] = map[string]any{"ETHEREUM": map[string]any{"rpc": chain.URL, "confirmations": confirmations,
		"pollMillis": 50, "tokens": map[string]any{"USDT": chain.Token.Hex()}}}
	out, _ := json.Marshal(file)
	path := filepath.Join(t.TempDir(), "markets.json")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestChainDepositsKill9: over the real binary, a deposit on a simulated
// chain is credited; the server is killed (-9) right after; transfers made
// while it is down are credited after the restart, each once, and the
// watcher's cursor catches up with the chain.
func TestChainDepositsKill9(t *testing.T) {
	t.Parallel()
	chain := simchain.Start(t, 6, big.NewInt(4_000_000_000_000))
	srv := newOjaServer(t, "--markets", chainMarkets(t, chain, 2))
	srv.start()
	ctx := context.Background()
	partner := newDesk(t, srv, ojaclient.ModeLive, "desk pool", "USDT", "NGN", "1600", 10_000_000).partner
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	q, err := partner.CreateQuote(ctx, ojaclient.CreateQuoteRequest{SourceCurrency: "USDT", DestinationCurrency: "NGN",
		Amount: decimal.NewFromInt(100), Rate: decimal.NewFromInt(1500), AmountDirection: ojaclient.DirectionSource, Chain: "ETHEREUM"})
	must(err)
	q, err = partner.AcceptQuote(ctx, q.QuoteID, q.AllocationResult.Allocations[0].PoolAccountID)
	must(err)
	deposit := common.HexToAddress(q.Metadata.CryptoPayIn.Address)
	usdt := func() decimal.Decimal {
		t.Helper()
		ws, err := partner.BalancesByCurrency(ctx, "USDT")
		if err != nil || len(ws) != 1 {
			t.Fatalf("USDT wallets: %v %+v", err, ws)
		}
		return ws[0].Balance
	}
	waitUSDT := func(want int64) {
		t.Helper()
		poll.Until(t, 20*time.Second, func() string {
			if got := usdt(); !got.Equal(decimal.NewFromInt(want)) {
				return fmt.Sprintf("USDT balance %s, want %d", got, want)
			}
			return ""
		})
	}
	million := big.NewInt(1_000_000)
	chain.Transfer(1, deposit, new(big.Int).Mul(big.NewInt(100), million))
	chain.Commit()
	chain.Commit()
	waitUSDT(100)
	srv.crash() // right after the credit: the cursor may or may not be durable yet
	chain.Transfer(2, deposit, new(big.Int).Mul(big.NewInt(20), million))
	chain.Commit()
	chain.Transfer(3, deposit, new(big.Int).Mul(big.NewInt(3), million))
	chain.Commit()
	chain.Commit()
	srv.start()
	waitUSDT(123)
	// The watcher catches up with the chain; nothing is credited twice.
	var chains struct {
		Data []struct {
			Chain     string  `json:"chain"`
			Head      uint64  `json:"head"`
			Processed uint64  `json:"processed"`
			LagBlocks uint64  `json:"lagBlocks"`
			LastError *string `json:"lastError"`
		} `json:"data"`
	}
	client := newHTTPClient()
	defer client.CloseIdleConnections()
	head := chain.Head()
	poll.Until(t, 20*time.Second, func() string {
		decodeJSON(t, mustDo(t, client, 200, "GET", srv.adminURL()+"/admin/v1/chains", crashAdminToken, nil).body, &chains)
		if len(chains.Data) != 1 || chains.Data[0].Processed != head-1 || chains.Data[0].LagBlocks != 1 || chains.Data[0].LastError != nil {
			return fmt.Sprintf("chains %+v, head %d", chains.Data, head)
		}
		return ""
	})
	if got := usdt(); !got.Equal(decimal.NewFromInt(123)) {
		t.Fatalf("USDT balance %s once caught up: a deposit credited twice?", got)
	}
	admin, err := ojaclient.NewAdmin(srv.adminURL(), crashAdminToken)
	must(err)
	receipts, err := admin.GetPayIn(ctx, q.Metadata.CryptoPayIn.AddressID)
	must(err)
	if len(receipts.Deposits) != 3 {
		t.Fatalf("%d deposits recorded, want 3: %+v", len(receipts.Deposits), receipts.Deposits)
	}
}

// testDesk is a partner of an ojaServer with a funded pool, and the
// operator's client.
type testDesk struct {
	admin    *ojaclient.Admin
	partner  *ojaclient.Client
	clientID string
	key      string // the partner's API key
}

// newDesk makes a partner of srv in mode, and a pool in mode from source
// to destination at rate holding liquidity.
func newDesk(t *testing.T, srv *ojaServer, mode ojaclient.Mode, poolName, source, destination, rate string, liquidity int64) testDesk {
	t.Helper()
	ctx := context.Background()
	admin, err := ojaclient.NewAdmin(srv.adminURL(), crashAdminToken)
	if err != nil {
		t.Fatal(err)
	}
	desk, err := admin.CreateClient(ctx, "desk")
	if err != nil {
		t.Fatal(err)
	}
	key, err := admin.CreateKey(ctx, desk.ClientID, mode)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := admin.CreatePool(ctx, ojaclient.CreatePoolRequest{Mode: mode, Name: poolName,
		Source: source, Destination: destination, Rate: decimal.RequireFromString(rate)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.DepositPool(ctx, pool.PoolID, decimal.NewFromInt(liquidity)); err != nil {
		t.Fatal(err)
	}
	partner, err := ojaclient.New(srv.publicURL(), key.Key)
	if err != nil {
		t.Fatal(err)
	}
	return testDesk{admin: admin, partner: partner, clientID: desk.ClientID, key: key.Key}
}
