package engine

// Pool is one liquidity pool: a market maker's offer to sell its destination
// currency for the source currency at Rate. It owns a sub-ledger (see
// Treasury): its liquidity and proceeds accounts and its shards of the two
// clearing accounts of its pair.
//
// INVARIANT: 0 <= Liquidity.Held <= Liquidity.Balance; Proceeds.Held == 0;
// Liquidity.Balance + ClearingDestination == 0 and Proceeds.Balance +
// ClearingSource == 0 (each posting moves both legs).
type Pool struct {
	ID        PoolID
	Mode      Mode
	Name      string
	Pair      Pair
	Rate      Rate
	RateSetAt int64 // unix ms; price-time priority among equal rates
	Active    bool
	Owner     ClientID
	CreatedAt int64

	Liquidity           Account
	Proceeds            Account
	ClearingSource      Amount
	ClearingDestination Amount

	Accepted  uint64 // quotes accepted that hold a slice of this pool
	Completed uint64 // of those, completed (the listing's TradsCnt)
}

// NewPool builds the pool an event created.
func NewPool(ev *PoolCreated) *Pool {
	return &Pool{
		ID: ev.Pool, Mode: ev.Mode, Name: ev.Name, Pair: ev.Pair, Rate: ev.Rate,
		RateSetAt: ev.At, Active: true, Owner: ev.Owner, CreatedAt: ev.At,
		Liquidity: Account{ID: ev.LiquidityAccount, Kind: AccountLiquidity, Mode: ev.Mode,
			Currency: ev.Pair.Destination, Owner: ev.Pool},
		Proceeds: Account{ID: ev.ProceedsAccount, Kind: AccountProceeds, Mode: ev.Mode,
			Currency: ev.Pair.Source, Owner: ev.Pool},
	}
}

// Clone returns a deep copy (pools hold no references).
func (p *Pool) Clone() *Pool { c := *p; return &c }

// BookEntry is the pool as matching sees it.
func (p *Pool) BookEntry() BookEntry {
	return BookEntry{Pool: p.ID, Rate: p.Rate, RateSetAt: p.RateSetAt, Active: p.Active,
		Available: p.Liquidity.Available()}
}

// Withdraw checks a withdrawal against the available liquidity.
func (p *Pool) Withdraw(amount Amount) Result {
	if amount > p.Liquidity.Available() {
		return ResultInsufficientFunds
	}
	return ResultOK
}

func (p *Pool) ApplyRateSet(ev *PoolRateSet)     { p.Rate, p.RateSetAt = ev.Rate, ev.At }
func (p *Pool) ApplyStatusSet(ev *PoolStatusSet) { p.Active = ev.Active }

// ApplyDeposit posts clearing(destination) → liquidity.
func (p *Pool) ApplyDeposit(amount Amount) {
	p.ClearingDestination -= amount
	p.Liquidity.Balance += amount
}

// ApplyWithdraw posts liquidity → clearing(destination).
// REQUIRES: Withdraw(amount) == ResultOK.
func (p *Pool) ApplyWithdraw(amount Amount) {
	if amount > p.Liquidity.Available() {
		assert(false, "withdraw %d over available %d", amount, p.Liquidity.Available())
	}
	p.Liquidity.Balance -= amount
	p.ClearingDestination += amount
}

// ApplyHold reserves destination liquidity for a quote's slice.
func (p *Pool) ApplyHold(amount Amount) {
	p.Liquidity.Held += amount
	if p.Liquidity.Held > p.Liquidity.Balance {
		assert(false, "pool %s over-allocated: held %d > balance %d", p.ID, p.Liquidity.Held, p.Liquidity.Balance)
	}
}

// ApplyRelease returns a slice's hold (cancel, expiry).
func (p *Pool) ApplyRelease(amount Amount) {
	p.Liquidity.Held -= amount
	if p.Liquidity.Held < 0 {
		assert(false, "pool %s released more than held", p.ID)
	}
}

// ApplyAccepted counts an accepted quote holding a slice of this pool.
func (p *Pool) ApplyAccepted() { p.Accepted++ }

// ApplySettle consumes a slice's hold on completion: liquidity → clearing
// (destination), from where the Treasury credits the partner's wallet or the
// money leaves to a bank or chain; clearing(source) → proceeds.
func (p *Pool) ApplySettle(source, destination Amount) {
	p.ApplyRelease(destination)
	p.Liquidity.Balance -= destination
	p.ClearingDestination += destination
	p.ClearingSource -= source
	p.Proceeds.Balance += source
	p.Completed++
}

// LedgerSums adds this sub-ledger's balances per currency to sums.
func (p *Pool) LedgerSums(sums *[CurrenciesMax]Amount) {
	sums[p.Pair.Destination] += p.Liquidity.Balance + p.ClearingDestination
	sums[p.Pair.Source] += p.Proceeds.Balance + p.ClearingSource
}

// ClearingShard is this pool's shard of the clearing account of currency c
// (zero for a currency not in its pair).
func (p *Pool) ClearingShard(c Currency) Amount {
	var shard Amount
	if p.Pair.Source == c {
		shard += p.ClearingSource
	}
	if p.Pair.Destination == c {
		shard += p.ClearingDestination
	}
	return shard
}
