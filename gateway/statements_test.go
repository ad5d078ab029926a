package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/camt"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
	"github.com/oja-exchange/oja/internal/camttest"
)

// importXML posts a statement to the import route.
func importXML(t *testing.T, s *gatewaytest.Server, doc []byte) *response {
	t.Helper()
	return do(t, http.MethodPost, s.Admin+"/admin/v1/payins/bank/statements", gatewaytest.AdminToken, doc, "Content-Type", "application/xml")
}

// liveQuote creates and accepts a live NGN→USDT quote of p and returns it.
func liveQuote(t *testing.T, s *gatewaytest.Server, key string) map[string]any {
	t.Helper()
	q := object(t, do(t, http.MethodPost, s.URL+"/api/v1/partners/marketplace/intent", key,
		`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":100000,"rate":0.0006,"amountDirection":"source"}`))
	account := getString(t, q["allocationResult"].(map[string]any)["allocations"].([]any)[0], "poolAccountId")
	return object(t, do(t, http.MethodPut, s.URL+"/api/v1/partners/marketplace/quote/"+getString(t, q, "quoteId")+"/accept", key,
		fmt.Sprintf(`{"accountId":%q}`, account)))
}

// TestStatementImport: each booked credit on the collection account is
// recorded once — one naming an open quote's reference (any case, no
// hyphen) credits its client, any other is held in suspense; debits, entries
// not booked and other accounts' entries are ignored; the same file again,
// or one overlapping it, changes nothing twice; the ledger sums to zero.
func TestStatementImport(t *testing.T) {
	s := gatewaytest.Start(t, gatewaytest.Options{})
	s.NewPool(t, engine.ModeLive, gatewaytest.NGNUSDT, "Lagos", "0.000625", "10000")
	p := s.NewPartner(t, "ada")
	q := liveQuote(t, s, p.LiveKey)
	ref := getString(t, q, "metadata.bankPayIn.reference")
	loose := strings.ToLower(strings.ReplaceAll(ref, "-", ""))
	entries := []camttest.Entry{
		{Amount: "100000.00", Currency: "NGN", AcctSvcrRef: "NIP/1", Remittance: []string{"payment " + loose + " thanks"}, Debtor: "Ada Obi"},
		{Amount: "2500.50", Currency: "NGN", AcctSvcrRef: "NIP/2", Remittance: []string{"no reference at all"}, Debtor: "Chinedu Eze"},
		{Amount: "300.00", Currency: "NGN", NtryRef: "FT-3", Remittance: []string{"OJA-0000000000 is nobody's"}},
		{Amount: "750.00", Currency: "NGN", Debit: true, AcctSvcrRef: "CHG/4"},
		{Amount: "999.00", Currency: "NGN", Pending: true, AcctSvcrRef: "NIP/5"},
	}
	doc := camttest.Statement("STMT-1", "0123456789", "NGN", entries...)
	r := importXML(t, s, doc)
	report := object(t, r)
	if r.status != 200 || fmt.Sprintf("%v %v %v %v %v", report["entries"], report["applied"], report["unapplied"], report["duplicates"], report["ignored"]) != "5 1 2 0 2" {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	held := report["unappliedReceipts"].([]any)
	if len(held) != 2 || getString(t, held[0], "bankTransactionId") != "nip/2" || getString(t, held[0], "debtorName") != "Chinedu Eze" ||
		getString(t, held[0], "remittance") != "no reference at all" || getString(t, held[1], "bankTransactionId") != "ft-3" {
		t.Fatalf("held: %v", held)
	}
	// The quote's client was credited: its NGN wallet, a receipt of the quote.
	got := object(t, admin(t, s, http.MethodGet, "/admin/v1/quotes/"+getString(t, q, "quoteId"), nil))
	if receipts := got["receipts"].([]any); len(receipts) != 1 || getString(t, receipts[0], "bankTransactionId") != "nip/1" {
		t.Fatalf("the quote's receipts: %v", got["receipts"])
	}
	// Again, and overlapping with one new entry: only the new one.
	again := object(t, importXML(t, s, doc))
	if fmt.Sprintf("%v %v %v %v", again["applied"], again["unapplied"], again["duplicates"], again["ignored"]) != "0 0 3 2" {
		t.Fatalf("the same file again: %v", again)
	}
	overlap := object(t, importXML(t, s, camttest.Notification("NTF-9", "0123456789", "NGN",
		entries[1], camttest.Entry{Amount: "10.00", Currency: "NGN", AcctSvcrRef: "NIP/6"})))
	if fmt.Sprintf("%v %v %v", overlap["applied"], overlap["unapplied"], overlap["duplicates"]) != "0 1 1" {
		t.Fatalf("an overlapping notification: %v", overlap)
	}
	list := object(t, admin(t, s, http.MethodGet, "/admin/v1/payins/unapplied?mode=live", nil))
	if data := list["data"].([]any); len(data) != 3 || list["hasMore"] != false {
		t.Fatalf("unapplied: %v", list)
	}
	if ledger := object(t, admin(t, s, http.MethodGet, "/admin/v1/ledger/check?mode=live", nil)); ledger["ok"] != true {
		t.Fatalf("ledger: %v", ledger)
	}
	// A statement of another account alone is refused: nothing of it is ours.
	other := importXML(t, s, camttest.Statement("STMT-X", "9999999999", "NGN", entries[0]))
	wantError(t, other, 400, "VALIDATION_ERROR")
}

// TestStatementImportRefused: a document that is not a camt.053.001.08 or
// camt.054.001.08, or an entry that cannot be recorded exactly once, is
// refused naming why, and nothing of the document is recorded.
func TestStatementImportRefused(t *testing.T) {
	s := gatewaytest.Start(t, gatewaytest.Options{})
	good := camttest.Entry{Amount: "10.00", Currency: "NGN", AcctSvcrRef: "NIP/OK", Remittance: []string{"nothing"}}
	for _, tc := range []struct {
		name string
		doc  []byte
		want string
	}{
		{"a DTD", []byte(`<?xml version="1.0"?><!DOCTYPE Document [<!ENTITY x SYSTEM "file:///etc/passwd">]><Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"/>`), "DTD"},
		{"another message", []byte(`<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.052.001.08"><BkToCstmrAcctRpt/></Document>`), "camt.052.001.08"},
		{"not XML", []byte("date,amount\n"), "document"},
		{"an entry with no reference", camttest.Statement("S", "0123456789", "NGN", good, camttest.Entry{Amount: "1.00", Currency: "NGN"}), "entry 2"},
		{"an unknown currency", camttest.Statement("S", "0123456789", "NGN", good, camttest.Entry{Amount: "1.00", Currency: "EUR", AcctSvcrRef: "E"}), "EUR"},
		{"a token", camttest.Statement("S", "0123456789", "NGN", good, camttest.Entry{Amount: "1.00", Currency: "USDT", AcctSvcrRef: "T"}), "USDT"},
		{"more places than the currency keeps", camttest.Statement("S", "0123456789", "NGN", good, camttest.Entry{Amount: "1.005", Currency: "NGN", AcctSvcrRef: "P"}), "decimal places"},
		{"too large", append([]byte("<Document>"), make([]byte, camt.BytesMax)...), "over the"},
	} {
		r := importXML(t, s, tc.doc)
		details := wantError(t, r, 400, "VALIDATION_ERROR")
		if !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%s: %s, want it to name %q (details %v)", tc.name, r.body, tc.want, details)
		}
	}
	wantError(t, do(t, http.MethodPost, s.Admin+"/admin/v1/payins/bank/statements", gatewaytest.AdminToken,
		camttest.Statement("S", "0123456789", "NGN", good)), 415, "UNSUPPORTED_MEDIA_TYPE") // sent as JSON
	if list := object(t, admin(t, s, http.MethodGet, "/admin/v1/payins/unapplied", nil)); len(list["data"].([]any)) != 0 {
		t.Fatalf("a refused document recorded something: %v", list)
	}
	// Over 64 KiB is a statement's right only.
	wantError(t, doOversized(t, http.MethodPost, s.Admin+"/admin/v1/clients", gatewaytest.AdminToken, strings.Repeat(" ", 65<<10)+"{}"),
		413, "PAYLOAD_TOO_LARGE")
}

// TestUnappliedApplyAndReturn: money held in suspense applied to a quote is
// a receipt of it (the quote can then complete from the wallet); applied
// to a client's wallet it credits that wallet; returned it leaves under the
// return's reference, which no payout may use again; each once.
func TestUnappliedApplyAndReturn(t *testing.T) {
	s := gatewaytest.Start(t, gatewaytest.Options{})
	s.NewPool(t, engine.ModeLive, gatewaytest.NGNUSDT, "Lagos", "0.000625", "10000")
	p := s.NewPartner(t, "ada")
	q := liveQuote(t, s, p.LiveKey)
	report := object(t, importXML(t, s, camttest.Statement("S-1", "0123456789", "NGN",
		camttest.Entry{Amount: "100000.00", Currency: "NGN", AcctSvcrRef: "NIP/A", Remittance: []string{"for the usdt, ref lost"}},
		camttest.Entry{Amount: "5000.00", Currency: "NGN", AcctSvcrRef: "NIP/B", Remittance: []string{"top up"}},
		camttest.Entry{Amount: "42.00", Currency: "NGN", AcctSvcrRef: "NIP/C", Remittance: []string{"wrong account"}})))
	held := report["unappliedReceipts"].([]any)
	if len(held) != 3 {
		t.Fatalf("held: %v", report)
	}
	id := func(i int) string { return getString(t, held[i], "unappliedId") }
	quoteID := getString(t, q, "quoteId")
	path := func(i int, action string) string { return "/admin/v1/payins/unapplied/" + id(i) + "/" + action }
	// To the quote: a receipt of it; the quote completes from the wallet.
	applied := object(t, admin(t, s, http.MethodPost, path(0, "apply"), map[string]any{"quoteId": quoteID}))
	if getString(t, applied, "quoteId") != quoteID || fmt.Sprint(applied["amount"]) != "100000" || !strings.HasPrefix(getString(t, applied, "receiptId"), "rcpt_l") {
		t.Fatalf("applied: %v", applied)
	}
	wantError(t, admin(t, s, http.MethodPost, path(0, "apply"), map[string]any{"quoteId": quoteID}), 404, "NOT_FOUND")
	done := object(t, do(t, http.MethodPut, s.URL+"/api/v1/partners/marketplace/quote/"+quoteID+"/complete", p.LiveKey, nil))
	if getString(t, done, "status") != "completed" {
		t.Fatalf("completion after applying: %v", done)
	}
	// To a client's wallet of the mode.
	wantError(t, admin(t, s, http.MethodPost, path(1, "apply"), map[string]any{"clientId": p.Client.ID.String()}), 400, "VALIDATION_ERROR") // no mode
	wantError(t, admin(t, s, http.MethodPost, path(1, "apply"), map[string]any{"clientId": p.Client.ID.String(), "mode": "sandbox"}), 400, "VALIDATION_ERROR")
	credited := object(t, admin(t, s, http.MethodPost, path(1, "apply"), map[string]any{"clientId": p.Client.ID.String(), "mode": "live"}))
	if fmt.Sprint(credited["amount"]) != "5000" {
		t.Fatalf("credited: %v", credited)
	}
	// Returned: under the return transfer's reference, once.
	wantError(t, admin(t, s, http.MethodPost, path(2, "return"), map[string]any{"reference": " "}), 400, "VALIDATION_ERROR")
	returned := object(t, admin(t, s, http.MethodPost, path(2, "return"), map[string]any{"reference": "RET/C"}))
	if getString(t, returned, "returnReference") != "ret/c" || fmt.Sprint(returned["amount"]) != "42" {
		t.Fatalf("returned: %v", returned)
	}
	wantError(t, admin(t, s, http.MethodPost, path(2, "return"), map[string]any{"reference": "RET/C2"}), 404, "NOT_FOUND")
	ngn := getString(t, decode(t, do(t, http.MethodGet, s.URL+"/api/v1/partners/balances/currency/NGN", p.LiveKey, nil,
		"x-service-source", "test").body).([]any)[0], "accountId")
	wantError(t, admin(t, s, http.MethodPost, "/admin/v1/accounts/"+ngn+"/withdraw", map[string]any{"amount": 1, "reference": "ret/c"}), 409, "CONFLICT")
	if list := object(t, admin(t, s, http.MethodGet, "/admin/v1/payins/unapplied", nil)); len(list["data"].([]any)) != 0 {
		t.Fatalf("still held: %v", list)
	}
	if ledger := object(t, admin(t, s, http.MethodGet, "/admin/v1/ledger/check?mode=live", nil)); ledger["ok"] != true {
		t.Fatalf("ledger: %v", ledger)
	}
}

// upload posts a file as the console's import form does.
func (b *consoleBrowser) upload(path, field, name string, content []byte, fields map[string]string) consoleAnswer {
	b.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	part, err := w.CreateFormFile(field, name)
	if err != nil {
		b.t.Fatal(err)
	}
	_, _ = part.Write(content)
	_ = w.Close()
	req, err := http.NewRequest(http.MethodPost, b.base+path, &body)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.AddCookie(&http.Cookie{Name: "oja_console", Value: b.cookie})
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return consoleAnswer{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}

// TestConsoleStatementImport: an operator uploads a statement on the
// Pay-ins page; its outcome is shown; the credit held in suspense is
// listed there, and returned from it; all of it in the audit trail.
func TestConsoleStatementImport(t *testing.T) {
	s := gatewaytest.Start(t, gatewaytest.Options{})
	op := newConsoleBrowser(t, s.Admin)
	op.login(gatewaytest.AdminToken)
	doc := camttest.Statement("CONSOLE-1", "0123456789", "NGN",
		camttest.Entry{Amount: "4200.00", Currency: "NGN", AcctSvcrRef: "NIP/CONSOLE/1", Remittance: []string{"unknown payer"}, Debtor: "Bola Ade"})
	a := op.upload("/console/payins/statements", "statement", "statement.xml", doc, map[string]string{"mode": "live"})
	wantConsole(t, "after the import", op.do(http.MethodGet, location(t, a), nil), http.StatusOK, "1 unapplied (held in suspense)")
	page := op.do(http.MethodGet, "/console/payins?mode=live", nil)
	strictPage(t, "pay-ins", page)
	wantConsole(t, "pay-ins", page, http.StatusOK, "nip/console/1")
	held := s.Sys.UnappliedList(engine.ModeLive)
	if len(held) != 1 {
		t.Fatalf("held: %v", held)
	}
	a = op.do(http.MethodPost, "/console/payins/unapplied/"+held[0].ID.String()+"/return", url.Values{"mode": {"live"}, "reference": {"RET/CONSOLE/1"}})
	wantConsole(t, "after the return", op.do(http.MethodGet, location(t, a), nil), http.StatusOK, "Returned under RET/CONSOLE/1")
	if len(s.Sys.UnappliedList(engine.ModeLive)) != 0 {
		t.Fatal("still held after the return")
	}
	// A refused document: its reason shown, nothing recorded.
	a = op.upload("/console/payins/statements", "statement", "x.xml", []byte("<x/>"), map[string]string{"mode": "live"})
	wantConsole(t, "a refused file", op.do(http.MethodGet, location(t, a), nil), http.StatusOK, "Not imported")
	trail := object(t, admin(t, s, http.MethodGet, "/admin/v1/audit", nil))["data"].([]any)
	if len(trail) != 2 || !strings.HasSuffix(getString(t, trail[0], "target"), "/return") || getString(t, trail[1], "action") != "POST /console/payins/statements" ||
		fmt.Sprint(trail[0].(map[string]any)["details"].(map[string]any)["amount"]) != "4200" ||
		getString(t, trail[1].(map[string]any)["details"], "bankTransactionId") != "nip/console/1" {
		t.Fatalf("audit trail: %v", trail)
	}
}
