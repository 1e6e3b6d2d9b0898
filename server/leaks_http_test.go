package server_test

// Regression tests of the leaks an adversarial client found: the probes of an
// adversarial client, repeated through real HTTP on loopback against the
// server as cmd/h4r serves it. Every test here failed before its fix (each
// says what the probe got then).

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/internal/pgtest"
	"github.com/h4r/h4r/server"
)

// patience bounds every wait on the server: generous, because the tests
// run on loaded 2-core machines under -race. No test asserts timing.
const patience = 2 * time.Minute

// hostPort is the host:port of a base URL.
func hostPort(base string) string { return strings.TrimPrefix(base, "http://") }

// dial opens a TCP connection to the server at base, closed when t ends.
func dial(t testing.TB, base string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", hostPort(base))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// readResponse reads one HTTP response to a request of method from br.
func readResponse(t testing.TB, br *bufio.Reader, method string) response {
	t.Helper()
	res, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b, close: res.Close}
}

// rawExchange writes raw on a new connection and reads one response: for
// requests Go's client will not send (a bad escape in the path, no Host).
func rawExchange(t testing.TB, base, raw string) response {
	t.Helper()
	conn := dial(t, base)
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatalf("writing the request: %v", err)
	}
	return readResponse(t, bufio.NewReader(conn), http.MethodGet)
}

// a2aError checks that r is a ContextError envelope with the status of its
// code and returns the error.
func a2aError(t testing.TB, r response) *h4r.Error {
	t.Helper()
	env := decodeEnvelope(t, r)
	if env.Meta.Type != h4r.TypeContextError {
		t.Fatalf("status %d: meta.type %q, want ContextError: %s", r.status, env.Meta.Type, r.body)
	}
	e := envelopeError(t, env)
	if want := server.HTTPStatus(e.Code); r.status != want {
		t.Errorf("status %d for code %s, want %d", r.status, e.Code, want)
	}
	return e
}

// errorOf returns the error of an error answer: a ContextError envelope on
// /v1/a2a, the error shape elsewhere.
func errorOf(t testing.TB, path string, r response) *h4r.Error {
	t.Helper()
	if path == "/v1/a2a" {
		return a2aError(t, r)
	}
	return checkErrorShape(t, r)
}

const (
	envelopeBody = `{"meta": {"id": "msg-leak", "type": "ContextRequest"}, "payload": {"query": {"text": "login"}}}`
	plantedItem  = `{"id": "planted", "text": "written by a web page"}`
)

// Without keys, a web page could write items with a
// cross-site POST (fetch with mode no-cors sends text/plain and its
// Origin) and read everything by DNS rebinding (its own name resolving to
// 127.0.0.1: any Host was served). Before the fix every case refused here
// was answered 200.
func TestBrowserGuardWithoutKeys(t *testing.T) {
	base := newStack(t).serve(t)
	_, port, _ := net.SplitHostPort(hostPort(base))
	read, pack := "/v1/items/mem-root", "/v1/context-pack"
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		header []string
		field  string // of the permission_denied error; "" when served
	}{
		{"a rebinding name as Host", http.MethodGet, read, "", []string{"Host", "evil.example:" + port}, "Host"},
		{"a rebinding name without a port", http.MethodGet, read, "", []string{"Host", "evil.example"}, "Host"},
		{"a name that starts like localhost", http.MethodGet, read, "", []string{"Host", "localhost.evil.example:" + port}, "Host"},
		{"a name that embeds a loopback address", http.MethodGet, read, "", []string{"Host", "127.0.0.1.nip.io:" + port}, "Host"},
		{"a LAN address", http.MethodGet, read, "", []string{"Host", "192.168.1.10:" + port}, "Host"},
		{"a rebinding name on a context pack", http.MethodPost, pack, healerBody, []string{"Host", "evil.example:" + port}, "Host"},
		{"a rebinding name on a probe", http.MethodGet, "/health/ready", "", []string{"Host", "evil.example:" + port}, "Host"},
		{"a rebinding name on A2A", http.MethodPost, "/v1/a2a", envelopeBody, []string{"Host", "evil.example:" + port}, "Host"},
		{"localhost", http.MethodGet, read, "", []string{"Host", "localhost:" + port}, ""},
		{"LOCALHOST without a port", http.MethodGet, read, "", []string{"Host", "LOCALHOST"}, ""},
		{"127.0.0.1", http.MethodGet, read, "", []string{"Host", "127.0.0.1:" + port}, ""},
		{"elsewhere in 127.0.0.0/8", http.MethodGet, read, "", []string{"Host", "127.4.5.6"}, ""},
		{"the IPv6 loopback", http.MethodGet, read, "", []string{"Host", "[::1]:" + port}, ""},
		{"a foreign Origin on a context pack", http.MethodPost, pack, healerBody, []string{"Origin", "https://evil.example"}, "Origin"},
		{"a foreign Origin on a read", http.MethodGet, read, "", []string{"Origin", "https://evil.example"}, "Origin"},
		{"a foreign Origin on A2A", http.MethodPost, "/v1/a2a", envelopeBody, []string{"Origin", "https://evil.example"}, "Origin"},
		{"a foreign Origin on the loopback port", http.MethodPost, pack, healerBody, []string{"Origin", "http://evil.example:" + port}, "Origin"},
		{"the opaque Origin null", http.MethodPost, pack, healerBody, []string{"Origin", "null"}, "Origin"},
		{"an Origin on localhost", http.MethodPost, pack, healerBody, []string{"Origin", "http://localhost:3000"}, ""},
		{"an Origin on 127.0.0.1", http.MethodPost, pack, healerBody, []string{"Origin", "http://127.0.0.1:" + port}, ""},
		{"an Origin on [::1]", http.MethodPost, pack, healerBody, []string{"Origin", "http://[::1]:" + port}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			if tt.body != "" {
				body = []byte(tt.body)
			}
			r := do(t, tt.method, base+tt.path, body, tt.header...)
			if tt.field == "" {
				if r.status != http.StatusOK {
					t.Fatalf("status %d, want 200: %s", r.status, r.body)
				}
				return
			}
			if r.status != http.StatusForbidden {
				t.Fatalf("status %d, want 403: %s", r.status, r.body)
			}
			if e := errorOf(t, tt.path, r); e.Code != h4r.EFORBIDDEN || e.Field != tt.field {
				t.Errorf("error %+v, want permission_denied naming %s", e, tt.field)
			}
		})
	}
	// The probe itself: the item a page posted is not written.
	r := post(t, base+"/v1/items", plantedItem, "Content-Type", "text/plain;charset=UTF-8", "Origin", "https://evil.example")
	if r.status != http.StatusForbidden {
		t.Errorf("a cross-site text/plain ingest: status %d, want 403: %s", r.status, r.body)
	}
	if _, ok := getItem(t, base, "planted"); ok {
		t.Error("a cross-site ingest wrote its item")
	}
}

// With --insecure (cmd/h4r on a non-loopback address without keys) the
// server is reached by other names on purpose, so WithAnyHost serves any
// Host; a browser's foreign Origin is still refused. Before the fix the
// foreign Origin was served.
func TestBrowserGuardWithAnyHost(t *testing.T) {
	base := newStack(t, server.WithAnyHost()).serve(t)
	if r := do(t, http.MethodGet, base+"/v1/items/mem-root", nil, "Host", "h4r.internal:8080"); r.status != http.StatusOK {
		t.Errorf("another Host: status %d, want 200: %s", r.status, r.body)
	}
	r := post(t, base+"/v1/context-pack", healerBody, "Origin", "https://evil.example")
	if r.status != http.StatusForbidden {
		t.Fatalf("a foreign Origin: status %d, want 403: %s", r.status, r.body)
	}
	if e := checkErrorShape(t, r); e.Field != "Origin" {
		t.Errorf("field %q, want Origin", e.Field)
	}
}

// With keys a browser cannot send the bearer cross-site (the server grants
// no CORS), so Host and Origin are not checked (unchanged by the fix); the
// body must still be JSON.
func TestBrowserGuardWithKeys(t *testing.T) {
	base := newAuthStack(t).serve(t)
	if r := do(t, http.MethodGet, base+"/v1/items/mem-root", nil, append(bearer(adminKey), "Host", "h4r.example:443")...); r.status != http.StatusOK {
		t.Errorf("a key with another Host: status %d, want 200: %s", r.status, r.body)
	}
	if r := post(t, base+"/v1/context-pack", healerBody, append(bearer(healerKey), "Origin", "https://agents.example")...); r.status != http.StatusOK {
		t.Errorf("a key with an Origin: status %d, want 200: %s", r.status, r.body)
	}
	r := post(t, base+"/v1/items", plantedItem, append(bearer(ingestKey), "Content-Type", "text/plain")...)
	if r.status != http.StatusUnsupportedMediaType {
		t.Fatalf("a text/plain ingest with a key: status %d, want 415: %s", r.status, r.body)
	}
	if e := checkErrorShape(t, r); e.Code != h4r.EMEDIATYPE || e.Field != "Content-Type" {
		t.Errorf("error %+v, want unsupported_media_type naming Content-Type", e)
	}
}

// A body in any media type was read as JSON. Every
// request with a body must now say application/json (parameters such as
// charset=utf-8 allowed), or gets 415 naming the header. Before the fix
// each 415 here was served.
func TestContentTypeRequired(t *testing.T) {
	base := newStack(t).serve(t)
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		ctype  string
		status int
	}{
		{"text/plain on a context pack", http.MethodPost, "/v1/context-pack", healerBody, "text/plain", http.StatusUnsupportedMediaType},
		{"no Content-Type", http.MethodPost, "/v1/context-pack", healerBody, "", http.StatusUnsupportedMediaType},
		{"a form on ingest", http.MethodPost, "/v1/items", plantedItem, "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"multipart on ingest", http.MethodPost, "/v1/items", plantedItem, "multipart/form-data; boundary=x", http.StatusUnsupportedMediaType},
		{"text/plain on A2A", http.MethodPost, "/v1/a2a", envelopeBody, "text/plain", http.StatusUnsupportedMediaType},
		{"a JSON-like type", http.MethodPost, "/v1/context-pack", healerBody, "text/json", http.StatusUnsupportedMediaType},
		{"JSON in another charset", http.MethodPost, "/v1/context-pack", healerBody, "application/json; charset=iso-8859-1", http.StatusUnsupportedMediaType},
		{"a malformed type", http.MethodPost, "/v1/context-pack", healerBody, "application/json; charset", http.StatusUnsupportedMediaType},
		{"a text/plain body on GET", http.MethodGet, "/v1/items/mem-root", `{}`, "text/plain", http.StatusUnsupportedMediaType},
		{"a text/plain body on DELETE", http.MethodDelete, "/v1/items/mem-root", `{}`, "text/plain", http.StatusUnsupportedMediaType},
		{"JSON", http.MethodPost, "/v1/context-pack", healerBody, "application/json", http.StatusOK},
		{"JSON with charset=utf-8", http.MethodPost, "/v1/context-pack", healerBody, "application/json; charset=utf-8", http.StatusOK},
		{"JSON in capitals", http.MethodPost, "/v1/context-pack", healerBody, "Application/JSON; Charset=UTF-8", http.StatusOK},
		{"JSON on A2A", http.MethodPost, "/v1/a2a", envelopeBody, "application/json", http.StatusOK},
		{"a GET without a body needs no type", http.MethodGet, "/v1/items/mem-root", "", "", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			if tt.body != "" {
				body = []byte(tt.body)
			}
			r := do(t, tt.method, base+tt.path, body, "Content-Type", tt.ctype)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if r.status == http.StatusOK {
				return
			}
			e := errorOf(t, tt.path, r)
			if e.Code != h4r.EMEDIATYPE || e.Field != "Content-Type" || !strings.Contains(e.Message, "application/json") {
				t.Errorf("error %+v, want unsupported_media_type naming Content-Type and application/json", e)
			}
		})
	}
	if _, ok := getItem(t, base, "planted"); ok {
		t.Error("an ingest that was not JSON wrote its item")
	}
	if _, ok := getItem(t, base, "mem-root"); !ok {
		t.Error("a DELETE whose body was not JSON deleted the item")
	}
}

// net/http answers some requests itself, before any
// handler, in plain text ("400 Bad Request", "431 Request Header Fields
// Too Large"). Server.Listener rewrites them into the error shape. Before
// the fix each answer here was plain text.
func TestErrorShapeBeforeRouting(t *testing.T) {
	base := newStack(t).serve(t)
	pad := strings.Repeat("a", 100<<10)
	tests := []struct {
		name string
		raw  string
		want string // in the message
	}{
		{"a bad percent-escape in the path", "GET /v1/items/%zz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "malformed"},
		{"a truncated percent-escape in the path", "DELETE /v1/items/mem-root%2 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "malformed"},
		{"headers over the limit", "GET /v1/items/mem-root HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + pad + "\r\n\r\n", strconv.Itoa(server.MaxHeaderBytes)},
		{"no Host header", "GET /health/live HTTP/1.1\r\n\r\n", "Host"},
		{"a malformed header line", "GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n", "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rawExchange(t, base, tt.raw)
			e := checkErrorShape(t, r)
			if e.Code != h4r.EINVALID || !strings.Contains(e.Message, tt.want) {
				t.Errorf("error %+v, want invalid_argument mentioning %q", e, tt.want)
			}
		})
	}
	// The server still serves, and the rewriting leaves answers alone.
	if r := do(t, http.MethodGet, base+"/health/live", nil); r.status != http.StatusOK {
		t.Errorf("after the refusals: status %d: %s", r.status, r.body)
	}
}

// a method a route does not serve was 400
// invalid_argument; it is 405 method_not_allowed with the Allow header,
// and on /v1/a2a a ContextError envelope.
func TestMethodNotAllowed(t *testing.T) {
	base := newStack(t).serve(t)
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		allow  string
	}{
		{"HEAD on a POST route", http.MethodHead, "/v1/context-pack", "", "OPTIONS, POST"},
		{"PUT on a POST route", http.MethodPut, "/v1/items", plantedItem, "OPTIONS, POST"},
		{"GET on a POST route", http.MethodGet, "/v1/context-pack", "", "OPTIONS, POST"},
		{"PUT on an item", http.MethodPut, "/v1/items/mem-root", `{"id": "mem-root", "text": "x"}`, "OPTIONS, DELETE, GET"},
		{"PATCH on a probe", http.MethodPatch, "/health/live", "", "OPTIONS, GET"},
		{"GET on A2A", http.MethodGet, "/v1/a2a", "", "OPTIONS, POST"},
		{"PUT on A2A", http.MethodPut, "/v1/a2a", envelopeBody, "OPTIONS, POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			if tt.body != "" {
				body = []byte(tt.body)
			}
			r := do(t, tt.method, base+tt.path, body)
			if r.status != http.StatusMethodNotAllowed {
				t.Fatalf("status %d, want 405: %s", r.status, r.body)
			}
			if got := r.header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
			if tt.method == http.MethodHead { // no body, by HTTP
				if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					t.Errorf("Content-Type %q, want application/json", ct)
				}
				return
			}
			if e := errorOf(t, tt.path, r); e.Code != h4r.EMETHOD || !strings.Contains(e.Message, tt.method) {
				t.Errorf("error %+v, want method_not_allowed naming %s", e, tt.method)
			}
		})
	}
	if _, ok := getItem(t, base, "planted"); ok {
		t.Error("a PUT wrote its item")
	}
}

// on /v1/a2a, a missing or unknown key (401), a key
// that may not read (403) and a used-up rate limit (429) were answered in
// the plain error shape; an agent speaking A2A gets ContextError
// envelopes, as for every other error there.
func TestA2AAuthErrorsAreEnvelopes(t *testing.T) {
	base := newAuthStack(t).serve(t)
	steps := []struct {
		name   string
		header []string
		status int
		code   string
	}{
		{"no key", nil, http.StatusUnauthorized, h4r.EUNAUTH},
		{"an unknown key", bearer("guess"), http.StatusUnauthorized, h4r.EUNAUTH},
		{"an ingest-only key", bearer(ingestKey), http.StatusForbidden, h4r.EFORBIDDEN},
		{"a slow key, first", bearer(slowKey), http.StatusOK, ""},
		{"a slow key, second", bearer(slowKey), http.StatusOK, ""},
		{"a slow key, over its limit", bearer(slowKey), http.StatusTooManyRequests, h4r.EEXHAUSTED},
	}
	for _, s := range steps {
		r := post(t, base+"/v1/a2a", envelopeBody, s.header...)
		if r.status != s.status {
			t.Fatalf("%s: status %d, want %d: %s", s.name, r.status, s.status, r.body)
		}
		if s.code == "" {
			continue
		}
		if e := a2aError(t, r); e.Code != s.code {
			t.Errorf("%s: code %s, want %s", s.name, e.Code, s.code)
		}
		switch r.status {
		case http.StatusUnauthorized:
			if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s: no Bearer challenge", s.name)
			}
		case http.StatusTooManyRequests:
			if r.header.Get("Retry-After") != "30" {
				t.Errorf("%s: Retry-After %q, want 30", s.name, r.header.Get("Retry-After"))
			}
		}
	}
}

// stores are the stores a probe is repeated on: the embedded one, and
// Postgres when the test database is there.
var stores = []struct {
	name      string
	configure func(t *testing.T) func(*config.Config)
}{
	{"sqlite", func(*testing.T) func(*config.Config) { return nil }},
	{"postgres", func(t *testing.T) func(*config.Config) {
		url := pgtest.Schema(t, "h4r_server_test")
		return func(c *config.Config) { c.DatabaseURL = url }
	}},
}

// a NUL byte in a filter value (or an anchor) reached
// Postgres, which refused it, and the answer was a degraded pack carrying
// the database's message. Requests are planned once for every store, so
// the NUL is a 400 naming the field on both (before the fix: 200 on both).
func TestFilterNUL(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		request string // the context request, the envelope's payload on /v1/a2a
		field   string
	}{
		{"a metadata value", "/v1/context-pack", `{"query": {"text": "login", "filters": {"status": "fail\u0000ed"}}}`, "query.filters.status"},
		{"a kind", "/v1/context-pack", `{"query": {"text": "login", "filters": {"kind": "test_\u0000failure"}}}`, "query.filters.kind"},
		{"a tag in a list", "/v1/context-pack", `{"query": {"text": "login", "filters": {"tags": ["login", "e2e\u0000"]}}}`, "query.filters.tags[1]"},
		{"an anchor", "/v1/context-pack", `{"query": {"type": "causal", "text": "x"}, "anchors": ["mem-root\u0000"]}`, "anchors[0]"},
		{"a metadata value in an envelope", "/v1/a2a", `{"query": {"text": "login", "filters": {"status": "\u0000"}}}`, "payload.query.filters.status"},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			base := newStackWith(t, st.configure(t)).serve(t)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					body := tt.request
					if tt.path == "/v1/a2a" {
						body = `{"meta": {"id": "m-nul", "type": "ContextRequest"}, "payload": ` + tt.request + `}`
					}
					r := post(t, base+tt.path, body)
					if r.status != http.StatusBadRequest {
						t.Fatalf("status %d, want 400: %s", r.status, r.body)
					}
					if e := errorOf(t, tt.path, r); e.Code != h4r.EINVALID || e.Field != tt.field || !strings.Contains(e.Message, "NUL") {
						t.Errorf("error %+v, want invalid_argument at %s saying NUL", e, tt.field)
					}
				})
			}
		})
	}
}

// the store names the items of a write "items[i]", and
// a single item (not {"items": [...]}) got errors prefixed "items[0]",
// though the README says its fields are named without it.
func TestSingleItemErrorFields(t *testing.T) {
	huge := strings.Repeat("x", h4r.MaxItemBytes)
	tests := []struct {
		name   string
		store  string // "" for every store
		item   string
		single string // the field for the item alone
		batch  string // the field for the item in a batch
	}{
		{"an item over the size limit", "", `{"id": "huge", "text": "big", "content": {"blob": "` + huge + `"}}`, "", "items[0]"},
		{"a NUL in the text on Postgres", "postgres", `{"id": "nul", "text": "a\u0000b"}`, "text", "items[0].text"},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			base := newStackWith(t, st.configure(t)).serve(t)
			for _, tt := range tests {
				if tt.store != "" && tt.store != st.name {
					continue
				}
				t.Run(tt.name, func(t *testing.T) {
					for _, c := range []struct{ body, field string }{{tt.item, tt.single}, {`{"items": [` + tt.item + `]}`, tt.batch}} {
						r := post(t, base+"/v1/items", c.body)
						if e := checkErrorShape(t, r); e.Code != h4r.EINVALID || e.Field != c.field {
							t.Errorf("error %+v, want invalid_argument at %q", e, c.field)
						}
					}
				})
			}
		})
	}
}

// list is a JSON list of n strings "<prefix>0", "<prefix>1", …
func list(prefix string, n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Quote(prefix + strconv.Itoa(i))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// lists and ids that had no bound (filter lists, an
// item's groups, a specialist's groups, anchor ids, link targets, an
// envelope's id) are capped, and the error names the field and the cap.
// Before the fix each of these was accepted.
func TestBounds(t *testing.T) {
	long := strings.Repeat("i", h4r.MaxIDBytes+1)
	q := `"query": {"text": "login"}`
	tests := []struct {
		name  string
		path  string
		body  string
		field string
		limit int
	}{
		{"a kind list over the cap", "/v1/context-pack", `{"query": {"text": "login", "filters": {"kind": ` + list("k", h4r.MaxFilterValues+1) + `}}}`, "query.filters.kind", h4r.MaxFilterValues},
		{"a tags filter over the cap", "/v1/context-pack", `{"query": {"text": "login", "filters": {"tags": ` + list("t", h4r.MaxFilterValues+1) + `}}}`, "query.filters.tags", h4r.MaxFilterValues},
		{"a tag in a filter longer than a value", "/v1/context-pack", `{"query": {"text": "login", "filters": {"tags": ["` + strings.Repeat("t", 1025) + `"]}}}`, "query.filters.tags[0]", 1024}, // as a metadata filter's value
		{"an anchor longer than an id", "/v1/context-pack", `{` + q + `, "anchors": ["mem-root", "` + long + `"]}`, "anchors[1]", h4r.MaxIDBytes},
		{"a specialist in too many groups", "/v1/context-pack", `{"specialist": {"id": "x", "authorizedGroups": ` + list("g", h4r.MaxGroups+1) + `}, ` + q + `}`, "specialist.authorizedGroups", h4r.MaxGroups},
		{"meta.from in too many groups", "/v1/a2a", `{"meta": {"id": "m-b", "type": "ContextRequest", "from": {"id": "x", "authorizedGroups": ` + list("g", h4r.MaxGroups+1) + `}}, "payload": {` + q + `}}`, "meta.from.authorizedGroups", h4r.MaxGroups},
		{"an envelope id longer than an id", "/v1/a2a", `{"meta": {"id": "` + long + `", "type": "ContextRequest"}, "payload": {` + q + `}}`, "meta.id", h4r.MaxIDBytes},
		{"an item restricted to too many groups", "/v1/items", `{"id": "b-g", "text": "x", "metadata": {"restrictedToGroups": ` + list("g", h4r.MaxGroups+1) + `}}`, "metadata.restrictedToGroups", h4r.MaxGroups},
		{"a link target longer than an id", "/v1/items", `{"id": "b-l", "text": "x", "links": [{"type": "fixes", "target": "` + long + `"}]}`, "links[0].target", h4r.MaxIDBytes},
		{"a batch item restricted to too many groups", "/v1/items", `{"items": [{"id": "b-g", "text": "x", "metadata": {"restrictedToGroups": ` + list("g", h4r.MaxGroups+1) + `}}]}`, "items[0].metadata.restrictedToGroups", h4r.MaxGroups},
	}
	base := newStack(t).serve(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, base+tt.path, tt.body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", r.status, r.body)
			}
			e := errorOf(t, tt.path, r)
			if e.Code != h4r.EINVALID || e.Field != tt.field || !strings.Contains(e.Message, strconv.Itoa(tt.limit)) {
				t.Errorf("error %+v, want invalid_argument at %s stating the cap %d", e, tt.field, tt.limit)
			}
		})
	}
	// With a key, a claim may only narrow the principal's groups, but it
	// could repeat one of them without end.
	authBase := newAuthStack(t).serve(t)
	claim := `{"specialist": {"id": "playwright_healer", "authorizedGroups": ["qa"` + strings.Repeat(`, "qa"`, h4r.MaxGroups) + `]}, ` + q + `}`
	r := post(t, authBase+"/v1/context-pack", claim, bearer(healerKey)...)
	if r.status != http.StatusBadRequest {
		t.Fatalf("a claim repeating a group: status %d, want 400: %s", r.status, r.body)
	}
	if e := checkErrorShape(t, r); e.Field != "specialist.authorizedGroups" || !strings.Contains(e.Message, strconv.Itoa(h4r.MaxGroups)) {
		t.Errorf("a claim repeating a group: error %+v, want the cap at specialist.authorizedGroups", e)
	}
}

// keepAlive sends GET /health/live on conn and reads the 200, leaving the
// connection open.
func keepAlive(t *testing.T, conn net.Conn, br *bufio.Reader) {
	t.Helper()
	if _, err := io.WriteString(conn, "GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if r := readResponse(t, br, http.MethodGet); r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
}

// connections were not capped. With a cap of 2, two
// open connections make a third one answered 503 in the error shape (it
// was served before the fix); once one closes, a new one is served.
func TestConnectionCap(t *testing.T) {
	base := newStack(t, server.WithMaxConnections(2)).serve(t)
	a, b := dial(t, base), dial(t, base)
	ra, rb := bufio.NewReader(a), bufio.NewReader(b)
	keepAlive(t, a, ra)
	keepAlive(t, b, rb)
	r := rawExchange(t, base, "GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("a third connection: status %d, want 503: %s", r.status, r.body)
	}
	if e := checkErrorShape(t, r); e.Code != h4r.EUNAVAILABLE || !strings.Contains(e.Message, "2") {
		t.Errorf("error %+v, want unavailable stating the cap", e)
	}
	if r.header.Get("Retry-After") == "" {
		t.Error("a 503 without Retry-After")
	}
	keepAlive(t, b, rb) // the open ones are still served
	a.Close()
	// The server sees a's close on its own time: ask until it has.
	deadline := time.Now().Add(patience)
	for {
		r := rawExchange(t, base, "GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		if r.status == http.StatusOK {
			break
		}
		if r.status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after a connection closed: status %d: %s", r.status, r.body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// a client that sends its body too slowly was cut off
// when the read deadline passed: the handler saw an i/o timeout, logged an
// internal failure and answered 500 internal (before the fix, here), or the
// client saw the connection reset. It now gets 408 request_timeout in the
// error shape, and the connection is closed. The client here dribbles a
// byte at a time over raw TCP and never finishes.
func TestSlowBody(t *testing.T) {
	base := newStack(t, server.WithReadTimeout(300*time.Millisecond)).serve(t)
	for _, path := range []string{"/v1/items", "/v1/context-pack", "/v1/a2a"} {
		t.Run(path, func(t *testing.T) {
			conn := dial(t, base)
			head := "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			dribbled := make(chan struct{})
			go func() {
				defer close(dribbled)
				tick := time.NewTicker(50 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						if _, err := io.WriteString(conn, " "); err != nil {
							return // the server closed: enough
						}
					}
				}
			}()
			r := readResponse(t, bufio.NewReader(conn), http.MethodPost)
			close(stop)
			<-dribbled
			if r.status != http.StatusRequestTimeout {
				t.Fatalf("status %d, want 408: %s", r.status, r.body)
			}
			if e := errorOf(t, path, r); e.Code != h4r.ETIMEOUT {
				t.Errorf("code %s, want request_timeout", e.Code)
			}
			if !r.close {
				t.Error("the connection stays open, though the rest of the body was not read")
			}
		})
	}
}

// only context routes were rate-limited; a key could
// ingest, delete and read raw items without bound. Each route class now
// has a bucket of its own per key (rateLimitPerMinute each), so ingest
// cannot use up a key's context requests. slow-admin-key may make 2
// requests a minute per class; the clock stands still.
func TestRateLimitIngestAndAdmin(t *testing.T) {
	base := newAuthStack(t).serve(t)
	steps := []struct {
		name   string
		method string
		path   string
		body   string
		status int
	}{
		{"ingest 1", http.MethodPost, "/v1/items", `{"id": "rl-1", "text": "one"}`, http.StatusOK},
		{"ingest 2, a delete", http.MethodDelete, "/v1/items/rl-1", "", http.StatusNoContent},
		{"ingest 3 is refused", http.MethodPost, "/v1/items", `{"id": "rl-3", "text": "three"}`, http.StatusTooManyRequests},
		{"a context request has its own bucket", http.MethodPost, "/v1/context-pack", `{"query": {"text": "login"}}`, http.StatusOK},
		{"admin 1", http.MethodGet, "/v1/items/mem-root", "", http.StatusOK},
		{"admin 2", http.MethodGet, "/metrics", "", http.StatusOK},
		{"admin 3 is refused", http.MethodGet, "/v1/items/mem-fix", "", http.StatusTooManyRequests},
		{"another key is not limited", http.MethodPost, "/v1/items", `{"id": "rl-4", "text": "four"}`, http.StatusOK},
	}
	for _, s := range steps {
		var body []byte
		if s.body != "" {
			body = []byte(s.body)
		}
		key := slowAdminKey
		if strings.HasPrefix(s.name, "another key") {
			key = adminKey
		}
		r := do(t, s.method, base+s.path, body, bearer(key)...)
		if r.status != s.status {
			t.Fatalf("%s: status %d, want %d: %s", s.name, r.status, s.status, r.body)
		}
		if r.status != http.StatusTooManyRequests {
			continue
		}
		if e := checkErrorShape(t, r); e.Code != h4r.EEXHAUSTED {
			t.Errorf("%s: code %s, want resource_exhausted", s.name, e.Code)
		}
		if got := r.header.Get("Retry-After"); got != "30" {
			t.Errorf("%s: Retry-After %q, want 30", s.name, got)
		}
	}
	if r := do(t, http.MethodGet, base+"/v1/items/rl-3", nil, bearer(adminKey)...); r.status != http.StatusNotFound {
		t.Errorf("a refused ingest wrote its item: status %d", r.status)
	}
}
