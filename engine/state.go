package engine

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"

	"github.com/oja-exchange/oja/internal/prefault"
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
	Clients    map[ClientID]*Client
	Keys       map[KeyID]*Key
	Pools      map[PoolID]*Pool
	Books      map[BookKey]*Book
	Tickers    map[BookKey]*Ticker // consensus and best rates, with 24 h history
	Treasuries map[Mode]*Treasury
	Quotes     *QuoteIndex // by id (quoteindex.go)
	// Idempotency maps each Idempotency-Key to the quote it created (the
	// quote is the record: its RequestHash and CreatedAt).
	Idempotency *IdempotencyIndex
	Webhooks    map[WebhookID]*Webhook // endpoints and their outboxes (webhook.go)
	// Operators are the named operators; Audit the newest AuditKeptMax
	// lines of the audit trail, oldest first (operator.go).
	Operators map[OperatorID]*Operator
	Audit     []AuditEntry
	// Payments are the receipts, prefunds and payouts by identity, across
	// both modes, kept for ever (payments.go).
	Payments *Payments
	// Markets are the markets in force: DefaultMarkets until a MarketsSet.
	Markets *Markets
	// PayIns indexes the quotes' crypto pay-ins by address id; PayInNext
	// is each series' next derivation index (one above the highest ever
	// issued: it outlives the quotes, so an index is never reused).
	PayIns    map[AddressID]QuoteID
	PayInNext map[PayInSeries]uint32
	// Chains are the watched chains' cursors and unapplied deposits
	// (chain.go).
	Chains map[Chain]*ChainState
	// webhooksOf indexes Webhooks by client, in creation order.
	webhooksOf map[ClientID][]*Webhook
	// effects collects what Apply asks of the world outside the state
	// (effects.go), when collecting is on.
	effects                        Effects
	collectWebhooks, collectEvents bool
	// accountPool maps pool accounts to their pool.
	accountPool map[AccountID]PoolID
	// keys, while set (DeferKeyWrites), takes Apply's Idempotency writes.
	keys   *keyDeferral
	LastAt int64 // time of the last applied event
	// ForgottenBefore is the cutoff of the last ForgetEnded that dropped a
	// quote (0: none dropped): a tool comparing this state with a replay
	// of the log forgets the same quotes in the replay first.
	ForgottenBefore int64
	// quoteSlab is where allocQuote takes the next quote from: quotes are
	// allocated a slab at a time (quoteSlabLen). slabs are every slab allocated,
	// oldest first: QuotesInOrder reads the quotes through them, in
	// memory order, instead of following the map's pointers (a cache miss
	// a quote: with snapshot version 8's creation order it took the
	// actors' start after a snapshot of a million quotes from 2.5 s to
	// 0.95 s, ojabench's recovery section). A slot not yet used has a zero
	// Status; a quote ForgetEnded dropped is marked forgotten, and
	// ForgetEnded lets go of a slab once every quote of it is forgotten
	// (they were created together, so they end and age out together) and
	// the GC frees it.
	quoteSlab []Quote
	slabs     [][]Quote
	// outcome is the routing of the last quote event applied (reused
	// storage; the invariants build checks the pools it touched).
	outcome Outcome
	// bookCache holds books and their tickers by key, in front of Books
	// and Tickers: a quote event looked its book up four times, a Go map
	// lookup of a 3-byte key each (hashed by the generic hash, not a
	// fast path), some 0.1 CPU-s of a 1M-quote replay. A book, once
	// made, stays its key's (ensureBook only adds), so an entry never
	// goes stale.
	bookCache [8]bookSlot
}

type bookSlot struct {
	key    BookKey
	book   *Book
	ticker *Ticker
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
		Quotes:      NewQuoteIndex(0),
		Idempotency: NewIdempotencyIndex(0),
		Webhooks:    make(map[WebhookID]*Webhook),
		Operators:   make(map[OperatorID]*Operator),
		Payments:    NewPayments(),
		webhooksOf:  make(map[ClientID][]*Webhook),
		accountPool: make(map[AccountID]PoolID),
		Markets:     DefaultMarkets(),
		PayIns:      make(map[AddressID]QuoteID),
		PayInNext:   make(map[PayInSeries]uint32),
		Chains:      make(map[Chain]*ChainState),
	}
	for _, m := range Modes {
		s.Treasuries[m] = NewTreasury(m)
		for _, p := range s.Markets.Pairs {
			s.ensureBook(BookKey{m, p.Pair})
		}
	}
	return s
}

// Reserve sizes the quote indexes (Quotes, Idempotency) for about n
// quotes, if they are empty: a replay of a million quotes from the first
// record otherwise grows them a million entries at a time, rehashing every
// key at each doubling (a third of applying such a log). Indexes already
// holding quotes are left as they are.
func (s *State) Reserve(n int) {
	if s.Quotes.Len() == 0 {
		s.Quotes = NewQuoteIndex(n)
	}
	if s.Idempotency.Len() == 0 {
		s.Idempotency = NewIdempotencyIndex(n)
	}
}

// quoteSlabLen is how many quotes the first slab holds: one allocation
// instead of 512. A slab is a large object, a whole number of the
// runtime's 8 KiB pages, so its length makes it fill them: 512 quotes of
// 224 bytes are 14 pages exactly (TestQuoteSlabFillsItsPages). Each slab
// after it is twice the one before, up to quoteSlabMax quotes (some 0.9
// MiB): a load of a million quotes then maps in its pages a few hundred
// system calls at a time, while a state of a few quotes holds one small
// slab.
const (
	quoteSlabLen = 512
	quoteSlabMax = 8 * quoteSlabLen
)

// newQuote builds the pending quote ev created, from the slab.
func (s *State) newQuote(ev *QuoteCreated) *Quote {
	q := s.allocQuote()
	q.init(ev)
	return q
}

// allocQuote returns the next free slot of the slab, zero: every quote of
// a state is allocated here, so that QuotesInOrder finds it. The caller
// fills it and adds it to Quotes.
func (s *State) allocQuote() *Quote {
	if len(s.quoteSlab) == 0 {
		last := 0
		if len(s.slabs) > 0 {
			last = cap(s.slabs[len(s.slabs)-1])
		}
		s.quoteSlab = make([]Quote, grow(last, quoteSlabLen, quoteSlabMax))
		// Written whole by the loads that fill slabs (snapshot decode,
		// replay): its pages mapped in at once rather than a fault
		// each (Recover from ojabench's 1M snapshot: median 1.47 to 1.39 s,
		// ten runs each).
		prefault.Slice(s.quoteSlab)
		s.slabs = append(s.slabs, s.quoteSlab)
	}
	q := &s.quoteSlab[0]
	s.quoteSlab = s.quoteSlab[1:]
	return q
}

// held reports whether the slab slot q is one of the state's quotes: used
// (a quote's Status is never zero) and not forgotten.
func (q *Quote) held() bool { return q.Status != 0 && !q.forgotten }

// QuotesInOrder is every quote of Quotes, in the order they were
// allocated (a replay's: the log's; a decoded snapshot's: creation time),
// read from their slabs in memory order. Passes over a million quotes take
// it rather than ranging over Quotes. The caller must not change Quotes
// while it runs.
func (s *State) QuotesInOrder() iter.Seq[*Quote] {
	return func(yield func(*Quote) bool) {
		for _, slab := range s.slabs {
			for i := range slab {
				if q := &slab[i]; q.held() && !yield(q) {
					return
				}
			}
		}
	}
}

// Book returns the order book of (mode, pair), nil if unsupported.
func (s *State) Book(m Mode, p Pair) *Book { return s.book(BookKey{m, p}).book }

// book is key's book and ticker, found through bookCache. A key with no
// book is not cached: its slot says nothing (book nil).
func (s *State) book(key BookKey) bookSlot {
	c := &s.bookCache[(uint(key.Mode)*5+uint(key.Pair.Source)*3+uint(key.Pair.Destination))%uint(len(s.bookCache))]
	if c.book != nil && c.key == key {
		return *c
	}
	b := s.Books[key]
	if b == nil {
		return bookSlot{}
	}
	*c = bookSlot{key, b, s.Tickers[key]}
	return *c
}

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
		b := s.book(key)
		b.ticker.Observe(b.book, ev.Time())
	}
	if ev.Time() > s.LastAt {
		s.LastAt = ev.Time()
	}
	if InvariantsEnabled {
		s.checkInvariants(ev)
	}
	return nil
}

func (s *State) apply(ev Event) error {
	if err := s.check(ev); err != nil {
		return err
	}
	switch ev := ev.(type) {
	case *ClientCreated:
		s.Clients[ev.Client] = &Client{ID: ev.Client, Name: ev.Name, CreatedAt: ev.At, Wallets: ev.Wallets}
		for _, t := range s.Treasuries {
			t.ApplyClientCreated(ev)
		}
	case *KeyCreated:
		s.Keys[ev.Key] = &Key{ID: ev.Key, Client: ev.Client, Mode: ev.Mode, Hash: ev.Hash, CreatedAt: ev.At}
	case *KeyRevoked:
		s.Keys[ev.Key].Revoked = true
	case *KeysUsed:
		for _, u := range ev.Uses {
			k := s.Keys[u.Key]
			k.LastUsedAt = max(k.LastUsedAt, u.At)
		}
	case *KeyRolled:
		old := s.Keys[ev.Old]
		s.Keys[ev.Key] = &Key{ID: ev.Key, Client: old.Client, Mode: old.Mode, Hash: ev.Hash, CreatedAt: ev.At, RolledFrom: ev.Old}
		// NB: a log written before a key rolled once may roll one key
		// again; the last roll's expiry stands, as it did when written.
		old.ExpiresAt = ev.ExpiresAt
	case *PoolCreated:
		p := NewPool(ev)
		s.Pools[p.ID] = p
		s.accountPool[ev.LiquidityAccount] = p.ID
		s.accountPool[ev.ProceedsAccount] = p.ID
		s.Book(ev.Mode, ev.Pair).Upsert(p.BookEntry())
	case *PoolRateSet:
		p := s.Pools[ev.Pool]
		p.ApplyRateSet(ev)
		s.Book(p.Mode, p.Pair).SetRate(p.ID, p.Rate, p.RateSetAt)
	case *PoolStatusSet:
		p := s.Pools[ev.Pool]
		p.ApplyStatusSet(ev)
		s.Book(p.Mode, p.Pair).SetActive(p.ID, p.Active)
	case *PoolDeposited:
		p := s.Pools[ev.Pool]
		p.ApplyDeposit(ev.Amount)
		s.Book(p.Mode, p.Pair).AddAvailable(p.ID, ev.Amount)
	case *PoolWithdrawn:
		p := s.Pools[ev.Pool]
		p.ApplyWithdraw(ev.Amount)
		s.Book(p.Mode, p.Pair).AddAvailable(p.ID, -ev.Amount)
	case *PaymentReceived, *AccountDeposited, *AccountWithdrawn, *ReceiptReversed, *CreditLimitSet:
		s.applyFunds(ev)
	case *QuoteCreated:
		q := s.newQuote(ev)
		s.Quotes.Put(q)
		RouteOutcome(q, ev, &s.outcome)
		s.applyOutcome(&s.outcome)
		if !ev.IdempotencyKey.IsZero() {
			s.putKey(q)
		}
		s.owe(q, ev)
	case *QuoteAccepted, *QuoteCancelled, *QuoteExpired, *QuoteCompleted, *PayInSeen:
		s.applyLifecycle(ev)
	case *WebhookCreated, *WebhookDeleted, *WebhookSettled, *WebhookSecretRotated, *WebhookUpdated:
		s.applyWebhook(ev)
	case *MarketsSet:
		s.applyMarkets(ev)
	case *OperatorCreated, *OperatorRevoked, *OperatorActed:
		s.applyOperator(ev)
	case *ChainProgressed:
		s.applyChain(ev)
	case *ReceiptUnapplied, *UnappliedSettled:
		s.applySuspense(ev)
	}
	return nil
}

// check decides whether ev fits the state, without changing anything: after
// it returns nil, applying ev cannot fail or trip an assertion.
func (s *State) check(ev Event) error {
	switch ev := ev.(type) {
	case *OperatorCreated, *OperatorRevoked, *OperatorActed:
		return s.checkOperator(ev)
	case *ClientCreated, *KeyCreated, *KeyRevoked, *KeysUsed, *KeyRolled:
		return s.checkRegistry(ev)
	case *PoolCreated, *PoolRateSet, *PoolStatusSet, *PoolDeposited, *PoolWithdrawn:
		return s.checkPool(ev)
	case *QuoteCreated:
		return s.checkQuoteCreated(ev)
	case *QuoteAccepted, *QuoteCancelled, *QuoteExpired, *QuoteCompleted, *PayInSeen:
		return s.checkLifecycle(ev)
	case *PaymentReceived, *AccountDeposited, *AccountWithdrawn, *ReceiptReversed, *CreditLimitSet:
		return s.checkFunds(ev)
	case *WebhookCreated, *WebhookDeleted, *WebhookSettled, *WebhookSecretRotated, *WebhookUpdated:
		return s.checkWebhook(ev)
	case *MarketsSet:
		return s.checkMarkets(ev)
	case *ChainProgressed:
		return ev.Check()
	case *ReceiptUnapplied, *UnappliedSettled:
		return s.checkSuspense(ev)
	default:
		return fmt.Errorf("unknown event %T", ev)
	}
}

// checkRegistry is check for the events of clients and their keys.
func (s *State) checkRegistry(ev Event) error {
	switch ev := ev.(type) {
	case *ClientCreated:
		if _, dup := s.Clients[ev.Client]; dup || ev.Client.IsZero() {
			return fmt.Errorf("client %s exists or is zero", ev.Client)
		}
		seen := map[AccountID]bool{}
		for _, w := range ev.Wallets {
			if w.Account.IsZero() || seen[w.Account] || s.accountExists(w.Account) {
				return fmt.Errorf("wallet id %s is zero, repeated or in use", w.Account)
			}
			seen[w.Account] = true
		}
	case *KeyCreated:
		if _, ok := s.Clients[ev.Client]; !ok {
			return fmt.Errorf("unknown client %s", ev.Client)
		}
		if _, dup := s.Keys[ev.Key]; dup {
			return fmt.Errorf("key %s exists", ev.Key)
		}
	case *KeyRevoked:
		if _, ok := s.Keys[ev.Key]; !ok {
			return fmt.Errorf("unknown key %s", ev.Key)
		}
	case *KeysUsed:
		if len(ev.Uses) == 0 || len(ev.Uses) > KeysUsedMax {
			return fmt.Errorf("%d key uses, want 1 to %d", len(ev.Uses), KeysUsedMax)
		}
		for _, u := range ev.Uses {
			if _, ok := s.Keys[u.Key]; !ok || u.At <= 0 {
				return fmt.Errorf("use of unknown key %s, or at %d", u.Key, u.At)
			}
		}
	case *KeyRolled:
		old, ok := s.Keys[ev.Old]
		switch {
		case !ok:
			return fmt.Errorf("unknown key %s", ev.Old)
		case !old.Works(ev.At):
			return fmt.Errorf("key %s no longer works: it cannot be rolled", ev.Old)
		case ev.ExpiresAt < ev.At:
			return fmt.Errorf("key %s would expire before the roll", ev.Old)
		}
		if _, dup := s.Keys[ev.Key]; dup || ev.Key == ev.Old {
			return fmt.Errorf("key %s exists", ev.Key)
		}
	}
	return nil
}

// checkPool is check for a pool's events.
func (s *State) checkPool(ev Event) error {
	switch ev := ev.(type) {
	case *PoolCreated:
		if _, dup := s.Pools[ev.Pool]; dup || ev.Pool.IsZero() {
			return fmt.Errorf("pool %s exists or is zero", ev.Pool)
		}
		if s.Book(ev.Mode, ev.Pair) == nil {
			return fmt.Errorf("unsupported pair %s", ev.Pair)
		}
		if ev.Rate.IsZero() || RateMax.Less(ev.Rate) {
			return fmt.Errorf("rate %s out of range", AppendRate(nil, ev.Rate))
		}
		if ev.LiquidityAccount == ev.ProceedsAccount || ev.LiquidityAccount.IsZero() || ev.ProceedsAccount.IsZero() ||
			s.accountExists(ev.LiquidityAccount) || s.accountExists(ev.ProceedsAccount) {
			return fmt.Errorf("pool account ids are zero, equal or in use")
		}
		if _, ok := s.Clients[ev.Owner]; !ev.Owner.IsZero() && !ok {
			return fmt.Errorf("unknown owner %s", ev.Owner)
		}
	case *PoolRateSet:
		if _, err := s.pool(ev.Pool); err != nil {
			return err
		}
		if ev.Rate.IsZero() || RateMax.Less(ev.Rate) {
			return fmt.Errorf("rate %s out of range", AppendRate(nil, ev.Rate))
		}
	case *PoolStatusSet:
		_, err := s.pool(ev.Pool)
		return err
	case *PoolDeposited:
		p, err := s.pool(ev.Pool)
		if err != nil {
			return err
		}
		if !DepositFits(p.Liquidity.Balance, ev.Amount) {
			return fmt.Errorf("deposit of %d out of range", ev.Amount)
		}
	case *PoolWithdrawn:
		p, err := s.pool(ev.Pool)
		if err != nil {
			return err
		}
		if ev.Amount <= 0 || p.Withdraw(ev.Amount) != ResultOK {
			return fmt.Errorf("withdrawal of %d out of range or over available liquidity", ev.Amount)
		}
	}
	return nil
}

// Warm reads ahead what applying evs will read first: the slot of Quotes
// where each quote event's id is found or placed. A replay calls it for a
// batch of events before applying them (package actors). Apply would miss
// the cache at each such slot in turn, about 300 ns each at a million
// quotes on the development machine; here the reads are made in one tight
// loop, where the processor keeps many in flight at once. It changes
// nothing the state holds.
func (s *State) Warm(evs []Event) {
	for _, ev := range evs {
		if c, ok := ev.(*QuoteCreated); ok {
			s.Quotes.readAhead(c.Quote)
		} else if id := quoteOf(ev); !id.IsZero() {
			s.Quotes.readAhead(id)
		}
	}
	s.Quotes.warm()
}

func (s *State) checkQuoteCreated(ev *QuoteCreated) error {
	if s.Quotes.Get(ev.Quote) != nil || ev.Quote.IsZero() {
		return fmt.Errorf("quote %s exists or is zero", ev.Quote)
	}
	if _, ok := s.Clients[ev.Client]; !ok {
		return fmt.Errorf("unknown client %s", ev.Client)
	}
	if s.Book(ev.Mode, ev.Pair) == nil {
		return fmt.Errorf("unsupported pair %s", ev.Pair)
	}
	if len(ev.Allocations) == 0 || len(ev.Allocations) > SlicesMax || ev.Amount <= 0 || ev.ExpiresAt <= ev.At {
		return fmt.Errorf("malformed quote")
	}
	for i := range ev.Allocations {
		a := &ev.Allocations[i]
		p, err := s.pool(a.Pool)
		if err != nil {
			return err
		}
		if p.Mode != ev.Mode || p.Pair != ev.Pair || a.PoolAccount != p.Liquidity.ID {
			return fmt.Errorf("allocation names pool %s of another book or account", p.ID)
		}
		if a.Source <= 0 || a.Destination <= 0 || a.Source > AmountMax || a.Destination > AmountMax {
			return fmt.Errorf("allocation amounts out of range")
		}
		// What the slices so far hold of this pool (a few slices: a scan,
		// not a map allocated per quote).
		held := a.Destination
		for j := range i {
			if ev.Allocations[j].Pool == a.Pool {
				held += ev.Allocations[j].Destination
			}
		}
		if held > p.Liquidity.Available() {
			return fmt.Errorf("allocation over available liquidity of pool %s", p.ID)
		}
	}
	return nil
}

// walletTreasury finds the treasury holding a wallet.
func (s *State) walletTreasury(id AccountID) (*Treasury, bool) {
	for _, t := range s.Treasuries {
		if _, ok := t.Wallets[id]; ok {
			return t, true
		}
	}
	return nil, false
}

// accountExists reports whether id names any account.
func (s *State) accountExists(id AccountID) bool {
	if _, ok := s.accountPool[id]; ok {
		return true
	}
	if _, ok := s.walletTreasury(id); ok {
		return true
	}
	for _, m := range Modes {
		for _, c := range KnownCurrencies() {
			if id == ClearingAccountID(m, c) {
				return true
			}
		}
	}
	return false
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
		q := s.Quotes.Get(quoteOf(ev))
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
	case *PayInSeen:
		return ev.Quote
	}
	return QuoteID{}
}

func (s *State) checkLifecycle(ev Event) error {
	q := s.Quotes.Get(quoteOf(ev))
	if q == nil {
		return fmt.Errorf("unknown quote %s", quoteOf(ev))
	}
	if err := lifecycleFits(q, ev); err != nil {
		return err
	}
	if acc, ok := ev.(*QuoteAccepted); ok {
		if acc.PoolAccount != (AccountID{}) && !q.HasPoolAccount(acc.PoolAccount) {
			return fmt.Errorf("accept names account %s, not one of quote %s", acc.PoolAccount, q.ID)
		}
		var owned []WalletAccount
		if c, ok := s.Clients[q.Client]; ok {
			owned = c.Wallets
		}
		if p := CheckSettlement(q, acc.Settlement, owned); p != SettlementLegal {
			return fmt.Errorf("accept of quote %s with an illegal settlement (%s)", q.ID, p)
		}
		if acc.Settlement.Kind == SettlementWallet {
			if w, ok := s.Treasuries[q.Mode].Wallets[acc.Settlement.Account]; !ok || w.Currency != q.Pair.Destination {
				return fmt.Errorf("settlement wallet %s unknown or of another currency", acc.Settlement.Account)
			}
		}
		if acc.ExpiresAt <= acc.At {
			return fmt.Errorf("accept with a deadline before it")
		}
		if acc.PayIn != nil {
			return s.checkPayIn(q, acc.PayIn)
		}
	}
	if c, ok := ev.(*QuoteCompleted); ok && c.Funded() {
		return s.checkFunds(c)
	}
	return nil
}

// applyLifecycle applies a checked lifecycle event to the quote and routes
// its outcome to the pools, book and treasury (RouteOutcome).
func (s *State) applyLifecycle(ev Event) {
	q := s.Quotes.Get(quoteOf(ev))
	q.Apply(ev)
	if acc, ok := ev.(*QuoteAccepted); ok && acc.PayIn != nil {
		s.applyPayIn(q)
	}
	RouteOutcome(q, ev, &s.outcome)
	s.applyOutcome(&s.outcome)
	s.owe(q, ev)
}

// lifecycleFits checks that ev is a transition q's status allows.
func lifecycleFits(q *Quote, ev Event) error {
	switch ev := ev.(type) {
	case *PayInSeen:
		if res, decided := q.RecordPayIn(ev.Amount, ev.TxHash, ev.At); res != ResultOK || decided == nil {
			return fmt.Errorf("quote %s takes no deposit report (%s)", q.ID, res)
		}
		return nil
	}
	if t := transitionOf(ev); t == nil || !t.Allows(q.Status) {
		return fmt.Errorf("quote %s is %s", q.ID, q.Status)
	}
	return nil
}

// ForgetEnded drops every quote that ended (completed, cancelled or
// expired) before cutoff (unix ms), with the Idempotency-Key record that
// points at it, and the wallet postings and receipts older than cutoff
// (Treasury.Forget), and returns how many it dropped: what the running service
// forgets after --retention (actors.System.Maintain), so that a State kept
// for months — the log follower's, and the snapshots it saves — holds what
// the service holds instead of every quote ever made. The log keeps them
// (within its own retention). An ended quote takes no further event, so
// nothing later in the log needs a forgotten one.
func (s *State) ForgetEnded(cutoff int64) int {
	dropped := 0
	kept := s.slabs[:0]
	for i, slab := range s.slabs {
		live := 0
		for j := range slab {
			if q := &slab[j]; q.held() {
				if s.forget(q, cutoff) {
					dropped++
				} else {
					live++
				}
			}
		}
		// The last slab is kept: allocQuote may still be filling it.
		if live > 0 || i == len(s.slabs)-1 {
			kept = append(kept, slab)
		}
	}
	clear(s.slabs[len(kept):])
	s.slabs = kept
	for _, m := range Modes {
		n, _ := s.Treasuries[m].Forget(cutoff)
		dropped += n
	}
	if dropped > 0 {
		s.ForgottenBefore = max(s.ForgottenBefore, cutoff)
	}
	return dropped
}

// forget drops q from the state if it ended before cutoff, and reports
// whether it did.
func (s *State) forget(q *Quote, cutoff int64) bool {
	if !q.EndedBefore(cutoff) {
		return false
	}
	q.forgotten = true
	s.Quotes.Delete(q.ID)
	if q.PayIn != nil {
		delete(s.PayIns, q.PayIn.Address)
	}
	if !q.IdempotencyKey.IsZero() {
		s.forgetKey(q)
	}
	return true
}

// Expired returns the expiry events of every open quote whose deadline is
// at or before now, in quote id order (deterministic). Recovery applies them
// before serving.
func (s *State) Expired(now int64) []*QuoteExpired {
	var out []*QuoteExpired
	for q := range s.QuotesInOrder() {
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

// LedgerCheck verifies spec §3 for mode m: per currency the balances of
// all accounts sum to zero; no non-clearing account has a negative balance
// or available balance, but a wallet down to minus its credit limit.
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
	sums     [CurrenciesMax]Amount
	accounts [CurrenciesMax]int
	problems []string
}

// checkAccount checks one account: balance and available balance never
// below zero, except a wallet's, which may go down to minus its credit
// limit.
func (l *LedgerAccumulator) checkAccount(a *Account, credit Amount) {
	l.accounts[a.Currency]++
	if a.Balance < -credit || a.Held < 0 || a.Held > a.Balance+credit {
		l.problems = append(l.problems, fmt.Sprintf("account %s (%s %s): balance %d, held %d, credit %d",
			a.ID, a.Kind, a.Currency, a.Balance, a.Held, credit))
	}
}

// AddTreasury adds a treasury sub-ledger.
func (l *LedgerAccumulator) AddTreasury(t *Treasury) {
	t.LedgerSums(&l.sums)
	for _, a := range t.Wallets {
		l.checkAccount(a, t.Credit[a.ID])
	}
	for _, c := range KnownCurrencies() {
		l.accounts[c]++ // the clearing account
		if t.Suspense[c] < 0 {
			l.problems = append(l.problems, fmt.Sprintf("suspense %s %s below zero: %d", t.Mode, c, t.Suspense[c]))
		}
	}
}

// AddPool adds a pool sub-ledger.
func (l *LedgerAccumulator) AddPool(p *Pool) {
	p.LedgerSums(&l.sums)
	l.checkAccount(&p.Liquidity, 0)
	l.checkAccount(&p.Proceeds, 0)
	if p.Proceeds.Held != 0 {
		l.problems = append(l.problems, fmt.Sprintf("proceeds account %s has a hold", p.Proceeds.ID))
	}
}

// Report finishes the check.
func (l *LedgerAccumulator) Report() LedgerReport {
	r := LedgerReport{OK: true, Currencies: make(map[Currency]CurrencySum)}
	for _, c := range KnownCurrencies() {
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
		if p.Mode == m {
			sum += p.ClearingShard(c)
		}
	}
	return sum
}

// Hash is a digest of the whole state, equal for equal states whatever the
// order they were built in: the snapshot encoding (every entity, in id
// order) followed by the derived indexes that the encoding leaves out (book
// entries, idempotency records), so a derived index that drifted from its
// source changes the hash too. Replay-equivalence tests compare it, and
// replicas (oja wal verify, a cluster's GET /admin/v1/state). The encoding
// goes into the digest a section, or a block of quotes, at a time: it is
// never held whole.
func (s *State) Hash() [32]byte {
	h := sha256.New()
	x := stateEncoder{e: encoder{buf: make([]byte, 0, 1<<16)}, s: s, version: snapshotVersion,
		blockLen: quoteBlockLen, sink: h}
	h.Write(appendBookEntries(x.state(), s))
	hashIdempotency(h, s)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// appendBookEntries appends the entries of s's books, book by book in
// mode and pair order, as Hash digests them.
func appendBookEntries(buf []byte, s *State) []byte {
	keys := slices.SortedFunc(maps.Keys(s.Books), func(a, b BookKey) int {
		return cmp.Or(cmp.Compare(a.Mode, b.Mode), ComparePairs(a.Pair, b.Pair))
	})
	for _, key := range keys {
		for _, e := range s.Books[key].Entries() {
			buf = append(buf, e.Pool[:]...)
			buf = AppendRateUvarint(buf, e.Rate)
			buf = binary.AppendVarint(buf, e.RateSetAt)
			buf = append(buf, boolByte(e.Active))
			buf = binary.AppendVarint(buf, int64(e.Available))
		}
	}
	return buf
}

// hashIdempotency writes s's idempotency records to h in the order of
// their scopes' client, mode and key text. NB: the texts are written into
// one buffer, and the order compares integers first (the client's two
// halves, the mode, the text's first 8 bytes) and the texts only to break
// a tie: a string a key and byte-string comparisons were a quarter of
// the hash's CPU at a million quotes.
func hashIdempotency(h io.Writer, s *State) {
	type keyRecord struct {
		client0, client1 uint64 // the client's id, big-endian halves
		mode             Mode
		prefix           uint64 // the text's first 8 bytes, big-endian, zero-padded
		from, to         int    // the text, in texts
		rec              *Quote
	}
	records := make([]keyRecord, 0, s.Idempotency.Len())
	texts := make([]byte, 0, s.Idempotency.Len()*idemKeyUUIDLen)
	for scope, rec := range s.Idempotency.All() {
		from := len(texts)
		texts = scope.Key.AppendText(texts)
		var prefix [8]byte
		copy(prefix[:], texts[from:])
		records = append(records, keyRecord{binary.BigEndian.Uint64(scope.Client[:8]), binary.BigEndian.Uint64(scope.Client[8:]),
			scope.Mode, binary.BigEndian.Uint64(prefix[:]), from, len(texts), rec})
	}
	slices.SortFunc(records, func(a, b keyRecord) int {
		// cmp.Or evaluates every argument: the texts are compared apart,
		// only on a tie.
		if c := cmp.Or(cmp.Compare(a.client0, b.client0), cmp.Compare(a.client1, b.client1), cmp.Compare(a.mode, b.mode),
			cmp.Compare(a.prefix, b.prefix)); c != 0 {
			return c
		}
		return bytes.Compare(texts[a.from:a.to], texts[b.from:b.to])
	})
	buf := make([]byte, 0, 1<<16)
	for _, k := range records {
		text, rec := texts[k.from:k.to], k.rec
		buf = binary.BigEndian.AppendUint64(buf, k.client0)
		buf = binary.BigEndian.AppendUint64(buf, k.client1)
		buf = append(buf, byte(k.mode))
		buf = binary.AppendUvarint(buf, uint64(len(text)))
		buf = append(buf, text...)
		buf = append(buf, rec.ID[:]...)
		buf = append(buf, rec.RequestHash[:]...)
		buf = binary.AppendVarint(buf, rec.CreatedAt)
		if len(buf) >= 1<<16-256 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
}

func sortedKeys[K ~[16]byte, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int { return bytes.Compare(a[:], b[:]) })
	return keys
}
