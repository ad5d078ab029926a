package engine

// Events record outcomes, not requests (STYLE.md): a QuoteCreated carries the
// allocations that were made, so replay never re-runs matching against a book
// that may differ. Every event carries At, the engine time (unix
// milliseconds) at which it happened. Events are immutable once built.

// EventType is the tag of an encoded event. Values are stored in the log:
// never renumber.
type EventType uint8

const (
	EventClientCreated    EventType = 1
	EventKeyCreated       EventType = 2
	EventKeyRevoked       EventType = 3
	EventPoolCreated      EventType = 4
	EventPoolRateSet      EventType = 5
	EventPoolStatusSet    EventType = 6
	EventPoolDeposited    EventType = 7
	EventPoolWithdrawn    EventType = 8
	EventAccountDeposited EventType = 9
	EventQuoteCreated     EventType = 10
	EventQuoteAccepted    EventType = 11
	EventQuoteCancelled   EventType = 12
	EventQuoteExpired     EventType = 13
	EventQuoteCompleted   EventType = 14
	// EventQuoteCancelledByOperator is a QuoteCancelled an operator made
	// (ByOperator): its own tag, so a partner's cancel encodes as it always
	// did and no record's meaning hangs on an optional byte.
	EventQuoteCancelledByOperator EventType = 15
	EventWebhookCreated           EventType = 16
	EventWebhookDeleted           EventType = 17
	EventWebhookSettled           EventType = 18
	EventMarketsSet               EventType = 19
	// EventQuoteAcceptedWithPayIn is a QuoteAccepted that issued a crypto
	// pay-in (its own tag, as the operator's cancel has: every earlier
	// acceptance encodes as it always did).
	EventQuoteAcceptedWithPayIn EventType = 20
	EventPayInSeen              EventType = 21
	// Funds first (funds.go).
	EventPaymentReceived  EventType = 22
	EventAccountWithdrawn EventType = 23
	EventCreditLimitSet   EventType = 24
	// EventQuoteCompletedFunded is a QuoteCompleted that debits the
	// partner's source wallet (its own tag: a completion logged before
	// funds first encodes and replays as it always did).
	EventQuoteCompletedFunded EventType = 25
	// EventKeyRolled: a partner's own key roll (a new key and the old
	// one's expiry in one record).
	EventKeyRolled EventType = 26
	// EventWebhookSecretRotated: a partner's new signing secret for an
	// endpoint (webhook.go).
	EventWebhookSecretRotated EventType = 27
	// EventWebhookUpdated: a partner's new URL or event set for an
	// endpoint (webhook.go).
	EventWebhookUpdated EventType = 28
	// EventKeysUsed: when API keys were last used (a key's lastUsedAt),
	// recorded about once a minute for the keys used since.
	EventKeysUsed EventType = 29
	// Named operators and the audit trail (operator.go).
	EventOperatorCreated EventType = 30
	EventOperatorRevoked EventType = 31
	EventOperatorActed   EventType = 32
	// The identity of money (identity.go): a receipt that carries its
	// canonical identity; a prefund and a payout that carry their
	// reference; a receipt taken back; an audit line written in the same
	// record batch as the write it describes, with the write's details.
	// Each has its own tag, so every record written before identities
	// encodes and replays as it always did.
	EventPaymentIdentified   EventType = 33
	EventAccountDepositedRef EventType = 34
	EventAccountWithdrawnRef EventType = 35
	EventReceiptReversed     EventType = 36
	EventOperatorActedInline EventType = 37
	// EventMarketsSetSandbox is a MarketsSet whose markets name sandbox
	// collection accounts (markets.go).
	EventMarketsSetSandbox EventType = 38
	// EventChainProgressed: how far a chain's deposits were read, and the
	// transfers found that could not be credited (chain.go).
	EventChainProgressed EventType = 39
	// Money held in suspense (suspense.go): an unapplied receipt, and its
	// application or return.
	EventReceiptUnapplied EventType = 40
	EventUnappliedSettled EventType = 41
	eventTypeEnd          EventType = 42
)

var eventTypeNames = [eventTypeEnd]string{
	EventClientCreated:            "ClientCreated",
	EventKeyCreated:               "KeyCreated",
	EventKeyRevoked:               "KeyRevoked",
	EventPoolCreated:              "PoolCreated",
	EventPoolRateSet:              "PoolRateSet",
	EventPoolStatusSet:            "PoolStatusSet",
	EventPoolDeposited:            "PoolDeposited",
	EventPoolWithdrawn:            "PoolWithdrawn",
	EventAccountDeposited:         "AccountDeposited",
	EventQuoteCreated:             "QuoteCreated",
	EventQuoteAccepted:            "QuoteAccepted",
	EventQuoteCancelled:           "QuoteCancelled",
	EventQuoteExpired:             "QuoteExpired",
	EventQuoteCompleted:           "QuoteCompleted",
	EventQuoteCancelledByOperator: "QuoteCancelledByOperator",
	EventWebhookCreated:           "WebhookCreated",
	EventWebhookDeleted:           "WebhookDeleted",
	EventWebhookSettled:           "WebhookSettled",
	EventMarketsSet:               "MarketsSet",
	EventQuoteAcceptedWithPayIn:   "QuoteAcceptedWithPayIn",
	EventPayInSeen:                "PayInSeen",
	EventPaymentReceived:          "PaymentReceived",
	EventAccountWithdrawn:         "AccountWithdrawn",
	EventCreditLimitSet:           "CreditLimitSet",
	EventQuoteCompletedFunded:     "QuoteCompletedFunded",
	EventKeyRolled:                "KeyRolled",
	EventWebhookSecretRotated:     "WebhookSecretRotated",
	EventWebhookUpdated:           "WebhookUpdated",
	EventKeysUsed:                 "KeysUsed",
	EventOperatorCreated:          "OperatorCreated",
	EventOperatorRevoked:          "OperatorRevoked",
	EventOperatorActed:            "OperatorActed",
	EventPaymentIdentified:        "PaymentIdentified",
	EventAccountDepositedRef:      "AccountDepositedRef",
	EventAccountWithdrawnRef:      "AccountWithdrawnRef",
	EventReceiptReversed:          "ReceiptReversed",
	EventOperatorActedInline:      "OperatorActedInline",
	EventMarketsSetSandbox:        "MarketsSetSandbox",
	EventChainProgressed:          "ChainProgressed",
	EventReceiptUnapplied:         "ReceiptUnapplied",
	EventUnappliedSettled:         "UnappliedSettled",
}

func (t EventType) String() string {
	if t == 0 || t >= eventTypeEnd {
		return "Unknown"
	}
	return eventTypeNames[t]
}

// Event is one outcome. The concrete types below are its only implementations.
type Event interface {
	Type() EventType
	Time() int64
}

// WalletAccount names one wallet of a client.
type WalletAccount struct {
	Mode     Mode
	Currency Currency
	Account  AccountID
}

// ClientCreated: a partner and its wallets (one per currency per mode).
type ClientCreated struct {
	At      int64
	Client  ClientID
	Name    string
	Wallets []WalletAccount
}

// KeyCreated: an API key; only its SHA-256 is kept.
type KeyCreated struct {
	At     int64
	Key    KeyID
	Client ClientID
	Mode   Mode
	Hash   [32]byte
}

// KeyRevoked: the key fails from the next request on.
type KeyRevoked struct {
	At  int64
	Key KeyID
}

// KeyRolled: a new API key (Key, only its SHA-256 kept) for the client and
// mode of the key Old, and Old's expiry: it fails from ExpiresAt on (At: at
// once). One record, so a roll is never half done.
type KeyRolled struct {
	At        int64
	Old       KeyID
	Key       KeyID
	Hash      [32]byte
	ExpiresAt int64
}

// KeysUsed: when each of Uses' keys last authenticated a request (Unix ms,
// to the minute: the service records a key's use at most once a minute).
// Replay keeps, per key, the latest time it is told.
type KeysUsed struct {
	At   int64
	Uses []KeyUse
}

// KeyUse is one key's last use.
type KeyUse struct {
	Key KeyID
	At  int64
}

// KeysUsedMax bounds the keys of one KeysUsed record (the service splits
// longer lists).
const KeysUsedMax = 4096

// PoolCreated: a market maker's offer, active, with empty accounts.
type PoolCreated struct {
	At               int64
	Pool             PoolID
	Mode             Mode
	Name             string
	Pair             Pair
	Rate             Rate
	Owner            ClientID // zero: owned by the marketplace
	LiquidityAccount AccountID
	ProceedsAccount  AccountID
}

// PoolRateSet: the pool's rate changed; its time priority restarts at At.
type PoolRateSet struct {
	At   int64
	Pool PoolID
	Rate Rate
}

// PoolStatusSet: the pool was activated or suspended.
type PoolStatusSet struct {
	At     int64
	Pool   PoolID
	Active bool
}

// PoolDeposited: clearing(destination) → pool liquidity.
type PoolDeposited struct {
	At     int64
	Pool   PoolID
	Amount Amount
}

// PoolWithdrawn: pool liquidity → clearing(destination).
type PoolWithdrawn struct {
	At     int64
	Pool   PoolID
	Amount Amount
}

// AccountDeposited: clearing(currency) → a wallet, an operator's prefund.
// Reference is the bank's (or chain's) id of the transfer it records, its
// identity in the inbound namespace (identity.go); zero in a prefund
// recorded before identities. IdempotencyKey and RequestHash are the
// operator's Idempotency-Key and its request's hash, if one was sent.
type AccountDeposited struct {
	At             int64
	Account        AccountID
	Amount         Amount
	Reference      Identity
	IdempotencyKey string
	RequestHash    [32]byte
}

// Chain is a blockchain network.
type Chain uint8

const (
	ChainNone Chain = iota
	ChainTron
	ChainEthereum
	ChainBSC
	ChainPolygon
	ChainSolana
	chainEnd
)

var chainNames = [chainEnd]string{"", "TRON", "ETHEREUM", "BSC", "POLYGON", "SOLANA"}

func (c Chain) String() string {
	if c >= chainEnd {
		return ""
	}
	return chainNames[c]
}

// ParseChain maps a network name to its Chain.
func ParseChain(s string) (Chain, bool) {
	for c := ChainTron; c < chainEnd; c++ {
		if chainNames[c] == s {
			return c, true
		}
	}
	return ChainNone, false
}

// Allocation is one slice of a quote, as made at creation.
type Allocation struct {
	ID          AllocationID
	Pool        PoolID
	PoolAccount AccountID // the pool's liquidity account
	PoolName    string
	Rate        Rate
	Source      Amount
	Destination Amount
	Reference   Ref // e.g. ALC-7K3M9Q2XPB
}

// Chat is the chat-negotiation metadata of a quote (spec §6).
type Chat struct {
	ConversationID       string
	ChatQuoteID          string
	ListingID            string
	InitialListingRate   Rate // filled by the service; 0 when no listing
	NegotiationStartedAt string
	QuoteSentAt          string
}

// QuoteCreated: a quote allocated in full; its holds are placed.
type QuoteCreated struct {
	At             int64
	Quote          QuoteID
	Client         ClientID
	Mode           Mode
	Pair           Pair
	Direction      Direction
	Amount         Amount
	ProposedRate   Rate
	Chain          Chain
	Reference      Ref // bank pay-in reference, e.g. OJA-4F7Q9D2M4K
	ExpiresAt      int64
	Allocations    []Allocation
	Chat           *Chat
	IdempotencyKey IdemKey
	RequestHash    [32]byte // of the canonical request, for IDEMPOTENCY_KEY_REUSED
	Channel        Channel  // which API created it
	Key            KeyID    // the API key that created it (audit; open-quote cap per key)
}

// Channel is the API a quote was created through.
type Channel uint8

const (
	ChannelJSON Channel = iota
	ChannelXML
)

// SettlementKind is where a quote's destination funds go on completion.
type SettlementKind uint8

const (
	SettlementNone   SettlementKind = iota
	SettlementWallet                // the partner's wallet in the destination currency
	SettlementBank                  // paid out to a bank account (via clearing)
	SettlementChain                 // paid out to a blockchain address (via clearing)
)

func (k SettlementKind) String() string {
	switch k {
	case SettlementWallet:
		return "wallet"
	case SettlementBank:
		return "bank"
	case SettlementChain:
		return "chain"
	}
	return ""
}

// Settlement is the destination chosen at accept.
type Settlement struct {
	Kind          SettlementKind
	Account       AccountID // SettlementWallet: the wallet credited
	AccountName   string    // SettlementBank
	AccountNumber string    // SettlementBank
	BankCode      string    // SettlementBank
	Address       string    // SettlementChain
}

// QuoteAccepted: pay-in instructions issued; the payment window starts.
type QuoteAccepted struct {
	At          int64
	Quote       QuoteID
	PoolAccount AccountID // the accountId named by a JSON accept; zero for XML
	Settlement  Settlement
	ExpiresAt   int64
	// PayIn is the crypto pay-in the acceptance issued (a token source);
	// nil otherwise.
	PayIn *PayIn
}

// QuoteCancelled: holds released.
type QuoteCancelled struct {
	At    int64
	Quote QuoteID
	// ByOperator marks a cancel an operator made through the admin API
	// (POST /admin/v1/quotes/{id}/cancel), not the partner.
	ByOperator bool
}

// QuoteExpired: TTL or payment window ran out; holds released.
type QuoteExpired struct {
	At    int64
	Quote QuoteID
}

// QuoteCompleted: holds consumed, postings made (see Pool.ApplySettle).
// A funded completion (Wallet set; every completion since funds first)
// also debits the partner's source wallet, after a simulated pay-in of
// Simulated in sandbox (funds.go).
type QuoteCompleted struct {
	At        int64
	Quote     QuoteID
	Wallet    AccountID
	Simulated Amount
}

// Funded reports whether the completion debits the partner's wallet.
func (e *QuoteCompleted) Funded() bool { return !e.Wallet.IsZero() }

func (*ClientCreated) Type() EventType   { return EventClientCreated }
func (*KeyCreated) Type() EventType      { return EventKeyCreated }
func (*KeyRevoked) Type() EventType      { return EventKeyRevoked }
func (*KeyRolled) Type() EventType       { return EventKeyRolled }
func (*KeysUsed) Type() EventType        { return EventKeysUsed }
func (*OperatorCreated) Type() EventType { return EventOperatorCreated }
func (*OperatorRevoked) Type() EventType { return EventOperatorRevoked }
func (e *OperatorActed) Type() EventType {
	if e.Details != nil {
		return EventOperatorActedInline
	}
	return EventOperatorActed
}
func (*PoolCreated) Type() EventType   { return EventPoolCreated }
func (*PoolRateSet) Type() EventType   { return EventPoolRateSet }
func (*PoolStatusSet) Type() EventType { return EventPoolStatusSet }
func (*PoolDeposited) Type() EventType { return EventPoolDeposited }
func (*PoolWithdrawn) Type() EventType { return EventPoolWithdrawn }
func (e *AccountDeposited) Type() EventType {
	if !e.Reference.IsZero() {
		return EventAccountDepositedRef
	}
	return EventAccountDeposited
}
func (*QuoteCreated) Type() EventType { return EventQuoteCreated }
func (e *QuoteAccepted) Type() EventType {
	if e.PayIn != nil {
		return EventQuoteAcceptedWithPayIn
	}
	return EventQuoteAccepted
}
func (e *QuoteCancelled) Type() EventType {
	if e.ByOperator {
		return EventQuoteCancelledByOperator
	}
	return EventQuoteCancelled
}
func (*QuoteExpired) Type() EventType { return EventQuoteExpired }
func (e *QuoteCompleted) Type() EventType {
	if e.Funded() {
		return EventQuoteCompletedFunded
	}
	return EventQuoteCompleted
}

func (e *ClientCreated) Time() int64    { return e.At }
func (e *KeyCreated) Time() int64       { return e.At }
func (e *KeyRevoked) Time() int64       { return e.At }
func (e *KeyRolled) Time() int64        { return e.At }
func (e *KeysUsed) Time() int64         { return e.At }
func (e *OperatorCreated) Time() int64  { return e.At }
func (e *OperatorRevoked) Time() int64  { return e.At }
func (e *OperatorActed) Time() int64    { return e.At }
func (e *PoolCreated) Time() int64      { return e.At }
func (e *PoolRateSet) Time() int64      { return e.At }
func (e *PoolStatusSet) Time() int64    { return e.At }
func (e *PoolDeposited) Time() int64    { return e.At }
func (e *PoolWithdrawn) Time() int64    { return e.At }
func (e *AccountDeposited) Time() int64 { return e.At }
func (e *QuoteCreated) Time() int64     { return e.At }
func (e *QuoteAccepted) Time() int64    { return e.At }
func (e *QuoteCancelled) Time() int64   { return e.At }
func (e *QuoteExpired) Time() int64     { return e.At }
func (e *QuoteCompleted) Time() int64   { return e.At }

// EventOf is ev as an Event, nil when the pointer is: a nil *QuoteAccepted
// stored in an interface is not a nil Event.
func EventOf[P interface {
	*E
	Event
}, E any](ev P) Event {
	if ev == nil {
		return nil
	}
	return ev
}
