package main

import (
	"log/slog"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway"
	"github.com/oja-exchange/oja/gateway/webhook"
)

// newDispatcher builds the webhook dispatcher of a server: it renders
// events as the gateway does (gateway.RenderEvent) and records settlements
// through the running system (reached through a getter: it exists before
// the log follower starts the dispatcher, not when it is built).
func newDispatcher(cfg *serveConfig, logger *slog.Logger, sys func() *actors.System) *webhook.Dispatcher {
	return webhook.New(webhook.Config{
		RetryMin:     cfg.webhookRetryMin,
		AllowPrivate: cfg.webhookAllowPrivate,
		Logger:       logger.With("component", "webhooks"),
		Render:       gateway.RenderEvent,
		Settle: func(evs []*engine.WebhookSettled) error {
			s := sys()
			if s == nil {
				return actors.ErrUnavailable
			}
			return s.SettleWebhookEvents(evs)
		},
	})
}
