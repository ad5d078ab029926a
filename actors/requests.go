package actors

import "github.com/oja-exchange/oja/engine"

// What each request is answered with (Request): the one list of the
// actors' request and reply types. A request sent with ask, or given to a
// System method taking a Request, gets this reply or an error.

// Quotes: the pair actor creates, the quote actor transitions.
func (*CreateQuote) answeredWith(*QuoteReply)     {}
func (*TransitionQuote) answeredWith(*QuoteReply) {}

// Pools: the pool actor (through the pair for a rate or status change).
func (*PoolCommand) answeredWith(*PoolReply) {}
func (*poolDeposit) answeredWith(*PoolReply) {}

// The pair actor's figures for the console.
func (*readExposures) answeredWith(*exposuresRead) {}

// The treasury of a mode.
func (*DepositAccount) answeredWith(*AccountReply)      {}
func (*WithdrawAccount) answeredWith(*AccountReply)     {}
func (*SetCreditLimit) answeredWith(*CreditReply)       {}
func (*fundCompletion) answeredWith(*fundingReply)      {}
func (*recordReceipt) answeredWith(*ReceiptReply)       {}
func (*reverseReceipt) answeredWith(*ReceiptReply)      {}
func (*recordUnapplied) answeredWith(*UnappliedReply)   {}
func (*settleUnapplied) answeredWith(*UnappliedReply)   {}
func (*readStatement) answeredWith(*StatementReply)     {}
func (*readCredit) answeredWith(*creditRead)            {}
func (*treasurySnapshot) answeredWith(*engine.Treasury) {}

// The coordinator: clients, keys, pools, webhooks.
func (*CreateClient) answeredWith(*AdminReply)        {}
func (*CreateKey) answeredWith(*AdminReply)           {}
func (*RevokeKey) answeredWith(*AdminReply)           {}
func (*RollKey) answeredWith(*AdminReply)             {}
func (*CreatePool) answeredWith(*AdminReply)          {}
func (*CreateWebhook) answeredWith(*AdminReply)       {}
func (*DeleteWebhook) answeredWith(*AdminReply)       {}
func (*UpdateWebhook) answeredWith(*AdminReply)       {}
func (*RotateWebhookSecret) answeredWith(*AdminReply) {}

// The coordinator: operators and the audit trail.
func (*CreateOperator) answeredWith(*OperatorReply) {}
func (*RevokeOperator) answeredWith(*OperatorReply) {}
func (*RecordAudit) answeredWith(*OperatorReply)    {}

// The coordinator: watched chains.
func (*RecordChainProgress) answeredWith(*ChainReply) {}
