package gateway

// The OpenAPI 3.1 document of both APIs (openapi.json, embedded), served
// per listener: the public listener serves the partner API's part at
// GET /api/v1/openapi.json, the admin listener the operator API's part at
// GET /admin/v1/openapi.json. Neither needs a credential: the documents
// hold no secrets, and tools (code generators, API explorers) fetch them
// before they have one. Each part keeps only the components its paths
// reach, so nothing about the operator API is served on the public
// listener.
//
// The document is kept true by openapi_test.go, which drives every JSON
// endpoint of a real server and validates each response body against its
// schema, and by the route check below: when a router is built, every
// route it serves must be in the document and every documented path must
// be served; a difference is logged at error level (tests fail on it).
//
// NB: one hand-written JSON file rather than a document generated from the
// handlers: the handlers write JSON by hand (jsonio.go) for speed, so there
// are no response structs to reflect on, and a test against real responses
// catches drift that a generator from types would not.

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"
)

//go:embed openapi.json
var openAPIDocument []byte

const (
	publicOpenAPIPath = apiBase + "/openapi.json"
	adminOpenAPIPath  = adminBase + "/openapi.json"
	// openAPICacheControl lets clients keep a document for a while; it only
	// changes with a new build.
	openAPICacheControl = "public, max-age=300"
)

// OpenAPIDocument returns the whole OpenAPI document (both listeners'
// paths), as embedded.
func OpenAPIDocument() []byte { return bytes.Clone(openAPIDocument) }

// openAPIListener names a listener's part of the document.
type openAPIListener int

const (
	openAPIPublic openAPIListener = iota
	openAPIAdmin
)

// onListener reports whether a documented path is served by listener l:
// /admin/… and /metrics by the admin listener, health probes by both,
// everything else by the public listener.
func (l openAPIListener) onListener(path string) bool {
	switch {
	case path == "/livez" || path == "/healthz" || path == "/readyz":
		return true
	case strings.HasPrefix(path, adminBase+"/") || path == "/metrics":
		return l == openAPIAdmin
	}
	return l == openAPIPublic
}

var openAPIParts struct {
	once  sync.Once
	parts [2][]byte
	err   error
}

// openAPIPart returns listener l's document, built once.
func openAPIPart(l openAPIListener) ([]byte, error) {
	openAPIParts.once.Do(func() {
		for _, listener := range []openAPIListener{openAPIPublic, openAPIAdmin} {
			part, err := buildOpenAPIPart(listener)
			if err != nil {
				openAPIParts.err = err
				return
			}
			openAPIParts.parts[listener] = part
		}
	})
	return openAPIParts.parts[l], openAPIParts.err
}

// buildOpenAPIPart keeps the paths of listener l and the components they
// reach (through $ref, transitively, and security requirements).
func buildOpenAPIPart(l openAPIListener) ([]byte, error) {
	var doc map[string]any
	d := json.NewDecoder(bytes.NewReader(openAPIDocument))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		return nil, fmt.Errorf("gateway: openapi.json: %w", err)
	}
	paths, _ := doc["paths"].(map[string]any)
	kept := map[string]any{}
	for p, item := range paths {
		if l.onListener(p) {
			kept[p] = item
		}
	}
	doc["paths"] = kept
	info, _ := doc["info"].(map[string]any)
	if l == openAPIPublic {
		info["title"] = "Oja partner API"
	} else {
		info["title"] = "Oja operator API"
	}

	keepReachedComponents(doc, kept, l == openAPIPublic)
	var tags []any
	used := map[string]bool{}
	walkTags(kept, used)
	for _, tag := range doc["tags"].([]any) {
		if used[tag.(map[string]any)["name"].(string)] {
			tags = append(tags, tag)
		}
	}
	doc["tags"] = tags
	return json.Marshal(doc)
}

// keepReachedComponents leaves in doc's components only what paths (and,
// for the partner document, the webhook deliveries: OpenAPI 3.1
// "webhooks", the partner's to receive) reach through $ref, and the
// security schemes they name; the operator document has no webhooks.
func keepReachedComponents(doc map[string]any, paths map[string]any, partner bool) {
	components, _ := doc["components"].(map[string]any)
	reached := map[string]bool{} // "schemas/Quote"
	schemes := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				name := strings.TrimPrefix(r, "#/components/")
				if !reached[name] {
					reached[name] = true
					kind, key, _ := strings.Cut(name, "/")
					section, _ := components[kind].(map[string]any)
					walk(section[key])
				}
			}
			if sec, ok := v["security"].([]any); ok {
				for _, req := range sec {
					for name := range req.(map[string]any) {
						schemes[name] = true
					}
				}
			}
			for _, child := range v {
				walk(child)
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	walk(paths)
	if partner {
		walk(doc["webhooks"])
	} else {
		delete(doc, "webhooks")
	}
	for kind, section := range components {
		m, _ := section.(map[string]any)
		for key := range m {
			if kind == "securitySchemes" && !schemes[key] || kind != "securitySchemes" && !reached[kind+"/"+key] {
				delete(m, key)
			}
		}
	}
}

func walkTags(paths map[string]any, used map[string]bool) {
	for _, item := range paths {
		for _, op := range item.(map[string]any) {
			opm, ok := op.(map[string]any)
			if !ok {
				continue
			}
			tags, _ := opm["tags"].([]any)
			for _, t := range tags {
				used[t.(string)] = true
			}
		}
	}
}

func (s *Server) serveOpenAPI(l openAPIListener) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		doc, err := openAPIPart(l)
		if err != nil {
			s.cfg.Logger.Error("openapi document", "err", err)
			s.writeError(ctx, errInternal)
			return
		}
		ctx.SetStatusCode(fasthttp.StatusOK)
		ctx.SetContentType("application/json")
		ctx.Response.Header.Set("Cache-Control", openAPICacheControl)
		ctx.SetBody(doc)
	}
}

// checkDocumentedRoutes logs, at error level, each route r serves that the
// document does not describe and each documented operation of the
// listener that r does not serve.
func (s *Server) checkDocumentedRoutes(r *router.Router, l openAPIListener) {
	for _, problem := range undocumentedRoutes(r.List(), l) {
		s.cfg.Logger.Error("openapi: the document and the routes differ", "listener", l.String(), "problem", problem)
	}
}

func (l openAPIListener) String() string {
	if l == openAPIAdmin {
		return "admin"
	}
	return "public"
}

// undocumentedRoutes compares served routes (method → paths) with the
// document's operations on listener l.
func undocumentedRoutes(served map[string][]string, l openAPIListener) []string {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		return []string{"openapi.json does not parse: " + err.Error()}
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths {
		if !l.onListener(path) {
			continue
		}
		for method := range item {
			if method != "parameters" && method != "summary" && method != "description" && method != "servers" {
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	var problems []string
	for method, paths := range served {
		for _, path := range paths {
			if path == consoleBase || strings.HasPrefix(path, consoleBase+"/") {
				continue // the console's pages are not the API
			}
			key := method + " " + path
			if !documented[key] {
				problems = append(problems, "served, not documented: "+key)
			}
			delete(documented, key)
		}
	}
	for key := range documented {
		problems = append(problems, "documented, not served: "+key)
	}
	slices.Sort(problems)
	return problems
}
