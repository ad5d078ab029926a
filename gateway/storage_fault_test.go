package gateway_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
)

// TestStorageFaultHTTP (spec §9, §12): once an fsync or write of the log
// fails, every state-changing request answers 503 UNAVAILABLE with
// Retry-After and is not acknowledged, reads keep answering 200 with the
// acknowledged state, /readyz is 503 on both listeners (/livez stays 200),
// and a restart on what was synced serves every acknowledged quote and takes
// writes again. actors' TestStorageFault checks the same below HTTP.
func TestStorageFaultHTTP(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kinds []errorfs.OpKind
	}{
		{"fsync", []errorfs.OpKind{errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo}},
		{"write", []errorfs.OpKind{errorfs.OpFileWrite, errorfs.OpFileWriteAt}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crashable := vfs.NewCrashableMem()
			var armed atomic.Bool
			fs := errorfs.Wrap(crashable, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if armed.Load() && strings.HasSuffix(op.Path, ".log") {
					for _, kind := range tc.kinds {
						if op.Kind == kind {
							return errorfs.ErrInjected
						}
					}
				}
				return nil
			}))
			s := gatewaytest.Start(t, gatewaytest.Options{FS: fs, Sync: true})
			p := s.NewPartner(t, "ada")
			pool := s.NewPool(t, engine.ModeSandbox, gatewaytest.NGNUSDT, "Lagos Desk", "0.000625", "1000")
			body := quoteRequest("NGN", "USDT", "16000", "0.0006", "source")
			pending := mustCreateQuote(t, s, p.SandboxKey, body)
			accepted := mustAccept(t, s, p.SandboxKey, mustCreateQuote(t, s, p.SandboxKey, body))
			ngnWallet := wallet(t, p, engine.ModeSandbox, engine.CurrencyNGN)
			wantOK(t, admin(t, s, http.MethodPost, "/admin/v1/accounts/"+ngnWallet+"/deposit", map[string]any{"amount": n("50"), "reference": nextRef()}))
			syncPool(t, s, pool.ID.String())
			balancesBefore := do(t, http.MethodGet, s.URL+balancesPath, p.SandboxKey, nil, "x-service-source", "fault-test")
			wantStatus(t, balancesBefore, http.StatusOK)

			armed.Store(true)
			pendingID, acceptedID := getString(t, pending, "quoteId"), getString(t, accepted, "quoteId")
			writes := []struct {
				name, method, url, key string
				body                   any
			}{
				{"create quote", http.MethodPost, s.URL + intentPath, p.SandboxKey, body},
				{"create quote again", http.MethodPost, s.URL + intentPath, p.SandboxKey, body},
				{"accept", http.MethodPut, s.URL + quotePath + pendingID + "/accept", p.SandboxKey,
					acceptBody(firstPoolAccount(t, pending))},
				{"cancel", http.MethodPut, s.URL + quotePath + pendingID + "/cancel", p.SandboxKey, nil},
				{"complete", http.MethodPut, s.URL + quotePath + acceptedID + "/complete", p.SandboxKey, nil},
				{"admin client", http.MethodPost, s.Admin + "/admin/v1/clients", gatewaytest.AdminToken, map[string]any{"name": "bayo"}},
				{"admin pool deposit", http.MethodPost, s.Admin + "/admin/v1/pools/" + pool.ID.String() + "/deposit",
					gatewaytest.AdminToken, map[string]any{"amount": n("1")}},
				{"admin wallet deposit", http.MethodPost, s.Admin + "/admin/v1/accounts/" + ngnWallet + "/deposit",
					gatewaytest.AdminToken, map[string]any{"amount": n("1"), "reference": nextRef()}},
			}
			for _, w := range writes {
				r := do(t, w.method, w.url, w.key, w.body)
				wantError(t, r, http.StatusServiceUnavailable, "UNAVAILABLE")
				if retry, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || retry < 1 {
					t.Errorf("%s: Retry-After %q, want whole seconds >= 1", w.name, r.header.Get("Retry-After"))
				}
			}
			// XML writes are refused the same way.
			fxBody := `<FXTradInstr><CcyPair><BaseCcy>NGN</BaseCcy><QtdCcy>USDT</QtdCcy></CcyPair>` +
				`<TradAmts><TradgCcyAmt>16000</TradgCcyAmt></TradAmts><AgrdRate><XchgRate>0.0006</XchgRate></AgrdRate>` +
				`<AmtDrctn>SELL</AmtDrctn></FXTradInstr>`
			if r := do(t, http.MethodPost, s.URL+"/api/v1/partners/fx/trades", p.SandboxKey, fxBody,
				"Content-Type", "application/xml"); r.status != http.StatusServiceUnavailable {
				t.Errorf("XML trade on a failed log: %s, want 503", r)
			}

			// Reads answer with the acknowledged state.
			if got := getString(t, wantOK(t, getQuote(t, s, p.SandboxKey, pendingID)), "status"); got != "pending" {
				t.Errorf("pending quote on a failed log: status %s", got)
			}
			if got := getString(t, wantOK(t, getQuote(t, s, p.SandboxKey, acceptedID)), "status"); got != "awaiting_payment" {
				t.Errorf("accepted quote on a failed log: status %s", got)
			}
			balances := do(t, http.MethodGet, s.URL+balancesPath, p.SandboxKey, nil, "x-service-source", "fault-test")
			wantStatus(t, balances, http.StatusOK)
			if string(balances.body) != string(balancesBefore.body) {
				t.Errorf("balances changed on a failed log:\nbefore %s\nafter  %s", balancesBefore.body, balances.body)
			}
			wantStatus(t, do(t, http.MethodGet, s.URL+balancesPath+"/"+ngnWallet, p.SandboxKey, nil), http.StatusOK)
			wantStatus(t, do(t, http.MethodGet, s.URL+"/api/v1/partners/fx/trades/"+pendingID, p.SandboxKey, nil), http.StatusOK)
			wantStatus(t, admin(t, s, http.MethodGet, "/admin/v1/pools", nil), http.StatusOK)
			if ok := wantOK(t, admin(t, s, http.MethodGet, "/admin/v1/ledger/check?mode=sandbox", nil))["ok"]; ok != true {
				t.Errorf("ledger check on a failed log: ok %v", ok)
			}
			for _, base := range []string{s.URL, s.Admin} {
				wantError(t, do(t, http.MethodGet, base+"/readyz", "", nil), http.StatusServiceUnavailable, "UNAVAILABLE")
				wantStatus(t, do(t, http.MethodGet, base+"/livez", "", nil), http.StatusOK)
			}

			// Restart on what was synced: every acknowledged quote is there, as
			// acknowledged, and writes are taken again.
			crashed := crashable.CrashClone(vfs.CrashCloneCfg{})
			s.Stop()
			s = gatewaytest.Start(t, gatewaytest.Options{FS: crashed, Sync: true})
			wantStatus(t, do(t, http.MethodGet, s.URL+"/readyz", "", nil), http.StatusOK)
			if got := getString(t, wantOK(t, getQuote(t, s, p.SandboxKey, pendingID)), "status"); got != "pending" {
				t.Errorf("pending quote after restart: status %s", got)
			}
			if got := getString(t, wantOK(t, getQuote(t, s, p.SandboxKey, acceptedID)), "status"); got != "awaiting_payment" {
				t.Errorf("accepted quote after restart: status %s", got)
			}
			balances = do(t, http.MethodGet, s.URL+balancesPath, p.SandboxKey, nil, "x-service-source", "fault-test")
			if string(balances.body) != string(balancesBefore.body) {
				t.Errorf("balances after restart:\nbefore the fault %s\nafter restart    %s", balancesBefore.body, balances.body)
			}
			wantOK(t, transition(t, s, p.SandboxKey, acceptedID, "complete", nil))
			mustCreateQuote(t, s, p.SandboxKey, body)
			if ok := wantOK(t, admin(t, s, http.MethodGet, "/admin/v1/ledger/check?mode=sandbox", nil))["ok"]; ok != true {
				t.Errorf("ledger check after restart: ok %v", ok)
			}
		})
	}
}
