package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	ojaclient "github.com/oja-exchange/oja/client"
	"github.com/oja-exchange/oja/internal/poll"
)

// clusterRounds is how many leaders TestClusterFailover kills: 2 in
// make test, more in make torture.
var clusterRounds = flag.Int("cluster-rounds", 2, "leader kills in TestClusterFailover")

// clusterNodes starts three `oja serve --cluster` processes on loopback
// (fresh data dirs, --demo) and returns them once every node is ready.
func clusterNodes(t *testing.T, flags ...string) []*ojaServer {
	t.Helper()
	dir := t.TempDir()
	type member struct {
		ID     string `json:"id"`
		Raft   string `json:"raft"`
		Public string `json:"public"`
		Admin  string `json:"admin"`
	}
	var file struct {
		Nodes []member `json:"nodes"`
	}
	nodes := make([]*ojaServer, 3)
	for i := range nodes {
		id := fmt.Sprintf("n%d", i+1)
		m := member{ID: id, Raft: freeAddr(t), Public: freeAddr(t), Admin: freeAddr(t)}
		file.Nodes = append(file.Nodes, m)
		s := newOjaServer(t)
		s.public, s.admin = m.Public, m.Admin
		s.extra = append([]string{"--cluster", filepath.Join(dir, "cluster.json"), "--node", id, "--demo", "--max-key-share", "1"}, flags...)
		s.starts = 1 // the addresses are the file's: never pick new ones
		nodes[i] = s
	}
	b, _ := json.Marshal(file)
	if err := os.WriteFile(filepath.Join(dir, "cluster.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	// Mutual TLS between the nodes, with certificates made as an operator
	// makes them.
	certs := filepath.Join(dir, "certs")
	if _, errOut, code := runOja(t, nodes[0].bin, childEnv(), "cluster", "certs", "--cluster", filepath.Join(dir, "cluster.json"), "--out", certs); code != 0 {
		t.Fatalf("oja cluster certs: exit %d: %s", code, errOut)
	}
	for _, s := range nodes {
		s.extra = append(s.extra, "--cluster-tls", certs)
	}
	// A node is ready once it knows a leader, so they start together.
	errs := make(chan error, len(nodes))
	for _, s := range nodes {
		go func() { errs <- s.startOnce() }()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

type clusterView struct {
	Leader *string           `json:"leader"`
	Term   uint64            `json:"term"`
	Nodes  []clusterViewNode `json:"nodes"`
}

type clusterViewNode struct {
	ID           string `json:"id"`
	Raft         string `json:"raft"`
	State        string `json:"state"`
	AppliedIndex uint64 `json:"appliedIndex"`
}

// leaderOf asks s for the cluster status until it names a leader.
func leaderOf(t *testing.T, client *http.Client, s *ojaServer, within time.Duration) string {
	t.Helper()
	return poll.For(t, within, func() (string, string) {
		res, err := do(client, "GET", s.adminURL()+"/admin/v1/cluster", crashAdminToken, nil)
		if err == nil && res.status == 200 {
			var v clusterView
			decodeJSON(t, res.body, &v)
			if v.Leader != nil {
				return *v.Leader, ""
			}
		}
		return "", "no leader known to " + s.admin
	})
}

// clusterTerm asks s for the cluster status until it names a leader (and,
// with ok, until ok holds of it), and returns the leader and the term;
// failing the test after within.
func clusterTerm(t *testing.T, client *http.Client, s *ojaServer, within time.Duration, ok func(leader string, term uint64) bool) (string, uint64) {
	t.Helper()
	var last clusterView
	poll.Until(t, within, func() string {
		res, err := do(client, "GET", s.adminURL()+"/admin/v1/cluster", crashAdminToken, nil)
		if err == nil && res.status == 200 {
			last = clusterView{}
			decodeJSON(t, res.body, &last)
			if last.Leader != nil && (ok == nil || ok(*last.Leader, last.Term)) {
				return ""
			}
		}
		return fmt.Sprintf("%s: no leader in the wanted term (last status: leader %v, term %d)", s.admin, last.Leader, last.Term)
	})
	return *last.Leader, last.Term
}

// ackedQuote is a quote the cluster acknowledged.
type ackedQuote struct {
	id        string
	cancelled bool      // the cancel was acknowledged too
	at        time.Time // when the create was acknowledged
}

// quoteTTLDefault is `oja serve`'s --quote-ttl, which the cluster tests
// keep: an uncancelled quote older than it may be expired.
const quoteTTLDefault = 300 * time.Second

// TestClusterFailover runs three real nodes, loads them through every node
// from several clients, SIGKILLs the leader mid-load, and requires: a new
// leader serving within 10 s; every acknowledged quote and cancel present
// through every surviving node; one quote per Idempotency-Key however
// often a client retried through the failover; the ledger balanced; and,
// once the old leader is back, all three replicas at the same {seq, hash}.
func TestClusterFailover(t *testing.T) {
	nodes := clusterNodes(t)
	client := newHTTPClient()
	leaderID := leaderOf(t, client, nodes[0], 10*time.Second)
	node := func(id string) *ojaServer {
		for i, s := range nodes {
			if fmt.Sprintf("n%d", i+1) == id {
				return s
			}
		}
		t.Fatalf("unknown node %q", id)
		return nil
	}
	key := demoKey(t, node(leaderID).data)

	// A rate stream asked of a follower is relayed from the leader.
	for i, s := range nodes {
		if fmt.Sprintf("n%d", i+1) != leaderID {
			requireRateEvent(t, s.publicURL(), key)
			break
		}
	}

	rounds := *clusterRounds
	var (
		mu     sync.Mutex
		acked  = map[string]*ackedQuote{} // by Idempotency-Key
		keyN   atomic.Int64
		alive  atomic.Pointer[[]*ojaServer]
		served atomic.Int64
	)
	all := append([]*ojaServer(nil), nodes...)
	alive.Store(&all)
	body := []byte(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":20000,"rate":0.0006,"amountDirection":"source"}`)
	// createRetrying sends one create through the nodes in turn until it
	// is answered 200 (the same Idempotency-Key every time) or 20 s pass.
	createRetrying := func(worker int) {
		idem := fmt.Sprintf("cluster-%d-%d", worker, keyN.Add(1))
		stop := time.Now().Add(20 * time.Second)
		for attempt := 0; time.Now().Before(stop); attempt++ {
			ns := *alive.Load()
			s := ns[(worker+attempt)%len(ns)]
			res, err := do(client, "POST", s.publicURL()+"/api/v1/partners/marketplace/intent", key, body, "Idempotency-Key", idem)
			if err != nil || res.status == 503 {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			if res.status != 200 {
				t.Errorf("create through %s: %d %s", s.public, res.status, res.body)
				return
			}
			var q struct {
				QuoteID string `json:"quoteId"`
			}
			decodeJSON(t, res.body, &q)
			mu.Lock()
			if prev, ok := acked[idem]; ok && prev.id != q.QuoteID {
				t.Errorf("Idempotency-Key %s answered with two quotes: %s and %s", idem, prev.id, q.QuoteID)
			}
			aq := &ackedQuote{id: q.QuoteID, at: time.Now()}
			acked[idem] = aq
			mu.Unlock()
			served.Add(1)
			if worker%2 == 0 { // half the workers cancel what they create
				res, err := do(client, "PUT", s.publicURL()+"/api/v1/partners/marketplace/quote/"+q.QuoteID+"/cancel", key, nil)
				if err == nil && res.status == 200 {
					mu.Lock()
					aq.cancelled = true
					mu.Unlock()
				}
			}
			return
		}
		t.Errorf("create %s: no 200 within 20 s of retries", idem)
	}

	for round := 1; round <= rounds; round++ {
		var wg sync.WaitGroup
		quit := make(chan struct{})
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-quit:
						return
					default:
					}
					createRetrying(w)
				}
			}()
		}
		time.Sleep(1500 * time.Millisecond)
		leader := node(leaderID)
		before := served.Load()
		killedAt := time.Now()
		leader.crash()
		var survivors []*ojaServer
		for _, s := range nodes {
			if s != leader {
				survivors = append(survivors, s)
			}
		}
		alive.Store(&survivors)
		// A new leader serves: acknowledgements resume within 10 s.
		poll.True(t, 10*time.Second, fmt.Sprintf("round %d: writes acknowledged after killing leader %s", round, leaderID),
			func() bool { return served.Load() >= before+5 })
		t.Logf("round %d: writes acknowledged again %v after SIGKILL of leader %s", round, time.Since(killedAt).Round(time.Millisecond), leaderID)
		time.Sleep(500 * time.Millisecond)
		close(quit)
		wg.Wait()
		if t.Failed() {
			return
		}

		// Every acknowledged quote and cancel, through every survivor.
		mu.Lock()
		for idem, aq := range acked {
			for _, s := range survivors {
				res := mustDo(t, client, 200, "GET", s.publicURL()+"/api/v1/partners/marketplace/quote/"+aq.id, key, nil)
				var q struct {
					Status string `json:"status"`
				}
				decodeJSON(t, res.body, &q)
				// 20 rounds (make torture) outlive the quote TTL: an
				// uncancelled quote older than it may have expired (its
				// create may precede the acknowledgement by the 20 s of
				// retries, hence the slack).
				expiredOK := q.Status == "expired" && time.Since(aq.at) > quoteTTLDefault-30*time.Second
				if aq.cancelled && q.Status != "cancelled" ||
					!aq.cancelled && q.Status != "pending" && q.Status != "cancelled" && !expiredOK {
					t.Fatalf("round %d: quote %s (key %s) through %s: status %s, cancel acknowledged: %v", round, aq.id, idem, s.public, q.Status, aq.cancelled)
				}
			}
		}
		t.Logf("round %d: %d acknowledged quotes all present on the survivors", round, len(acked))
		mu.Unlock()
		var ledger struct {
			OK bool `json:"ok"`
		}
		decodeJSON(t, mustDo(t, client, 200, "GET", survivors[0].adminURL()+"/admin/v1/ledger/check?mode=sandbox", crashAdminToken, nil).body, &ledger)
		if !ledger.OK {
			t.Fatalf("round %d: ledger check not ok after failover", round)
		}

		// The old leader restarts, catches up, and every replica agrees.
		if err := leader.startOnce(); err != nil {
			t.Fatalf("round %d: restarting the old leader: %v", round, err)
		}
		alive.Store(&all)
		sameState(t, client, nodes, 20*time.Second)
		leaderID = leaderOf(t, client, nodes[0], 10*time.Second)
	}
}

// demoKey waits for the demo's sandbox key in a node's data dir (the node
// that led first writes it).
func demoKey(t *testing.T, data string) string {
	t.Helper()
	return poll.For(t, 10*time.Second, func() (string, string) {
		b, _ := os.ReadFile(filepath.Join(data, "demo.key"))
		if key := strings.TrimSpace(string(b)); key != "" {
			return key, ""
		}
		return "", "no demo key in " + data
	})
}

// sameState waits until every node reports the same {seq, hash}.
func sameState(t *testing.T, client *http.Client, nodes []*ojaServer, within time.Duration) {
	t.Helper()
	var last []string
	poll.Until(t, within, func() string {
		last = last[:0]
		for _, s := range nodes {
			res, err := do(client, "GET", s.adminURL()+"/admin/v1/state", crashAdminToken, nil)
			if err != nil || res.status != 200 {
				last = append(last, fmt.Sprintf("%s: %v %d", s.admin, err, res.status))
				continue
			}
			last = append(last, string(res.body))
		}
		for _, v := range last[1:] {
			if v != last[0] {
				return fmt.Sprintf("replicas disagree: %q", last)
			}
		}
		if !strings.HasPrefix(last[0], `{"seq":`) {
			return fmt.Sprintf("no state: %q", last)
		}
		return ""
	})
	t.Logf("all replicas at %s", last[0])
}

// TestClusterFencing pauses the leader (SIGSTOP) past the election timeout
// with creates queued on its listener, lets a new leader take writes, then
// resumes it: none of the old leader's answers may be a 2xx for a quote the
// cluster lacks, and all three replicas end at the same {seq, hash}. Then a
// follower's data dir is wiped and its replacement (--join, `oja admin
// cluster replace`) catches up to the same {seq, hash}.
func TestClusterFencing(t *testing.T) {
	nodes := clusterNodes(t)
	client := newHTTPClient()
	slow := &http.Client{Timeout: 30 * time.Second}
	oldID := leaderOf(t, client, nodes[0], 10*time.Second)
	var old *ojaServer
	var survivors []*ojaServer
	for i, s := range nodes {
		if fmt.Sprintf("n%d", i+1) == oldID {
			old = s
		} else {
			survivors = append(survivors, s)
		}
	}
	key := demoKey(t, old.data)
	body := []byte(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":20000,"rate":0.0006,"amountDirection":"source"}`)

	// A rate stream on the leader, which it will lose while paused.
	stream := openRateStream(t, old.publicURL(), key)

	if err := old.proc.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer old.proc.cmd.Process.Signal(syscall.SIGCONT)
	type answer struct {
		res httpResult
		err error
	}
	answers := make(chan answer, 8)
	for i := 0; i < cap(answers); i++ {
		go func() {
			res, err := do(slow, "POST", old.publicURL()+"/api/v1/partners/marketplace/intent", key, body, "Idempotency-Key", fmt.Sprintf("paused-%d", i))
			answers <- answer{res, err}
		}()
	}
	// A new leader among the others.
	newID, _ := clusterTerm(t, client, survivors[0], 15*time.Second, func(leader string, _ uint64) bool { return leader != oldID })
	for i := 0; i < 5; i++ {
		for attempt := 0; ; attempt++ {
			res, err := do(client, "POST", survivors[i%2].publicURL()+"/api/v1/partners/marketplace/intent", key, body, "Idempotency-Key", fmt.Sprintf("new-leader-%d", i))
			if err == nil && res.status == 200 {
				break
			}
			if attempt > 100 {
				t.Fatalf("the new leader %s took no write: %v %d %s", newID, err, res.status, res.body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := old.proc.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	// The demoted leader's stream must not go silent: it ends (its client
	// reconnects to whoever leads now), or rates resume, within 10 s.
	if how, err := stream.endsOrMoves(resumed, 10*time.Second); err != nil {
		t.Errorf("the demoted leader's rate stream: %v", err)
	} else {
		t.Logf("the demoted leader's rate stream %s %v after SIGCONT", how, time.Since(resumed).Round(time.Millisecond))
	}
	acked, statuses := 0, map[string]int{}
	for i := 0; i < cap(answers); i++ {
		a := <-answers
		if a.err != nil {
			statuses["no answer"]++
			continue
		}
		statuses[fmt.Sprint(a.res.status)]++
		if a.res.status/100 != 2 {
			continue
		}
		acked++
		var q struct {
			QuoteID string `json:"quoteId"`
		}
		decodeJSON(t, a.res.body, &q)
		for _, s := range survivors {
			mustDo(t, client, 200, "GET", s.publicURL()+"/api/v1/partners/marketplace/quote/"+q.QuoteID, key, nil)
		}
	}
	t.Logf("the paused leader %s answered the %d writes queued while it was paused %v; the %d acknowledged are on the survivors (new leader %s)",
		oldID, cap(answers), statuses, acked, newID)
	clusterFundsFirst(t, old, survivors[0])
	sameState(t, client, nodes, 20*time.Second)

	// `oja admin cluster` through the old leader: all three, one leader.
	out, errOut, code := runOja(t, old.bin, childEnv("OJA_ADMIN_TOKEN="+crashAdminToken), "admin", "--addr", old.adminURL(), "cluster")
	var v clusterView
	decodeJSON(t, []byte(out), &v)
	leaders := 0
	for _, n := range v.Nodes {
		if n.State == "leader" {
			leaders++
		}
	}
	if code != 0 || v.Leader == nil || len(v.Nodes) != 3 || leaders != 1 {
		t.Fatalf("oja admin cluster: exit %d, %s %s", code, out, errOut)
	}

	// A follower's disk dies: a fresh node joins under its id and the
	// leader replaces the member (`oja admin cluster replace`).
	var lost *ojaServer
	for i, s := range nodes {
		if fmt.Sprintf("n%d", i+1) != *v.Leader {
			lost = s
			break
		}
	}
	lostID := fmt.Sprintf("n%d", slices.Index(nodes, lost)+1)
	lost.crash()
	if err := os.RemoveAll(lost.data); err != nil {
		t.Fatal(err)
	}
	lost.extra = append(lost.extra, "--join")
	lost.joining = true
	if err := lost.startOnce(); err != nil {
		t.Fatal(err)
	}
	// Asked of the leader: the fresh node knows none until the leader
	// reaches it.
	current := nodes[slices.IndexFunc(nodes, func(s *ojaServer) bool { return s != lost && fmt.Sprintf("n%d", slices.Index(nodes, s)+1) == *v.Leader })]
	out, errOut, code = runOja(t, old.bin, childEnv("OJA_ADMIN_TOKEN="+crashAdminToken), "admin", "--addr", current.adminURL(), "cluster", "replace", lostID)
	if code != 0 {
		t.Fatalf("oja admin cluster replace %s: exit %d, %s %s", lostID, code, out, errOut)
	}
	sameState(t, client, nodes, 20*time.Second)
}

// requireRateEvent opens the rate stream at base and requires a
// rate_update event within 5 s.
func requireRateEvent(t *testing.T, base, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/partners/marketplace/rates/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("rate stream through %s: %v", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("rate stream through %s: %d %s", base, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "event: rate_update" {
			return
		}
	}
	t.Fatalf("rate stream through %s: no rate_update event (%v)", base, sc.Err())
}

// rateStream reads a rate stream's lines on its own goroutine.
type rateStream struct {
	lines chan streamLine // closed at the end of the stream
	resp  *http.Response
}

// streamLine is one line of a stream and when it was read.
type streamLine struct {
	text string
	at   time.Time
}

// openRateStream opens GET /partners/marketplace/rates/stream on base.
func openRateStream(t *testing.T, base, key string) *rateStream {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/api/v1/partners/marketplace/rates/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := (&http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 10 * time.Second}}).Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("rate stream: %v %v", err, resp)
	}
	s := &rateStream{lines: make(chan streamLine, 1024), resp: resp}
	t.Cleanup(func() { resp.Body.Close() })
	go func() {
		defer close(s.lines)
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			select {
			case s.lines <- streamLine{line, time.Now()}:
			default: // nobody reads that far behind: drop
			}
		}
	}()
	return s
}

// endsOrMoves waits, until since+within, for the stream to end or to carry
// a rate_update read after since (lines read before are skipped).
func (s *rateStream) endsOrMoves(since time.Time, within time.Duration) (string, error) {
	deadline := time.NewTimer(time.Until(since.Add(within)))
	defer deadline.Stop()
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				return "ended", nil
			}
			if strings.HasPrefix(line.text, "event: rate_update") && line.at.After(since) {
				return "moved", nil
			}
		case <-deadline.C:
			return "", fmt.Errorf("neither ended nor carried a rate within %v: silent", within)
		}
	}
}

// clusterFundsFirst runs a live quote through two nodes that may both be
// followers (each forwards to the leader): the operator's calls through
// one, the partner's through the other; the completion is refused until
// a bank receipt covers it, then settles, and the wallet's statement says
// so. The caller then checks the replicas are equal.
func clusterFundsFirst(t *testing.T, operatorNode, partnerNode *ojaServer) {
	t.Helper()
	ctx := context.Background()
	admin, err := ojaclient.NewAdmin(operatorNode.adminURL(), crashAdminToken)
	if err != nil {
		t.Fatal(err)
	}
	d := decimal.RequireFromString
	retry := func(what string, f func() error) {
		t.Helper()
		var err error
		poll.Until(t, 15*time.Second, func() string {
			var apiErr *ojaclient.APIError
			if err = f(); err != nil && errors.As(err, &apiErr) && apiErr.Status == 503 {
				return fmt.Sprintf("%s: still %v", what, err)
			}
			return ""
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	var desk ojaclient.Partner
	retry("create client", func() (err error) { desk, err = admin.CreateClient(ctx, "cluster desk"); return err })
	var key ojaclient.APIKey
	retry("create key", func() (err error) { key, err = admin.CreateKey(ctx, desk.ClientID, ojaclient.ModeLive); return err })
	var pool ojaclient.Pool
	retry("create pool", func() (err error) {
		pool, err = admin.CreatePool(ctx, ojaclient.CreatePoolRequest{Mode: ojaclient.ModeLive, Name: "cluster desk pool",
			Source: "NGN", Destination: "USDT", Rate: d("0.000625")})
		return err
	})
	retry("deposit", func() error { return discard(admin.DepositPool(ctx, pool.PoolID, d("100"))) })
	partner, err := ojaclient.New(partnerNode.publicURL(), key.Key)
	if err != nil {
		t.Fatal(err)
	}
	var q ojaclient.Quote
	retry("create quote", func() (err error) {
		q, err = partner.CreateQuote(ctx, ojaclient.CreateQuoteRequest{SourceCurrency: "NGN", DestinationCurrency: "USDT",
			Amount: d("16000"), Rate: d("0.0006"), AmountDirection: ojaclient.DirectionSource})
		return err
	})
	retry("accept", func() (err error) { q, err = partner.AcceptQuote(ctx, q.QuoteID, pool.PoolAccountID); return err })
	var apiErr *ojaclient.APIError
	if _, err := partner.CompleteQuote(ctx, q.QuoteID); !errors.As(err, &apiErr) || apiErr.Code != "INSUFFICIENT_FUNDS" {
		t.Fatalf("an unfunded live completion through a follower: %v, want INSUFFICIENT_FUNDS", err)
	}
	retry("bank receipt", func() error {
		return discard(admin.RecordBankReceipt(ctx, ojaclient.BankReceipt{Reference: q.Metadata.BankPayIn.Reference, Amount: d("16000"), BankTransactionID: "NIP-CLUSTER-1"}))
	})
	retry("complete", func() error { return discard(partner.CompleteQuote(ctx, q.QuoteID)) })
	ngn, err := partner.BalancesByCurrency(ctx, "NGN")
	if err != nil || len(ngn) != 1 {
		t.Fatalf("NGN wallets: %v %+v", err, ngn)
	}
	var lines []string
	for p, err := range partner.Transactions(ctx, ngn[0].AccountID) {
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, p.Type+" "+p.Amount.String())
	}
	if got := strings.Join(lines, ", "); got != "settlement -16000, payin 16000" {
		t.Fatalf("the NGN statement through a follower: %s", got)
	}
}

// TestClusterBackup: `oja admin backup DIR` on a follower writes its
// replica at a committed record as a single node's data dir: `oja wal
// verify` accepts it, and `oja serve --data DIR` serves the quotes made
// through the cluster, with a ledger that sums to zero, and takes new
// writes after them.
func TestClusterBackup(t *testing.T) {
	nodes := clusterNodes(t)
	client := newHTTPClient()
	defer client.CloseIdleConnections()
	leader, follower, key := leaderFollowerKey(t, client, nodes)
	var made []string
	for range 5 {
		var q map[string]any
		decodeJSON(t, mustDo(t, client, http.StatusOK, "POST", leader.publicURL()+"/api/v1/partners/marketplace/intent", key,
			[]byte(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":16000,"rate":0.0006,"amountDirection":"source"}`)).body, &q)
		made = append(made, str(q, "quoteId"))
	}
	mustDo(t, client, http.StatusOK, "PUT", leader.publicURL()+quotePath+made[0]+"/cancel", key, nil)
	sameState(t, client, nodes, 20*time.Second)

	dir := filepath.Join(t.TempDir(), "backup")
	env := childEnv("OJA_ADMIN_TOKEN=" + crashAdminToken)
	if out, errOut, code := runOja(t, follower.bin, env, "admin", "--addr", follower.adminURL(), "backup", dir); code != 0 {
		t.Fatalf("oja admin backup on a follower: exit %d: %s %s", code, out, errOut)
	}
	if out, errOut, code := runOja(t, follower.bin, env, "wal", "verify", "--data", dir); code != 0 {
		t.Fatalf("oja wal verify on the backup: exit %d: %s %s", code, out, errOut)
	}
	single := newOjaServer(t)
	single.data = dir
	single.start()
	for i, id := range made {
		var q map[string]any
		decodeJSON(t, mustDo(t, client, http.StatusOK, "GET", single.publicURL()+quotePath+id, key, nil).body, &q)
		if want := map[bool]string{true: "cancelled", false: "pending"}[i == 0]; str(q, "status") != want {
			t.Fatalf("quote %s in the backup: %s, want %s", id, str(q, "status"), want)
		}
	}
	var ledger struct{ OK bool }
	decodeJSON(t, mustDo(t, client, http.StatusOK, "GET", single.adminURL()+"/admin/v1/ledger/check?mode=sandbox", crashAdminToken, nil).body, &ledger)
	if !ledger.OK {
		t.Fatal("the backup's ledger does not sum to zero")
	}
	var after map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusOK, "POST", single.publicURL()+"/api/v1/partners/marketplace/intent", key,
		[]byte(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":16000,"rate":0.0006,"amountDirection":"source"}`)).body, &after)
	single.crash() // the write after the backup's snapshot survives kill -9
	single.start()
	mustDo(t, client, http.StatusOK, "GET", single.publicURL()+quotePath+str(after, "quoteId"), key, nil)
	// A second backup into the same directory is refused.
	if _, errOut, code := runOja(t, follower.bin, env, "admin", "--addr", follower.adminURL(), "backup", dir); code == 0 || !strings.Contains(errOut, "already holds a store") {
		t.Fatalf("a second backup into %s: exit %d, %s", dir, code, errOut)
	}

	// A new cluster seeded from a backup: its first node starts alone from
	// it (--from-backup), a second joins, and both hold the quotes.
	seedDir := filepath.Join(t.TempDir(), "seed")
	if out, errOut, code := runOja(t, leader.bin, env, "admin", "--addr", leader.adminURL(), "backup", seedDir); code != 0 {
		t.Fatalf("oja admin backup: exit %d: %s %s", code, out, errOut)
	}
	seeded := seededCluster(t, seedDir, env)
	sameState(t, client, seeded, 20*time.Second)
	for i, id := range made {
		var q map[string]any
		decodeJSON(t, mustDo(t, client, http.StatusOK, "GET", seeded[1].publicURL()+quotePath+id, key, nil).body, &q)
		if want := map[bool]string{true: "cancelled", false: "pending"}[i == 0]; str(q, "status") != want {
			t.Fatalf("quote %s in the seeded cluster: %s, want %s", id, str(q, "status"), want)
		}
	}
	decodeJSON(t, mustDo(t, client, http.StatusOK, "GET", seeded[1].adminURL()+"/admin/v1/ledger/check?mode=sandbox", crashAdminToken, nil).body, &ledger)
	if !ledger.OK {
		t.Fatal("the seeded cluster's ledger does not sum to zero")
	}
	mustDo(t, client, http.StatusOK, "POST", seeded[1].publicURL()+"/api/v1/partners/marketplace/intent", key,
		[]byte(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":16000,"rate":0.0006,"amountDirection":"source"}`))
	sameState(t, client, seeded, 20*time.Second)

	// The log tools on a cluster node's data dir: refused while it runs;
	// once it is stopped, they read its Raft log, and the replay ends in
	// the state the node reported.
	if _, errOut, code := runOja(t, follower.bin, env, "wal", "stats", "--data", follower.data); code != 3 || !strings.Contains(errOut, "in use by a running node") {
		t.Fatalf("wal stats on a running node: exit %d, %s", code, errOut)
	}
	var state struct {
		Seq  uint64 `json:"seq"`
		Hash string `json:"hash"`
	}
	decodeJSON(t, mustDo(t, client, http.StatusOK, "GET", follower.adminURL()+"/admin/v1/state", crashAdminToken, nil).body, &state)
	follower.stop()
	for _, args := range [][]string{{"stats"}, {"dump", "--limit", "3"}, {"verify"}, {"replay", "--until", fmt.Sprint(state.Seq)}} {
		out, errOut, code := runOja(t, follower.bin, env, append(append([]string{"wal"}, args...), "--data", follower.data)...)
		if code != 0 {
			t.Fatalf("oja wal %s on a stopped node: exit %d: %s %s", args[0], code, out, errOut)
		}
		switch args[0] {
		case "stats":
			// NB: the demo's simulator may write between the state's
			// reading and the stop: the log holds at least that much.
			var last uint64
			for _, line := range strings.Split(out, "\n") {
				if rest, ok := strings.CutPrefix(line, "last seq"); ok {
					fmt.Sscan(rest, &last)
				}
			}
			if last < state.Seq || !strings.Contains(out, "QuoteCreated") {
				t.Fatalf("wal stats: %s (the node reported seq %d)", out, state.Seq)
			}
		case "dump":
			if lines := strings.Count(out, "\n"); lines != 3 {
				t.Fatalf("wal dump --limit 3: %d lines: %s", lines, out)
			}
		case "replay":
			if !strings.Contains(out, fmt.Sprintf("state as of seq %d ", state.Seq)) || !strings.Contains(out, "state hash "+state.Hash) {
				t.Fatalf("wal replay: %s; the node reported seq %d hash %s", out, state.Seq, state.Hash)
			}
		}
	}
	if _, errOut, code := runOja(t, follower.bin, env, "wal", "salvage", "--data", follower.data, "--to", t.TempDir()); code != 2 || !strings.Contains(errOut, "is a cluster node's") {
		t.Fatalf("wal salvage on a cluster node: exit %d, %s", code, errOut)
	}
}

// leaderFollowerKey waits for a leader and returns it, a follower, and the
// demo's sandbox key (written by the first leader once it seeded).
func leaderFollowerKey(t *testing.T, client *http.Client, nodes []*ojaServer) (leader, follower *ojaServer, key string) {
	t.Helper()
	leaderID := leaderOf(t, client, nodes[0], 10*time.Second)
	for i, s := range nodes {
		if fmt.Sprintf("n%d", i+1) == leaderID {
			leader = s
		} else {
			follower = s
		}
	}
	return leader, follower, demoKey(t, leader.data)
}

// clientOf is an HTTP client that trusts s's certificate (and speaks plain
// HTTP to anyone).
func clientOf(s *ojaServer) *http.Client {
	c := newHTTPClient()
	c.Transport.(*http.Transport).TLSClientConfig = s.tls
	return c
}

// flagValue is the value after flag in args.
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// TestClusterMembership: a fourth and a fifth node with new ids join a
// running cluster of three (each started with --join and a certificate
// from `oja cluster certs --node`, then `oja admin cluster add`), catch up
// to the same {seq, hash} and serve: a quote created through the newest
// (its public listener on HTTPS, --tls-cert) is forwarded to the leader
// over the mutual-TLS Raft port. Then a member is
// removed (`oja admin cluster remove`): it answers 503 and its /readyz
// fails, and the four left agree and take writes.
func TestClusterMembership(t *testing.T) {
	nodes := clusterNodes(t)
	client := newHTTPClient()
	defer func() { client.CloseIdleConnections() }()
	_, _, key := leaderFollowerKey(t, client, nodes)
	clusterFile, certs := flagValue(nodes[0].extra, "--cluster"), flagValue(nodes[0].extra, "--cluster-tls")
	var file struct {
		Nodes []map[string]string `json:"nodes"`
	}
	b, err := os.ReadFile(clusterFile)
	if err != nil {
		t.Fatal(err)
	}
	decodeJSON(t, b, &file)
	env := childEnv("OJA_ADMIN_TOKEN=" + crashAdminToken)
	create := []byte(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":16000,"rate":0.0006,"amountDirection":"source"}`)
	for _, id := range []string{"n4", "n5"} {
		m := map[string]string{"id": id, "raft": freeAddr(t), "public": freeAddr(t), "admin": freeAddr(t)}
		file.Nodes = append(file.Nodes, m)
		path := filepath.Join(filepath.Dir(clusterFile), id+".json")
		b, _ := json.Marshal(file)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := runOja(t, nodes[0].bin, env, "cluster", "certs", "--cluster", path, "--out", certs, "--node", "n9"); code != 2 || !strings.Contains(errOut, `--node "n9" is not in`) {
			t.Fatalf("oja cluster certs --node n9 (no such member): exit %d, %s", code, errOut)
		}
		if out, errOut, code := runOja(t, nodes[0].bin, env, "cluster", "certs", "--cluster", path, "--out", certs, "--node", id); code != 0 || strings.TrimSpace(out) != id+".pem\n"+id+"-key.pem" {
			t.Fatalf("oja cluster certs --node %s: exit %d, %q %s", id, code, out, errOut)
		}
		s := newOjaServer(t)
		s.public, s.admin = m["public"], m["admin"]
		s.extra = []string{"--cluster", path, "--node", id, "--demo", "--max-key-share", "1", "--cluster-tls", certs, "--join"}
		s.starts, s.joining = 1, true
		if id == "n5" {
			certFile, keyFile, cert := writeCert(t, t.TempDir(), "n5-public")
			s.extra = append(s.extra, "--tls-cert", certFile, "--tls-key", keyFile, "--admin-tls-cert", certFile, "--admin-tls-key", keyFile)
			roots := x509.NewCertPool()
			roots.AddCert(cert)
			s.tls = &tls.Config{RootCAs: roots}
			client = clientOf(s) // plain HTTP to the others, HTTPS to n5
		}
		if err := s.startOnce(); err != nil {
			t.Fatal(err)
		}
		// Not added yet: it serves nothing.
		if res, err := do(client, "POST", s.publicURL()+"/api/v1/partners/marketplace/intent", key, create); err != nil || res.status != http.StatusServiceUnavailable {
			t.Fatalf("%s before it was added: %v %d %s", id, err, res.status, res.body)
		}
		// Asked of a follower, which forwards it to the leader.
		out, errOut, code := runOja(t, nodes[0].bin, env, "admin", "--addr", nodes[1].adminURL(), "cluster", "add", id, m["raft"])
		if code != 0 {
			t.Fatalf("oja admin cluster add %s: exit %d, %s %s", id, code, out, errOut)
		}
		waitReady(t, s, 20*time.Second)
		nodes = append(nodes, s)
	}
	sameState(t, client, nodes, 30*time.Second)
	var v clusterView
	decodeJSON(t, mustDo(t, client, http.StatusOK, "GET", nodes[4].adminURL()+"/admin/v1/cluster", crashAdminToken, nil).body, &v)
	if len(v.Nodes) != 5 || v.Leader == nil {
		t.Fatalf("the cluster status on n5: %+v", v)
	}
	for _, n := range v.Nodes {
		if n.State == "unreachable" || n.State == "not a member" {
			t.Fatalf("the cluster status on n5: %s is %s (%+v)", n.ID, n.State, v)
		}
	}
	var q map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusOK, "POST", nodes[4].publicURL()+"/api/v1/partners/marketplace/intent", key, create).body, &q)

	// Remove n4 (a follower, or the leader: either must work).
	removed := nodes[3]
	if out, errOut, code := runOja(t, nodes[0].bin, env, "admin", "--addr", nodes[2].adminURL(), "cluster", "remove", "n4"); code != 0 {
		t.Fatalf("oja admin cluster remove n4: exit %d, %s %s", code, out, errOut)
	}
	poll.True(t, 10*time.Second, "the removed n4 no longer ready", func() bool { return !readyz(client, removed.publicURL()) })
	if res, err := do(client, "GET", removed.publicURL()+quotePath+str(q, "quoteId"), key, nil); err != nil || res.status != http.StatusServiceUnavailable || !strings.Contains(string(res.body), "not a member") {
		t.Fatalf("the removed n4 answered %v %d %s, want 503 not a member", err, res.status, res.body)
	}
	left := slices.Delete(slices.Clone(nodes), 3, 4)
	mustDo(t, client, http.StatusOK, "POST", left[0].publicURL()+"/api/v1/partners/marketplace/intent", key, create)
	sameState(t, client, left, 30*time.Second)
	decodeJSON(t, mustDo(t, client, http.StatusOK, "GET", left[0].adminURL()+"/admin/v1/cluster", crashAdminToken, nil).body, &v)
	if len(v.Nodes) != 4 || slices.ContainsFunc(v.Nodes, func(n clusterViewNode) bool { return n.ID == "n4" }) {
		t.Fatalf("after removing n4 the status is %+v", v)
	}
}

// seededCluster starts a new cluster of two from the backup in dir: s1
// with --from-backup (a cluster of itself alone), then s2 with --join,
// added by `oja admin cluster add`.
func seededCluster(t *testing.T, dir string, env []string) []*ojaServer {
	t.Helper()
	files := t.TempDir()
	var file struct {
		Nodes []map[string]string `json:"nodes"`
	}
	nodes := make([]*ojaServer, 2)
	for i := range nodes {
		id := fmt.Sprintf("s%d", i+1)
		m := map[string]string{"id": id, "raft": freeAddr(t), "public": freeAddr(t), "admin": freeAddr(t)}
		file.Nodes = append(file.Nodes, m)
		s := newOjaServer(t)
		s.public, s.admin, s.starts = m["public"], m["admin"], 1
		s.extra = []string{"--cluster", filepath.Join(files, "cluster.json"), "--node", id, "--cluster-tls", filepath.Join(files, "certs")}
		nodes[i] = s
	}
	b, _ := json.Marshal(file)
	if err := os.WriteFile(filepath.Join(files, "cluster.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runOja(t, nodes[0].bin, env, "cluster", "certs", "--cluster", filepath.Join(files, "cluster.json"), "--out", filepath.Join(files, "certs")); code != 0 {
		t.Fatalf("oja cluster certs: exit %d: %s", code, errOut)
	}
	nodes[0].extra = append(nodes[0].extra, "--from-backup", dir)
	if err := nodes[0].startOnce(); err != nil {
		t.Fatal(err)
	}
	nodes[1].extra = append(nodes[1].extra, "--join")
	nodes[1].joining = true
	if err := nodes[1].startOnce(); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runOja(t, nodes[0].bin, env, "admin", "--addr", nodes[0].adminURL(), "cluster", "add", "s2", file.Nodes[1]["raft"]); code != 0 {
		t.Fatalf("oja admin cluster add s2: exit %d, %s %s", code, out, errOut)
	}
	waitReady(t, nodes[1], 20*time.Second)
	return nodes
}

// waitReady waits until s's /readyz answers 200 (a node just added is
// ready once the configuration that names it has reached it).
func waitReady(t *testing.T, s *ojaServer, within time.Duration) {
	t.Helper()
	client := clientOf(s)
	defer client.CloseIdleConnections()
	poll.True(t, within, s.publicURL()+" ready", func() bool { return readyz(client, s.publicURL()) })
}
