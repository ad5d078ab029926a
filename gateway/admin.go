package gateway

import (
	"bytes"
	"errors"
	"io/fs"
	"slices"
	"syscall"

	"github.com/shopspring/decimal"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

const adminBase = "/admin/v1"

type operatorHandler func(ctx *fasthttp.RequestCtx, svc services)

func (s *Server) operator(h operatorHandler) fasthttp.RequestHandler {
	return s.adminAuth(func(ctx *fasthttp.RequestCtx) {
		if len(ctx.PostBody()) > 0 && !requireJSON(ctx) {
			s.writeError(ctx, errMediaJSON)
			return
		}
		svc, ok := s.system(ctx)
		if !ok {
			return
		}
		h(ctx, svc)
	})
}

// adminReply answers a coordinator reply's failure; it reports whether the
// reply was a success.
func (s *Server) adminFailed(ctx *fasthttp.RequestCtx, err error, result engine.Result) bool {
	if e := s.adminRefusal(ctx, err, result); e != nil {
		s.writeError(ctx, e)
		return true
	}
	return false
}

func pathID(ctx *fasthttp.RequestCtx, name string) ([16]byte, *apiError) {
	raw, _ := ctx.UserValue(name).(string)
	id, ok := engine.ParseUUID(raw)
	if !ok {
		return id, fieldError(name, "must be a UUID")
	}
	return id, nil
}

// pathUUID is pathID for a handler: a path parameter that is not a UUID is
// answered 400 here, and ok is false.
func (s *Server) pathUUID(ctx *fasthttp.RequestCtx, name string) (id [16]byte, ok bool) {
	id, e := pathID(ctx, name)
	if e != nil {
		s.writeError(ctx, e)
		return id, false
	}
	return id, true
}

// createClient is POST /admin/v1/clients {name}.
var createClient = adminOp[*actors.AdminReply]{body: true,
	do: func(s *Server, ctx *fasthttp.RequestCtx, svc services, o *object) (*actors.AdminReply, *apiError) {
		name, ok := o.str("name", true, nameBytesMax)
		if ok && len(bytes.TrimSpace([]byte(name))) == 0 {
			o.problem("name", "must not be empty")
		}
		if e := o.finish(); e != nil {
			return nil, e
		}
		reply := svc.directory.Admin(&actors.CreateClient{Audited: actors.Audited{Audit: s.auditLine(ctx, fasthttp.StatusCreated)}, Name: name})
		return reply, s.adminRefusal(ctx, reply.Err, reply.Result)
	},
	answer: func(s *Server, ctx *fasthttp.RequestCtx, _ services, reply *actors.AdminReply) {
		s.writeObject(ctx, fasthttp.StatusCreated, func(w *jsonWriter) {
			w.id("clientId", reply.Client.ID)
			w.str("name", reply.Client.Name)
		})
	},
}

// createKey is POST /admin/v1/clients/{clientId}/keys {mode}.
var createKey = adminOp[*actors.AdminReply]{body: true,
	do: func(s *Server, ctx *fasthttp.RequestCtx, svc services, o *object) (*actors.AdminReply, *apiError) {
		client, e := pathID(ctx, "clientId")
		if e != nil {
			return nil, e
		}
		mode := parseModeMember(o)
		if e := o.finish(); e != nil {
			return nil, e
		}
		reply := svc.directory.Admin(&actors.CreateKey{Audited: actors.Audited{Audit: s.auditLine(ctx, fasthttp.StatusCreated)},
			Client: engine.ClientID(client), Mode: mode})
		return reply, s.adminRefusal(ctx, reply.Err, reply.Result)
	},
	answer: func(s *Server, ctx *fasthttp.RequestCtx, _ services, reply *actors.AdminReply) {
		s.writeObject(ctx, fasthttp.StatusCreated, func(w *jsonWriter) {
			w.id("keyId", reply.Key.ID)
			w.str("key", reply.Secret)
			w.str("mode", reply.Key.Mode.String())
			w.id("clientId", reply.Key.Client)
		})
	},
}

func parseModeMember(o *object) engine.Mode {
	raw, ok := o.str("mode", true, enumBytesMax)
	if !ok {
		return engine.ModeNone
	}
	m, ok := engine.ParseMode(raw)
	if !ok {
		o.problem("mode", `must be "live" or "sandbox"`)
	}
	return m
}

// revokeKey is DELETE /admin/v1/keys/{keyId}.
var revokeKey = adminOp[*actors.AdminReply]{
	do: func(s *Server, ctx *fasthttp.RequestCtx, svc services, _ *object) (*actors.AdminReply, *apiError) {
		key, e := pathID(ctx, "keyId")
		if e != nil {
			return nil, e
		}
		reply := svc.directory.Admin(&actors.RevokeKey{Audited: actors.Audited{Audit: s.auditLine(ctx, fasthttp.StatusNoContent)}, Key: engine.KeyID(key)})
		return reply, s.adminRefusal(ctx, reply.Err, reply.Result)
	},
	answer: func(_ *Server, ctx *fasthttp.RequestCtx, _ services, _ *actors.AdminReply) {
		ctx.SetStatusCode(fasthttp.StatusNoContent)
	},
}

// createPool is POST /admin/v1/pools.
var createPool = adminOp[*engine.Pool]{body: true, do: doCreatePool, answer: answerPool(fasthttp.StatusCreated)}

func doCreatePool(s *Server, ctx *fasthttp.RequestCtx, svc services, o *object) (*engine.Pool, *apiError) {
	cmd := &actors.CreatePool{Mode: parseModeMember(o)}
	if name, ok := o.str("name", true, nameBytesMax); ok {
		cmd.Name = name
		if len(bytes.TrimSpace([]byte(name))) == 0 {
			o.problem("name", "must not be empty")
		}
	}
	for _, side := range []struct {
		member string
		into   *engine.Currency
	}{{"source", &cmd.Pair.Source}, {"destination", &cmd.Pair.Destination}} {
		if raw, ok := o.str(side.member, true, enumBytesMax); ok {
			c, ok := engine.ParseCurrency(raw)
			if !ok {
				o.problem(side.member, "must be one of GHS, NGN, USDT")
			}
			*side.into = c
		}
	}
	cmd.Rate, _ = o.rate("rate")
	nilOwner := false
	if owner, ok := o.str("ownerClientId", false, idBytesMax); ok {
		id, ok := engine.ParseUUID(owner)
		if !ok {
			o.problem("ownerClientId", "must be a UUID")
		}
		cmd.Owner = engine.ClientID(id)
		// The nil UUID is no client's id: refused like any unknown one,
		// not taken as "no owner".
		nilOwner = ok && cmd.Owner.IsZero()
	}
	if e := o.finish(); e != nil {
		return nil, e
	}
	if nilOwner {
		return nil, resultError(engine.ResultClientNotFound)
	}
	if !svc.market.Markets().Supported(cmd.Pair) {
		return nil, invalidCurrencyPair(svc.market.Markets())
	}
	cmd.Audit = s.auditLine(ctx, fasthttp.StatusCreated)
	reply := svc.directory.Admin(cmd)
	return reply.Pool, s.adminRefusal(ctx, reply.Err, reply.Result)
}

// answerPool answers a pool's write with the pool.
func answerPool(status int) func(*Server, *fasthttp.RequestCtx, services, *engine.Pool) {
	return func(s *Server, ctx *fasthttp.RequestCtx, _ services, p *engine.Pool) {
		s.writeJSON(ctx, status, appendPool(nil, p))
	}
}

func (s *Server) listPools(ctx *fasthttp.RequestCtx, svc services) {
	mode := engine.ModeNone
	q, e := queryParams(ctx, "mode")
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	if raw := q["mode"]; len(raw) > 0 {
		m, ok := engine.ParseMode(raw)
		if !ok {
			s.writeError(ctx, fieldError("mode", `must be "live" or "sandbox"`))
			return
		}
		mode = m
	}
	pools := sortedPools(svc.market, mode)
	b := []byte{'['}
	for i, p := range pools {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPool(b, p)
	}
	s.writeJSON(ctx, fasthttp.StatusOK, append(b, ']'))
}

// sortedPools is mode's pools (ModeNone: both) in comparePools' order.
func sortedPools(market marketService, mode engine.Mode) []*engine.Pool {
	pools := market.Pools(mode)
	markets := market.Markets()
	slices.SortFunc(pools, func(a, b *engine.Pool) int { return comparePools(markets, a, b) })
	return pools
}

// comparePools orders pools by mode, pair (in the markets' order; pairs no
// longer in force last), then price-time priority.
func comparePools(m *engine.Markets, a, b *engine.Pool) int {
	switch {
	case a.Mode != b.Mode:
		return int(a.Mode) - int(b.Mode)
	case a.Pair != b.Pair:
		return m.ComparePairs(a.Pair, b.Pair)
	case a.Rate != b.Rate:
		return b.Rate.Cmp(a.Rate) // descending
	case a.RateSetAt != b.RateSetAt:
		return int(a.RateSetAt - b.RateSetAt)
	}
	return bytes.Compare(a.ID[:], b.ID[:])
}

// CompletionRate is completed ÷ accepted × 100, half-even to 2 places; 0
// when nothing was accepted.
func CompletionRate(p *engine.Pool) decimal.Decimal {
	if p.Accepted == 0 {
		return decimal.Zero
	}
	return decimal.NewFromUint64(p.Completed).Mul(decimal.NewFromInt(100)).
		DivRound(decimal.NewFromUint64(p.Accepted), 8).RoundBank(2)
}

func appendPool(b []byte, p *engine.Pool) []byte {
	w := jsonWriter{b: b}
	w.open("")
	w.id("poolId", p.ID)
	w.str("mode", p.Mode.String())
	w.str("name", p.Name)
	w.str("source", p.Pair.Source.String())
	w.str("destination", p.Pair.Destination.String())
	w.rate("rate", p.Rate)
	w.time("rateSetAt", p.RateSetAt)
	status := "suspended"
	if p.Active {
		status = "active"
	}
	w.str("status", status)
	w.id("poolAccountId", p.Liquidity.ID)
	w.id("proceedsAccountId", p.Proceeds.ID)
	w.amount("balance", p.Liquidity.Balance, p.Pair.Destination)
	w.amount("available", p.Liquidity.Available(), p.Pair.Destination)
	w.integer("tradesCount", int64(p.Completed))
	w.decimal("completionRate", CompletionRate(p))
	if !p.Owner.IsZero() {
		w.id("ownerClientId", p.Owner)
	}
	w.close()
	return w.b
}

// poolParser reads one pool command's body.
type poolParser func(o *object, cmd *actors.PoolCommand, destination engine.Currency)

func parseRate(o *object, cmd *actors.PoolCommand, _ engine.Currency) {
	cmd.Rate, _ = o.rate("rate")
}

func parseStatus(o *object, cmd *actors.PoolCommand, _ engine.Currency) {
	raw, ok := o.str("status", true, enumBytesMax)
	if !ok {
		return
	}
	var active bool
	switch raw {
	case "active":
		active = true
	case "suspended":
	default:
		o.problem("status", `must be "active" or "suspended"`)
		return
	}
	cmd.Status = &active
}

func parseMove(deposit bool) poolParser {
	return func(o *object, cmd *actors.PoolCommand, destination engine.Currency) {
		amount, _ := o.amount("amount", destination)
		if deposit {
			cmd.Deposit = amount
		} else {
			cmd.Withdraw = amount
		}
	}
}

// poolCommand is PUT /admin/v1/pools/{poolId}/rate and /status, POST
// …/deposit and …/withdraw: the command parse reads.
func poolCommand(parse poolParser) adminOp[*engine.Pool] {
	return adminOp[*engine.Pool]{body: true, answer: answerPool(fasthttp.StatusOK),
		do: func(s *Server, ctx *fasthttp.RequestCtx, svc services, o *object) (*engine.Pool, *apiError) {
			id, e := pathID(ctx, "poolId")
			if e != nil {
				return nil, e
			}
			pool, ok := svc.market.Pool(engine.PoolID(id))
			if !ok {
				return nil, resultError(engine.ResultPoolNotFound)
			}
			cmd := &actors.PoolCommand{Pool: pool.ID}
			parse(o, cmd, pool.Pair.Destination)
			if e := o.finish(); e != nil {
				return nil, e
			}
			cmd.Audit = s.auditLine(ctx, fasthttp.StatusOK)
			reply := svc.market.ChangePool(cmd)
			return reply.Pool, s.adminRefusal(ctx, reply.Err, reply.Result)
		}}
}

func (s *Server) ledgerCheck(ctx *fasthttp.RequestCtx, svc services) {
	q, e := queryParams(ctx, "mode")
	if e != nil {
		s.writeError(ctx, e)
		return
	}
	mode, ok := engine.ParseMode(q["mode"])
	if !ok {
		s.writeError(ctx, fieldError("mode", `query parameter must be "live" or "sandbox"`))
		return
	}
	report, err := svc.money.LedgerCheck(mode)
	if err != nil {
		s.operatingError(ctx, err)
		return
	}
	s.writeJSON(ctx, fasthttp.StatusOK, AppendLedgerReport(nil, report))
}

// AppendLedgerReport renders a ledger check (also used by the CLI tools).
func AppendLedgerReport(b []byte, r engine.LedgerReport) []byte {
	w := jsonWriter{b: b}
	w.open("")
	w.boolean("ok", r.OK)
	w.open("currencies")
	for _, c := range engine.KnownCurrencies() {
		line, ok := r.Currencies[c]
		if !ok {
			continue
		}
		w.open(c.String())
		w.amount("sum", line.Sum, c)
		w.integer("accounts", int64(line.Accounts))
		w.close()
	}
	w.close()
	if len(r.Problems) > 0 {
		w.value("problems", r.Problems)
	}
	w.close()
	return w.b
}

// BackupRefusal is a backup refused for a reason the operator can act on;
// Reason is answered as it is.
type BackupRefusal struct{ Reason string }

func (e *BackupRefusal) Error() string { return e.Reason }

// backupProblem says what is wrong with a backup in the operator's terms:
// the operating system's messages name paths and calls (mkdir
// /proc/self/…), so only their kind is answered.
func backupProblem(err error) string {
	var refusal *BackupRefusal
	switch {
	case errors.As(err, &refusal):
		return refusal.Reason
	case errors.Is(err, fs.ErrPermission):
		return "the server may not write there (permission denied)"
	case errors.Is(err, fs.ErrExist):
		return "already exists and is not a directory"
	case errors.Is(err, syscall.ENOTDIR):
		return "a part of the path is not a directory"
	case errors.Is(err, syscall.ENOSPC):
		return "no space left on that device"
	case errors.Is(err, syscall.EROFS):
		return "that filesystem is read-only"
	}
	return "the backup could not be written there; the server log says why"
}

// backup is POST /admin/v1/backup {"dir","copy"?}. A single node backs up
// once it serves (503 while recovering); a cluster node answers itself,
// leader or not, from its own replica (localRoutes).
func (s *Server) backup(ctx *fasthttp.RequestCtx) {
	if len(ctx.PostBody()) > 0 && !requireJSON(ctx) {
		s.writeError(ctx, errMediaJSON)
		return
	}
	if s.cfg.Cluster == nil {
		if _, ok := s.system(ctx); !ok {
			return
		}
	}
	o, ok := s.bodyObject(ctx)
	if !ok {
		return
	}
	dir, _ := o.str("dir", true, backupDirBytesMax)
	copyFiles := true
	if raw, ok := o.raw("copy", false); ok {
		switch string(raw) {
		case "true":
		case "false":
			copyFiles = false
		default:
			o.problem("copy", "must be true or false")
		}
	}
	if e := o.finish(); e != nil {
		s.writeError(ctx, e)
		return
	}
	if s.cfg.Backup == nil {
		s.writeError(ctx, errUnavailable)
		return
	}
	if err := s.cfg.Backup(dir, copyFiles); err != nil {
		s.writeError(ctx, fieldError("dir", backupProblem(err)))
		if !errors.As(err, new(*BackupRefusal)) {
			s.cfg.Logger.Warn("backup failed", "dir", dir, "err", err)
		}
		return
	}
	s.writeObject(ctx, fasthttp.StatusOK, func(w *jsonWriter) {
		w.str("dir", dir)
		w.boolean("copy", copyFiles)
	})
}
