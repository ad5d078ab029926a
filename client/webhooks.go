package client

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Webhook event types a webhook may subscribe to.
const (
	EventQuoteCreated   = "quote.created"
	EventQuoteAccepted  = "quote.accepted"
	EventQuoteCompleted = "quote.completed"
	EventQuoteCancelled = "quote.cancelled"
	EventQuoteExpired   = "quote.expired"
)

// Webhook is a registered endpoint. Secret is set only in CreateWebhook's
// answer: keep it to verify deliveries (VerifyWebhook).
type Webhook struct {
	WebhookID string    `json:"webhookId"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	Secret    string    `json:"secret,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// CreateWebhook registers an endpoint for the key's client and mode that
// receives the named events of its quotes (POST /partners/webhooks).
func (c *Client) CreateWebhook(ctx context.Context, endpoint string, events []string, opts ...CallOption) (Webhook, error) {
	body := struct {
		URL    string   `json:"url"`
		Events []string `json:"events"`
	}{endpoint, events}
	var out Webhook
	_, err := c.t.do(ctx, newCall(http.MethodPost, "/partners/webhooks", body, opts), &out)
	return out, err
}

// Webhooks lists the key's client's endpoints in the key's mode, oldest
// first, without secrets (GET /partners/webhooks).
func (c *Client) Webhooks(ctx context.Context, opts ...CallOption) ([]Webhook, error) {
	var out struct {
		Data []Webhook `json:"data"`
	}
	_, err := c.t.do(ctx, newCall(http.MethodGet, "/partners/webhooks", nil, opts), &out)
	return out.Data, err
}

// DeleteWebhook removes an endpoint; events still owed to it are dropped
// (DELETE /partners/webhooks/{id}).
func (c *Client) DeleteWebhook(ctx context.Context, webhookID string, opts ...CallOption) error {
	_, err := c.t.do(ctx, newCall(http.MethodDelete, "/partners/webhooks/"+url.PathEscape(webhookID), nil, opts), nil)
	return err
}

// WebhookEvent is the body of a delivery.
type WebhookEvent struct {
	ID        string    `json:"id"` // evt_…: the same on every attempt
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"createdAt"`
	Mode      Mode      `json:"mode"`
	Data      struct {
		Quote Quote `json:"quote"` // the quote as this event left it
		// Payin is a payin.received event's receipt (nil otherwise).
		Payin *Receipt `json:"payin,omitempty"`
		// WebhookID is the endpoint a webhook.test event (TestWebhook)
		// was sent to; it carries no quote.
		WebhookID string `json:"webhookId,omitempty"`
	} `json:"data"`
}

// UpdateWebhook replaces an endpoint's URL (when not empty), its events
// (when not nil), or both (PATCH /partners/webhooks/{id}), and returns
// the endpoint as it is now. Events already owed go to the new URL.
func (c *Client) UpdateWebhook(ctx context.Context, webhookID, endpoint string, events []string, opts ...CallOption) (Webhook, error) {
	body := struct {
		URL    string   `json:"url,omitempty"`
		Events []string `json:"events,omitempty"`
	}{endpoint, events}
	var out Webhook
	_, err := c.t.do(ctx, newCall(http.MethodPatch, "/partners/webhooks/"+url.PathEscape(webhookID), body, opts), &out)
	return out, err
}

// RotatedSecret is the answer to RotateWebhookSecret.
type RotatedSecret struct {
	Secret                  string    `json:"secret"` // shown only here
	PreviousSecretExpiresAt time.Time `json:"previousSecretExpiresAt"`
}

// RotateWebhookSecret gives an endpoint a new signing secret (POST
// /partners/webhooks/{id}/rotate-secret). Until PreviousSecretExpiresAt
// (24 h) deliveries carry two v1 signatures, the new secret's and the
// previous one's, so a receiver can switch to the new secret at its own
// pace; VerifyWebhook accepts either.
func (c *Client) RotateWebhookSecret(ctx context.Context, webhookID string, opts ...CallOption) (RotatedSecret, error) {
	var out RotatedSecret
	_, err := c.t.do(ctx, newCall(http.MethodPost, "/partners/webhooks/"+url.PathEscape(webhookID)+"/rotate-secret", nil, opts), &out)
	return out, err
}

// WebhookTest is the answer to TestWebhook.
type WebhookTest struct {
	WebhookID string `json:"webhookId"`
	EventID   string `json:"eventId"` // the delivered event's id (Oja-Event-Id)
	Type      string `json:"type"`    // webhook.test
}

// TestWebhook has a webhook.test event delivered to the endpoint once, in
// the background, signed like every event, whatever it subscribes to (POST
// /partners/webhooks/{id}/test → 202). It is not retried; the operator sees
// its outcome as the endpoint's last attempt. A second test while one is in
// flight is an APIError 429 RATE_LIMITED; right after CreateWebhook the
// service may answer 503 UNAVAILABLE for a moment (retry).
func (c *Client) TestWebhook(ctx context.Context, webhookID string, opts ...CallOption) (WebhookTest, error) {
	var out WebhookTest
	_, err := c.t.do(ctx, newCall(http.MethodPost, "/partners/webhooks/"+url.PathEscape(webhookID)+"/test", nil, opts), &out)
	return out, err
}

// Errors of VerifyWebhook.
var (
	ErrWebhookSignature = errors.New("client: webhook signature does not match")
	ErrWebhookTimestamp = errors.New("client: webhook timestamp outside the tolerance")
	ErrWebhookHeader    = errors.New("client: malformed Oja-Signature header")
)

// VerifyWebhook checks a delivery's Oja-Signature header against the
// endpoint's secret and the raw body (as received, before any parsing),
// and that its timestamp is within tolerance of now (replays of an old
// delivery fail; 0 skips that check), then decodes the event. The header
// is "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>"; more
// than one v1 may be present (any matching one verifies).
func VerifyWebhook(secret, header string, body []byte, tolerance time.Duration) (WebhookEvent, error) {
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return WebhookEvent{}, ErrWebhookHeader
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil {
				return WebhookEvent{}, ErrWebhookHeader
			}
			sigs = append(sigs, sig)
		}
	}
	sent, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return WebhookEvent{}, ErrWebhookHeader
	}
	mac := hmac.New(sha256.New, []byte(strings.TrimSpace(secret)))
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	want := mac.Sum(nil)
	matched := false
	for _, sig := range sigs {
		matched = matched || hmac.Equal(sig, want)
	}
	if !matched {
		return WebhookEvent{}, ErrWebhookSignature
	}
	if tolerance > 0 && time.Since(time.Unix(sent, 0)).Abs() > tolerance {
		return WebhookEvent{}, ErrWebhookTimestamp
	}
	var ev WebhookEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return WebhookEvent{}, err
	}
	return ev, nil
}

// WebhookBacklog is an endpoint's delivery state as an operator sees it.
type WebhookBacklog struct {
	Owed          int        `json:"owed"`
	InFlight      int        `json:"inFlight"`
	Dropped       uint64     `json:"dropped"`
	OldestOwedAt  *time.Time `json:"oldestOwedAt,omitempty"`
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
	Pending       bool       `json:"pending,omitempty"` // not yet fed to the dispatcher (just started)
	LastAttempt   *struct {
		At      time.Time `json:"at"`
		EventID string    `json:"eventId"`
		Attempt int       `json:"attempt"`
		Status  int       `json:"status,omitempty"`
		Error   string    `json:"error,omitempty"`
	} `json:"lastAttempt,omitempty"`
}

// ClientWebhook is one of a client's endpoints with its backlog.
type ClientWebhook struct {
	WebhookID string          `json:"webhookId"`
	Mode      Mode            `json:"mode"`
	URL       string          `json:"url"`
	Events    []string        `json:"events"`
	CreatedAt time.Time       `json:"createdAt"`
	Backlog   *WebhookBacklog `json:"backlog,omitempty"`
}

// ClientWebhooks lists a client's endpoints in both modes with their
// delivery backlog (GET /admin/v1/clients/{id}/webhooks; oja admin
// webhooks).
func (a *Admin) ClientWebhooks(ctx context.Context, clientID string, opts ...CallOption) ([]ClientWebhook, error) {
	var out struct {
		Data []ClientWebhook `json:"data"`
	}
	_, err := a.t.do(ctx, newCall(http.MethodGet, "/clients/"+url.PathEscape(clientID)+"/webhooks", nil, opts), &out)
	return out.Data, err
}
