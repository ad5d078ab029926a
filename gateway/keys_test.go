package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

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
			if _, used := m["lastUsedAt"]; used {
				wantKeys(t, "key", m, "keyId", "mode", "createdAt", "lastUsedAt")
				wantTimestamp(t, m, "lastUsedAt")
			} else {
				wantKeys(t, "key", m, "keyId", "mode", "createdAt")
			}
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

// TestRollKey: a partner rolls its own key: the answer shows the new key
// once; the old key keeps working for expiresInHours and not after (the
// expiry survives a restart); 0 ends it at once; another client's or
// mode's key, a revoked or expired one, is 404; bad input is refused,
// naming the member, and changes nothing.
func TestRollKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := gatewaytest.Start(t, gatewaytest.Options{Dir: dir})
	ada, bola := s.NewPartner(t, "Ada"), s.NewPartner(t, "Bola")
	keys := func(key string) []map[string]any {
		t.Helper()
		var out []map[string]any
		for _, k := range getArray(t, wantOK(t, do(t, http.MethodGet, s.URL+"/api/v1/partners/keys", key, nil)), "data") {
			out = append(out, k.(map[string]any))
		}
		return out
	}
	oldID := getString(t, keys(ada.LiveKey)[0], "keyId")
	roll := func(key, id string, body any) *response {
		return do(t, http.MethodPost, s.URL+"/api/v1/partners/keys/"+id+"/roll", key, body)
	}

	// Refusals first: nothing changes.
	for _, tc := range []struct {
		name string
		body any
	}{
		{"missing", map[string]any{}},
		{"negative", map[string]any{"expiresInHours": -1}},
		{"too long", map[string]any{"expiresInHours": 721}},
		{"fraction", map[string]any{"expiresInHours": 1.5}},
		{"string", map[string]any{"expiresInHours": "1"}},
	} {
		wantDetailsNames(t, wantError(t, roll(ada.LiveKey, oldID, tc.body), http.StatusBadRequest, "VALIDATION_ERROR"), "expiresInHours")
	}
	wantDetailsNames(t, wantError(t, roll(ada.LiveKey, oldID, map[string]any{"expiresInHours": 1, "key": "x"}), http.StatusBadRequest, "VALIDATION_ERROR"), "key")
	wantError(t, roll(ada.LiveKey, "not-a-uuid", map[string]any{"expiresInHours": 1}), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, roll(bola.LiveKey, oldID, map[string]any{"expiresInHours": 1}), http.StatusNotFound, "NOT_FOUND")
	wantError(t, roll(ada.SandboxKey, oldID, map[string]any{"expiresInHours": 1}), http.StatusNotFound, "NOT_FOUND")
	wantError(t, roll("", oldID, map[string]any{"expiresInHours": 1}), http.StatusUnauthorized, "UNAUTHORIZED")
	if got := keys(ada.LiveKey); len(got) != 1 || got[0]["expiresAt"] != nil {
		t.Fatalf("refused rolls changed the keys: %v", got)
	}

	// Roll the live key with an hour's grace.
	r := roll(ada.LiveKey, oldID, map[string]any{"expiresInHours": 1})
	made := wantCreated(t, r)
	wantKeys(t, "rolled key", made, "keyId", "key", "mode")
	newKey, newID := getString(t, made, "key"), getString(t, made, "keyId")
	if !strings.HasPrefix(newKey, "oja_live_") || made["mode"] != "live" || newID == oldID {
		t.Fatalf("roll answered %v", made)
	}
	if cc := r.header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("a new key's answer is cacheable: Cache-Control %q", cc)
	}
	both := keys(newKey)
	if len(both) != 2 || both[0]["keyId"] != oldID || both[1]["keyId"] != newID || both[1]["expiresAt"] != nil {
		t.Fatalf("after the roll: %v", both)
	}
	if at := wantTimestamp(t, both[0], "expiresAt"); at.Sub(s.Now()) < 59*time.Minute || at.Sub(s.Now()) > time.Hour {
		t.Fatalf("the old key expires at %v, want an hour after %v", at, s.Now())
	}
	wantStatus(t, do(t, http.MethodGet, s.URL+"/api/v1/partners/keys", ada.LiveKey, nil), http.StatusOK) // still works

	// The expiry is durable: after a restart, an hour later, the old key fails.
	s.Stop()
	s = gatewaytest.Start(t, gatewaytest.Options{Dir: dir})
	s.Advance(time.Hour)
	wantError(t, do(t, http.MethodGet, s.URL+"/api/v1/partners/keys", ada.LiveKey, nil), http.StatusUnauthorized, "UNAUTHORIZED")
	if got := keys(newKey); len(got) != 1 || got[0]["keyId"] != newID {
		t.Fatalf("after the old key expired: %v", got)
	}
	wantError(t, roll(newKey, oldID, map[string]any{"expiresInHours": 1}), http.StatusNotFound, "NOT_FOUND")

	// expiresInHours 0: the rolled key (here the calling one) fails at once.
	third := getString(t, wantCreated(t, roll(newKey, newID, map[string]any{"expiresInHours": 0})), "key")
	wantError(t, do(t, http.MethodGet, s.URL+"/api/v1/partners/keys", newKey, nil), http.StatusUnauthorized, "UNAUTHORIZED")
	if got := keys(third); len(got) != 1 || got[0]["keyId"] == newID {
		t.Fatalf("after rolling at once: %v", got)
	}
}

// TestKeyLastUsed: a key's lastUsedAt is when it last authenticated a
// request, to the minute (a request within the minute leaves it), shown
// to the partner and the operator; a key never used has none; it is
// recorded in the log by the minute's maintenance and survives a restart.
func TestKeyLastUsed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := gatewaytest.Start(t, gatewaytest.Options{Dir: dir})
	ada := s.NewPartner(t, "Ada")
	lastUsed := func(s *gatewaytest.Server, key string) map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, k := range getArray(t, wantOK(t, do(t, http.MethodGet, s.URL+"/api/v1/partners/keys", key, nil)), "data") {
			m := k.(map[string]any)
			at, _ := m["lastUsedAt"].(string)
			out[m["mode"].(string)] = at
		}
		return out
	}
	first := s.Now().UTC()
	got := lastUsed(s, ada.LiveKey)
	at, err := time.Parse(time.RFC3339Nano, got["live"])
	if err != nil || at.Sub(first).Abs() > time.Second {
		t.Fatalf("lastUsedAt after a request at %s: %q (%v)", first, got["live"], err)
	}
	if sandbox := lastUsed(s, ada.SandboxKey)["sandbox"]; sandbox == "" {
		t.Fatalf("the sandbox key, used by this very listing, shows no lastUsedAt")
	}
	s.Advance(30 * time.Second)
	if again := lastUsed(s, ada.LiveKey)["live"]; again != got["live"] {
		t.Fatalf("a request 30 s later moved lastUsedAt from %s to %s (it keeps the minute)", got["live"], again)
	}
	s.Advance(40 * time.Second)
	moved := lastUsed(s, ada.LiveKey)["live"]
	if moved == got["live"] {
		t.Fatalf("a request 70 s later left lastUsedAt at %s", moved)
	}
	adminView := wantOK(t, admin(t, s, http.MethodGet, "/admin/v1/clients/"+ada.Client.ID.String(), nil))
	for _, k := range getArray(t, adminView, "keys") {
		m := k.(map[string]any)
		if m["mode"] == "live" && m["lastUsedAt"] != moved {
			t.Fatalf("the operator sees lastUsedAt %v, the partner %s", m["lastUsedAt"], moved)
		}
	}
	s.Sys.Maintain() // records it
	s.Stop()
	s = gatewaytest.Start(t, gatewaytest.Options{Dir: dir})
	adminView = wantOK(t, admin(t, s, http.MethodGet, "/admin/v1/clients/"+ada.Client.ID.String(), nil))
	for _, k := range getArray(t, adminView, "keys") {
		m := k.(map[string]any)
		if m["mode"] == "live" && m["lastUsedAt"] != moved {
			t.Fatalf("after a restart lastUsedAt is %v, want %s", m["lastUsedAt"], moved)
		}
	}
}
