package gateway

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/client/fxmsg"
	"github.com/oja-exchange/oja/engine"
)

// The XML FX API (spec §7) lives under fxBase. It is a second skin on
// the same quotes: a trade is a quote (TxId = quoteId), every operation ends
// in the same service call the JSON API makes, and every refusal comes
// from the same error table (errors.go), written as an admi.002 MsgRjct
// instead of JSON. Documents are the types of package fxmsg, which also
// decodes request bodies defensively (no DTDs or entities, depth and size
// limits).
//
// NB: the shared partner middleware (s.partner) writes JSON errors, so the
// FX routes use fxPartner, the same steps in the same order with XML errors.
// The router's NotFound and MethodNotAllowed handlers are wrapped for paths
// under fxBase for the same reason.
const fxBase = apiBase + "/partners/fx"

// Limits of the XML FX API (the XML body limits are fxmsg's: BodyBytesMax,
// DepthMax, ElementsMax, AttributesMax).
const (
	// listingsPageSizeDefault and listingsPageSizeMax bound GET /listings
	// pages (spec §7: default 20, 1 to 100).
	listingsPageSizeDefault = 20
	listingsPageSizeMax     = 100
	// listingsPageMax bounds the page parameter (zero-based).
	listingsPageMax = 999_999_999
	// fxCurrencyCodeBytesMax bounds a currency code element or parameter.
	fxCurrencyCodeBytesMax = 16
	// bankAccountNameBytesMax, bankAccountNumberBytesMax and
	// bankCodeBytesMax bound a bank destination's fields (ISO 20022's
	// Max140Text, Max34Text and Max35Text).
	bankAccountNameBytesMax   = 140
	bankAccountNumberBytesMax = 34
	bankCodeBytesMax          = 35
	// chainAddressBytesMax bounds a blockchain address before its format
	// is checked against the trade's chain.
	chainAddressBytesMax = 64
	// fxIDBytesMax bounds an id element.
	fxIDBytesMax = 64
)

// fxContentType is the Content-Type of every FX response.
const fxContentType = "application/xml; charset=utf-8"

var errMediaXML = &apiError{status: fasthttp.StatusUnsupportedMediaType, code: codeUnsupportedMedia,
	message: "request bodies must be application/xml or text/xml, in UTF-8"}

// fxOr answers e as a MsgRjct on FX paths and defers to next (or to the
// JSON error) elsewhere.
func (s *Server) fxOr(next fasthttp.RequestHandler, e *apiError) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		switch {
		case fxIsPath(ctx.Path()):
			s.writeFXError(ctx, e)
		case next != nil:
			next(ctx)
		default:
			s.writeError(ctx, e)
		}
	}
}

// fxIsPath reports whether path is under fxBase.
func fxIsPath(path []byte) bool {
	return bytes.HasPrefix(path, []byte(fxBase)) &&
		(len(path) == len(fxBase) || path[len(fxBase)] == '/')
}

// writeErrorByPath writes e as a MsgRjct on FX paths and as JSON elsewhere.
// For callers that run before routing (the listener's ErrorHandler: 413).
func (s *Server) writeErrorByPath(ctx *fasthttp.RequestCtx, e *apiError) {
	if fxIsPath(ctx.Path()) {
		s.writeFXError(ctx, e)
		return
	}
	s.writeError(ctx, e)
}

// fxPartner is s.partner for the FX routes: the same gate
// (s.authenticated), answering with MsgRjct. A panic in h is answered 500 as
// a MsgRjct too (and logged).
func (s *Server) fxPartner(h partnerHandler) fasthttp.RequestHandler {
	gate := s.authenticated(s.writeFXError, h)
	return func(ctx *fasthttp.RequestCtx) {
		defer func() {
			if r := recover(); r != nil {
				s.cfg.Logger.Error("handler panic", "panic", fmt.Sprint(r), "path", string(ctx.Path()))
				ctx.Response.ResetBody()
				s.writeFXError(ctx, errInternal)
			}
		}()
		gate(ctx)
	}
}

// fxRequireXML reports whether the request body is declared XML in UTF-8:
// application/xml or text/xml, with no charset or charset=utf-8.
func fxRequireXML(ctx *fasthttp.RequestCtx) bool {
	media, params, _ := bytes.Cut(ctx.Request.Header.ContentType(), []byte(";"))
	media = bytes.TrimSpace(media)
	if !bytes.EqualFold(media, []byte("application/xml")) && !bytes.EqualFold(media, []byte("text/xml")) {
		return false
	}
	for len(params) > 0 {
		var param []byte
		param, params, _ = bytes.Cut(params, []byte(";"))
		name, value, _ := bytes.Cut(param, []byte("="))
		if !bytes.EqualFold(bytes.TrimSpace(name), []byte("charset")) {
			continue
		}
		value = bytes.Trim(bytes.TrimSpace(value), `"`)
		if !bytes.EqualFold(value, []byte("utf-8")) && !bytes.EqualFold(value, []byte("utf8")) {
			return false
		}
	}
	return true
}

// ---- Writing -------------------------------------------------------------------

// writeXML writes document m with status.
func (s *Server) writeXML(ctx *fasthttp.RequestCtx, status int, m any) {
	body, err := fxmsg.Append(make([]byte, 0, 1024), m)
	if err != nil {
		// NB: the fxmsg types always marshal; this is a bug, answered
		// without internals.
		s.cfg.Logger.Error("xml marshal failed", "err", err, "type", fmt.Sprintf("%T", m))
		status, body = fasthttp.StatusInternalServerError, []byte(fxInternalErrorBody)
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType(fxContentType)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.SetBody(body)
}

const fxInternalErrorBody = `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
	`<MsgRjct xmlns="urn:iso:std:iso:20022:tech:xsd:admi.002.001.01"><RltdRef><Ref></Ref></RltdRef>` +
	`<Rsn><RjctgPtyRsn>INTERNAL_ERROR</RjctgPtyRsn><RjctnDtTm></RjctnDtTm><RsnDesc>internal error</RsnDesc></Rsn></MsgRjct>`

// writeFXError writes e as an admi.002 MsgRjct (spec §7) with the same
// status, code and headers as the JSON error (writeError).
func (s *Server) writeFXError(ctx *fasthttp.RequestCtx, e *apiError) {
	setRefusalHeaders(ctx, e.status)
	s.writeXML(ctx, e.status, &fxmsg.MsgRjct{
		RltdRef: fxmsg.RelatedReference{Ref: fxReference(ctx)},
		Rsn: fxmsg.RejectionReason{
			RjctgPtyRsn: e.code,
			RjctnDtTm:   fxTime(s.now().UnixMilli()),
			RsnDesc:     fxReasonDescription(e),
		},
	})
}

// now is the engine's clock once the system runs, else the wall clock.
func (s *Server) now() time.Time {
	if svc, ok := s.served(); ok {
		return svc.market.Now()
	}
	return time.Now()
}

// fxReference is MsgRjct/RltdRef/Ref: the trade id of the path when it is
// one, else the request id.
func fxReference(ctx *fasthttp.RequestCtx) string {
	if raw, ok := ctx.UserValue("id").(string); ok {
		if id, ok := engine.ParseUUID(raw); ok {
			return engine.QuoteID(id).String()
		}
	}
	return string(ctx.Response.Header.Peek("X-Request-Id"))
}

// fxReasonDescription is the message followed by the JSON details, if any,
// as "message (name: problem; name: problem)" in name order.
func fxReasonDescription(e *apiError) string {
	if len(e.details) == 0 {
		return e.message
	}
	return e.message + " (" + fxDetailText(e.details) + ")"
}

func fxDetailText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []string:
		return strings.Join(v, ", ")
	case rawNumber:
		return string(v)
	case decimal.Decimal:
		return v.String()
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case nil:
		return "none"
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + fxDetailText(v[k])
		}
		return strings.Join(parts, "; ")
	}
	return fmt.Sprint(v)
}

// fxTime is RFC 3339 UTC with milliseconds (spec §1).
func fxTime(unixMillis int64) string {
	return time.UnixMilli(unixMillis).UTC().Format(timestampLayout)
}

// fxOperatingError is operatingError for the FX routes.
func (s *Server) fxOperatingError(ctx *fasthttp.RequestCtx, err error) {
	s.writeFXError(ctx, s.operatingRefusal(ctx, err))
}

// fxQuoteFailed answers a refused or failed quote operation, exactly as
// quoteReply would in JSON, and reports whether it did.
func (s *Server) fxQuoteFailed(ctx *fasthttp.RequestCtx, reply *actors.QuoteReply, create *actors.CreateQuote) bool {
	if reply.Err != nil {
		s.fxOperatingError(ctx, reply.Err)
		return true
	}
	e := refusal(reply, create)
	if e == nil {
		return false
	}
	s.writeFXError(ctx, e)
	return true
}
