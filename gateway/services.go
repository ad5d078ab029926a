package gateway

import (
	"time"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// The gateway reaches the running system through five narrow services,
// each the part of *actors.System one kind of request uses; a handler
// names the service it calls (svc.quotes.CreateQuote), and a helper takes
// only the service it needs. Only this file names the System: the server
// builds a services value from the term it serves (Server.served), for
// each request (five interface values of one pointer: no allocation).
type services struct {
	quotes    quoteService
	money     moneyService
	directory directoryService
	operators operatorService
	market    marketService
}

// servicesOf is sys seen as the five services.
func servicesOf(sys *actors.System) services {
	return services{quotes: sys, money: sys, directory: sys, operators: sys, market: sys}
}

// marketOf is sys's market service; nil for no system (a hub's tests
// serve a term without one).
func marketOf(sys *actors.System) marketService {
	if sys == nil {
		return nil
	}
	return sys
}

// quoteService is a quote's life: create, read, list, accept, cancel,
// complete (a partner's or an operator's), and the crypto pay-ins that
// name a quote.
type quoteService interface {
	CreateQuote(cmd *actors.CreateQuote) *actors.QuoteReply
	Quote(client engine.ClientID, mode engine.Mode, id engine.QuoteID) (*engine.Quote, bool)
	AnyQuote(id engine.QuoteID) (*engine.Quote, bool)
	QuoteByReference(m engine.Mode, reference string) (*engine.Quote, bool)
	ListQuotes(client engine.ClientID, mode engine.Mode, f actors.QuoteFilter) ([]*engine.Quote, bool, error)
	TransitionQuote(client engine.ClientID, mode engine.Mode, id engine.QuoteID, cmd *actors.TransitionQuote) *actors.QuoteReply
	OperatorCancel(id engine.QuoteID, audit *engine.OperatorActed) *actors.QuoteReply
	OperatorComplete(id engine.QuoteID, audit *engine.OperatorActed) *actors.QuoteReply
	PayInQuote(id engine.AddressID) (*engine.Quote, bool)
	AwaitingPayment(m engine.Mode, after engine.QuoteID, limit int) ([]*engine.Quote, bool)
	QuoteCounts() map[engine.Mode]map[engine.Status]int
}

// moneyService is the money: accounts and their statements, receipts
// (bank and chain) and the unapplied ones, credit, and the ledger's
// checks.
type moneyService interface {
	Account(id engine.AccountID) (*engine.Account, bool)
	ClientAccounts(client engine.ClientID, m engine.Mode) []*engine.Account
	AccountOwnedBy(a *engine.Account, client engine.ClientID, m engine.Mode) bool
	DepositAccount(cmd *actors.DepositAccount) *actors.AccountReply
	WithdrawAccount(cmd *actors.WithdrawAccount) *actors.AccountReply
	Statement(wallet engine.AccountID, after uint64, limit int) *actors.StatementReply

	Receipts(q engine.QuoteID) []engine.Payment
	RecentReceipts(m engine.Mode, offset, limit int) ([]engine.Payment, bool)
	Payment(id engine.Identity) (engine.Payment, bool)
	Duplicates() []actors.Duplicate
	RecordBankReceipt(m engine.Mode, reference string, amount engine.Amount, bankTransactionID engine.Identity, audit *engine.OperatorActed) *actors.ReceiptReply
	RecordCryptoReceipt(address engine.AddressID, amount engine.Amount, hash string, logIndex uint32, audit *engine.OperatorActed) *actors.ReceiptReply
	ReverseReceipt(id engine.ReceiptID, reason string, audit *engine.OperatorActed) *actors.ReceiptReply
	ChainStates() map[engine.Chain]engine.ChainState

	RecordUnapplied(m engine.Mode, u engine.UnappliedReceipt, audit *engine.OperatorActed) *actors.UnappliedReply
	Unapplied(id engine.UnappliedID) (engine.UnappliedReceipt, bool)
	UnappliedList(m engine.Mode) []engine.UnappliedReceipt
	SettleUnapplied(req engine.SettleRequest, audit *engine.OperatorActed) *actors.UnappliedReply

	SetCreditLimit(client engine.ClientID, m engine.Mode, c engine.Currency, limit engine.Amount, audit *engine.OperatorActed) *actors.CreditReply
	CreditLimits(m engine.Mode, wallets []engine.AccountID) (map[engine.AccountID]engine.Amount, error)
	LedgerCheck(m engine.Mode) (engine.LedgerReport, error)
	LargestExposures(m engine.Mode, n int) ([]actors.BookExposures, error)
}

// directoryService is who is who: API keys, clients, their keys and
// webhooks, and the coordinator's writes that make them and pools
// (Admin).
type directoryService interface {
	Authenticate(secret string) (actors.Principal, bool)
	Client(id engine.ClientID) (*engine.Client, bool)
	Clients() []*engine.Client
	ClientKeys(id engine.ClientID) []engine.Key
	Webhooks(client engine.ClientID) []engine.Webhook
	WebhookToDeliver(client engine.ClientID, m engine.Mode, id engine.WebhookID) (*engine.Webhook, bool)
	Admin(cmd actors.AdminRequest) *actors.AdminReply
}

// operatorService is the operators, their audit trail and the service's
// own state: readiness, activity, the actors' mailboxes.
type operatorService interface {
	AuthenticateOperator(token string) (engine.Operator, bool)
	Operator(id engine.OperatorID) (engine.Operator, bool)
	Operators() []engine.Operator
	OperatorCommand(cmd actors.OperatorRequest) *actors.OperatorReply
	AuditPage(after engine.AuditID, limit int) (page []engine.AuditEntry, more, found bool)
	Activity(m engine.Mode) []actors.MinuteActivity
	MailboxDepths() [len(actors.ActorKinds)]int64
	Ready() error
}

// marketService is the markets: their configuration, pools, the rates
// (tickers) and the service's clock.
type marketService interface {
	Markets() *engine.Markets
	Now() time.Time
	Pool(id engine.PoolID) (*engine.Pool, bool)
	Pools(m engine.Mode) []*engine.Pool
	ChangePool(cmd *actors.PoolCommand) *actors.PoolReply
	Ticker(m engine.Mode, p engine.Pair) *engine.Ticker
}
