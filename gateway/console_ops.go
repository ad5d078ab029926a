package gateway

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/actors/cluster"
	"github.com/oja-exchange/oja/engine"
)

// The console's operations pages: money waiting (pay-ins), webhooks, the
// cluster and the log; and the writes on them.

// formMember is one member of a JSON body built from a form.
type formMember struct {
	name, value string
	number      bool
}

// jsonForm is a JSON object of the members: a number member's value as a
// JSON number when it is one, else as a string (which the API refuses
// with its own message); other values as strings.
func jsonForm(members ...formMember) []byte {
	w := jsonWriter{}
	w.open("")
	for _, m := range members {
		value := strings.TrimSpace(m.value)
		if m.number && jsonNumber.MatchString(value) {
			w.key(m.name)
			w.b = append(w.b, value...)
		} else {
			w.str(m.name, value)
		}
	}
	w.close()
	return w.b
}

// ---- Pay-ins ---------------------------------------------------------------

type payInRow struct {
	Quote    *engine.Quote
	Client   *engine.Client
	Received engine.Amount
}

type payInsView struct {
	Rows []payInRow
	Next string
	// Unapplied are the receipts held in suspense, newest first.
	Unapplied []engine.UnappliedReceipt
	// Received is a page of the payments received, newest first;
	// ReceivedNext the next page's offset (0: none).
	Received     []receivedRow
	ReceivedNext int
}

// receivedRow is a payment received, in its wallet's currency.
type receivedRow struct {
	engine.Payment
	Currency engine.Currency
	Deposit  string // a crypto receipt's address, as the chain writes it
}

// consolePayIns is GET /console/payins?mode=&after=&received=: the quotes
// awaiting payment, soonest to expire first, with what was received for
// each; the payments received, newest first; and the form that records a
// bank transfer.
func (ui *consoleUI) consolePayIns(r *consoleRequest) {
	mode := consoleMode(r.ctx)
	var after engine.QuoteID
	if raw := r.ctx.QueryArgs().Peek("after"); len(raw) > 0 {
		id, _ := engine.ParseUUID(string(raw))
		after = id
	}
	quotes, more := r.svc.quotes.AwaitingPayment(mode, after, consolePageSize)
	v := &payInsView{}
	for _, q := range quotes {
		row := payInRow{Quote: q, Received: receivedTotal(r.svc.money.Receipts(q.ID))}
		row.Client, _ = r.svc.directory.Client(q.Client)
		v.Rows = append(v.Rows, row)
	}
	if more && len(quotes) > 0 {
		v.Next = quotes[len(quotes)-1].ID.String()
	}
	from := r.ctx.QueryArgs().GetUintOrZero("received")
	received, more := r.svc.money.RecentReceipts(mode, from, consolePageSize)
	for _, rc := range received {
		row := receivedRow{Payment: rc, Currency: rc.Currency}
		if q, ok := r.svc.quotes.PayInQuote(rc.Address); ok && rc.Method == engine.ReceiptCrypto && q.PayIn != nil {
			row.Deposit = q.PayIn.Deposit
		}
		v.Received = append(v.Received, row)
	}
	if more {
		v.ReceivedNext = max(from, 0) + len(received)
	}
	v.Unapplied = r.svc.money.UnappliedList(mode)
	ui.page(r, "payins", "Pay-ins", mode, v)
}

// consoleBankReceipt is POST /console/payins/bank: the admin API's bank
// receipt (a transfer carrying a quote's reference).
func (ui *consoleUI) consoleBankReceipt(r *consoleRequest) {
	f := r.ctx.PostArgs()
	_, msg, ok := consoleWrite(ui.s, r, bankReceipt,
		formMember{name: "reference", value: string(f.Peek("reference"))},
		formMember{name: "amount", value: string(f.Peek("amount")), number: true},
		formMember{name: "bankTransactionId", value: string(f.Peek("bankTransactionId"))},
		formMember{name: "mode", value: string(f.Peek("mode"))})
	if ok {
		msg = "Bank receipt recorded for " + strings.TrimSpace(string(f.Peek("reference"))) + "."
	}
	ui.done(r, consoleBase+"/payins?mode="+string(f.Peek("mode")), msg, !ok)
}

// ---- Webhooks --------------------------------------------------------------

type webhookRow struct {
	Client  *engine.Client
	Webhook engine.Webhook
	Status  actors.WebhookStatus
	Failing bool
}

type webhooksView struct {
	Rows        []webhookRow
	Next        int // the next page's offset; 0: none
	Dispatching bool
}

// consoleWebhooks is GET /console/webhooks?mode=&from=: every endpoint of
// the mode with its backlog and last attempt, failing ones first, then by
// backlog.
func (ui *consoleUI) consoleWebhooks(r *consoleRequest) {
	mode := consoleMode(r.ctx)
	v := &webhooksView{Dispatching: ui.s.webhooks() != nil}
	for _, c := range r.svc.directory.Clients() {
		v.Rows = ui.webhookRows(r.svc.directory, c, mode, v.Rows)
	}
	slices.SortFunc(v.Rows, func(a, b webhookRow) int {
		switch {
		case a.Failing != b.Failing:
			if a.Failing {
				return -1
			}
			return 1
		case a.Status.Owed != b.Status.Owed:
			return b.Status.Owed - a.Status.Owed
		}
		return strings.Compare(a.Webhook.URL, b.Webhook.URL)
	})
	start, end, next := offsetPage(r.ctx, "from", len(v.Rows))
	v.Rows, v.Next = v.Rows[start:end], next
	ui.page(r, "webhooks", "Webhooks", mode, v)
}

// webhookRows appends client c's endpoints of mode m to rows, each with
// its backlog and last attempt when this server delivers webhooks.
func (ui *consoleUI) webhookRows(directory directoryService, c *engine.Client, m engine.Mode, rows []webhookRow) []webhookRow {
	if c == nil {
		return rows
	}
	d := ui.s.webhooks()
	for _, h := range directory.Webhooks(c.ID) {
		if h.Mode != m {
			continue
		}
		row := webhookRow{Client: c, Webhook: h}
		if d != nil {
			row.Status = d.Status(h.ID)
			row.Failing = row.Status.Last.Error != ""
		}
		rows = append(rows, row)
	}
	return rows
}

// ---- Cluster and log -------------------------------------------------------

type clusterRow struct {
	cluster.NodeStatus
	Lag uint64 // entries behind the most advanced node
}

type clusterView struct {
	Clustered bool
	Self      string
	Leader    string
	Term      uint64
	Nodes     []clusterRow
	Figures   []figure
}

type figure struct {
	Name, Help string
	Value      int64
}

// systemFigures are the log's, the snapshots' and the disk's figures the
// console shows, as /metrics has them.
var systemFigures = []string{
	"oja_wal_last_seq", "oja_wal_durable_seq", "oja_wal_first_retained_seq", "oja_follower_applied_seq",
	"oja_snapshot_last_seq", "oja_snapshot_last_bytes", "oja_snapshots_saved_total",
	"oja_data_filesystem_avail_bytes", "oja_data_filesystem_size_bytes",
	"oja_webhook_backlog_events", "oja_sse_subscribers",
	"oja_cluster_term", "oja_cluster_last_index", "oja_cluster_commit_index", "oja_cluster_applied_index",
}

// figures reads the named unlabelled gauges and counters off the admin
// listener's /metrics registry (those this server has).
func (ui *consoleUI) figures(names []string) []figure {
	families, err := ui.s.metrics.registry.Gather()
	if err != nil {
		ui.s.cfg.Logger.Warn("console: gathering metrics", "err", err)
	}
	var out []figure
	for _, name := range names {
		for _, f := range families {
			if f.GetName() != name || len(f.GetMetric()) != 1 {
				continue
			}
			m := f.GetMetric()[0]
			var v float64
			switch {
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			default:
				continue
			}
			out = append(out, figure{Name: name, Help: f.GetHelp(), Value: int64(v)})
		}
	}
	return out
}

// consoleSystem is GET /console/cluster: the cluster's members, leader,
// term and each one's lag (a single node says it is one), and the log's
// figures.
func (ui *consoleUI) consoleSystem(r *consoleRequest) {
	v := &clusterView{Clustered: ui.s.cfg.Cluster != nil, Figures: ui.figures(systemFigures)}
	if ui.s.cfg.Cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), clusterStatusTimeout)
		st := ui.s.cfg.Cluster.Status(ctx, ui.s.askPeer)
		cancel()
		v.Self, v.Term = ui.s.cfg.Cluster.Self().ID, st.Term
		if st.Leader != nil {
			v.Leader = *st.Leader
		}
		var top uint64
		for _, n := range st.Nodes {
			top = max(top, n.AppliedIndex)
		}
		for _, n := range st.Nodes {
			row := clusterRow{NodeStatus: n}
			if n.State != "unreachable" {
				row.Lag = top - n.AppliedIndex
			}
			v.Nodes = append(v.Nodes, row)
		}
	}
	ui.page(r, "cluster", "Cluster and log", consoleMode(r.ctx), v)
}

// ---- Clients, keys, credit, pools ------------------------------------------

// consoleCreateClient is POST /console/clients: the admin API's client
// creation; the operator lands on the new client's page.
func (ui *consoleUI) consoleCreateClient(r *consoleRequest) {
	f := r.ctx.PostArgs()
	made, msg, ok := consoleWrite(ui.s, r, createClient, formMember{name: "name", value: string(f.Peek("name"))})
	if !ok {
		ui.done(r, consoleBase+"/clients", msg, true)
		return
	}
	ui.done(r, consoleBase+"/clients/"+made.Client.ID.String(), "Client created.", false)
}

// consoleCreateKey is POST /console/clients/{clientId}/keys: a new API
// key, whose secret the next page shows once (the flash, kept in the
// session only until then).
func (ui *consoleUI) consoleCreateKey(r *consoleRequest) {
	raw, _ := r.ctx.UserValue("clientId").(string)
	f := r.ctx.PostArgs()
	made, msg, ok := consoleWrite(ui.s, r, createKey, formMember{name: "mode", value: string(f.Peek("mode"))})
	if ok {
		msg = "API key created: " + made.Secret + " — give it to the client now; it is not shown again."
	}
	ui.done(r, consoleBack("clients", raw), msg, !ok)
}

// consoleRevokeKey is POST /console/keys/{keyId}/revoke, the admin API's
// DELETE /admin/v1/keys/{keyId}.
func (ui *consoleUI) consoleRevokeKey(r *consoleRequest) {
	_, msg, ok := consoleWrite(ui.s, r, revokeKey)
	if ok {
		msg = "API key revoked."
	}
	ui.done(r, consoleBack("clients", string(r.ctx.PostArgs().Peek("client"))), msg, !ok)
}

// consoleCredit is POST /console/clients/{clientId}/credit, the admin
// API's credit limit.
func (ui *consoleUI) consoleCredit(r *consoleRequest) {
	raw, _ := r.ctx.UserValue("clientId").(string)
	f := r.ctx.PostArgs()
	_, msg, ok := consoleWrite(ui.s, r, setCredit,
		formMember{name: "mode", value: string(f.Peek("mode"))},
		formMember{name: "currency", value: string(f.Peek("currency"))},
		formMember{name: "limit", value: string(f.Peek("limit")), number: true})
	if ok {
		msg = "Credit limit set."
	}
	ui.done(r, consoleBack("clients", raw), msg, !ok)
}

// consoleCreatePool is POST /console/pools, the admin API's pool
// creation.
func (ui *consoleUI) consoleCreatePool(r *consoleRequest) {
	f := r.ctx.PostArgs()
	_, msg, ok := consoleWrite(ui.s, r, createPool,
		formMember{name: "mode", value: string(f.Peek("mode"))},
		formMember{name: "name", value: string(f.Peek("name"))},
		formMember{name: "source", value: string(f.Peek("source"))},
		formMember{name: "destination", value: string(f.Peek("destination"))},
		formMember{name: "rate", value: string(f.Peek("rate")), number: true})
	if ok {
		msg = "Pool created (no liquidity yet: deposit some)."
	}
	ui.done(r, consoleBase+"/pools?mode="+string(f.Peek("mode")), msg, !ok)
}

type statementView struct {
	Account  *engine.Account
	Client   *engine.Client
	Postings []engine.Posting
	Next     string
	Problem  string
}

// consoleStatement is GET /console/accounts/{accountId}?after=: a
// wallet's postings, newest first, a page at a time.
func (ui *consoleUI) consoleStatement(r *consoleRequest) {
	a, ok := byPathID(ui, r, "accountId", "No wallet has that id.", func(id [16]byte) (*engine.Account, bool) {
		a, ok := r.svc.money.Account(engine.AccountID(id))
		return a, ok && a.Kind == engine.AccountWallet
	})
	if !ok {
		return
	}
	v := &statementView{Account: a}
	v.Client, _ = r.svc.directory.Client(engine.ClientID(a.Owner))
	after := r.ctx.QueryArgs().GetUintOrZero("after")
	st := r.svc.money.Statement(a.ID, uint64(max(after, 0)), consolePageSize)
	switch {
	case st.Err != nil:
		v.Problem = st.Err.Error()
	case !st.Known && after > 0:
		v.Problem = "That posting is no longer kept (older than the retention)."
	}
	v.Postings = st.Postings
	if st.More && len(st.Postings) > 0 {
		v.Next = strconv.FormatUint(st.Postings[len(st.Postings)-1].Seq, 10)
	}
	ui.page(r, "statement", "Statement", a.Mode, v)
}
