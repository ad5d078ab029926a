package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
)

// getPage reads one page of the listing at path into a P (a *Page type):
// query holds the listing's filters (nil: none), limit is the page size (0:
// the service's default) and startingAfter the id of the last item of the
// page before ("" = from the newest).
func getPage[P any](ctx context.Context, t *transport, path string, query url.Values, limit int, startingAfter string, opts []CallOption) (P, error) {
	call := newCall(http.MethodGet, path, nil, opts)
	if query == nil {
		query = url.Values{}
	}
	if limit > 0 {
		query.Set("limit", strconv.Itoa(limit))
	}
	if startingAfter != "" {
		query.Set("startingAfter", startingAfter)
	}
	call.query = query
	var out P
	_, err := t.do(ctx, call, &out)
	return out, err
}

// walk iterates over a listing newest first, reading a page at a time
// after the id of the last item read; an error ends the iteration
// (yielded once).
func walk[T any](page func(after string) (items []T, hasMore bool, err error), id func(T) string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		after := ""
		for {
			items, more, err := page(after)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range items {
				if !yield(item, nil) {
					return
				}
			}
			if !more || len(items) == 0 {
				return
			}
			after = id(items[len(items)-1])
		}
	}
}
