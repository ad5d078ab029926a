package gateway

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// The console's pages: what each reads from the system, and the writes,
// which run the admin API's own handlers (validation, answer, audit).

// parseConsoleTemplates parses each page with the layout (every page
// defines "title" and "content"; one that htmx refreshes defines
// "partial").
func parseConsoleTemplates() map[string]*template.Template {
	funcs := template.FuncMap{
		"money":  consoleMoney,
		"rate":   func(r engine.Rate) string { return string(engine.AppendRate(nil, r)) },
		"when":   consoleTime,
		"id":     uuidText,
		"viewer": func(p *principal) bool { return p != nil && p.role == engine.RoleViewer },
		"ppm":    percentOfPPM,
	}
	pages, err := fs.Glob(consoleTemplates, "console/templates/*.html")
	if err != nil {
		panic(err)
	}
	out := make(map[string]*template.Template, len(pages))
	for _, p := range pages {
		name := strings.TrimSuffix(strings.TrimPrefix(p, "console/templates/"), ".html")
		if name == "layout" {
			continue
		}
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(consoleTemplates,
			"console/templates/layout.html", p))
	}
	return out
}

// consoleMoney renders an amount as an operator reads money: every place
// of its currency, thousands grouped, the currency after it
// ("1,500,000.00 NGN", "-62.500000 USDT").
func consoleMoney(a engine.Amount, c engine.Currency) string {
	text := engine.AppendAmount(nil, a, c)
	sign := ""
	if len(text) > 0 && text[0] == '-' {
		sign, text = "-", text[1:]
	}
	whole, frac, _ := strings.Cut(string(text), ".")
	var b strings.Builder
	b.WriteString(sign)
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if places := int(c.MinorUnits()); places > 0 {
		b.WriteByte('.')
		b.WriteString(frac + strings.Repeat("0", places-len(frac)))
	}
	b.WriteByte(' ')
	b.WriteString(c.String())
	return b.String()
}

// percentOfPPM renders parts per million as a percentage with one decimal
// (integers only: 666,666 ppm is "66.6 %").
func percentOfPPM(ppm uint32) string {
	tenths := ppm / 1000
	return strconv.FormatUint(uint64(tenths/10), 10) + "." + strconv.FormatUint(uint64(tenths%10), 10) + " %"
}

// uuidText is an id's canonical text.
func uuidText(id [16]byte) string { return string(appendUUID(nil, id)[1:37]) }

func consoleTime(ms int64) string {
	if ms == 0 {
		return "—"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05Z")
}

// ---- Overview --------------------------------------------------------------

type overviewPair struct {
	Pair      engine.Pair
	Ticker    *engine.Ticker // nil: no consensus yet
	Liquidity engine.Amount
	Reserved  engine.Amount // what its pools hold for open quotes
	Pools     []*engine.Pool
}

type statusCount struct {
	Status string
	Count  int
}

type overview struct {
	Pairs  []overviewPair
	Counts []statusCount
	Open   int
	Ledger engine.LedgerReport
	// LedgerErr is why the ledger could not be checked.
	LedgerErr string
	// Chart is the rate history drawn before the stream adds to it (JSON
	// in a data attribute: no inline script).
	Chart   string
	Streams int
	// Activity is the quotes per minute by status (JSON, for the chart).
	Activity     string
	Exposures    []actors.BookExposures
	ExposuresErr string
	Figures      []figure
	Cluster      *clusterView
}

// overviewFigures are the log figures the overview shows.
var overviewFigures = []string{"oja_wal_last_seq", "oja_wal_durable_seq", "oja_snapshot_last_seq", "oja_webhook_backlog_events"}

func (ui *consoleUI) consoleOverview(r *consoleRequest) {
	mode := consoleMode(r.ctx)
	svc := r.svc
	ov := &overview{Streams: ui.s.Streams()}
	ov.Chart = overviewPairs(ov, svc.market, mode)
	counts := svc.quotes.QuoteCounts()[mode]
	for _, st := range engine.Statuses {
		ov.Counts = append(ov.Counts, statusCount{Status: st.String(), Count: counts[st]})
		if st.Open() {
			ov.Open += counts[st]
		}
	}
	if rep, err := svc.money.LedgerCheck(mode); err != nil {
		ov.LedgerErr = err.Error()
	} else {
		ov.Ledger = rep
	}
	ov.Activity = overviewActivity(svc.operators, mode)
	if ex, err := svc.money.LargestExposures(mode, 5); err != nil {
		ov.ExposuresErr = err.Error()
	} else {
		ov.Exposures = ex
	}
	ov.Figures = ui.figures(overviewFigures)
	if ui.s.cfg.Cluster != nil {
		leader, ok := ui.s.cfg.Cluster.Leader()
		ov.Cluster = &clusterView{Clustered: true, Self: ui.s.cfg.Cluster.Self().ID}
		if ok {
			ov.Cluster.Leader = leader.ID
		}
	}
	ui.page(r, "overview", "Overview", mode, ov)
}

// overviewPairs fills ov.Pairs, each pair of the markets with its
// consensus ticker and its pools' liquidity in mode, and returns the rate
// chart's JSON: per pair, its consensus samples as [unix ms, the rate as
// its decimal text] (the page parses it for drawing only, as it does the
// stream's rate_update).
func overviewPairs(ov *overview, market marketService, mode engine.Mode) string {
	byPair := map[engine.Pair]int{}
	type series struct {
		Pair   string   `json:"pair"`
		Points [][2]any `json:"points"`
	}
	point := func(at int64, r engine.Rate) [2]any { return [2]any{at, string(engine.AppendRate(nil, r))} }
	var chart []series
	for _, p := range market.Markets().PairList() {
		op := overviewPair{Pair: p}
		if t := market.Ticker(mode, p); t != nil && t.HasConsensus {
			op.Ticker = t
		}
		byPair[p] = len(ov.Pairs)
		ov.Pairs = append(ov.Pairs, op)
		sr := series{Pair: p.String(), Points: [][2]any{}}
		if op.Ticker != nil {
			for _, smp := range op.Ticker.ConsensusPast.Samples() {
				sr.Points = append(sr.Points, point(smp.At, smp.Rate))
			}
			sr.Points = append(sr.Points, point(op.Ticker.ConsensusAt, op.Ticker.Consensus))
		}
		chart = append(chart, sr)
	}
	for _, p := range sortedPools(market, mode) {
		i, ok := byPair[p.Pair]
		if !ok {
			continue
		}
		op := &ov.Pairs[i]
		op.Liquidity += p.Liquidity.Balance
		op.Reserved += p.Liquidity.Held
		op.Pools = append(op.Pools, p)
	}
	b, _ := json.Marshal(chart)
	return string(b)
}

// overviewActivity is the activity chart's JSON: per minute (unix
// seconds), the quotes that reached each status in mode.
func overviewActivity(operators operatorService, mode engine.Mode) string {
	type minute struct {
		At     int64          `json:"t"` // unix seconds
		Counts map[string]int `json:"c"`
	}
	var act []minute
	for _, m := range operators.Activity(mode) {
		row := minute{At: m.Minute * 60, Counts: map[string]int{}}
		for st, n := range m.Counts {
			row.Counts[st.String()] = n
		}
		act = append(act, row)
	}
	b, _ := json.Marshal(act)
	return string(b)
}

// consoleRates is the overview's live rates: the rate stream of the mode's
// pairs, for an operator's session.
func (ui *consoleUI) consoleRates(r *consoleRequest) {
	mode := consoleMode(r.ctx)
	who := actors.Principal{Mode: mode}
	// Each session is its own "key" for the per-key stream bound.
	copy(who.Key[:], r.key[:16])
	sub, e := ui.s.streams.subscribe(r.svc.market, who, r.svc.market.Markets().PairList(), r.ctx.Conn())
	if e != nil {
		ui.s.writeError(r.ctx, e)
		return
	}
	serveStream(r.ctx, sub)
}

// ---- Pools -----------------------------------------------------------------

// offsetPage is the page of a list of n rows that the query parameter
// param (an offset) asks for: rows [start, end), and the next page's
// offset (0: none).
func offsetPage(ctx *fasthttp.RequestCtx, param string, n int) (start, end, next int) {
	start = min(max(0, ctx.QueryArgs().GetUintOrZero(param)), n)
	end = min(start+consolePageSize, n)
	if end < n {
		next = end
	}
	return start, end, next
}

type poolsView struct {
	Pools []*engine.Pool
	Next  int // the next page's offset; 0: none
}

// consolePools is GET /console/pools?mode=&from=: the mode's pools by pair
// and price-time priority, a page at a time.
func (ui *consoleUI) consolePools(r *consoleRequest) {
	mode := consoleMode(r.ctx)
	pools := sortedPools(r.svc.market, mode)
	start, end, next := offsetPage(r.ctx, "from", len(pools))
	ui.page(r, "pools", "Pools", mode, &poolsView{Pools: pools[start:end], Next: next})
}

// consolePoolAction is POST /console/pools/{poolId}/{rate|status|deposit|
// withdraw}: the admin API's pool command.
func (ui *consoleUI) consolePoolAction(r *consoleRequest) {
	action, _ := r.ctx.UserValue("action").(string)
	form := r.ctx.PostArgs()
	var parse poolParser
	var field formMember
	switch action {
	case "rate":
		parse, field = parseRate, formMember{name: "rate", value: string(form.Peek("rate")), number: true}
	case "status":
		parse, field = parseStatus, formMember{name: "status", value: string(form.Peek("status"))}
	case "deposit", "withdraw":
		parse, field = parseMove(action == "deposit"), formMember{name: "amount", value: string(form.Peek("amount")), number: true}
	default:
		ui.consoleError(r.ctx, fasthttp.StatusNotFound, "No such pool action.")
		return
	}
	back := consoleBase + "/pools?mode=" + string(form.Peek("mode"))
	_, msg, ok := consoleWrite(ui.s, r, poolCommand(parse), field)
	if ok {
		msg = "Pool " + action + " done."
	}
	ui.done(r, back, msg, !ok)
}

var jsonNumber = regexp.MustCompile(`^-?[0-9]{1,30}(\.[0-9]{1,30})?$`)

// ---- Quotes ----------------------------------------------------------------

type quoteSearch struct {
	Q       string
	Problem string
	Client  *engine.Client
	Quotes  []*engine.Quote
	More    bool
	Next    string // startingAfter of the next page
}

// consoleQuotes is GET /console/quotes?q=: a quote id or a pay-in
// reference opens that quote; a client id lists the client's quotes of
// the mode, newest first, a page at a time.
func (ui *consoleUI) consoleQuotes(r *consoleRequest) {
	mode := consoleMode(r.ctx)
	q := strings.TrimSpace(string(r.ctx.QueryArgs().Peek("q")))
	res := &quoteSearch{Q: q}
	if q != "" {
		if id, ok := engine.ParseUUID(q); ok {
			if quote, found := r.svc.quotes.AnyQuote(engine.QuoteID(id)); found {
				ui.consoleGo(r, consoleBase+"/quotes/"+quote.ID.String())
				return
			}
			if c, found := r.svc.directory.Client(engine.ClientID(id)); found {
				res.Client = c
				f := actors.QuoteFilter{Limit: consolePageSize}
				if raw := r.ctx.QueryArgs().Peek("after"); len(raw) > 0 {
					after, _ := engine.ParseUUID(string(raw))
					f.StartingAfter = after
				}
				quotes, more, err := r.svc.quotes.ListQuotes(c.ID, mode, f)
				if err != nil {
					res.Problem = err.Error()
				}
				res.Quotes, res.More = quotes, more
				if more && len(quotes) > 0 {
					res.Next = quotes[len(quotes)-1].ID.String()
				}
			} else {
				res.Problem = "No quote or client has that id (a quote ended longer ago than --retention is no longer held)."
			}
		} else if quote, found := r.svc.quotes.QuoteByReference(mode, q); found {
			ui.consoleGo(r, consoleBase+"/quotes/"+quote.ID.String())
			return
		} else {
			res.Problem = "No quote has that pay-in reference, and it is not an id."
		}
	}
	ui.page(r, "quotes", "Quotes", mode, res)
}

// consoleGo sends the operator to target: htmx navigates there
// (HX-Redirect), a plain request is redirected.
func (ui *consoleUI) consoleGo(r *consoleRequest, target string) {
	if len(r.ctx.Request.Header.Peek("HX-Request")) > 0 {
		r.ctx.Response.Header.Set("HX-Redirect", target)
		r.ctx.SetStatusCode(fasthttp.StatusNoContent)
		return
	}
	r.ctx.Redirect(target, fasthttp.StatusSeeOther)
}

type quoteView struct {
	Quote    *engine.Quote
	Client   *engine.Client
	Receipts []engine.Payment
	Received engine.Amount
	// Collection is the account a bank receipt of the quote was paid into
	// (the mode's: sandbox shows its own); nil for a token source.
	Collection *engine.BankAccount
	// Events is the quote's history as its partner's events record it
	// (the event log), oldest first; HistoryNote says what limits it.
	Events      []engine.OwedEvent
	HistoryNote string
	Webhooks    []webhookRow // the client's endpoints of the quote's mode
}

// quoteHistory is the event history's look-up of one quote's events
// (*eventlog.Store has it).
type quoteHistory interface {
	QuoteEvents(client engine.ClientID, mode engine.Mode, quote engine.QuoteID, since int64, scanMax int) ([]engine.OwedEvent, bool, error)
}

// consoleHistoryScanMax bounds the client's events a quote page reads to
// find the quote's own (a page stays fast whatever the client's volume).
const consoleHistoryScanMax = 5000

// byPathID is what find finds by the id in the path's member name; when
// the id is malformed or finds nothing, the request is answered 404 with
// notFound and ok is false.
func byPathID[T any](ui *consoleUI, r *consoleRequest, name, notFound string, find func(id [16]byte) (T, bool)) (v T, ok bool) {
	raw, _ := r.ctx.UserValue(name).(string)
	id, valid := engine.ParseUUID(raw)
	if valid {
		v, ok = find(id)
	}
	if !ok {
		ui.consoleError(r.ctx, fasthttp.StatusNotFound, notFound)
	}
	return v, ok
}

// consoleBack is the page of the collection's item raw (a path's id), or
// the collection's when raw is not an id.
func consoleBack(collection, raw string) string {
	if _, valid := engine.ParseUUID(raw); valid {
		return consoleBase + "/" + collection + "/" + raw
	}
	return consoleBase + "/" + collection
}

func (ui *consoleUI) consoleQuote(r *consoleRequest) {
	q, ok := byPathID(ui, r, "quoteId", "No quote is held with that id.", func(id [16]byte) (*engine.Quote, bool) {
		return r.svc.quotes.AnyQuote(engine.QuoteID(id))
	})
	if !ok {
		return
	}
	v := &quoteView{Quote: q, Receipts: r.svc.money.Receipts(q.ID)}
	if a, ok := r.svc.market.Markets().CollectionAccount(q.Mode, q.Pair.Source); ok && !q.Pair.Source.IsToken() {
		v.Collection = &a
	}
	v.Client, _ = r.svc.directory.Client(q.Client)
	v.Received = receivedTotal(v.Receipts)
	if h, ok := ui.s.cfg.Events.(quoteHistory); ok {
		events, truncated, err := h.QuoteEvents(q.Client, q.Mode, q.ID, q.CreatedAt, consoleHistoryScanMax)
		switch {
		case err != nil:
			v.HistoryNote = "The event history could not be read: " + err.Error()
		case truncated:
			v.HistoryNote = fmt.Sprintf("Only the client's first %d events from this quote's creation were read; later ones of this quote are not shown.", consoleHistoryScanMax)
		}
		v.Events = events
	} else {
		v.HistoryNote = "This server keeps no event history."
	}
	v.Webhooks = ui.webhookRows(r.svc.directory, v.Client, q.Mode, nil)
	ui.page(r, "quote", "Quote "+q.ID.String(), q.Mode, v)
}

// quoteAction is POST /console/quotes/{quoteId}/cancel and /complete: the
// admin API's operator cancel or completion (op); made says so.
//
// An operator confirms first: a post without confirm=yes changes nothing
// and shows what it would do (the quote, its money, what was received),
// with a form that posts again with confirm=yes.
func (ui *consoleUI) quoteAction(op adminOp[*actors.QuoteReply], made string) consoleHandler {
	return func(r *consoleRequest) {
		raw, _ := r.ctx.UserValue("quoteId").(string)
		if string(r.ctx.PostArgs().Peek("confirm")) != "yes" {
			ui.confirmQuoteAction(r, raw)
			return
		}
		_, msg, ok := consoleWrite(ui.s, r, op)
		if ok {
			msg = made
		}
		ui.done(r, consoleBack("quotes", raw), msg, !ok)
	}
}

// confirmView is the page that asks an operator to confirm a quote's
// cancel or completion.
type confirmView struct {
	Quote    *engine.Quote
	Client   *engine.Client
	Action   string // "cancel" or "complete"
	Received engine.Amount
}

func (ui *consoleUI) confirmQuoteAction(r *consoleRequest, raw string) {
	q, ok := byPathID(ui, r, "quoteId", "No quote is held with that id.", func(id [16]byte) (*engine.Quote, bool) {
		return r.svc.quotes.AnyQuote(engine.QuoteID(id))
	})
	if !ok {
		return
	}
	action := "cancel"
	if strings.HasSuffix(string(r.ctx.Path()), "/complete") {
		action = "complete"
	}
	v := &confirmView{Quote: q, Action: action, Received: receivedTotal(r.svc.money.Receipts(q.ID))}
	v.Client, _ = r.svc.directory.Client(q.Client)
	ui.page(r, "confirm", "Confirm: "+action+" quote "+raw, q.Mode, v)
}

// ---- Clients ---------------------------------------------------------------

type clientList struct {
	Clients []*engine.Client
	Next    string
}

func (ui *consoleUI) consoleClients(r *consoleRequest) {
	clients := clientsNewestFirst(r.svc.directory)
	start := 0
	if raw := r.ctx.QueryArgs().Peek("after"); len(raw) > 0 {
		id, _ := engine.ParseUUID(string(raw))
		start = slices.IndexFunc(clients, func(c *engine.Client) bool { return c.ID == engine.ClientID(id) }) + 1
	}
	page := clients[start:min(start+consolePageSize, len(clients))]
	l := &clientList{Clients: page}
	if start+len(page) < len(clients) {
		l.Next = page[len(page)-1].ID.String()
	}
	ui.page(r, "clients", "Clients", consoleMode(r.ctx), l)
}

type clientAccounts struct {
	Mode     engine.Mode
	Accounts []*engine.Account
	Credit   map[engine.AccountID]engine.Amount // each wallet's credit limit (absent: none)
}

type clientView struct {
	Client   *engine.Client
	Keys     []engine.Key
	Accounts []clientAccounts
}

func (ui *consoleUI) consoleClient(r *consoleRequest) {
	c, ok := byPathID(ui, r, "clientId", "No client has that id.", func(id [16]byte) (*engine.Client, bool) {
		return r.svc.directory.Client(engine.ClientID(id))
	})
	if !ok {
		return
	}
	v := &clientView{Client: c, Keys: r.svc.directory.ClientKeys(c.ID)}
	for _, m := range engine.Modes {
		accounts := clientAccounts{Mode: m, Accounts: r.svc.money.ClientAccounts(c.ID, m)}
		ids := make([]engine.AccountID, len(accounts.Accounts))
		for i, a := range accounts.Accounts {
			ids[i] = a.ID
		}
		credit, err := r.svc.money.CreditLimits(m, ids)
		if err != nil {
			ui.consoleError(r.ctx, fasthttp.StatusServiceUnavailable, "The treasury did not answer: "+err.Error())
			return
		}
		accounts.Credit = credit
		v.Accounts = append(v.Accounts, accounts)
	}
	ui.page(r, "client", c.Name, consoleMode(r.ctx), v)
}

// ---- Audit -----------------------------------------------------------------

type auditView struct {
	Entries []engine.AuditEntry
	Next    string
	Problem string
}

func (ui *consoleUI) consoleAudit(r *consoleRequest) {
	var after engine.AuditID
	v := &auditView{}
	if raw := r.ctx.QueryArgs().Peek("after"); len(raw) > 0 {
		id, ok := engine.ParseUUID(string(raw))
		if !ok {
			v.Problem = "That is not an audit entry's id."
		}
		after = id
	}
	page, more, found := r.svc.operators.AuditPage(after, consolePageSize)
	if !found {
		v.Problem = "That audit entry is no longer kept (the newest 100,000 are)."
	}
	v.Entries = page
	if more && len(page) > 0 {
		v.Next = uuidText(page[len(page)-1].ID)
	}
	ui.page(r, "audit", "Audit", consoleMode(r.ctx), v)
}
