// Package engine is Oja's deterministic state machine: currencies and exact
// money, liquidity pools and their order books, allocation, the quote
// lifecycle, the double-entry ledger with holds, and the outcome events that
// record every change.
//
// It has no goroutines, channels, locks, IO, logging, wall clock or
// randomness: every command takes the time as an argument (unix
// milliseconds) and every identifier as an input, so the same events always
// rebuild the same state, byte for byte (State.Hash). Where a bulk load
// could use a second core, the engine splits the work into steps a caller
// may run side by side (DecodeStateWith, DeferKeyWrites); package actors
// runs them on goroutines. The one process-wide thing is the currency table
// (currency.go): the log codec reads a currency byte with no state at
// hand, so the table only grows, an entry never changes, and writers take a
// lock. internal/repocheck's TestEnginePure keeps all of this true. The
// service (package actors) and the offline tools (oja wal) drive the
// engine; neither adds rules of its own.
//
// A caller:
//
//  1. decides a command with the entity that owns it — Book.Allocate for a
//     new quote, Quote.Accept/Cancel/ExpireIfDue for a transition and
//     Treasury.CompleteFunded for a completion (funds first: the partner's
//     wallet must cover it, funds.go), Pool.Withdraw for a pool withdrawal,
//     Treasury.DecideReceipt/DecideWithdrawal/DecideCreditLimit for a
//     wallet's receipts, payouts and credit — and gets a Result (ResultOK or a
//     business refusal; refusals are values, never errors) and, when
//     something changes, an Event;
//  2. makes the event durable (AppendEvent encodes it for the log);
//  3. applies it: the entity's Apply methods, or State.Apply for the whole
//     state. Replay is step 3 alone, from the log: events carry outcomes
//     (QuoteCreated holds the allocations made), so matching never re-runs.
//
// Money is integer minor units (Amount) and rates are 128-bit integers
// scaled by 10^18 (Rate, up to 10^12), with 128- and 192-bit intermediates
// (money.go, wide.go); shopspring/decimal is used only at the edges (parsing
// and printing). Currencies, pairs and their bounds come from configuration
// (Markets, markets.go; recorded by a MarketsSet event); a token source's
// accepted quote carries a crypto pay-in (payin.go) whose address package
// hd derives. Invariants, each asserted where it can
// break: the ledger sums to zero per mode and currency (see Treasury for the
// sub-ledger design); 0 <= held <= balance on every non-clearing account
// (a wallet's balance may go down to minus its credit limit); a live
// completion spends money that arrived (funds.go); a
// pool's holds never exceed its liquidity; a quote is reserved in full or not
// at all; terminal quotes never change.
package engine
