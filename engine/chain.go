package engine

import (
	"fmt"
	"math/big"
	"slices"
)

// Chain deposits (spec §16.2): a watcher per chain reads the token
// transfers to Oja's live deposit addresses, credits each confirmed one as
// a receipt with its identity (chain, txHash, logIndex), and records how
// far it read — the block and its hash — in the log (ChainProgressed), so
// that a restart, a kill -9 or a failover resumes where the last durable
// record says, and a reorg is seen by the hash of that block changing.
// A transfer whose value the currency cannot hold exactly is recorded as
// unapplied for an operator, never rounded.

// ChainCursor is how far a chain was read: the last block processed and
// its hash.
type ChainCursor struct {
	Block uint64
	Hash  [32]byte
}

// Unapplied reasons: why a transfer to a deposit address was not credited.
type UnappliedReason uint8

const (
	// UnappliedPrecision: the value has more decimal places than the
	// currency keeps.
	UnappliedPrecision UnappliedReason = 1 + iota
	// UnappliedTooLarge: the value is over AmountMax.
	UnappliedTooLarge
	unappliedReasonEnd
)

func (r UnappliedReason) String() string {
	switch r {
	case UnappliedPrecision:
		return "more decimal places than the currency keeps"
	case UnappliedTooLarge:
		return "larger than an amount can be"
	}
	return "?"
}

// ChainDeposit is a token transfer to a deposit address that was not
// credited: what the chain says of it and why.
type ChainDeposit struct {
	Tx       string // canonical hash text (TxHashText)
	LogIndex uint32
	Block    uint64
	Address  AddressID
	Currency Currency
	Value    string // the transfer's value in the token's base units, decimal digits
	Decimals uint8  // the token contract's decimals()
	Reason   UnappliedReason
}

// ChainProgressed: a chain's watcher processed every block up to Cursor
// and found Unapplied in them. A cursor lower than the last one is a
// rewind after a reorg.
type ChainProgressed struct {
	At        int64
	Chain     Chain
	Cursor    ChainCursor
	Unapplied []ChainDeposit
}

func (*ChainProgressed) Type() EventType { return EventChainProgressed }
func (e *ChainProgressed) Time() int64   { return e.At }
func (e *ChainProgressed) String() string {
	return fmt.Sprintf("%s at block %d", e.Chain, e.Cursor.Block)
}

// ChainUnappliedMax bounds the unapplied deposits one ChainProgressed
// carries; ChainUnappliedKeptMax those a chain keeps (the newest).
const (
	ChainUnappliedMax     = 256
	ChainUnappliedKeptMax = 10_000
)

// ChainState is what the log says of one chain: its cursor, and the
// deposits not credited (oldest first, the newest ChainUnappliedKeptMax).
type ChainState struct {
	Cursor    ChainCursor
	Unapplied []ChainDeposit
}

// Check reports whether ev is a record the log may hold: a watched chain,
// at most ChainUnappliedMax unapplied deposits, each well formed and in a
// block the cursor covers.
func (ev *ChainProgressed) Check() error {
	if ev.Chain == ChainNone || ev.Chain >= chainEnd || ev.Chain == ChainSolana {
		return fmt.Errorf("chain %d is not watched", ev.Chain)
	}
	if len(ev.Unapplied) > ChainUnappliedMax {
		return fmt.Errorf("%d unapplied deposits in one record, at most %d", len(ev.Unapplied), ChainUnappliedMax)
	}
	for _, d := range ev.Unapplied {
		if d.Reason == 0 || d.Reason >= unappliedReasonEnd || !d.Currency.Valid() || d.Block > ev.Cursor.Block ||
			d.Tx == "" || len(d.Tx) > ReceiptReferenceBytesMax || d.Value == "" || len(d.Value) > chainValueDigitsMax {
			return fmt.Errorf("unapplied deposit %s:%d does not fit", d.Tx, d.LogIndex)
		}
	}
	return nil
}

func (s *State) applyChain(ev *ChainProgressed) {
	c := s.Chains[ev.Chain]
	if c == nil {
		c = &ChainState{}
		s.Chains[ev.Chain] = c
	}
	c.Apply(ev)
}

// Apply moves c to ev's cursor and lists ev's unapplied deposits (a
// transfer read again after a rewind is listed once), keeping the newest
// ChainUnappliedKeptMax. It changes c.Unapplied in place.
func (c *ChainState) Apply(ev *ChainProgressed) {
	c.Cursor = ev.Cursor
	for _, d := range ev.Unapplied {
		if !slices.ContainsFunc(c.Unapplied, func(o ChainDeposit) bool { return o.Tx == d.Tx && o.LogIndex == d.LogIndex }) {
			c.Unapplied = append(c.Unapplied, d)
		}
	}
	if over := len(c.Unapplied) - ChainUnappliedKeptMax; over > 0 {
		c.Unapplied = slices.Delete(c.Unapplied, 0, over)
	}
}

// ConfirmedThrough is the highest block that has confirmations blocks,
// itself included, when the chain's head is head: head − confirmations +
// 1. ok is false when no block has (or confirmations is 0).
func ConfirmedThrough(head uint64, confirmations uint32) (uint64, bool) {
	if confirmations == 0 || head+1 < uint64(confirmations) {
		return 0, false
	}
	return head + 1 - uint64(confirmations), true
}

// TokenAmount is value, a token transfer in base units of a contract
// with decimals places, in c's minor units — exactly, or not at all:
// UnappliedPrecision when c keeps fewer places than value needs,
// UnappliedTooLarge over AmountMax (or not positive).
func TokenAmount(value *big.Int, decimals uint8, c Currency) (Amount, UnappliedReason) {
	if value.Sign() <= 0 {
		return 0, UnappliedTooLarge
	}
	v := new(big.Int).Set(value)
	minor := int(c.MinorUnits())
	switch d := int(decimals); {
	case d > minor:
		scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d-minor)), nil)
		var rem big.Int
		v.QuoRem(v, scale, &rem)
		if rem.Sign() != 0 {
			return 0, UnappliedPrecision
		}
	case d < minor:
		v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(minor-d)), nil))
	}
	if !v.IsInt64() || v.Int64() > int64(AmountMax) || v.Int64() <= 0 {
		return 0, UnappliedTooLarge
	}
	return Amount(v.Int64()), 0
}

func (e *encoder) chainProgressed(ev *ChainProgressed) {
	e.byte1(uint8(ev.Chain))
	e.chainState(&ChainState{Cursor: ev.Cursor, Unapplied: ev.Unapplied})
}

func (d *decoder) chainProgressed(at int64) *ChainProgressed {
	ev := &ChainProgressed{At: at, Chain: d.chain()}
	c := d.chainState(ChainUnappliedMax)
	ev.Cursor, ev.Unapplied = c.Cursor, c.Unapplied
	return ev
}

// chainState writes a cursor and its unapplied deposits (a record's, or a
// snapshot's chain).
func (e *encoder) chainState(c *ChainState) {
	e.uvarint(c.Cursor.Block)
	e.hash(c.Cursor.Hash)
	e.uvarint(uint64(len(c.Unapplied)))
	for _, u := range c.Unapplied {
		e.str(u.Tx)
		e.uvarint(uint64(u.LogIndex))
		e.uvarint(u.Block)
		e.id(u.Address)
		e.byte1(uint8(u.Currency))
		e.str(u.Value)
		e.byte1(u.Decimals)
		e.byte1(uint8(u.Reason))
	}
}

func (d *decoder) chainState(max int) ChainState {
	c := ChainState{Cursor: ChainCursor{Block: d.uvarint(), Hash: d.hash()}}
	n := d.uvarint()
	if n > uint64(max) || n > uint64(len(d.buf)) {
		d.fail()
		return c
	}
	for ; n > 0 && d.err == nil; n-- {
		u := ChainDeposit{Tx: d.str(), LogIndex: uint32(d.uvarint()), Block: d.uvarint(), Address: d.id(),
			Currency: Currency(d.byte1()), Value: d.str(), Decimals: d.byte1(), Reason: UnappliedReason(d.byte1())}
		if len(u.Tx) > ReceiptReferenceBytesMax || len(u.Value) > chainValueDigitsMax {
			d.fail()
		}
		c.Unapplied = append(c.Unapplied, u)
	}
	return c
}

// chainValueDigitsMax bounds a transfer's value as decimal digits: a
// uint256 has at most 78.
const chainValueDigitsMax = 78
