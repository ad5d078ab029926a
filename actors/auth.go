package actors

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/oja-exchange/oja/engine"
)

// directory holds the clients and API keys: what authentication reads on
// every request. Only the coordinator actor writes it (rare operator
// writes, once durable).
type directory struct {
	mu      sync.RWMutex
	clients map[engine.ClientID]*engine.Client
	keys    map[engine.KeyID]*keyRef
	byHash  map[[32]byte]*keyRef
}

type keyRef struct {
	key     engine.Key
	revoked atomic.Bool
	// expiresAt is when a rolled key stops working (Unix ms; 0: never).
	expiresAt atomic.Int64
	// lastUsed is when the key last authenticated a request (Unix ms),
	// moved at most once per keyUseResolution; recorded is the last use
	// the log holds (KeysUsed, written by System.Maintain).
	lastUsed, recorded atomic.Int64
}

// keyUseResolution is how precisely a key's last use is kept: a request
// moves it only when it is this much older, so authentication writes a
// shared word at most once a minute per key, and the log gets at most one
// KeysUsed entry per key per minute.
const keyUseResolution = 60_000 // ms

// used notes a request authenticated by the key at now (Unix ms).
func (r *keyRef) used(now int64) {
	if now-r.lastUsed.Load() >= keyUseResolution {
		r.lastUsed.Store(now)
	}
}

// works reports whether the key authenticates at now (Unix ms).
func (r *keyRef) works(now int64) bool {
	if r.revoked.Load() {
		return false
	}
	exp := r.expiresAt.Load()
	return exp == 0 || now < exp
}

// init fills the directory from the recovered state.
func (d *directory) init(state *engine.State) {
	d.clients = make(map[engine.ClientID]*engine.Client, len(state.Clients))
	d.keys = make(map[engine.KeyID]*keyRef, len(state.Keys))
	d.byHash = make(map[[32]byte]*keyRef, len(state.Keys))
	for id, c := range state.Clients {
		d.clients[id] = c
	}
	for _, k := range state.Keys {
		ref := &keyRef{key: *k}
		ref.revoked.Store(k.Revoked)
		ref.expiresAt.Store(k.ExpiresAt)
		ref.lastUsed.Store(k.LastUsedAt)
		ref.recorded.Store(k.LastUsedAt)
		d.addKey(ref)
	}
}

func (d *directory) addClient(c *engine.Client) {
	d.mu.Lock()
	d.clients[c.ID] = c
	d.mu.Unlock()
}

func (d *directory) addKey(ref *keyRef) {
	d.mu.Lock()
	d.keys[ref.key.ID] = ref
	d.byHash[ref.key.Hash] = ref
	d.mu.Unlock()
}

func (d *directory) key(id engine.KeyID) (*keyRef, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	ref, ok := d.keys[id]
	return ref, ok
}

func (d *directory) client(id engine.ClientID) (*engine.Client, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	c, ok := d.clients[id]
	return c, ok
}

func (d *directory) allClients() []*engine.Client {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]*engine.Client, 0, len(d.clients))
	for _, c := range d.clients {
		out = append(out, c)
	}
	return out
}

// clientKeys returns a client's keys (revoked ones too), oldest first. It
// scans the keys: an operator's look-up, not a request path.
func (d *directory) clientKeys(id engine.ClientID) []engine.Key {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var out []engine.Key
	for _, ref := range d.keys {
		if ref.key.Client == id {
			k := ref.key
			k.Revoked = ref.revoked.Load()
			k.ExpiresAt = ref.expiresAt.Load()
			k.LastUsedAt = ref.lastUsed.Load()
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b engine.Key) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), bytes.Compare(a.ID[:], b.ID[:]))
	})
	return out
}

// Principal is an authenticated API key's owner.
type Principal struct {
	Key    engine.KeyID
	Client engine.ClientID
	Mode   engine.Mode
}

// HashKey is the stored form of an API key.
func HashKey(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// authenticate resolves an API key at now (Unix ms). Unknown, revoked and
// expired keys fail alike.
func (d *directory) authenticate(secret string, now int64) (Principal, bool) {
	h := HashKey(secret)
	d.mu.RLock()
	ref, ok := d.byHash[h]
	d.mu.RUnlock()
	if !ok || subtle.ConstantTimeCompare(ref.key.Hash[:], h[:]) != 1 || !ref.works(now) {
		return Principal{}, false
	}
	ref.used(now)
	return Principal{Key: ref.key.ID, Client: ref.key.Client, Mode: ref.key.Mode}, true
}

// unrecordedUses lists the keys whose last use the log does not hold yet,
// at most engine.KeysUsedMax, in no particular order.
func (d *directory) unrecordedUses() []engine.KeyUse {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var out []engine.KeyUse
	for id, ref := range d.keys {
		if at := ref.lastUsed.Load(); at > ref.recorded.Load() {
			out = append(out, engine.KeyUse{Key: id, At: at})
			if len(out) == engine.KeysUsedMax {
				break
			}
		}
	}
	return out
}

// markRecorded notes that the log holds uses (a durable KeysUsed).
func (d *directory) markRecorded(uses []engine.KeyUse) {
	for _, u := range uses {
		if ref, ok := d.key(u.Key); ok && u.At > ref.recorded.Load() {
			ref.recorded.Store(u.At)
		}
	}
}
