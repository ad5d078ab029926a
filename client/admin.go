package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/shopspring/decimal"
)

// adminPrefix is the version path of the operator API.
const adminPrefix = "/admin/v1"

// Admin calls the operator API (spec §11) on the admin listener
// (default http://127.0.0.1:8081) with the operator token. Every call has
// an `oja admin` CLI equivalent. Safe for concurrent use.
type Admin struct {
	t *transport
}

// NewAdmin returns an operator client of the admin listener at baseURL.
func NewAdmin(baseURL, token string, opts ...Option) (*Admin, error) {
	t, err := newTransport(baseURL, adminPrefix, token, opts)
	if err != nil {
		return nil, err
	}
	return &Admin{t: t}, nil
}

// Partner is a client of the marketplace as the operator created it.
type Partner struct {
	ClientID string `json:"clientId"`
	Name     string `json:"name"`
}

// ClientSummary is one client of a listing.
type ClientSummary struct {
	ClientID  string    `json:"clientId"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
}

// ClientPage is one page of ListClients.
type ClientPage struct {
	Data    []ClientSummary `json:"data"`
	HasMore bool            `json:"hasMore"` // ask again with StartingAfter = the last ClientID
}

// KeySummary is an API key as an operator sees it: never its secret.
type KeySummary struct {
	KeyID     string    `json:"keyId"`
	Mode      Mode      `json:"mode"`
	CreatedAt time.Time `json:"createdAt"`
	Revoked   bool      `json:"revoked"`
}

// ClientDetail is GetClient's answer: the client, its keys (oldest
// first) and its accounts in each mode.
type ClientDetail struct {
	ClientID  string       `json:"clientId"`
	Name      string       `json:"name"`
	CreatedAt time.Time    `json:"createdAt"`
	Keys      []KeySummary `json:"keys"`
	Accounts  struct {
		Live    []Balance `json:"live"`
		Sandbox []Balance `json:"sandbox"`
	} `json:"accounts"`
}

// APIKey is a new API key. Key is shown only in this answer.
type APIKey struct {
	KeyID    string `json:"keyId"`
	Key      string `json:"key"`
	Mode     Mode   `json:"mode"`
	ClientID string `json:"clientId"`
}

// PoolStatus is whether a pool takes part in allocation.
type PoolStatus string

const (
	PoolActive    PoolStatus = "active"
	PoolSuspended PoolStatus = "suspended"
)

// CreatePoolRequest creates a liquidity pool (empty; deposit to fund it).
type CreatePoolRequest struct {
	Mode          Mode
	Name          string
	Source        string
	Destination   string
	Rate          decimal.Decimal
	OwnerClientID string // optional: the partner that sees the pool's accounts
}

// MarshalJSON writes the rate as a JSON number.
func (r CreatePoolRequest) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Mode          Mode        `json:"mode"`
		Name          string      `json:"name"`
		Source        string      `json:"source"`
		Destination   string      `json:"destination"`
		Rate          json.Number `json:"rate"`
		OwnerClientID string      `json:"ownerClientId,omitempty"`
	}{r.Mode, r.Name, r.Source, r.Destination, number(r.Rate), r.OwnerClientID})
}

// Pool is a liquidity pool as the operator sees it.
type Pool struct {
	PoolID            string          `json:"poolId"`
	Mode              Mode            `json:"mode"`
	Name              string          `json:"name"`
	Source            string          `json:"source"`
	Destination       string          `json:"destination"`
	Rate              decimal.Decimal `json:"rate"`
	RateSetAt         time.Time       `json:"rateSetAt"`
	Status            PoolStatus      `json:"status"`
	PoolAccountID     string          `json:"poolAccountId"`     // liquidity, in the destination currency
	ProceedsAccountID string          `json:"proceedsAccountId"` // proceeds, in the source currency
	Balance           decimal.Decimal `json:"balance"`
	Available         decimal.Decimal `json:"available"` // balance minus holds of open quotes
	TradesCount       int64           `json:"tradesCount"`
	CompletionRate    decimal.Decimal `json:"completionRate"` // completed ÷ accepted × 100
	OwnerClientID     string          `json:"ownerClientId,omitempty"`
}

// LedgerReport is a ledger check of one mode (spec §3).
type LedgerReport struct {
	OK         bool                  `json:"ok"`
	Currencies map[string]LedgerLine `json:"currencies"`
	Problems   []string              `json:"problems,omitempty"`
}

// LedgerLine is one currency's line of a ledger check: the sum of all its
// accounts (zero when the ledger holds) and how many there are.
type LedgerLine struct {
	Sum      decimal.Decimal `json:"sum"`
	Accounts int64           `json:"accounts"`
}

// amountBody is the body of deposits and withdrawals.
type amountBody struct {
	Amount json.Number `json:"amount"`
}

// CreateClient creates a partner with its wallets in both modes.
func (a *Admin) CreateClient(ctx context.Context, name string, opts ...CallOption) (Partner, error) {
	var out Partner
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/clients", map[string]string{"name": name}, opts), &out)
	return out, err
}

// CreateKey makes an API key of a partner in mode.
func (a *Admin) CreateKey(ctx context.Context, clientID string, mode Mode, opts ...CallOption) (APIKey, error) {
	var out APIKey
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/clients/"+url.PathEscape(clientID)+"/keys",
		map[string]Mode{"mode": mode}, opts), &out)
	return out, err
}

// RevokeKey revokes a key; it fails from the next request on.
func (a *Admin) RevokeKey(ctx context.Context, keyID string, opts ...CallOption) error {
	_, err := a.t.do(ctx, newCall(http.MethodDelete, "/keys/"+url.PathEscape(keyID), nil, opts), nil)
	return err
}

// ListClients lists clients newest first, limit per page (0: the
// service's default, 20), after the client startingAfter ("" = from the
// newest) (GET /admin/v1/clients; oja admin clients list).
func (a *Admin) ListClients(ctx context.Context, limit int, startingAfter string, opts ...CallOption) (ClientPage, error) {
	return getPage[ClientPage](ctx, a.t, "/clients", nil, limit, startingAfter, opts)
}

// GetClient looks a client up: its keys and accounts (GET
// /admin/v1/clients/{id}; oja admin clients get).
func (a *Admin) GetClient(ctx context.Context, clientID string, opts ...CallOption) (ClientDetail, error) {
	var out ClientDetail
	_, err := a.t.do(ctx, newCall(http.MethodGet, "/clients/"+url.PathEscape(clientID), nil, opts), &out)
	return out, err
}

// GetQuote looks up any client's quote by id (GET /admin/v1/quotes/{id};
// oja admin quotes get).
func (a *Admin) GetQuote(ctx context.Context, quoteID string, opts ...CallOption) (Quote, error) {
	var out Quote
	_, err := a.t.do(ctx, newCall(http.MethodGet, "/quotes/"+url.PathEscape(quoteID), nil, opts), &out)
	return out, err
}

// CancelQuote cancels any client's open quote as the operator (POST
// /admin/v1/quotes/{id}/cancel; oja admin quotes cancel); the log records
// it as the operator's.
func (a *Admin) CancelQuote(ctx context.Context, quoteID string, opts ...CallOption) (Quote, error) {
	var out Quote
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/quotes/"+url.PathEscape(quoteID)+"/cancel", nil, opts), &out)
	return out, err
}

// RecordPayIn records a deposit seen on chain to a crypto pay-in address
// (POST /admin/v1/payins/{addressId}/seen; oja admin payins seen): the
// amount is credited to the partner's wallet in the token at once. Its
// identity is (the chain, txHash however spelled, logIndex): the same
// again with the same amount changes nothing; with another amount it is a
// CONFLICT. It answers with the pay-in.
func (a *Admin) RecordPayIn(ctx context.Context, addressID string, amount decimal.Decimal, txHash string, logIndex int, opts ...CallOption) (PayIn, error) {
	var out PayIn
	body := struct {
		Amount   json.Number `json:"amount"`
		TxHash   string      `json:"txHash"`
		LogIndex int         `json:"logIndex"`
	}{number(amount), txHash, logIndex}
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/payins/"+url.PathEscape(addressID)+"/seen", body, opts), &out)
	return out, err
}

// PayIn is an operator's view of a crypto pay-in (GET
// /admin/v1/payins/{addressId}; oja admin payins get).
type PayIn struct {
	CryptoPayIn
	QuoteID        string          `json:"quoteId"`
	QuoteStatus    QuoteStatus     `json:"quoteStatus"`
	ClientID       string          `json:"clientId"`
	Mode           Mode            `json:"mode"`
	ReceivedAmount decimal.Decimal `json:"receivedAmount"`
	Deposits       []PayInDeposit  `json:"deposits"`          // credited, oldest first
	Deposit        *PayInDeposit   `json:"deposit,omitempty"` // one recorded before funds first (credited nothing)
}

// PayInDeposit is a deposit to a pay-in address.
type PayInDeposit struct {
	ReceiptID  string          `json:"receiptId,omitempty"`
	Amount     decimal.Decimal `json:"amount"`
	TxHash     string          `json:"txHash"`
	LogIndex   int             `json:"logIndex,omitempty"`
	ReversedAt *time.Time      `json:"reversedAt,omitempty"`
	CreatedAt  time.Time       `json:"createdAt"` // when it was credited
	SeenAt     time.Time       `json:"seenAt"`    // Deposit only
}

// GetPayIn looks a crypto pay-in up by its address id.
func (a *Admin) GetPayIn(ctx context.Context, addressID string, opts ...CallOption) (PayIn, error) {
	var out PayIn
	_, err := a.t.do(ctx, newCall(http.MethodGet, "/payins/"+url.PathEscape(addressID), nil, opts), &out)
	return out, err
}

// CreatePool creates an active, empty pool.
func (a *Admin) CreatePool(ctx context.Context, req CreatePoolRequest, opts ...CallOption) (Pool, error) {
	return a.pool(ctx, newCall(http.MethodPost, "/pools", req, opts))
}

// Pools lists the pools of mode ("" = both), by mode, pair, then
// price-time priority.
func (a *Admin) Pools(ctx context.Context, mode Mode, opts ...CallOption) ([]Pool, error) {
	call := newCall(http.MethodGet, "/pools", nil, opts)
	if mode != "" {
		call.query = url.Values{"mode": {string(mode)}}
	}
	var out []Pool
	_, err := a.t.do(ctx, call, &out)
	return out, err
}

// SetPoolRate sets a pool's rate; its time priority restarts.
func (a *Admin) SetPoolRate(ctx context.Context, poolID string, rate decimal.Decimal, opts ...CallOption) (Pool, error) {
	return a.pool(ctx, newCall(http.MethodPut, "/pools/"+url.PathEscape(poolID)+"/rate",
		map[string]json.Number{"rate": number(rate)}, opts))
}

// SetPoolStatus activates or suspends a pool.
func (a *Admin) SetPoolStatus(ctx context.Context, poolID string, status PoolStatus, opts ...CallOption) (Pool, error) {
	return a.pool(ctx, newCall(http.MethodPut, "/pools/"+url.PathEscape(poolID)+"/status",
		map[string]PoolStatus{"status": status}, opts))
}

// DepositPool moves liquidity into a pool from clearing.
func (a *Admin) DepositPool(ctx context.Context, poolID string, amount decimal.Decimal, opts ...CallOption) (Pool, error) {
	return a.pool(ctx, newCall(http.MethodPost, "/pools/"+url.PathEscape(poolID)+"/deposit", amountBody{number(amount)}, opts))
}

// WithdrawPool moves available liquidity out of a pool (422
// INSUFFICIENT_FUNDS beyond what is available).
func (a *Admin) WithdrawPool(ctx context.Context, poolID string, amount decimal.Decimal, opts ...CallOption) (Pool, error) {
	return a.pool(ctx, newCall(http.MethodPost, "/pools/"+url.PathEscape(poolID)+"/withdraw", amountBody{number(amount)}, opts))
}

func (a *Admin) pool(ctx context.Context, call *call) (Pool, error) {
	var out Pool
	_, err := a.t.do(ctx, call, &out)
	return out, err
}

// DepositAccount credits a partner's wallet from clearing (a prefund)
// under the bank's or chain's reference of the transfer it records: the
// same prefund again changes nothing, and no receipt credits that
// transfer again.
func (a *Admin) DepositAccount(ctx context.Context, accountID string, amount decimal.Decimal, reference string, opts ...CallOption) (Movement, error) {
	var out Movement
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/accounts/"+url.PathEscape(accountID)+"/deposit", referenceBody{number(amount), reference}, opts), &out)
	return out, err
}

// LedgerCheck checks that every currency of mode sums to zero and no
// account is overdrawn.
func (a *Admin) LedgerCheck(ctx context.Context, mode Mode, opts ...CallOption) (LedgerReport, error) {
	call := newCall(http.MethodGet, "/ledger/check", nil, opts)
	call.query = url.Values{"mode": {string(mode)}}
	var out LedgerReport
	_, err := a.t.do(ctx, call, &out)
	return out, err
}

// Backup makes a consistent online copy of the store into dir (on the
// server's filesystem), which must not hold one yet.
func (a *Admin) Backup(ctx context.Context, dir string, opts ...CallOption) error {
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/backup", map[string]any{"dir": dir}, opts), nil)
	return err
}

// Checkpoint is Backup without the copy: on the server's file system the
// copy's tables may be hard links into the live store (fast and small, but
// a bad sector under one damages both: move it elsewhere at once).
func (a *Admin) Checkpoint(ctx context.Context, dir string, opts ...CallOption) error {
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/backup", map[string]any{"dir": dir, "copy": false}, opts), nil)
	return err
}

// ClusterStatus is a cluster's leader, term and each node's state (GET
// /admin/v1/cluster; cluster mode only).
type ClusterStatus struct {
	Leader *string `json:"leader"` // nil while no leader is known
	Term   uint64  `json:"term"`
	Nodes  []struct {
		ID           string `json:"id"`
		Raft         string `json:"raft"`  // its Raft address
		State        string `json:"state"` // leader, follower, candidate, shutdown, unreachable, not a member
		AppliedIndex uint64 `json:"appliedIndex"`
	} `json:"nodes"`
}

// ClusterStatus reads the cluster's status (oja admin cluster); 404 on a
// single node.
func (a *Admin) ClusterStatus(ctx context.Context, opts ...CallOption) (ClusterStatus, error) {
	var out ClusterStatus
	_, err := a.t.do(ctx, newCall(http.MethodGet, "/cluster", nil, opts), &out)
	return out, err
}

// ReplaceNode re-adds a member whose data was lost (oja admin cluster
// replace); it answers the cluster's status.
func (a *Admin) ReplaceNode(ctx context.Context, nodeID string, opts ...CallOption) (ClusterStatus, error) {
	var out ClusterStatus
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/cluster/nodes/"+url.PathEscape(nodeID)+"/replace", nil, opts), &out)
	return out, err
}

// AddNode is POST /admin/v1/cluster/nodes: a voter with a new id at a
// Raft address (the node runs with --join and waits to be added).
func (a *Admin) AddNode(ctx context.Context, nodeID, raftAddr string, opts ...CallOption) (ClusterStatus, error) {
	var out ClusterStatus
	body := map[string]string{"id": nodeID, "raft": raftAddr}
	_, err := a.t.do(ctx, newCall(http.MethodPost, "/cluster/nodes", body, opts), &out)
	return out, err
}

// RemoveNode is DELETE /admin/v1/cluster/nodes/{nodeId}: the member leaves
// the configuration and serves nothing from then on.
func (a *Admin) RemoveNode(ctx context.Context, nodeID string, opts ...CallOption) (ClusterStatus, error) {
	var out ClusterStatus
	_, err := a.t.do(ctx, newCall(http.MethodDelete, "/cluster/nodes/"+url.PathEscape(nodeID), nil, opts), &out)
	return out, err
}
