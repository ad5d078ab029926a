package engine

// Client is a partner.
type Client struct {
	ID        ClientID
	Name      string
	CreatedAt int64
	Wallets   []WalletAccount
}

// Wallet is the client's wallet account of mode m in currency c.
func (c *Client) Wallet(m Mode, cur Currency) (AccountID, bool) {
	for _, w := range c.Wallets {
		if w.Mode == m && w.Currency == cur {
			return w.Account, true
		}
	}
	return AccountID{}, false
}

// Key is an API key's record. The key itself is never stored: Hash is its
// SHA-256 (keys carry 190 random bits, so a fast hash suffices).
type Key struct {
	ID        KeyID
	Client    ClientID
	Mode      Mode
	Hash      [32]byte
	Revoked   bool
	CreatedAt int64
	// ExpiresAt is when a rolled key stops working (0: never).
	ExpiresAt int64
	// LastUsedAt is when the key last authenticated a request, to the
	// minute, as recorded (KeysUsed; 0: never recorded).
	LastUsedAt int64
	// RolledFrom is the key this one was rolled from (zero: created).
	RolledFrom KeyID
}

// Rolled reports whether the key was rolled: a roll is what gives a key
// its expiry, and a key is rolled once (its successor may roll).
func (k *Key) Rolled() bool { return k.ExpiresAt != 0 }

// DecideKeyRoll decides a partner's roll of k at now: ResultKeyNotFound
// for a key that no longer works (revoked, expired), ResultKeyRolled for a
// key rolled already — a key is rolled once, so that ten concurrent rolls
// cannot leave ten keys that never expire; its successor may roll.
func DecideKeyRoll(k *Key, now int64) Result {
	switch {
	case !k.Works(now):
		return ResultKeyNotFound
	case k.Rolled():
		return ResultKeyRolled
	}
	return ResultOK
}

// Works reports whether the key authenticates at now (Unix ms).
func (k *Key) Works(now int64) bool {
	return !k.Revoked && (k.ExpiresAt == 0 || now < k.ExpiresAt)
}

// IdempotencyScope is where an Idempotency-Key is unique: per client and mode.
type IdempotencyScope struct {
	Client ClientID
	Mode   Mode
	Key    IdemKey
}

// IdempotencyRetentionMillis is how long an Idempotency-Key is remembered.
const IdempotencyRetentionMillis = 24 * 60 * 60 * 1000
