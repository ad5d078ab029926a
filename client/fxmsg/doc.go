// Package fxmsg holds the documents of Oja's XML FX API (spec §7): one Go
// type per message, named exactly as the interface names its root element,
// with fields named exactly as the interface names its elements (TradgCcyAmt
// and the like stay as spelled, here and only here). It also decodes request
// documents safely; the gateway owns what the values mean.
//
// Message types and the default namespace of each response root
// (NamespacePrefix + type):
//
//	fxtr.014.001.05  FXTradInstr, FXTradAccptReq → FXTradInstrRspn; FxTradStsAndDtls
//	fxtr.017.001.05  FXTradStsAndDtlsNtfctn
//	fxtr.016.001.05  FXTradCxlRspn
//	fxtr.037.001.02  FXTradConfStsAdvc
//	reda.041.001.01  FndPrcgPsptRpt
//	admi.002.001.01  MsgRjct (every error)
//
// Amounts and rates are Decimal: the exact decimal text, never a float64.
//
// xsd/ holds an XML Schema per message (<root>.xsd, shared types in
// common.xsd); schema_test.go checks every document in testdata/ against
// it, and the server's tests check every answer it writes.
//
// Decoding (DecodeFXTradInstr, DecodeFXTradAccptReq) treats the body as
// hostile until parsed:
//
//  1. bodies over BodyBytesMax are refused (ErrTooLarge) before parsing;
//  2. the body is read in one pass that refuses, as it goes, DTDs (any
//     <!DOCTYPE …> or other directive, hence every entity declaration),
//     elements nested deeper than DepthMax, more than ElementsMax elements,
//     more than AttributesMax attributes on one element, text outside the
//     root, a second root, an element repeated under one parent, and any
//     element outside the root's namespace; nothing is expanded, nested or
//     collected beyond a limit before it is refused;
//  3. an entity reference other than the five predefined ones (&lt; &gt;
//     &amp; &apos; &quot;) is a syntax error; character references stay
//     legal; an encoding other than UTF-8 is refused;
//  4. the root must be the expected element, in its message type's
//     namespace or in none.
//
// Every refusal is an *Error (or ErrTooLarge): a clean, bounded message the
// gateway answers with 400 (413), having changed nothing.
//
// The reader and the response writers are hand-made for speed (decode.go,
// encode.go; see the NBs there). encoding/xml is their reference: the tests
// check that the reader accepts exactly what a guarded encoding/xml reader
// accepts, with the same values (reference_test.go, FuzzDifferential), and
// that the writers produce exactly encoding/xml's bytes (encode_test.go,
// FuzzEncode). The one deliberate difference: names with non-ASCII
// characters are refused.
//
// Limits:
//
//	BodyBytesMax   64 KiB  request body
//	DepthMax       16      element nesting (the root is depth 1)
//	ElementsMax    256     elements in one document
//	AttributesMax  16      attributes on one element (namespace declarations included)
package fxmsg
