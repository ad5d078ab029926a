package gateway

import (
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/engine"
)

// rateLimiter is a token bucket per API key (--rate-limit requests per
// second, burst of one second's worth). Zero rate disables it.
type rateLimiter struct {
	rate    float64
	burst   float64
	mu      sync.Mutex
	buckets map[engine.KeyID]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// rateLimiterKeysMax bounds the buckets kept; beyond it idle ones are
// dropped (a dropped bucket starts full again, which only forgives).
const rateLimiterKeysMax = 100000

func newRateLimiter(perSecond float64) *rateLimiter {
	return &rateLimiter{rate: perSecond, burst: max(perSecond, 1), buckets: make(map[engine.KeyID]*bucket)}
}

// allow takes one token for key, setting the RateLimit headers; when none
// is left it sets Retry-After and returns false.
func (l *rateLimiter) allow(ctx *fasthttp.RequestCtx, key engine.KeyID) bool {
	if l.rate <= 0 {
		return true
	}
	now := time.Now()
	l.mu.Lock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= rateLimiterKeysMax {
			for k, old := range l.buckets {
				if now.Sub(old.last) > time.Minute {
					delete(l.buckets, k)
				}
			}
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	allowed := b.tokens >= 1
	if allowed {
		b.tokens--
	}
	remaining := int(b.tokens)
	wait := (1 - b.tokens) / l.rate
	l.mu.Unlock()
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
