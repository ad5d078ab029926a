package clientcheck_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oja-exchange/oja/client"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
	"github.com/oja-exchange/oja/gateway/webhook"
)

func hmacHex(secret, msg string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(msg))
	return hex.EncodeToString(mac.Sum(nil))
}

// TestClientWebhooks: create shows the secret once, list shows the
// endpoint without it, delete removes it, a second delete is NOT_FOUND;
// the operator sees it with its backlog.
func TestClientWebhooks(t *testing.T) {
	s := gatewaytest.Start(t, gatewaytest.Options{WebhookAllowPrivate: true})
	p := s.NewPartner(t, "hooks")
	c, err := client.New(s.URL, p.SandboxKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h, err := c.CreateWebhook(ctx, "http://127.0.0.1:9/oja", []string{client.EventQuoteExpired, client.EventQuoteCreated})
	if err != nil {
		t.Fatal(err)
	}
	if h.Secret == "" || h.WebhookID == "" || len(h.Events) != 2 || h.Events[0] != client.EventQuoteCreated || h.CreatedAt.IsZero() {
		t.Fatalf("created %+v", h)
	}
	list, err := c.Webhooks(ctx)
	if err != nil || len(list) != 1 || list[0].WebhookID != h.WebhookID || list[0].Secret != "" {
		t.Fatalf("list %+v, %v", list, err)
	}
	adm, err := client.NewAdmin(s.Admin, gatewaytest.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := adm.ClientWebhooks(ctx, p.Client.ID.String())
	if err != nil || len(hooks) != 1 || hooks[0].Mode != client.ModeSandbox || hooks[0].URL != h.URL {
		t.Fatalf("operator view %+v, %v", hooks, err)
	}
	if _, err := c.CreateWebhook(ctx, "http://127.0.0.1:9/oja", []string{"quote.paid"}); !isCode(err, "VALIDATION_ERROR") {
		t.Fatalf("unknown event: %v", err)
	}
	updated, err := c.UpdateWebhook(ctx, h.WebhookID, "", []string{client.EventQuoteCompleted})
	if err != nil || updated.URL != h.URL || len(updated.Events) != 1 || updated.Events[0] != client.EventQuoteCompleted || updated.Secret != "" {
		t.Fatalf("update %+v, %v", updated, err)
	}
	if _, err := c.UpdateWebhook(ctx, h.WebhookID, "", nil); !isCode(err, "VALIDATION_ERROR") {
		t.Fatalf("an empty update: %v", err)
	}
	rotated, err := c.RotateWebhookSecret(ctx, h.WebhookID)
	if err != nil || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.Secret == h.Secret || rotated.PreviousSecretExpiresAt.Sub(s.Now()) < 23*time.Hour {
		t.Fatalf("rotate %+v, %v", rotated, err)
	}
	// No dispatcher runs in this test server: a test event is 503.
	if _, err := c.TestWebhook(ctx, h.WebhookID); !isCode(err, "UNAVAILABLE") {
		t.Fatalf("test without a dispatcher: %v", err)
	}
	if err := c.DeleteWebhook(ctx, h.WebhookID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TestWebhook(ctx, h.WebhookID); !isCode(err, "NOT_FOUND") {
		t.Fatalf("test of a deleted endpoint: %v", err)
	}
	if err := c.DeleteWebhook(ctx, h.WebhookID); !isCode(err, "NOT_FOUND") {
		t.Fatalf("second delete: %v", err)
	}
}

func isCode(err error, code string) bool {
	var e *client.APIError
	return errors.As(err, &e) && e.Code == code
}

// TestVerifyWebhook: what the service signs verifies; a changed body, a
// wrong secret, an old timestamp and malformed headers do not.
func TestVerifyWebhook(t *testing.T) {
	const secret = "whsec_abc"
	body := []byte(`{"id":"evt_1","type":"quote.created","createdAt":"2026-11-25T10:00:00.000Z","mode":"live","data":{"quote":{"quoteId":"q"}}}`)
	now := time.Now().Unix()
	header := webhook.Sign(secret, now, body)
	if want := "t=" + strconv.FormatInt(now, 10) + ",v1=" + hmacHex(secret, strconv.FormatInt(now, 10)+"."+string(body)); header != want {
		t.Fatalf("service signs %q, the scheme gives %q", header, want)
	}
	ev, err := client.VerifyWebhook(secret+"\n", header, body, 5*time.Minute)
	if err != nil || ev.ID != "evt_1" || ev.Mode != client.ModeLive || ev.Data.Quote.QuoteID != "q" {
		t.Fatalf("verify: %+v, %v", ev, err)
	}
	// A rotated-secret header with two signatures verifies with either.
	two := header + ",v1=" + hmacHex("whsec_old", strconv.FormatInt(now, 10)+"."+string(body))
	if _, err := client.VerifyWebhook(secret, two, body, time.Minute); err != nil {
		t.Fatalf("two signatures: %v", err)
	}
	for name, tc := range map[string]struct {
		secret, header string
		body           []byte
		want           error
	}{
		"changed body": {secret, header, append([]byte(nil), append(body[:len(body)-1:len(body)-1], ' ', '}')...), client.ErrWebhookSignature},
		"wrong secret": {"whsec_other", header, body, client.ErrWebhookSignature},
		"old":          {secret, webhook.Sign(secret, now-3600, body), body, client.ErrWebhookTimestamp},
		"no signature": {secret, "t=" + strconv.FormatInt(now, 10), body, client.ErrWebhookHeader},
		"no timestamp": {secret, "v1=00", body, client.ErrWebhookHeader},
		"not hex":      {secret, "t=1,v1=zz", body, client.ErrWebhookHeader},
		"garbage":      {secret, "Bearer x", body, client.ErrWebhookHeader},
	} {
		if _, err := client.VerifyWebhook(tc.secret, tc.header, tc.body, 5*time.Minute); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

// TestResponseBody: the option hands over the answer as the service sent
// it, for a success and for a refusal.
func TestResponseBody(t *testing.T) {
	s := gatewaytest.Start(t, gatewaytest.Options{})
	p := s.NewPartner(t, "raw")
	adm, err := client.NewAdmin(s.Admin, gatewaytest.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	detail, err := adm.GetClient(context.Background(), p.Client.ID.String(), client.ResponseBody(&raw))
	if err != nil || detail.Name != "raw" || !strings.HasPrefix(string(raw), `{"clientId":"`+p.Client.ID.String()) {
		t.Fatalf("success: %+v, %v, body %s", detail, err, raw)
	}
	_, err = adm.GetQuote(context.Background(), "6f1c1f43-0000-4000-8000-000000000000", client.ResponseBody(&raw))
	if !isCode(err, "QUOTE_NOT_FOUND") || !strings.Contains(string(raw), `"code":"QUOTE_NOT_FOUND"`) {
		t.Fatalf("refusal: %v, body %s", err, raw)
	}
}

// TestClientKeys: Keys lists the caller's working keys of its mode.
func TestClientKeys(t *testing.T) {
	s := gatewaytest.Start(t, gatewaytest.Options{})
	p := s.NewPartner(t, "keys")
	c, err := client.New(s.URL, p.LiveKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keys, err := c.Keys(ctx)
	if err != nil || len(keys) != 1 || keys[0].Mode != client.ModeLive || keys[0].KeyID == "" || keys[0].CreatedAt.IsZero() || keys[0].ExpiresAt != nil ||
		keys[0].LastUsedAt == nil || keys[0].LastUsedAt.Sub(s.Now()).Abs() > time.Minute {
		t.Fatalf("keys %+v, %v (the calling key was just used)", keys, err)
	}
	rolled, err := c.RollKey(ctx, keys[0].KeyID, 24)
	if err != nil || rolled.Mode != client.ModeLive || !strings.HasPrefix(rolled.Key, "oja_live_") || rolled.KeyID == keys[0].KeyID {
		t.Fatalf("roll %+v, %v", rolled, err)
	}
	c2, err := client.New(s.URL, rolled.Key)
	if err != nil {
		t.Fatal(err)
	}
	keys, err = c2.Keys(ctx)
	if err != nil || len(keys) != 2 || keys[0].ExpiresAt == nil || keys[0].ExpiresAt.Sub(s.Now()) < 23*time.Hour || keys[1].KeyID != rolled.KeyID {
		t.Fatalf("after the roll %+v, %v", keys, err)
	}
	if _, err := c2.RollKey(ctx, keys[0].KeyID, 721); !isCode(err, "VALIDATION_ERROR") {
		t.Fatalf("roll for 721 hours: %v", err)
	}
}
