package actors

import "github.com/asynkron/protoactor-go/actor"

// An address is the PID of an actor whose type is A: System.pairs holds
// address[*pairActor], so a reader (and go-to-definition) goes from a send
// to the Receive that answers it. A message states which actors receive it
// with a method (receivedBy, listed below, like the replies in
// requests.go), and send and ask take only those: a message sent to an
// actor whose Receive would drop it does not compile.
//
// Replies go to the asker's reply target (replyTarget, a replier), which
// is no actor; Request[R] types them.
type address[A actor.Actor] struct{ pid *actor.PID }

// message is a message an actor of type A receives.
type message[A actor.Actor] interface{ receivedBy(A) }

// spawn starts a, an actor of kind (for the mailbox gauges), and returns
// its address.
func spawn[A actor.Actor](s *System, a A, kind int) address[A] {
	gauge := &s.mailboxes[kind]
	mailbox := boundedMailbox(mailboxMessagesMax, gauge)
	if kind == kindQuote {
		mailbox = actor.Unbounded(gauge) // a quote gets a handful of messages
	}
	return address[A]{s.root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a },
		actor.WithMailbox(mailbox), actor.WithDispatcher(s.dispatcher)))}
}

// A request is a message to an actor of type A that A answers with R.
type request[R any, A actor.Actor] interface {
	Request[R]
	message[A]
}

// AdminRequest is what System.Admin takes: a request the coordinator
// answers with an AdminReply (CreateClient, CreateKey, CreatePool…).
type AdminRequest = request[*AdminReply, *coordinatorActor]

// OperatorRequest is what System.OperatorCommand takes: a request the
// coordinator answers with an OperatorReply (CreateOperator,
// RevokeOperator, RecordAudit).
type OperatorRequest = request[*OperatorReply, *coordinatorActor]

// addressOf is the address of a, the actor whose Receive ctx is given to.
func addressOf[A actor.Actor](ctx actor.Context, a A) address[A] { return address[A]{ctx.Self()} }

// A delivery is a message and where it goes, once a write is durable
// (appendThen): an actor (deliver) or a reply target (replyWith).
type delivery struct {
	to  *actor.PID
	msg any
}

// deliver is msg for the actor at to.
func deliver[A actor.Actor](to address[A], msg message[A]) delivery { return delivery{to.pid, msg} }

// replyWith is a reply for the reply target to.
func replyWith(to replyTarget, reply any) delivery { return delivery{to, reply} }

// send sends msg to the actor at to, from outside any actor.
func send[A actor.Actor](s *System, to address[A], msg message[A]) { s.root.Send(to.pid, msg) }

// What each actor receives. A continuation sent to ctx.Self() is listed
// with its actor too.

// The pair actor: quotes created, the book's pools and budgets.
func (*CreateQuote) receivedBy(*pairActor)     {}
func (*quoteRecorded) receivedBy(*pairActor)   {}
func (*PoolCommand) receivedBy(*pairActor)     {}
func (*poolAdded) receivedBy(*pairActor)       {}
func (*bookOutcome) receivedBy(*pairActor)     {}
func (*readExposures) receivedBy(*pairActor)   {}
func (*budgetDeposited) receivedBy(*pairActor) {}

// The pool actor: its liquidity.
func (*sliceEffect) receivedBy(*poolActor)      {}
func (*poolDeposit) receivedBy(*poolActor)      {}
func (*poolEventApplied) receivedBy(*poolActor) {}

// A quote actor: its transitions and its deadline.
func (*TransitionQuote) receivedBy(*quoteActor) {}
func (*expiryDue) receivedBy(*quoteActor)       {}
func (*appendDurable) receivedBy(*quoteActor)   {}

// The treasury of a mode: wallets, receipts, credit, statements.
func (*clientOpened) receivedBy(*treasuryActor)     {}
func (*walletsSettled) receivedBy(*treasuryActor)   {}
func (*fundCompletion) receivedBy(*treasuryActor)   {}
func (*fundsReleased) receivedBy(*treasuryActor)    {}
func (*DepositAccount) receivedBy(*treasuryActor)   {}
func (*WithdrawAccount) receivedBy(*treasuryActor)  {}
func (*SetCreditLimit) receivedBy(*treasuryActor)   {}
func (*recordReceipt) receivedBy(*treasuryActor)    {}
func (*reverseReceipt) receivedBy(*treasuryActor)   {}
func (*recordUnapplied) receivedBy(*treasuryActor)  {}
func (*settleUnapplied) receivedBy(*treasuryActor)  {}
func (*paymentDurable) receivedBy(*treasuryActor)   {}
func (*readStatement) receivedBy(*treasuryActor)    {}
func (*readCredit) receivedBy(*treasuryActor)       {}
func (*forgetFunds) receivedBy(*treasuryActor)      {}
func (*treasurySnapshot) receivedBy(*treasuryActor) {}

// The coordinator: clients, keys, pools, webhooks, operators, chains.
func (*CreateClient) receivedBy(*coordinatorActor)        {}
func (*CreateKey) receivedBy(*coordinatorActor)           {}
func (*RevokeKey) receivedBy(*coordinatorActor)           {}
func (*RollKey) receivedBy(*coordinatorActor)             {}
func (*CreatePool) receivedBy(*coordinatorActor)          {}
func (*CreateWebhook) receivedBy(*coordinatorActor)       {}
func (*DeleteWebhook) receivedBy(*coordinatorActor)       {}
func (*UpdateWebhook) receivedBy(*coordinatorActor)       {}
func (*RotateWebhookSecret) receivedBy(*coordinatorActor) {}
func (*CreateOperator) receivedBy(*coordinatorActor)      {}
func (*RevokeOperator) receivedBy(*coordinatorActor)      {}
func (*RecordAudit) receivedBy(*coordinatorActor)         {}
func (*operatorDurable) receivedBy(*coordinatorActor)     {}
func (*RecordChainProgress) receivedBy(*coordinatorActor) {}
func (*chainDurable) receivedBy(*coordinatorActor)        {}
func (*structuralDurable) receivedBy(*coordinatorActor)   {}
