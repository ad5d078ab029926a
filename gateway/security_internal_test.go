package gateway

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestPanicAnswersWithoutInternals (spec §9: 500 is a bug, with no
// internals in the message): a handler that panics is answered 500
// INTERNAL_ERROR with the generic message, whatever the panic carried, and
// the request id is still set.
func TestPanicAnswersWithoutInternals(t *testing.T) {
	s := New(Config{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
	h := s.recover("public", func(ctx *fasthttp.RequestCtx) {
		ctx.Response.Header.Set("X-Half-Written", "yes")
		panic("pebble: corrupt sstable /var/lib/oja/store/000042.sst; key oja_live_SECRET")
	})
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/api/v1/partners/balances")
	h(&ctx)
	body := string(ctx.Response.Body())
	if got := ctx.Response.StatusCode(); got != fasthttp.StatusInternalServerError {
		t.Fatalf("status %d, want 500", got)
	}
	if !strings.Contains(body, `"code":"INTERNAL_ERROR"`) || !strings.Contains(body, `"message":"internal error"`) {
		t.Errorf("body %s, want INTERNAL_ERROR with the generic message", body)
	}
	for _, secret := range []string{"pebble", "sstable", "/var/lib", "SECRET"} {
		if strings.Contains(body, secret) {
			t.Errorf("the answer leaks %q: %s", secret, body)
		}
	}
	if len(ctx.Response.Header.Peek("X-Half-Written")) != 0 {
		t.Error("headers set before the panic were sent")
	}
	if len(ctx.Response.Header.Peek("X-Request-Id")) == 0 {
		t.Error("no X-Request-Id on the 500")
	}
}
