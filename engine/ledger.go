package engine

import "crypto/sha256"

// AccountKind says what an account stands for (spec §3).
type AccountKind uint8

const (
	AccountWallet    AccountKind = iota + 1 // a partner's wallet, one per currency per mode
	AccountLiquidity                        // a pool's liquidity (destination currency); holds live here
	AccountProceeds                         // a pool's proceeds (source currency)
	AccountClearing                         // money outside the marketplace; may go negative
)

func (k AccountKind) String() string {
	switch k {
	case AccountWallet:
		return "wallet"
	case AccountLiquidity:
		return "liquidity"
	case AccountProceeds:
		return "proceeds"
	case AccountClearing:
		return "clearing"
	}
	return ""
}

// Account is one ledger account. Balance moves only through postings whose
// two legs are applied together by one owner (see the sub-ledger note on
// Treasury). INVARIANT: for every kind but clearing, 0 <= Held <= Balance,
// except a wallet, whose balance may go down to minus its credit limit
// (Treasury.Credit).
type Account struct {
	ID       AccountID
	Kind     AccountKind
	Mode     Mode
	Currency Currency
	Owner    [16]byte // ClientID of a wallet, PoolID of a pool account, zero for clearing
	Balance  Amount
	Held     Amount
}

// Available is Balance minus holds.
func (a *Account) Available() Amount { return a.Balance - a.Held }

// ClearingAccountID is the fixed id of the clearing account of (mode,
// currency): a name-based UUID, so every replica and every restart agrees.
func ClearingAccountID(m Mode, c Currency) AccountID {
	sum := sha256.Sum256([]byte("oja/clearing/" + m.String() + "/" + c.String()))
	var id AccountID
	copy(id[:], sum[:16])
	id[6] = id[6]&0x0f | 0x50 // version 5 layout
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id
}

// Treasury is the sub-ledger of one mode that holds the partners' wallets and
// a shard of each clearing account.
//
// NB: the ledger is split into sub-ledgers, each owned by one actor: one
// Treasury per mode and one per pool (Pool holds its own clearing shards).
// Every posting's two legs land in the same sub-ledger, so each sub-ledger
// sums to zero per currency after every message it handles, and therefore
// the whole ledger does too, at any instant, without a global lock. A
// transfer that crosses owners (a pool's liquidity paid into a partner's
// wallet) is two postings through the clearing account: pool liquidity →
// clearing in the pool's sub-ledger, clearing → wallet in the Treasury. The
// reported balance of a clearing account is the sum of its shards.
type Treasury struct {
	Mode     Mode
	Wallets  map[AccountID]*Account
	byClient map[ClientID]*[CurrenciesMax]AccountID
	Clearing [CurrenciesMax]Amount // this sub-ledger's shard of each clearing account
	// Suspense is the suspense account of each currency: money held until
	// an operator applies or returns it (suspense.go). unapplied are the
	// receipts held, with their records in Payments.
	Suspense         [CurrenciesMax]Amount
	unapplied        map[UnappliedID]*UnappliedReceipt
	unappliedPayment map[UnappliedID]*Payment
	// Credit is each wallet's credit limit (absent: 0); see funds.go.
	Credit map[AccountID]Amount
	// History is each wallet's statement, oldest first; PostingSeq the
	// sequence of the last posting (funds.go).
	History    map[AccountID][]Posting
	PostingSeq uint64
	// receiptsOf lists the receipts of each quote within the retention,
	// in log order (funds.go); receiptsFrom is the retention's cutoff of
	// the last Forget (receipts before it are not listed). The receipts
	// themselves are State.Payments'.
	receiptsOf   map[QuoteID][]*Payment
	receiptsFrom int64
}

// NewTreasury returns the empty treasury of mode m.
func NewTreasury(m Mode) *Treasury {
	return &Treasury{
		Mode:       m,
		Wallets:    make(map[AccountID]*Account),
		byClient:   make(map[ClientID]*[CurrenciesMax]AccountID),
		Credit:     make(map[AccountID]Amount),
		History:    make(map[AccountID][]Posting),
		receiptsOf: make(map[QuoteID][]*Payment),
		unapplied:  make(map[UnappliedID]*UnappliedReceipt),

		unappliedPayment: make(map[UnappliedID]*Payment),
	}
}

// ApplyClientCreated opens the client's wallets of this mode.
func (t *Treasury) ApplyClientCreated(ev *ClientCreated) {
	t.byClient[ev.Client] = new([CurrenciesMax]AccountID)
	for _, w := range ev.Wallets {
		if w.Mode == t.Mode {
			t.openWallet(ev.Client, w)
		}
	}
}

// openWallet opens one wallet of a client this treasury knows.
func (t *Treasury) openWallet(client ClientID, w WalletAccount) {
	ids := t.byClient[client]
	if ids == nil {
		ids = new([CurrenciesMax]AccountID)
		t.byClient[client] = ids
	}
	t.Wallets[w.Account] = &Account{ID: w.Account, Kind: AccountWallet, Mode: t.Mode, Currency: w.Currency, Owner: client}
	ids[w.Currency] = w.Account
}

// Wallet returns the client's wallet in currency c.
func (t *Treasury) Wallet(client ClientID, c Currency) (*Account, bool) {
	ids, ok := t.byClient[client]
	if !ok || !c.Valid() || ids[c].IsZero() {
		return nil, false
	}
	a, ok := t.Wallets[ids[c]]
	return a, ok
}

// ClientWallets returns the client's wallets in currency order.
func (t *Treasury) ClientWallets(client ClientID) []*Account {
	ids, ok := t.byClient[client]
	if !ok {
		return nil
	}
	var out []*Account
	for _, c := range KnownCurrencies() {
		if a, ok := t.Wallets[ids[c]]; ok {
			out = append(out, a)
		}
	}
	return out
}

// LedgerSums adds this sub-ledger's balances per currency to sums.
func (t *Treasury) LedgerSums(sums *[CurrenciesMax]Amount) {
	for _, a := range t.Wallets {
		sums[a.Currency] += a.Balance
	}
	for c := range t.Clearing {
		sums[c] += t.Clearing[c] + t.Suspense[c]
	}
}
