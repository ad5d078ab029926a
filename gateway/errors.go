package gateway

import (
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/engine"
)

// resultStatus is the single table from engine results to HTTP statuses
// (contract §9). Codes come from engine.Result.Code; messages below.
var resultStatus = map[engine.Result]int{
	engine.ResultOK:                    fasthttp.StatusOK,
	engine.ResultInvalidCurrency:       fasthttp.StatusBadRequest,
	engine.ResultInvalidCurrencyPair:   fasthttp.StatusBadRequest,
	engine.ResultValidation:            fasthttp.StatusBadRequest,
	engine.ResultQuoteNotFound:         fasthttp.StatusNotFound,
	engine.ResultAccountNotFound:       fasthttp.StatusNotFound,
	engine.ResultPoolNotFound:          fasthttp.StatusNotFound,
	engine.ResultClientNotFound:        fasthttp.StatusNotFound,
	engine.ResultKeyNotFound:           fasthttp.StatusNotFound,
	engine.ResultInvalidState:          fasthttp.StatusConflict,
	engine.ResultInsufficientLiquidity: fasthttp.StatusUnprocessableEntity,
	engine.ResultAmountTooSmall:        fasthttp.StatusUnprocessableEntity,
	engine.ResultInvalidAccount:        fasthttp.StatusUnprocessableEntity,
	engine.ResultIdempotencyKeyReused:  fasthttp.StatusUnprocessableEntity,
	engine.ResultInsufficientFunds:     fasthttp.StatusUnprocessableEntity,
	engine.ResultTooManyOpenQuotes:     fasthttp.StatusTooManyRequests,
	engine.ResultNoRate:                fasthttp.StatusNotFound,
}

var resultMessage = map[engine.Result]string{
	engine.ResultInvalidCurrency:       "supported source currencies are NGN and GHS",
	engine.ResultInvalidCurrencyPair:   "supported pairs are NGN/USDT, GHS/USDT, NGN/GHS",
	engine.ResultValidation:            "the request is invalid",
	engine.ResultQuoteNotFound:         "quote not found",
	engine.ResultAccountNotFound:       "account not found",
	engine.ResultPoolNotFound:          "pool not found",
	engine.ResultClientNotFound:        "client not found",
	engine.ResultKeyNotFound:           "key not found",
	engine.ResultInvalidState:          "the quote's status does not allow this operation",
	engine.ResultInsufficientLiquidity: "not enough liquidity at the proposed rate or better to fill the quote in full",
	engine.ResultAmountTooSmall:        "the amount converts to zero in the destination currency",
	engine.ResultInvalidAccount:        "the account is not valid for this quote",
	engine.ResultIdempotencyKeyReused:  "this Idempotency-Key was used with a different request",
	engine.ResultInsufficientFunds:     "not enough available funds",
	engine.ResultTooManyOpenQuotes:     "too many open quotes for this key; complete, cancel or let some expire",
	engine.ResultNoRate:                "no market maker rate for this pair",
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
)

// apiError is one error answer: the contract's {code, message, details}.
type apiError struct {
	status  int
	code    string
	message string
	details map[string]any
}

func resultError(r engine.Result) *apiError {
	status, ok := resultStatus[r]
	if !ok {
		return &apiError{status: fasthttp.StatusInternalServerError, code: codeInternal, message: "internal error"}
	}
	return &apiError{status: status, code: r.Code(), message: resultMessage[r]}
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
