// Package oapigen is the Go client oapi-codegen (v2.8.2) generates from
// the partner API's OpenAPI document as the service serves it
// (GET /api/v1/openapi.json), models and client, unedited.
//
// It is kept in the repository to prove what the README's "Generated
// clients" section promises: generate_test.go regenerates it from a
// running service and fails when the committed file differs (run
// `go test -run TestGeneratedClientIsCurrent -update` here after changing the
// document), and that no amount or rate is a binary float. The tests of
// partnerapi drive a real service through it: money_test.go and
// xml_test.go check every amount and rate, JSON and XML, to the last
// place; session_test.go runs a partner's day with every request and
// answer checked against the served document by kin-openapi's validator
// (conformance_test.go), an implementation independent of the gateway's
// own document test.
//
// Amounts and rates are shopspring/decimal.Decimal (the document's
// x-go-type). The wire carries them as JSON numbers, so a program using
// this client sets decimal.MarshalJSONWithoutQuotes = true once, before
// its first request: without it, decimal writes a string, which the
// service refuses (400 VALIDATION_ERROR) rather than misread.
package oapigen
