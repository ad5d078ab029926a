package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
	"github.com/valyala/fasthttp"

	"github.com/oja-exchange/oja/engine"
)

// ---- Reading ---------------------------------------------------------------

// object is one JSON object of a request being validated. Getters record a
// problem per offending member; finish adds unknown members. Numbers are
// read from their literal text straight into integer minor units
// (engine.ParseAmountText): no float64, and no decimal allocation, ever holds
// an amount or a rate.
type object struct {
	members  []member
	problems map[string]any // shared with nested objects; made on the first problem
	prefix   string
	parent   *object // nested objects report problems into the root's map
	inline   [12]member
}

// member is one member of an object: its key and its raw JSON value.
type member struct {
	key   string
	value []byte
	used  bool
}

// objectMembersMax bounds the members of one request object.
const objectMembersMax = 32

// parseObject parses body as one JSON object. It refuses anything else,
// including trailing data and duplicate members, and nesting deeper than
// jsonDepthMax (checked first: json.Valid has no depth limit of its own
// below 10000 levels).
// bodyObject parses the request body as one JSON object; a refusal is
// answered and ok is false. The operator API calls it directly (its gate
// checks the media type of a non-empty body); a partner route calls
// jsonRequest.
func (s *Server) bodyObject(ctx *fasthttp.RequestCtx) (o *object, ok bool) {
	o, e := parseObject(ctx.PostBody())
	if e != nil {
		s.writeError(ctx, e)
		return nil, false
	}
	return o, true
}

// jsonRequest is bodyObject after the partner API's media type check
// (415 unless application/json).
func (s *Server) jsonRequest(ctx *fasthttp.RequestCtx) (*object, bool) {
	if !requireJSON(ctx) {
		s.writeError(ctx, errMediaJSON)
		return nil, false
	}
	return s.bodyObject(ctx)
}

func parseObject(body []byte) (*object, *apiError) {
	if !jsonDepthWithin(body, jsonDepthMax) {
		return nil, fieldError("body", "must not nest objects or arrays more than "+strconv.Itoa(jsonDepthMax)+" levels deep")
	}
	if !json.Valid(body) {
		return nil, fieldError("body", "must be a valid JSON object")
	}
	return objectFrom(body, "", nil)
}

// jsonDepthWithin reports whether no object or array in body (valid JSON or
// not) opens more than max levels deep. One pass, no allocation; brackets
// inside strings do not count.
func jsonDepthWithin(body []byte, max int) bool {
	depth, inString := 0, false
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return false
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return true
}

// objectFrom splits a valid JSON value into an object's members.
// REQUIRES: json.Valid(raw).
func objectFrom(raw []byte, prefix string, parent *object) (*object, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fieldError(nameOr(prefix, "body"), "must be a JSON object")
	}
	o := &object{prefix: prefix, parent: parent}
	o.members = o.inline[:0]
	i := skipSpace(raw, 1)
	if raw[i] == '}' {
		return o, nil
	}
	for {
		end := stringEnd(raw, i)
		key, ok := unquote(raw[i:end])
		if !ok {
			return nil, fieldError(nameOr(prefix, "body"), "must be a JSON object")
		}
		i = skipSpace(raw, end)
		i = skipSpace(raw, i+1) // the ':'
		vend := valueEnd(raw, i)
		for _, m := range o.members {
			if m.key == key {
				return nil, fieldError(o.name(key), "appears more than once")
			}
		}
		if len(o.members) == objectMembersMax {
			return nil, fieldError(nameOr(prefix, "body"), "has too many members")
		}
		o.members = append(o.members, member{key: key, value: raw[i:vend]})
		i = skipSpace(raw, vend)
		if raw[i] == '}' {
			return o, nil
		}
		i = skipSpace(raw, i+1) // the ','
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the JSON string starting at b[i].
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd returns the index just past the JSON value starting at b[i].
// REQUIRES: the value is valid JSON.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	return j
}

// unquote returns the text of a JSON string literal.
func unquote(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1]), true
	}
	var s string
	if json.Unmarshal(lit, &s) != nil {
		return "", false
	}
	return s, true
}

func nameOr(name, fallback string) string {
	if name == "" {
		return fallback
	}
	return name
}

func (o *object) name(member string) string {
	if o.prefix == "" {
		return member
	}
	return o.prefix + "." + member
}

func (o *object) problem(member, text string) {
	root := o
	for root.parent != nil {
		root = root.parent
	}
	if root.problems == nil {
		root.problems = map[string]any{}
	}
	root.problems[o.name(member)] = text
}

func (o *object) raw(name string, required bool) ([]byte, bool) {
	for i := range o.members {
		m := &o.members[i]
		if m.key == name {
			m.used = true
			if string(m.value) == "null" {
				break
			}
			return m.value, true
		}
	}
	if required {
		o.problem(name, "is required")
	}
	return nil, false
}

// str reads a string member of at most maxBytes bytes.
func (o *object) str(member string, required bool, maxBytes int) (string, bool) {
	v, ok := o.raw(member, required)
	if !ok {
		return "", false
	}
	if !utf8.Valid(v) {
		// RFC 8259 §8.1: JSON text is UTF-8. Decoding would keep U+FFFD.
		o.problem(member, "must be valid UTF-8")
		return "", false
	}
	s, ok := unquote(v)
	if !ok {
		o.problem(member, "must be a string")
		return "", false
	}
	if len(s) > maxBytes {
		o.problem(member, "must be at most "+strconv.Itoa(maxBytes)+" bytes")
		return "", false
	}
	return s, true
}

// timestampLayout is the spec's timestamp form (spec §1): RFC 3339 in UTC
// with milliseconds.
const timestampLayout = "2006-01-02T15:04:05.000Z07:00"

// timestamp reads an optional RFC 3339 date-time string member and returns it
// in the spec's form (UTC, milliseconds), so "2026-11-21T11:00:00+01:00"
// is kept as "2026-11-21T10:00:00.000Z". A time finer than a millisecond is
// refused rather than silently truncated, like an over-precise amount.
func (o *object) timestamp(member string) string {
	s, ok := o.str(member, false, chatFieldBytesMax)
	if !ok {
		return ""
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		o.problem(member, "must be an RFC 3339 date-time, e.g. 2026-11-21T10:00:00.123Z")
		return ""
	}
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		o.problem(member, "must be at most millisecond precision")
		return ""
	}
	return t.UTC().Format(timestampLayout)
}

// number reads a JSON number member's text.
func (o *object) number(member string, required bool) ([]byte, bool) {
	v, ok := o.raw(member, required)
	if !ok {
		return nil, false
	}
	if c := v[0]; c != '-' && (c < '0' || c > '9') || len(v) > numberBytesMax {
		o.problem(member, "must be a number")
		return nil, false
	}
	return v, true
}

// integer reads a whole-number member from lo to hi (0 when absent).
func (o *object) integer(member string, required bool, lo, hi int64) (int64, bool) {
	text, ok := o.number(member, required)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(text), 10, 64)
	if err != nil || n < lo || n > hi {
		o.problem(member, fmt.Sprintf("must be a whole number from %d to %d", lo, hi))
		return 0, false
	}
	return n, true
}

// child reads a nested object member.
func (o *object) child(member string) (*object, bool) {
	v, ok := o.raw(member, false)
	if !ok {
		return nil, false
	}
	c, err := objectFrom(v, o.name(member), o)
	if err != nil {
		o.problem(member, "must be an object")
		return nil, false
	}
	return c, true
}

// unknown reports the members no getter asked for.
func (o *object) unknown() {
	for _, m := range o.members {
		if !m.used {
			o.problem(m.key, "is not a known field")
		}
	}
}

// finish reports unknown members and returns the collected problems.
func (o *object) finish() *apiError {
	o.unknown()
	if len(o.problems) > 0 {
		return validationError(o.problems)
	}
	return nil
}

// amount reads a positive amount of currency c.
func (o *object) amount(member string, c engine.Currency) (engine.Amount, bool) {
	text, ok := o.number(member, true)
	if !ok {
		return 0, false
	}
	return amountIn(o, member, text, c)
}

// rate reads a positive rate.
func (o *object) rate(member string) (engine.Rate, bool) {
	text, ok := o.number(member, true)
	if !ok {
		return engine.Rate{}, false
	}
	return rateIn(o, member, text)
}

// ---- Writing ---------------------------------------------------------------

// appendString appends s as a JSON string, escaping what JSON requires (and
// U+2028, U+2029, as encoding/json does) and replacing invalid UTF-8. <, >
// and & stay as they are: the body is application/json, never HTML, and
// "Bearer \u003cAPI_KEY\u003e" in an error text helped no partner.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		// NB: runs of bytes that need no escape (all of most strings: ids,
		// codes, keys) are appended whole.
		run := i
		for run < len(s) && jsonPlain[s[run]] {
			run++
		}
		if run > i {
			b = append(b, s[i:run]...)
			if i = run; i == len(s) {
				break
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c >= 0x20:
				b = append(b, c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&15])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// appendTime appends a timestamp as RFC 3339 UTC with milliseconds.
func appendTime(b []byte, unixMillis int64) []byte {
	b = append(b, '"')
	t := time.UnixMilli(unixMillis).UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		// NB: outside four-digit years, the layout's own rendering.
		b = t.AppendFormat(b, timestampLayout)
		return append(b, '"')
	}
	hour, minute, second := t.Clock()
	milli := t.Nanosecond() / int(time.Millisecond)
	b = append(b,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+second/10), byte('0'+second%10), '.',
		byte('0'+milli/100), byte('0'+milli/10%10), byte('0'+milli%10), 'Z', '"')
	return b
}

// jsonPlain says which bytes appendString copies as they are: printable
// ASCII but the quote and the backslash.
var jsonPlain = func() (plain [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
	}
	return plain
}()

// jsonWriter builds one JSON document by appending; fields keep the order
// they are written in.
type jsonWriter struct {
	b     []byte
	comma bool
}

func (w *jsonWriter) key(k string) {
	if w.comma {
		w.b = append(w.b, ',')
	}
	w.b = appendString(w.b, k)
	w.b = append(w.b, ':')
	w.comma = true
}

func (w *jsonWriter) open(k string) {
	if k != "" {
		w.key(k)
	} else if w.comma {
		w.b = append(w.b, ',')
	}
	w.b = append(w.b, '{')
	w.comma = false
}

func (w *jsonWriter) close() { w.b = append(w.b, '}'); w.comma = true }

func (w *jsonWriter) openArray(k string) {
	w.key(k)
	w.b = append(w.b, '[')
	w.comma = false
}

func (w *jsonWriter) closeArray() { w.b = append(w.b, ']'); w.comma = true }

func (w *jsonWriter) str(k, v string) { w.key(k); w.b = appendString(w.b, v) }

// ref writes a reference's text (NB: a conversion of at most 32 bytes
// that does not escape is made on the stack: no allocation).
func (w *jsonWriter) ref(k string, r *engine.Ref) {
	var buf [engine.RefBytesMax]byte
	w.key(k)
	w.b = appendString(w.b, string(r.AppendText(buf[:0])))
}
func (w *jsonWriter) integer(k string, v int64) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
}
func (w *jsonWriter) boolean(k string, v bool) { w.key(k); w.b = strconv.AppendBool(w.b, v) }
func (w *jsonWriter) time(k string, ms int64)  { w.key(k); w.b = appendTime(w.b, ms) }
func (w *jsonWriter) id(k string, v [16]byte) {
	w.key(k)
	w.b = appendUUID(w.b, v)
}

// appendUUID appends the canonical quoted text form of a UUID without
// allocating.
func appendUUID(b []byte, v [16]byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i, x := range v {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hex[x>>4], hex[x&15])
	}
	return append(b, '"')
}
func (w *jsonWriter) amount(k string, a engine.Amount, c engine.Currency) {
	w.key(k)
	w.b = engine.AppendAmount(w.b, a, c)
}
func (w *jsonWriter) rate(k string, r engine.Rate) { w.key(k); w.b = engine.AppendRate(w.b, r) }
func (w *jsonWriter) decimal(k string, d decimal.Decimal) {
	w.key(k)
	w.b = append(w.b, d.String()...)
}

// value writes an arbitrary detail value (strings, numbers, nested maps and
// slices of those) with sorted keys, for error details.
func (w *jsonWriter) value(k string, v any) {
	if k != "" {
		w.key(k)
	} else if w.comma {
		w.b = append(w.b, ',')
	}
	switch v := v.(type) {
	case string:
		w.b = appendString(w.b, v)
	case int:
		w.b = strconv.AppendInt(w.b, int64(v), 10)
	case int64:
		w.b = strconv.AppendInt(w.b, v, 10)
	case bool:
		w.b = strconv.AppendBool(w.b, v)
	case decimal.Decimal:
		w.b = append(w.b, v.String()...)
	case rawNumber:
		w.b = append(w.b, v...)
	case nil:
		w.b = append(w.b, "null"...)
	case []string:
		w.b = append(w.b, '[')
		for i, s := range v {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = appendString(w.b, s)
		}
		w.b = append(w.b, ']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		w.b = append(w.b, '{')
		w.comma = false
		for _, k := range keys {
			// NB: key, then the value with no key of its own: value("") means
			// "no key" (an array element), and a request member may be
			// named "" (FuzzAcceptJSON found details rendered without it).
			w.key(k)
			w.comma = false
			w.value("", v[k])
		}
		w.b = append(w.b, '}')
	default:
		w.b = append(w.b, "null"...)
	}
	w.comma = true
}

// rawNumber is a number already formatted as JSON.
type rawNumber []byte
