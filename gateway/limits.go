package gateway

import "time"

// Every limit of the gateway, in one place (the package doc lists them).
const (
	// bodyBytesMax is the largest request body (contract §9: 413 above it).
	bodyBytesMax = 64 << 10
	// headerBytesMax bounds the request line plus headers.
	headerBytesMax = 8 << 10
	// numberBytesMax bounds the text of one JSON number.
	numberBytesMax = 64
	// nameBytesMax bounds client and pool names.
	nameBytesMax = 200
	// chatFieldBytesMax bounds each chat metadata string.
	chatFieldBytesMax = 200
	// idempotencyKeyBytesMax bounds the Idempotency-Key header (contract §6).
	idempotencyKeyBytesMax = 255
	// requestIDBytesMax bounds an echoed X-Request-Id; longer ones are
	// replaced by a generated id.
	requestIDBytesMax = 128
	// serviceSourceBytesMax bounds x-service-source.
	serviceSourceBytesMax = 128
	// connectionsMax bounds concurrent connections per listener.
	connectionsMax = 20000
	// connectionsPerIPMax bounds concurrent connections from one address
	// (0 = unlimited; loopback load generators need many).
	connectionsPerIPMax = 0
	// readTimeout bounds reading one request; idleTimeout a keep-alive
	// connection's silence; writeTimeout writing one response.
	readTimeout  = 10 * time.Second
	idleTimeout  = 60 * time.Second
	writeTimeout = 15 * time.Second
	// retryAfterSeconds is the Retry-After of a 503.
	retryAfterSeconds = "1"
)
