package gateway_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oja-exchange/oja/actors"
	"github.com/oja-exchange/oja/engine"
	"github.com/oja-exchange/oja/gateway/gatewaytest"
	"github.com/oja-exchange/oja/wal"
)

const webhooksURL = "/api/v1/partners/webhooks"

// TestWebhookEndpoints: create answers the registration with its secret
// (only there), list shows the caller's endpoints of its key's mode without
// secrets, delete removes one of them; another client or mode cannot see
// or delete it; bad input is refused with the member named and changes
// nothing.
func TestWebhookEndpoints(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{WebhookAllowPrivate: true})
	ada, bola := s.NewPartner(t, "Ada"), s.NewPartner(t, "Bola")

	created := wantCreated(t, do(t, http.MethodPost, s.URL+webhooksURL, ada.SandboxKey,
		map[string]any{"url": "http://127.0.0.1:9/hooks", "events": []string{"quote.completed", "quote.created", "quote.completed"}}))
	wantKeys(t, "created webhook", created, "webhookId", "url", "events", "secret", "createdAt")
	id := wantUUID(t, created, "webhookId")
	wantTimestamp(t, created, "createdAt")
	if secret := getString(t, created, "secret"); !strings.HasPrefix(secret, "whsec_") || len(secret) != len("whsec_")+40 {
		t.Fatalf("secret %q", secret)
	}
	if got := fmt.Sprint(created["events"]); got != "[quote.created quote.completed]" {
		t.Fatalf("events %s, want the set in lifecycle order", got)
	}
	live := wantCreated(t, do(t, http.MethodPost, s.URL+webhooksURL, ada.LiveKey,
		map[string]any{"url": "https://hooks.example.com/oja", "events": engine.WebhookEventsAll.Names()}))

	list := wantOK(t, do(t, http.MethodGet, s.URL+webhooksURL, ada.SandboxKey, nil))
	data := getArray(t, list, "data")
	if len(data) != 1 || list["hasMore"] != false {
		t.Fatalf("sandbox list %v", list)
	}
	wantKeys(t, "listed webhook", data[0].(map[string]any), "webhookId", "url", "events", "createdAt")
	if got := len(getArray(t, wantOK(t, do(t, http.MethodGet, s.URL+webhooksURL, bola.SandboxKey, nil)), "data")); got != 0 {
		t.Fatalf("another client lists %d webhooks", got)
	}

	// Another client, or the same client's other mode, cannot delete it.
	wantError(t, do(t, http.MethodDelete, s.URL+webhooksURL+"/"+id, bola.SandboxKey, nil), http.StatusNotFound, "NOT_FOUND")
	wantError(t, do(t, http.MethodDelete, s.URL+webhooksURL+"/"+id, ada.LiveKey, nil), http.StatusNotFound, "NOT_FOUND")
	wantError(t, do(t, http.MethodDelete, s.URL+webhooksURL+"/not-a-uuid", ada.SandboxKey, nil), http.StatusBadRequest, "VALIDATION_ERROR")
	r := do(t, http.MethodDelete, s.URL+webhooksURL+"/"+id, ada.SandboxKey, nil)
	wantStatus(t, r, http.StatusNoContent)
	if len(r.body) != 0 {
		t.Fatalf("204 with a body: %q", r.body)
	}
	wantError(t, do(t, http.MethodDelete, s.URL+webhooksURL+"/"+id, ada.SandboxKey, nil), http.StatusNotFound, "NOT_FOUND")
	if got := len(getArray(t, wantOK(t, do(t, http.MethodGet, s.URL+webhooksURL, ada.LiveKey, nil)), "data")); got != 1 {
		t.Fatalf("live list has %d after deleting the sandbox one", got)
	}

	// The operator sees both modes' endpoints, without secrets.
	adm := wantOK(t, admin(t, s, http.MethodGet, "/admin/v1/clients/"+ada.Client.ID.String()+"/webhooks", nil))
	hooks := getArray(t, adm, "data")
	if len(hooks) != 1 || getString(t, hooks[0], "webhookId") != live["webhookId"] || getString(t, hooks[0], "mode") != "live" {
		t.Fatalf("operator view %v", adm)
	}
	if strings.Contains(string(admin(t, s, http.MethodGet, "/admin/v1/clients/"+ada.Client.ID.String()+"/webhooks", nil).body), "whsec_") {
		t.Fatal("operator view shows a secret")
	}
	wantError(t, admin(t, s, http.MethodGet, "/admin/v1/clients/6f1c1f43-0000-4000-8000-000000000000/webhooks", nil), http.StatusNotFound, "NOT_FOUND")

	for _, tc := range []struct {
		name   string
		key    string
		body   any
		member string
	}{
		{"no url", ada.SandboxKey, map[string]any{"events": []string{"quote.created"}}, "url"},
		{"no events", ada.SandboxKey, map[string]any{"url": "http://127.0.0.1:9/"}, "events"},
		{"empty events", ada.SandboxKey, map[string]any{"url": "http://127.0.0.1:9/", "events": []string{}}, "events"},
		{"unknown event", ada.SandboxKey, map[string]any{"url": "http://127.0.0.1:9/", "events": []string{"quote.paid"}}, "events"},
		{"events not strings", ada.SandboxKey, map[string]any{"url": "http://127.0.0.1:9/", "events": []int{1}}, "events"},
		{"unknown member", ada.SandboxKey, map[string]any{"url": "http://127.0.0.1:9/", "events": []string{"quote.created"}, "secret": "x"}, "secret"},
		{"ftp", ada.SandboxKey, map[string]any{"url": "ftp://127.0.0.1/", "events": []string{"quote.created"}}, "url"},
		{"relative", ada.SandboxKey, map[string]any{"url": "/hooks", "events": []string{"quote.created"}}, "url"},
		{"credentials", ada.SandboxKey, map[string]any{"url": "https://u:p@hooks.example.com/", "events": []string{"quote.created"}}, "url"},
		{"too long", ada.SandboxKey, map[string]any{"url": "https://hooks.example.com/" + strings.Repeat("a", 2048), "events": []string{"quote.created"}}, "url"},
	} {
		e := wantError(t, do(t, http.MethodPost, s.URL+webhooksURL, tc.key, tc.body), http.StatusBadRequest, "VALIDATION_ERROR")
		wantDetailsNames(t, e, tc.member)
	}
	wantError(t, do(t, http.MethodPost, s.URL+webhooksURL, ada.SandboxKey, "not json"), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, do(t, http.MethodPost, s.URL+webhooksURL, "", map[string]any{}), http.StatusUnauthorized, "UNAUTHORIZED")
	if got := len(getArray(t, wantOK(t, do(t, http.MethodGet, s.URL+webhooksURL, ada.SandboxKey, nil)), "data")); got != 0 {
		t.Fatalf("refused creates left %d webhooks", got)
	}

	// At most 16 per client, both modes together.
	for i := 1; i < engine.WebhooksPerClientMax; i++ {
		wantCreated(t, do(t, http.MethodPost, s.URL+webhooksURL, ada.SandboxKey,
			map[string]any{"url": fmt.Sprintf("http://127.0.0.1:9/%d", i), "events": []string{"quote.expired"}}))
	}
	wantError(t, do(t, http.MethodPost, s.URL+webhooksURL, ada.SandboxKey,
		map[string]any{"url": "http://127.0.0.1:9/17", "events": []string{"quote.expired"}}), http.StatusUnprocessableEntity, "WEBHOOK_LIMIT")
}

// TestWebhookSSRF: without --webhook-allow-private, URLs on loopback,
// private, link-local, metadata and other special addresses are refused
// (400, details.url), and so are local names and plain http in live mode.
func TestWebhookSSRF(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{})
	p := s.NewPartner(t, "Ada")
	for _, url := range []string{
		"http://127.0.0.1:8080/hooks", "http://127.1/", "https://[::1]/", "http://localhost/hooks",
		"http://api.localhost/", "http://10.1.2.3/", "http://172.16.0.1/", "http://192.168.1.1/",
		"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://metadata.google.internal/",
		"http://100.100.100.200/", "http://0.0.0.0/", "http://[::]/", "http://[::ffff:127.0.0.1]/",
		"http://[64:ff9b::a00:1]/", "http://224.0.0.1/", "http://intranet/", "http://2130706433/",
	} {
		e := wantError(t, do(t, http.MethodPost, s.URL+webhooksURL, p.SandboxKey,
			map[string]any{"url": url, "events": []string{"quote.created"}}), http.StatusBadRequest, "VALIDATION_ERROR")
		wantDetailsNames(t, e, "url")
	}
	e := wantError(t, do(t, http.MethodPost, s.URL+webhooksURL, p.LiveKey,
		map[string]any{"url": "http://93.184.215.14/hooks", "events": []string{"quote.created"}}), http.StatusBadRequest, "VALIDATION_ERROR")
	if got := fmt.Sprint(e); !strings.Contains(got, "https") {
		t.Fatalf("live http refused for %s, want the https rule", got)
	}
	// A public address literal needs no look-up and is accepted.
	wantCreated(t, do(t, http.MethodPost, s.URL+webhooksURL, p.SandboxKey,
		map[string]any{"url": "http://93.184.215.14/hooks", "events": []string{"quote.created"}}))
}

// TestWebhookRacesReplay: concurrent creates at the limit and concurrent
// deletes of one endpoint are decided one at a time, so the log holds only
// what replay accepts (a second delete or a 17th create in the log would
// make the service unable to restart).
func TestWebhookRacesReplay(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{WebhookAllowPrivate: true})
	p := s.NewPartner(t, "Ada")
	body := map[string]any{"url": "http://127.0.0.1:9/h", "events": []string{"quote.created"}}
	var last map[string]any
	for i := 1; i < engine.WebhooksPerClientMax; i++ {
		last = wantCreated(t, do(t, http.MethodPost, s.URL+webhooksURL, p.SandboxKey, body))
	}
	race := func(n int, req func() *response) map[int]int {
		statuses := make(chan int, n)
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() { defer wg.Done(); statuses <- req().status }()
		}
		wg.Wait()
		close(statuses)
		counts := map[int]int{}
		for st := range statuses {
			counts[st]++
		}
		return counts
	}
	if got := race(8, func() *response { return do(t, http.MethodPost, s.URL+webhooksURL, p.SandboxKey, body) }); got[201] != 1 || got[422] != 7 {
		t.Fatalf("8 creates racing for the last place: %v, want one 201 and seven 422", got)
	}
	id := getString(t, last, "webhookId")
	if got := race(8, func() *response { return do(t, http.MethodDelete, s.URL+webhooksURL+"/"+id, p.SandboxKey, nil) }); got[204] != 1 || got[404] != 7 {
		t.Fatalf("8 deletes of one endpoint: %v, want one 204 and seven 404", got)
	}
	s.Stop()
	log, err := wal.Open(filepath.Join(s.Dir, "store"), wal.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	state, _, err := actors.Recover(log, time.Now())
	if err != nil {
		t.Fatalf("replay refuses the log the races wrote: %v", err)
	}
	if n := len(state.ClientWebhooks(p.Client.ID)); n != engine.WebhooksPerClientMax-1 {
		t.Fatalf("replayed %d webhooks, want %d", n, engine.WebhooksPerClientMax-1)
	}
}

// TestWebhookTestRefusals: POST …/webhooks/{id}/test refuses another
// client's or mode's endpoint (404), a bad id or any body (400), no key
// (401), and answers 503 where no dispatcher runs. The delivery itself is
// tested over the real binary (cmd/oja TestWebhookTestEvent).
func TestWebhookTestRefusals(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{WebhookAllowPrivate: true})
	ada, bola := s.NewPartner(t, "Ada"), s.NewPartner(t, "Bola")
	id := getString(t, wantCreated(t, do(t, http.MethodPost, s.URL+webhooksURL, ada.SandboxKey,
		map[string]any{"url": "http://127.0.0.1:9/hooks", "events": []string{"quote.expired"}})), "webhookId")
	testURL := s.URL + webhooksURL + "/" + id + "/test"
	wantError(t, do(t, http.MethodPost, testURL, bola.SandboxKey, nil), http.StatusNotFound, "NOT_FOUND")
	wantError(t, do(t, http.MethodPost, testURL, ada.LiveKey, nil), http.StatusNotFound, "NOT_FOUND")
	wantError(t, do(t, http.MethodPost, s.URL+webhooksURL+"/6f1c1f43-0000-4000-8000-000000000000/test", ada.SandboxKey, nil), http.StatusNotFound, "NOT_FOUND")
	wantError(t, do(t, http.MethodPost, s.URL+webhooksURL+"/not-a-uuid/test", ada.SandboxKey, nil), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, do(t, http.MethodPost, testURL, ada.SandboxKey, map[string]any{"x": 1}), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, do(t, http.MethodPost, testURL, "", nil), http.StatusUnauthorized, "UNAUTHORIZED")
	r := do(t, http.MethodPost, testURL, ada.SandboxKey, nil)
	wantError(t, r, http.StatusServiceUnavailable, "UNAVAILABLE")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
}

// TestWebhookRotateSecret: rotate-secret answers a new secret (once) and
// until when the previous one signs; another client's or mode's endpoint
// is 404; a bad id, a body or no key is refused.
func TestWebhookRotateSecret(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{WebhookAllowPrivate: true})
	ada, bola := s.NewPartner(t, "Ada"), s.NewPartner(t, "Bola")
	made := wantCreated(t, do(t, http.MethodPost, s.URL+webhooksURL, ada.SandboxKey,
		map[string]any{"url": "http://127.0.0.1:9/hooks", "events": []string{"quote.expired"}}))
	rotateURL := s.URL + webhooksURL + "/" + getString(t, made, "webhookId") + "/rotate-secret"
	wantError(t, do(t, http.MethodPost, rotateURL, bola.SandboxKey, nil), http.StatusNotFound, "NOT_FOUND")
	wantError(t, do(t, http.MethodPost, rotateURL, ada.LiveKey, nil), http.StatusNotFound, "NOT_FOUND")
	wantError(t, do(t, http.MethodPost, s.URL+webhooksURL+"/not-a-uuid/rotate-secret", ada.SandboxKey, nil), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, do(t, http.MethodPost, rotateURL, ada.SandboxKey, map[string]any{"x": 1}), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, do(t, http.MethodPost, rotateURL, "", nil), http.StatusUnauthorized, "UNAUTHORIZED")
	r := do(t, http.MethodPost, rotateURL, ada.SandboxKey, nil)
	got := wantOK(t, r)
	wantKeys(t, "rotated", got, "secret", "previousSecretExpiresAt")
	if secret := getString(t, got, "secret"); !strings.HasPrefix(secret, "whsec_") || secret == getString(t, made, "secret") {
		t.Fatalf("rotated secret %q", secret)
	}
	if at := wantTimestamp(t, got, "previousSecretExpiresAt"); at.Sub(s.Now()) < 23*time.Hour || at.Sub(s.Now()) > 24*time.Hour {
		t.Fatalf("previous secret until %v (now %v)", at, s.Now())
	}
	if r.header.Get("Cache-Control") != "no-store" {
		t.Fatal("a secret's answer is cacheable")
	}
	if strings.Contains(string(do(t, http.MethodGet, s.URL+webhooksURL, ada.SandboxKey, nil).body), "whsec_") {
		t.Fatal("the list shows a secret after a rotation")
	}
}

// TestWebhookUpdate: PATCH changes an endpoint's events, URL or both, in
// place (list order kept), answering the endpoint without a secret;
// neither member, bad members, another client's or mode's endpoint are
// refused and change nothing.
func TestWebhookUpdate(t *testing.T) {
	t.Parallel()
	s := gatewaytest.Start(t, gatewaytest.Options{WebhookAllowPrivate: true})
	ada, bola := s.NewPartner(t, "Ada"), s.NewPartner(t, "Bola")
	first := wantCreated(t, do(t, http.MethodPost, s.URL+webhooksURL, ada.SandboxKey,
		map[string]any{"url": "http://127.0.0.1:9/one", "events": []string{"quote.expired"}}))
	wantCreated(t, do(t, http.MethodPost, s.URL+webhooksURL, ada.SandboxKey,
		map[string]any{"url": "http://127.0.0.1:9/two", "events": []string{"quote.created"}}))
	id := getString(t, first, "webhookId")
	hookURL := s.URL + webhooksURL + "/" + id
	patch := func(key string, body any) *response { return do(t, http.MethodPatch, hookURL, key, body) }

	got := wantOK(t, patch(ada.SandboxKey, map[string]any{"events": []string{"quote.completed", "payin.received"}}))
	wantKeys(t, "updated webhook", got, "webhookId", "url", "events", "createdAt")
	if got["url"] != "http://127.0.0.1:9/one" || fmt.Sprint(got["events"]) != "[quote.completed payin.received]" || got["createdAt"] != first["createdAt"] {
		t.Fatalf("events only: %v", got)
	}
	got = wantOK(t, patch(ada.SandboxKey, map[string]any{"url": "http://127.0.0.1:9/new"}))
	if got["url"] != "http://127.0.0.1:9/new" || fmt.Sprint(got["events"]) != "[quote.completed payin.received]" {
		t.Fatalf("url only: %v", got)
	}
	for _, tc := range []struct {
		name   string
		body   any
		member string
	}{
		{"neither", map[string]any{}, "url"},
		{"empty events", map[string]any{"events": []string{}}, "events"},
		{"unknown event", map[string]any{"events": []string{"quote.paid"}}, "events"},
		{"ftp", map[string]any{"url": "ftp://127.0.0.1/"}, "url"},
		{"unknown member", map[string]any{"url": "http://127.0.0.1:9/x", "secret": "x"}, "secret"},
	} {
		wantDetailsNames(t, wantError(t, patch(ada.SandboxKey, tc.body), http.StatusBadRequest, "VALIDATION_ERROR"), tc.member)
	}
	wantError(t, patch(bola.SandboxKey, map[string]any{"url": "http://127.0.0.1:9/x"}), http.StatusNotFound, "NOT_FOUND")
	wantError(t, patch(ada.LiveKey, map[string]any{"url": "http://127.0.0.1:9/x"}), http.StatusNotFound, "NOT_FOUND")
	wantError(t, patch("", map[string]any{"url": "http://127.0.0.1:9/x"}), http.StatusUnauthorized, "UNAUTHORIZED")
	list := getArray(t, wantOK(t, do(t, http.MethodGet, s.URL+webhooksURL, ada.SandboxKey, nil)), "data")
	if len(list) != 2 || getString(t, list[0], "webhookId") != id || list[0].(map[string]any)["url"] != "http://127.0.0.1:9/new" ||
		list[1].(map[string]any)["url"] != "http://127.0.0.1:9/two" {
		t.Fatalf("list after the updates: %v", list)
	}
}
