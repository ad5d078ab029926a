package gateway

import (
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/engine"
)

// resultErrors is the one table from engine results to what a partner sees
// (spec §9): the HTTP status, the wire code (JSON `code`, XML reason)
// and the message. The engine knows results only.
var resultErrors = [engine.ResultCount]struct {
	status  int
	code    string
	message string
}{
	engine.ResultOK:                    {fasthttp.StatusOK, "OK", ""},
	engine.ResultInvalidCurrency:       {fasthttp.StatusBadRequest, "INVALID_CURRENCY", "supported source currencies are NGN and GHS"},
	engine.ResultInvalidCurrencyPair:   {fasthttp.StatusBadRequest, "INVALID_CURRENCY_PAIR", "supported pairs are NGN/USDT, GHS/USDT, NGN/GHS"},
	engine.ResultValidation:            {fasthttp.StatusBadRequest, codeValidation, "the request is invalid"},
	engine.ResultQuoteNotFound:         {fasthttp.StatusNotFound, "QUOTE_NOT_FOUND", "quote not found"},
	engine.ResultAccountNotFound:       {fasthttp.StatusNotFound, "ACCOUNT_NOT_FOUND", "account not found"},
	engine.ResultPoolNotFound:          {fasthttp.StatusNotFound, codeNotFound, "pool not found"},
	engine.ResultClientNotFound:        {fasthttp.StatusNotFound, codeNotFound, "client not found"},
	engine.ResultKeyNotFound:           {fasthttp.StatusNotFound, codeNotFound, "key not found"},
	engine.ResultInvalidState:          {fasthttp.StatusConflict, "INVALID_STATE", "the quote's status does not allow this operation"},
	engine.ResultInsufficientLiquidity: {fasthttp.StatusUnprocessableEntity, "INSUFFICIENT_LIQUIDITY", "not enough liquidity at the proposed rate or better to fill the quote in full"},
	engine.ResultAmountTooSmall:        {fasthttp.StatusUnprocessableEntity, "AMOUNT_TOO_SMALL", "the amount converts to zero in the destination currency"},
	engine.ResultInvalidAccount:        {fasthttp.StatusUnprocessableEntity, "INVALID_ACCOUNT", "the account is not valid for this quote"},
	engine.ResultIdempotencyKeyReused:  {fasthttp.StatusUnprocessableEntity, "IDEMPOTENCY_KEY_REUSED", "this Idempotency-Key was used with a different request"},
	engine.ResultInsufficientFunds:     {fasthttp.StatusUnprocessableEntity, "INSUFFICIENT_FUNDS", "not enough available funds"},
	engine.ResultTooManyOpenQuotes:     {fasthttp.StatusTooManyRequests, codeRateLimited, "too many open quotes for this key; complete, cancel or let some expire"},
	engine.ResultNoRate:                {fasthttp.StatusNotFound, "NO_RATE", "no market maker rate for this pair"},
	engine.ResultExposureLimit: {fasthttp.StatusUnprocessableEntity, "EXPOSURE_LIMIT",
		"this key's open quotes would reserve more than its share of the pair's liquidity; complete, cancel or let some expire"},
	engine.ResultAmountOutOfRange: {fasthttp.StatusUnprocessableEntity, "AMOUNT_OUT_OF_RANGE",
		"the balance would exceed the largest amount an account holds (10^15 minor units)"},
	engine.ResultOutsidePairBounds: {fasthttp.StatusUnprocessableEntity, "AMOUNT_OUT_OF_RANGE",
		"the quote's total source amount is outside the pair's bounds"},
	engine.ResultWebhookNotFound: {fasthttp.StatusNotFound, codeNotFound, "webhook not found"},
	engine.ResultPayInNotFound:   {fasthttp.StatusNotFound, codeNotFound, "pay-in address not found"},
	engine.ResultReceiptConflict: {fasthttp.StatusConflict, codeConflict,
		"this payment's identity was recorded before for another amount, wallet, quote or mode"},
	engine.ResultReceiptNotFound: {fasthttp.StatusNotFound, codeNotFound, "no receipt has this id"},
	engine.ResultReceiptReversed: {fasthttp.StatusConflict, codeConflict, "this receipt was reversed already"},
	engine.ResultUnappliedNotFound: {fasthttp.StatusNotFound, codeNotFound,
		"no receipt held in suspense has this id (never held, or applied or returned already)"},
	engine.ResultKeyRolled: {fasthttp.StatusConflict, codeConflict,
		"this key was rolled already: a key is rolled once; roll its successor"},
	engine.ResultCreditInUse: {fasthttp.StatusConflict, codeConflict,
		"the wallet already uses more credit than the new limit allows; fund it first"},
	engine.ResultPayInUnavailable: {fasthttp.StatusConflict, codeConflict,
		"no payment instructions can be issued for this quote: no deposit key for its token and chain, or no collection account for its currency, is configured; the quote stays pending"},
	engine.ResultOperatorNotFound: {fasthttp.StatusNotFound, codeNotFound, "operator not found"},
	engine.ResultOperatorExists: {fasthttp.StatusConflict, codeConflict,
		"this name reads as root or as the name of an operator created before (revoked ones too): choose another"},
	engine.ResultTooManyWebhooks: {fasthttp.StatusUnprocessableEntity, "WEBHOOK_LIMIT",
		"a client may register at most 16 webhooks (both modes); delete one first"},
}

// Error codes that are not engine results.
const (
	codeUnauthorized     = "UNAUTHORIZED"
	codeNotFound         = "NOT_FOUND"
	codeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	codePayloadTooLarge  = "PAYLOAD_TOO_LARGE"
	codeUnsupportedMedia = "UNSUPPORTED_MEDIA_TYPE"
	codeMissingHeader    = "MISSING_HEADER"
	codeValidation       = "VALIDATION_ERROR"
	codeRateLimited      = "RATE_LIMITED"
	codeInternal         = "INTERNAL_ERROR"
	codeUnavailable      = "UNAVAILABLE"
	codeConflict         = "CONFLICT"
)

// apiError is one error answer: the spec's {code, message, details}.
type apiError struct {
	status  int
	code    string
	message string
	details map[string]any
}

func resultError(r engine.Result) *apiError {
	if int(r) >= len(resultErrors) || resultErrors[r].code == "" {
		return &apiError{status: fasthttp.StatusInternalServerError, code: codeInternal, message: "internal error"}
	}
	e := &resultErrors[r]
	return &apiError{status: e.status, code: e.code, message: e.message}
}

func validationError(details map[string]any) *apiError {
	return &apiError{status: fasthttp.StatusBadRequest, code: codeValidation,
		message: "the request is invalid", details: details}
}

func fieldError(field, problem string) *apiError {
	return validationError(map[string]any{field: problem})
}

var (
	errUnauthorized = &apiError{status: fasthttp.StatusUnauthorized, code: codeUnauthorized,
		message: "a valid API key is required: Authorization: Bearer <API_KEY>"}
	// errAdminUnauthorized is the admin listener's: its credential is the
	// operator token, not a partner's API key.
	errAdminUnauthorized = &apiError{status: fasthttp.StatusUnauthorized, code: codeUnauthorized,
		message: "the admin token is required: Authorization: Bearer <admin token> ($OJA_ADMIN_TOKEN or <data>/admin.token)"}
	errNotFound = &apiError{status: fasthttp.StatusNotFound, code: codeNotFound, message: "no such route"}
	errMethod   = &apiError{status: fasthttp.StatusMethodNotAllowed, code: codeMethodNotAllowed,
		message: "method not allowed on this route"}
	errTooLarge = &apiError{status: fasthttp.StatusRequestEntityTooLarge, code: codePayloadTooLarge,
		message: "request body over 64 KiB"}
	errMediaJSON = &apiError{status: fasthttp.StatusUnsupportedMediaType, code: codeUnsupportedMedia,
		message: "request bodies must be application/json"}
	errInternal = &apiError{status: fasthttp.StatusInternalServerError, code: codeInternal,
		message: "internal error"}
	errUnavailable = &apiError{status: fasthttp.StatusServiceUnavailable, code: codeUnavailable,
		message: "the service is unavailable (recovering, shutting down or storage failing); retry later"}
	errRateLimited = &apiError{status: fasthttp.StatusTooManyRequests, code: codeRateLimited,
		message: "request rate limit exceeded"}
)
