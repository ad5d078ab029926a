package engine_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// FuzzCommandSequence decodes a byte string into a sequence of commands —
// clients, keys, pools (create, deposit, withdraw, rate, status), wallet
// deposits, quotes (create, accept, cancel, complete, expire) — each decided
// by the engine exactly as the actors decide it, and applies the resulting
// events to a State. After every step (world.apply → checkStateInvariants,
// plus the checks here):
//
//   - the ledger sums to zero per mode and currency, and the clearing
//     accounts hold minus everything else;
//   - 0 <= held <= balance on every account, and a pool's holds equal its
//     open quotes' slices (no over-allocation, no partial reservation);
//   - every book entry's available liquidity equals its pool's;
//   - a created quote fills its amount exactly;
//   - a terminal quote never changes again, and no decision on it makes an
//     event;
//   - a refused command changes nothing: the state hash is the same, and the
//     event a buggy caller would have made anyway (over-allocating, over-
//     withdrawing, moving a terminal quote) is refused by State.Apply
//     without changing anything either;
//   - funds first: in live mode no completion ever pays a destination before
//     the partner's source wallet holds the quote's total (or credit covers
//     it), nothing is simulated, and a completion the wallet cannot pay is
//     refused by State.Apply too; no wallet goes below minus its credit
//     limit, and a payout never uses credit.
//
// At the end, the events encoded, decoded and replayed into a fresh State
// give the same Hash, and so does a snapshot round trip.
func FuzzCommandSequence(f *testing.F) {
	for _, seed := range commandSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, program []byte) {
		if len(program) > commandProgramBytesMax {
			program = program[:commandProgramBytesMax]
		}
		runCommands(t, program)
	})
}

// TestCommandSequenceExercises guards the fuzz driver against proving
// nothing: the seed corpus, run as `go test` runs it, must reach every event
// type and refuse some misfit events.
func TestCommandSequenceExercises(t *testing.T) {
	seen := map[engine.EventType]int{}
	refusals := 0
	for _, seed := range commandSeeds() {
		r := runCommands(t, seed)
		for _, ev := range r.w.events {
			seen[ev.Type()]++
		}
		refusals += r.refusals
	}
	for typ := engine.EventClientCreated; typ <= engine.EventQuoteCompletedFunded; typ++ {
		switch typ {
		case engine.EventQuoteCompleted, engine.EventPayInSeen:
			continue // written only before funds first: TestGoldenLogBeforeFundsFirst
		case engine.EventPaymentReceived, engine.EventAccountWithdrawn:
			continue // written only before identities: the scenarios' legacy-pay, TestGoldenLogBeforeIdentities
		case engine.EventQuoteCancelledByOperator, engine.EventWebhookCreated, engine.EventWebhookDeleted,
			engine.EventWebhookSettled, engine.EventMarketsSet, engine.EventQuoteAcceptedWithPayIn:
			continue // not commands of this driver (state_test, webhook_test, markets_test)
		}
		if seen[typ] == 0 {
			t.Errorf("no %s in any seed's run", typ)
		}
	}
	for _, typ := range []engine.EventType{engine.EventPaymentIdentified, engine.EventAccountWithdrawnRef} {
		if seen[typ] == 0 {
			t.Errorf("no %s in any seed's run", typ)
		}
	}
	if refusals == 0 {
		t.Error("no misfit event was tried")
	}
	t.Logf("events %v, refusals %d", seen, refusals)
}

// Bounds on one fuzz input, so that each run stays fast: every step checks
// the whole state, so a run costs about steps × entities. Commands beyond a
// cap do nothing.
const (
	commandProgramBytesMax = 1024
	commandClientsMax      = 16
	commandKeysMax         = 32
	commandPoolsMax        = 32
)

// commandSeeds are the corpus every `go test` runs: hand-written programs
// for the interesting paths, and random ones from fixed seeds. Pool indexes
// 0-5 are the starting pools: live then sandbox, each NGN/USDT, GHS/USDT,
// NGN/GHS.
func commandSeeds() [][]byte {
	seeds := [][]byte{
		{},
		// A destination quote with an Idempotency-Key, accepted, completed;
		// the completion repeated; cancel and accept of the completed quote.
		{opCreateQuote, 0, 0, 0, 1, 49, 5, 1, 0, 1, opAccept, 0, 0, opComplete, 0, opComplete, 0,
			opCancel, 0, opAccept, 0, 0},
		// Two quotes: one cancelled, one left to expire; both touched after.
		{opCreateQuote, 1, 1, 1, 0, 99, 4, 0, 0, 0, opCreateQuote, 0, 1, 2, 1, 9, 6, 0, 0, 0,
			opCancel, 0, opAdvance, 255, 255, opAccept, 1, 0, opComplete, 1, opCancel, 0},
		// Drain a pool with one quote; withdrawing held liquidity and a second
		// quote are refused; cancel releases; then withdraw and deposit.
		{opCreateQuote, 0, 1, 0, 1, 99, 7, 0, 0, 0, opWithdraw, 3, 0, 0, opCreateQuote, 0, 1, 0, 1, 0, 0, 0, 0, 0,
			opCancel, 0, opWithdraw, 3, 99, 6, opDepositPool, 3, 9, 8},
		// A better pool, a suspended one, a rate change, a listing quote;
		// accepts naming another of its accounts, then a foreign one.
		{opNewPool, 1, 0, 4, opDepositPool, 6, 49, 6, opSetStatus, 3, 1, opSetRate, 3, 2,
			opCreateQuote, 0, 1, 0, 1, 9, 6, 4, 25, 0, opAccept, 0, 1, opAccept, 0, 2, opComplete, 0},
		// Funds first, live: a completion refused until a receipt covers
		// it; a credit line; a payout; a receipt's repeat and conflict.
		{opCreateQuote, 0, 0, 0, 0, 99, 5, 0, 0, 0, opAccept, 0, 0, opComplete, 0,
			opReceive, 0, 49, 5, 1, opComplete, 0, opReceive, 0, 99, 5, 2, opComplete, 0, opReceive, 0, 99, 5, 2,
			opReceive, 0, 98, 5, 2, opPayout, 0, 0, 0, 9, 4, opCredit, 0, 0, 0, 99, 9,
			opCreateQuote, 0, 0, 0, 0, 99, 5, 0, 0, 0, opAccept, 1, 0, opComplete, 1, opCredit, 0, 0, 0, 0, 0,
			opPayout, 0, 0, 0, 0, 0},
		// A new client with a key (then revoked), a wallet deposit, a bank
		// settlement (NGN/GHS) and a chain settlement (NGN/USDT, live).
		{opNewClient, opNewKey, 2, 1, opRevokeKey, 0, opDepositWallet, 2, 1, 0, 29, 4,
			opCreateQuote, 2, 1, 2, 1, 19, 3, 0, 0, 0, opAccept, 0, 3, opComplete, 0,
			opCreateQuote, 2, 0, 0, 1, 19, 3, 0, 0, 0, opAccept, 1, 3, opAdvance, 0, 200, opComplete, 1},
	}
	for i := range uint64(8) {
		seeds = append(seeds, randomProgram(rand.New(rand.NewPCG(i, 0xf022)), 120))
	}
	return seeds
}

// commandOperands is how many operand bytes each opcode reads.
var commandOperands = [opCount]int{
	opNewClient: 0, opNewKey: 2, opRevokeKey: 1, opNewPool: 3, opDepositPool: 3, opWithdraw: 3,
	opSetRate: 2, opSetStatus: 2, opDepositWallet: 5, opCreateQuote: 9, opAccept: 2, opCancel: 1,
	opComplete: 1, opAdvance: 2, opReceive: 4, opPayout: 5, opCredit: 5,
}

// randomProgram writes n commands, weighted towards quotes, with random
// operands (amounts biased to magnitudes that pools can fill).
func randomProgram(rng *rand.Rand, n int) []byte {
	weights := [opCount]int{opNewClient: 1, opNewKey: 1, opRevokeKey: 1, opNewPool: 2, opDepositPool: 3,
		opWithdraw: 2, opSetRate: 2, opSetStatus: 1, opDepositWallet: 1, opCreateQuote: 12, opAccept: 6,
		opCancel: 3, opComplete: 4, opAdvance: 1, opReceive: 4, opPayout: 1, opCredit: 1}
	total := 0
	for _, w := range weights {
		total += w
	}
	var out []byte
	for range n {
		op, x := 0, rng.IntN(total)
		for x >= weights[op] {
			x -= weights[op]
			op++
		}
		out = append(out, byte(op))
		for i := range commandOperands[op] {
			b := byte(rng.Uint32())
			if op == opCreateQuote && i == 5 || (op == opDepositPool || op == opWithdraw || op == opReceive) && i == 2 ||
				(op == opPayout || op == opCredit) && i == 4 {
				b = byte(rng.IntN(8)) // the amount's exponent
			}
			out = append(out, b)
		}
	}
	return out
}

// The commands of a program. Each opcode byte is followed by its operands;
// a program that runs out of bytes reads zeros.
const (
	opNewClient     = iota // -
	opNewKey               // client, mode
	opRevokeKey            // key
	opNewPool              // mode, pair, rate
	opDepositPool          // pool, amount (2 bytes)
	opWithdraw             // pool, amount (2 bytes)
	opSetRate              // pool, rate
	opSetStatus            // pool, active
	opDepositWallet        // client, mode, currency, amount (2 bytes)
	opCreateQuote          // client, mode, pair, direction, amount (2 bytes), rate, listing, idempotency key
	opAccept               // quote, settlement
	opCancel               // quote
	opComplete             // quote
	opAdvance              // milliseconds (2 bytes, scaled), then expire what is due
	opReceive              // quote, amount (2 bytes), bank transaction id
	opPayout               // client, mode, currency, amount (2 bytes)
	opCredit               // client, mode, currency, limit (2 bytes)
	opCount
)

// commandRates are the rates a program chooses from, per pair: the pools'
// and the partners' alike, so that quotes sometimes fill and sometimes not.
var commandRates = map[engine.Pair][]string{
	pairNGNUSDT: {"0.000625", "0.00062", "0.000631", "0.0006125", "0.00063"},
	pairGHSUSDT: {"0.08", "0.0795", "0.081", "0.0805"},
	pairNGNGHS:  {"0.0095", "0.0094", "0.00951", "0.0096"},
}

// program reads operands from the bytes of a fuzz input.
type program struct{ b []byte }

func (p *program) next() byte {
	if len(p.b) == 0 {
		return 0
	}
	c := p.b[0]
	p.b = p.b[1:]
	return c
}

func (p *program) done() bool { return len(p.b) == 0 }

// pick returns an index below n (n > 0).
func (p *program) pick(n int) int { return int(p.next()) % n }

// amount reads a positive amount spread over many magnitudes: a mantissa
// of 1..256 times 10^0..10^9.
func (p *program) amount() engine.Amount {
	mantissa := engine.Amount(p.next()) + 1
	for range p.next() % 10 {
		mantissa *= 10
	}
	return mantissa
}

// commandRun is the state of one program's run.
type commandRun struct {
	t        *testing.T
	w        *world
	clients  []engine.ClientID
	keys     []engine.KeyID
	pools    []*engine.Pool
	quotes   []*engine.Quote
	terminal map[engine.QuoteID]engine.Quote // a copy of each quote when it turned terminal
	refusals int                             // events State.Apply refused, as it must
}

func runCommands(t *testing.T, code []byte) *commandRun { return runCommandsWith(t, code, nil, nil) }

// runCommandsWith is runCommands calling begin, when set, before the
// program runs, and mid, when set, once half of it has run.
func runCommandsWith(t *testing.T, code []byte, begin, mid func(*commandRun)) *commandRun {
	r := &commandRun{t: t, w: newWorld(t), terminal: make(map[engine.QuoteID]engine.Quote)}
	w := r.w
	// A market to start from, so that short programs already trade.
	for i := range 2 {
		r.clients = append(r.clients, w.createClient(fmt.Sprintf("c%d", i)).Client)
	}
	for _, m := range engine.Modes {
		for _, pair := range engine.DefaultMarkets().PairList() {
			p := w.createPool(m, pair, fmt.Sprintf("%s-%s-0", m, pair), decimalRate(t, commandRates[pair][0]))
			w.deposit(p, 1_000_000_000)
			r.pools = append(r.pools, p)
		}
	}
	if begin != nil {
		begin(r)
	}
	p := &program{b: code}
	for !p.done() {
		if mid != nil && len(p.b) <= len(code)/2 {
			mid(r)
			mid = nil
		}
		w.now += 1000
		r.step(p)
		r.checkTerminal()
	}
	r.checkReplay()
	return r
}

func (r *commandRun) step(p *program) {
	t, w := r.t, r.w
	switch op := int(p.next() % opCount); op {
	case opNewClient:
		if len(r.clients) == commandClientsMax {
			return
		}
		r.clients = append(r.clients, w.createClient(fmt.Sprintf("c%d", len(r.clients))).Client)
	case opNewKey:
		client, mode := r.clients[p.pick(len(r.clients))], engine.Modes[p.pick(2)]
		if len(r.keys) == commandKeysMax {
			return
		}
		key := engine.KeyID(w.newID())
		w.apply(&engine.KeyCreated{At: w.now, Key: key, Client: client, Mode: mode, Hash: sha256.Sum256(key[:])})
		r.keys = append(r.keys, key)
	case opRevokeKey:
		if len(r.keys) > 0 {
			w.apply(&engine.KeyRevoked{At: w.now, Key: r.keys[p.pick(len(r.keys))]})
		}
	case opNewPool:
		pairs := engine.DefaultMarkets().PairList()
		m, pair := engine.Modes[p.pick(2)], pairs[p.pick(len(pairs))]
		rates := commandRates[pair]
		rate := decimalRate(t, rates[p.pick(len(rates))])
		if len(r.pools) == commandPoolsMax {
			return
		}
		r.pools = append(r.pools, w.createPool(m, pair, fmt.Sprintf("%s-%s-%d", m, pair, len(r.pools)), rate))
	case opDepositPool:
		pool, amount := r.pools[p.pick(len(r.pools))], p.amount()
		if pool.Liquidity.Balance > engine.AmountMax-amount {
			r.refused(&engine.PoolDeposited{At: w.now, Pool: pool.ID, Amount: amount})
			return
		}
		w.deposit(pool, amount)
	case opWithdraw:
		pool, amount := r.pools[p.pick(len(r.pools))], p.amount()
		if res := w.withdraw(pool, amount); res != engine.ResultOK {
			if res != engine.ResultInsufficientFunds || amount <= pool.Liquidity.Available() {
				t.Fatalf("withdraw %d of available %d: %s", amount, pool.Liquidity.Available(), res)
			}
			r.refused(&engine.PoolWithdrawn{At: w.now, Pool: pool.ID, Amount: amount})
		}
	case opSetRate:
		pool := r.pools[p.pick(len(r.pools))]
		rates := commandRates[pool.Pair]
		w.apply(&engine.PoolRateSet{At: w.now, Pool: pool.ID, Rate: decimalRate(t, rates[p.pick(len(rates))])})
	case opSetStatus:
		pool := r.pools[p.pick(len(r.pools))]
		w.apply(&engine.PoolStatusSet{At: w.now, Pool: pool.ID, Active: p.next()%2 == 0})
	case opDepositWallet:
		client, m, c := r.clients[p.pick(len(r.clients))], engine.Modes[p.pick(2)], engine.DefaultMarkets().CurrencyList()[p.pick(3)]
		w.apply(&engine.AccountDeposited{At: w.now, Account: w.wallet(client, m, c).ID, Amount: p.amount()})
	case opCreateQuote:
		r.createQuote(p)
	case opAccept, opCancel, opComplete:
		if len(r.quotes) == 0 {
			return
		}
		r.transition(op, r.quotes[p.pick(len(r.quotes))], p)
	case opAdvance:
		w.now += (int64(p.next())<<8 | int64(p.next())) * 100
		w.expireDue()
	case opReceive:
		if len(r.quotes) == 0 {
			return
		}
		q, amount := r.quotes[p.pick(len(r.quotes))], p.amount()
		n := p.next()
		spelled := spellings[int(n>>3)%len(spellings)](fmt.Sprintf("BTX-%d", n%8))
		id, err := engine.InboundIdentity(q.Pair.Source, spelled)
		if err != nil {
			t.Fatalf("%q: %v", spelled, err)
		}
		before := w.state.Hash()
		res, ev, prior := w.state.Treasuries[q.Mode].DecideReceipt(w.state.Payments,
			q, engine.ReceiptRequest{Method: engine.ReceiptBank, Identity: id, Amount: amount}, w.now)
		if ev == nil {
			if after := w.state.Hash(); after != before {
				t.Fatalf("a receipt decided %s without an event changed the state", res)
			}
			if prior == nil && res != engine.ResultAmountOutOfRange {
				t.Fatalf("receipt %q refused as %s with no prior payment", spelled, res)
			}
			if prior != nil && prior.Identity != id {
				t.Fatalf("receipt %q refused for payment %v", spelled, prior.Identity)
			}
			// The same identity credited twice is refused by replay too,
			// in whichever spelling.
			r.refused(&engine.PaymentReceived{At: w.now, Method: engine.ReceiptBank, Quote: q.ID,
				Account: w.wallet(q.Client, q.Mode, q.Pair.Source).ID, Amount: amount, Reference: id.Text(), Identity: id})
			return
		}
		w.apply(ev)
		r.checkIdentities()
	case opPayout, opCredit:
		client, m, c := r.clients[p.pick(len(r.clients))], engine.Modes[p.pick(2)], engine.DefaultMarkets().CurrencyList()[p.pick(3)]
		amount := p.amount()
		wallet := w.wallet(client, m, c)
		t2 := w.state.Treasuries[m]
		if op == opPayout {
			n := p.next()
			ref, _ := engine.OutboundIdentity(c, spellings[int(n>>3)%len(spellings)](fmt.Sprintf("PAYOUT-%d", n%4)))
			res, ev, prior := t2.DecideWithdrawal(w.state.Payments, engine.MoneyRequest{Account: wallet.ID, Amount: amount, Reference: ref}, nil, w.now)
			if ev == nil {
				if res == engine.ResultInsufficientFunds && amount <= wallet.Available() {
					t.Fatalf("payout of %d from available %d refused", amount, wallet.Available())
				}
				if res == engine.ResultOK && prior == nil {
					t.Fatal("a payout decided OK with neither an event nor a prior payout")
				}
				r.refused(&engine.AccountWithdrawn{At: w.now, Account: wallet.ID, Amount: amount, Reference: ref})
				return
			}
			w.apply(ev)
			r.checkIdentities()
			if wallet.Balance < 0 {
				t.Fatalf("a payout took wallet %s to %d: credit is never paid out", wallet.ID, wallet.Balance)
			}
			return
		}
		if amount%3 == 0 {
			amount = 0 // remove the line
		}
		res, ev := t2.DecideCreditLimit(wallet.ID, amount, nil, w.now)
		if ev == nil {
			if res != engine.ResultCreditInUse || wallet.Available() >= -amount {
				t.Fatalf("credit limit %d on available %d refused as %s", amount, wallet.Available(), res)
			}
			r.refused(&engine.CreditLimitSet{At: w.now, Account: wallet.ID, Limit: amount})
			return
		}
		w.apply(ev)
	}
}

// createQuote allocates with the book, as the pair actor does, and records
// the quote when it fills; a refusal must leave the book able to refuse an
// over-allocating event too.
func (r *commandRun) createQuote(p *program) {
	t, w := r.t, r.w
	// Operands in the order of the opcode comment.
	req := quoteRequest{client: r.clients[p.pick(len(r.clients))]}
	req.mode = engine.Modes[p.pick(2)]
	pairs := engine.DefaultMarkets().PairList()
	req.pair = pairs[p.pick(len(pairs))]
	req.direction = engine.DirectionSource
	if p.next()%2 == 1 {
		req.direction = engine.DirectionDestination
	}
	req.amount = p.amount()
	rates := commandRates[req.pair]
	req.rate = decimalRate(t, rates[p.pick(len(rates))])
	if listing := p.next(); listing%4 == 1 {
		req.listing = r.pools[int(listing/4)%len(r.pools)].ID
	}
	idempotencyKey := ""
	if k := p.next(); k%3 == 1 {
		idempotencyKey = fmt.Sprintf("key-%d", k)
	}
	before := w.state.Hash()
	book := w.state.Book(req.mode, req.pair)
	out := book.Allocate(engine.AllocationRequest{Direction: req.direction, Amount: req.amount,
		MinRate: req.rate, Only: req.listing}, nil)
	if out.Result != engine.ResultOK {
		if len(out.Slices) != 0 || out.TotalSource != 0 || out.TotalDestination != 0 {
			t.Fatalf("refused allocation (%s) returned slices %+v", out.Result, out)
		}
		if after := w.state.Hash(); after != before {
			t.Fatalf("a refused allocation (%s) changed the state", out.Result)
		}
		// The walk could not fill the amount: a QuoteCreated that takes it
		// anyway from the best eligible pool over-allocates and is refused.
		for _, e := range book.Entries() {
			if e.Active && !e.Rate.Less(req.rate) && (req.listing.IsZero() || e.Pool == req.listing) {
				r.refused(r.quoteEvent(req, []engine.Slice{{Pool: e.Pool, Rate: e.Rate, Source: 1,
					Destination: e.Available + 1}}, ""))
				break
			}
		}
		return
	}
	ev := r.quoteEvent(req, out.Slices, idempotencyKey)
	w.apply(ev)
	q := w.state.Quotes.Get(ev.Quote)
	switch {
	case req.direction == engine.DirectionSource && q.TotalSource() != req.amount:
		t.Fatalf("source quote of %d filled %d", req.amount, q.TotalSource())
	case req.direction == engine.DirectionDestination && q.TotalDestination() != req.amount:
		t.Fatalf("destination quote of %d filled %d", req.amount, q.TotalDestination())
	case q.Status != engine.StatusPending:
		t.Fatalf("new quote is %s", q.Status)
	}
	r.quotes = append(r.quotes, q)
	// The same QuoteCreated again (a duplicate record) is refused.
	r.refused(ev)
}

// quoteEvent is the QuoteCreated recording slices, as the pair actor makes it.
func (r *commandRun) quoteEvent(req quoteRequest, slices []engine.Slice, idempotencyKey string) *engine.QuoteCreated {
	w := r.w
	ev := &engine.QuoteCreated{At: w.now, Quote: engine.QuoteID(w.newID()), Client: req.client, Mode: req.mode,
		Pair: req.pair, Direction: req.direction, Amount: req.amount, ProposedRate: req.rate,
		Chain: engine.DefaultMarkets().DefaultChain(req.pair.Destination), Reference: engine.MustRef(fmt.Sprintf("OJA-%08d", w.serial)),
		ExpiresAt: w.now + worldQuoteTTLMillis, IdempotencyKey: engine.MakeIdemKey(idempotencyKey),
		RequestHash: sha256.Sum256([]byte(idempotencyKey))}
	if !req.listing.IsZero() {
		ev.Chat = &engine.Chat{ConversationID: "conv", ListingID: req.listing.String()}
	}
	for _, s := range slices {
		p := w.state.Pools[s.Pool]
		ev.Allocations = append(ev.Allocations, engine.Allocation{ID: engine.AllocationID(w.newID()), Pool: s.Pool,
			PoolAccount: p.Liquidity.ID, PoolName: p.Name, Rate: s.Rate, Source: s.Source,
			Destination: s.Destination, Reference: engine.MustRef(fmt.Sprintf("ALC-%010d", w.serial))})
	}
	return ev
}

// transition decides accept, cancel or complete on q as the quote actor
// does (expiring it first when due) and applies the event, if any.
func (r *commandRun) transition(op int, q *engine.Quote, p *program) {
	t, w := r.t, r.w
	if ev := q.ExpireIfDue(w.now); ev != nil {
		w.apply(ev)
	}
	wasTerminal := !q.Status.Open()
	before := w.state.Hash()
	var res engine.Result
	var ev engine.Event
	switch op {
	case opAccept:
		cmd := w.walletAccept(q)
		switch p.next() % 4 {
		case 1: // another pool account of the quote, when it has several
			cmd.PoolAccount = q.Allocations()[len(q.Allocations())-1].PoolAccount
		case 2: // an account that is not one of the quote's
			cmd.PoolAccount = engine.AccountID(w.newID())
		case 3: // an XML accept: settlement only
			cmd = engine.AcceptQuote{Settlement: engine.Settlement{Kind: engine.SettlementBank,
				AccountName: "Ada", AccountNumber: "0123456789", BankCode: "058"}}
			if q.Pair.Destination.IsToken() {
				cmd.Settlement = engine.Settlement{Kind: engine.SettlementChain, Address: "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW"}
			}
		}
		var accepted *engine.QuoteAccepted
		res, accepted = q.Accept(cmd, w.now, worldPaymentWindowMillis)
		if accepted != nil {
			ev = accepted
		}
		if res == engine.ResultInvalidAccount && (!cmd.NamesPoolAccount || q.HasPoolAccount(cmd.PoolAccount)) {
			t.Fatalf("accept naming one of the quote's accounts refused as %s", res)
		}
	case opCancel:
		var cancelled *engine.QuoteCancelled
		if res, cancelled = q.Cancel(w.now); cancelled != nil {
			ev = cancelled
		}
	case opComplete:
		// Funds first, as the treasury decides it.
		t2 := w.state.Treasuries[q.Mode]
		var completed *engine.QuoteCompleted
		var f engine.Funding
		if res, completed, f = t2.CompleteFunded(q, nil, w.now); completed != nil {
			ev = completed
			wallet := f.Wallet
			switch {
			case q.Mode == engine.ModeLive && (completed.Simulated != 0 || wallet.Available()+t2.CreditLimit(wallet.ID) < q.TotalSource()):
				t.Fatalf("live completion of %d from a wallet with %d and credit %d (simulated %d)",
					q.TotalSource(), wallet.Available(), t2.CreditLimit(wallet.ID), completed.Simulated)
			case q.Mode == engine.ModeSandbox && wallet.Available()+t2.CreditLimit(wallet.ID)+completed.Simulated != max(q.TotalSource(),
				wallet.Available()+t2.CreditLimit(wallet.ID)):
				t.Fatalf("sandbox completion simulated %d for %d from %d", completed.Simulated, q.TotalSource(), wallet.Available())
			}
		} else if res == engine.ResultInsufficientFunds {
			if q.Mode != engine.ModeLive || f.Spendable() >= q.TotalSource() {
				t.Fatalf("completion refused for funds: mode %s, spendable %d, required %d", q.Mode, f.Spendable(), q.TotalSource())
			}
			// What a buggy caller would log anyway is refused: the
			// destination is never paid before the source money is there.
			r.refused(&engine.QuoteCompleted{At: w.now, Quote: q.ID, Wallet: f.Wallet.ID})
		}
	}
	if wasTerminal && ev != nil {
		t.Fatalf("a %s quote decided %s", q.Status, ev.Type())
	}
	if ev == nil {
		if res != engine.ResultOK && res != engine.ResultInvalidState && res != engine.ResultInvalidAccount && res != engine.ResultInsufficientFunds {
			t.Fatalf("transition %d of a %s quote: %s", op, q.Status, res)
		}
		if after := w.state.Hash(); after != before {
			t.Fatalf("transition %d of a %s quote made no event but changed the state", op, q.Status)
		}
		if wasTerminal {
			// What a buggy caller might log anyway is refused.
			r.refused(&engine.QuoteCancelled{At: w.now, Quote: q.ID})
			r.refused(&engine.QuoteCompleted{At: w.now, Quote: q.ID})
		}
		return
	}
	if res != engine.ResultOK {
		t.Fatalf("transition %d decided %s with result %s", op, ev.Type(), res)
	}
	w.apply(ev)
}

// refused applies an event that does not fit the state: State.Apply must
// return an error and leave the state exactly as it was.
// spellings are the ways a person or a file writes one reference: each
// must name the same identity (engine/identity.go).
var spellings = []func(string) string{
	func(s string) string { return s },
	strings.ToLower,
	func(s string) string { return "  " + s + "\t" },
	func(s string) string { return strings.ReplaceAll(s, "-", "\u2010") },                  // hyphen
	func(s string) string { return strings.ReplaceAll(s, "-", "\u2014") },                  // em dash
	func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "b", "\uff42") }, // fullwidth b
	func(s string) string { return strings.ReplaceAll(s, "X", "\u0445") },                  // not a spelling: Cyrillic
}

// checkIdentities fails if an identity was recorded twice: no receipt or
// payout, in any spelling, counts twice.
func (r *commandRun) checkIdentities() {
	r.t.Helper()
	seen := map[engine.Identity]bool{}
	for p := range r.w.state.Payments.All() {
		if seen[p.Identity] {
			r.t.Fatalf("identity %s recorded twice", p.Identity)
		}
		seen[p.Identity] = true
	}
	if d := r.w.state.Payments.Duplicates(); len(d) != 0 {
		r.t.Fatalf("duplicates %v", d)
	}
}

func (r *commandRun) refused(ev engine.Event) {
	r.t.Helper()
	before := r.w.state.Hash()
	if err := r.w.state.Apply(ev); err == nil {
		r.t.Fatalf("State.Apply took a %s that does not fit: %+v", ev.Type(), ev)
	}
	if after := r.w.state.Hash(); after != before {
		r.t.Fatalf("a refused %s changed the state", ev.Type())
	}
	r.refusals++
}

// checkTerminal fails if a quote that was terminal has changed since, and
// records the quotes that turned terminal.
func (r *commandRun) checkTerminal() {
	for _, q := range r.quotes {
		if q.Status.Open() {
			continue
		}
		was, seen := r.terminal[q.ID]
		if !seen {
			r.terminal[q.ID] = *q
			continue
		}
		if q.Status != was.Status || q.UpdatedAt != was.UpdatedAt || q.ExpiresAt != was.ExpiresAt ||
			q.Accepted != was.Accepted {
			r.t.Fatalf("terminal quote %s changed: was %+v, now %+v", q.ID, was, *q)
		}
	}
}

// checkReplay replays the run's events, encoded and decoded, into a fresh
// State, and round-trips the state through a snapshot: both must hash equal
// to the live state.
func (r *commandRun) checkReplay() {
	t, w := r.t, r.w
	replayed := engine.NewState()
	for i, ev := range w.events {
		rec := engine.AppendEvent(nil, ev)
		decoded, err := engine.DecodeEvent(rec)
		if err != nil {
			t.Fatalf("decode event %d (%s): %v", i, ev.Type(), err)
		}
		if again := engine.AppendEvent(nil, decoded); !bytes.Equal(again, rec) {
			t.Fatalf("event %d (%s) re-encodes differently", i, ev.Type())
		}
		if err := replayed.Apply(decoded); err != nil {
			t.Fatalf("replay event %d (%s): %v", i, ev.Type(), err)
		}
	}
	if got, want := replayed.Hash(), w.state.Hash(); got != want {
		t.Fatalf("replayed state hash %x, want %x", got, want)
	}
	if got, want := replayed.LastAt, w.state.LastAt; got != want {
		t.Fatalf("replayed LastAt %d, want %d", got, want)
	}
	snapshot, err := engine.DecodeState(engine.EncodeState(w.state))
	if err != nil {
		t.Fatalf("snapshot round trip: %v", err)
	}
	if got, want := snapshot.Hash(), w.state.Hash(); got != want {
		t.Fatalf("snapshot state hash %x, want %x", got, want)
	}
}
