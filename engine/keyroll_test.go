package engine_test

import (
	"crypto/sha256"
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// TestKeyRolled: a roll adds the new key for the old key's client and mode
// and sets the old key's expiry; the old key works until then and not from
// then on; a key that no longer works cannot be rolled; the expiry survives
// a snapshot (version 5) and changes the state's hash.
func TestKeyRolled(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("ada").Client
	old := engine.KeyID(w.newID())
	w.apply(&engine.KeyCreated{At: w.now, Key: old, Client: ada, Mode: engine.ModeLive, Hash: sha256.Sum256([]byte("old"))})
	before := w.state.Hash()
	next := engine.KeyID(w.newID())
	expires := w.now + 3_600_000
	w.apply(&engine.KeyRolled{At: w.now, Old: old, Key: next, Hash: sha256.Sum256([]byte("new")), ExpiresAt: expires})
	k, n := w.state.Keys[old], w.state.Keys[next]
	if n == nil || n.Client != ada || n.Mode != engine.ModeLive || n.CreatedAt != w.now || n.ExpiresAt != 0 || n.Hash != sha256.Sum256([]byte("new")) {
		t.Fatalf("new key %+v", n)
	}
	if k.ExpiresAt != expires || !k.Works(expires-1) || k.Works(expires) || !n.Works(expires+1) {
		t.Fatalf("old key %+v: works before its expiry %v, after %v", k, k.Works(expires-1), k.Works(expires))
	}
	if w.state.Hash() == before {
		t.Fatal("a roll does not change the state's hash")
	}
	restored, err := engine.DecodeState(engine.EncodeState(w.state))
	if err != nil {
		t.Fatal(err)
	}
	if restored.Hash() != w.state.Hash() || restored.Keys[old].ExpiresAt != expires || restored.Keys[next].ExpiresAt != 0 {
		t.Fatalf("after a snapshot: old %+v, new %+v", restored.Keys[old], restored.Keys[next])
	}
	// Once expired, the old key cannot be rolled again; the new one can,
	// with an expiry at once.
	if err := w.state.Apply(&engine.KeyRolled{At: expires, Old: old, Key: engine.KeyID(w.newID()), ExpiresAt: expires}); err == nil {
		t.Fatal("an expired key was rolled")
	}
	third := engine.KeyID(w.newID())
	w.apply(&engine.KeyRolled{At: expires, Old: next, Key: third, ExpiresAt: expires})
	if w.state.Keys[next].Works(expires) {
		t.Fatal("a key rolled with expiry at once still works")
	}
}

// TestWebhookSecretRotated: a rotation makes the new secret current and
// keeps the replaced one, with its deadline, through a snapshot; a second
// rotation replaces the previous secret with the one it rotates out; a
// rotation of an unknown endpoint, to the current or an empty secret, or
// ending before it happens, is refused.
func TestWebhookSecretRotated(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("ada").Client
	hook := engine.WebhookID(w.newID())
	w.apply(&engine.WebhookCreated{At: w.now, Webhook: hook, Client: ada, Mode: engine.ModeLive, URL: "https://hooks.example.com/",
		Events: engine.WebhookEventsAll, Secret: "whsec_one"})
	for _, bad := range []*engine.WebhookSecretRotated{
		{At: w.now, Webhook: engine.WebhookID(w.newID()), Secret: "whsec_two", PreviousUntil: w.now},
		{At: w.now, Webhook: hook, Secret: "whsec_one", PreviousUntil: w.now},
		{At: w.now, Webhook: hook, Secret: "", PreviousUntil: w.now},
		{At: w.now, Webhook: hook, Secret: "whsec_two", PreviousUntil: w.now - 1},
	} {
		if err := w.state.Apply(bad); err == nil {
			t.Fatalf("rotation %+v accepted", bad)
		}
	}
	until := w.now + 86_400_000
	w.apply(&engine.WebhookSecretRotated{At: w.now, Webhook: hook, Secret: "whsec_two", PreviousUntil: until})
	got := w.state.Webhooks[hook]
	if got.Secret != "whsec_two" || got.PreviousSecret != "whsec_one" || got.PreviousUntil != until {
		t.Fatalf("after the rotation %+v", got)
	}
	restored, err := engine.DecodeState(engine.EncodeState(w.state))
	if err != nil {
		t.Fatal(err)
	}
	if r := restored.Webhooks[hook]; r.Secret != "whsec_two" || r.PreviousSecret != "whsec_one" || r.PreviousUntil != until || restored.Hash() != w.state.Hash() {
		t.Fatalf("after a snapshot %+v", r)
	}
	w.apply(&engine.WebhookSecretRotated{At: w.now, Webhook: hook, Secret: "whsec_three", PreviousUntil: until + 1})
	if got := w.state.Webhooks[hook]; got.Secret != "whsec_three" || got.PreviousSecret != "whsec_two" || got.PreviousUntil != until+1 {
		t.Fatalf("after a second rotation %+v", got)
	}
}

// TestWebhookUpdated: an update replaces the URL and events, survives a
// snapshot, and is refused for an unknown endpoint, an empty URL or no or
// unknown events.
func TestWebhookUpdated(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("ada").Client
	hook := engine.WebhookID(w.newID())
	w.apply(&engine.WebhookCreated{At: w.now, Webhook: hook, Client: ada, Mode: engine.ModeLive, URL: "https://hooks.example.com/",
		Events: engine.WebhookQuoteCreated, Secret: "whsec_one"})
	for _, bad := range []*engine.WebhookUpdated{
		{At: w.now, Webhook: engine.WebhookID(w.newID()), URL: "https://x.example.com/", Events: engine.WebhookQuoteCreated},
		{At: w.now, Webhook: hook, URL: "", Events: engine.WebhookQuoteCreated},
		{At: w.now, Webhook: hook, URL: "https://x.example.com/", Events: 0},
		{At: w.now, Webhook: hook, URL: "https://x.example.com/", Events: 0x80},
	} {
		if err := w.state.Apply(bad); err == nil {
			t.Fatalf("update %+v accepted", bad)
		}
	}
	w.apply(&engine.WebhookUpdated{At: w.now, Webhook: hook, URL: "https://hooks.example.com/v2", Events: engine.WebhookEventsAll})
	restored, err := engine.DecodeState(engine.EncodeState(w.state))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*engine.State{w.state, restored} {
		if got := s.Webhooks[hook]; got.URL != "https://hooks.example.com/v2" || got.Events != engine.WebhookEventsAll || got.Secret != "whsec_one" {
			t.Fatalf("after the update %+v", got)
		}
	}
}

// TestKeysUsed: a key's recorded last use is the latest it is told (an
// older record never moves it back), survives a snapshot (version 6) and
// changes the state's hash; a record naming an unknown key, or none, is
// refused.
func TestKeysUsed(t *testing.T) {
	w := newWorld(t)
	ada := w.createClient("ada").Client
	k1, k2 := engine.KeyID(w.newID()), engine.KeyID(w.newID())
	w.apply(&engine.KeyCreated{At: w.now, Key: k1, Client: ada, Mode: engine.ModeLive, Hash: sha256.Sum256([]byte("1"))})
	w.apply(&engine.KeyCreated{At: w.now, Key: k2, Client: ada, Mode: engine.ModeSandbox, Hash: sha256.Sum256([]byte("2"))})
	before := w.state.Hash()
	w.apply(&engine.KeysUsed{At: w.now + 120_000, Uses: []engine.KeyUse{{Key: k1, At: w.now + 60_000}, {Key: k2, At: w.now + 120_000}}})
	w.apply(&engine.KeysUsed{At: w.now + 180_000, Uses: []engine.KeyUse{{Key: k1, At: w.now}}}) // older: kept back
	if got := w.state.Keys[k1].LastUsedAt; got != w.now+60_000 {
		t.Fatalf("k1 last used %d, want %d", got, w.now+60_000)
	}
	if w.state.Hash() == before {
		t.Fatal("a recorded use does not change the state's hash")
	}
	restored, err := engine.DecodeState(engine.EncodeState(w.state))
	if err != nil {
		t.Fatal(err)
	}
	if restored.Hash() != w.state.Hash() || restored.Keys[k2].LastUsedAt != w.now+120_000 {
		t.Fatalf("after a snapshot: %+v", restored.Keys[k2])
	}
	for _, bad := range []*engine.KeysUsed{
		{At: w.now, Uses: []engine.KeyUse{{Key: engine.KeyID(w.newID()), At: w.now}}},
		{At: w.now},
		{At: w.now, Uses: []engine.KeyUse{{Key: k1, At: 0}}},
	} {
		if err := w.state.Apply(bad); err == nil {
			t.Errorf("%+v applied", bad)
		}
	}
}
