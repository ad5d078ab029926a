package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// A crypto pay-in: when a quote whose source is a token is accepted, the
// marketplace issues it a deposit address of its own (as bankPayIn gives a
// fiat source the collection account and a reference). The address is
// derived from the markets' deposit key of the token and the quote's chain
// at a derivation index that is never used twice (engine/hd; the live
// allocator is actors.System's; State.PayInNext, in snapshots too, is each
// series' next index, one above the highest ever issued), and the issued
// address is recorded in
// the QuoteAccepted itself: what the partner was told never changes, even
// if the configured key does.
//
// Status: active from the acceptance; pending once a deposit is credited
// (PaymentReceived, funds.go; or a PayInSeen of a log written before funds
// first, which credited nothing); expired once the quote has ended.

// PayInSeries is the (token, chain) a derivation index counts in.
type PayInSeries struct {
	Currency Currency
	Chain    Chain
}

// PayIn is a quote's crypto pay-in.
type PayIn struct {
	Address   AddressID // addressId: the operator's handle on it
	Deposit   string    // the chain address (hd.Key.Address)
	Currency  Currency  // the token
	Chain     Chain
	Index     uint32 // derivation index: xpub/0/Index
	CreatedAt int64
	// A deposit an operator recorded (PayInSeen); SeenAt is 0 before.
	SeenAmount Amount
	SeenTx     string
	SeenAt     int64
}

// AddressID identifies a pay-in address (a UUID).
type AddressID [16]byte

func (id AddressID) String() string { return uuid.UUID(id).String() }

// PayInStatus values (spec §6: CryptoPayInDetails.status).
const (
	PayInActive  = "active"
	PayInPending = "pending"
	PayInExpired = "expired"
)

// PayInStatus is q's pay-in status (spec §15.1); "" when q has none.
// received says whether a deposit to it was credited (a PaymentReceived;
// the treasury holds them): active until the first deposit, pending while
// the quote awaits payment after one, expired once the quote has ended.
func (q *Quote) PayInStatus(received bool) string {
	switch p := q.PayIn; {
	case p == nil:
		return ""
	case !q.Status.Open():
		return PayInExpired
	case received || p.SeenAt != 0:
		return PayInPending
	}
	return PayInActive
}

// VirtualAccountID is the stable identifier of a client's deposits in one
// token (CryptoPayInDetails.virtualAccountId): derived, so it is the same
// on every quote, node and restart.
func VirtualAccountID(client ClientID, token Currency) string {
	h := sha256.Sum256(append(append([]byte("oja virtual account\x00"), client[:]...), token.String()...))
	return "VA-" + strings.ToUpper(hex.EncodeToString(h[:10]))
}

// PayInWarning is the warning shown with a deposit address.
func PayInWarning(token Currency, chain Chain) string {
	return fmt.Sprintf("Send only %s on %s to this address; any other token or network is lost. "+
		"Send the expected amount before the address expires; it is for this quote only.", token, chain)
}

// PayInTxHashMax bounds a recorded deposit's transaction hash.
const PayInTxHashMax = 128

// PayInSeen records that a deposit to a quote's pay-in address was seen on
// chain. Written only before funds first (an operator's seen then credited
// nothing; now it is a PaymentReceived): replay still applies it to the
// quote's pay-in, and nothing else.
type PayInSeen struct {
	At     int64
	Quote  QuoteID
	Amount Amount // in the token's minor units
	TxHash string
}

func (ev *PayInSeen) Type() EventType { return EventPayInSeen }
func (ev *PayInSeen) Time() int64     { return ev.At }

// RecordPayIn is the rule a PayInSeen was decided by (replay checks old
// logs with it): refused unless q awaits payment with an active pay-in; the
// same report again is a safe repeat (ResultOK, no event); another report
// after one is INVALID_STATE.
func (q *Quote) RecordPayIn(amount Amount, txHash string, now int64) (Result, *PayInSeen) {
	p := q.PayIn
	switch {
	case p == nil || q.Status != StatusAwaitingPayment && p.SeenAt == 0:
		return ResultInvalidState, nil
	case p.SeenAt != 0:
		if p.SeenAmount == amount && p.SeenTx == txHash {
			return ResultOK, nil
		}
		return ResultInvalidState, nil
	}
	return ResultOK, &PayInSeen{At: now, Quote: q.ID, Amount: amount, TxHash: txHash}
}

// checkPayIn is replay's check of a pay-in an acceptance issues.
func (s *State) checkPayIn(q *Quote, p *PayIn) error {
	switch {
	case !p.Currency.Valid() || !p.Currency.IsToken() || p.Currency != q.Pair.Source:
		return fmt.Errorf("pay-in in %s for a %s quote", p.Currency, q.Pair)
	case p.Chain != q.Chain || p.Chain == ChainNone || p.Deposit == "" || p.Address == (AddressID{}):
		return fmt.Errorf("malformed pay-in")
	}
	if _, dup := s.PayIns[p.Address]; dup {
		return fmt.Errorf("pay-in address id %s in use", p.Address)
	}
	return nil
}

// applyPayIn indexes an issued pay-in and moves its series' next index.
func (s *State) applyPayIn(q *Quote) {
	p := q.PayIn
	s.PayIns[p.Address] = q.ID
	series := PayInSeries{p.Currency, p.Chain}
	s.PayInNext[series] = max(s.PayInNext[series], p.Index+1)
}
