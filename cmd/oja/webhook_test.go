package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hookReceiver is a partner's webhook endpoint on 127.0.0.1. While failing
// it answers 500; while hanging it holds requests until released.
type hookReceiver struct {
	t       *testing.T
	srv     *httptest.Server
	secret  atomic.Pointer[string]
	failing atomic.Bool
	hang    chan struct{}

	mu       sync.Mutex
	got      []hookDelivery
	inflight int
}

type hookDelivery struct {
	at        time.Time
	eventID   string // the Oja-Event-Id header
	attempt   int
	body      map[string]any
	delivered bool
}

func newHookReceiver(t *testing.T, hang bool) *hookReceiver {
	r := &hookReceiver{t: t}
	if hang {
		r.hang = make(chan struct{})
	}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		if r.hang != nil {
			close(r.hang)
		}
		r.srv.Close()
	})
	return r
}

func (r *hookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.inflight++
	r.mu.Unlock()
	defer func() { r.mu.Lock(); r.inflight--; r.mu.Unlock() }()
	if r.hang != nil {
		select {
		case <-r.hang:
		case <-req.Context().Done():
		}
		return
	}
	// The Stripe scheme, computed here from the secret the partner was
	// shown, independently of the service's code.
	if secret := r.secret.Load(); secret != nil {
		var ts, v1 string
		for _, part := range strings.Split(req.Header.Get("Oja-Signature"), ",") {
			k, v, _ := strings.Cut(part, "=")
			if k == "t" {
				ts = v
			} else if k == "v1" {
				v1 = v
			}
		}
		mac := hmac.New(sha256.New, []byte(*secret))
		fmt.Fprintf(mac, "%s.%s", ts, raw)
		sent, err := strconv.ParseInt(ts, 10, 64)
		if v1 != hex.EncodeToString(mac.Sum(nil)) || err != nil || time.Since(time.Unix(sent, 0)).Abs() > time.Minute {
			r.t.Errorf("delivery signature %q does not verify", req.Header.Get("Oja-Signature"))
		}
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		r.t.Errorf("delivery body is not JSON: %s", raw)
	}
	attempt, _ := strconv.Atoi(req.Header.Get("Oja-Delivery-Attempt"))
	d := hookDelivery{at: time.Now(), eventID: req.Header.Get("Oja-Event-Id"), attempt: attempt, body: body,
		delivered: !r.failing.Load()}
	r.mu.Lock()
	r.got = append(r.got, d)
	r.mu.Unlock()
	if !d.delivered {
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (r *hookReceiver) deliveries() []hookDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookDelivery(nil), r.got...)
}

// waitDeliveries waits until cond holds for what the receiver got.
func (r *hookReceiver) waitDeliveries(t *testing.T, what string, cond func([]hookDelivery) bool) []hookDelivery {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := r.deliveries()
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; got %d deliveries", what, len(got))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func eventOf(d hookDelivery) (typ, quoteID, status string) {
	data, _ := d.body["data"].(map[string]any)
	q, _ := data["quote"].(map[string]any)
	typ, _ = d.body["type"].(string)
	quoteID, _ = q["quoteId"].(string)
	status, _ = q["status"].(string)
	return typ, quoteID, status
}

// TestWebhooksEndToEnd runs `oja serve` as a partner meets it: an endpoint
// that fails its first attempts gets retries with growing gaps; a kill -9
// while an event is owed does not lose it (delivered after the restart,
// same event id); a quote's events arrive in order, signed; another
// client's dead endpoint does not hold them up; the operator sees the
// backlog and /metrics counts the deliveries.
func TestWebhooksEndToEnd(t *testing.T) {
	t.Parallel()
	srv := newOjaServer(t, "--demo", "--webhook-allow-private", "--webhook-retry-min", "150ms", "--snapshot-every", "10")
	srv.start()
	client := newHTTPClient()
	defer client.CloseIdleConnections()
	keyFile, err := os.ReadFile(filepath.Join(srv.data, "demo.key"))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(keyFile))
	hooks := srv.publicURL() + "/api/v1/partners/webhooks"

	recv := newHookReceiver(t, false)
	recv.failing.Store(true)
	var created map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusCreated, "POST", hooks, key,
		fmt.Appendf(nil, `{"url":%q,"events":["quote.created","quote.accepted","quote.completed","quote.cancelled","quote.expired"]}`,
			recv.srv.URL+"/oja")).body, &created)
	secret := str(created, "secret")
	recv.secret.Store(&secret)

	// Another client whose endpoint never answers.
	var other map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusCreated, "POST", srv.adminURL()+"/admin/v1/clients", crashAdminToken,
		[]byte(`{"name":"Slow Partner"}`)).body, &other)
	var otherKey map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusCreated, "POST",
		srv.adminURL()+"/admin/v1/clients/"+str(other, "clientId")+"/keys", crashAdminToken, []byte(`{"mode":"sandbox"}`)).body, &otherKey)
	dead := newHookReceiver(t, true)
	mustDo(t, client, http.StatusCreated, "POST", hooks, str(otherKey, "key"),
		fmt.Appendf(nil, `{"url":%q,"events":["quote.created"]}`, dead.srv.URL))

	create := func(key string) map[string]any {
		var q map[string]any
		decodeJSON(t, mustDo(t, client, http.StatusOK, "POST", srv.publicURL()+"/api/v1/partners/marketplace/intent", key,
			[]byte(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":16000,"rate":0.0006,"amountDirection":"source"}`)).body, &q)
		return q
	}
	for range 12 { // enough records for a snapshot (--snapshot-every 10) holding the outbox
		create(str(otherKey, "key"))
	}
	quote := create(key)
	quoteID := str(quote, "quoteId")

	// Retries with growing gaps while the endpoint fails.
	got := recv.waitDeliveries(t, "three failed attempts", func(d []hookDelivery) bool { return len(d) >= 3 })
	eventID := got[0].eventID
	for i, d := range got[:3] {
		if d.eventID != eventID || d.attempt != i+1 || d.delivered {
			t.Fatalf("attempt %d: event %s, numbered %d", i+1, d.eventID, d.attempt)
		}
		if typ, q, status := eventOf(d); typ != "quote.created" || q != quoteID || status != "pending" || d.body["id"] != eventID {
			t.Fatalf("attempt %d carries %s of %s (%s), id %v", i+1, typ, q, status, d.body["id"])
		}
	}
	if g1, g2 := got[1].at.Sub(got[0].at), got[2].at.Sub(got[1].at); g1 < 150*time.Millisecond || g2 < 300*time.Millisecond {
		t.Fatalf("retry gaps %v, %v; want at least 150ms then 300ms", g1, g2)
	}

	// kill -9 while the event is owed; the restarted server delivers it.
	srv.crash()
	recv.failing.Store(false)
	srv.start()
	got = recv.waitDeliveries(t, "the owed event after the restart", func(d []hookDelivery) bool {
		return len(d) > 0 && d[len(d)-1].delivered
	})
	if last := got[len(got)-1]; last.eventID != eventID || last.body["id"] != eventID {
		t.Fatalf("after the restart event %s was delivered, want the owed %s", last.eventID, eventID)
	}

	// The quote's lifecycle arrives in order while the other client's
	// endpoint holds its requests.
	var accepted map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusOK, "PUT", srv.publicURL()+quotePath+quoteID+"/accept", key,
		fmt.Appendf(nil, `{"accountId":%q}`, firstAllocationAccount(t, quote))).body, &accepted)
	mustDo(t, client, http.StatusOK, "PUT", srv.publicURL()+quotePath+quoteID+"/complete", key, nil)
	got = recv.waitDeliveries(t, "accepted and completed", func(d []hookDelivery) bool {
		n := 0
		for _, x := range d {
			if x.delivered {
				n++
			}
		}
		return n == 3
	})
	var order []string
	for _, d := range got {
		if d.delivered {
			typ, q, status := eventOf(d)
			if q != quoteID {
				t.Fatalf("delivery of another quote %s", q)
			}
			order = append(order, typ+"/"+status)
		}
	}
	if strings.Join(order, " ") != "quote.created/pending quote.accepted/awaiting_payment quote.completed/completed" {
		t.Fatalf("delivered in order %v", order)
	}
	dead.mu.Lock()
	holding := dead.inflight
	dead.mu.Unlock()
	if holding == 0 {
		t.Fatal("the dead endpoint held no request: the isolation was not exercised")
	}

	// The operator's view and the metrics.
	var view map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusOK, "GET",
		srv.adminURL()+"/admin/v1/clients/"+str(quote, "clientId")+"/webhooks", crashAdminToken, nil).body, &view)
	data, _ := view["data"].([]any)
	if len(data) != 1 {
		t.Fatalf("operator view: %v", view)
	}
	backlog, _ := data[0].(map[string]any)["backlog"].(map[string]any)
	if backlog == nil || fmt.Sprint(backlog["owed"]) != "0" {
		t.Fatalf("backlog after every delivery: %v", data[0])
	}
	var cli map[string]any
	adminOK(t, srv, &cli, "webhooks", str(other, "clientId"))
	if data, _ := cli["data"].([]any); len(data) != 1 ||
		fmt.Sprint(data[0].(map[string]any)["backlog"].(map[string]any)["owed"]) != "12" {
		t.Fatalf("oja admin webhooks of the slow partner: %v", cli)
	}
	adminFails(t, srv, "NOT_FOUND", "webhooks", "6f1c1f43-0000-4000-8000-000000000000")
	metrics := string(mustDo(t, client, http.StatusOK, "GET", srv.adminURL()+"/metrics", crashAdminToken, nil).body)
	if !strings.Contains(metrics, `oja_webhook_deliveries_total{result="delivered"} 3`) ||
		!strings.Contains(metrics, "oja_webhook_backlog_events 12") {
		t.Fatalf("metrics lack the deliveries or the dead endpoint's backlog of 12:\n%s", grepLines(metrics, "oja_webhook"))
	}
	srv.stop()
}

func firstAllocationAccount(t *testing.T, q map[string]any) string {
	t.Helper()
	ar, _ := q["allocationResult"].(map[string]any)
	as, _ := ar["allocations"].([]any)
	if len(as) == 0 {
		t.Fatalf("quote without allocations: %v", q)
	}
	return str(as[0].(map[string]any), "poolAccountId")
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestClusterWebhooks: an event owed when the leader dies is delivered by
// the next leader, with the same id (the outbox is in the replicated log).
func TestClusterWebhooks(t *testing.T) {
	nodes := clusterNodes(t, "--webhook-allow-private", "--webhook-retry-min", "100ms")
	client := newHTTPClient()
	defer client.CloseIdleConnections()
	leaderID := leaderOf(t, client, nodes[0], 10*time.Second)
	var leader, follower *ojaServer
	for i, s := range nodes {
		if fmt.Sprintf("n%d", i+1) == leaderID {
			leader = s
		} else {
			follower = s
		}
	}
	var key string
	for deadline := time.Now().Add(10 * time.Second); key == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(leader.data, "demo.key"))
		key = strings.TrimSpace(string(b))
	}
	recv := newHookReceiver(t, false)
	recv.failing.Store(true)
	// Through a follower: it forwards to the leader.
	mustDo(t, client, http.StatusCreated, "POST", follower.publicURL()+"/api/v1/partners/webhooks", key,
		fmt.Appendf(nil, `{"url":%q,"events":["quote.created"]}`, recv.srv.URL))
	var q map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusOK, "POST", follower.publicURL()+"/api/v1/partners/marketplace/intent", key,
		[]byte(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":16000,"rate":0.0006,"amountDirection":"source"}`)).body, &q)
	got := recv.waitDeliveries(t, "a failed attempt from the first leader", func(d []hookDelivery) bool { return len(d) > 0 })
	eventID := got[0].eventID
	leader.crash()
	recv.failing.Store(false)
	got = recv.waitDeliveries(t, "the delivery by the next leader", func(d []hookDelivery) bool {
		return len(d) > 0 && d[len(d)-1].delivered
	})
	last := got[len(got)-1]
	if typ, quoteID, _ := eventOf(last); last.eventID != eventID || typ != "quote.created" || quoteID != str(q, "quoteId") {
		t.Fatalf("the next leader delivered %s (%s of %s), want the owed %s", last.eventID, typ, quoteID, eventID)
	}
}
