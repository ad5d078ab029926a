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
