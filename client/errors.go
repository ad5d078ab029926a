package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error codes of the service (spec §9). APIError.Code is one of them
// (or empty for an answer that is not the service's JSON, e.g. a proxy's).
const (
	CodeValidation            = "VALIDATION_ERROR"
	CodeInvalidCurrency       = "INVALID_CURRENCY"
	CodeInvalidCurrencyPair   = "INVALID_CURRENCY_PAIR"
	CodeMissingHeader         = "MISSING_HEADER"
	CodeUnauthorized          = "UNAUTHORIZED"
	CodeQuoteNotFound         = "QUOTE_NOT_FOUND"
	CodeAccountNotFound       = "ACCOUNT_NOT_FOUND"
	CodeNotFound              = "NOT_FOUND"
	CodeMethodNotAllowed      = "METHOD_NOT_ALLOWED"
	CodeInvalidState          = "INVALID_STATE"
	CodePayloadTooLarge       = "PAYLOAD_TOO_LARGE"
	CodeUnsupportedMediaType  = "UNSUPPORTED_MEDIA_TYPE"
	CodeInsufficientLiquidity = "INSUFFICIENT_LIQUIDITY"
	CodeAmountTooSmall        = "AMOUNT_TOO_SMALL"
	CodeInvalidAccount        = "INVALID_ACCOUNT"
	CodeIdempotencyKeyReused  = "IDEMPOTENCY_KEY_REUSED"
	CodeInsufficientFunds     = "INSUFFICIENT_FUNDS"
	CodeRateLimited           = "RATE_LIMITED"
	CodeNoRate                = "NO_RATE" // XML makers rate only
	CodeInternal              = "INTERNAL_ERROR"
	CodeUnavailable           = "UNAVAILABLE"
)

// APIError is a refusal from the service: a non-2xx answer.
type APIError struct {
	Status  int    // HTTP status
	Code    string // the spec's error code; "" if the body was not the service's JSON
	Message string
	// Details is the error's details object, when it has one: for
	// VALIDATION_ERROR each offending field and its problem; for
	// INVALID_STATE "status" and "allowedFrom"; for INSUFFICIENT_LIQUIDITY
	// "requested", "fillable" and "bestRate". Numbers are json.Number.
	Details    map[string]any
	RequestID  string        // X-Request-Id of the answer (quote it to the operator)
	RetryAfter time.Duration // from Retry-After (429, 503); 0 when absent
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "oja: %d", e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if len(e.Details) > 0 {
		if raw, err := json.Marshal(e.Details); err == nil {
			b.WriteString(" " + string(raw))
		}
	}
	if e.RequestID != "" {
		b.WriteString(" (request " + e.RequestID + ")")
	}
	return b.String()
}

// Temporary reports whether the same request may succeed later unchanged
// (429 RATE_LIMITED, 503 UNAVAILABLE); wait RetryAfter first, and retry a
// create with the same Idempotency-Key.
func (e *APIError) Temporary() bool {
	return e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable
}

// newAPIError reads a non-2xx JSON answer: the spec's error body.
func newAPIError(res *http.Response, raw []byte) *APIError {
	return readAPIError(res, raw, func(e *APIError) bool {
		var body struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		}
		if decodeJSON(raw, &body) != nil || body.Code == "" {
			return false
		}
		e.Code, e.Message, e.Details = body.Code, body.Message, body.Details
		return true
	})
}

// readAPIError fills an APIError from a non-2xx answer: status, request
// id, Retry-After, then the body as the API's refusal (readBody reports
// whether it was one), else the status text and the start of the body.
func readAPIError(res *http.Response, raw []byte, readBody func(*APIError) bool) *APIError {
	e := &APIError{Status: res.StatusCode, RequestID: res.Header.Get("X-Request-Id")}
	if s, err := strconv.Atoi(strings.TrimSpace(res.Header.Get("Retry-After"))); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	if readBody(e) {
		return e
	}
	text := strings.TrimSpace(string(raw))
	if len(text) > errorBodyBytesMax {
		text = text[:errorBodyBytesMax] + "…"
	}
	e.Message = http.StatusText(res.StatusCode)
	if text != "" {
		e.Message += ": " + text
	}
	return e
}
