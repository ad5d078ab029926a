package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// TestListKeys: GET /partners/keys lists the caller's client's working keys
// of the calling key's mode, oldest first, without a secret or hash; a key
// the operator revoked drops out; another client's keys never show.
func TestListKeys(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	ada, bola := s.NewPartner(t, "Ada"), s.NewPartner(t, "Bola")
	list := func(key string) []map[string]any {
		t.Helper()
		r := do(t, http.MethodGet, s.URL+"/api/v1/partners/keys", key, nil)
		if strings.Contains(string(r.body), "oja_") {
			t.Fatalf("the key list shows a secret: %s", r.body)
		}
		page := wantOK(t, r)
		if page["hasMore"] != false {
			t.Fatalf("hasMore %v", page["hasMore"])
		}
		var out []map[string]any
		for _, k := range getArray(t, page, "data") {
			m := k.(map[string]any)
			wantKeys(t, "key", m, "keyId", "mode", "createdAt")
			wantUUID(t, m, "keyId")
			wantTimestamp(t, m, "createdAt")
			out = append(out, m)
		}
		return out
	}
	first := list(ada.SandboxKey)
	if len(first) != 1 || first[0]["mode"] != "sandbox" {
		t.Fatalf("Ada's sandbox keys %v", first)
	}
	if live := list(ada.LiveKey); len(live) != 1 || live[0]["mode"] != "live" || live[0]["keyId"] == first[0]["keyId"] {
		t.Fatalf("Ada's live keys %v (sandbox %v)", live, first)
	}

	// A second sandbox key: listed after the first; revoking the first
	// leaves only the second, seen through it.
	made := wantCreated(t, admin(t, s, http.MethodPost, "/admin/v1/clients/"+ada.Client.ID.String()+"/keys", map[string]any{"mode": "sandbox"}))
	second := getString(t, made, "keyId")
	both := list(ada.SandboxKey)
	if len(both) != 2 || both[0]["keyId"] != first[0]["keyId"] || both[1]["keyId"] != second {
		t.Fatalf("after a second key: %v", both)
	}
	for _, k := range list(bola.SandboxKey) {
		if k["keyId"] == first[0]["keyId"] || k["keyId"] == second {
			t.Fatalf("Bola sees Ada's key %v", k)
		}
	}
	wantStatus(t, admin(t, s, http.MethodDelete, "/admin/v1/keys/"+first[0]["keyId"].(string), nil), http.StatusNoContent)
	if left := list(getString(t, made, "key")); len(left) != 1 || left[0]["keyId"] != second {
		t.Fatalf("after revoking the first key: %v", left)
	}
	wantError(t, do(t, http.MethodGet, s.URL+"/api/v1/partners/keys?limit=5", getString(t, made, "key"), nil), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, do(t, http.MethodGet, s.URL+"/api/v1/partners/keys", "", nil), http.StatusUnauthorized, "UNAUTHORIZED")
}
