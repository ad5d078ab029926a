package gateway

import (
	"container/list"
	"encoding/binary"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/engine"
)

// rateLimiter is a token bucket per API key (--rate-limit requests per
// second, burst of one second's worth). Zero rate disables it.
//
// The key table is truly bounded: it is split into rateLimiterShards shards,
// each with its own lock and a least-recently-used list, and a shard that is
// full evicts its least recently used bucket in O(1) before it takes a new
// key. An evicted bucket starts full again when its key returns, which only
// forgives; with rateLimiterKeysMax far above the keys in use it happens to
// idle keys only.
type rateLimiter struct {
	rate     float64
	burst    float64
	perShard int
	shards   [rateLimiterShards]limiterShard
}

type limiterShard struct {
	mu      sync.Mutex
	buckets map[engine.KeyID]*list.Element // of *bucket
	lru     list.List                      // front: most recently used
}

type bucket struct {
	key    engine.KeyID
	tokens float64
	last   time.Time
}

const (
	// rateLimiterKeysMax bounds the buckets kept across all shards.
	rateLimiterKeysMax = 100000
	rateLimiterShards  = 16
)

func newRateLimiter(perSecond float64) *rateLimiter {
	return newRateLimiterSized(perSecond, rateLimiterKeysMax)
}

func newRateLimiterSized(perSecond float64, keysMax int) *rateLimiter {
	l := &rateLimiter{rate: perSecond, burst: max(perSecond, 1), perShard: max(keysMax/rateLimiterShards, 1)}
	for i := range l.shards {
		l.shards[i].buckets = make(map[engine.KeyID]*list.Element)
	}
	return l
}

// size is the number of buckets kept (for tests and metrics).
func (l *rateLimiter) size() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.buckets)
		s.mu.Unlock()
	}
	return n
}

// bucketFor returns key's bucket, moved to the front of its shard's LRU list,
// creating it (and evicting the least recently used one when the shard is
// full). The caller holds s.mu.
func (l *rateLimiter) bucketFor(s *limiterShard, key engine.KeyID, now time.Time) *bucket {
	if e, ok := s.buckets[key]; ok {
		s.lru.MoveToFront(e)
		return e.Value.(*bucket)
	}
	if len(s.buckets) >= l.perShard {
		oldest := s.lru.Back()
		delete(s.buckets, oldest.Value.(*bucket).key)
		s.lru.Remove(oldest)
	}
	b := &bucket{key: key, tokens: l.burst, last: now}
	s.buckets[key] = s.lru.PushFront(b)
	return b
}

// allow takes one token for key, setting the RateLimit headers; when none
// is left it sets Retry-After and returns false.
func (l *rateLimiter) allow(ctx *fasthttp.RequestCtx, key engine.KeyID) bool {
	if l.rate <= 0 {
		return true
	}
	allowed, remaining, wait := l.take(key, time.Now())
	h := &ctx.Response.Header
	h.Set("RateLimit-Limit", strconv.FormatFloat(l.burst, 'f', 0, 64))
	h.Set("RateLimit-Remaining", strconv.Itoa(max(remaining, 0)))
	if !allowed {
		seconds := int(wait) + 1
		h.Set("Retry-After", strconv.Itoa(seconds))
		h.Set("RateLimit-Reset", strconv.Itoa(seconds))
	}
	return allowed
}

// take spends one of key's tokens at now, if there is one.
func (l *rateLimiter) take(key engine.KeyID, now time.Time) (allowed bool, remaining int, wait float64) {
	s := &l.shards[(binary.LittleEndian.Uint64(key[:8])^binary.LittleEndian.Uint64(key[8:]))%rateLimiterShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	b := l.bucketFor(s, key, now)
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	allowed = b.tokens >= 1
	if allowed {
		b.tokens--
	}
	return allowed, int(b.tokens), (1 - b.tokens) / l.rate
}
