package gateway

import (
	"time"

	"github.com/oja-exchange/oja/gateway/camt"
)

// Every limit of the gateway, in one place (the package doc lists them).
const (
	// bodyBytesMax is the largest request body (spec §9: 413 above it).
	bodyBytesMax = 64 << 10
	// statementBytesMax is the largest body the admin listener reads: a
	// bank statement (camt.BytesMax) and a multipart form's wrapping of one.
	statementBytesMax = camt.BytesMax + 64<<10
	// headerBytesMax bounds the request line plus headers.
	headerBytesMax = 8 << 10
	// numberBytesMax bounds the text of one JSON number.
	numberBytesMax = 64
	// nameBytesMax bounds client and pool names.
	nameBytesMax = 200
	// chatFieldBytesMax bounds each chat metadata string.
	chatFieldBytesMax = 200
	// idempotencyKeyBytesMax bounds the Idempotency-Key header (spec §6).
	idempotencyKeyBytesMax = 255
	// requestIDBytesMax bounds an echoed X-Request-Id; longer ones are
	// replaced by a generated id.
	requestIDBytesMax = 128
	// serviceSourceBytesMax bounds x-service-source.
	serviceSourceBytesMax = 128
	// jsonDepthMax bounds how deep objects and arrays nest in a JSON request
	// body. Requests nest two levels at most (chatMetadata); the check runs
	// before json.Valid, whose own bound is 10000 levels.
	jsonDepthMax = 32
	// enumBytesMax bounds a JSON member whose value is one of a few words:
	// a currency code, amountDirection, chain, mode, pool status.
	enumBytesMax = 16
	// idBytesMax bounds a JSON member holding an id, before it is parsed as
	// a UUID (36 characters).
	idBytesMax = 64
	// bearerTokenBytesMax bounds the credential of an Authorization header
	// (API keys are about 50 characters, the admin token is the operator's).
	bearerTokenBytesMax = 256
	// backupDirBytesMax bounds the dir of POST /admin/v1/backup.
	backupDirBytesMax = 4096
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
