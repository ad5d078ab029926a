package actors

import (
	"bytes"
	"errors"
	"slices"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/oja-exchange/oja/engine"
)

// webhookDirectory is the live list of each client's webhook endpoints
// (registrations only: the outbox is the engine.State's, which the log
// follower keeps and the webhook dispatcher drains). Only the coordinator
// writes it, when it decides a create or delete (createWebhook says why).
type webhookDirectory struct {
	mu    sync.RWMutex
	hooks map[engine.ClientID][]*engine.Webhook // creation order; entries immutable
}

func (d *webhookDirectory) init(state *engine.State) {
	d.hooks = make(map[engine.ClientID][]*engine.Webhook)
	for _, w := range state.WebhooksInOrder() {
		r := w.Registration()
		d.hooks[w.Client] = append(d.hooks[w.Client], &r)
	}
}

func (d *webhookDirectory) of(c engine.ClientID) []*engine.Webhook {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.hooks[c]
}

func (d *webhookDirectory) add(w *engine.Webhook) {
	d.mu.Lock()
	d.hooks[w.Client] = append(slices.Clip(d.hooks[w.Client]), w)
	d.mu.Unlock()
}

// own is the client's endpoint id of mode from the registry; not found
// (another client's or mode's, or none), it answers the request with
// ResultWebhookNotFound and returns nil.
func (a *coordinatorActor) own(ctx actor.Context, client engine.ClientID, mode engine.Mode, id engine.WebhookID) *engine.Webhook {
	hooks := a.sys.webhooks.of(client)
	if i := slices.IndexFunc(hooks, func(w *engine.Webhook) bool { return w.ID == id && w.Mode == mode }); i >= 0 {
		return hooks[i]
	}
	ctx.Respond(&AdminReply{Result: engine.ResultWebhookNotFound})
	return nil
}

// replace swaps the entry with w's id for w, keeping its place.
func (d *webhookDirectory) replace(w *engine.Webhook) {
	d.mu.Lock()
	defer d.mu.Unlock()
	hooks := slices.Clone(d.hooks[w.Client])
	if i := slices.IndexFunc(hooks, func(x *engine.Webhook) bool { return x.ID == w.ID }); i >= 0 {
		hooks[i] = w
		d.hooks[w.Client] = hooks
	}
}

func (d *webhookDirectory) remove(c engine.ClientID, id engine.WebhookID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	hooks := slices.DeleteFunc(slices.Clone(d.hooks[c]), func(w *engine.Webhook) bool { return w.ID == id })
	if len(hooks) == 0 {
		delete(d.hooks, c)
		return
	}
	d.hooks[c] = hooks
}

// webhookSecretChars is the number of random base62 characters of a
// webhook signing secret (~238 bits).
const webhookSecretChars = 40

// createWebhook and deleteWebhook change the directory when they decide,
// before the append, so that the next command the coordinator takes — a
// second create against the limit, a second delete of the same endpoint —
// is decided against it: otherwise both would be logged and replay, which
// applies the same checks in log order, would refuse the second (a log the
// service cannot restart from). A failed append undoes the change (the log
// has failed; every later write is refused until a restart rebuilds the
// directory from the log).
func (a *coordinatorActor) createWebhook(ctx actor.Context, cmd *CreateWebhook) {
	sys := a.sys
	if _, ok := sys.Client(cmd.Client); !ok {
		ctx.Respond(&AdminReply{Result: engine.ResultClientNotFound})
		return
	}
	ev := &engine.WebhookCreated{At: sys.nowMillis(), Webhook: engine.WebhookID(sys.ids.UUID()), Client: cmd.Client,
		Mode: cmd.Mode, URL: cmd.URL, Events: cmd.Events, Secret: a.newSecret("whsec_", webhookSecretChars)}
	if err := engine.CheckWebhookCreated(sys.webhooks.of(cmd.Client), ev); err != nil {
		result := engine.ResultValidation
		if errors.Is(err, engine.ErrTooManyWebhooks) {
			result = engine.ResultTooManyWebhooks
		}
		ctx.Respond(&AdminReply{Result: result})
		return
	}
	w := &engine.Webhook{ID: ev.Webhook, Client: ev.Client, Mode: ev.Mode, URL: ev.URL, Events: ev.Events,
		Secret: ev.Secret, CreatedAt: ev.At}
	sys.webhooks.add(w)
	a.commitOrUndo(ctx, nil, ev, func() *AdminReply {
		return &AdminReply{Result: engine.ResultOK, Webhook: w, Secret: ev.Secret}
	}, func() { sys.webhooks.remove(w.Client, w.ID) })
}

// updateWebhook logs an endpoint's new URL and events (the unchanged one
// filled from the registry) and, once durable, puts the new registration
// in the registry in the old one's place.
func (a *coordinatorActor) updateWebhook(ctx actor.Context, cmd *UpdateWebhook) {
	sys := a.sys
	found := a.own(ctx, cmd.Client, cmd.Mode, cmd.Webhook)
	if found == nil {
		return
	}
	w := *found
	if cmd.URL != "" {
		w.URL = cmd.URL
	}
	if cmd.Events != 0 {
		w.Events = cmd.Events
	}
	ev := &engine.WebhookUpdated{At: sys.nowMillis(), Webhook: w.ID, URL: w.URL, Events: w.Events}
	a.commit(ctx, nil, ev, func() *AdminReply {
		sys.webhooks.replace(&w)
		out := w
		out.Secret = ""
		return &AdminReply{Result: engine.ResultOK, Webhook: &out}
	})
}

// rotateWebhookSecret logs a new signing secret for an endpoint; the
// registry keeps no secret to change (deliveries sign with the replica's,
// told by the state's webhook observer).
func (a *coordinatorActor) rotateWebhookSecret(ctx actor.Context, cmd *RotateWebhookSecret) {
	sys := a.sys
	if cmd.PreviousFor < 0 {
		ctx.Respond(&AdminReply{Result: engine.ResultWebhookNotFound})
		return
	}
	found := a.own(ctx, cmd.Client, cmd.Mode, cmd.Webhook)
	if found == nil {
		return
	}
	now := sys.nowMillis()
	ev := &engine.WebhookSecretRotated{At: now, Webhook: cmd.Webhook, Secret: a.newSecret("whsec_", webhookSecretChars),
		PreviousUntil: now + cmd.PreviousFor.Milliseconds()}
	a.commit(ctx, nil, ev, func() *AdminReply {
		w := *found
		w.Secret, w.PreviousSecret, w.PreviousUntil = "", "", ev.PreviousUntil
		return &AdminReply{Result: engine.ResultOK, Webhook: &w, Secret: ev.Secret}
	})
}

func (a *coordinatorActor) deleteWebhook(ctx actor.Context, cmd *DeleteWebhook) {
	sys := a.sys
	w := a.own(ctx, cmd.Client, cmd.Mode, cmd.Webhook)
	if w == nil {
		return
	}
	sys.webhooks.remove(cmd.Client, cmd.Webhook)
	ev := &engine.WebhookDeleted{At: sys.nowMillis(), Webhook: cmd.Webhook}
	a.commitOrUndo(ctx, nil, ev, func() *AdminReply {
		return &AdminReply{Result: engine.ResultOK}
	}, func() { sys.webhooks.add(w) })
}

// Webhooks returns the client's endpoints (both modes), oldest first,
// without their secrets.
func (s *System) Webhooks(client engine.ClientID) []engine.Webhook {
	hooks := s.webhooks.of(client)
	out := make([]engine.Webhook, len(hooks))
	for i, w := range hooks {
		out[i] = *w
		out[i].Secret = ""
	}
	return out
}

// WebhookToDeliver is one of the client's endpoints in mode m with its
// signing secrets, as a dispatcher needs it (a test delivery to an
// endpoint the dispatcher has not heard of yet from the log). Never for
// an answer: a secret is shown once, at creation or rotation.
func (s *System) WebhookToDeliver(client engine.ClientID, m engine.Mode, id engine.WebhookID) (*engine.Webhook, bool) {
	for _, w := range s.webhooks.of(client) {
		if w.ID == id && w.Mode == m {
			c := *w
			return &c, true
		}
	}
	return nil, false
}

// SettleWebhookEvents records deliveries (and abandoned events) durably, in
// one append, and waits for it. The dispatcher calls it; no actor's state
// changes (the outbox is the log follower's), so it does not go through
// one.
func (s *System) SettleWebhookEvents(evs []*engine.WebhookSettled) error {
	if len(evs) == 0 {
		return nil
	}
	recs := make([][]byte, len(evs))
	for i, ev := range evs {
		recs[i] = engine.AppendEvent(make([]byte, 0, 64), ev)
	}
	return s.appendRecords(recs)
}

// appendRecords appends records that no actor decides (they change only
// the log's state: settlements, keys' last uses) and waits until they are
// durable.
func (s *System) appendRecords(recs [][]byte) error {
	if err := s.writable(); err != nil {
		return err
	}
	done := make(chan error, 1)
	s.log.Append(recs, func(_ uint64, err error) {
		if err != nil && s.storage.CompareAndSwap(nil, &err) {
			s.cfg.Logger.Error("log append failed: writes refused until restart", "err", err)
		}
		done <- err
	})
	return <-done
}

// RecordKeyUses writes one KeysUsed record of the keys used since their
// last recorded use (a key's lastUsedAt, to the minute: GET
// /partners/keys), if any. Maintain calls it every minute; a use in the
// minute before a crash may be lost, never a use that did not happen.
func (s *System) RecordKeyUses() error {
	uses := s.directory.unrecordedUses()
	if len(uses) == 0 {
		return nil
	}
	slices.SortFunc(uses, func(a, b engine.KeyUse) int { return bytes.Compare(a.Key[:], b.Key[:]) })
	ev := &engine.KeysUsed{At: s.nowMillis(), Uses: uses}
	if err := s.appendRecords([][]byte{engine.AppendEvent(make([]byte, 0, 16+len(uses)*24), ev)}); err != nil {
		return err
	}
	s.directory.markRecorded(uses)
	return nil
}
