// Package webhook delivers partners' webhook events: signed POSTs of quote
// state changes, retried with exponential backoff, at least once.
//
// What is owed comes from the log, not from the request path: the engine
// State owes an event to every subscribed endpoint when it applies a quote
// event (engine/webhook.go), and the log follower, which applies every
// durable record to a State of its own, tells the Dispatcher through
// engine.WebhookObserver (in cluster mode, the leader's replica does). When
// an event is delivered (a 2xx within the timeout) or abandoned (its retry
// window over), the Dispatcher records a WebhookSettled in the log; until
// then a restart owes it again. So an event survives kill -9 and keeps its
// id across attempts and restarts; a partner may see one twice (at least
// once), and loses one only by deleting the endpoint or letting its outbox
// fill (engine.WebhookOwedMax events; counted as dropped).
//
// Isolation: every endpoint has its own goroutine, queue and at most
// Config.Concurrency requests in flight, so a slow or dead endpoint delays
// only its own events; the trading path never waits for a delivery (the
// follower only appends to a queue). Order: an endpoint receives a quote's
// events in log order — the next event of a quote is not attempted before
// the previous one is settled — while events of different quotes go out
// side by side.
//
// SSRF: CheckURL refuses, at registration, URLs whose host is or resolves
// to a loopback, private, link-local, multicast, unspecified or other
// special-purpose address (cloud metadata among them), and the dialer
// checks the address actually connected to again (a name that resolved to
// a public address at registration and to a private one later is refused
// then). Redirects are not followed. Config.AllowPrivate lifts both, for
// tests and on-premise receivers.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Header names of a delivery.
const (
	SignatureHeader = "Oja-Signature"
	AttemptHeader   = "Oja-Delivery-Attempt"
	EventIDHeader   = "Oja-Event-Id"
)

// Sign returns the Oja-Signature header value for a body sent at unix
// time t: "t=<t>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>" (Stripe's
// scheme; the key is the whole secret string, "whsec_" included).
func Sign(secret string, t int64, body []byte) string {
	ts := strconv.FormatInt(t, 10)
	return "t=" + ts + ",v1=" + signature(secret, ts, body)
}

// signature is hex(HMAC-SHA256(secret, ts + "." + body)), one v1 value.
func signature(secret, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}
