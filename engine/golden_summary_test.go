package engine_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/oja-exchange/oja/engine"
)

// goldenSummary describes a State in terms every version of the engine
// since the first release can compute: per mode, the ledger check and
// every account's balance and hold (wallets by client name, pools by
// name, the clearing accounts), then every quote's status and pay-in
// sighting. TestGoldenLogBeforeFundsFirst compares the summary of a log
// written before funds first, replayed today, with the one the engine of
// that time printed (testdata/golden).
func goldenSummary(s *engine.State) string {
	var b strings.Builder
	clientName := func(id [16]byte) string {
		if c, ok := s.Clients[engine.ClientID(id)]; ok {
			return c.Name
		}
		return "?"
	}
	for _, m := range engine.Modes {
		r := s.LedgerCheck(m)
		fmt.Fprintf(&b, "ledger %s ok=%v problems=%d\n", m, r.OK, len(r.Problems))
		currencies := engine.KnownCurrencies()
		for _, c := range currencies {
			fmt.Fprintf(&b, "  %s sum %d accounts %d clearing %d\n", c, r.Currencies[c].Sum, r.Currencies[c].Accounts, s.ClearingBalance(m, c))
		}
		var lines []string
		for _, w := range s.Treasuries[m].Wallets {
			lines = append(lines, fmt.Sprintf("  wallet %s %s balance %d held %d", clientName(w.Owner), w.Currency, w.Balance, w.Held))
		}
		for _, p := range s.Pools {
			if p.Mode == m {
				lines = append(lines, fmt.Sprintf("  pool %s %s liquidity %d held %d proceeds %d accepted %d completed %d",
					p.Name, p.Pair, p.Liquidity.Balance, p.Liquidity.Held, p.Proceeds.Balance, p.Accepted, p.Completed))
			}
		}
		slices.Sort(lines)
		b.WriteString(strings.Join(lines, "\n"))
		b.WriteByte('\n')
	}
	var quotes []*engine.Quote
	for q := range s.Quotes.All() {
		quotes = append(quotes, q)
	}
	slices.SortFunc(quotes, func(a, b *engine.Quote) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	for _, q := range quotes {
		fmt.Fprintf(&b, "quote %s %s %s %s pays %d gets %d settles %s", q.ID, clientName(q.Client), q.Mode, q.Status,
			q.TotalSource(), q.TotalDestination(), q.SettlementOrZero().Kind)
		if p := q.PayIn; p != nil {
			fmt.Fprintf(&b, " payin %s seen %d", p.Deposit, p.SeenAmount)
		}
		b.WriteByte('\n')
	}
	for _, w := range s.WebhooksInOrder() {
		fmt.Fprintf(&b, "webhook %s of %s owes %d dropped %d\n", w.ID, clientName(w.Client), w.OwedCount(), w.Dropped)
	}
	return b.String()
}
