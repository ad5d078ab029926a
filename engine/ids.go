package engine

import "github.com/google/uuid"

// Typed identifiers. Each is a 16-byte UUID held by value so that maps keyed
// by them and structs holding them do not allocate. The zero value means
// "none".

// QuoteID identifies a quote (the XML TxId of the same trade).
type QuoteID [16]byte

// PoolID identifies a liquidity pool (also the XML listing Id).
type PoolID [16]byte

// ClientID identifies a partner.
type ClientID [16]byte

// AccountID identifies a ledger account.
type AccountID [16]byte

// KeyID identifies an API key (never the key itself).
type KeyID [16]byte

// AllocationID identifies one slice of a quote's allocation.
type AllocationID [16]byte

// OperatorID identifies a named operator (never its token).
type OperatorID [16]byte

// AuditID identifies one line of the audit trail.
type AuditID [16]byte

func (id QuoteID) String() string      { return uuid.UUID(id).String() }
func (id PoolID) String() string       { return uuid.UUID(id).String() }
func (id ClientID) String() string     { return uuid.UUID(id).String() }
func (id AccountID) String() string    { return uuid.UUID(id).String() }
func (id KeyID) String() string        { return uuid.UUID(id).String() }
func (id AllocationID) String() string { return uuid.UUID(id).String() }
func (id OperatorID) String() string   { return uuid.UUID(id).String() }
func (id AuditID) String() string      { return uuid.UUID(id).String() }

func (id QuoteID) IsZero() bool    { return id == QuoteID{} }
func (id PoolID) IsZero() bool     { return id == PoolID{} }
func (id ClientID) IsZero() bool   { return id == ClientID{} }
func (id KeyID) IsZero() bool      { return id == KeyID{} }
func (id AccountID) IsZero() bool  { return id == AccountID{} }
func (id OperatorID) IsZero() bool { return id == OperatorID{} }
func (id AuditID) IsZero() bool    { return id == AuditID{} }

// ParseUUID parses the canonical 36-character textual form only (no braces,
// no "urn:uuid:" prefix), so that one id has exactly one spelling on the wire.
func ParseUUID(s string) ([16]byte, bool) {
	if len(s) != 36 {
		return [16]byte{}, false
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return [16]byte{}, false
	}
	return u, true
}
