package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// KeyInfo is one of the caller's keys as GET /partners/keys lists it:
// never its secret.
type KeyInfo struct {
	KeyID     string    `json:"keyId"`
	Mode      Mode      `json:"mode"`
	CreatedAt time.Time `json:"createdAt"`
	// ExpiresAt is when a rolled key stops working (nil: never).
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// RolledFrom is the key a roll made this one from ("": created).
	RolledFrom string `json:"rolledFrom,omitempty"`
	// LastUsedAt is when the key last authenticated a request, to the
	// minute (nil: never recorded).
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty"`
}

// Keys lists the key's client's working keys in the key's mode, oldest
// first (GET /partners/keys); revoked and expired keys are left out.
func (c *Client) Keys(ctx context.Context, opts ...CallOption) ([]KeyInfo, error) {
	var out struct {
		Data []KeyInfo `json:"data"`
	}
	_, err := c.t.do(ctx, newCall(http.MethodGet, "/partners/keys", nil, opts), &out)
	return out.Data, err
}

// RolledKey is a new key from RollKey. Key is shown only in this answer.
type RolledKey struct {
	KeyID string `json:"keyId"`
	Key   string `json:"key"`
	Mode  Mode   `json:"mode"`
}

// RollKey makes a new key for the caller's client and mode and has keyID
// (one of the caller's working keys, the calling one included) stop
// working expiresInHours from now (0: at once; at most 720), in one durable
// write (POST /partners/keys/{keyId}/roll → 201). Deploy the new key before
// the old one lapses.
func (c *Client) RollKey(ctx context.Context, keyID string, expiresInHours int, opts ...CallOption) (RolledKey, error) {
	body := struct {
		ExpiresInHours int `json:"expiresInHours"`
	}{expiresInHours}
	var out RolledKey
	_, err := c.t.do(ctx, newCall(http.MethodPost, "/partners/keys/"+url.PathEscape(keyID)+"/roll", body, opts), &out)
	return out, err
}
