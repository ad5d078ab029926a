package gateway

import (
	"context"
	"slices"
	"strings"

	"github.com/oja-exchange/oja/actors/cluster"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/webhook"
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
}

// consolePayIns is GET /console/payins?mode=&after=: the quotes awaiting
// payment, soonest to expire first, with what was received for each; and
// the form that records a bank transfer.
func (s *Server) consolePayIns(r *consoleRequest) {
	mode := consoleMode(r.ctx)
	var after engine.QuoteID
	if raw := r.ctx.QueryArgs().Peek("after"); len(raw) > 0 {
		id, _ := engine.ParseUUID(string(raw))
		after = id
	}
	quotes, more := r.sys.AwaitingPayment(mode, after, consolePageSize)
	v := &payInsView{}
	for _, q := range quotes {
		row := payInRow{Quote: q}
		row.Client, _ = r.sys.Client(q.Client)
		for _, rc := range r.sys.Receipts(q.ID) {
			row.Received += rc.Amount
		}
		v.Rows = append(v.Rows, row)
	}
	if more && len(quotes) > 0 {
		v.Next = quotes[len(quotes)-1].ID.String()
	}
	s.page(r, "payins", "Pay-ins", mode, v)
}

// consoleBankReceipt is POST /console/payins/bank: the admin API's bank
// receipt (a transfer carrying a quote's reference).
func (s *Server) consoleBankReceipt(r *consoleRequest) {
	f := r.ctx.PostArgs()
	msg, ok := s.viaAPI(r, s.bankReceipt, jsonForm(
		formMember{name: "reference", value: string(f.Peek("reference"))},
		formMember{name: "amount", value: string(f.Peek("amount")), number: true},
		formMember{name: "bankTransactionId", value: string(f.Peek("bankTransactionId"))}))
	if ok {
		msg = "Bank receipt recorded for " + strings.TrimSpace(string(f.Peek("reference"))) + "."
	}
	s.done(r, consoleBase+"/payins?mode="+string(f.Peek("mode")), msg, !ok)
}

// consoleComplete is POST /console/quotes/{quoteId}/complete, the admin
// API's operator completion.
func (s *Server) consoleComplete(r *consoleRequest) {
	raw, _ := r.ctx.UserValue("quoteId").(string)
	msg, ok := s.viaAPI(r, s.operatorComplete, nil)
	if ok {
		msg = "Quote completed."
	}
	s.done(r, quoteBack(raw), msg, !ok)
}

func quoteBack(raw string) string {
	if _, valid := engine.ParseUUID(raw); valid {
		return consoleBase + "/quotes/" + raw
	}
	return consoleBase + "/quotes"
}

// ---- Webhooks --------------------------------------------------------------

type webhookRow struct {
	Client  *engine.Client
	Webhook engine.Webhook
	Status  webhook.EndpointStatus
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
func (s *Server) consoleWebhooks(r *consoleRequest) {
	mode := consoleMode(r.ctx)
	v := &webhooksView{Dispatching: s.cfg.Webhooks != nil}
	for _, c := range r.sys.Clients() {
		for _, h := range r.sys.Webhooks(c.ID) {
			if h.Mode != mode {
				continue
			}
			row := webhookRow{Client: c, Webhook: h}
			if s.cfg.Webhooks != nil {
				row.Status = s.cfg.Webhooks.Status(h.ID)
				row.Failing = row.Status.Last.Error != ""
			}
			v.Rows = append(v.Rows, row)
		}
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
	from := max(0, r.ctx.QueryArgs().GetUintOrZero("from"))
	from = min(from, len(v.Rows))
	end := min(from+consolePageSize, len(v.Rows))
	if end < len(v.Rows) {
		v.Next = end
	}
	v.Rows = v.Rows[from:end]
	s.page(r, "webhooks", "Webhooks", mode, v)
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
func (s *Server) figures(names []string) []figure {
	families, err := s.metrics.registry.Gather()
	if err != nil {
		s.cfg.Logger.Warn("console: gathering metrics", "err", err)
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
func (s *Server) consoleSystem(r *consoleRequest) {
	v := &clusterView{Clustered: s.cfg.Cluster != nil, Figures: s.figures(systemFigures)}
	if s.cfg.Cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), clusterStatusTimeout)
		st := s.cfg.Cluster.Status(ctx, s.askPeer)
		cancel()
		v.Self, v.Term = s.cfg.Cluster.Self().ID, st.Term
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
	s.page(r, "cluster", "Cluster and log", consoleMode(r.ctx), v)
}
