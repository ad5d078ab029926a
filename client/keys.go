package client

import (
	"context"
	"net/http"
	"time"
)

// KeyInfo is one of the caller's keys as GET /partners/keys lists it:
// never its secret.
type KeyInfo struct {
	KeyID     string    `json:"keyId"`
	Mode      Mode      `json:"mode"`
	CreatedAt time.Time `json:"createdAt"`
}

// Keys lists the key's client's working keys in the key's mode, oldest
// first (GET /partners/keys); revoked keys are left out.
func (c *Client) Keys(ctx context.Context, opts ...CallOption) ([]KeyInfo, error) {
	var out struct {
		Data []KeyInfo `json:"data"`
	}
	_, err := c.t.do(ctx, newCall(http.MethodGet, "/partners/keys", nil, opts), &out)
	return out.Data, err
}
