package actors

import (
	"sync"
	"time"

	"github.com/oja-exchange/oja/engine"
)

// Term is one term of service: the right to write, held by one process at
// a time. It bundles what serves during it — the actors (System), the
// webhook dispatcher fed from the same records, and what the actors write
// to — so that they start together, are handed to the gateway together,
// and end together.
//
// A single node makes one term once recovery has finished; it ends at
// shutdown. A cluster node makes one each time it gains the leadership and
// ends it as soon as it loses it (actors/cluster). The gateway serves the
// term it was last given until that term's Done closes: from then on it
// answers as a node that does not lead (forwarding, or 503), and every
// rate stream opened during the term ends, so its client reconnects to
// whoever serves now.
type Term struct {
	sys     *System
	hooks   Webhooks
	chains  ChainWatchers
	release func()
	done    chan struct{}
	end     sync.Once
}

// ChainWatchers are a term's chain watchers (actors/chainwatch): they
// credit deposits through the term's actors, so they stop before them.
type ChainWatchers interface {
	Stop()
	Statuses() []ChainWatchStatus
}

// ChainWatchStatus is what a chain's watcher reports (GET
// /admin/v1/chains, /metrics).
type ChainWatchStatus struct {
	Chain         engine.Chain
	RPCHost       string
	Head          uint64 // the chain's head at the last poll (0: none yet)
	Processed     uint64 // the last block processed (the durable cursor)
	Confirmations uint32
	LastError     string // the last RPC error, "" once a poll succeeds
	LastPollAt    int64  // unix ms of the last successful poll (0: none)
	RPCErrors     uint64 // RPC errors since the watcher started
}

// WithChains gives t its chain watchers (before it is served).
func (t *Term) WithChains(w ChainWatchers) *Term {
	t.chains = w
	return t
}

// Chains are the term's chain watchers, nil if it has none.
func (t *Term) Chains() ChainWatchers { return t.chains }

// Webhooks is a term's webhook dispatcher (*webhook.Dispatcher): fed the
// endpoints and the events they are owed (engine.WebhookObserver), started
// by whoever fed it, stopped by the term; operators read its backlog and
// counters, and a partner's test delivery goes through it.
type Webhooks interface {
	engine.WebhookObserver
	Start()
	Stop()
	// Status is an endpoint's backlog.
	Status(id engine.WebhookID) WebhookStatus
	// Counters are the totals since start.
	Counters() WebhookCounters
	// Test delivers a webhook.test event once, to w's URL.
	Test(w *engine.Webhook, event engine.EventID, body []byte) error
}

// WebhookAttempt describes an endpoint's last delivery attempt.
type WebhookAttempt struct {
	At       time.Time
	Event    engine.EventID
	Status   int    // HTTP status; 0: no answer
	Error    string // why it failed ("" when delivered)
	Attempts int    // that event's attempt number
}

// WebhookStatus is an endpoint's backlog, for operators.
type WebhookStatus struct {
	Owed        int            // events not yet delivered nor abandoned
	OldestOwed  time.Time      // zero: none owed
	NextAttempt time.Time      // the earliest retry scheduled; zero: none
	Dropped     uint64         // events not owed since start: the outbox was full
	Last        WebhookAttempt // zero: no attempt yet
	InFlight    int            // requests in flight
	// Unknown: the dispatcher has not been fed this endpoint (the log
	// follower is still catching up) or it was deleted.
	Unknown bool
}

// WebhookCounters are a dispatcher's totals since start: attempts
// delivered, failed (to be retried) and abandoned (failed, window over),
// and events dropped (outbox full).
type WebhookCounters struct {
	Delivered, Failed, Abandoned, Dropped uint64
	Owed                                  int // events owed now, all endpoints
	Endpoints                             int
}

// NewTerm makes the term served by sys and hooks (nil: no dispatcher).
// release, when set, runs last when the term ends, once the actors have
// stopped: it frees what the term's maker gave the actors (a cluster
// leader's Raft log writer).
func NewTerm(sys *System, hooks Webhooks, release func()) *Term {
	return &Term{sys: sys, hooks: hooks, release: release, done: make(chan struct{})}
}

// System is the term's actors. Once the term has ended they refuse
// writes (ErrUnavailable).
func (t *Term) System() *System { return t.sys }

// Webhooks is the term's webhook dispatcher, nil if it has none.
func (t *Term) Webhooks() Webhooks { return t.hooks }

// Done is closed when the term starts ending.
func (t *Term) Done() <-chan struct{} { return t.done }

// Ended reports whether the term has started ending.
func (t *Term) Ended() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// End ends the term, once, in this order: Done closes (the gateway stops
// serving it and ends its streams), the dispatcher and the chain watchers
// stop (before the actors: what they record goes through them), the
// actors stop (writes still pending end, committed or failed, never
// acknowledged otherwise), and release runs. Other calls wait until it has
// ended.
func (t *Term) End() {
	t.end.Do(func() {
		close(t.done)
		if t.hooks != nil {
			t.hooks.Stop()
		}
		if t.chains != nil {
			t.chains.Stop()
		}
		t.sys.Stop()
		if t.release != nil {
			t.release()
		}
	})
}
