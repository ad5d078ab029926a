package gateway

import (
	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/actors"
)

// A partner's own API keys (contract §15.4).

const keysPath = apiBase + "/partners/keys"

func (s *Server) registerKeys(r *router.Router) {
	r.GET(keysPath, s.partner(s.listKeys))
}

// listKeys is GET /api/v1/partners/keys: the caller's client's keys that
// work, in the calling key's mode (as every partner route, one mode at a
// time), oldest first: {"data":[{"keyId","mode","createdAt"}],"hasMore":
// false}. Never a secret (the service keeps only their hashes); revoked
// keys are left out (the operator's GET /admin/v1/clients/{id} lists them).
func (s *Server) listKeys(ctx *fasthttp.RequestCtx, sys *actors.System, who actors.Principal) {
	if _, e := queryParams(ctx); e != nil {
		s.writeError(ctx, e)
		return
	}
	w := jsonWriter{}
	w.open("")
	w.openArray("data")
	for _, k := range sys.ClientKeys(who.Client) {
		if k.Mode != who.Mode || k.Revoked {
			continue
		}
		w.open("")
		w.id("keyId", k.ID)
		w.str("mode", k.Mode.String())
		w.time("createdAt", k.CreatedAt)
		w.close()
	}
	w.closeArray()
	w.boolean("hasMore", false)
	w.close()
	s.writeJSON(ctx, fasthttp.StatusOK, w.b)
}
