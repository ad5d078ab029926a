package client

import (
	"context"
	"net/http"
	"time"
)

// ChainStatus is a watched chain (GET /admin/v1/chains; spec §16.2): its
// watcher's last poll and the durable cursor.
type ChainStatus struct {
	Chain         string     `json:"chain"`
	RPCHost       string     `json:"rpcHost"`
	Head          uint64     `json:"head"`      // the chain's head at the last poll
	Processed     uint64     `json:"processed"` // the last block whose deposits were credited
	Confirmations uint32     `json:"confirmations"`
	LagBlocks     uint64     `json:"lagBlocks"`
	LastError     *string    `json:"lastError"` // nil once a poll succeeds
	LastPollAt    *time.Time `json:"lastPollAt"`
}

// Chains lists the watched chains (oja admin chains).
func (a *Admin) Chains(ctx context.Context, opts ...CallOption) ([]ChainStatus, error) {
	var out struct {
		Data []ChainStatus `json:"data"`
	}
	_, err := a.t.do(ctx, newCall(http.MethodGet, "/chains", nil, opts), &out)
	return out.Data, err
}

// ChainDeposit is a transfer to a deposit address that was not credited:
// its value (in the token contract's base units, exact) does not fit the
// currency.
type ChainDeposit struct {
	UnappliedID string `json:"unappliedId"`
	Chain       string `json:"chain"`
	TxHash      string `json:"txHash"`
	LogIndex    uint32 `json:"logIndex"`
	Block       uint64 `json:"block"`
	AddressID   string `json:"addressId"`
	Currency    string `json:"currency"`
	Value       string `json:"value"`
	Decimals    uint8  `json:"decimals"`
	Reason      string `json:"reason"`
}

// ChainDepositPage is a page of ChainUnapplied.
type ChainDepositPage struct {
	Data    []ChainDeposit `json:"data"`
	HasMore bool           `json:"hasMore"`
}

// ChainUnapplied lists the deposits not credited, newest first (oja
// admin chains unapplied): limit 0 is the service's default (50);
// startingAfter is the last UnappliedID of the previous page.
func (a *Admin) ChainUnapplied(ctx context.Context, limit int, startingAfter string, opts ...CallOption) (ChainDepositPage, error) {
	return getPage[ChainDepositPage](ctx, a.t, "/chains/unapplied", nil, limit, startingAfter, opts)
}
