package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// oapiFunds drives the funds-first routes (spec §4 Complete, §15.1)
// through the document's checker: a live completion refused until the
// money arrives (JSON, XML and the operator's), bank receipts, the
// operator's completion, statements, payouts and credit lines — each
// documented response at least once, and the balances they report.
func oapiFunds(t *testing.T, c *oapiChecker, s *gatewaytest.Server, p, other gatewaytest.Partner, unreadyAdm, unreadyPub string) {
	t.Helper()
	const (
		intent    = "/api/v1/partners/marketplace/intent"
		quote     = "/api/v1/partners/marketplace/quote/{id}"
		trade     = "/api/v1/partners/fx/trades/{id}"
		bank      = "/admin/v1/payins/bank"
		oc        = "/admin/v1/quotes/{quoteId}/complete"
		withdraw  = "/admin/v1/accounts/{accountId}/withdraw"
		credit    = "/admin/v1/clients/{clientId}/credit"
		adminSt   = "/admin/v1/accounts/{accountId}/transactions"
		partnerSt = "/api/v1/partners/accounts/{accountId}/transactions"
		unknownID = "7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4"
		body      = `{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":16000,"rate":0.0006,"amountDirection":"source"}`
	)
	tok, pub, adm := gatewaytest.AdminToken, s.URL, s.Admin
	sub := func(template, id string) string {
		i := strings.Index(template, "{")
		j := strings.Index(template, "}")
		return template[:i] + id + template[j+1:]
	}
	liveWallet := func(cur engine.Currency) string { return wallet(t, p, engine.ModeLive, cur) }
	pool := s.NewPool(t, engine.ModeLive, gatewaytest.NGNUSDT, "Live desk", "0.000625", "1000")
	accepted := func(name string) (id, reference string) {
		created := c.run(t, oapiCall{name: name + " create", base: pub, method: "POST", path: intent, template: intent, token: p.LiveKey, body: body, want: 200})
		id = oapiString(created, "quoteId")
		acc := c.run(t, oapiCall{name: name + " accept", base: pub, method: "PUT", path: sub(quote, id) + "/accept", template: quote + "/accept",
			token: p.LiveKey, body: fmt.Sprintf(`{"accountId":%q}`, pool.Liquidity.ID), want: 200})
		return id, oapiString(acc, "metadata.bankPayIn.reference")
	}
	number := func(v any, path string) string { return fmt.Sprint(oapiField(v, path)) }

	// Unfunded: every completion is refused, and says what is missing.
	id, reference := accepted("live")
	refused := c.run(t, oapiCall{name: "complete unfunded", base: pub, method: "PUT", path: sub(quote, id) + "/complete", template: quote + "/complete",
		token: p.LiveKey, want: 422})
	if number(refused, "details.required") != "16000" || number(refused, "details.available") != "0" || oapiString(refused, "details.currency") != "NGN" {
		t.Errorf("unfunded completion: %v", refused)
	}
	c.run(t, oapiCall{name: "fx confirm unfunded", base: pub, method: "POST", path: sub(trade, id) + "/confirmation", template: trade + "/confirmation",
		token: p.LiveKey, want: 422})
	c.run(t, oapiCall{name: "operator complete unfunded", base: adm, method: "POST", path: sub(oc, id), template: oc, token: tok, want: 422})

	// Bank receipts: an under-payment, its repeat, a conflicting repeat, then the top-up.
	receipt := func(ref, amount, txID string) string {
		return fmt.Sprintf(`{"reference":%q,"amount":%s,"bankTransactionId":%q}`, ref, amount, txID)
	}
	got := c.run(t, oapiCall{name: "bank receipt", base: adm, method: "POST", path: bank, template: bank, token: tok, body: receipt(reference, "10000", "BTX-1"), want: 200})
	if oapiString(got, "quoteId") != id || oapiString(got, "accountId") != liveWallet(engine.CurrencyNGN) || number(got, "amount") != "10000" {
		t.Errorf("bank receipt: %v", got)
	}
	c.run(t, oapiCall{name: "bank receipt again", base: adm, method: "POST", path: bank, template: bank, token: tok, body: receipt(reference, "10000", "BTX-1"), want: 200})
	c.run(t, oapiCall{name: "bank receipt conflict", base: adm, method: "POST", path: bank, template: bank, token: tok, body: receipt(reference, "9999", "BTX-1"), want: 409})
	c.run(t, oapiCall{name: "bank receipt unknown reference", base: adm, method: "POST", path: bank, template: bank, token: tok, body: receipt("OJA-NOSUCHREF", "1", "BTX-9"), want: 404})
	c.run(t, oapiCall{name: "bank receipt bad body", base: adm, method: "POST", path: bank, template: bank, token: tok, body: `{"reference":"x","amount":-1}`, want: 400})
	c.run(t, oapiCall{name: "bank receipt over-precise", base: adm, method: "POST", path: bank, template: bank, token: tok, body: receipt(reference, "1.001", "BTX-8"), want: 400})
	c.run(t, oapiCall{name: "bank receipt no token", base: adm, method: "POST", path: bank, template: bank, body: receipt(reference, "1", "BTX-9"), want: 401})
	c.run(t, oapiCall{name: "bank receipt not json", base: adm, method: "POST", path: bank, template: bank, token: tok, ctype: "text/plain", body: "x", want: 415})
	c.run(t, oapiCall{name: "bank receipt unready", base: unreadyAdm, method: "POST", path: bank, template: bank, token: tok, body: receipt(reference, "1", "BTX-9"), want: 503})
	c.run(t, oapiCall{name: "complete under-paid", base: pub, method: "PUT", path: sub(quote, id) + "/complete", template: quote + "/complete", token: p.LiveKey, want: 422})
	c.run(t, oapiCall{name: "bank top-up", base: adm, method: "POST", path: bank, template: bank, token: tok, body: receipt(reference, "6000.5", "BTX-2"), want: 200})

	// The operator completes it; the partner sees the wallet's statement.
	done := c.run(t, oapiCall{name: "operator complete", base: adm, method: "POST", path: sub(oc, id), template: oc, token: tok, want: 200})
	if oapiString(done, "status") != "completed" {
		t.Errorf("operator complete: %v", done)
	}
	c.run(t, oapiCall{name: "operator complete again", base: adm, method: "POST", path: sub(oc, id), template: oc, token: tok, want: 200})
	pendingID := oapiString(c.run(t, oapiCall{name: "live pending", base: pub, method: "POST", path: intent, template: intent, token: p.LiveKey, body: body, want: 200}), "quoteId")
	c.run(t, oapiCall{name: "operator complete pending", base: adm, method: "POST", path: sub(oc, pendingID), template: oc, token: tok, want: 409})
	c.run(t, oapiCall{name: "operator complete unknown", base: adm, method: "POST", path: sub(oc, unknownID), template: oc, token: tok, want: 404})
	c.run(t, oapiCall{name: "operator complete bad id", base: adm, method: "POST", path: sub(oc, "x"), template: oc, token: tok, want: 400})
	c.run(t, oapiCall{name: "operator complete no token", base: adm, method: "POST", path: sub(oc, id), template: oc, want: 401})
	c.run(t, oapiCall{name: "operator complete unready", base: unreadyAdm, method: "POST", path: sub(oc, id), template: oc, token: tok, want: 503})

	ngn := liveWallet(engine.CurrencyNGN)
	page := c.run(t, oapiCall{name: "admin statement", base: adm, method: "GET", path: sub(adminSt, ngn), template: adminSt, token: tok, want: 200})
	var lines []string
	for _, row := range oapiField(page, "data").([]any) {
		lines = append(lines, oapiString(row, "type")+" "+number(row, "amount")+" → "+number(row, "balanceAfter"))
	}
	if want := "settlement -16000 → 0.5|payin 6000.5 → 16000.5|payin 10000 → 10000"; strings.Join(lines, "|") != want {
		t.Errorf("statement:\n got %s\nwant %s", strings.Join(lines, "|"), want)
	}
	first := c.run(t, oapiCall{name: "partner statement", base: pub, method: "GET", path: sub(partnerSt, ngn) + "?limit=1", template: partnerSt, token: p.LiveKey, want: 200})
	if oapiField(first, "hasMore") != true {
		t.Errorf("statement page of 1: %v", first)
	}
	cursor := oapiString(oapiField(first, "data").([]any)[0], "id")
	next := c.run(t, oapiCall{name: "partner statement next", base: pub, method: "GET", path: sub(partnerSt, ngn) + "?limit=5&startingAfter=" + cursor,
		template: partnerSt, token: p.LiveKey, want: 200})
	if rows := oapiField(next, "data").([]any); len(rows) != 2 || oapiField(next, "hasMore") != false || oapiString(rows[0], "type") != "payin" {
		t.Errorf("statement after %s: %v", cursor, next)
	}
	c.run(t, oapiCall{name: "partner statement of another's wallet", base: pub, method: "GET", path: sub(partnerSt, ngn), template: partnerSt, token: other.LiveKey, want: 404})
	c.run(t, oapiCall{name: "partner statement other mode", base: pub, method: "GET", path: sub(partnerSt, ngn), template: partnerSt, token: p.SandboxKey, want: 404})
	c.run(t, oapiCall{name: "partner statement bad cursor", base: pub, method: "GET", path: sub(partnerSt, ngn) + "?startingAfter=txn_l00000000000fff", template: partnerSt, token: p.LiveKey, want: 400})
	c.run(t, oapiCall{name: "partner statement bad limit", base: pub, method: "GET", path: sub(partnerSt, ngn) + "?limit=0", template: partnerSt, token: p.LiveKey, want: 400})
	c.run(t, oapiCall{name: "partner statement no key", base: pub, method: "GET", path: sub(partnerSt, ngn), template: partnerSt, want: 401})
	c.run(t, oapiCall{name: "partner statement unready", base: unreadyPub, method: "GET", path: sub(partnerSt, ngn), template: partnerSt, token: p.LiveKey, want: 503})
	c.run(t, oapiCall{name: "admin statement unknown", base: adm, method: "GET", path: sub(adminSt, unknownID), template: adminSt, token: tok, want: 404})
	c.run(t, oapiCall{name: "admin statement bad id", base: adm, method: "GET", path: sub(adminSt, "x"), template: adminSt, token: tok, want: 400})
	c.run(t, oapiCall{name: "admin statement no token", base: adm, method: "GET", path: sub(adminSt, ngn), template: adminSt, want: 401})
	c.run(t, oapiCall{name: "admin statement unready", base: unreadyAdm, method: "GET", path: sub(adminSt, ngn), template: adminSt, token: tok, want: 503})

	// A transfer that arrives after the quote completed is still the
	// partner's: credited, then paid out.
	c.run(t, oapiCall{name: "bank receipt after completion", base: adm, method: "POST", path: bank, template: bank, token: tok, body: receipt(reference, "500", "BTX-3"), want: 200})
	view := c.run(t, oapiCall{name: "admin quote with receipts", base: adm, method: "GET", path: "/admin/v1/quotes/" + id,
		template: "/admin/v1/quotes/{quoteId}", token: tok, want: 200})
	if rs, _ := oapiField(view, "receipts").([]any); number(view, "receivedAmount") != "16500.5" || len(rs) != 3 ||
		oapiString(rs[2], "bankTransactionId") != "btx-3" || oapiString(view, "status") != "completed" {
		t.Errorf("the operator's view of the quote: %v", view)
	}
	over := c.run(t, oapiCall{name: "withdraw too much", base: adm, method: "POST", path: sub(withdraw, ngn), template: withdraw, token: tok, body: `{"amount":501,"reference":"PAYOUT-OAPI-501"}`, want: 422})
	if number(over, "details.available") != "500.5" {
		t.Errorf("withdraw too much: %v", over)
	}
	paid := c.run(t, oapiCall{name: "withdraw", base: adm, method: "POST", path: sub(withdraw, ngn), template: withdraw, token: tok, body: `{"amount":500.5,"reference":"PAYOUT-OAPI-500.5"}`, want: 200})
	c.run(t, oapiCall{name: "withdraw a payout's reference again, another amount", base: adm, method: "POST", path: sub(withdraw, ngn), template: withdraw, token: tok,
		body: `{"amount":1,"reference":"payout-oapi-500.5"}`, want: 409})
	deposit := "/admin/v1/accounts/{accountId}/deposit"
	c.run(t, oapiCall{name: "deposit a receipt's transfer again", base: adm, method: "POST", path: sub(deposit, ngn), template: deposit, token: tok,
		body: `{"amount":500,"reference":" btx-3 "}`, want: 409})
	if number(paid, "balance") != "0" {
		t.Errorf("after the payout: %v", paid)
	}
	c.run(t, oapiCall{name: "withdraw bad body", base: adm, method: "POST", path: sub(withdraw, ngn), template: withdraw, token: tok, body: `{"amount":0,"reference":"PAYOUT-OAPI-0"}`, want: 400})
	c.run(t, oapiCall{name: "withdraw unknown", base: adm, method: "POST", path: sub(withdraw, unknownID), template: withdraw, token: tok, body: `{"amount":1,"reference":"PAYOUT-OAPI-1"}`, want: 404})
	c.run(t, oapiCall{name: "withdraw no token", base: adm, method: "POST", path: sub(withdraw, ngn), template: withdraw, body: `{"amount":1,"reference":"PAYOUT-OAPI-1"}`, want: 401})
	c.run(t, oapiCall{name: "withdraw not json", base: adm, method: "POST", path: sub(withdraw, ngn), template: withdraw, token: tok, ctype: "text/plain", body: "x", want: 415})
	c.run(t, oapiCall{name: "withdraw unready", base: unreadyAdm, method: "POST", path: sub(withdraw, ngn), template: withdraw, token: tok, body: `{"amount":1,"reference":"PAYOUT-OAPI-1"}`, want: 503})

	// Credit: a completion on credit, then a lower limit it would break.
	client := p.Client.ID.String()
	line := c.run(t, oapiCall{name: "credit", base: adm, method: "PUT", path: sub(credit, client), template: credit, token: tok,
		body: `{"mode":"live","currency":"NGN","limit":20000}`, want: 200})
	if number(line, "limit") != "20000" || oapiString(line, "accountId") != ngn {
		t.Errorf("credit: %v", line)
	}
	onCredit, _ := accepted("on credit")
	c.run(t, oapiCall{name: "complete on credit", base: pub, method: "PUT", path: sub(quote, onCredit) + "/complete", template: quote + "/complete", token: p.LiveKey, want: 200})
	c.run(t, oapiCall{name: "credit below use", base: adm, method: "PUT", path: sub(credit, client), template: credit, token: tok,
		body: `{"mode":"live","currency":"NGN","limit":100}`, want: 409})
	c.run(t, oapiCall{name: "credit bad body", base: adm, method: "PUT", path: sub(credit, client), template: credit, token: tok,
		body: `{"mode":"live","currency":"XYZ","limit":1}`, want: 400})
	c.run(t, oapiCall{name: "credit unknown client", base: adm, method: "PUT", path: sub(credit, unknownID), template: credit, token: tok,
		body: `{"mode":"live","currency":"NGN","limit":1}`, want: 404})
	c.run(t, oapiCall{name: "credit no token", base: adm, method: "PUT", path: sub(credit, client), template: credit, body: `{}`, want: 401})
	c.run(t, oapiCall{name: "credit not json", base: adm, method: "PUT", path: sub(credit, client), template: credit, token: tok, ctype: "text/plain", body: "x", want: 415})
	c.run(t, oapiCall{name: "credit unready", base: unreadyAdm, method: "PUT", path: sub(credit, client), template: credit, token: tok,
		body: `{"mode":"live","currency":"NGN","limit":1}`, want: 503})
	balances := c.run(t, oapiCall{name: "wallet on credit", base: pub, method: "GET", path: "/api/v1/partners/balances/" + ngn,
		template: "/api/v1/partners/balances/{accountId}", token: p.LiveKey, want: 200})
	if b := balances.([]any)[0]; number(b, "balance") != "-16000" || number(b, "availableBalance") != "-16000" {
		t.Errorf("wallet on credit: %v", balances)
	}

	// A receipt that would take the wallet over 10^15 minor units: 422.
	c.run(t, oapiCall{name: "fill the ngn wallet", base: adm, method: "POST", path: "/admin/v1/accounts/" + ngn + "/deposit",
		template: "/admin/v1/accounts/{accountId}/deposit", token: tok, body: `{"amount":10000000000000,"reference":"NIP-OAPI-FILL"}`, want: 200})
	c.run(t, oapiCall{name: "bank receipt over the largest balance", base: adm, method: "POST", path: bank, template: bank, token: tok,
		body: receipt(reference, "16000.01", "BTX-4"), want: 422})
}
