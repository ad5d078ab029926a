package actors

import (
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
)

// readModels are what the actors publish for readers that do not message
// them — the gateway, the console, /metrics, maintenance: each entry is
// written by the actor that owns it (or by Start) and read lock-free or
// under a short lock. Nothing here decides an outcome.
type readModels struct {
	directory directory                                         // clients and API keys (auth.go)
	operators operatorDirectory                                 // named operators (operators.go)
	audit     auditTrail                                        // the audit trail kept (operators.go)
	webhooks  webhookDirectory                                  // webhook endpoints (webhooks.go)
	quotes    quoteRegistry                                     // every quote held (registry.go)
	listing   quoteIndex                                        // each client and mode's quotes in creation order (listing.go)
	pools     sync.Map                                          // engine.PoolID → *poolRef
	accounts  sync.Map                                          // engine.AccountID → *accountRef
	tickers   map[engine.BookKey]*atomic.Pointer[engine.Ticker] // map immutable after Start; views published by pair actors
	// quoteCounts[mode][status] counts the quotes in the registry.
	quoteCounts [engine.ModeSandbox + 1][engine.StatusExpired + 1]atomic.Int64
	// receipts are each quote's payments received, published by the
	// treasuries; references finds a quote by its bank reference (funds.go).
	receipts   receiptViews
	references referenceIndex
	unapplied  unappliedViews // money held in suspense (suspense.go)
	activity   activity       // quotes per minute by status, for the console (console.go)
	awaiting   awaitingIndex  // the quotes awaiting payment, for the console (console.go)
}

// quoteRef is the registry entry of one quote. view is the latest durable
// state, immutable, published by the quote's owner. pid is the quote's
// actor while it is active (see quoteActor: activated on demand), nil
// otherwise and once terminal. deadline is its slot on the expiry wheel.
//
// Whose quote it is, is read from the view (a quote's client and mode never
// change): a million refs are 32 bytes each, not 56.
type quoteRef struct {
	pid  atomic.Pointer[actor.PID]
	view atomic.Pointer[engine.Quote]
	// deadline is when the expiry wheel fires the quote (unix ms; 0:
	// disarmed). See expiryWheel.
	deadline atomic.Int64
}

// owner is the client and mode of the quote.
func (r *quoteRef) owner() (engine.ClientID, engine.Mode) {
	q := r.view.Load()
	return q.Client, q.Mode
}

// viewOf is the quote's view if it is client's in mode: one load serves
// both the check and the answer.
func (r *quoteRef) viewOf(client engine.ClientID, mode engine.Mode) (*engine.Quote, bool) {
	q := r.view.Load()
	return q, q.Client == client && q.Mode == mode
}

type poolRef struct {
	pool address[*poolActor]
	pair address[*pairActor]
	view atomic.Pointer[engine.Pool]
}

// accountRef is the registry entry of a wallet or pool account; view is
// published by the owning treasury or pool actor.
type accountRef struct {
	view atomic.Pointer[engine.Account]
}

func (s *readModels) quoteRef(id engine.QuoteID) (*quoteRef, bool) {
	return s.quotes.Load(id)
}

// Client returns a client by id.
func (s *readModels) Client(id engine.ClientID) (*engine.Client, bool) { return s.directory.client(id) }

// Quote returns the caller's quote. Another client's or mode's quote is
// not found, exactly like a missing one.
func (s *readModels) Quote(client engine.ClientID, mode engine.Mode, id engine.QuoteID) (*engine.Quote, bool) {
	ref, ok := s.quoteRef(id)
	if !ok {
		return nil, false
	}
	q, owned := ref.viewOf(client, mode)
	if !owned {
		return nil, false
	}
	return q, true
}

// AnyQuote returns a quote by id whatever its client and mode (an
// operator's look-up), while it is held: open, or terminal within the
// retention.
func (s *readModels) AnyQuote(id engine.QuoteID) (*engine.Quote, bool) {
	ref, ok := s.quoteRef(id)
	if !ok {
		return nil, false
	}
	return ref.view.Load(), true
}

// ClientKeys returns a client's API keys (never their secrets: only hashes
// are held), revoked ones included, oldest first.
func (s *readModels) ClientKeys(id engine.ClientID) []engine.Key { return s.directory.clientKeys(id) }

// Account returns an account's latest view.
func (s *readModels) Account(id engine.AccountID) (*engine.Account, bool) {
	v, ok := s.accounts.Load(id)
	if !ok {
		return nil, false
	}
	return v.(*accountRef).view.Load(), true
}

// ClientAccounts returns the client's accounts in mode m: its wallets, then
// the accounts of the pools it owns (spec §10).
func (s *readModels) ClientAccounts(client engine.ClientID, m engine.Mode) []*engine.Account {
	c, ok := s.Client(client)
	if !ok {
		return nil
	}
	var out []*engine.Account
	for _, w := range c.Wallets {
		if w.Mode != m {
			continue
		}
		if a, ok := s.Account(w.Account); ok {
			out = append(out, a)
		}
	}
	for _, p := range s.Pools(m) {
		if p.Owner == client {
			out = append(out, cloneAccount(&p.Liquidity), cloneAccount(&p.Proceeds))
		}
	}
	return out
}

// AccountOwnedBy reports whether the account belongs to the client in mode m.
func (s *readModels) AccountOwnedBy(a *engine.Account, client engine.ClientID, m engine.Mode) bool {
	if a.Mode != m {
		return false
	}
	switch a.Kind {
	case engine.AccountWallet:
		return engine.ClientID(a.Owner) == client
	case engine.AccountLiquidity, engine.AccountProceeds:
		p, ok := s.Pool(engine.PoolID(a.Owner))
		return ok && p.Owner == client && !client.IsZero()
	}
	return false
}

// Pool returns a pool's latest view.
func (s *readModels) Pool(id engine.PoolID) (*engine.Pool, bool) {
	v, ok := s.pools.Load(id)
	if !ok {
		return nil, false
	}
	return v.(*poolRef).view.Load(), true
}

// Pools returns the pools of mode m (ModeNone: all), in no particular order.
func (s *readModels) Pools(m engine.Mode) []*engine.Pool {
	var out []*engine.Pool
	s.pools.Range(func(_, v any) bool {
		p := v.(*poolRef).view.Load()
		if m == engine.ModeNone || p.Mode == m {
			out = append(out, p)
		}
		return true
	})
	return out
}

func cloneAccount(a *engine.Account) *engine.Account { c := *a; return &c }

// Ticker returns the latest rates of (mode, pair): consensus and best maker
// rate with their 24 h histories. nil for an unsupported pair.
func (s *readModels) Ticker(m engine.Mode, p engine.Pair) *engine.Ticker {
	v, ok := s.tickers[engine.BookKey{Mode: m, Pair: p}]
	if !ok {
		return nil
	}
	return v.Load()
}

// Clients returns every client.
func (s *readModels) Clients() []*engine.Client { return s.directory.allClients() }

// QuoteCounts counts the quotes held in memory by mode and status.
// Counts are kept as quotes are registered, move and are forgotten, so a
// scrape costs nothing however many quotes there are.
func (s *readModels) QuoteCounts() map[engine.Mode]map[engine.Status]int {
	out := map[engine.Mode]map[engine.Status]int{}
	for _, m := range engine.Modes {
		out[m] = map[engine.Status]int{}
		for _, st := range engine.Statuses {
			out[m][st] = int(s.quoteCounts[m][st].Load())
		}
	}
	return out
}

// moved tells the read models kept by status — the counts and the quotes
// awaiting payment — that ref's quote, of mode m, went from status from to
// status to (0: not held, before it is registered and once forgotten).
func (s *readModels) moved(ref *quoteRef, m engine.Mode, from, to engine.Status) {
	if from == to {
		return
	}
	s.awaiting.moved(ref, from, to)
	if from != 0 {
		s.quoteCounts[m][from].Add(-1)
	}
	if to != 0 {
		s.quoteCounts[m][to].Add(1)
	}
}
