package engine

import "github.com/oja-exchange/oja/internal/hashindex"

// IdempotencyIndex maps each Idempotency-Key (its scope: client, mode, key)
// to the quote it created; the quote is the record (its RequestHash and
// CreatedAt). It is a hashindex.Index: keyed by a 64-bit hash of the
// scope, not the scope — a million keys cost a 16-byte map slot each
// instead of 48 (the scope's client, mode and string header) — and the
// scope is checked against the quote found; a bulk load sorts its writes
// by shard and fills one small map at a time (hashindex.Writes).
//
// Not safe for concurrent use.
type IdempotencyIndex = hashindex.Index[IdempotencyScope, *Quote]

// NewIdempotencyIndex returns an empty index sized for about n keys.
func NewIdempotencyIndex(n int) *IdempotencyIndex { return hashindex.New(n, ScopeOf) }

// ScopeOf is the scope of the Idempotency-Key q was created with.
func ScopeOf(q *Quote) IdempotencyScope { return IdempotencyScope{q.Client, q.Mode, q.IdempotencyKey} }
