// Package gateway is Oja's fasthttp front end: the public JSON API for
// partners and the admin API for operators, each on its own listener, and
// the operator console (console.go: a consoleUI beside the Server, HTML
// pages at /console/ on the admin listener, whose refusals are pages, not
// JSON). It translates requests into actor messages (at most one actor
// request per request) and results into the spec's JSON; it holds no
// business rule of its own beyond input validation. Every route of a
// listener is in one table, with the gate its handler is behind
// (routes.go); the served routes are checked against the OpenAPI document
// at start. Handlers reach the actors through five narrow services
// (services.go: quotes, money, directory, operators, market), never the
// System itself; a helper takes only the service it uses.
//
// Every error uses the spec's {code, message, details} shape; engine
// results map to HTTP statuses, codes and messages through one table
// (errors.go). Before any route runs, both listeners refuse ambiguous
// framing (Content-Length with Transfer-Encoding: 400 and the connection
// closed) and repeated singleton headers (framing.go); on the XML routes
// every refusal, fasthttp's parse refusals too (sniff.go), is a MsgRjct.
//
// Limits (limits.go; each refusal uses the spec's error shape):
//
//	bodyBytesMax           64 KiB   request body (413 PAYLOAD_TOO_LARGE; before the body is sent when the client sends Expect: 100-continue)
//	statementBytesMax      10 MiB+  a bank statement's body (camt.BytesMax, 10 MiB, and a form's wrapping), admin only
//	headerBytesMax         8 KiB    request line + headers (400)
//	sniffLineBytesMax      512      start of a request kept per connection to route a parse refusal's dialect
//	numberBytesMax         64       text of one JSON number
//	nameBytesMax           200      client and pool names
//	chatFieldBytesMax      200      each chatMetadata string
//	idempotencyKeyBytesMax 255      Idempotency-Key
//	requestIDBytesMax      128      echoed X-Request-Id
//	serviceSourceBytesMax  128      x-service-source
//	jsonDepthMax           32       nesting of objects and arrays in a JSON body (400, before parsing)
//	clusterFieldBytesMax   256      a member's id and Raft address in POST /admin/v1/cluster/nodes
//	membershipTimeoutMax   600 s    timeoutSeconds of an add (default membershipTimeoutDefault, 60 s)
//	auditLimitMax          500      entries on one page of GET /admin/v1/audit (default 50)
//	chainUnappliedLimitMax 500      deposits on one page of GET /admin/v1/chains/unapplied (default 50)
//	consoleChainUnappliedMax 100    deposits not credited that /console/chains shows (the API pages through all)
//	unappliedLimitMax      500      receipts on one page of GET /admin/v1/payins/unapplied (default 50)
//	enumBytesMax           16       a JSON member naming a currency, direction, chain, mode or status
//	idBytesMax             64       a JSON member holding an id (checked as a UUID after)
//	bearerTokenBytesMax    256      the credential of Authorization: Bearer (401 above it)
//	backupDirBytesMax      4096     the dir of POST /admin/v1/backup
//	bankReferenceBytesMax  64       a quote's bank pay-in reference in POST /admin/v1/payins/bank
//	referenceBytesMax      512      a bank transaction id or a prefund's or payout's reference as typed (canonical: 128 characters)
//	txHashBytesMax         128      a txHash as typed in POST /admin/v1/payins/{addressId}/seen
//	operatorNameBytesMax   256      an operator's name as typed (canonical: 64 characters)
//	connectionsMax         20000    concurrent connections per listener
//	connectionsPerIPMax    0        concurrent connections per client address (0: unlimited)
//	readTimeout            10 s     reading one request
//	writeTimeout           15 s     writing one response
//	idleTimeout            60 s     keep-alive silence
//	rateLimiterKeysMax     100000   API keys tracked by the rate limiter
//	sseSubscribersMax      15000    open rate streams per server (503 UNAVAILABLE, Retry-After)
//	sseStreamsPerKeyMax    10       open rate streams per API key (429 RATE_LIMITED, Retry-After)
//	sseStallMax            30 s     a stream write blocked this long disconnects the subscriber
//	sseShutdownWriteMax    1 s      time a stream's last writes get on shutdown
//	sseSendBufferBytes     16 KiB   a stream socket's kernel send buffer (SO_SNDBUF), so a stall is seen in time
//	sseFanoutIntervalMin   25 ms    spacing of rate fan-outs (bursts conflate)
//	fanoutShareMin         256      the fewest streams a fan-out worker of its own takes (one per core at most)
//	--sse-heartbeat        15 s     rate stream heartbeat
//	streamKeysMax          64       (mode, pair) books the rate stream tracks (its bit masks): 32 pairs in both modes; books past it are not streamed
//	objectMembersMax       32       members of one JSON request object
//	fxmsg.BodyBytesMax     64 KiB   XML request body
//	fxmsg.DepthMax         16       XML nesting depth (DTDs and entities are refused outright)
//	fxmsg.ElementsMax      256      XML elements per request; fxmsg.AttributesMax 16 attributes
//	listingsPageSizeMax    100      listings page size (default 20); listingsPageMax pages
//	clientsPageSizeMax     100      GET /admin/v1/clients page size (default 20)
//	quotesPageSizeMax      100      GET /api/v1/partners/marketplace/quotes page size (default 20)
//	statementPageSizeMax   100      a wallet statement's page size (default 20)
//	consoleSessionTTL      12 h     a console session, from its login
//	consoleSessionsMax     10000    console sessions held (past it the oldest ends)
//	consolePageSize        50       rows of a console list page
//	consoleHistoryScanMax  5000     a client's events a console quote page reads to find the quote's
//	keyRollHoursMax        720      expiresInHours of a key roll (the old key works at most 30 days more)
//	bankAccountNameBytesMax, bankAccountNumberBytesMax, bankCodeBytesMax
//	                       140/34/35 bytes: account name, number, bank code (XML accept)
//	fxCurrencyCodeBytesMax 16       a currency code or AmtDrctn in XML or an FX query
//	chainAddressBytesMax   64       blockchain address (XML accept)
//	fxIDBytesMax           64       trade id in an XML path
//	--rate-limit           req/s per API key (429 RATE_LIMITED, Retry-After, RateLimit-*)
//	--max-open-quotes      open quotes per API key (429 RATE_LIMITED)
//	(actors) requestTimeout 10 s    a request's wait for its actor and fsync (503 UNAVAILABLE after)
//	forwardTimeout         12 s     a request a cluster follower forwards to the leader (503 UNAVAILABLE after)
//	clusterStatusTimeout   2 s      GET /admin/v1/cluster's questions to the peers (each at most 1 s)
//	relayIdleMax           60 s     silence of a rate stream a follower relays from the leader before it ends it
//
// Webhook delivery (package webhook; the engine's bounds are engine.Webhook*Max):
//
//	webhook.TimeoutDefault     10 s   one delivery's wait for a 2xx
//	webhook.ConcurrencyDefault 4      deliveries in flight per endpoint
//	webhook.RetryMinDefault    10 s   first retry of a failed delivery (--webhook-retry-min), doubling up to
//	webhook.RetryMaxDefault    1 h    the longest wait between retries
//	webhook.WindowDefault      72 h   an event undelivered this long after it happened is abandoned
//	webhook.responseBytesMax   64 KiB a receiver's answer read (and discarded) per delivery
//	webhook.settleBatchMax     256    WebhookSettled records per log append
//	webhook.resolveTimeout     3 s    resolving a webhook URL's host at registration
//	engine.WebhooksPerClientMax 16    endpoints per client (both modes)
//	engine.WebhookURLBytesMax  2048   an endpoint's URL
//	engine.WebhookOwedMax      10000  events owed to one endpoint (beyond: dropped and counted)
//
// A JSON request object has no array member (spec §6, §11), so an array
// is refused like any other unknown or mistyped member, after a scan bounded
// by bodyBytesMax; gateway's TestLimits shows each of these refusals.
//
// Use:
//
//  1. New(cfg) and Start(): both listeners serve at once; the public API
//     and /readyz answer 503 UNAVAILABLE until
//  2. SetTerm(term) once recovery has finished (actors.Term: the actors
//     and the webhook dispatcher, served until the term ends);
//  3. Shutdown(ctx) on SIGTERM: stop accepting, finish in-flight requests.
//
// With Config.Cluster (a node of a cluster, cluster.go), SetTerm is called
// with each leadership term, and the node ends the term when it stops
// leading; while no term is served, every request but health, metrics and
// the cluster routes is forwarded to the leader, and rate streams are
// relayed from it (cluster_stream.go), all over the cluster's Raft port
// (ClusterNode.DialPeer: mutual TLS when the cluster has it); a third
// server serves what peers send there (ClusterNode.PeerListener), admin
// routes to the admin handler and the rest to the public one. A node that
// is not a member of the configuration it holds (removed, or waiting to be
// added) answers 503. The rate streams opened during a term end when it
// ends or another term is set (streamHub.endTerm): their clients
// reconnect.
package gateway
