package gateway

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// Framing and header rules checked before any route runs, on both
// listeners (spec §9: "bad or repeated header, ambiguous framing").
//
// fasthttp already refuses a repeated Content-Length or Transfer-Encoding,
// a repeated Host, an unsupported transfer coding and malformed header
// bytes (parseError answers those). What it accepts and this refuses:
//
//   - Content-Length together with Transfer-Encoding (RFC 9112 §6.3): fasthttp
//     frames such a message as chunked, a proxy in front may frame it by
//     Content-Length, and the bytes they disagree on would run as a second
//     request (request smuggling). Answered 400 and the connection closed,
//     so nothing after it on the connection is read.
//   - a repeated header among singletonHeaders: fasthttp keeps both and a
//     Peek sees the first, so two Authorization headers chose one of two
//     credentials silently.

// singletonHeaders may appear at most once in a request.
var singletonHeaders = [...][]byte{
	[]byte("Authorization"),
	[]byte("Content-Length"),
	[]byte("Content-Type"),
	[]byte("Transfer-Encoding"),
	[]byte("Idempotency-Key"),
	[]byte("X-Request-Id"),
	[]byte("X-Service-Source"),
	[]byte("Last-Event-Id"),
}

// framingError checks a request's raw header block (key: value lines) and
// returns the refusal, or nil. close reports that the connection must be
// closed after the answer (the framing itself is in doubt).
func framingError(raw []byte) (e *apiError, close bool) {
	var seen [len(singletonHeaders)]bool
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		name, _, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		for i, h := range singletonHeaders {
			if !bytes.EqualFold(name, h) {
				continue
			}
			if seen[i] {
				return fieldError(string(h), "must appear at most once"), true
			}
			seen[i] = true
		}
	}
	if seen[1] && seen[3] { // Content-Length and Transfer-Encoding
		return fieldError("Transfer-Encoding", "a request with both Content-Length and Transfer-Encoding "+
			"has ambiguous framing (RFC 9112 §6.3); the connection is closed"), true
	}
	return nil, false
}

// refuseBadFraming answers a request framingError refuses and reports
// whether it did.
func (s *Server) refuseBadFraming(ctx *fasthttp.RequestCtx) bool {
	e, closeConn := framingError(ctx.Request.Header.RawHeaders())
	if e == nil {
		return false
	}
	if closeConn {
		ctx.SetConnectionClose()
	}
	s.writeErrorByPath(ctx, e)
	return true
}
