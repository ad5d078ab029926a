package actors

import "github.com/asynkron/protoactor-go/actor"

// boundedMailbox makes mailboxes that hold at most max user messages: a
// sender to a full one waits (back-pressure), nothing is dropped.
//
// protoactor's own bounded mailbox (actor.Bounded) allocates its ring of
// max slots up front: 1.5 MB for 65,536 messages, for every pair, pool,
// treasury and coordinator actor, whether or not a message ever waits
// (27 MB in ojabench's memory section, by its heap profile; a thousand
// pools would take 1.5 GB). This
// one is protoactor's unbounded mailbox, which grows with what waits, and
// a channel of max tokens: a sender takes one before posting, and the
// mailbox gives it back once the message has been received. A channel of
// empty tokens allocates nothing per slot.
func boundedMailbox(max int, gauge *mailboxGauge) actor.MailboxProducer {
	return func() actor.Mailbox {
		tokens := make(chan struct{}, max)
		return &tokenMailbox{Mailbox: actor.Unbounded(gauge, tokenReturner(tokens))(), tokens: tokens}
	}
}

// tokenMailbox is an unbounded mailbox that a user message enters only
// with a token.
type tokenMailbox struct {
	actor.Mailbox
	tokens chan struct{}
}

func (m *tokenMailbox) PostUserMessage(message any) {
	m.tokens <- struct{}{} // waits while max messages wait
	m.Mailbox.PostUserMessage(message)
}

// tokenReturner gives a token back for each user message received (a
// protoactor mailbox middleware, told of system messages too).
type tokenReturner chan struct{}

func (t tokenReturner) MailboxStarted()   {}
func (t tokenReturner) MessagePosted(any) {}
func (t tokenReturner) MailboxEmpty()     {}
func (t tokenReturner) MessageReceived(message any) {
	switch message.(type) {
	case actor.SystemMessage, interface{ MailboxMessage() }:
		return // posted as system messages: they took no token
	}
	// NB: never blocks, should a message the mailbox did not count
	// arrive: a token given back twice would loosen the bound, a wait here
	// would stall the actor.
	select {
	case <-t:
	default:
	}
}
