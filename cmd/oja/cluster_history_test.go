package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/oja-exchange/oja/internal/lincheck"
)

// TestClusterLinearizable drives quote lifecycles through every node of a
// three-node cluster while the leader is paused past an election and,
// later, killed and restarted; the history of creates, gets and cancels
// must be linearizable (porcupine, as etcd's robustness tests use it).
func TestClusterLinearizable(t *testing.T) {
	nodes := clusterNodes(t)
	client := newHTTPClient()
	leaderID := leaderOf(t, client, nodes[0], 10*time.Second)
	byID := func(id string) *ojaServer {
		var i int
		fmt.Sscanf(id, "n%d", &i)
		return nodes[i-1]
	}
	key := demoKey(t, byID(leaderID).data)
	body := []byte(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":20000,"rate":0.0006,"amountDirection":"source"}`)

	var (
		mu      sync.Mutex
		history []porcupine.Operation
		down    sync.Map // *ojaServer → true while killed
	)
	record := func(worker int, in lincheck.Input, call int64, out lincheck.Output) {
		ret := time.Now().UnixNano()
		if out.Unknown && in.Op != "get" {
			ret = lincheck.Unanswered // it may take effect at any later time
		}
		mu.Lock()
		history = append(history, porcupine.Operation{ClientId: worker, Input: in, Call: call, Output: out, Return: ret})
		mu.Unlock()
	}
	pick := func(rng *rand.Rand) *ojaServer {
		for {
			s := nodes[rng.IntN(len(nodes))]
			if _, killed := down.Load(s); !killed {
				return s
			}
		}
	}
	began := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				idem := fmt.Sprintf("lin-%d-%d", w, n)
				var id string
				for attempt := 0; id == "" && attempt < 200; attempt++ {
					call := time.Now().UnixNano()
					res, err := do(client, "POST", pick(rng).publicURL()+"/api/v1/partners/marketplace/intent", key, body, "Idempotency-Key", idem)
					in := lincheck.Input{Key: idem, Op: "create"}
					if err != nil || res.status == 503 {
						record(w, in, call, lincheck.Output{Unknown: true})
						time.Sleep(30 * time.Millisecond)
						continue
					}
					if res.status != 200 {
						t.Errorf("create: %d %s", res.status, res.body)
						return
					}
					var q struct {
						QuoteID string `json:"quoteId"`
					}
					decodeJSON(t, res.body, &q)
					id = q.QuoteID
					record(w, in, call, lincheck.Output{Status: "pending"})
				}
				for i := 0; i < 4 && id != ""; i++ {
					s := pick(rng)
					call := time.Now().UnixNano()
					if rng.IntN(3) == 0 {
						res, err := do(client, "PUT", s.publicURL()+"/api/v1/partners/marketplace/quote/"+id+"/cancel", key, nil)
						out := lincheck.Output{Unknown: err != nil || res.status == 503}
						switch {
						case out.Unknown:
						case res.status == 200:
							out.Status = "ok"
						case res.status == 409:
							out.Status = "refused"
						default:
							t.Errorf("cancel: %d %s", res.status, res.body)
							return
						}
						record(w, lincheck.Input{Key: idem, Op: "cancel"}, call, out)
						continue
					}
					res, err := do(client, "GET", s.publicURL()+"/api/v1/partners/marketplace/quote/"+id, key, nil)
					if err != nil || res.status == 503 {
						continue // a read that was not answered says nothing
					}
					out := lincheck.Output{Status: "not found"}
					if res.status == 200 {
						var q struct {
							Status string `json:"status"`
						}
						decodeJSON(t, res.body, &q)
						out.Status = q.Status
					}
					record(w, lincheck.Input{Key: idem, Op: "get"}, call, out)
				}
			}
		}()
	}

	// Faults: pause the leader past an election, then kill another one.
	time.Sleep(1500 * time.Millisecond)
	paused := byID(leaderID)
	var witness *ojaServer // a node that is not paused, to ask about terms
	for _, n := range nodes {
		if n != paused {
			witness = n
			break
		}
	}
	_, termBefore := clusterTerm(t, client, witness, 10*time.Second, nil)
	if err := paused.proc.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The pause must outlast an election: the others elect a leader in a
	// later term (seen from the witness) before the paused one wakes.
	newLeader, termAfter := clusterTerm(t, client, witness, 20*time.Second, func(leader string, term uint64) bool {
		return term > termBefore && leader != leaderID
	})
	t.Logf("paused %s in term %d; %s leads in term %d", leaderID, termBefore, newLeader, termAfter)
	if err := paused.proc.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	killed := byID(leaderOf(t, client, nodes[0], 10*time.Second))
	down.Store(killed, true)
	killed.crash()
	time.Sleep(3 * time.Second)
	if err := killed.startOnce(); err != nil {
		t.Fatal(err)
	}
	down.Delete(killed)
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()

	t.Logf("load and faults done after %v", time.Since(began).Round(time.Millisecond))
	checkStart := time.Now()
	res, report := lincheck.Check(history, 60*time.Second, filepath.Join(t.TempDir(), "history.html"))
	t.Logf("%d operations over %d quotes: %s (checked in %v)", len(history), len(lincheck.Model.Partition(history)), res, time.Since(checkStart).Round(time.Millisecond))
	if res != porcupine.Ok {
		t.Fatalf("the history is not linearizable (%s):\n%s", res, report)
	}
}
