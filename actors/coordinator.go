package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
)

// coordinatorActor handles the operator's rare structural writes: clients,
// API keys and new pools. It decides them one at a time, logs them, and once
// they are durable updates the registry and starts the actors they need.
type coordinatorActor struct {
	sys *System
	// rolling are the keys whose roll is in flight: a key is rolled once
	// (engine.Key.Rolled), so a second roll of one waits for nothing — it
	// is refused as the first is being made durable.
	rolling map[engine.KeyID]bool
	// naming are the canonical names of operators being created.
	naming map[string]bool
}

// keySecretChars is the number of random base62 characters of an API key
// (~238 bits).
const keySecretChars = 40

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func (a *coordinatorActor) Receive(ctx actor.Context) {
	a.sys.guard(ctx, func() {
		switch msg := ctx.Message().(type) {
		case *CreateClient:
			a.createClient(ctx, msg)
		case *CreateKey:
			a.createKey(ctx, msg)
		case *RevokeKey:
			a.revokeKey(ctx, msg)
		case *RollKey:
			a.rollKey(ctx, msg)
		case *CreatePool:
			a.createPool(ctx, msg)
		case *CreateWebhook:
			a.createWebhook(ctx, msg)
		case *DeleteWebhook:
			a.deleteWebhook(ctx, msg)
		case *UpdateWebhook:
			a.updateWebhook(ctx, msg)
		case *RotateWebhookSecret:
			a.rotateWebhookSecret(ctx, msg)
		case *CreateOperator, *RevokeOperator, *RecordAudit, *operatorDurable:
			a.operatorCommand(ctx, msg)
		case *RecordChainProgress, *chainDurable:
			a.chainCommand(ctx, msg)
		case *structuralDurable:
			reply := &AdminReply{Err: msg.err}
			if msg.err == nil {
				reply = msg.onDurable()
			} else if msg.onFailed != nil {
				msg.onFailed()
			}
			ctx.Send(msg.replyTo, reply)
		}
	})
}

// commit logs ev; once it is durable the coordinator itself runs onDurable
// (registry writes, spawns) and replies with what it returns.
// An operator's command is logged with its audit line (audit, nil for a
// partner's).
func (a *coordinatorActor) commit(ctx actor.Context, audit *engine.OperatorActed, ev engine.Event, onDurable func() *AdminReply) {
	a.commitOrUndo(ctx, audit, ev, onDurable, nil)
}

// commitOrUndo is commit for a decision the coordinator applied before the
// append (so that the next command it takes sees it): onFailed undoes it
// if the append fails.
func (a *coordinatorActor) commitOrUndo(ctx actor.Context, audit *engine.OperatorActed, ev engine.Event, onDurable func() *AdminReply, onFailed func()) {
	replyTo, self := ctx.Sender(), addressOf(ctx, a)
	a.sys.appendThen(func(err error) delivery {
		return deliver(self, &structuralDurable{onDurable: onDurable, onFailed: onFailed, replyTo: replyTo, err: err})
	}, a.sys.audited(audit, engine.CurrencyNone, ev)...)
}

func (a *coordinatorActor) createClient(ctx actor.Context, cmd *CreateClient) {
	sys := a.sys
	ev := &engine.ClientCreated{At: sys.nowMillis(), Client: engine.ClientID(sys.ids.UUID()), Name: cmd.Name}
	for _, m := range engine.Modes {
		for _, c := range sys.markets.CurrencyList() {
			ev.Wallets = append(ev.Wallets, engine.WalletAccount{Mode: m, Currency: c, Account: engine.AccountID(sys.ids.UUID())})
		}
	}
	a.commit(ctx, cmd.Audit, ev, func() *AdminReply {
		c := &engine.Client{ID: ev.Client, Name: ev.Name, CreatedAt: ev.At, Wallets: ev.Wallets}
		// The wallets are readable from the moment the 201 is sent: publish
		// their (empty) views now; the treasury actors own them from here.
		for _, w := range ev.Wallets {
			ref := &accountRef{}
			ref.view.Store(&engine.Account{ID: w.Account, Kind: engine.AccountWallet, Mode: w.Mode,
				Currency: w.Currency, Owner: ev.Client})
			sys.accounts.LoadOrStore(w.Account, ref)
		}
		for _, m := range engine.Modes {
			send(sys, sys.treasuries[m], &clientOpened{event: ev})
		}
		sys.directory.addClient(c)
		return &AdminReply{Result: engine.ResultOK, Client: c}
	})
}

func (a *coordinatorActor) createKey(ctx actor.Context, cmd *CreateKey) {
	sys := a.sys
	if _, ok := sys.Client(cmd.Client); !ok {
		ctx.Respond(&AdminReply{Result: engine.ResultClientNotFound})
		return
	}
	secret := a.newSecret("oja_"+cmd.Mode.String()+"_", keySecretChars)
	ev := &engine.KeyCreated{At: sys.nowMillis(), Key: engine.KeyID(sys.ids.UUID()), Client: cmd.Client,
		Mode: cmd.Mode, Hash: HashKey(secret)}
	a.commit(ctx, cmd.Audit, ev, func() *AdminReply {
		ref := &keyRef{key: engine.Key{ID: ev.Key, Client: ev.Client, Mode: ev.Mode, Hash: ev.Hash, CreatedAt: ev.At}}
		sys.directory.addKey(ref)
		k := ref.key
		return &AdminReply{Result: engine.ResultOK, Key: &k, Secret: secret}
	})
}

// rollKey makes a new key in one record with the old key's expiry. A key
// of another client or mode, or one that no longer works (revoked,
// expired), answers as a missing key; a key rolled already (or being
// rolled) is ResultKeyRolled: a key is rolled once, its successor may roll.
func (a *coordinatorActor) rollKey(ctx actor.Context, cmd *RollKey) {
	sys := a.sys
	now := sys.nowMillis()
	ref, ok := sys.directory.key(cmd.Key)
	if !ok || ref.key.Client != cmd.Client || ref.key.Mode != cmd.Mode || cmd.ExpiresIn < 0 {
		ctx.Respond(&AdminReply{Result: engine.ResultKeyNotFound})
		return
	}
	k := ref.key
	k.Revoked, k.ExpiresAt = ref.revoked.Load(), ref.expiresAt.Load()
	if res := engine.DecideKeyRoll(&k, now); res != engine.ResultOK || a.rolling[cmd.Key] {
		if res == engine.ResultOK { // its roll is in flight
			res = engine.ResultKeyRolled
		}
		ctx.Respond(&AdminReply{Result: res})
		return
	}
	secret := a.newSecret("oja_"+cmd.Mode.String()+"_", keySecretChars)
	ev := &engine.KeyRolled{At: now, Old: cmd.Key, Key: engine.KeyID(sys.ids.UUID()), Hash: HashKey(secret),
		ExpiresAt: now + cmd.ExpiresIn.Milliseconds()}
	a.rolling[cmd.Key] = true
	a.commitOrUndo(ctx, nil, ev, func() *AdminReply {
		delete(a.rolling, cmd.Key)
		ref.expiresAt.Store(ev.ExpiresAt)
		n := &keyRef{key: engine.Key{ID: ev.Key, Client: cmd.Client, Mode: cmd.Mode, Hash: ev.Hash, CreatedAt: ev.At, RolledFrom: cmd.Key}}
		sys.directory.addKey(n)
		k := n.key
		return &AdminReply{Result: engine.ResultOK, Key: &k, Secret: secret}
	}, func() { delete(a.rolling, cmd.Key) })
}

// newSecret returns prefix + n base62 characters, drawn without modulo
// bias: "oja_<mode>_…" for API keys, "whsec_…" for webhook secrets.
func (a *coordinatorActor) newSecret(prefix string, n int) string {
	out := make([]byte, 0, len(prefix)+n)
	out = append(out, prefix...)
	var buf [64]byte
	for len(out) < cap(out) {
		a.sys.ids.read(buf[:])
		for _, b := range buf {
			if b < 248 && len(out) < cap(out) { // 248 = 4 × 62
				out = append(out, base62[b%62])
			}
		}
	}
	return string(out)
}

func (a *coordinatorActor) revokeKey(ctx actor.Context, cmd *RevokeKey) {
	sys := a.sys
	ref, ok := sys.directory.key(cmd.Key)
	if !ok {
		ctx.Respond(&AdminReply{Result: engine.ResultKeyNotFound})
		return
	}
	if ref.revoked.Load() {
		ctx.Respond(&AdminReply{Result: engine.ResultOK})
		return
	}
	ev := &engine.KeyRevoked{At: sys.nowMillis(), Key: cmd.Key}
	a.commit(ctx, cmd.Audit, ev, func() *AdminReply {
		ref.revoked.Store(true)
		return &AdminReply{Result: engine.ResultOK}
	})
}

func (a *coordinatorActor) createPool(ctx actor.Context, cmd *CreatePool) {
	sys := a.sys
	if !sys.markets.Supported(cmd.Pair) {
		ctx.Respond(&AdminReply{Result: engine.ResultInvalidCurrencyPair})
		return
	}
	if !cmd.Owner.IsZero() {
		if _, ok := sys.Client(cmd.Owner); !ok {
			ctx.Respond(&AdminReply{Result: engine.ResultClientNotFound})
			return
		}
	}
	ev := &engine.PoolCreated{At: sys.nowMillis(), Pool: engine.PoolID(sys.ids.UUID()), Mode: cmd.Mode,
		Name: cmd.Name, Pair: cmd.Pair, Rate: cmd.Rate, Owner: cmd.Owner,
		LiquidityAccount: engine.AccountID(sys.ids.UUID()), ProceedsAccount: engine.AccountID(sys.ids.UUID())}
	a.commit(ctx, cmd.Audit, ev, func() *AdminReply {
		p := engine.NewPool(ev)
		sys.startPool(p)
		send(sys, sys.pairs[engine.BookKey{Mode: p.Mode, Pair: p.Pair}], &poolAdded{entry: p.BookEntry(), info: poolInfoOf(p)})
		return &AdminReply{Result: engine.ResultOK, Pool: p.Clone()}
	})
}
