package gateway

import (
	"slices"

	"github.com/valyala/fasthttp"
)

// queryParams reads the query string, the one rule of every route that
// takes parameters (spec §9): only the named parameters, each at most
// once (a repeated one used to mean the first on one route and an error on
// another), else 400 VALIDATION_ERROR naming the parameter.
func queryParams(ctx *fasthttp.RequestCtx, names ...string) (map[string]string, *apiError) {
	values := make(map[string]string, len(names))
	seen := make(map[string]bool, len(names))
	f := fxFields{}
	for k, v := range ctx.QueryArgs().All() {
		key := string(k)
		switch {
		case !slices.Contains(names, key):
			f.problem(key, "is not a known parameter")
		case seen[key]:
			f.problem(key, "must be given at most once")
		default:
			seen[key] = true
			values[key] = string(v)
		}
	}
	if e := f.err(); e != nil {
		return nil, e
	}
	return values, nil
}
