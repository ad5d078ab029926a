package gateway

import "github.com/fasthttp/router"

// registerFX adds the XML FX API (contract §7) to the public router.
func (s *Server) registerFX(r *router.Router) {}
