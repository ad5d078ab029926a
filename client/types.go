package client

import (
	"encoding/json"
	"time"

	"github.com/shopspring/decimal"
)

// Mode is an operating mode; a key belongs to one.
type Mode string

const (
	ModeLive    Mode = "live"
	ModeSandbox Mode = "sandbox"
)

// QuoteStatus is a quote's place in its lifecycle (spec §4).
type QuoteStatus string

const (
	StatusPending         QuoteStatus = "pending"
	StatusAwaitingPayment QuoteStatus = "awaiting_payment"
	StatusCompleted       QuoteStatus = "completed"
	StatusCancelled       QuoteStatus = "cancelled"
	StatusExpired         QuoteStatus = "expired"
)

// Terminal reports whether no transition can follow s.
func (s QuoteStatus) Terminal() bool {
	return s == StatusCompleted || s == StatusCancelled || s == StatusExpired
}

// AmountDirection says which currency a create's Amount is in.
type AmountDirection string

const (
	// DirectionSource: Amount is what the partner pays, in the source
	// currency.
	DirectionSource AmountDirection = "source"
	// DirectionDestination: Amount is what the partner receives, in the
	// destination currency.
	DirectionDestination AmountDirection = "destination"
)

// CreateQuoteRequest is a create (POST /partners/marketplace/intent).
type CreateQuoteRequest struct {
	SourceCurrency      string          // a source of the markets in force: by default "NGN" or "GHS"
	DestinationCurrency string          // by default "USDT" or "GHS" (NGN/USDT, GHS/USDT, NGN/GHS)
	Amount              decimal.Decimal // at most the currency's minor-unit places (NGN/GHS 2, USDT 6)
	// Rate is the proposed (worst acceptable) rate: destination units per
	// source unit, up to 10^12 with at most 18 decimal places. Pools at
	// this rate or better fill the quote.
	Rate            decimal.Decimal
	AmountDirection AmountDirection
	Chain           string // optional: TRON (USDT's default), ETHEREUM, BSC, POLYGON, SOLANA
	ListingID       string // optional: restrict the allocation to this pool
	ChatMetadata    *ChatMetadataRequest
}

// ChatMetadataRequest is the chat negotiation context a create may carry.
type ChatMetadataRequest struct {
	ConversationID       string `json:"conversationId,omitempty"`
	ChatQuoteID          string `json:"chatQuoteId,omitempty"`
	ListingID            string `json:"listingId,omitempty"`
	NegotiationStartedAt string `json:"negotiationStartedAt,omitempty"`
	QuoteSentAt          string `json:"quoteSentAt,omitempty"`
}

// MarshalJSON writes the request with amounts and rates as JSON numbers
// in plain decimal text (spec §1), never through float64.
func (r CreateQuoteRequest) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		SourceCurrency      string               `json:"sourceCurrency"`
		DestinationCurrency string               `json:"destinationCurrency"`
		Amount              json.Number          `json:"amount"`
		Rate                json.Number          `json:"rate"`
		AmountDirection     AmountDirection      `json:"amountDirection"`
		Chain               string               `json:"chain,omitempty"`
		ListingID           string               `json:"listingId,omitempty"`
		ChatMetadata        *ChatMetadataRequest `json:"chatMetadata,omitempty"`
	}{r.SourceCurrency, r.DestinationCurrency, number(r.Amount), number(r.Rate), r.AmountDirection,
		r.Chain, r.ListingID, r.ChatMetadata})
}

// number is d as a JSON number: decimal.String never uses an exponent.
func number(d decimal.Decimal) json.Number { return json.Number(d.String()) }

// Settlement is where an accepted quote's destination funds go: Type
// "wallet" (AccountID, the partner's own account), "bank" (AccountName,
// AccountNumber, BankCode) or "chain" (Chain, Address).
type Settlement struct {
	Type          string `json:"type"`
	AccountID     string `json:"accountId,omitempty"`
	AccountName   string `json:"accountName,omitempty"`
	AccountNumber string `json:"accountNumber,omitempty"`
	BankCode      string `json:"bankCode,omitempty"`
	Chain         string `json:"chain,omitempty"`
	Address       string `json:"address,omitempty"`
}

// Quote is the service's quote (spec §6).
type Quote struct {
	QuoteID                string           `json:"quoteId"`
	Status                 QuoteStatus      `json:"status"`
	Source                 string           `json:"source"`
	Destination            string           `json:"destination"`
	Chain                  string           `json:"chain,omitempty"` // when a side is a token
	Amount                 decimal.Decimal  `json:"amount"`
	TotalSourceAmount      decimal.Decimal  `json:"totalSourceAmount"`      // what the partner pays
	TotalDestinationAmount decimal.Decimal  `json:"totalDestinationAmount"` // what the partner receives
	ClientID               string           `json:"clientId"`
	Mode                   Mode             `json:"mode"`
	TTL                    int64            `json:"ttl"` // whole seconds to the current deadline; 0 when terminal
	AllocationResult       AllocationResult `json:"allocationResult"`
	Metadata               *QuoteMetadata   `json:"metadata,omitempty"`   // pay-in instructions, from awaiting_payment on
	Settlement             *Settlement      `json:"settlement,omitempty"` // where the money goes, from awaiting_payment on
	ChatMetadata           *ChatMetadata    `json:"chatMetadata,omitempty"`
	CreatedAt              time.Time        `json:"createdAt"`
	UpdatedAt              time.Time        `json:"updatedAt"`
	ExpiresAt              *time.Time       `json:"expiresAt,omitempty"` // nil when terminal

	// Replayed is set on a CreateQuote answered from the Idempotency-Key's
	// record (header Idempotent-Replayed): no new quote was made.
	Replayed bool `json:"-"`
}

// AllocationResult is how the quote was filled.
type AllocationResult struct {
	TotalSourceAmount      decimal.Decimal `json:"totalSourceAmount"`
	WeightedAverageRate    decimal.Decimal `json:"weightedAverageRate"`
	TotalDestinationAmount decimal.Decimal `json:"totalDestinationAmount"`
	Allocations            []Allocation    `json:"allocations"`
}

// Allocation is one pool's slice of a quote.
type Allocation struct {
	ID              string            `json:"id"`
	ClientID        string            `json:"clientId"`
	PoolID          string            `json:"poolId"`
	PoolAccountID   string            `json:"poolAccountId"` // what AcceptQuote names
	AllocatedAmount decimal.Decimal   `json:"allocatedAmount"`
	SourceAmount    decimal.Decimal   `json:"sourceAmount"`
	Rate            decimal.Decimal   `json:"rate"`
	Reference       string            `json:"reference"`
	Metadata        map[string]string `json:"metadata"` // at least poolName and pair
}

// QuoteMetadata carries pay-in instructions.
type QuoteMetadata struct {
	BankPayIn   *BankPayIn   `json:"bankPayIn,omitempty"`
	CryptoPayIn *CryptoPayIn `json:"cryptoPayIn,omitempty"`
}

// BankPayIn is where and how to pay a fiat source amount.
type BankPayIn struct {
	AccountName   string `json:"accountName"`
	AccountNumber string `json:"accountNumber"`
	BankName      string `json:"bankName"`
	Reference     string `json:"reference"` // put it on the transfer
}

// CryptoPayIn is the deposit address issued to a token-source quote when
// it is accepted (no default pair has a token source; markets.example.json
// adds USDT→NGN and USDT→GHS).
type CryptoPayIn struct {
	AddressID         string          `json:"addressId"`
	Address           string          `json:"address"`
	Chain             string          `json:"chain"`
	Token             string          `json:"token"`
	AddressType       string          `json:"addressType"`
	ExpectedAmount    decimal.Decimal `json:"expectedAmount"`
	ExternalReference string          `json:"externalReference"`
	Status            string          `json:"status"`
	CreatedAt         *time.Time      `json:"createdAt,omitempty"`
	ExpiresAt         *time.Time      `json:"expiresAt,omitempty"`
	VirtualAccountID  string          `json:"virtualAccountId"`
	DerivationIndex   int64           `json:"derivationIndex"`
	WarningMessage    string          `json:"warningMessage"`
}

// ChatMetadata is a chat-negotiated quote's context as the service holds
// it.
type ChatMetadata struct {
	ConversationID string `json:"conversationId,omitempty"`
	ChatQuoteID    string `json:"chatQuoteId,omitempty"`
	ListingID      string `json:"listingId,omitempty"`
	// InitialListingRate is the listing's rate when the quote was made
	// (zero when the quote named no listing).
	InitialListingRate   decimal.Decimal `json:"initialListingRate"`
	NegotiationStartedAt string          `json:"negotiationStartedAt,omitempty"`
	QuoteSentAt          string          `json:"quoteSentAt,omitempty"`
	AcceptedAt           *time.Time      `json:"acceptedAt,omitempty"`
}

// Balance is one account's balance (spec §3).
type Balance struct {
	AccountID        string          `json:"accountId"`
	Currency         string          `json:"currency"`
	Balance          decimal.Decimal `json:"balance"`
	AvailableBalance decimal.Decimal `json:"availableBalance"` // balance minus holds
}

// RateUpdate is one rate_update of the rate stream (spec §8).
type RateUpdate struct {
	ID               string          `json:"-"` // the event's id (SSE "id:")
	From             string          `json:"from"`
	To               string          `json:"to"`
	Rate             decimal.Decimal `json:"rate"` // consensus: liquidity-weighted median of active pools
	Timestamp        time.Time       `json:"timestamp"`
	Source           string          `json:"source"` // "CONSENSUS"
	PercentChange24h decimal.Decimal `json:"percentChange24h"`
}
