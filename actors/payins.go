package actors

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/engine/hd"
)

// payIns issues crypto pay-ins (engine/payin.go) and finds them by address
// id. A quote actor accepting a token-source quote takes the series' next
// derivation index here — an atomic counter per (token, chain), started
// from State.PayInNext, so concurrent acceptances never share one — and
// derives the address before the acceptance is logged. An index taken by
// an acceptance whose append fails is skipped, never reused.
type payIns struct {
	keys map[engine.PayInSeries]*hd.Key        // immutable after Start
	next map[engine.PayInSeries]*atomic.Uint32 // immutable map after Start
	byID sync.Map                              // engine.AddressID → engine.QuoteID
	// byDeposit finds a pay-in by its chain address: depositKey →
	// engine.AddressID (the chain watcher's lookup).
	byDeposit sync.Map
}

// depositKey is a chain address as pay-ins carry it (PayIn.Deposit).
type depositKey struct {
	chain   engine.Chain
	address string
}

// put indexes an issued pay-in of quote.
func (p *payIns) put(in *engine.PayIn, quote engine.QuoteID) {
	p.byID.Store(in.Address, quote)
	p.byDeposit.Store(depositKey{in.Chain, in.Deposit}, in.Address)
}

// init parses the markets' deposit keys and takes the next indexes and
// the issued pay-ins from state.
func (p *payIns) init(state *engine.State) error {
	p.keys = make(map[engine.PayInSeries]*hd.Key)
	p.next = make(map[engine.PayInSeries]*atomic.Uint32)
	for c, byChain := range state.Markets.DepositKeys {
		for chain, text := range byChain {
			k, err := hd.ParseKey(text)
			if err != nil {
				return fmt.Errorf("actors: deposit key of %s on %s: %w", c, chain, err)
			}
			series := engine.PayInSeries{Currency: c, Chain: chain}
			p.keys[series] = k
			p.next[series] = new(atomic.Uint32)
		}
	}
	for series, next := range state.PayInNext {
		if p.next[series] == nil {
			p.next[series] = new(atomic.Uint32)
		}
		p.next[series].Store(next)
	}
	for id, quote := range state.PayIns {
		if q := state.Quotes.Get(quote); q != nil && q.PayIn != nil {
			p.put(q.PayIn, quote)
		} else {
			p.byID.Store(id, quote)
		}
	}
	return nil
}

// issue makes q's pay-in, accepted at: nil when q's source is not a token
// or the markets hold no deposit key for its chain (no address to give).
func (p *payIns) issue(q *engine.Quote, at int64, ids *IDSource) (*engine.PayIn, error) {
	series := engine.PayInSeries{Currency: q.Pair.Source, Chain: q.Chain}
	key := p.keys[series] // deposit keys exist for tokens only
	if key == nil {
		return nil, nil
	}
	for {
		index := p.next[series].Add(1) - 1
		if index > hd.IndexMax {
			return nil, fmt.Errorf("actors: the %s deposit addresses on %s are used up (2^31)", series.Currency, series.Chain)
		}
		address, err := key.Address(series.Chain.String(), index)
		if err != nil {
			continue // an index BIP32 cannot derive (one in 2^127): the next
		}
		return &engine.PayIn{Address: engine.AddressID(ids.UUID()), Deposit: address, Currency: series.Currency,
			Chain: series.Chain, Index: index, CreatedAt: at}, nil
	}
}

// quoteOf finds the quote a pay-in address id belongs to.
func (p *payIns) quoteOf(id engine.AddressID) (engine.QuoteID, bool) {
	v, ok := p.byID.Load(id)
	if !ok {
		return engine.QuoteID{}, false
	}
	return v.(engine.QuoteID), true
}

// DepositPayIn finds the pay-in whose chain address is deposit (as
// engine.DepositAddress writes it).
func (s *System) DepositPayIn(ch engine.Chain, deposit string) (engine.AddressID, bool) {
	v, ok := s.payIns.byDeposit.Load(depositKey{ch, deposit})
	if !ok {
		return engine.AddressID{}, false
	}
	return v.(engine.AddressID), true
}

// PayInQuote returns the quote a pay-in address was issued to, while it is
// held.
func (s *System) PayInQuote(id engine.AddressID) (*engine.Quote, bool) {
	quote, ok := s.payIns.quoteOf(id)
	if !ok {
		return nil, false
	}
	return s.AnyQuote(quote)
}
