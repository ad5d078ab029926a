// Package gateway is Oja's fasthttp front end: the public JSON API for
// partners and the admin API for operators, each on its own listener. It
// translates requests into actor messages (at most one RequestFuture per
// request) and results into the contract's JSON; it holds no business rule
// of its own beyond input validation.
//
// Every error uses the contract's {code, message, details} shape; engine
// results map to HTTP statuses through one table (errors.go).
//
// Limits (limits.go; each refusal uses the contract's error shape):
//
//	bodyBytesMax           64 KiB   request body (413 PAYLOAD_TOO_LARGE)
//	headerBytesMax         8 KiB    request line + headers (400)
//	numberBytesMax         64       text of one JSON number
//	nameBytesMax           200      client and pool names
//	chatFieldBytesMax      200      each chatMetadata string
//	idempotencyKeyBytesMax 255      Idempotency-Key
//	requestIDBytesMax      128      echoed X-Request-Id
//	serviceSourceBytesMax  128      x-service-source
//	connectionsMax         20000    concurrent connections per listener
//	readTimeout            10 s     reading one request
//	writeTimeout           15 s     writing one response
//	idleTimeout            60 s     keep-alive silence
//	rateLimiterKeysMax     100000   API keys tracked by the rate limiter
//	sseSubscribersMax      15000    open rate streams per server (503 UNAVAILABLE, Retry-After)
//	sseStreamsPerKeyMax    10       open rate streams per API key (429 RATE_LIMITED, Retry-After)
//	sseStallMax            30 s     a stream write blocked this long disconnects the subscriber
//	sseShutdownWriteMax    1 s      time a stream's last writes get on shutdown
//	sseFanoutIntervalMin   25 ms    spacing of rate fan-outs (bursts conflate)
//	--sse-heartbeat        15 s     rate stream heartbeat
//	routeKeysMax           2048     distinct series of the request metrics
//	objectMembersMax       32       members of one JSON request object
//	fxmsg.BodyBytesMax     64 KiB   XML request body
//	fxmsg.DepthMax         16       XML nesting depth (DTDs and entities are refused outright)
//	fxmsg.ElementsMax      256      XML elements per request; fxmsg.AttributesMax 16 attributes
//	listingsPageSizeMax    100      listings page size (default 20); listingsPageMax pages
//	bank field limits      140/34/35 bytes: account name, number, bank code (XML accept)
//	chainAddressBytesMax   64       blockchain address (XML accept)
//	fxIDBytesMax           64       trade id in an XML path
//	--rate-limit           req/s per API key (429 RATE_LIMITED, Retry-After, RateLimit-*)
//	--max-open-quotes      open quotes per client and mode (429)
//
// Use:
//
//  1. New(cfg) and Start(): both listeners serve at once; the public API
//     and /readyz answer 503 UNAVAILABLE until
//  2. SetSystem(sys) once recovery has finished;
//  3. Shutdown(ctx) on SIGTERM: stop accepting, finish in-flight requests.
package gateway
