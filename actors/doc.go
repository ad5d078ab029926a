// Package actors runs Oja's engine as protoactor-go actors, each holding its
// hot state in memory and rebuilt from the log on restart.
//
// The actors and what each owns:
//
//   - pair actor, one per (mode, pair): the order book — pool priority and
//     the reservation budget. Every quote of the pair is allocated and
//     reserved here, one at a time, which makes allocation all-or-nothing
//     and over-allocation impossible. Pool rate, status, deposit and
//     withdrawal are decided here too.
//   - pool actor, one per liquidity pool: the pool's ledger (liquidity with
//     holds, proceeds, clearing shards) and trade counters.
//   - quote actor, one per open quote: status and deadline. Virtual: it is
//     activated from the quote's durable state by the first message that
//     needs it (a transition, its deadline on the expiry wheel) and stops when the quote
//     turns terminal; the final view stays readable.
//   - treasury actor, one per mode: partner wallets (balances, credit
//     limits, statements), the mode's receipts and its shard of each
//     clearing account; it decides everything that spends a wallet — a
//     completion's funding (asked by the quote actor), payouts, credit
//     limits — and receipts (funds.go).
//   - coordinator: clients, API keys, new pools and webhook endpoints.
//
// The pair actor also decides a key's limits with each reservation: its
// open quotes (--max-open-quotes) and its share of the pair's liquidity
// (--max-key-share), both released by it when the quote ends (limits.go).
//
// How the package is laid out: Start builds a System in steps (build.go);
// an actor is addressed by its type, and every message states the actors
// that receive it (addresses.go) and every request its reply type
// (requests.go): send and ask compile only for a message the actor
// handles;
// the read models the actors publish are one registry (reads.go); a Term
// (term.go) bundles a System with its webhook dispatcher for as long as
// this process may write.
//
// How a write flows:
//
//  1. The gateway sends one request to the owning actor; its reply comes
//     back to a replier, a reply target reused across requests (replier.go).
//  2. The actor decides with the engine, applies the outcome to its own
//     state at once (so the next message sees it) and appends the event to
//     the log.
//  3. When the log reports the event durable, its callback only enqueues
//     one message (System.appendThen, the one way an actor's write
//     finishes; records no actor decides — webhook settlements, keys' last
//     uses — go through System.appendRecords and are waited for): back to
//     the owning actor (appendDurable, quoteRecorded, structuralDurable), to
//     the pair actor whose budget a deposit grows (budgetDeposited), to the
//     pool a pair-decided change belongs to (poolEventApplied), or straight
//     to the caller when nothing else follows. The receiving actor
//     publishes views, routes the event's outcome to the other owners
//     (engine.RouteOutcome, the route replay applies too: holds, settlements
//     and releases to pools, releases to the pair, a completion's wallet
//     debit and payout to the treasury)
//     — in log order — and only then replies. No 2xx is ever sent for an event
//     that is not fsync'd; a safe repeat waits for its quote's in-flight
//     appends.
//  4. If the log fails, every later write fails too (503) until a restart
//     rebuilds the actors from what is durable.
//
// Reads (GET quote, balances, pools) never message an actor: each actor
// publishes immutable views through atomic pointers in the read models
// (reads.go). A
// partner's quote listing reads a per-(client, mode) index of those views
// in creation order (listing.go), built on its first listing.
//
// What webhook events are owed is not the actors' business: the log
// follower (follower.go) applies every durable record to an engine.State of
// its own and feeds the webhook dispatcher from it; the dispatcher records
// deliveries through System.SettleWebhookEvents.
//
// Mailboxes run on workerDispatcher's goroutines, which wait for the next
// mailbox run instead of ending after each (dispatcher.go): a new goroutine
// per run, protoactor's default, grew a fresh stack on every create.
//
// In cluster mode (package actors/cluster) the same actors run on the
// leader only, with a Raft-backed Log.
//
// NB: a view may show a change whose fsync is still in flight (at most one
// group commit, ~1 ms); the write itself is acknowledged only once durable.
package actors
