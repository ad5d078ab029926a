package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/oja-exchange/oja/engine"
)

// TestScenarios runs the scripts in testdata/scenarios/*.txt
// (cockroachdb/datadriven files) against a State driven by the engine's own
// decisions (see world), checking every ledger invariant after every event.
// A case is one command line, a "----" line and the expected output; cases
// are separated by blank lines and '#' lines are comments:
//
//	deposit lagos 100
//	----
//	pool lagos: sandbox NGN/USDT rate 0.000625 active, balance 100 held 0 available 100, proceeds 0, trades 0/0
//
// Commands (amounts and rates as decimal text, durations as Go durations):
//
//	client NAME                        fund CLIENT MODE CURRENCY AMOUNT
//	pool NAME MODE PAIR RATE           deposit POOL AMOUNT
//	withdraw POOL AMOUNT               rate POOL RATE
//	suspend POOL                       activate POOL
//	quote NAME CLIENT MODE PAIR source|destination AMOUNT RATE [listing=POOL]
//	accept QUOTE [account=POOL|foreign] [bank]
//	complete QUOTE                     cancel QUOTE
//	tick DURATION                      expire
//	pools                              quotes
//	wallets CLIENT MODE                ledger
//
// Funds first (funds.go); complete above is a completion logged before it
// (nothing debited), settle the one the service makes now:
//
//	settle QUOTE                       pay QUOTE bank|crypto AMOUNT REFERENCE
//	payout CLIENT MODE CURRENCY AMOUNT REFERENCE
//	credit CLIENT MODE CURRENCY LIMIT  statement CLIENT MODE CURRENCY
//
// The identity of money (identity.go, payments.go): a REFERENCE is the
// rest of the line, as typed; legacy-pay records a receipt as it was
// recorded before identities (the reference as typed, no identity):
//
//	prefund CLIENT MODE CURRENCY AMOUNT REFERENCE
//	legacy-pay QUOTE bank|crypto AMOUNT REFERENCE
//	reverse RECEIPT_ID [REASON]        duplicates
//
// Operators and keys (operator.go, client.go):
//
//	operator NAME                      revoke-operator NAME
//	key CLIENT MODE NAME               roll KEY NEWKEY DURATION
//
// Run with -rewrite (datadriven's flag) to regenerate the expected output;
// review it as a diff.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		s := newScenario(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return s.run(d.FullCmd())
		})
	})
}

// scenario is a world with names.
type scenario struct {
	t       *testing.T
	w       *world
	clients map[string]engine.ClientID
	pools   map[string]*engine.Pool
	quotes  map[string]*engine.Quote
	keys    map[string]engine.KeyID
	names   map[[16]byte]string
}

func newScenario(t *testing.T) *scenario {
	return &scenario{t: t, w: newWorld(t), clients: make(map[string]engine.ClientID),
		pools: make(map[string]*engine.Pool), quotes: make(map[string]*engine.Quote), keys: make(map[string]engine.KeyID),
		names: make(map[[16]byte]string)}
}

func (s *scenario) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf(format, args...)
}

func (s *scenario) client(name string) engine.ClientID {
	c, ok := s.clients[name]
	if !ok {
		s.fatalf("unknown client %q", name)
	}
	return c
}

func (s *scenario) pool(name string) *engine.Pool {
	p, ok := s.pools[name]
	if !ok {
		s.fatalf("unknown pool %q", name)
	}
	return p
}

func (s *scenario) quote(name string) *engine.Quote {
	q, ok := s.quotes[name]
	if !ok {
		s.fatalf("unknown quote %q", name)
	}
	return q
}

func (s *scenario) mode(text string) engine.Mode {
	m, ok := engine.ParseMode(text)
	if !ok {
		s.fatalf("bad mode %q", text)
	}
	return m
}

func (s *scenario) pair(text string) engine.Pair {
	src, dst, ok := strings.Cut(text, "/")
	a, ok1 := engine.ParseCurrency(src)
	b, ok2 := engine.ParseCurrency(dst)
	if !ok || !ok1 || !ok2 {
		s.fatalf("bad pair %q", text)
	}
	return engine.Pair{Source: a, Destination: b}
}

func (s *scenario) currency(text string) engine.Currency {
	c, ok := engine.ParseCurrency(text)
	if !ok {
		s.fatalf("bad currency %q", text)
	}
	return c
}

func amountText(a engine.Amount, c engine.Currency) string {
	return string(engine.AppendAmount(nil, a, c))
}
func rateText(r engine.Rate) string { return string(engine.AppendRate(nil, r)) }

func (s *scenario) poolLine(p *engine.Pool) string {
	status := "active"
	if !p.Active {
		status = "suspended"
	}
	e, _ := s.w.state.Book(p.Mode, p.Pair).Entry(p.ID)
	d, src := p.Pair.Destination, p.Pair.Source
	return fmt.Sprintf("pool %s: %s %s rate %s %s, balance %s held %s available %s, proceeds %s, trades %d/%d",
		p.Name, p.Mode, p.Pair, rateText(p.Rate), status, amountText(p.Liquidity.Balance, d),
		amountText(p.Liquidity.Held, d), amountText(e.Available, d), amountText(p.Proceeds.Balance, src),
		p.Completed, p.Accepted)
}

func (s *scenario) quoteLines(q *engine.Quote) string {
	var b strings.Builder
	amountCurrency := q.Pair.Source
	if q.Direction == engine.DirectionDestination {
		amountCurrency = q.Pair.Destination
	}
	fmt.Fprintf(&b, "quote %s: %s, %s %s %s, pays %s %s gets %s %s at %s, ttl %ds",
		s.names[q.ID], q.Status, q.Direction, amountText(q.Amount, amountCurrency), amountCurrency,
		amountText(q.TotalSource(), q.Pair.Source), q.Pair.Source, amountText(q.TotalDestination(), q.Pair.Destination),
		q.Pair.Destination, rateText(q.WeightedAverageRate()), q.SecondsLeft(s.w.now))
	if q.SettlementOrZero().Kind != engine.SettlementNone {
		fmt.Fprintf(&b, ", settles to %s", q.SettlementOrZero().Kind)
	}
	for _, a := range q.Allocations() {
		fmt.Fprintf(&b, "\n  slice %s: %s %s -> %s %s at %s", a.PoolName, amountText(a.Source, q.Pair.Source), q.Pair.Source,
			amountText(a.Destination, q.Pair.Destination), q.Pair.Destination, rateText(a.Rate))
	}
	return b.String()
}

// quotePools lists the pool lines of q's slices.
func (s *scenario) quotePools(q *engine.Quote) string {
	var lines []string
	for _, a := range q.Allocations() {
		lines = append(lines, s.poolLine(s.w.state.Pools[a.Pool]))
	}
	return strings.Join(lines, "\n")
}

func (s *scenario) walletLines(client engine.ClientID, m engine.Mode) string {
	var lines []string
	for _, a := range s.w.state.Treasuries[m].ClientWallets(client) {
		lines = append(lines, fmt.Sprintf("wallet %s %s %s: balance %s available %s", s.names[client], m, a.Currency,
			amountText(a.Balance, a.Currency), amountText(a.Available(), a.Currency)))
	}
	return strings.Join(lines, "\n")
}

func (s *scenario) sortedPools() []*engine.Pool {
	var out []*engine.Pool
	for _, p := range s.pools {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *engine.Pool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// transition prints a lifecycle decision and its consequences.
func (s *scenario) transition(op string, q *engine.Quote, res engine.Result, made bool, allowed []engine.Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s", op, s.names[q.ID], res)
	switch {
	case res == engine.ResultInvalidState:
		fmt.Fprintf(&b, " (%s; allowed from %v)", q.Status, allowed)
	case res == engine.ResultOK && !made:
		b.WriteString(" (repeat, no event)")
	}
	if made {
		fmt.Fprintf(&b, "\n%s\n%s", s.quoteLines(q), s.quotePools(q))
	}
	return b.String()
}

func (s *scenario) run(line string) string {
	s.t.Helper()
	fields := strings.Fields(line)
	args := fields[1:]
	need := func(n int) {
		if len(args) < n {
			s.fatalf("%q: want %d arguments", line, n)
		}
	}
	w := s.w
	switch fields[0] {
	case "client":
		need(1)
		ev := w.createClient(args[0])
		s.clients[args[0]], s.names[ev.Client] = ev.Client, args[0]
		return fmt.Sprintf("client %s: %d wallets", args[0], len(ev.Wallets))
	case "pool":
		need(4)
		p := w.createPool(s.mode(args[1]), s.pair(args[2]), args[0], decimalRate(s.t, args[3]))
		s.pools[args[0]], s.names[p.ID] = p, args[0]
		return s.poolLine(p)
	case "deposit", "withdraw":
		need(2)
		p := s.pool(args[0])
		amount := decimalAmount(s.t, args[1], p.Pair.Destination)
		if fields[0] == "deposit" {
			w.deposit(p, amount)
		} else if res := w.withdraw(p, amount); res != engine.ResultOK {
			return fmt.Sprintf("withdraw %s: %s\n%s", p.Name, res, s.poolLine(p))
		}
		return s.poolLine(p)
	case "rate":
		need(2)
		p := s.pool(args[0])
		w.apply(&engine.PoolRateSet{At: w.now, Pool: p.ID, Rate: decimalRate(s.t, args[1])})
		return s.poolLine(p)
	case "suspend", "activate":
		need(1)
		p := s.pool(args[0])
		w.apply(&engine.PoolStatusSet{At: w.now, Pool: p.ID, Active: fields[0] == "activate"})
		return s.poolLine(p)
	case "fund":
		need(4)
		c, m, cur := s.client(args[0]), s.mode(args[1]), s.currency(args[2])
		w.apply(&engine.AccountDeposited{At: w.now, Account: w.wallet(c, m, cur).ID, Amount: decimalAmount(s.t, args[3], cur)})
		return s.walletLines(c, m)
	case "quote":
		need(7)
		req := quoteRequest{client: s.client(args[1]), mode: s.mode(args[2]), pair: s.pair(args[3]),
			rate: decimalRate(s.t, args[6])}
		amountCurrency := req.pair.Source
		switch args[4] {
		case "source":
			req.direction = engine.DirectionSource
		case "destination":
			req.direction, amountCurrency = engine.DirectionDestination, req.pair.Destination
		default:
			s.fatalf("bad direction %q", args[4])
		}
		req.amount = decimalAmount(s.t, args[5], amountCurrency)
		for _, opt := range args[7:] {
			if name, ok := strings.CutPrefix(opt, "listing="); ok {
				req.listing = s.pool(name).ID
			} else {
				s.fatalf("bad option %q", opt)
			}
		}
		out, q := w.createQuote(req)
		if q == nil {
			text := fmt.Sprintf("quote %s: %s", args[0], out.Result)
			if out.Result == engine.ResultInsufficientLiquidity {
				text += fmt.Sprintf(" fillable %s %s", amountText(out.Fillable, amountCurrency), amountCurrency)
			}
			if out.HasBestRate {
				text += " best rate " + rateText(out.BestRate)
			}
			return text
		}
		s.quotes[args[0]], s.names[q.ID] = q, args[0]
		return s.quoteLines(q) + "\n" + s.quotePools(q)
	case "accept":
		need(1)
		q := s.quote(args[0])
		cmd := w.walletAccept(q)
		for _, opt := range args[1:] {
			switch {
			case opt == "bank":
				cmd = engine.AcceptQuote{Settlement: engine.Settlement{Kind: engine.SettlementBank,
					AccountName: "Ada Obi", AccountNumber: "0123456789", BankCode: "058"}}
			case opt == "account=foreign":
				cmd.PoolAccount = engine.AccountID(idOf("foreign account"))
			case strings.HasPrefix(opt, "account="):
				cmd.PoolAccount = s.pool(strings.TrimPrefix(opt, "account=")).Liquidity.ID
			default:
				s.fatalf("bad option %q", opt)
			}
		}
		res, ev := q.Accept(cmd, w.now, worldPaymentWindowMillis)
		if ev != nil {
			w.apply(ev)
		}
		return s.transition("accept", q, res, ev != nil, engine.Accepting.From)
	case "complete":
		need(1)
		q := s.quote(args[0])
		res, ev := q.Complete(w.now)
		if ev != nil {
			w.apply(ev)
		}
		text := s.transition("complete", q, res, ev != nil, engine.Completing.From)
		if ev != nil && q.SettlementOrZero().Kind == engine.SettlementWallet {
			text += "\n" + s.walletLines(q.Client, q.Mode)
		}
		return text
	case "settle":
		need(1)
		q := s.quote(args[0])
		t := w.state.Treasuries[q.Mode]
		res, ev, f := t.CompleteFunded(q, nil, w.now)
		if ev != nil {
			w.apply(ev)
		}
		text := s.transition("settle", q, res, ev != nil, engine.Completing.From)
		switch {
		case res == engine.ResultInsufficientFunds:
			text += fmt.Sprintf(" (required %s, available %s, credit %s)", amountText(f.Required, q.Pair.Source),
				amountText(f.Available, q.Pair.Source), amountText(f.Credit, q.Pair.Source))
		case ev != nil && ev.Simulated > 0:
			text += fmt.Sprintf("\nsimulated pay-in %s %s", amountText(ev.Simulated, q.Pair.Source), q.Pair.Source)
		}
		if ev != nil {
			text += "\n" + s.walletLines(q.Client, q.Mode)
		}
		return text
	case "pay", "legacy-pay":
		need(4)
		q := s.quote(args[0])
		req := engine.ReceiptRequest{Method: engine.ReceiptBank, Amount: decimalAmount(s.t, args[2], q.Pair.Source)}
		reference := strings.Join(args[3:], " ")
		var err error
		if args[1] == "crypto" {
			req.Method = engine.ReceiptCrypto
			chain := engine.ChainTron
			if q.PayIn != nil {
				req.Address, chain = q.PayIn.Address, q.PayIn.Chain
			}
			var hash string
			if hash, err = engine.CanonicalTxHash(reference); err == nil {
				req.Identity = engine.ChainIdentity(chain, hash, 0)
			}
		} else {
			req.Identity, err = engine.InboundIdentity(q.Pair.Source, reference)
		}
		if err != nil {
			return fmt.Sprintf("pay %s: %v", args[0], err)
		}
		t := w.state.Treasuries[q.Mode]
		if fields[0] == "legacy-pay" { // as recorded before identities: the reference as typed
			w.apply(&engine.PaymentReceived{At: w.now, Method: req.Method, Quote: q.ID, Address: req.Address, Amount: req.Amount,
				Account: w.wallet(q.Client, q.Mode, q.Pair.Source).ID, Reference: reference})
			return fmt.Sprintf("legacy-pay %s: receipt %s\n%s", args[0], engine.ReceiptID{Mode: q.Mode, Seq: t.PostingSeq}, s.walletLines(q.Client, q.Mode))
		}
		res, ev, prior := t.DecideReceipt(w.state.Payments, q, req, w.now)
		if ev == nil {
			text := fmt.Sprintf("pay %s: %s (no event)", args[0], res)
			if prior != nil {
				text += fmt.Sprintf(", first recorded as %s (%s %s)", prior.ReceiptID(), prior.Identity, amountText(prior.Amount, prior.Currency))
			}
			return text
		}
		w.apply(ev)
		return fmt.Sprintf("pay %s: %s, receipt %s %s\n%s", args[0], res, engine.ReceiptID{Mode: q.Mode, Seq: t.PostingSeq}, ev.Identity, s.walletLines(q.Client, q.Mode))
	case "prefund":
		need(5)
		c, m, cur := s.client(args[0]), s.mode(args[1]), s.currency(args[2])
		id, err := engine.InboundIdentity(cur, strings.Join(args[4:], " "))
		if err != nil {
			return fmt.Sprintf("prefund: %v", err)
		}
		t := w.state.Treasuries[m]
		res, ev, prior := t.DecideDeposit(w.state.Payments, engine.MoneyRequest{Account: w.wallet(c, m, cur).ID,
			Amount: decimalAmount(s.t, args[3], cur), Reference: id}, w.now)
		if ev == nil {
			text := fmt.Sprintf("prefund: %s (no event)", res)
			if prior != nil {
				text += fmt.Sprintf(", first recorded as %s %s in %s", prior.Kind, prior.Identity, prior.Mode)
			}
			return text
		}
		w.apply(ev)
		return fmt.Sprintf("prefund: %s %s\n%s", res, id, s.walletLines(c, m))
	case "reverse":
		need(1)
		id, ok := engine.ParseReceiptID(args[0])
		if !ok {
			s.fatalf("bad receipt id %q", args[0])
		}
		res, ev, _ := w.state.Treasuries[id.Mode].DecideReversal(w.state.Payments, id, strings.Join(args[1:], " "), nil, w.now)
		if ev == nil {
			return fmt.Sprintf("reverse %s: %s (no event)", args[0], res)
		}
		w.apply(ev)
		r, _ := w.state.Payments.Receipt(id)
		return fmt.Sprintf("reverse %s: %s\n%s", args[0], res, s.walletLines(r.Client, r.Mode))
	case "operator":
		need(1)
		name := strings.Join(args, " ")
		names := func(yield func(string) bool) {
			for _, o := range w.state.Operators {
				if !yield(o.Name) {
					return
				}
			}
		}
		kept, res, err := engine.DecideOperatorName(name, names)
		if res != engine.ResultOK {
			if err != nil {
				return fmt.Sprintf("operator %q: %s: %v", name, res, err)
			}
			return fmt.Sprintf("operator %q: %s", name, res)
		}
		id := engine.OperatorID(w.newID())
		w.apply(&engine.OperatorCreated{At: w.now, Operator: id, Name: kept, Role: engine.RoleOperator})
		s.names[id] = kept
		return fmt.Sprintf("operator %q: OK, kept as %q", name, kept)
	case "revoke-operator":
		need(1)
		for id, o := range w.state.Operators {
			if o.Name == strings.Join(args, " ") {
				w.apply(&engine.OperatorRevoked{At: w.now, Operator: id})
				return "revoked " + o.Name
			}
		}
		s.fatalf("no operator %q", strings.Join(args, " "))
	case "key":
		need(3)
		id := engine.KeyID(w.newID())
		w.apply(&engine.KeyCreated{At: w.now, Key: id, Client: s.client(args[0]), Mode: s.mode(args[1])})
		s.keys[args[2]], s.names[id] = id, args[2]
		return "key " + args[2]
	case "roll":
		need(3)
		old, ok := s.keys[args[0]]
		if !ok {
			s.fatalf("unknown key %q", args[0])
		}
		hours, err := time.ParseDuration(args[2])
		if err != nil {
			s.fatalf("bad duration %q", args[2])
		}
		k := w.state.Keys[old]
		if res := engine.DecideKeyRoll(k, w.now); res != engine.ResultOK {
			return fmt.Sprintf("roll %s: %s", args[0], res)
		}
		id := engine.KeyID(w.newID())
		w.apply(&engine.KeyRolled{At: w.now, Old: old, Key: id, ExpiresAt: w.now + hours.Milliseconds()})
		s.keys[args[1]], s.names[id] = id, args[1]
		return fmt.Sprintf("roll %s: OK, %s rolled from %s, %s expires in %s", args[0], args[1], s.names[w.state.Keys[id].RolledFrom], args[0], hours)
	case "duplicates":
		var lines []string
		for _, d := range w.state.Payments.Duplicates() {
			line := "duplicate " + d.Identity.String() + ":"
			for _, p := range d.Payments {
				line += fmt.Sprintf(" %s %s %q", p.ReceiptID(), amountText(p.Amount, p.Currency), p.Reference)
				if p.Reversed() {
					line += " reversed"
				}
			}
			lines = append(lines, line)
		}
		if len(lines) == 0 {
			return "no duplicates"
		}
		return strings.Join(lines, "\n")
	case "payout", "credit":
		need(4)
		c, m, cur := s.client(args[0]), s.mode(args[1]), s.currency(args[2])
		t := w.state.Treasuries[m]
		wallet := w.wallet(c, m, cur).ID
		var amount engine.Amount
		if args[3] != "0" {
			amount = decimalAmount(s.t, args[3], cur)
		}
		var res engine.Result
		var ev engine.Event
		if fields[0] == "payout" {
			need(5)
			ref, err := engine.OutboundIdentity(cur, strings.Join(args[4:], " "))
			if err != nil {
				return fmt.Sprintf("payout: %v", err)
			}
			r, e, prior := t.DecideWithdrawal(w.state.Payments, engine.MoneyRequest{Account: wallet, Amount: amount, Reference: ref}, nil, w.now)
			res, ev = r, engine.EventOf(e)
			if ev == nil && prior != nil {
				return fmt.Sprintf("payout: %s (no event), first recorded as %s %s", res, prior.Identity, amountText(prior.Amount, cur))
			}
		} else {
			r, e := t.DecideCreditLimit(wallet, amount, nil, w.now)
			res, ev = r, engine.EventOf(e)
		}
		if ev == nil {
			return fmt.Sprintf("%s: %s", fields[0], res)
		}
		w.apply(ev)
		return fmt.Sprintf("%s: %s, credit limit %s\n%s", fields[0], res, amountText(t.CreditLimit(wallet), cur), s.walletLines(c, m))
	case "statement":
		need(3)
		c, m, cur := s.client(args[0]), s.mode(args[1]), s.currency(args[2])
		page, more, _ := w.state.Treasuries[m].Statement(w.wallet(c, m, cur).ID, 0, 100)
		var lines []string
		for _, p := range page {
			line := fmt.Sprintf("%s %s %s -> %s", engine.PostingID(m, p.Seq), p.Type, amountText(p.Amount, cur), amountText(p.BalanceAfter, cur))
			if !p.Quote.IsZero() {
				line += " quote " + s.names[p.Quote]
			}
			if p.Reference != "" && p.Type != engine.PostingSettlement {
				line += " ref " + p.Reference
			}
			if r := p.ReceiptID(m); !r.IsZero() {
				line += " receipt " + r.String()
			}
			lines = append(lines, line)
		}
		if more {
			lines = append(lines, "(more)")
		}
		if len(lines) == 0 {
			return "no postings"
		}
		return strings.Join(lines, "\n")
	case "cancel":
		need(1)
		q := s.quote(args[0])
		res, ev := q.Cancel(w.now)
		if ev != nil {
			w.apply(ev)
		}
		return s.transition("cancel", q, res, ev != nil, engine.Cancelling.From)
	case "tick":
		need(1)
		d, err := time.ParseDuration(args[0])
		if err != nil {
			s.fatalf("bad duration %q", args[0])
		}
		w.now += d.Milliseconds()
		return fmt.Sprintf("now +%s", time.Duration(w.now-worldStart)*time.Millisecond)
	case "expire":
		due := w.expireDue()
		if len(due) == 0 {
			return "expired none"
		}
		var lines []string
		for _, ev := range due {
			q := w.state.Quotes.Get(ev.Quote)
			lines = append(lines, s.quoteLines(q), s.quotePools(q))
		}
		return strings.Join(lines, "\n")
	case "pools":
		var lines []string
		for _, p := range s.sortedPools() {
			lines = append(lines, s.poolLine(p))
		}
		return strings.Join(lines, "\n")
	case "quotes":
		var names []string
		for name := range s.quotes {
			names = append(names, name)
		}
		slices.Sort(names)
		var lines []string
		for _, name := range names {
			lines = append(lines, s.quoteLines(s.quotes[name]))
		}
		return strings.Join(lines, "\n")
	case "wallets":
		need(2)
		return s.walletLines(s.client(args[0]), s.mode(args[1]))
	case "ledger":
		var lines []string
		for _, m := range engine.Modes {
			r := w.state.LedgerCheck(m)
			line := fmt.Sprintf("ledger %s: ok=%v", m, r.OK)
			for _, c := range engine.DefaultMarkets().CurrencyList() {
				line += fmt.Sprintf(", %s sum %s clearing %s", c, amountText(r.Currencies[c].Sum, c),
					amountText(w.state.ClearingBalance(m, c), c))
			}
			lines = append(lines, line)
			lines = append(lines, r.Problems...)
		}
		return strings.Join(lines, "\n")
	}
	s.fatalf("unknown command %q", line)
	return ""
}
