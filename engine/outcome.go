package engine

// Routing a quote's outcome (etcd-io/raft's Ready is the model): a durable
// quote event changes the quote and, through it, state owned by others —
// the pools holding its slices, its pair's book, the treasury of a wallet it
// pays or (a funded completion) debits. RouteOutcome says what each owner must do, as data; each owner
// applies its own part with one method (Pool.ApplySliceEffect,
// Book.ApplyOutcome, Treasury.ApplyCredit, Treasury.ApplyDebit). State.Apply (replay, the
// tools, the invariants build) and the live actors (each actor its own
// part, forwarded by the system) use the same route, so the two cannot
// disagree about where money goes.

// SliceEffectKind is what a quote outcome does to one slice's pool.
type SliceEffectKind uint8

const (
	SliceHold     SliceEffectKind = iota + 1 // created: the slice's destination is held
	SliceAccepted                            // accepted: counted on the pool
	SliceSettle                              // completed: the hold is consumed and the money moves
	SliceRelease                             // cancelled or expired: the hold is given back
)

// SliceEffect is one pool's part of a quote outcome.
type SliceEffect struct {
	Pool        PoolID
	Kind        SliceEffectKind
	Source      Amount // SliceSettle: the slice's source, to proceeds
	Destination Amount // the slice's destination: held, settled or released
}

// WalletCredit is a completion's payout to the partner's wallet.
type WalletCredit struct {
	Mode      Mode
	Account   AccountID
	Amount    Amount
	Quote     QuoteID
	Reference string // the quote's reference, for the statement
	At        int64
}

// WalletDebit is a funded completion's spending from the partner's source
// wallet (wallet → clearing), after a simulated pay-in of Simulated
// (sandbox) — see funds.go.
type WalletDebit struct {
	Mode      Mode
	Account   AccountID
	Amount    Amount // the quote's total source amount
	Simulated Amount
	Quote     QuoteID
	Reference string
	At        int64
}

// Outcome is one durable quote event routed to the owners it affects.
type Outcome struct {
	Slices []SliceEffect // one per allocation, in allocation order
	// Book is the quote's book; BookDelta is added to each slice's pool's
	// available liquidity there (negative on create, positive on release,
	// zero otherwise).
	Book      BookKey
	BookDelta int8
	Credit    *WalletCredit // a completion settled to a wallet, else nil
	Debit     *WalletDebit  // a funded completion's spending, else nil
	// Key is the API key that created the quote; KeyDelta is +1 when the
	// quote starts reserving Reserved (its total destination) and -1 when
	// it stops (released or settled), 0 otherwise. The live pair actor
	// keeps each key's exposure with it (--max-key-share); State has no
	// use for it.
	Key      KeyID
	KeyDelta int8
	Reserved Amount
}

// RouteOutcome routes ev, a QuoteCreated or a lifecycle event of quote q
// (q as it is once ev is applied), into o, reusing o's storage. A
// PayInSeen is the quote's own: its outcome is empty.
func RouteOutcome(q *Quote, ev Event, o *Outcome) {
	*o = Outcome{Slices: o.Slices[:0], Book: BookKey{Mode: q.Mode, Pair: q.Pair}, Key: q.Key, Reserved: q.TotalDestination()}
	var kind SliceEffectKind
	switch ev := ev.(type) {
	case *PayInSeen:
		return
	case *QuoteCreated:
		kind, o.BookDelta, o.KeyDelta = SliceHold, -1, +1
	case *QuoteAccepted:
		kind = SliceAccepted
	case *QuoteCompleted:
		kind, o.KeyDelta = SliceSettle, -1
		if st := q.SettlementOrZero(); st.Kind == SettlementWallet {
			o.Credit = &WalletCredit{Mode: q.Mode, Account: st.Account, Amount: q.TotalDestination(),
				Quote: q.ID, Reference: q.Reference.String(), At: ev.At}
		}
		if ev.Funded() {
			o.Debit = &WalletDebit{Mode: q.Mode, Account: ev.Wallet, Amount: q.TotalSource(), Simulated: ev.Simulated,
				Quote: q.ID, Reference: q.Reference.String(), At: ev.At}
		}
	case *QuoteCancelled, *QuoteExpired:
		kind, o.BookDelta, o.KeyDelta = SliceRelease, +1, -1
	default:
		assert(false, "no outcome route for %T", ev)
	}
	as := q.Allocations()
	for i := range as {
		a := &as[i]
		o.Slices = append(o.Slices, SliceEffect{Pool: a.Pool, Kind: kind, Source: a.Source, Destination: a.Destination})
	}
}

// ApplySliceEffect applies this pool's part of a quote outcome.
func (p *Pool) ApplySliceEffect(e SliceEffect) {
	switch e.Kind {
	case SliceHold:
		p.ApplyHold(e.Destination)
	case SliceAccepted:
		p.ApplyAccepted()
	case SliceSettle:
		p.ApplySettle(e.Source, e.Destination)
	case SliceRelease:
		p.ApplyRelease(e.Destination)
	default:
		assert(false, "pool %s: unknown slice effect %d", p.ID, e.Kind)
	}
}

// ApplyOutcome applies the book's part of a quote outcome: each slice's
// destination taken from (create) or given back to (release) its pool's
// available liquidity.
func (b *Book) ApplyOutcome(o *Outcome) {
	if o.BookDelta == 0 {
		return
	}
	for _, e := range o.Slices {
		b.AddAvailable(e.Pool, Amount(o.BookDelta)*e.Destination)
	}
}

// applyOutcome applies every owner's part of o to the state.
func (s *State) applyOutcome(o *Outcome) {
	for _, e := range o.Slices {
		s.Pools[e.Pool].ApplySliceEffect(e)
	}
	s.book(o.Book).book.ApplyOutcome(o)
	if d := o.Debit; d != nil {
		s.Treasuries[d.Mode].ApplyDebit(d)
	}
	if c := o.Credit; c != nil {
		s.Treasuries[c.Mode].ApplyCredit(c)
	}
}
