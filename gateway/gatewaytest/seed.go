package gatewaytest

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
)

// Partner is a client with one key per mode.
type Partner struct {
	Client     *engine.Client
	SandboxKey string
	LiveKey    string
}

// NewPartner creates a client and a key in each mode through the actors.
func (s *Server) NewPartner(t testing.TB, name string) Partner {
	t.Helper()
	reply := s.Sys.Admin(&actors.CreateClient{Name: name})
	if reply.Err != nil || reply.Result != engine.ResultOK {
		t.Fatalf("gatewaytest: create client: %v %v", reply.Err, reply.Result)
	}
	p := Partner{Client: reply.Client}
	for _, m := range engine.Modes {
		k := s.Sys.Admin(&actors.CreateKey{Client: p.Client.ID, Mode: m})
		if k.Err != nil || k.Result != engine.ResultOK {
			t.Fatalf("gatewaytest: create key: %v %v", k.Err, k.Result)
		}
		if m == engine.ModeLive {
			p.LiveKey = k.Secret
		} else {
			p.SandboxKey = k.Secret
		}
	}
	return p
}

// NewPool creates an active pool with rate and liquidity given as decimal
// strings, and returns its view.
func (s *Server) NewPool(t testing.TB, mode engine.Mode, pair engine.Pair, name, rate, liquidity string) *engine.Pool {
	t.Helper()
	r, err := engine.RateFromDecimal(decimal.RequireFromString(rate))
	if err != nil {
		t.Fatalf("gatewaytest: rate %s: %v", rate, err)
	}
	reply := s.Sys.Admin(&actors.CreatePool{Mode: mode, Name: name, Pair: pair, Rate: r})
	if reply.Err != nil || reply.Result != engine.ResultOK {
		t.Fatalf("gatewaytest: create pool: %v %v", reply.Err, reply.Result)
	}
	pool := reply.Pool
	if liquidity != "" && liquidity != "0" {
		a, err := engine.AmountFromDecimal(decimal.RequireFromString(liquidity), pair.Destination)
		if err != nil {
			t.Fatalf("gatewaytest: liquidity %s: %v", liquidity, err)
		}
		dep := s.Sys.ChangePool(&actors.PoolCommand{Pool: pool.ID, Deposit: a})
		if dep.Err != nil || dep.Result != engine.ResultOK {
			t.Fatalf("gatewaytest: deposit: %v %v", dep.Err, dep.Result)
		}
		pool = dep.Pool
	}
	// Pools created one after another get distinct rate-set times (price-time
	// priority): the clock moves on a millisecond instead of the test sleeping.
	s.Advance(time.Millisecond)
	return pool
}

// Pairs of the spec, for brevity in tests.
var (
	NGNUSDT = engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyUSDT}
	GHSUSDT = engine.Pair{Source: engine.CurrencyGHS, Destination: engine.CurrencyUSDT}
	NGNGHS  = engine.Pair{Source: engine.CurrencyNGN, Destination: engine.CurrencyGHS}
)
