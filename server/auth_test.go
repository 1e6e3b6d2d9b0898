package server_test

import (
	"bytes"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/server"
)

// The keys of testdata/keys.json; the file holds only their hashes.
const (
	publicKey     = "public-key"     // public_bot: public, no groups, read
	healerKey     = "healer-key"     // playwright_healer: internal, qa, read
	restrictedKey = "restricted-key" // security_lead: restricted, qa and ops, read
	ingestKey     = "ingest-key"     // ingestor: ingest only
	adminKey      = "admin-key"      // operator: read, ingest, admin
	slowKey       = "slow-key"       // slow_bot: internal, read, 2 requests a minute
	slowAdminKey  = "slow-admin-key" // slow_operator: internal, read, ingest and admin, 2 requests a minute per class
)

// newAuthStack is the real stack behind keys loaded from
// testdata/keys.json, with a fixed rate-limiter clock.
func newAuthStack(t testing.TB, opts ...server.Option) *stack {
	t.Helper()
	keys, err := auth.Load("testdata/keys.json")
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]server.Option{server.WithAuthenticator(keys), server.WithClock(clock)}, opts...)
	return newStack(t, opts...)
}

func bearer(key string) []string { return []string{"Authorization", "Bearer " + key} }

// TestAuthentication checks who may call which route: the status, the
// error code, and the WWW-Authenticate challenge of a 401.
func TestAuthentication(t *testing.T) {
	base := newAuthStack(t).serve(t)
	item := `{"id": "auth-item", "text": "login selector note"}`
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		header []string
		status int
	}{
		{"live needs no key", http.MethodGet, "/health/live", "", nil, http.StatusOK},
		{"ready needs no key", http.MethodGet, "/health/ready", "", nil, http.StatusOK},
		{"context-pack without a key", http.MethodPost, "/v1/context-pack", healerBody, nil, http.StatusUnauthorized},
		{"context-pack with an unknown key", http.MethodPost, "/v1/context-pack", healerBody, bearer("guess"), http.StatusUnauthorized},
		{"context-pack with the key's hash as the key", http.MethodPost, "/v1/context-pack", healerBody, bearer(auth.Hash(healerKey)), http.StatusUnauthorized},
		{"context-pack with a Basic header", http.MethodPost, "/v1/context-pack", healerBody, []string{"Authorization", "Basic " + healerKey}, http.StatusUnauthorized},
		{"context-pack with a read key", http.MethodPost, "/v1/context-pack", healerBody, bearer(healerKey), http.StatusOK},
		{"context-pack with a lower-case scheme", http.MethodPost, "/v1/context-pack", healerBody, []string{"Authorization", "bearer " + healerKey}, http.StatusOK},
		{"context-pack with an ingest-only key", http.MethodPost, "/v1/context-pack", healerBody, bearer(ingestKey), http.StatusForbidden},
		{"a2a without a key", http.MethodPost, "/v1/a2a", `{"meta": {"id": "m", "type": "ContextRequest"}, "payload": {"query": {"text": "login"}}}`, nil, http.StatusUnauthorized},
		{"ingest with a read key", http.MethodPost, "/v1/items", item, bearer(healerKey), http.StatusForbidden},
		{"ingest with an ingest key", http.MethodPost, "/v1/items", item, bearer(ingestKey), http.StatusOK},
		{"raw item read with an ingest key", http.MethodGet, "/v1/items/mem-sensitive", "", bearer(ingestKey), http.StatusForbidden},
		{"raw item read with a read key", http.MethodGet, "/v1/items/mem-sensitive", "", bearer(publicKey), http.StatusForbidden},
		{"raw item read with an admin key", http.MethodGet, "/v1/items/mem-sensitive", "", bearer(adminKey), http.StatusOK},
		{"delete with a read key", http.MethodDelete, "/v1/items/mem-fix", "", bearer(restrictedKey), http.StatusForbidden},
		{"metrics without a key", http.MethodGet, "/metrics", "", nil, http.StatusUnauthorized},
		{"metrics with a read key", http.MethodGet, "/metrics", "", bearer(restrictedKey), http.StatusForbidden},
		{"metrics with an admin key", http.MethodGet, "/metrics", "", bearer(adminKey), http.StatusOK},
		{"openapi without a key", http.MethodGet, "/openapi.json", "", nil, http.StatusUnauthorized},
		{"openapi with any key", http.MethodGet, "/openapi.json", "", bearer(ingestKey), http.StatusOK},
		{"an unknown route without a key says nothing of routes", http.MethodGet, "/v1/nothing", "", nil, http.StatusUnauthorized},
		{"an unknown route with a key", http.MethodGet, "/v1/nothing", "", bearer(publicKey), http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			if tt.body != "" {
				body = []byte(tt.body)
			}
			r := do(t, tt.method, base+tt.path, body, tt.header...)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if r.status < 400 {
				return
			}
			e := errorOf(t, tt.path, r)
			if r.status == http.StatusUnauthorized && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("a 401 without a Bearer challenge: %q", r.header.Get("WWW-Authenticate"))
			}
			if bytes.Contains(r.body, []byte("Bearer "+healerKey)) || strings.Contains(e.Message, healerKey) {
				t.Errorf("the error echoes the key: %s", r.body)
			}
		})
	}
}

// TestNarrowing checks that a request's claimed specialist may narrow the
// key's principal and never raise it; above all, that a public key cannot
// see a confidential item (mem-sensitive, sensitivity 0.9) by claiming
// restricted, in a context-pack body or in an envelope's meta.from.
func TestNarrowing(t *testing.T) {
	base := newAuthStack(t).serve(t)
	query := `"query": {"type": "hybrid", "text": "login test failures with selector issues"}, "limit": 20`
	packBody := func(spec string) string {
		if spec == "" {
			return `{` + query + `}`
		}
		return `{"specialist": ` + spec + `, ` + query + `}`
	}
	tests := []struct {
		name  string
		key   string
		spec  string   // the claimed specialist; "" claims none
		field string   // of the permission_denied error; "" when the pack is served
		as    string   // the security level the pack was made for
		sees  []string // items that must be delivered
		hides []string // items that must not be
	}{
		{name: "public key claims restricted", key: publicKey,
			spec: `{"id": "public_bot", "securityLevel": "restricted"}`, field: "specialist.securityLevel"},
		{name: "public key claims restricted without an id", key: publicKey,
			spec: `{"securityLevel": "restricted"}`, field: "specialist.securityLevel"},
		{name: "public key claims a group", key: publicKey,
			spec: `{"id": "public_bot", "authorizedGroups": ["qa"]}`, field: "specialist.authorizedGroups[0]"},
		{name: "public key claims another specialist", key: publicKey,
			spec: `{"id": "security_lead", "securityLevel": "public"}`, field: "specialist.id"},
		{name: "public key claims another type", key: publicKey,
			spec: `{"type": "human"}`, field: "specialist.type"},
		{name: "healer claims confidential", key: healerKey,
			spec: `{"id": "playwright_healer", "securityLevel": "confidential", "authorizedGroups": ["qa"]}`, field: "specialist.securityLevel"},
		{name: "healer claims ops besides qa", key: healerKey,
			spec: `{"authorizedGroups": ["qa", "ops"]}`, field: "specialist.authorizedGroups[1]"},
		{name: "public key claiming nothing is public", key: publicKey,
			as: "public", sees: []string{"mem-fix"}, hides: []string{"mem-sensitive", "mem-qa", "mem-ops"}},
		{name: "restricted key claiming nothing sees the confidential item", key: restrictedKey,
			as: "restricted", sees: []string{"mem-sensitive", "mem-qa", "mem-ops"}},
		{name: "restricted key narrowed to internal", key: restrictedKey,
			spec: `{"id": "security_lead", "securityLevel": "internal"}`,
			as:   "internal", sees: []string{"mem-qa", "mem-ops"}, hides: []string{"mem-sensitive"}},
		{name: "restricted key narrowed to the qa group", key: restrictedKey,
			spec: `{"authorizedGroups": ["qa"]}`,
			as:   "restricted", sees: []string{"mem-qa", "mem-sensitive"}, hides: []string{"mem-ops"}},
		{name: "restricted key narrowed to no groups", key: restrictedKey,
			spec: `{"authorizedGroups": []}`,
			as:   "restricted", hides: []string{"mem-qa", "mem-ops"}},
		{name: "healer claiming itself exactly", key: healerKey,
			spec: `{"id": "playwright_healer", "type": "specialist", "securityLevel": "internal", "authorizedGroups": ["qa"]}`,
			as:   "internal", sees: []string{"mem-qa"}, hides: []string{"mem-sensitive", "mem-ops"}},
	}
	for _, tt := range tests {
		for _, route := range []string{"context-pack", "a2a"} {
			t.Run(tt.name+" via "+route, func(t *testing.T) {
				var r response
				var p *h4r.Pack
				var e *h4r.Error
				field := tt.field
				if route == "context-pack" {
					r = post(t, base+"/v1/context-pack", packBody(tt.spec), bearer(tt.key)...)
					if r.status == http.StatusOK {
						p = decodePack(t, r)
					} else {
						e = checkErrorShape(t, r)
					}
				} else {
					from := ""
					if tt.spec != "" {
						from = `, "from": ` + tt.spec
					}
					r = post(t, base+"/v1/a2a", `{"meta": {"id": "msg-n", "type": "ContextRequest"`+from+`}, "payload": {`+query+`}}`, bearer(tt.key)...)
					env := decodeEnvelope(t, r)
					if env.Meta.Type == h4r.TypeContextResult {
						p = decodePack(t, response{status: r.status, body: env.Payload})
					} else {
						e = envelopeError(t, env)
					}
					field = strings.Replace(field, "specialist", "meta.from", 1)
				}
				if tt.field != "" {
					if e == nil || e.Code != h4r.EFORBIDDEN || r.status != http.StatusForbidden || e.Field != field {
						t.Fatalf("status %d, error %+v; want 403 permission_denied on %s", r.status, e, field)
					}
					if bytes.Contains(r.body, []byte("mem-sensitive")) {
						t.Error("a refused request leaks item ids")
					}
					return
				}
				if p == nil {
					t.Fatalf("status %d, error %+v; want a pack", r.status, e)
				}
				if p.AgentSlice.SecurityLevel != tt.as {
					t.Errorf("pack made for level %q, want %q", p.AgentSlice.SecurityLevel, tt.as)
				}
				var got []string
				for _, res := range p.Results {
					got = append(got, res.ID)
				}
				for _, id := range tt.sees {
					if !slices.Contains(got, id) {
						t.Errorf("%s is not delivered; got %v", id, got)
					}
				}
				for _, id := range tt.hides {
					if slices.Contains(got, id) {
						t.Errorf("%s is delivered; got %v", id, got)
					}
				}
			})
		}
	}
}

// TestRateLimit checks the per-key limit of context requests under a fixed
// clock: slow-key may make 2 a minute, then gets resource_exhausted with
// Retry-After; other keys and other routes are not affected.
func TestRateLimit(t *testing.T) {
	base := newAuthStack(t).serve(t)
	envelope := `{"meta": {"id": "m-rl", "type": "ContextRequest"}, "payload": {"query": {"text": "login"}}}`
	steps := []struct {
		name   string
		method string
		path   string
		body   string
		key    string
		status int
	}{
		{"first context request", http.MethodPost, "/v1/context-pack", `{"query": {"text": "login"}}`, slowKey, http.StatusOK},
		{"second, by A2A: the same bucket", http.MethodPost, "/v1/a2a", envelope, slowKey, http.StatusOK},
		{"third is refused", http.MethodPost, "/v1/context-pack", `{"query": {"text": "login"}}`, slowKey, http.StatusTooManyRequests},
		{"A2A is refused too", http.MethodPost, "/v1/a2a", envelope, slowKey, http.StatusTooManyRequests},
		{"another key is not limited", http.MethodPost, "/v1/context-pack", `{"query": {"text": "login"}}`, healerKey, http.StatusOK},
		{"health is never limited", http.MethodGet, "/health/live", "", slowKey, http.StatusOK},
	}
	for _, s := range steps {
		var body []byte
		if s.body != "" {
			body = []byte(s.body)
		}
		r := do(t, s.method, base+s.path, body, bearer(s.key)...)
		if r.status != s.status {
			t.Fatalf("%s: status %d, want %d: %s", s.name, r.status, s.status, r.body)
		}
		if r.status != http.StatusTooManyRequests {
			continue
		}
		if e := errorOf(t, s.path, r); e.Code != h4r.EEXHAUSTED {
			t.Errorf("%s: code %s, want resource_exhausted", s.name, e.Code)
		}
		// 2 a minute refill one every 30 s, and the clock stands still.
		if got := r.header.Get("Retry-After"); got != "30" {
			t.Errorf("%s: Retry-After %q, want 30", s.name, got)
		}
	}
}

// TestRateLimitDefault checks WithRateLimit: a key without its own limit
// gets the server's.
func TestRateLimitDefault(t *testing.T) {
	base := newAuthStack(t, server.WithRateLimit(1)).serve(t)
	body := `{"query": {"text": "login"}}`
	if r := post(t, base+"/v1/context-pack", body, bearer(publicKey)...); r.status != http.StatusOK {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	r := post(t, base+"/v1/context-pack", body, bearer(publicKey)...)
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("second: %d, want 429: %s", r.status, r.body)
	}
	if secs, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || secs != int(time.Minute/time.Second) {
		t.Errorf("Retry-After %q, want 60", r.header.Get("Retry-After"))
	}
}
