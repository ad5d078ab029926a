package clientcheck_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/oja-exchange/oja/client"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// TestAdminOperatorFlow runs an operator's day against a real service: a
// partner and its key, a pool funded, priced, suspended and drained, a
// wallet credited, the ledger checked, a backup taken, the key revoked.
func TestAdminOperatorFlow(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	ctx := context.Background()
	admin, err := client.NewAdmin(s.Admin, gatewaytest.AdminToken)
	if err != nil {
		t.Fatal(err)
	}

	partner, err := admin.CreateClient(ctx, "Acme Remit")
	if err != nil || partner.ClientID == "" || partner.Name != "Acme Remit" {
		t.Fatalf("CreateClient: %+v %v", partner, err)
	}
	key, err := admin.CreateKey(ctx, partner.ClientID, client.ModeLive)
	if err != nil || key.Mode != client.ModeLive || key.ClientID != partner.ClientID || len(key.Key) < 40 {
		t.Fatalf("CreateKey: %+v %v", key, err)
	}
	_, err = admin.CreateKey(ctx, partner.ClientID, "staging")
	apiError(t, err, 400, client.CodeValidation)

	pool, err := admin.CreatePool(ctx, client.CreatePoolRequest{Mode: client.ModeLive, Name: "Desk L", Source: "NGN",
		Destination: "USDT", Rate: d("0.000625"), OwnerClientID: partner.ClientID})
	if err != nil || pool.Status != client.PoolActive || pool.OwnerClientID != partner.ClientID || !pool.Balance.IsZero() ||
		pool.RateSetAt.IsZero() || pool.PoolAccountID == "" || pool.ProceedsAccountID == "" {
		t.Fatalf("CreatePool: %+v %v", pool, err)
	}
	wantEqual(t, "pool rate", pool.Rate, d("0.000625"))
	_, err = admin.CreatePool(ctx, client.CreatePoolRequest{Mode: client.ModeLive, Name: "Bad", Source: "GHS", Destination: "NGN", Rate: d("1")})
	apiError(t, err, 400, client.CodeInvalidCurrencyPair)

	if pool, err = admin.DepositPool(ctx, pool.PoolID, d("1000.123456")); err != nil {
		t.Fatal(err)
	}
	wantEqual(t, "balance after deposit", pool.Balance, d("1000.123456"))
	if pool, err = admin.WithdrawPool(ctx, pool.PoolID, d("0.123456")); err != nil {
		t.Fatal(err)
	}
	wantEqual(t, "available after withdraw", pool.Available, d("1000"))
	_, err = admin.WithdrawPool(ctx, pool.PoolID, d("1000.000001"))
	apiError(t, err, 422, client.CodeInsufficientFunds)
	if pool, err = admin.SetPoolRate(ctx, pool.PoolID, d("0.00063")); err != nil || !pool.Rate.Equal(d("0.00063")) {
		t.Fatalf("SetPoolRate: %+v %v", pool, err)
	}
	if pool, err = admin.SetPoolStatus(ctx, pool.PoolID, client.PoolSuspended); err != nil || pool.Status != client.PoolSuspended {
		t.Fatalf("SetPoolStatus: %+v %v", pool, err)
	}
	if pool, err = admin.SetPoolStatus(ctx, pool.PoolID, client.PoolActive); err != nil || pool.Status != client.PoolActive {
		t.Fatalf("SetPoolStatus: %+v %v", pool, err)
	}
	pools, err := admin.Pools(ctx, client.ModeLive)
	if err != nil || len(pools) != 1 || pools[0].PoolID != pool.PoolID || pools[0].TradesCount != 0 || !pools[0].CompletionRate.IsZero() {
		t.Fatalf("Pools(live): %+v %v", pools, err)
	}
	if pools, err = admin.Pools(ctx, client.ModeSandbox); err != nil || len(pools) != 0 {
		t.Fatalf("Pools(sandbox): %+v %v", pools, err)
	}
	if pools, err = admin.Pools(ctx, ""); err != nil || len(pools) != 1 {
		t.Fatalf("Pools(all): %+v %v", pools, err)
	}

	// The partner, with the new key, sees its wallets and its pool's
	// accounts; the operator credits its NGN wallet.
	partnerClient, err := client.New(s.URL, key.Key)
	if err != nil {
		t.Fatal(err)
	}
	ngn, err := partnerClient.BalancesByCurrency(ctx, "NGN")
	if err != nil || len(ngn) != 2 { // wallet + the pool's proceeds account
		t.Fatalf("partner NGN accounts: %+v %v", ngn, err)
	}
	var wallet string
	for _, b := range ngn {
		if b.AccountID != pool.ProceedsAccountID {
			wallet = b.AccountID
		}
	}
	credited, err := admin.DepositAccount(ctx, wallet, d("2500.75"), "NIP-PREFUND-1")
	if err != nil || credited.AccountID != wallet || !credited.Balance.Equal(d("2500.75")) {
		t.Fatalf("DepositAccount: %+v %v", credited, err)
	}
	again, err := admin.DepositAccount(ctx, wallet, d("2500.75"), " nip‐prefund‐1 ")
	if err != nil || !again.Repeated || !again.Balance.Equal(d("2500.75")) || again.Reference != "nip-prefund-1" {
		t.Fatalf("DepositAccount again, spelled otherwise: %+v %v", again, err)
	}
	_, err = admin.DepositAccount(ctx, wallet, d("0.001"), "NIP-PREFUND-2")
	apiError(t, err, 400, client.CodeValidation)

	for _, mode := range []client.Mode{client.ModeLive, client.ModeSandbox} {
		report, err := admin.LedgerCheck(ctx, mode)
		if err != nil || !report.OK || len(report.Currencies) != 3 || len(report.Problems) != 0 {
			t.Fatalf("LedgerCheck(%s): %+v %v", mode, report, err)
		}
		for c, line := range report.Currencies {
			if !line.Sum.IsZero() || line.Accounts <= 0 {
				t.Errorf("LedgerCheck(%s) %s: %+v", mode, c, line)
			}
		}
	}

	dir := filepath.Join(t.TempDir(), "backup")
	if err := admin.Backup(ctx, dir); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("backup dir: %v", err)
	}
	apiError(t, admin.Backup(ctx, dir), 400, client.CodeValidation) // exists already

	// Look-ups: the listing, the client's keys (no secret) and accounts.
	page, err := admin.ListClients(ctx, 1, "")
	if err != nil || len(page.Data) != 1 || page.Data[0].ClientID != partner.ClientID || page.Data[0].CreatedAt.IsZero() {
		t.Fatalf("ListClients: %+v %v", page, err)
	}
	detail, err := admin.GetClient(ctx, partner.ClientID)
	if err != nil || detail.Name != "Acme Remit" || len(detail.Keys) != 1 || detail.Keys[0].KeyID != key.KeyID ||
		detail.Keys[0].Revoked || len(detail.Accounts.Live) == 0 {
		t.Fatalf("GetClient: %+v %v", detail, err)
	}
	_, err = admin.GetQuote(ctx, "7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4")
	apiError(t, err, 404, client.CodeQuoteNotFound)
	_, err = admin.CancelQuote(ctx, "7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4")
	apiError(t, err, 404, client.CodeQuoteNotFound)

	if err := admin.RevokeKey(ctx, key.KeyID); err != nil {
		t.Fatal(err)
	}
	if detail, err = admin.GetClient(ctx, partner.ClientID); err != nil || !detail.Keys[0].Revoked {
		t.Fatalf("GetClient after the revocation: %+v %v", detail, err)
	}
	_, err = partnerClient.Balances(ctx)
	apiError(t, err, 401, client.CodeUnauthorized)
	apiError(t, admin.RevokeKey(ctx, "7d0c1e42-5b1f-4c39-9a51-3f6de2b1a9c4"), 404, client.CodeNotFound)

	wrong, err := client.NewAdmin(s.Admin, "not-the-token")
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.Pools(ctx, "")
	var e *client.APIError
	if !errors.As(err, &e) || e.Status != 401 {
		t.Errorf("wrong token: %v", err)
	}
}
