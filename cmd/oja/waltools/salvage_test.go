package waltools

import (
	"bytes"
	"strings"
	"testing"

	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/wal"
)

// TestSalvageReportGroupsOtherEvents: what salvage lost that is not a
// quote's is counted by type on one line (78 rate changes are not 78
// lines); --verbose lists each; lost quotes are always listed.
func TestSalvageReportGroupsOtherEvents(t *testing.T) {
	res := &wal.SalvageResult{LastIntact: 10, FirstRetained: 1, Acknowledged: 15, PastDamage: map[uint64][]byte{}}
	pool := engine.PoolID{1}
	for i, ev := range []engine.Event{
		&engine.PoolRateSet{At: 1, Pool: pool, Rate: engine.RateFromUnits(1)},
		&engine.PoolRateSet{At: 2, Pool: pool, Rate: engine.RateFromUnits(2)},
		&engine.PoolDeposited{At: 3, Pool: pool, Amount: 5},
		&engine.PoolRateSet{At: 4, Pool: pool, Rate: engine.RateFromUnits(3)},
		&engine.QuoteExpired{At: 5, Quote: engine.QuoteID{9}},
	} {
		res.PastDamage[uint64(11+i)] = engine.AppendEvent(nil, ev)
	}
	for _, verbose := range []bool{false, true} {
		var out bytes.Buffer
		reportLoss(&out, res, engine.NewState(), verbose)
		text := out.String()
		if !strings.Contains(text, "lost other events: 4 (PoolRateSet 3, PoolDeposited 1)\n") {
			t.Errorf("verbose %v: no grouped line:\n%s", verbose, text)
		}
		if lines := strings.Count(text, "\n  seq "); verbose && lines != 4 || !verbose && lines != 0 {
			t.Errorf("verbose %v: %d events listed one by one:\n%s", verbose, lines, text)
		}
		if !strings.Contains(text, "QuoteExpired (seq 15)") {
			t.Errorf("verbose %v: the lost quote is not listed:\n%s", verbose, text)
		}
	}
}
