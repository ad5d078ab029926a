package simchain_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/oja-exchange/oja/internal/simchain"
)

// TestChain: the token is deployed, transfers move it, a fork below a
// transfer with a replacement takes it back.
func TestChain(t *testing.T) {
	c := simchain.Start(t, 6, big.NewInt(4_000_000_000))
	to := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	c.Transfer(1, to, big.NewInt(5))
	c.Commit()
	if got := c.BalanceOf(to); got.Int64() != 5 {
		t.Fatalf("balance %v after a transfer", got)
	}
	head := c.Head()
	c.Transfer(2, to, big.NewInt(7))
	c.Commit()
	if got := c.BalanceOf(to); got.Int64() != 12 {
		t.Fatalf("balance %v after a second transfer", got)
	}
	c.Fork(head)
	other := common.HexToAddress("0x00000000000000000000000000000000000000bb")
	c.Replace(2, other, big.NewInt(7))
	c.Commit()
	c.Commit()
	if got := c.BalanceOf(to); got.Int64() != 5 {
		t.Fatalf("balance %v after the fork: the replaced transfer is still in", got)
	}
	if got := c.BalanceOf(other); got.Int64() != 7 {
		t.Fatalf("balance %v of the replacement's recipient", got)
	}
}
