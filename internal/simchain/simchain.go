// Package simchain is a real EVM for tests: go-ethereum's simulated
// backend serving JSON-RPC over HTTP on a loopback port, with the test
// ERC-20 token (token/Token.sol, built as token/README.md says) deployed
// on it. Blocks
// are made only when a test commits them; a test can fork the chain below
// its head to make a reorganisation. For tests only.
package simchain

import (
	"context"
	"crypto/ecdsa"
	_ "embed"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"
	"go.uber.org/goleak"
)

//go:embed token/Token.bin
var tokenBin string

//go:embed token/Token.abi
var tokenABI string

// Chain is a running simulated chain with a token on it.
type Chain struct {
	t       testing.TB
	backend *simulated.Backend
	// URL is the JSON-RPC endpoint (http://127.0.0.1:port).
	URL string
	// Token is the token contract's address.
	Token common.Address
	abi   abi.ABI

	mu      sync.Mutex
	senders []*sender
}

// sender is a funded account and its next nonce.
type sender struct {
	key   *ecdsa.PrivateKey
	addr  common.Address
	nonce uint64
}

// Senders is how many funded accounts a chain has; each holds a share of
// the token.
const Senders = 4

// Start starts a chain whose token has decimals places and gives each
// sender supply/Senders of it. It stops when the test ends.
func Start(t testing.TB, decimals uint8, supply *big.Int) *Chain {
	t.Helper()
	c := &Chain{t: t}
	alloc := types.GenesisAlloc{}
	for range Senders {
		key, err := crypto.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		s := &sender{key: key, addr: crypto.PubkeyToAddress(key.PublicKey)}
		alloc[s.addr] = types.Account{Balance: new(big.Int).Lsh(big.NewInt(1), 100)}
		c.senders = append(c.senders, s)
	}
	var err error
	if c.abi, err = abi.JSON(strings.NewReader(tokenABI)); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	c.backend = simulated.NewBackend(alloc, func(nc *node.Config, _ *ethconfig.Config) {
		nc.HTTPHost, nc.HTTPPort = "127.0.0.1", port
		nc.HTTPModules = []string{"eth", "net", "web3"}
		nc.HTTPVirtualHosts = []string{"*"}
	})
	t.Cleanup(func() { c.backend.Close() })
	c.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	// Deploy the token from the first sender, which holds the supply, and
	// hand each other sender its share.
	args, err := c.abi.Pack("", decimals, supply)
	if err != nil {
		t.Fatal(err)
	}
	code, err := hex.DecodeString(strings.TrimSpace(tokenBin))
	if err != nil {
		t.Fatal(err)
	}
	owner := c.senders[0]
	c.Token = crypto.CreateAddress(owner.addr, owner.nonce)
	c.send(owner, nil, append(code, args...), 0)
	c.Commit()
	share := new(big.Int).Div(supply, big.NewInt(Senders))
	for _, s := range c.senders[1:] {
		c.Transfer(0, s.addr, share)
	}
	c.Commit()
	return c
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Transfer sends value of the token from sender i to to and returns the
// transaction's hash; it is mined by the next Commit.
func (c *Chain) Transfer(i int, to common.Address, value *big.Int) common.Hash {
	c.t.Helper()
	data, err := c.abi.Pack("transfer", to, value)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.send(c.senders[i], &c.Token, data, 0)
}

// Replace sends, from sender i, a transfer of value to to with the nonce
// of i's last transaction and a higher tip: on a fork below that
// transaction, it takes its place.
func (c *Chain) Replace(i int, to common.Address, value *big.Int) common.Hash {
	c.t.Helper()
	c.mu.Lock()
	c.senders[i].nonce--
	c.mu.Unlock()
	data, err := c.abi.Pack("transfer", to, value)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.send(c.senders[i], &c.Token, data, 1)
}

// send signs and sends a transaction of s (to nil: a contract creation);
// bump raises its tip.
func (c *Chain) send(s *sender, to *common.Address, data []byte, bump int64) common.Hash {
	c.t.Helper()
	c.mu.Lock()
	nonce := s.nonce
	s.nonce++
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := c.backend.Client()
	chainID, err := client.ChainID(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	tip := new(big.Int).Mul(big.NewInt(2_000_000_000), big.NewInt(1+bump))
	tx := types.NewTx(&types.DynamicFeeTx{ChainID: chainID, Nonce: nonce, GasTipCap: tip,
		GasFeeCap: new(big.Int).Mul(tip, big.NewInt(30)), Gas: 1_000_000, To: to, Data: data})
	signed, err := types.SignTx(tx, types.LatestSignerForChainID(chainID), s.key)
	if err != nil {
		c.t.Fatal(err)
	}
	// After a Fork the transaction pool moves to the new head on a
	// goroutine of its own: until it has, it checks nonces against the old
	// head's state, and a Replace's nonce, spent there, is "too low". The
	// send is tried again until the pool has caught up, within ctx.
	for {
		err := client.SendTransaction(ctx, signed)
		if err == nil {
			return signed.Hash()
		}
		if !strings.Contains(err.Error(), "nonce too low") || ctx.Err() != nil {
			c.t.Fatalf("simchain: send: %v", err)
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("simchain: send: %v (the pool did not reach the forked head)", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Commit mines a block of the pending transactions and returns its hash.
func (c *Chain) Commit() common.Hash { return c.backend.Commit() }

// Head is the head block's number.
func (c *Chain) Head() uint64 {
	c.t.Helper()
	n, err := c.backend.Client().BlockNumber(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

// Fork makes block n's the head: the blocks after it are no longer the
// chain's (their transactions go back to the pool), and the blocks
// committed from now on extend block n.
func (c *Chain) Fork(n uint64) {
	c.t.Helper()
	h, err := c.backend.Client().HeaderByNumber(context.Background(), new(big.Int).SetUint64(n))
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.backend.Fork(h.Hash()); err != nil {
		c.t.Fatal(err)
	}
}

// BalanceOf is the token balance of addr at the head.
func (c *Chain) BalanceOf(addr common.Address) *big.Int {
	c.t.Helper()
	data, err := c.abi.Pack("balanceOf", addr)
	if err != nil {
		c.t.Fatal(err)
	}
	out, err := c.backend.Client().CallContract(context.Background(), ethereum.CallMsg{To: &c.Token, Data: data}, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	v, err := c.abi.Unpack("balanceOf", out)
	if err != nil {
		c.t.Fatal(err)
	}
	return v[0].(*big.Int)
}

// IgnoredGoroutines are what a simulated chain leaves running after it
// is closed, for goleak: go-ethereum's sender cache (made per chain,
// never stopped) and, for a moment, its database's pool drainer.
func IgnoredGoroutines() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/ethereum/go-ethereum/core.(*txSenderCacher).cache"),
		goleak.IgnoreAnyFunction("github.com/syndtr/goleveldb/leveldb.(*DB).mpoolDrain"),
	}
}
