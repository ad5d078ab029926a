package waltools

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/oja-exchange/oja/engine"
)

// ---- dump ---------------------------------------------------------------------------

// dumpRecord is one --json line (shape documented in walUsage).
type dumpRecord struct {
	Seq   uint64    `json:"seq"`
	Type  string    `json:"type"`
	At    string    `json:"at"`
	Event dumpEvent `json:"event"`
}

// dumpEvent is the stable JSON form of every event type: which fields each
// type carries is listed in walUsage. Fields that a type always carries are
// set for it even when zero (pointers and non-empty strings); the optional
// ones are omitted when empty.
//
// NB: an explicit conversion rather than json.Marshal of the engine's
// structs: those are free to change shape (and their Go field names are not
// the wire's), while operators' scripts parse this.
type dumpEvent struct {
	QuoteID             string            `json:"quoteId,omitempty"`
	PoolID              string            `json:"poolId,omitempty"`
	ClientID            string            `json:"clientId,omitempty"`
	KeyID               string            `json:"keyId,omitempty"`
	AccountID           string            `json:"accountId,omitempty"`
	Mode                string            `json:"mode,omitempty"`
	Name                *string           `json:"name,omitempty"`
	Pair                string            `json:"pair,omitempty"`
	Source              string            `json:"source,omitempty"`
	Destination         string            `json:"destination,omitempty"`
	Rate                json.Number       `json:"rate,omitempty"`
	Status              string            `json:"status,omitempty"`
	AmountDirection     string            `json:"amountDirection,omitempty"`
	Amount              *int64            `json:"amount,omitempty"`
	ProposedRate        json.Number       `json:"proposedRate,omitempty"`
	Chain               string            `json:"chain,omitempty"`
	Reference           *string           `json:"reference,omitempty"`
	Channel             string            `json:"channel,omitempty"`
	IdempotencyKey      string            `json:"idempotencyKey,omitempty"`
	RequestHash         string            `json:"requestHash,omitempty"`
	OwnerClientID       string            `json:"ownerClientId,omitempty"`
	PoolAccountID       string            `json:"poolAccountId,omitempty"`
	ProceedsAccountID   string            `json:"proceedsAccountId,omitempty"`
	KeyHash             string            `json:"keyHash,omitempty"`
	OldKeyID            string            `json:"oldKeyId,omitempty"`
	PreviousSecretUntil string            `json:"previousSecretUntil,omitempty"`
	Wallets             *[]dumpWallet     `json:"wallets,omitempty"`
	Keys                *[]dumpKeyUse     `json:"keys,omitempty"`
	Allocations         *[]dumpAllocation `json:"allocations,omitempty"`
	ChatMetadata        *dumpChat         `json:"chatMetadata,omitempty"`
	Settlement          *dumpSettlement   `json:"settlement,omitempty"`
	ExpiresAt           string            `json:"expiresAt,omitempty"`
	WebhookID           string            `json:"webhookId,omitempty"`
	URL                 string            `json:"url,omitempty"`
	Events              []string          `json:"events,omitempty"`
	EventID             string            `json:"eventId,omitempty"`
	Delivered           *bool             `json:"delivered,omitempty"`
	Markets             *dumpMarkets      `json:"markets,omitempty"`
	PayIn               *dumpPayIn        `json:"payIn,omitempty"`
	TxHash              string            `json:"txHash,omitempty"`
	Method              string            `json:"method,omitempty"`
	BankTransactionID   string            `json:"bankTransactionId,omitempty"`
	AddressID           string            `json:"addressId,omitempty"`
	WalletID            string            `json:"walletId,omitempty"`
	SimulatedAmount     *int64            `json:"simulatedAmount,omitempty"`
	Limit               *int64            `json:"limit,omitempty"`
	OperatorID          string            `json:"operatorId,omitempty"`
	Role                string            `json:"role,omitempty"`
	TokenHash           string            `json:"tokenHash,omitempty"`
	AuditID             string            `json:"auditId,omitempty"`
	Operator            string            `json:"operator,omitempty"`
	Action              string            `json:"action,omitempty"`
	Target              *string           `json:"target,omitempty"`
	HTTPStatus          int               `json:"httpStatus,omitempty"`
	// The identity of money (engine/identity.go).
	Identity  string            `json:"identity,omitempty"`
	LogIndex  *uint32           `json:"logIndex,omitempty"`
	ReceiptID string            `json:"receiptId,omitempty"`
	Reason    *string           `json:"reason,omitempty"`
	Details   *dumpAuditDetails `json:"details,omitempty"`
	// A chain watcher's step (engine/chain.go).
	Block     *uint64             `json:"block,omitempty"`
	BlockHash string              `json:"blockHash,omitempty"`
	Unapplied *[]dumpChainDeposit `json:"unapplied,omitempty"`
	// Money held in suspense (engine/suspense.go).
	UnappliedID     string  `json:"unappliedId,omitempty"`
	Currency        string  `json:"currency,omitempty"`
	Remittance      *string `json:"remittance,omitempty"`
	DebtorName      string  `json:"debtorName,omitempty"`
	ReturnReference string  `json:"returnReference,omitempty"`
}

// dumpChainDeposit is a transfer a chain watcher could not credit.
type dumpChainDeposit struct {
	TxHash    string `json:"txHash"`
	LogIndex  uint32 `json:"logIndex"`
	Block     uint64 `json:"block"`
	AddressID string `json:"addressId"`
	Currency  string `json:"currency"`
	Value     string `json:"value"`
	Decimals  uint8  `json:"decimals"`
	Reason    string `json:"reason"`
}

// dumpAuditDetails are an audit line's details.
type dumpAuditDetails struct {
	Amount            *int64 `json:"amount,omitempty"`
	Currency          string `json:"currency,omitempty"`
	Reference         string `json:"reference,omitempty"`
	TxHash            string `json:"txHash,omitempty"`
	BankTransactionID string `json:"bankTransactionId,omitempty"`
	QuoteID           string `json:"quoteId,omitempty"`
	AccountID         string `json:"accountId,omitempty"`
	ReceiptID         string `json:"receiptId,omitempty"`
}

// dumpPayIn is the crypto pay-in an acceptance issued.
type dumpPayIn struct {
	AddressID       string `json:"addressId"`
	Address         string `json:"address"`
	Token           string `json:"token"`
	Chain           string `json:"chain"`
	DerivationIndex uint32 `json:"derivationIndex"`
}

// dumpMarkets is a MarketsSet: the markets file's shape, with each
// currency's index in the log.
type dumpMarkets struct {
	Currencies []dumpCurrency `json:"currencies"`
	Pairs      []dumpPair     `json:"pairs"`
	// Collection and DepositKeys name the currencies (and chains) that
	// have them: bank details and public keys are configuration, not
	// what an operator reads a log for.
	Collection  []string `json:"collectionAccounts,omitempty"`
	DepositKeys []string `json:"depositKeys,omitempty"`
}

type dumpCurrency struct {
	Index        int      `json:"index"`
	Code         string   `json:"code"`
	Kind         string   `json:"kind"`
	MinorUnits   int32    `json:"minorUnits"`
	Chains       []string `json:"chains,omitempty"`
	DefaultChain string   `json:"defaultChain,omitempty"`
}

type dumpPair struct {
	Source          string      `json:"source"`
	Destination     string      `json:"destination"`
	MinSourceAmount json.Number `json:"minSourceAmount"`
	MaxSourceAmount json.Number `json:"maxSourceAmount"`
}

func dumpMarketsOf(m *engine.Markets) *dumpMarkets {
	d := &dumpMarkets{}
	for _, s := range m.Currencies {
		c := dumpCurrency{Index: int(s.Currency), Code: s.Currency.String(), Kind: "fiat", MinorUnits: s.Currency.MinorUnits(),
			DefaultChain: s.DefaultChain.String()}
		if s.Currency.IsToken() {
			c.Kind = "token"
		}
		for _, ch := range s.Chains {
			c.Chains = append(c.Chains, ch.String())
		}
		d.Currencies = append(d.Currencies, c)
	}
	for _, p := range m.Pairs {
		c := p.Pair.Source
		d.Pairs = append(d.Pairs, dumpPair{Source: c.String(), Destination: p.Pair.Destination.String(),
			MinSourceAmount: json.Number(engine.AppendAmount(nil, p.MinSource, c)),
			MaxSourceAmount: json.Number(engine.AppendAmount(nil, p.MaxSource, c))})
	}
	for _, c := range m.CurrencyList() {
		if _, ok := m.Collection[c]; ok {
			d.Collection = append(d.Collection, c.String())
		}
		spec, _ := m.Currency(c)
		for _, ch := range spec.Chains {
			if m.DepositKeys[c][ch] != "" {
				d.DepositKeys = append(d.DepositKeys, c.String()+"/"+ch.String())
			}
		}
	}
	return d
}

type dumpKeyUse struct {
	KeyID      string `json:"keyId"`
	LastUsedAt string `json:"lastUsedAt"`
}

type dumpWallet struct {
	AccountID string `json:"accountId"`
	Mode      string `json:"mode"`
	Currency  string `json:"currency"`
}

type dumpAllocation struct {
	AllocationID      string      `json:"allocationId"`
	PoolID            string      `json:"poolId"`
	PoolAccountID     string      `json:"poolAccountId"`
	PoolName          string      `json:"poolName"`
	Rate              json.Number `json:"rate"`
	SourceAmount      int64       `json:"sourceAmount"`
	DestinationAmount int64       `json:"destinationAmount"`
	Reference         string      `json:"reference"`
}

type dumpChat struct {
	ConversationID       string      `json:"conversationId,omitempty"`
	ChatQuoteID          string      `json:"chatQuoteId,omitempty"`
	ListingID            string      `json:"listingId,omitempty"`
	InitialListingRate   json.Number `json:"initialListingRate,omitempty"`
	NegotiationStartedAt string      `json:"negotiationStartedAt,omitempty"`
	QuoteSentAt          string      `json:"quoteSentAt,omitempty"`
}

type dumpSettlement struct {
	Kind          string `json:"kind"`
	AccountID     string `json:"accountId,omitempty"`
	AccountName   string `json:"accountName,omitempty"`
	AccountNumber string `json:"accountNumber,omitempty"`
	BankCode      string `json:"bankCode,omitempty"`
	Address       string `json:"address,omitempty"`
}

func dumpRate(r engine.Rate) json.Number { return json.Number(engine.AppendRate(nil, r)) }

func dumpAmount(a engine.Amount) *int64 { v := int64(a); return &v }

// dumpEventOf converts ev to its stable dump form.
func dumpEventOf(ev engine.Event) dumpEvent {
	var d dumpEvent
	switch ev.(type) {
	case *engine.ClientCreated, *engine.KeyCreated, *engine.KeyRevoked, *engine.KeyRolled, *engine.KeysUsed, *engine.OperatorCreated, *engine.OperatorRevoked, *engine.OperatorActed:
		d.registry(ev)
	case *engine.PoolCreated, *engine.PoolRateSet, *engine.PoolStatusSet, *engine.PoolDeposited, *engine.PoolWithdrawn:
		d.pool(ev)
	case *engine.QuoteCreated, *engine.QuoteAccepted, *engine.PayInSeen, *engine.QuoteCancelled, *engine.QuoteExpired, *engine.QuoteCompleted:
		d.quote(ev)
	case *engine.AccountDeposited, *engine.PaymentReceived, *engine.AccountWithdrawn, *engine.ReceiptReversed, *engine.CreditLimitSet, *engine.ReceiptUnapplied, *engine.UnappliedSettled:
		d.funds(ev)
	case *engine.WebhookCreated, *engine.WebhookDeleted, *engine.WebhookSettled, *engine.WebhookUpdated, *engine.WebhookSecretRotated:
		d.webhook(ev)
	case *engine.MarketsSet, *engine.ChainProgressed:
		d.market(ev)
	}
	return d
}

// registry sets the members of an event of clients, their keys and operators.
func (d *dumpEvent) registry(ev engine.Event) {
	switch ev := ev.(type) {
	case *engine.ClientCreated:
		d.ClientID, d.Name = ev.Client.String(), &ev.Name
		wallets := make([]dumpWallet, len(ev.Wallets))
		for i, w := range ev.Wallets {
			wallets[i] = dumpWallet{AccountID: w.Account.String(), Mode: w.Mode.String(), Currency: w.Currency.String()}
		}
		d.Wallets = &wallets
	case *engine.KeyCreated:
		d.KeyID, d.ClientID, d.Mode, d.KeyHash = ev.Key.String(), ev.Client.String(), ev.Mode.String(), hex.EncodeToString(ev.Hash[:])
	case *engine.KeyRevoked:
		d.KeyID = ev.Key.String()
	case *engine.KeysUsed:
		uses := make([]dumpKeyUse, len(ev.Uses))
		for i, u := range ev.Uses {
			uses[i] = dumpKeyUse{KeyID: u.Key.String(), LastUsedAt: fmtMillis(u.At)}
		}
		d.Keys = &uses
	case *engine.OperatorCreated:
		d.OperatorID, d.Name, d.Role, d.TokenHash = ev.Operator.String(), &ev.Name, ev.Role.String(), hex.EncodeToString(ev.Hash[:])
	case *engine.OperatorRevoked:
		d.OperatorID = ev.Operator.String()
	case *engine.OperatorActed:
		d.AuditID, d.Operator, d.Action, d.Target, d.HTTPStatus = ev.Audit.String(), ev.Operator, ev.Action, &ev.Target, int(ev.Status)
		if !ev.OperatorID.IsZero() {
			d.OperatorID = ev.OperatorID.String()
		}
		if a := ev.Details; a != nil {
			d.Details = &dumpAuditDetails{Reference: a.Reference, TxHash: a.TxHash, BankTransactionID: a.BankTransactionID}
			if a.Currency != engine.CurrencyNone {
				d.Details.Amount, d.Details.Currency = dumpAmount(a.Amount), a.Currency.String()
			}
			if !a.Quote.IsZero() {
				d.Details.QuoteID = a.Quote.String()
			}
			if !a.Account.IsZero() {
				d.Details.AccountID = a.Account.String()
			}
			if !a.Receipt.IsZero() {
				d.Details.ReceiptID = a.Receipt.String()
			}
		}
	case *engine.KeyRolled:
		d.OldKeyID, d.KeyID, d.KeyHash = ev.Old.String(), ev.Key.String(), hex.EncodeToString(ev.Hash[:])
		d.ExpiresAt = fmtMillis(ev.ExpiresAt)
	}
}

// pool sets the members of an event of pools.
func (d *dumpEvent) pool(ev engine.Event) {
	switch ev := ev.(type) {
	case *engine.PoolCreated:
		d.PoolID, d.Mode, d.Name = ev.Pool.String(), ev.Mode.String(), &ev.Name
		d.Pair, d.Source, d.Destination = ev.Pair.String(), ev.Pair.Source.String(), ev.Pair.Destination.String()
		d.Rate = dumpRate(ev.Rate)
		if !ev.Owner.IsZero() {
			d.OwnerClientID = ev.Owner.String()
		}
		d.PoolAccountID, d.ProceedsAccountID = ev.LiquidityAccount.String(), ev.ProceedsAccount.String()
	case *engine.PoolRateSet:
		d.PoolID, d.Rate = ev.Pool.String(), dumpRate(ev.Rate)
	case *engine.PoolStatusSet:
		d.PoolID, d.Status = ev.Pool.String(), "suspended"
		if ev.Active {
			d.Status = "active"
		}
	case *engine.PoolDeposited:
		d.PoolID, d.Amount = ev.Pool.String(), dumpAmount(ev.Amount)
	case *engine.PoolWithdrawn:
		d.PoolID, d.Amount = ev.Pool.String(), dumpAmount(ev.Amount)
	}
}

// quote sets the members of an event of quotes.
func (d *dumpEvent) quote(ev engine.Event) {
	switch ev := ev.(type) {
	case *engine.QuoteCreated:
		d.QuoteID, d.ClientID, d.KeyID, d.Mode = ev.Quote.String(), ev.Client.String(), ev.Key.String(), ev.Mode.String()
		d.Pair, d.Source, d.Destination = ev.Pair.String(), ev.Pair.Source.String(), ev.Pair.Destination.String()
		d.AmountDirection, d.Amount, d.ProposedRate = ev.Direction.String(), dumpAmount(ev.Amount), dumpRate(ev.ProposedRate)
		reference := ev.Reference.String()
		d.Chain, d.Reference = ev.Chain.String(), &reference
		d.Channel = "json"
		if ev.Channel == engine.ChannelXML {
			d.Channel = "xml"
		}
		d.IdempotencyKey, d.RequestHash = ev.IdempotencyKey.String(), hex.EncodeToString(ev.RequestHash[:])
		d.ExpiresAt = fmtMillis(ev.ExpiresAt)
		allocations := make([]dumpAllocation, len(ev.Allocations))
		for i := range ev.Allocations {
			a := &ev.Allocations[i]
			allocations[i] = dumpAllocation{AllocationID: a.ID.String(), PoolID: a.Pool.String(),
				PoolAccountID: a.PoolAccount.String(), PoolName: a.PoolName, Rate: dumpRate(a.Rate),
				SourceAmount: int64(a.Source), DestinationAmount: int64(a.Destination), Reference: a.Reference.String()}
		}
		d.Allocations = &allocations
		if c := ev.Chat; c != nil {
			d.ChatMetadata = &dumpChat{ConversationID: c.ConversationID, ChatQuoteID: c.ChatQuoteID, ListingID: c.ListingID,
				NegotiationStartedAt: c.NegotiationStartedAt, QuoteSentAt: c.QuoteSentAt}
			if !c.InitialListingRate.IsZero() {
				d.ChatMetadata.InitialListingRate = dumpRate(c.InitialListingRate)
			}
		}
	case *engine.QuoteAccepted:
		d.QuoteID, d.ExpiresAt = ev.Quote.String(), fmtMillis(ev.ExpiresAt)
		if !ev.PoolAccount.IsZero() {
			d.PoolAccountID = ev.PoolAccount.String()
		}
		st := &ev.Settlement
		d.Settlement = &dumpSettlement{Kind: st.Kind.String(), AccountName: st.AccountName,
			AccountNumber: st.AccountNumber, BankCode: st.BankCode, Address: st.Address}
		if !st.Account.IsZero() {
			d.Settlement.AccountID = st.Account.String()
		}
		if p := ev.PayIn; p != nil {
			d.PayIn = &dumpPayIn{AddressID: p.Address.String(), Address: p.Deposit, Token: p.Currency.String(),
				Chain: p.Chain.String(), DerivationIndex: p.Index}
		}
	case *engine.PayInSeen:
		d.QuoteID, d.Amount, d.TxHash = ev.Quote.String(), dumpAmount(ev.Amount), ev.TxHash
	case *engine.QuoteCancelled:
		d.QuoteID = ev.Quote.String()
	case *engine.QuoteExpired:
		d.QuoteID = ev.Quote.String()
	case *engine.QuoteCompleted:
		d.QuoteID = ev.Quote.String()
		if ev.Funded() {
			d.WalletID, d.SimulatedAmount = ev.Wallet.String(), dumpAmount(ev.Simulated)
		}
	}
}

// wallet sets the members of a wallet's deposit or withdrawal: the
// wallet, the amount, and the transfer's reference and Idempotency-Key
// when an operator gave them.
func (d *dumpEvent) wallet(account engine.AccountID, amount engine.Amount, reference engine.Identity, key string) {
	d.AccountID, d.Amount = account.String(), dumpAmount(amount)
	d.Identity, d.IdempotencyKey = reference.String(), key
	if !reference.IsZero() {
		ref := reference.Text()
		d.Reference = &ref
	}
}

// funds sets the members of an event of money in wallets: receipts, deposits, withdrawals, credit, suspense.
func (d *dumpEvent) funds(ev engine.Event) {
	switch ev := ev.(type) {
	case *engine.AccountDeposited:
		d.wallet(ev.Account, ev.Amount, ev.Reference, ev.IdempotencyKey)
	case *engine.PaymentReceived:
		d.QuoteID, d.AccountID, d.Amount, d.Method = ev.Quote.String(), ev.Account.String(), dumpAmount(ev.Amount), ev.Method.String()
		if ev.Method == engine.ReceiptBank {
			d.BankTransactionID = ev.Reference
		} else {
			d.AddressID, d.TxHash = ev.Address.String(), ev.Reference
		}
		if !ev.Identity.IsZero() {
			d.Identity = ev.Identity.String()
			if ev.Method == engine.ReceiptCrypto {
				d.LogIndex = &ev.Identity.LogIndex
			}
		}
	case *engine.AccountWithdrawn:
		d.wallet(ev.Account, ev.Amount, ev.Reference, ev.IdempotencyKey)
	case *engine.ReceiptReversed:
		d.ReceiptID, d.AccountID, d.Amount, d.Reason = ev.Receipt.String(), ev.Account.String(), dumpAmount(ev.Amount), &ev.Reason
	case *engine.CreditLimitSet:
		d.AccountID, d.Limit = ev.Account.String(), dumpAmount(ev.Limit)
	case *engine.ReceiptUnapplied:
		u := ev.Receipt
		d.UnappliedID, d.Mode, d.Currency, d.Amount = u.ID.String(), u.Mode.String(), u.Currency.String(), dumpAmount(u.Amount)
		d.Identity, d.BankTransactionID, d.Remittance, d.DebtorName = u.Identity.String(), u.Identity.Text(), &u.Remittance, u.Debtor
	case *engine.UnappliedSettled:
		d.UnappliedID, d.Mode, d.Amount = ev.Unapplied.String(), ev.Mode.String(), dumpAmount(ev.Amount)
		if ev.Returned() {
			d.ReturnReference = ev.Return.Text()
		} else {
			d.AccountID = ev.Account.String()
			if !ev.Quote.IsZero() {
				d.QuoteID = ev.Quote.String()
			}
		}
	}
}

// webhook sets the members of an event of webhook endpoints and their deliveries.
func (d *dumpEvent) webhook(ev engine.Event) {
	switch ev := ev.(type) {
	case *engine.WebhookCreated:
		// NB: never the signing secret.
		d.WebhookID, d.ClientID, d.Mode, d.URL, d.Events = ev.Webhook.String(), ev.Client.String(), ev.Mode.String(), ev.URL, ev.Events.Names()
	case *engine.WebhookDeleted:
		d.WebhookID = ev.Webhook.String()
	case *engine.WebhookUpdated:
		d.WebhookID, d.URL, d.Events = ev.Webhook.String(), ev.URL, ev.Events.Names()
	case *engine.WebhookSecretRotated:
		// Never the secret: when the previous one stops signing.
		d.WebhookID, d.PreviousSecretUntil = ev.Webhook.String(), fmtMillis(ev.PreviousUntil)
	case *engine.WebhookSettled:
		d.WebhookID, d.EventID, d.Delivered = ev.Webhook.String(), ev.Event.String(), &ev.Delivered
	}
}

// market sets the members of an event of markets and the chains watched.
func (d *dumpEvent) market(ev engine.Event) {
	switch ev := ev.(type) {
	case *engine.MarketsSet:
		d.Markets = dumpMarketsOf(ev.Markets)
	case *engine.ChainProgressed:
		d.Chain, d.Block, d.BlockHash = ev.Chain.String(), &ev.Cursor.Block, "0x"+hex.EncodeToString(ev.Cursor.Hash[:])
		if len(ev.Unapplied) > 0 {
			us := make([]dumpChainDeposit, len(ev.Unapplied))
			for i, u := range ev.Unapplied {
				us[i] = dumpChainDeposit{TxHash: u.Tx, LogIndex: u.LogIndex, Block: u.Block, AddressID: u.Address.String(),
					Currency: u.Currency.String(), Value: u.Value, Decimals: u.Decimals, Reason: u.Reason.String()}
			}
			d.Unapplied = &us
		}
	}
}

func walDump(log Source, out io.Writer, from, limit uint64, asJSON bool) error {
	printed := uint64(0)
	errStop := errors.New("limit reached")
	first, err := log.FirstRetained()
	if err != nil {
		return err
	}
	start := first - 1 // by default, from the first record retention kept
	if from > 0 {
		start = from - 1
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	err = log.Replay(start, func(seq uint64, rec []byte) error {
		if limit > 0 && printed >= limit {
			return errStop
		}
		ev, err := engine.DecodeEvent(rec)
		if err != nil {
			return fmt.Errorf("wal: corrupt record at seq %d: %w", seq, err)
		}
		printed++
		if asJSON {
			return enc.Encode(dumpRecord{Seq: seq, Type: ev.Type().String(), At: fmtMillis(ev.Time()), Event: dumpEventOf(ev)})
		}
		if _, err := fmt.Fprintf(out, "%d %s %s ", seq, fmtMillis(ev.Time()), ev.Type()); err != nil {
			return err
		}
		return enc.Encode(dumpEventOf(ev)) // ends the line
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}
