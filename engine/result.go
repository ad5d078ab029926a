package engine

// Result is the outcome of a command: ResultOK or a business refusal. Business
// refusals are values, not errors (STYLE.md "Errors, three channels"): the
// gateway maps each one to an HTTP status, a JSON code and an XML reason
// through a single table.
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
	resultCount
)

var resultNames = [resultCount]string{
	ResultOK:                    "OK",
	ResultInvalidCurrency:       "INVALID_CURRENCY",
	ResultInvalidCurrencyPair:   "INVALID_CURRENCY_PAIR",
	ResultValidation:            "VALIDATION_ERROR",
	ResultQuoteNotFound:         "QUOTE_NOT_FOUND",
	ResultAccountNotFound:       "ACCOUNT_NOT_FOUND",
	ResultPoolNotFound:          "NOT_FOUND",
	ResultClientNotFound:        "NOT_FOUND",
	ResultKeyNotFound:           "NOT_FOUND",
	ResultInvalidState:          "INVALID_STATE",
	ResultInsufficientLiquidity: "INSUFFICIENT_LIQUIDITY",
	ResultAmountTooSmall:        "AMOUNT_TOO_SMALL",
	ResultInvalidAccount:        "INVALID_ACCOUNT",
	ResultIdempotencyKeyReused:  "IDEMPOTENCY_KEY_REUSED",
	ResultInsufficientFunds:     "INSUFFICIENT_FUNDS",
	ResultTooManyOpenQuotes:     "RATE_LIMITED",
	ResultNoRate:                "NO_RATE",
}

// Code is the wire code of r (the JSON `code` and the XML reason).
func (r Result) Code() string {
	if r >= resultCount {
		return "INTERNAL_ERROR"
	}
	return resultNames[r]
}

func (r Result) String() string { return r.Code() }
