package engine

// Result is the outcome of a command: ResultOK or a business refusal. Business
// refusals are values, not errors (STYLE.md "Errors, three channels"): the
// engine knows results only; the gateway maps each one to an HTTP status, a
// wire code (JSON code, XML reason) and a message through its one table
// (gateway/errors.go).
type Result uint8

const (
	ResultOK Result = iota
	ResultInvalidCurrency
	ResultInvalidCurrencyPair
	ResultValidation
	ResultQuoteNotFound
	ResultAccountNotFound
	ResultPoolNotFound
	ResultClientNotFound
	ResultKeyNotFound
	ResultInvalidState
	ResultInsufficientLiquidity
	ResultAmountTooSmall
	ResultInvalidAccount
	ResultIdempotencyKeyReused
	ResultInsufficientFunds
	ResultTooManyOpenQuotes
	ResultNoRate
	ResultAmountOutOfRange
	ResultExposureLimit
	ResultWebhookNotFound
	ResultTooManyWebhooks
	// ResultOutsidePairBounds: a quote's total source amount is outside its
	// pair's bounds (Markets; wire code AMOUNT_OUT_OF_RANGE, as
	// ResultAmountOutOfRange's).
	ResultOutsidePairBounds
	ResultPayInNotFound
	// ResultReceiptConflict: a transaction hash or bank transaction id
	// recorded before with another amount or quote (409 CONFLICT).
	ResultReceiptConflict
	// ResultCreditInUse: a wallet already spends more credit than a new,
	// lower limit allows (409 CONFLICT).
	ResultCreditInUse
	// ResultPayInUnavailable: a quote cannot be given payment instructions
	// (no deposit key for a token source's chain, no collection account
	// for a fiat source): its accept is refused and it stays pending (409).
	ResultPayInUnavailable
	// ResultOperatorNotFound: no named operator with that id (404).
	ResultOperatorNotFound
	// ResultOperatorExists: an operator has, or had, a name that reads as
	// that one (409).
	ResultOperatorExists
	// ResultReceiptNotFound: no receipt has that id (404).
	ResultReceiptNotFound
	// ResultReceiptReversed: the receipt was reversed already (409).
	ResultReceiptReversed
	// ResultKeyRolled: the key was rolled already; its successor may roll
	// (409).
	ResultKeyRolled
	// ResultUnappliedNotFound: no receipt held in suspense has that id
	// (never held, or applied or returned already) (404).
	ResultUnappliedNotFound
	resultCount
)

// ResultCount is the number of results; every Result is below it.
const ResultCount = int(resultCount)

// String is the result's Go name, for logs and test failures. What a partner
// sees for it (HTTP status, code, message) is the gateway's one table.
func (r Result) String() string {
	if r >= resultCount {
		return "Result(unknown)"
	}
	return resultNames[r]
}

var resultNames = [resultCount]string{
	ResultOK:                    "OK",
	ResultInvalidCurrency:       "InvalidCurrency",
	ResultInvalidCurrencyPair:   "InvalidCurrencyPair",
	ResultValidation:            "Validation",
	ResultQuoteNotFound:         "QuoteNotFound",
	ResultAccountNotFound:       "AccountNotFound",
	ResultPoolNotFound:          "PoolNotFound",
	ResultClientNotFound:        "ClientNotFound",
	ResultKeyNotFound:           "KeyNotFound",
	ResultInvalidState:          "InvalidState",
	ResultInsufficientLiquidity: "InsufficientLiquidity",
	ResultAmountTooSmall:        "AmountTooSmall",
	ResultInvalidAccount:        "InvalidAccount",
	ResultIdempotencyKeyReused:  "IdempotencyKeyReused",
	ResultInsufficientFunds:     "InsufficientFunds",
	ResultTooManyOpenQuotes:     "TooManyOpenQuotes",
	ResultNoRate:                "NoRate",
	ResultAmountOutOfRange:      "AmountOutOfRange",
	ResultExposureLimit:         "ExposureLimit",
	ResultWebhookNotFound:       "WebhookNotFound",
	ResultTooManyWebhooks:       "TooManyWebhooks",
	ResultOutsidePairBounds:     "OutsidePairBounds",
	ResultPayInNotFound:         "PayInNotFound",
	ResultReceiptConflict:       "ReceiptConflict",
	ResultCreditInUse:           "CreditInUse",
	ResultPayInUnavailable:      "PayInUnavailable",
	ResultOperatorNotFound:      "OperatorNotFound",
	ResultOperatorExists:        "OperatorExists",
	ResultReceiptNotFound:       "ReceiptNotFound",
	ResultReceiptReversed:       "ReceiptReversed",
	ResultKeyRolled:             "KeyRolled",
	ResultUnappliedNotFound:     "UnappliedNotFound",
}
