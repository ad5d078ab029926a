package engine

// Effects are what applying records asks of the world outside the state,
// as data (in the spirit of etcd's raft Ready): the webhook changes a
// dispatcher acts on and the partner events a history keeps. Apply only
// appends them, when collecting is on (CollectEffects); the caller takes
// them after Apply — outside any lock it holds around the state — hands
// them out, and clears them. Nothing outside the state is called from
// inside Apply.
type Effects struct {
	// Webhooks are the endpoint and outbox changes, in order.
	Webhooks []WebhookEffect
	// Events are the partner events made (every webhook kind of every
	// quote and receipt, whether or not an endpoint subscribes), in order,
	// Quote filled in.
	Events []OwedEvent
}

// WebhookEffectKind is what changed for a webhook dispatcher.
type WebhookEffectKind uint8

const (
	// EffectRegistered: an endpoint was created, or its URL, events or
	// signing secrets changed.
	EffectRegistered WebhookEffectKind = iota + 1
	// EffectDeleted: an endpoint was deleted with the events it was owed.
	EffectDeleted
	// EffectOwed: Event was appended to the endpoint's outbox.
	EffectOwed
	// EffectDropped: Event was not owed: the endpoint's outbox was full.
	EffectDropped
)

// WebhookEffect is one change for a dispatcher: the endpoint's
// registration as it was then (without its outbox), and the event for
// EffectOwed and EffectDropped.
type WebhookEffect struct {
	Kind    WebhookEffectKind
	Webhook Webhook
	Event   OwedEvent
}

// CollectEffects turns collecting webhook effects and partner events on
// or off (both off by default: replay and the actors need neither).
func (s *State) CollectEffects(webhooks, events bool) {
	s.collectWebhooks, s.collectEvents = webhooks, events
}

// Effects returns the effects of the records applied since the last
// ClearEffects; valid until the next Apply or ClearEffects.
func (s *State) Effects() *Effects { return &s.effects }

// ClearEffects drops the collected effects (keeping their storage).
func (s *State) ClearEffects() {
	clear(s.effects.Webhooks)
	clear(s.effects.Events)
	s.effects.Webhooks, s.effects.Events = s.effects.Webhooks[:0], s.effects.Events[:0]
}

// Tell hands the webhook effects to o, in order.
func (e *Effects) Tell(o WebhookObserver) {
	for i := range e.Webhooks {
		x := &e.Webhooks[i]
		switch x.Kind {
		case EffectRegistered:
			o.Registered(&x.Webhook)
		case EffectDeleted:
			o.Deleted(&x.Webhook)
		case EffectOwed:
			o.Owed(&x.Webhook, &x.Event)
		case EffectDropped:
			o.Dropped(&x.Webhook, &x.Event)
		}
	}
}

// webhookEffect records a webhook effect, when collecting.
func (s *State) webhookEffect(kind WebhookEffectKind, w *Webhook, e *OwedEvent) {
	if !s.collectWebhooks {
		return
	}
	x := WebhookEffect{Kind: kind, Webhook: w.Registration()}
	if e != nil {
		x.Event = *e
	}
	s.effects.Webhooks = append(s.effects.Webhooks, x)
}
