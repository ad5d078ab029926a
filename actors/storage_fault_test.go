package actors_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/wal"
)

// Storage faults (spec §9, §12): an fsync or write error on the log
// makes the system refuse every write with ErrUnavailable (the gateway's
// 503 UNAVAILABLE) while reads keep working, Ready reports it (/readyz 503),
// nothing that was not synced is ever acknowledged, and a restart on what
// was synced recovers every acknowledged change. gateway's
// TestStorageFaultHTTP checks the same through HTTP.

var (
	syncOps  = []errorfs.OpKind{errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo}
	writeOps = []errorfs.OpKind{errorfs.OpFileWrite, errorfs.OpFileWriteAt}
)

// faultyFS wraps a crashable filesystem with an injector that, once armed,
// lets `after` matching operations on Pebble's WAL files through and fails
// every later one.
type faultyFS struct {
	crashable *vfs.MemFS
	fs        vfs.FS
	armed     atomic.Bool
	ops       atomic.Int64
}

func newFaultyFS(kinds []errorfs.OpKind, after int64) *faultyFS {
	f := &faultyFS{crashable: vfs.NewCrashableMem()}
	f.fs = errorfs.Wrap(f.crashable, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !f.armed.Load() || !strings.HasSuffix(op.Path, ".log") {
			return nil
		}
		for _, kind := range kinds {
			if op.Kind == kind && f.ops.Add(1) > after {
				return errorfs.ErrInjected
			}
		}
		return nil
	}))
	return f
}

// quietPebble drops Pebble's messages: the injected faults are expected.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(string, ...any) {}

// faultNode is a system on a log over fs.
type faultNode struct {
	log *wal.Log
	sys *actors.System
}

func startFaultNode(t *testing.T, fs vfs.FS, clk *clock) *faultNode {
	t.Helper()
	log, err := wal.Open("store", wal.Options{FS: fs, Sync: true, Logger: quietPebble{}})
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	state, _, err := actors.Recover(log, clk.Now())
	if err != nil {
		_ = log.Close()
		t.Fatalf("recover: %v", err)
	}
	sys, err := actors.Start(state, log, testConfig(clk))
	if err != nil {
		_ = log.Close()
		t.Fatalf("start: %v", err)
	}
	return &faultNode{log: log, sys: sys}
}

// stop stops the node; a failed log's Close reports the failure, which is
// expected here.
func (n *faultNode) stop(t *testing.T, failed bool) {
	t.Helper()
	n.sys.Stop()
	if err := n.log.Close(); (err != nil) != failed || failed && !errors.Is(err, wal.ErrFailed) {
		t.Fatalf("close log: %v (failed log expected: %v)", err, failed)
	}
}

// TestStorageFault fails the log at a quiet moment and checks every write
// path is refused, every read still answers with the acknowledged state,
// nothing after the fault reached the synced data, and a restart serves
// writes again with everything acknowledged.
func TestStorageFault(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kinds []errorfs.OpKind
	}{{"fsync", syncOps}, {"write", writeOps}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			f := newFaultyFS(tc.kinds, 0)
			n := startFaultNode(t, f.fs, clk)
			sys := n.sys
			ada := newClient(t, sys, "ada")
			waitWallets(t, sys, ada)
			pool := newPool(t, sys, engine.ModeSandbox, pairNGNUSDT, "lagos", "0.000625", "1000")
			create := &actors.CreateQuote{Client: ada.ID, Mode: engine.ModeSandbox, Pair: pairNGNUSDT,
				Direction: engine.DirectionDestination, Amount: amount(t, "10", engine.CurrencyUSDT),
				Rate: rate(t, "0.0006"), Chain: engine.ChainTron}
			pending := mustQuote(t, sys, create)
			accepted := mustTransition(t, sys, mustQuote(t, sys, create), jsonAccept(t, ada, pending))
			wallet := walletOf(t, ada, engine.ModeSandbox, engine.CurrencyNGN)
			deposited := sys.DepositAccount(&actors.DepositAccount{MoneyRequest: engine.MoneyRequest{Account: wallet, Amount: 5000}})
			if deposited.Err != nil || deposited.Result != engine.ResultOK {
				t.Fatalf("deposit: %v %s", deposited.Err, deposited.Result)
			}
			waitConverged(t, &node{t: t, log: n.log, sys: sys})
			synced := replayLog(t, n.log).Hash()
			poolBefore, _ := sys.Pool(pool.ID)

			f.armed.Store(true)
			// The first write meets the fault; it and every later one is
			// refused as unavailable, and none is acknowledged.
			if r := sys.CreateQuote(create); !errors.Is(r.Err, actors.ErrUnavailable) {
				t.Fatalf("create quote on a failing log: %v %s, want ErrUnavailable", r.Err, r.Result)
			}
			start := time.Now()
			writes := map[string]func() error{
				"create quote": func() error { return sys.CreateQuote(create).Err },
				"cancel":       func() error { return sys.TransitionQuote(ada.ID, engine.ModeSandbox, pending.ID, cancelOp).Err },
				"accept": func() error {
					return sys.TransitionQuote(ada.ID, engine.ModeSandbox, pending.ID, jsonAccept(t, ada, pending)).Err
				},
				"complete":     func() error { return sys.TransitionQuote(ada.ID, engine.ModeSandbox, accepted.ID, completeOp).Err },
				"pool deposit": func() error { return sys.ChangePool(&actors.PoolCommand{Pool: pool.ID, Deposit: 1}).Err },
				"pool rate":    func() error { return sys.ChangePool(&actors.PoolCommand{Pool: pool.ID, Rate: rate(t, "0.0007")}).Err },
				"wallet deposit": func() error {
					return sys.DepositAccount(&actors.DepositAccount{MoneyRequest: engine.MoneyRequest{Account: wallet, Amount: 1}}).Err
				},
				"new client": func() error { return sys.Admin(&actors.CreateClient{Name: "bayo"}).Err },
				"new pool": func() error {
					return sys.Admin(&actors.CreatePool{Mode: engine.ModeLive, Name: "x", Pair: pairNGNUSDT, Rate: pool.Rate}).Err
				},
			}
			for name, write := range writes {
				if err := write(); !errors.Is(err, actors.ErrUnavailable) {
					t.Errorf("%s on a failed log: %v, want ErrUnavailable", name, err)
				}
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("refusing %d writes on a failed log took %s: it must fail fast", len(writes), d)
			}
			if err := sys.Ready(); !errors.Is(err, actors.ErrUnavailable) {
				t.Errorf("Ready on a failed log: %v, want ErrUnavailable", err)
			}

			// Reads answer with the acknowledged state.
			for _, want := range []*engine.Quote{pending, accepted} {
				got, ok := sys.Quote(ada.ID, engine.ModeSandbox, want.ID)
				if !ok || got.Status != want.Status {
					t.Errorf("quote %s on a failed log: %v %v, want %s", want.ID, got, ok, want.Status)
				}
			}
			if got, ok := sys.Pool(pool.ID); !ok || *got != *poolBefore {
				t.Errorf("pool on a failed log:\ngot  %+v\nwant %+v", got, poolBefore)
			}
			if a, ok := sys.Account(wallet); !ok || a.Balance != 5000 {
				t.Errorf("wallet on a failed log: %+v", a)
			}
			checkSystemLedger(t, sys)

			// Nothing after the fault was synced: a crash keeping only synced
			// data recovers exactly the state before it.
			crashed := f.crashable.CrashClone(vfs.CrashCloneCfg{})
			n.stop(t, true)
			restarted := startFaultNode(t, crashed, clk)
			defer restarted.stop(t, false)
			if got := replayLog(t, restarted.log).Hash(); got != synced {
				t.Fatalf("restart on the synced data: state hash %x, want the state before the fault %x", got, synced)
			}
			for _, want := range []*engine.Quote{pending, accepted} {
				if got, ok := restarted.sys.Quote(ada.ID, engine.ModeSandbox, want.ID); !ok || got.Status != want.Status {
					t.Errorf("acknowledged quote %s after restart: %v %v", want.ID, got, ok)
				}
			}
			if err := restarted.sys.Ready(); err != nil {
				t.Fatalf("Ready after restart: %v", err)
			}
			mustTransition(t, restarted.sys, pending, cancelOp)
			mustQuote(t, restarted.sys, create)
			checkSystemLedger(t, restarted.sys)
		})
	}
}

// TestStorageFaultUnderLoad fails the log in the middle of concurrent
// creates and transitions: every acknowledged change is in the synced data
// (a crash that keeps nothing unsynced still has it), and every request
// after the fault is refused.
func TestStorageFaultUnderLoad(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kinds []errorfs.OpKind
		after int64
	}{{"fsync", syncOps, 40}, {"write", writeOps, 40}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			f := newFaultyFS(tc.kinds, tc.after)
			n := startFaultNode(t, f.fs, clk)
			sys := n.sys
			var clients []*engine.Client
			for i := range 4 {
				c := newClient(t, sys, fmt.Sprintf("partner-%d", i))
				waitWallets(t, sys, c)
				clients = append(clients, c)
			}
			newPool(t, sys, engine.ModeSandbox, pairNGNUSDT, "lagos", "0.000625", "100000")
			newPool(t, sys, engine.ModeLive, pairGHSUSDT, "accra", "0.08", "100000")

			f.armed.Store(true)
			var mu sync.Mutex
			acked := map[engine.QuoteID]engine.Status{}
			var failed atomic.Int64
			var wg sync.WaitGroup
			for w, c := range clients {
				wg.Go(func() {
					for i := 0; failed.Load() < 20; i++ {
						mode, pair := engine.ModeSandbox, pairNGNUSDT
						if (w+i)%2 == 1 {
							mode, pair = engine.ModeLive, pairGHSUSDT
						}
						r := sys.CreateQuote(&actors.CreateQuote{Client: c.ID, Mode: mode, Pair: pair,
							Direction: engine.DirectionDestination, Amount: 1_000_000 + engine.Amount(i), Rate: engine.RateFromUnits(1),
							Chain: engine.ChainTron})
						if r.Err != nil {
							if !errors.Is(r.Err, actors.ErrUnavailable) {
								t.Errorf("create: %v", r.Err)
							}
							failed.Add(1)
							continue
						}
						if r.Result != engine.ResultOK {
							t.Errorf("create: %s", r.Result)
							return
						}
						mu.Lock()
						acked[r.Quote.ID] = r.Quote.Status
						mu.Unlock()
						if i%2 == 0 {
							tr := sys.TransitionQuote(c.ID, mode, r.Quote.ID, cancelOp)
							if tr.Err != nil {
								failed.Add(1)
								continue
							}
							mu.Lock()
							acked[r.Quote.ID] = tr.Quote.Status
							mu.Unlock()
						}
					}
				})
			}
			wg.Wait()
			if err := sys.Ready(); !errors.Is(err, actors.ErrUnavailable) {
				t.Fatalf("Ready after the fault: %v", err)
			}
			if len(acked) == 0 {
				t.Fatal("nothing acknowledged before the fault; the test proves nothing")
			}
			crashed := f.crashable.CrashClone(vfs.CrashCloneCfg{})
			n.stop(t, true)
			restarted := startFaultNode(t, crashed, clk)
			defer restarted.stop(t, false)
			state := replayLog(t, restarted.log)
			for id, status := range acked {
				if q := state.Quotes.Get(id); q == nil || q.Status != status {
					t.Fatalf("acknowledged quote %s (%s) after restart on synced data: %v", id, status, q)
				}
			}
			checkWhole(t, state)
			checkSystemLedger(t, restarted.sys)
			t.Logf("%d quotes acknowledged before the fault, %d requests refused after it", len(acked), failed.Load())
		})
	}
}
