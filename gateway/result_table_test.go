package gateway

import (
	"testing"

	"github.com/oja-exchange/oja/engine"
)

// Every engine result has exactly one answer in the table: a refusal a
// partner can see never falls through to a 500.
func TestResultErrorsCoverEveryResult(t *testing.T) {
	for r := engine.Result(1); int(r) < engine.ResultCount; r++ {
		e := resultError(r)
		if e.status < 400 || e.status >= 500 || e.code == "" || e.code == codeInternal || e.message == "" {
			t.Errorf("result %s answers %d %q %q", r, e.status, e.code, e.message)
		}
	}
	if e := resultError(engine.Result(engine.ResultCount)); e.status != 500 {
		t.Errorf("a result beyond the table answers %d, want 500", e.status)
	}
}
