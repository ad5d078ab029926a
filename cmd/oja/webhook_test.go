package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ojaclient "github.com/oja-exchange/oja/client"
	"github.com/oja-exchange/oja/gateway/webhook/webhooktest"
	"github.com/oja-exchange/oja/internal/poll"
)

// failingReceiver is a partner's endpoint on 127.0.0.1 that answers 503
// while failing is set.
func failingReceiver(t *testing.T, failing *atomic.Bool) *webhooktest.Receiver {
	r := webhooktest.New(t)
	r.Fail(func(int) bool { return failing.Load() })
	return r
}

// eventOf reads a delivery's event: its id, type, and the quote's id and
// status.
func eventOf(t *testing.T, d webhooktest.Delivery) (id, typ, quoteID, status string) {
	t.Helper()
	var ev ojaclient.WebhookEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		t.Fatalf("delivery body is not the event JSON: %v: %s", err, d.Body)
	}
	return ev.ID, ev.Type, ev.Data.Quote.QuoteID, string(ev.Data.Quote.Status)
}

// startDemo starts `oja serve --demo` with flags and returns it, an HTTP
// client (closed with the test) and the demo's sandbox key.
func startDemo(t *testing.T, flags ...string) (*ojaServer, *http.Client, string) {
	t.Helper()
	srv := newOjaServer(t, append([]string{"--demo"}, flags...)...)
	srv.start()
	client := newHTTPClient()
	t.Cleanup(client.CloseIdleConnections)
	keyFile, err := os.ReadFile(filepath.Join(srv.data, "demo.key"))
	if err != nil {
		t.Fatal(err)
	}
	return srv, client, strings.TrimSpace(string(keyFile))
}

// TestWebhooksEndToEnd runs `oja serve` as a partner meets it: an endpoint
// that fails its first attempts gets retries with growing gaps; a kill -9
// while an event is owed does not lose it (delivered after the restart,
// same event id); a quote's events arrive in order, signed; another
// client's dead endpoint does not hold them up; the operator sees the
// backlog and /metrics counts the deliveries.
func TestWebhooksEndToEnd(t *testing.T) {
	t.Parallel()
	srv, client, key := startDemo(t, "--webhook-allow-private", "--webhook-retry-min", "150ms", "--snapshot-every", "10")
	hooks := srv.publicURL() + "/api/v1/partners/webhooks"

	var failing atomic.Bool
	failing.Store(true)
	recv := failingReceiver(t, &failing)
	var created map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusCreated, "POST", hooks, key,
		fmt.Appendf(nil, `{"url":%q,"events":["quote.created","quote.accepted","quote.completed","quote.cancelled","quote.expired"]}`,
			recv.URL+"/oja")).body, &created)
	secret := str(created, "secret")
	// The Stripe scheme, checked by the partner's client (its own HMAC
	// computation, not the service's Sign) with the secret it was shown.
	recv.Verify(func(header string, body []byte) error {
		_, err := ojaclient.VerifyWebhook(secret, header, body, time.Minute)
		return err
	})

	// Another client whose endpoint never answers.
	var other map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusCreated, "POST", srv.adminURL()+"/admin/v1/clients", crashAdminToken,
		[]byte(`{"name":"Slow Partner"}`)).body, &other)
	var otherKey map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusCreated, "POST",
		srv.adminURL()+"/admin/v1/clients/"+str(other, "clientId")+"/keys", crashAdminToken, []byte(`{"mode":"sandbox"}`)).body, &otherKey)
	dead := webhooktest.New(t)
	dead.Hang()
	mustDo(t, client, http.StatusCreated, "POST", hooks, str(otherKey, "key"),
		fmt.Appendf(nil, `{"url":%q,"events":["quote.created"]}`, dead.URL))

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
	got := recv.WaitFor(t, "three failed attempts", func(d []webhooktest.Delivery) bool { return len(d) >= 3 })
	eventID := got[0].EventID
	for i, d := range got[:3] {
		if d.EventID != eventID || d.Attempt != i+1 || d.Delivered {
			t.Fatalf("attempt %d: event %s, numbered %d", i+1, d.EventID, d.Attempt)
		}
		if id, typ, q, status := eventOf(t, d); typ != "quote.created" || q != quoteID || status != "pending" || id != eventID {
			t.Fatalf("attempt %d carries %s of %s (%s), id %v", i+1, typ, q, status, id)
		}
	}
	if g1, g2 := got[1].At.Sub(got[0].At), got[2].At.Sub(got[1].At); g1 < 150*time.Millisecond || g2 < 300*time.Millisecond {
		t.Fatalf("retry gaps %v, %v; want at least 150ms then 300ms", g1, g2)
	}

	// kill -9 while the event is owed; the restarted server delivers it.
	srv.crash()
	failing.Store(false)
	srv.start()
	got = recv.WaitFor(t, "the owed event after the restart", func(d []webhooktest.Delivery) bool {
		return len(d) > 0 && d[len(d)-1].Delivered
	})
	if last := got[len(got)-1]; last.EventID != eventID {
		t.Fatalf("after the restart event %s was delivered, want the owed %s", last.EventID, eventID)
	} else if id, _, _, _ := eventOf(t, last); id != eventID {
		t.Fatalf("after the restart the body carries event %s, want %s", id, eventID)
	}

	// The quote's lifecycle arrives in order while the other client's
	// endpoint holds its requests.
	var accepted map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusOK, "PUT", srv.publicURL()+quotePath+quoteID+"/accept", key,
		fmt.Appendf(nil, `{"accountId":%q}`, firstAllocationAccount(t, quote))).body, &accepted)
	mustDo(t, client, http.StatusOK, "PUT", srv.publicURL()+quotePath+quoteID+"/complete", key, nil)
	got = recv.WaitFor(t, "accepted and completed", func(d []webhooktest.Delivery) bool {
		n := 0
		for _, x := range d {
			if x.Delivered {
				n++
			}
		}
		return n == 3
	})
	var order []string
	for _, d := range got {
		if d.Delivered {
			_, typ, q, status := eventOf(t, d)
			if q != quoteID {
				t.Fatalf("delivery of another quote %s", q)
			}
			order = append(order, typ+"/"+status)
		}
	}
	if strings.Join(order, " ") != "quote.created/pending quote.accepted/awaiting_payment quote.completed/completed" {
		t.Fatalf("delivered in order %v", order)
	}
	holding, _ := dead.InFlight()
	if holding == 0 {
		t.Fatal("the dead endpoint held no request: the isolation was not exercised")
	}

	// The operator's view and the metrics. A delivery is settled (no
	// longer owed) once its 2xx is recorded in the log, just after the
	// receiver saw it: the backlog reaches 0 shortly after.
	poll.Until(t, 10*time.Second, func() string {
		var view map[string]any
		decodeJSON(t, mustDo(t, client, http.StatusOK, "GET",
			srv.adminURL()+"/admin/v1/clients/"+str(quote, "clientId")+"/webhooks", crashAdminToken, nil).body, &view)
		data, _ := view["data"].([]any)
		if len(data) != 1 {
			t.Fatalf("operator view: %v", view)
		}
		backlog, _ := data[0].(map[string]any)["backlog"].(map[string]any)
		if backlog == nil || fmt.Sprint(backlog["owed"]) != "0" {
			return fmt.Sprintf("backlog after every delivery: %v", data[0])
		}
		return ""
	})
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
	leader, follower, key := leaderFollowerKey(t, client, nodes)
	var failing atomic.Bool
	failing.Store(true)
	recv := failingReceiver(t, &failing)
	// Through a follower: it forwards to the leader.
	mustDo(t, client, http.StatusCreated, "POST", follower.publicURL()+"/api/v1/partners/webhooks", key,
		fmt.Appendf(nil, `{"url":%q,"events":["quote.created"]}`, recv.URL))
	var q map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusOK, "POST", follower.publicURL()+"/api/v1/partners/marketplace/intent", key,
		[]byte(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":16000,"rate":0.0006,"amountDirection":"source"}`)).body, &q)
	got := recv.WaitFor(t, "a failed attempt from the first leader", func(d []webhooktest.Delivery) bool { return len(d) > 0 })
	eventID := got[0].EventID
	leader.crash()
	failing.Store(false)
	got = recv.WaitFor(t, "the delivery by the next leader", func(d []webhooktest.Delivery) bool {
		return len(d) > 0 && d[len(d)-1].Delivered
	})
	last := got[len(got)-1]
	if id, typ, quoteID, _ := eventOf(t, last); last.EventID != eventID || id != eventID || typ != "quote.created" || quoteID != str(q, "quoteId") {
		t.Fatalf("the next leader delivered %s (%s of %s), want the owed %s", last.EventID, typ, quoteID, eventID)
	}
	// The next leader's event history (its replica fed it) lists the
	// event as delivered.
	listed := poll.For(t, 10*time.Second, func() ([]byte, string) {
		var page struct{ Data []json.RawMessage }
		decodeJSON(t, mustDo(t, client, http.StatusOK, "GET", follower.publicURL()+"/api/v1/partners/events?type=quote.created", key, nil).body, &page)
		for _, raw := range page.Data {
			var e struct{ ID string }
			decodeJSON(t, raw, &e)
			if e.ID == eventID {
				return raw, ""
			}
		}
		return nil, fmt.Sprintf("the next leader's history does not list %s: %d events", eventID, len(page.Data))
	})
	if !bytes.Equal(listed, last.Body) {
		t.Fatalf("the history lists %s as\n%s\ndelivered as\n%s", eventID, listed, last.Body)
	}
}

// webhookRounds is how many kill -9 rounds TestWebhooksAtLeastOnce runs: 2
// in make test, more in make torture.
var webhookRounds = flag.Int("webhook-rounds", 2, "kill -9 rounds in TestWebhooksAtLeastOnce")

// TestWebhooksAtLeastOnce: quotes go through their lifecycles while the
// endpoint fails a third of the deliveries at random and the server is
// killed (-9) mid-stream, round after round. In the end every quote event
// that happened was delivered (at least once: repeats allowed), each
// quote's events were first delivered in lifecycle order, nothing was
// delivered that did not happen, and the backlog is empty.
func TestWebhooksAtLeastOnce(t *testing.T) {
	t.Parallel()
	srv, client, key := startDemo(t, "--webhook-allow-private", "--webhook-retry-min", "50ms", "--snapshot-every", "25")
	recv := webhooktest.New(t)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	recv.Fail(func(int) bool { mu.Lock(); defer mu.Unlock(); return rng.IntN(3) == 0 })
	mustDo(t, client, http.StatusCreated, "POST", srv.publicURL()+"/api/v1/partners/webhooks", key,
		fmt.Appendf(nil, `{"url":%q,"events":["quote.created","quote.accepted","quote.completed","quote.cancelled"]}`, recv.URL))

	// What happened, by quote: the kinds acknowledged to the partner.
	happened := map[string][]string{}
	var clientID string
	for round := range *webhookRounds {
		for i := range 15 {
			res, err := do(client, "POST", srv.publicURL()+"/api/v1/partners/marketplace/intent", key,
				[]byte(`{"sourceCurrency":"NGN","destinationCurrency":"USDT","amount":16000,"rate":0.0006,"amountDirection":"source"}`))
			if err != nil || res.status != http.StatusOK {
				t.Fatalf("round %d create %d: %v %d", round, i, err, res.status)
			}
			var q map[string]any
			decodeJSON(t, res.body, &q)
			id := str(q, "quoteId")
			clientID = str(q, "clientId")
			happened[id] = append(happened[id], "quote.created")
			switch i % 3 {
			case 0:
				mustDo(t, client, http.StatusOK, "PUT", srv.publicURL()+quotePath+id+"/cancel", key, nil)
				happened[id] = append(happened[id], "quote.cancelled")
			case 1:
				mustDo(t, client, http.StatusOK, "PUT", srv.publicURL()+quotePath+id+"/accept", key,
					fmt.Appendf(nil, `{"accountId":%q}`, firstAllocationAccount(t, q)))
				mustDo(t, client, http.StatusOK, "PUT", srv.publicURL()+quotePath+id+"/complete", key, nil)
				happened[id] = append(happened[id], "quote.accepted", "quote.completed")
			}
		}
		srv.crash()
		srv.start()
	}
	want := 0
	for _, kinds := range happened {
		want += len(kinds)
	}
	// Every event delivered; then the backlog empties.
	recv.WaitFor(t, fmt.Sprintf("all %d events delivered", want), func(got []webhooktest.Delivery) bool {
		seen := map[string]bool{}
		for _, d := range got {
			if d.Delivered {
				seen[d.EventID] = true
			}
		}
		return len(seen) == want
	})
	poll.Until(t, 10*time.Second, func() string {
		var view map[string]any
		decodeJSON(t, mustDo(t, client, http.StatusOK, "GET", srv.adminURL()+"/admin/v1/clients/"+clientID+"/webhooks",
			crashAdminToken, nil).body, &view)
		backlog := view["data"].([]any)[0].(map[string]any)["backlog"].(map[string]any)
		if fmt.Sprint(backlog["owed"]) == "0" {
			return ""
		}
		return fmt.Sprintf("backlog never emptied: %v", backlog)
	})
	firstDelivered := map[string][]string{} // quote → kinds in order of first delivery
	seen := map[string]bool{}
	for _, d := range recv.Deliveries() {
		if !d.Delivered || seen[d.EventID] {
			continue
		}
		seen[d.EventID] = true
		_, typ, quoteID, _ := eventOf(t, d)
		if _, ok := happened[quoteID]; !ok {
			t.Fatalf("delivered %s of quote %s, which the test never made", typ, quoteID)
		}
		firstDelivered[quoteID] = append(firstDelivered[quoteID], typ)
	}
	for id, kinds := range happened {
		if got := strings.Join(firstDelivered[id], " "); got != strings.Join(kinds, " ") {
			t.Errorf("quote %s: first deliveries %q, want %q", id, got, strings.Join(kinds, " "))
		}
	}
	t.Logf("%d events over %d kill -9 rounds, %d requests to the endpoint", want, *webhookRounds, len(recv.Deliveries()))

	// The event history lists each of them once — the same id and the
	// same bytes as delivered — and nothing else, newest first.
	delivered := map[string][]byte{}
	for _, d := range recv.Deliveries() {
		if d.Delivered {
			delivered[d.EventID] = d.Body
		}
	}
	checkHistory := func(when string) {
		t.Helper()
		listed := waitEvents(t, client, srv.publicURL(), key, want)
		last := ""
		for _, e := range listed {
			body, ok := delivered[e.id]
			if !ok {
				t.Fatalf("%s: the history lists %s, never delivered", when, e.id)
			}
			if !bytes.Equal(body, e.body) {
				t.Fatalf("%s: event %s listed as\n%s\ndelivered as\n%s", when, e.id, e.body, body)
			}
			if last != "" && e.createdAt > last {
				t.Fatalf("%s: not newest first: %s after %s", when, e.createdAt, last)
			}
			last = e.createdAt
		}
	}
	checkHistory("after the kill -9 rounds")
	// The history is derived from the log: deleted, it is rebuilt at the
	// next start, the same.
	srv.stop()
	if err := os.RemoveAll(filepath.Join(srv.data, "events")); err != nil {
		t.Fatal(err)
	}
	srv.start()
	checkHistory("rebuilt after its directory was deleted")
}

// listedEvent is one event of GET /partners/events: its id, time and
// body (the exact bytes listed).
type listedEvent struct {
	id, createdAt string
	body          []byte
}

// waitEvents pages through the partner's event history until it lists n
// events (it is derived from the log tens of milliseconds after a write).
func waitEvents(t *testing.T, client *http.Client, base, key string, n int) []listedEvent {
	t.Helper()
	all := poll.For(t, 20*time.Second, func() ([]listedEvent, string) {
		var all []listedEvent
		after := ""
		for {
			url := base + "/api/v1/partners/events?limit=100"
			if after != "" {
				url += "&startingAfter=" + after
			}
			var page struct {
				Data    []json.RawMessage
				HasMore bool
			}
			decodeJSON(t, mustDo(t, client, http.StatusOK, "GET", url, key, nil).body, &page)
			for _, raw := range page.Data {
				var e struct{ ID, CreatedAt string }
				decodeJSON(t, raw, &e)
				all = append(all, listedEvent{id: e.ID, createdAt: e.CreatedAt, body: raw})
				after = e.ID
			}
			if !page.HasMore {
				break
			}
		}
		if len(all) < n {
			return all, fmt.Sprintf("the event history lists %d events, want %d", len(all), n)
		}
		return all, ""
	})
	if len(all) != n {
		t.Fatalf("the event history lists %d events, want %d", len(all), n)
	}
	return all
}

// TestWebhookTestEvent: POST …/webhooks/{id}/test on a real server answers
// 202 with the event's id and delivers one webhook.test event, signed with
// the endpoint's secret (checked by the partner's client), to an endpoint
// subscribed to something else; nothing is owed or retried; the operator
// sees it as the endpoint's last attempt; a second test while one hangs is
// 429 RATE_LIMITED.
func TestWebhookTestEvent(t *testing.T) {
	t.Parallel()
	srv, client, key := startDemo(t, "--webhook-allow-private")
	hooks := srv.publicURL() + "/api/v1/partners/webhooks"
	recv := webhooktest.New(t)
	var created map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusCreated, "POST", hooks, key,
		fmt.Appendf(nil, `{"url":%q,"events":["quote.expired"]}`, recv.URL+"/oja")).body, &created)
	id, secret := str(created, "webhookId"), str(created, "secret")
	recv.Verify(func(header string, body []byte) error {
		ev, err := ojaclient.VerifyWebhook(secret, header, body, time.Minute)
		if err == nil && (ev.Type != "webhook.test" || ev.Data.WebhookID != id) {
			err = fmt.Errorf("the client reads type %q, webhookId %q", ev.Type, ev.Data.WebhookID)
		}
		return err
	})
	// The test is delivered at once after the create: the dispatcher is
	// given the endpoint, not left to hear of it from the log.
	test := func(id string) httpResult { return postWebhookTest(t, client, hooks+"/"+id+"/test", key) }
	res := test(id)
	if res.status != http.StatusAccepted {
		t.Fatalf("test: %d %s", res.status, res.body)
	}
	var accepted map[string]any
	decodeJSON(t, res.body, &accepted)
	eventID := str(accepted, "eventId")
	if str(accepted, "webhookId") != id || str(accepted, "type") != "webhook.test" || !strings.HasPrefix(eventID, "evt_") {
		t.Fatalf("test answer %s", res.body)
	}
	got := recv.WaitFor(t, "the test event", func(d []webhooktest.Delivery) bool { return len(d) == 1 })[0]
	var ev struct {
		ID, Type, Mode string
		Data           map[string]any
	}
	if err := json.Unmarshal(got.Body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.ID != eventID || got.EventID != eventID || ev.Type != "webhook.test" || ev.Mode != "sandbox" ||
		got.Attempt != 1 || ev.Data["webhookId"] != id || len(ev.Data) != 1 {
		t.Fatalf("delivered %+v: %s", got, got.Body)
	}

	// The operator's view: the test is the last attempt; nothing is owed.
	clientID := ""
	var clients struct {
		Data []struct {
			ClientID string `json:"clientId"`
			Name     string `json:"name"`
		} `json:"data"`
	}
	decodeJSON(t, mustDo(t, client, http.StatusOK, "GET", srv.adminURL()+"/admin/v1/clients?limit=100", crashAdminToken, nil).body, &clients)
	for _, c := range clients.Data {
		var view struct {
			Data []struct {
				WebhookID string `json:"webhookId"`
			} `json:"data"`
		}
		decodeJSON(t, mustDo(t, client, http.StatusOK, "GET", srv.adminURL()+"/admin/v1/clients/"+c.ClientID+"/webhooks", crashAdminToken, nil).body, &view)
		for _, h := range view.Data {
			if h.WebhookID != id {
				continue
			}
			clientID = c.ClientID
		}
	}
	if clientID == "" {
		t.Fatal("the operator does not see the endpoint")
	}
	// The dispatcher books the attempt once the receiver's answer is in,
	// a moment after the receiver recorded the delivery.
	poll.Until(t, 10*time.Second, func() string {
		var view struct {
			Data []struct {
				Backlog struct {
					Owed        int `json:"owed"`
					LastAttempt *struct {
						EventID string `json:"eventId"`
						Status  int    `json:"status"`
					} `json:"lastAttempt"`
				} `json:"backlog"`
			} `json:"data"`
		}
		decodeJSON(t, mustDo(t, client, http.StatusOK, "GET", srv.adminURL()+"/admin/v1/clients/"+clientID+"/webhooks", crashAdminToken, nil).body, &view)
		b := view.Data[0].Backlog
		if b.Owed == 0 && b.LastAttempt != nil && b.LastAttempt.EventID == eventID && b.LastAttempt.Status == http.StatusNoContent {
			return ""
		}
		return fmt.Sprintf("operator's backlog view after the test: %+v", b)
	})

	// A test still in flight (a receiver that never answers): another is 429.
	dead := webhooktest.New(t)
	dead.Hang()
	var deadHook map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusCreated, "POST", hooks, key,
		fmt.Appendf(nil, `{"url":%q,"events":["quote.expired"]}`, dead.URL)).body, &deadHook)
	if res := test(str(deadHook, "webhookId")); res.status != http.StatusAccepted {
		t.Fatalf("test of the hanging endpoint: %d %s", res.status, res.body)
	}
	if res := test(str(deadHook, "webhookId")); res.status != http.StatusTooManyRequests || !strings.Contains(string(res.body), "RATE_LIMITED") {
		t.Fatalf("a second test while one is in flight: %d %s", res.status, res.body)
	}
	// Deleting the endpoint ends its test (and the server's shutdown does
	// not wait on it).
	mustDo(t, client, http.StatusNoContent, "DELETE", hooks+"/"+str(deadHook, "webhookId"), key, nil)
	if n := len(recv.Deliveries()); n != 1 {
		t.Fatalf("the first endpoint got %d deliveries, want the one test", n)
	}
}

// TestWebhookSecretRotation: after rotate-secret, deliveries carry two v1
// signatures, the new secret's and the previous one's (each verifies with
// the partner's client), also after a kill -9 and restart; the answer
// says until when the previous one signs.
func TestWebhookSecretRotation(t *testing.T) {
	t.Parallel()
	srv, client, key := startDemo(t, "--webhook-allow-private")
	hooks := srv.publicURL() + "/api/v1/partners/webhooks"
	recv := webhooktest.New(t)
	var created map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusCreated, "POST", hooks, key,
		fmt.Appendf(nil, `{"url":%q,"events":["quote.expired"]}`, recv.URL)).body, &created)
	id, oldSecret := str(created, "webhookId"), str(created, "secret")
	var rotated map[string]any
	decodeJSON(t, mustDo(t, client, http.StatusOK, "POST", hooks+"/"+id+"/rotate-secret", key, nil).body, &rotated)
	newSecret := str(rotated, "secret")
	until, err := time.Parse(time.RFC3339Nano, str(rotated, "previousSecretExpiresAt"))
	if err != nil || !strings.HasPrefix(newSecret, "whsec_") || newSecret == oldSecret || time.Until(until) < 23*time.Hour || time.Until(until) > 24*time.Hour {
		t.Fatalf("rotate answered %v (%v)", rotated, err)
	}
	checkBoth := func(header string, body []byte) error {
		if strings.Count(header, "v1=") != 2 {
			return fmt.Errorf("want two v1 signatures")
		}
		for _, secret := range []string{newSecret, oldSecret} {
			if _, err := ojaclient.VerifyWebhook(secret, header, body, time.Minute); err != nil {
				return err
			}
		}
		if _, err := ojaclient.VerifyWebhook("whsec_not_it", header, body, time.Minute); err == nil {
			return fmt.Errorf("a wrong secret verifies")
		}
		return nil
	}
	// The dispatcher hears of a rotation a moment after it is
	// acknowledged (its replica applies the record): until then a test
	// event carries the previous signature only; and after a restart it
	// starts once the log follower has caught up (until then a test is
	// 503, "retry shortly"). signedTwice sends tests until one arrives at
	// r with both signatures (within 10 s).
	signedTwice := func(r *webhooktest.Receiver, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for seen := len(r.Deliveries()); ; {
			res := postWebhookTest(t, client, hooks+"/"+id+"/test", key)
			if res.status != http.StatusAccepted && res.status != http.StatusTooManyRequests && res.status != http.StatusServiceUnavailable {
				t.Fatalf("test: %d %s", res.status, res.body)
			}
			if res.status == http.StatusAccepted {
				got := r.WaitFor(t, what, func(d []webhooktest.Delivery) bool { return len(d) > seen })
				seen = len(got)
				if last := got[len(got)-1]; checkBoth(last.Signature, last.Body) == nil {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no delivery signed with both secrets within 10 s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	signedTwice(recv, "a delivery signed twice")
	// The rotation is durable: after kill -9 the restarted server signs
	// with both secrets still.
	srv.crash()
	srv.start()
	signedTwice(recv, "a delivery signed twice after the restart")

	// A new URL: the next test goes there (the URL the partner sees at
	// once), still signed with both.
	moved := webhooktest.New(t)
	mustDo(t, client, http.StatusOK, "PATCH", hooks+"/"+id, key, fmt.Appendf(nil, `{"url":%q}`, moved.URL+"/v2"))
	before := len(recv.Deliveries())
	signedTwice(moved, "the delivery at the new URL")
	if n := len(recv.Deliveries()); n != before {
		t.Fatalf("the old URL got %d deliveries after the update", n-before)
	}
}

// postWebhookTest sends POST …/webhooks/{id}/test once: right after the
// endpoint was created or changed, the test is delivered (read your
// writes: the dispatcher need not have heard of it from the log yet).
func postWebhookTest(t *testing.T, client *http.Client, url, key string) httpResult {
	t.Helper()
	res, err := do(client, "POST", url, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestEventHistoryOff: with --event-history=false the server keeps no
// history (no <data>/events) and GET /partners/events says so (503).
func TestEventHistoryOff(t *testing.T) {
	t.Parallel()
	srv, client, key := startDemo(t, "--event-history=false")
	res := mustDo(t, client, http.StatusServiceUnavailable, "GET", srv.publicURL()+"/api/v1/partners/events", key, nil)
	if !strings.Contains(string(res.body), "not kept") {
		t.Fatalf("answer %s", res.body)
	}
	if _, err := os.Stat(filepath.Join(srv.data, "events")); !os.IsNotExist(err) {
		t.Fatalf("<data>/events exists (%v) with the history off", err)
	}
}
