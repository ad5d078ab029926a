package gateway_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// The identity of money over HTTP (engine/identity.go): a bank transfer
// credited once however it is typed and in whichever mode it is named;
// sandbox quotes never show the real collection account; a reference of
// the other mode is not found; payouts and prefunds carry their
// reference, idempotent by it and by an Idempotency-Key; the audit line of
// each write names what it moved.
func TestPaymentIdentity(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	p := s.NewPartner(t, "ada")
	newPool(t, s, engine.ModeLive, gatewaytest.NGNUSDT, "live desk", "0.000625", "1000")
	newPool(t, s, engine.ModeSandbox, gatewaytest.NGNUSDT, "play desk", "0.000625", "1000")
	accepted := func(key string) (id, reference string, bank map[string]any) {
		q := mustCreateQuote(t, s, key, quoteRequest("NGN", "USDT", "100000", "0.0006", "source"))
		a := mustAccept(t, s, key, q)
		bank = getObject(t, getObject(t, a, "metadata"), "bankPayIn")
		return getString(t, a, "quoteId"), getString(t, bank, "reference"), bank
	}
	liveQuote, liveRef, liveBank := accepted(p.LiveKey)
	_, sandboxRef, sandboxBank := accepted(p.SandboxKey)
	if getString(t, liveBank, "accountNumber") != "0123456789" || getString(t, sandboxBank, "accountNumber") != engine.SandboxCollectionDefault.AccountNumber {
		t.Fatalf("collection accounts: live %v, sandbox %v", liveBank, sandboxBank)
	}

	bank := func(reference, amount, txID, mode string) *response {
		body := map[string]any{"reference": reference, "amount": n(amount), "bankTransactionId": txID}
		if mode != "" {
			body["mode"] = mode
		}
		return admin(t, s, http.MethodPost, "/admin/v1/payins/bank", body)
	}
	first := wantOK(t, bank(liveRef, "50", "NIP-VAR-1", ""))
	receiptID := getString(t, first, "receiptId")
	if getString(t, first, "bankTransactionId") != "nip-var-1" || getString(t, first, "identity") != "in:NGN:nip-var-1" || first["repeated"] != nil {
		t.Fatalf("first receipt: %v", first)
	}
	// The quote's reference in any case, padded; the transaction id in
	// five more spellings: each names the first receipt, none credits.
	for _, txID := range []string{"nip-var-1", "  NIP-VAR-1\t", "NIP\u2010VAR\u20101", "NIP\u2014VAR\u20141", "ＮＩＰ-ＶＡＲ-１"} {
		again := wantOK(t, bank(" "+lower(liveRef)+" ", "50", txID, "live"))
		if getString(t, again, "receiptId") != receiptID || again["repeated"] != true {
			t.Fatalf("%q: %v", txID, again)
		}
	}
	ngn := wallet(t, p, engine.ModeLive, engine.CurrencyNGN)
	wantNumber(t, balancesOf(t, do(t, http.MethodGet, s.URL+balancesPath+"/"+ngn, p.LiveKey, nil))[ngn], "balance", "50")
	// Another amount, or the other mode's quote: a conflict naming it.
	details := wantError(t, bank(liveRef, "51", "nip-var-1", ""), http.StatusConflict, "CONFLICT")
	if details["receiptId"] != receiptID || details["mode"] != "live" {
		t.Errorf("conflict details: %v", details)
	}
	wantError(t, bank(sandboxRef, "50", "NIP-VAR-1", "sandbox"), http.StatusConflict, "CONFLICT")
	// A reference looked up in the other mode is not there.
	wantError(t, bank(sandboxRef, "50", "NIP-VAR-2", ""), http.StatusNotFound, "NOT_FOUND")
	wantError(t, bank(liveRef, "50", "NIP-VAR-2", "sandbox"), http.StatusNotFound, "NOT_FOUND")
	// Control and format characters are refused, and change nothing.
	for _, txID := range []string{"NIP\u200b-3", "NIP\a3", " ", ""} {
		wantDetailsNames(t, wantError(t, bank(liveRef, "50", txID, ""), http.StatusBadRequest, "VALIDATION_ERROR"), "bankTransactionId")
	}

	// A prefund naming the transfer a receipt credited is the same money.
	move := func(op, account, amount, reference string, headers ...string) *response {
		return do(t, http.MethodPost, s.Admin+"/admin/v1/accounts/"+account+"/"+op, gatewaytest.AdminToken,
			map[string]any{"amount": n(amount), "reference": reference}, headers...)
	}
	wantError(t, move("deposit", ngn, "50", "nip-var-1"), http.StatusConflict, "CONFLICT")
	wantDetailsNames(t, wantError(t, do(t, http.MethodPost, s.Admin+"/admin/v1/accounts/"+ngn+"/withdraw", gatewaytest.AdminToken,
		map[string]any{"amount": n("1")}), http.StatusBadRequest, "VALIDATION_ERROR"), "reference")
	// A payout retried after a timeout, with its Idempotency-Key: paid once.
	paid := wantOK(t, move("withdraw", ngn, "20", "PAYOUT-77", "Idempotency-Key", "payout-77"))
	retry := move("withdraw", ngn, "20", "PAYOUT-77", "Idempotency-Key", "payout-77")
	if r := wantOK(t, retry); retry.header.Get("Idempotent-Replayed") != "true" || r["repeated"] != true || fmt.Sprint(r["balance"]) != fmt.Sprint(paid["balance"]) {
		t.Fatalf("payout retry: %v %v", retry.header, r)
	}
	wantError(t, move("withdraw", ngn, "21", "PAYOUT-78", "Idempotency-Key", "payout-77"), http.StatusUnprocessableEntity, "IDEMPOTENCY_KEY_REUSED")
	wantError(t, move("withdraw", ngn, "21", "payout-77"), http.StatusConflict, "CONFLICT")
	wantNumber(t, balancesOf(t, do(t, http.MethodGet, s.URL+balancesPath+"/"+ngn, p.LiveKey, nil))[ngn], "balance", "30")

	// The statement rows carry the receipt and the references.
	rows := getArray(t, wantOK(t, admin(t, s, http.MethodGet, "/admin/v1/accounts/"+ngn+"/transactions", nil)), "data")
	if len(rows) != 2 || getString(t, rows[0], "reference") != "payout-77" || getString(t, rows[1], "receiptId") != receiptID {
		t.Fatalf("statement: %v", rows)
	}
	// The audit: one line per write made (not for the repeats or
	// refusals), each with what it moved.
	trail := getArray(t, wantOK(t, admin(t, s, http.MethodGet, "/admin/v1/audit?limit=2", nil)), "data")
	payout, receipt := getObject(t, trail[0].(map[string]any), "details"), getObject(t, trail[1].(map[string]any), "details")
	if fmt.Sprint(payout["amount"]) != "20" || payout["currency"] != "NGN" || payout["reference"] != "payout-77" || payout["accountId"] != ngn ||
		fmt.Sprint(receipt["amount"]) != "50" || receipt["bankTransactionId"] != "nip-var-1" || receipt["quoteId"] != liveQuote {
		t.Fatalf("audit: %v", trail)
	}
}

// TestKeyRolledOnce: ten concurrent rolls of one key make one new key;
// the others are 409 CONFLICT; the successor rolls, and the listing says
// where each key came from.
func TestKeyRolledOnce(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	p := s.NewPartner(t, "ada")
	list := func(key string) []any {
		return getArray(t, wantOK(t, do(t, http.MethodGet, s.URL+"/api/v1/partners/keys", key, nil)), "data")
	}
	keyID := getString(t, list(p.LiveKey)[0], "keyId")
	var wg sync.WaitGroup
	answers := make([]*response, 10)
	for i := range answers {
		wg.Go(func() {
			answers[i] = do(t, http.MethodPost, s.URL+"/api/v1/partners/keys/"+keyID+"/roll", p.LiveKey, map[string]any{"expiresInHours": 24})
		})
	}
	wg.Wait()
	var made []map[string]any
	for _, r := range answers {
		switch r.status {
		case http.StatusCreated:
			made = append(made, object(t, r))
		case http.StatusConflict:
		default:
			t.Fatalf("roll: %s", r)
		}
	}
	if len(made) != 1 {
		t.Fatalf("%d rolls made a key, want 1", len(made))
	}
	successor := getString(t, made[0], "key")
	keys := list(successor)
	if len(keys) != 2 || getString(t, keys[1], "rolledFrom") != keyID || keys[0].(map[string]any)["rolledFrom"] != nil {
		t.Fatalf("keys after the roll: %v", keys)
	}
	wantStatus(t, do(t, http.MethodPost, s.URL+"/api/v1/partners/keys/"+getString(t, made[0], "keyId")+"/roll", successor,
		map[string]any{"expiresInHours": 0}), http.StatusCreated)
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
