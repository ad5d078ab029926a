package gateway

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// Watched chains (spec §16.2; actors/chainwatch): GET /admin/v1/chains
// reports each configured chain's watcher — {chain, rpcHost, head,
// processed, confirmations, lagBlocks, lastError, lastPollAt} — and GET
// /admin/v1/chains/unapplied the transfers to deposit addresses that were
// not credited because the currency cannot hold their value exactly,
// newest first: {unappliedId, chain, txHash, logIndex, block, addressId,
// currency, value, decimals, reason}.

// chainStatuses are the term's watchers' reports, in chain order (none
// while no term is served or it watches nothing).
func (s *Server) chainStatuses() []actors.ChainWatchStatus {
	if t := s.term.Load(); t != nil && !t.Ended() && t.Chains() != nil {
		return t.Chains().Statuses()
	}
	return nil
}

func (s *Server) listChains(ctx *fasthttp.RequestCtx, _ services) {
	s.writeObject(ctx, fasthttp.StatusOK, func(w *jsonWriter) {
		w.openArray("data")
		for _, st := range s.chainStatuses() {
			w.open("")
			appendChainStatus(w, st)
			w.close()
		}
		w.closeArray()
	})
}

func appendChainStatus(w *jsonWriter, st actors.ChainWatchStatus) {
	w.str("chain", st.Chain.String())
	w.str("rpcHost", st.RPCHost)
	w.integer("head", int64(st.Head))
	w.integer("processed", int64(st.Processed))
	w.integer("confirmations", int64(st.Confirmations))
	w.integer("lagBlocks", int64(chainLag(st)))
	if st.LastError == "" {
		w.key("lastError")
		w.b = append(w.b, "null"...)
	} else {
		w.str("lastError", st.LastError)
	}
	if st.LastPollAt == 0 {
		w.key("lastPollAt")
		w.b = append(w.b, "null"...)
	} else {
		w.time("lastPollAt", st.LastPollAt)
	}
}

// chainLag is how many blocks past the last one processed the head is.
func chainLag(st actors.ChainWatchStatus) uint64 {
	if st.Head > st.Processed {
		return st.Head - st.Processed
	}
	return 0
}

// Bounds of GET /admin/v1/chains/unapplied.
const (
	chainUnappliedLimitDefault = 50
	chainUnappliedLimitMax     = 500
)

// chainDeposit is an unapplied deposit and its chain.
type chainDeposit struct {
	chain engine.Chain
	engine.ChainDeposit
}

// id is the deposit's unappliedId: chain, txHash and logIndex.
func (d chainDeposit) id() string {
	return d.chain.String() + ":" + d.Tx + ":" + strconv.FormatUint(uint64(d.LogIndex), 10)
}

func (s *Server) listChainUnapplied(ctx *fasthttp.RequestCtx, svc services) {
	args := ctx.QueryArgs()
	limit, e := queryLimit(ctx, chainUnappliedLimitDefault, chainUnappliedLimitMax)
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	var all []chainDeposit
	for ch, st := range svc.money.ChainStates() {
		for _, d := range st.Unapplied {
			all = append(all, chainDeposit{ch, d})
		}
	}
	// Newest first: by block, then log index, then chain.
	slices.SortFunc(all, func(a, b chainDeposit) int {
		return cmp.Or(cmp.Compare(b.Block, a.Block), cmp.Compare(b.LogIndex, a.LogIndex), cmp.Compare(a.chain, b.chain))
	})
	if raw := args.Peek("startingAfter"); raw != nil {
		i := slices.IndexFunc(all, func(d chainDeposit) bool { return d.id() == string(raw) })
		if i < 0 {
			s.writeError(ctx, fieldError("startingAfter", "must be the unappliedId of a deposit listed"))
			return
		}
		all = all[i+1:]
	}
	more := len(all) > limit
	all = all[:min(limit, len(all))]
	s.writeObject(ctx, fasthttp.StatusOK, func(w *jsonWriter) {
		w.openArray("data")
		for _, d := range all {
			w.open("")
			w.str("unappliedId", d.id())
			w.str("chain", d.chain.String())
			w.str("txHash", d.Tx)
			w.integer("logIndex", int64(d.LogIndex))
			w.integer("block", int64(d.Block))
			w.id("addressId", d.Address)
			w.str("currency", d.Currency.String())
			w.str("value", d.Value)
			w.integer("decimals", int64(d.Decimals))
			w.str("reason", d.Reason.String())
			w.close()
		}
		w.closeArray()
		w.boolean("hasMore", more)
	})
}

// chainCollector exposes the watchers' figures on /metrics.
type chainCollector struct {
	statuses              func() []actors.ChainWatchStatus
	head, processed, errs *prometheus.Desc
}

func newChainCollector(statuses func() []actors.ChainWatchStatus) *chainCollector {
	return &chainCollector{statuses: statuses,
		head: prometheus.NewDesc("oja_chain_head_block", "The chain's head at its watcher's last poll.", []string{"chain"}, nil),
		processed: prometheus.NewDesc("oja_chain_processed_block",
			"The last block whose deposits were credited (the durable cursor).", []string{"chain"}, nil),
		errs: prometheus.NewDesc("oja_chain_rpc_errors_total", "RPC errors of the chain's watcher since it started.", []string{"chain"}, nil),
	}
}

func (c *chainCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.head
	ch <- c.processed
	ch <- c.errs
}

func (c *chainCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.statuses() {
		name := st.Chain.String()
		ch <- prometheus.MustNewConstMetric(c.head, prometheus.GaugeValue, float64(st.Head), name)
		ch <- prometheus.MustNewConstMetric(c.processed, prometheus.GaugeValue, float64(st.Processed), name)
		ch <- prometheus.MustNewConstMetric(c.errs, prometheus.CounterValue, float64(st.RPCErrors), name)
	}
}

// consoleChainRow is a watched chain on /console/chains.
type consoleChainRow struct {
	actors.ChainWatchStatus
	Lag uint64
}

// consoleChainsView is /console/chains: the watchers, then the newest
// deposits not credited.
type consoleChainsView struct {
	Chains    []consoleChainRow
	Unapplied []consoleChainDeposit
}

type consoleChainDeposit struct {
	Chain engine.Chain
	engine.ChainDeposit
}

// consoleChainUnappliedMax is how many deposits not credited the page
// shows (GET /admin/v1/chains/unapplied pages through all).
const consoleChainUnappliedMax = 100

func (ui *consoleUI) consoleChains(r *consoleRequest) {
	v := &consoleChainsView{}
	for _, st := range ui.s.chainStatuses() {
		v.Chains = append(v.Chains, consoleChainRow{ChainWatchStatus: st, Lag: chainLag(st)})
	}
	for ch, st := range r.svc.money.ChainStates() {
		for _, d := range st.Unapplied {
			v.Unapplied = append(v.Unapplied, consoleChainDeposit{ch, d})
		}
	}
	slices.SortFunc(v.Unapplied, func(a, b consoleChainDeposit) int {
		return cmp.Or(cmp.Compare(b.Block, a.Block), cmp.Compare(b.LogIndex, a.LogIndex), cmp.Compare(a.Chain, b.Chain))
	})
	v.Unapplied = v.Unapplied[:min(len(v.Unapplied), consoleChainUnappliedMax)]
	ui.page(r, "chains", "Chains", consoleMode(r.ctx), v)
}
