package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
)

// BookKey names the order book of one pair in one mode.
type BookKey struct {
	Mode Mode
	Pair Pair
}

// State is the whole engine state rebuilt from the log. Recovery, snapshots,
// the offline WAL tools and tests use it; the running service splits the same
// entities among actors (see package actors), each applying the same entity
// methods that Apply calls here, so the two cannot disagree.
type State struct {
	Clients     map[ClientID]*Client
	Keys        map[KeyID]*Key
	Pools       map[PoolID]*Pool
	Books       map[BookKey]*Book
	Tickers     map[BookKey]*Ticker // consensus and best rates, with 24 h history
	Treasuries  map[Mode]*Treasury
	Quotes      map[QuoteID]*Quote
	Idempotency map[IdempotencyScope]IdempotencyRecord
	// accountPool maps pool accounts to their pool.
	accountPool map[AccountID]PoolID
	LastAt      int64 // time of the last applied event
}

// NewState returns the empty state.
func NewState() *State {
	s := &State{
		Clients:     make(map[ClientID]*Client),
		Keys:        make(map[KeyID]*Key),
		Pools:       make(map[PoolID]*Pool),
		Books:       make(map[BookKey]*Book),
		Tickers:     make(map[BookKey]*Ticker),
		Treasuries:  make(map[Mode]*Treasury),
		Quotes:      make(map[QuoteID]*Quote),
		Idempotency: make(map[IdempotencyScope]IdempotencyRecord),
		accountPool: make(map[AccountID]PoolID),
	}
	for _, m := range Modes {
		s.Treasuries[m] = NewTreasury(m)
		for _, p := range Pairs {
			s.Books[BookKey{m, p}] = NewBook(p)
			s.Tickers[BookKey{m, p}] = &Ticker{}
		}
	}
	return s
}

// Book returns the order book of (mode, pair), nil if unsupported.
func (s *State) Book(m Mode, p Pair) *Book { return s.Books[BookKey{m, p}] }

// PoolOfAccount returns the pool owning a liquidity or proceeds account.
func (s *State) PoolOfAccount(id AccountID) (*Pool, bool) {
	pid, ok := s.accountPool[id]
	if !ok {
		return nil, false
	}
	return s.Pools[pid], true
}

// Apply applies one event. It returns an error (never panics) when the event
// does not fit the state, which means a corrupt or foreign log.
func (s *State) Apply(ev Event) error {
	if err := s.apply(ev); err != nil {
		return fmt.Errorf("engine: cannot apply %s: %w", ev.Type(), err)
	}
	if key, ok := s.bookOf(ev); ok {
		s.Tickers[key].Observe(s.Books[key], ev.Time())
	}
	if ev.Time() > s.LastAt {
		s.LastAt = ev.Time()
	}
	return nil
}

func (s *State) apply(ev Event) error {
	switch ev := ev.(type) {
	case *ClientCreated:
		if _, dup := s.Clients[ev.Client]; dup {
			return fmt.Errorf("client %s exists", ev.Client)
		}
		s.Clients[ev.Client] = &Client{ID: ev.Client, Name: ev.Name, CreatedAt: ev.At, Wallets: ev.Wallets}
		for _, t := range s.Treasuries {
			t.ApplyClientCreated(ev)
		}
	case *KeyCreated:
		if _, ok := s.Clients[ev.Client]; !ok {
			return fmt.Errorf("unknown client %s", ev.Client)
		}
		s.Keys[ev.Key] = &Key{ID: ev.Key, Client: ev.Client, Mode: ev.Mode, Hash: ev.Hash, CreatedAt: ev.At}
	case *KeyRevoked:
		k, ok := s.Keys[ev.Key]
		if !ok {
			return fmt.Errorf("unknown key %s", ev.Key)
		}
		k.Revoked = true
	case *PoolCreated:
		if _, dup := s.Pools[ev.Pool]; dup {
			return fmt.Errorf("pool %s exists", ev.Pool)
		}
		b := s.Book(ev.Mode, ev.Pair)
		if b == nil {
			return fmt.Errorf("unsupported pair %s", ev.Pair)
		}
		p := NewPool(ev)
		s.Pools[p.ID] = p
		s.accountPool[ev.LiquidityAccount] = p.ID
		s.accountPool[ev.ProceedsAccount] = p.ID
		b.Upsert(p.BookEntry())
	case *PoolRateSet:
		p, err := s.pool(ev.Pool)
		if err != nil {
			return err
		}
		p.ApplyRateSet(ev)
		s.Book(p.Mode, p.Pair).SetRate(p.ID, p.Rate, p.RateSetAt)
	case *PoolStatusSet:
		p, err := s.pool(ev.Pool)
		if err != nil {
			return err
		}
		p.ApplyStatusSet(ev)
		s.Book(p.Mode, p.Pair).SetActive(p.ID, p.Active)
	case *PoolDeposited:
		p, err := s.pool(ev.Pool)
		if err != nil {
			return err
		}
		p.ApplyDeposit(ev.Amount)
		s.Book(p.Mode, p.Pair).AddAvailable(p.ID, ev.Amount)
	case *PoolWithdrawn:
		p, err := s.pool(ev.Pool)
		if err != nil {
			return err
		}
		if p.Withdraw(ev.Amount) != ResultOK {
			return fmt.Errorf("withdrawal over available liquidity")
		}
		p.ApplyWithdraw(ev.Amount)
		s.Book(p.Mode, p.Pair).AddAvailable(p.ID, -ev.Amount)
	case *AccountDeposited:
		for _, t := range s.Treasuries {
			if _, ok := t.Wallets[ev.Account]; ok {
				t.ApplyCredit(ev.Account, ev.Amount)
				return nil
			}
		}
		return fmt.Errorf("unknown wallet %s", ev.Account)
	case *QuoteCreated:
		if _, dup := s.Quotes[ev.Quote]; dup {
			return fmt.Errorf("quote %s exists", ev.Quote)
		}
		b := s.Book(ev.Mode, ev.Pair)
		for i := range ev.Allocations {
			a := &ev.Allocations[i]
			p, err := s.pool(a.Pool)
			if err != nil {
				return err
			}
			if a.Destination > p.Liquidity.Available() {
				return fmt.Errorf("allocation over available liquidity of pool %s", p.ID)
			}
		}
		for i := range ev.Allocations {
			a := &ev.Allocations[i]
			s.Pools[a.Pool].ApplyHold(a.Destination)
			b.AddAvailable(a.Pool, -a.Destination)
		}
		s.Quotes[ev.Quote] = NewQuote(ev)
		if ev.IdempotencyKey != "" {
			s.Idempotency[IdempotencyScope{ev.Client, ev.Mode, ev.IdempotencyKey}] =
				IdempotencyRecord{Quote: ev.Quote, RequestHash: ev.RequestHash, At: ev.At}
		}
	case *QuoteAccepted, *QuoteCancelled, *QuoteExpired, *QuoteCompleted:
		return s.applyLifecycle(ev)
	default:
		return fmt.Errorf("unknown event %T", ev)
	}
	return nil
}

// bookOf names the book an applied event changed, if any.
func (s *State) bookOf(ev Event) (BookKey, bool) {
	var pool PoolID
	switch ev := ev.(type) {
	case *PoolCreated:
		return BookKey{ev.Mode, ev.Pair}, true
	case *PoolRateSet:
		pool = ev.Pool
	case *PoolStatusSet:
		pool = ev.Pool
	case *PoolDeposited:
		pool = ev.Pool
	case *PoolWithdrawn:
		pool = ev.Pool
	case *QuoteCreated:
		return BookKey{ev.Mode, ev.Pair}, true
	case *QuoteCancelled, *QuoteExpired:
		q := s.Quotes[quoteOf(ev)]
		return BookKey{q.Mode, q.Pair}, true
	default:
		return BookKey{}, false
	}
	p := s.Pools[pool]
	return BookKey{p.Mode, p.Pair}, true
}

func (s *State) pool(id PoolID) (*Pool, error) {
	p, ok := s.Pools[id]
	if !ok {
		return nil, fmt.Errorf("unknown pool %s", id)
	}
	return p, nil
}

func quoteOf(ev Event) QuoteID {
	switch ev := ev.(type) {
	case *QuoteAccepted:
		return ev.Quote
	case *QuoteCancelled:
		return ev.Quote
	case *QuoteExpired:
		return ev.Quote
	case *QuoteCompleted:
		return ev.Quote
	}
	return QuoteID{}
}

func (s *State) applyLifecycle(ev Event) error {
	q, ok := s.Quotes[quoteOf(ev)]
	if !ok {
		return fmt.Errorf("unknown quote %s", quoteOf(ev))
	}
	if err := lifecycleFits(q, ev); err != nil {
		return err
	}
	release := q.Apply(ev)
	switch ev := ev.(type) {
	case *QuoteAccepted:
		ApplyAcceptedToPools(q, s.Pools)
	case *QuoteCompleted:
		ApplyCompletedToPools(q, s.Pools)
		if q.Settlement.Kind == SettlementWallet {
			t := s.Treasuries[q.Mode]
			if _, ok := t.Wallets[q.Settlement.Account]; !ok {
				return fmt.Errorf("unknown settlement wallet %s", q.Settlement.Account)
			}
			t.ApplyCredit(q.Settlement.Account, q.TotalDestination)
		}
		_ = ev
	}
	if release {
		b := s.Book(q.Mode, q.Pair)
		for i := range q.Allocations {
			a := &q.Allocations[i]
			s.Pools[a.Pool].ApplyRelease(a.Destination)
			b.AddAvailable(a.Pool, a.Destination)
		}
	}
	return nil
}

// lifecycleFits checks that ev is a transition q's status allows.
func lifecycleFits(q *Quote, ev Event) error {
	var from []Status
	switch ev.(type) {
	case *QuoteAccepted:
		from = AcceptAllowedFrom
	case *QuoteCancelled, *QuoteExpired:
		from = CancelAllowedFrom
	case *QuoteCompleted:
		from = CompleteAllowedFrom
	}
	if !slices.Contains(from, q.Status) {
		return fmt.Errorf("quote %s is %s", q.ID, q.Status)
	}
	return nil
}

// ApplyAcceptedToPools counts the acceptance on each pool holding a slice.
// Live, each pool actor applies its own part; see package actors.
func ApplyAcceptedToPools(q *Quote, pools map[PoolID]*Pool) {
	for i := range q.Allocations {
		pools[q.Allocations[i].Pool].ApplyAccepted()
	}
}

// ApplyCompletedToPools settles each slice on its pool.
func ApplyCompletedToPools(q *Quote, pools map[PoolID]*Pool) {
	for i := range q.Allocations {
		a := &q.Allocations[i]
		pools[a.Pool].ApplySettle(a.Source, a.Destination)
	}
}

// Expired returns the expiry events of every open quote whose deadline is
// at or before now, in quote id order (deterministic). Recovery applies them
// before serving.
func (s *State) Expired(now int64) []*QuoteExpired {
	var out []*QuoteExpired
	for _, q := range s.Quotes {
		if ev := q.ExpireIfDue(now); ev != nil {
			out = append(out, ev)
		}
	}
	slices.SortFunc(out, func(a, b *QuoteExpired) int { return bytes.Compare(a.Quote[:], b.Quote[:]) })
	return out
}

// CurrencySum is one currency's line of a ledger check.
type CurrencySum struct {
	Sum      Amount
	Accounts int
}

// LedgerReport is the result of a ledger check of one mode.
type LedgerReport struct {
	OK         bool
	Currencies map[Currency]CurrencySum
	Problems   []string
}

// LedgerCheck verifies contract §3 for mode m: per currency the balances of
// all accounts sum to zero; no non-clearing account has a negative balance
// or available balance.
func (s *State) LedgerCheck(m Mode) LedgerReport {
	var ledger LedgerAccumulator
	t := s.Treasuries[m]
	ledger.AddTreasury(t)
	for _, p := range s.Pools {
		if p.Mode == m {
			ledger.AddPool(p)
		}
	}
	return ledger.Report()
}

// LedgerAccumulator sums sub-ledgers into a LedgerReport. The actors feed it
// one consistent sub-ledger at a time.
type LedgerAccumulator struct {
	sums     [currencyCount]Amount
	accounts [currencyCount]int
	problems []string
}

func (l *LedgerAccumulator) checkAccount(a *Account) {
	l.accounts[a.Currency]++
	if a.Balance < 0 || a.Held < 0 || a.Held > a.Balance {
		l.problems = append(l.problems, fmt.Sprintf("account %s (%s %s): balance %d, held %d",
			a.ID, a.Kind, a.Currency, a.Balance, a.Held))
	}
}

// AddTreasury adds a treasury sub-ledger.
func (l *LedgerAccumulator) AddTreasury(t *Treasury) {
	t.LedgerSums(&l.sums)
	for _, a := range t.Wallets {
		l.checkAccount(a)
	}
	for _, c := range Currencies {
		l.accounts[c]++ // the clearing account
	}
}

// AddPool adds a pool sub-ledger.
func (l *LedgerAccumulator) AddPool(p *Pool) {
	p.LedgerSums(&l.sums)
	l.checkAccount(&p.Liquidity)
	l.checkAccount(&p.Proceeds)
	if p.Proceeds.Held != 0 {
		l.problems = append(l.problems, fmt.Sprintf("proceeds account %s has a hold", p.Proceeds.ID))
	}
}

// Report finishes the check.
func (l *LedgerAccumulator) Report() LedgerReport {
	r := LedgerReport{OK: true, Currencies: make(map[Currency]CurrencySum)}
	for _, c := range Currencies {
		r.Currencies[c] = CurrencySum{Sum: l.sums[c], Accounts: l.accounts[c]}
		if l.sums[c] != 0 {
			r.OK = false
			r.Problems = append(r.Problems, fmt.Sprintf("%s sums to %d, not 0", c, l.sums[c]))
		}
	}
	if len(l.problems) > 0 {
		r.OK = false
		r.Problems = append(r.Problems, l.problems...)
	}
	return r
}

// ClearingBalance is the balance of the clearing account of (m, c): the sum
// of its shards.
func (s *State) ClearingBalance(m Mode, c Currency) Amount {
	sum := s.Treasuries[m].Clearing[c]
	for _, p := range s.Pools {
		if p.Mode != m {
			continue
		}
		if p.Pair.Source == c {
			sum += p.ClearingSource
		}
		if p.Pair.Destination == c {
			sum += p.ClearingDestination
		}
	}
	return sum
}

// Hash is a digest of the whole state, equal for equal states whatever the
// order they were built in. Replay-equivalence tests compare it.
func (s *State) Hash() [32]byte {
	h := sha256.New()
	var buf []byte
	put := func(v ...any) {
		buf = buf[:0]
		for _, x := range v {
			switch x := x.(type) {
			case []byte:
				buf = binary.AppendUvarint(buf, uint64(len(x)))
				buf = append(buf, x...)
			case string:
				buf = binary.AppendUvarint(buf, uint64(len(x)))
				buf = append(buf, x...)
			case int64:
				buf = binary.AppendVarint(buf, x)
			case uint64:
				buf = binary.AppendUvarint(buf, x)
			case bool:
				buf = append(buf, boolByte(x))
			default:
				panic(fmt.Sprintf("engine: Hash: %T", x))
			}
		}
		h.Write(buf)
	}
	for _, id := range sortedKeys(s.Clients) {
		c := s.Clients[id]
		put(id[:], c.Name, c.CreatedAt)
	}
	for _, id := range sortedKeys(s.Keys) {
		k := s.Keys[id]
		put(id[:], k.Client[:], uint64(k.Mode), k.Hash[:], k.Revoked)
	}
	for _, id := range sortedKeys(s.Pools) {
		p := s.Pools[id]
		put(id[:], p.Name, uint64(p.Rate), p.RateSetAt, p.Active, int64(p.Liquidity.Balance),
			int64(p.Liquidity.Held), int64(p.Proceeds.Balance), int64(p.ClearingSource),
			int64(p.ClearingDestination), p.Accepted, p.Completed)
	}
	for _, m := range Modes {
		t := s.Treasuries[m]
		for _, id := range sortedKeys(t.Wallets) {
			a := t.Wallets[id]
			put(id[:], int64(a.Balance), int64(a.Held))
		}
		for _, c := range Currencies {
			put(int64(t.Clearing[c]))
		}
		for _, p := range Pairs {
			for _, e := range s.Book(m, p).Entries() {
				put(e.Pool[:], uint64(e.Rate), e.RateSetAt, e.Active, int64(e.Available))
			}
		}
	}
	for _, id := range sortedKeys(s.Quotes) {
		q := s.Quotes[id]
		put(id[:], uint64(q.Status), q.UpdatedAt, q.ExpiresAt, q.AcceptedAt, q.PoolAccount[:],
			uint64(q.Settlement.Kind), q.Settlement.Account[:], q.Settlement.Address,
			q.Settlement.AccountNumber)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func sortedKeys[K ~[16]byte, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int { return bytes.Compare(a[:], b[:]) })
	return keys
}
