// Package webhooktest is a partner's webhook endpoint for tests: an HTTP
// server on 127.0.0.1 that records every delivery, refuses the ones a test
// says to refuse, can hold requests as a dead endpoint does, and has every
// signature checked by a function the test brings (its own HMAC, or the
// partner client's VerifyWebhook) — never by the service's code.
package webhooktest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Delivery is one request the endpoint received.
type Delivery struct {
	At        time.Time
	EventID   string // Oja-Event-Id
	Attempt   int    // Oja-Delivery-Attempt
	Signature string // Oja-Signature
	Body      []byte
	Delivered bool // answered 2xx
}

// Receiver is the endpoint. Configure it before the first delivery.
type Receiver struct {
	URL string

	t    testing.TB
	srv  *httptest.Server
	hang chan struct{}

	mu       sync.Mutex
	fail     func(attempt int) bool
	verify   func(header string, body []byte) error
	got      []Delivery
	inflight int
	peak     int
}

// New starts a receiver; it stops when the test ends.
func New(t testing.TB) *Receiver {
	r := &Receiver{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL
	t.Cleanup(func() {
		if r.hang != nil {
			close(r.hang)
		}
		r.srv.Close()
	})
	return r
}

// Fail makes the receiver answer 503 to the deliveries f picks (nil: none).
func (r *Receiver) Fail(f func(attempt int) bool) {
	r.mu.Lock()
	r.fail = f
	r.mu.Unlock()
}

// Verify has every delivery's signature checked with f; an error fails the
// test.
func (r *Receiver) Verify(f func(header string, body []byte) error) {
	r.mu.Lock()
	r.verify = f
	r.mu.Unlock()
}

// Hang makes the receiver hold every request until the test ends (or the
// sender gives up), answering nothing: a dead endpoint.
func (r *Receiver) Hang() { r.hang = make(chan struct{}) }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.inflight++
	r.peak = max(r.peak, r.inflight)
	fail, verify := r.fail, r.verify
	r.mu.Unlock()
	defer func() { r.mu.Lock(); r.inflight--; r.mu.Unlock() }()
	if r.hang != nil {
		select {
		case <-r.hang:
		case <-req.Context().Done():
		}
		return
	}
	attempt, _ := strconv.Atoi(req.Header.Get("Oja-Delivery-Attempt"))
	d := Delivery{At: time.Now(), EventID: req.Header.Get("Oja-Event-Id"), Attempt: attempt,
		Signature: req.Header.Get("Oja-Signature"), Body: body, Delivered: fail == nil || !fail(attempt)}
	if verify != nil {
		if err := verify(d.Signature, body); err != nil {
			r.t.Errorf("webhooktest: delivery of %s: signature %q: %v", d.EventID, d.Signature, err)
		}
	}
	r.mu.Lock()
	r.got = append(r.got, d)
	r.mu.Unlock()
	if !d.Delivered {
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Deliveries returns what the receiver got so far, in arrival order.
func (r *Receiver) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.got...)
}

// InFlight returns how many requests the receiver holds now, and the most
// it held at once.
func (r *Receiver) InFlight() (now, peak int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inflight, r.peak
}

// WaitFor waits (at most 20 s) until cond holds for the deliveries and
// returns them.
func (r *Receiver) WaitFor(t testing.TB, what string, cond func([]Delivery) bool) []Delivery {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := r.Deliveries()
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; got %d deliveries", what, len(got))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
