package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/golden"
	"github.com/h4r/h4r/server"
)

// secrets are values of the fixture that no specialist may ever read: the
// PII item's personal data (always redacted) and the content of the
// credential item (always denied).
var secrets = []string{"jane.doe@example.com", "Jane Doe", "sk-live-TOPSECRET-4242"}

// signalKeys are the eight signal keys of docs/concepts.md.
var signalKeys = []string{"relevance", "recency", "frequency", "importance", "causality", "novelty", "trust", "sensitivity"}

// TestContextPackPolicy: each specialist gets the items policy allows it;
// a caller that may audit sees why the others were left out, any other
// caller only how many.
func TestContextPackPolicy(t *testing.T) {
	urls := map[bool]string{
		false: newStack(t).serve(t) + "/v1/context-pack",
		true:  newStack(t, server.WithAnonymousAudit(true)).serve(t) + "/v1/context-pack",
	}
	tests := []struct {
		name       string
		specialist string // JSON, "" for none
		kept       []string
		policy     map[string]string // dropped id → the rule its detail names
		unseen     []string          // content of denied items that must not appear
	}{
		{
			name:       "internal qa healer",
			specialist: healer,
			kept:       []string{"mem-checkout", "mem-fix", "mem-pii", "mem-qa", "mem-root"},
			policy:     map[string]string{"mem-cred": "credentials", "mem-sensitive": "sensitivity", "mem-ops": "group_restricted"},
			unseen:     []string{"CONFIDENTIAL-INCIDENT-NOTE", "OPS-ONLY-RUNBOOK"},
		},
		{
			name:   "anonymous is public without groups",
			kept:   []string{"mem-checkout", "mem-fix", "mem-pii", "mem-root"},
			policy: map[string]string{"mem-cred": "credentials", "mem-sensitive": "sensitivity", "mem-ops": "group_restricted", "mem-qa": "group_restricted"},
			unseen: []string{"CONFIDENTIAL-INCIDENT-NOTE", "OPS-ONLY-RUNBOOK", "qa-login"},
		},
		{
			name:       "confidential ops bot",
			specialist: `{"id": "incident_bot", "securityLevel": "confidential", "authorizedGroups": ["ops"]}`,
			kept:       []string{"mem-checkout", "mem-fix", "mem-ops", "mem-pii", "mem-root", "mem-sensitive"},
			policy:     map[string]string{"mem-cred": "credentials", "mem-qa": "group_restricted"},
			unseen:     []string{"qa-login"},
		},
	}
	// The requests name no query type: hybrid, the default, whose vectors
	// find mem-checkout (it shares no word with the query; keyword would
	// not), and every other item matches a word.
	for _, tt := range tests {
		for _, audit := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, audit %v", tt.name, audit), func(t *testing.T) {
				body := `{"query": {"text": "login test failures with selector issues"}, "limit": 10, "explain": "all"}`
				if tt.specialist != "" {
					body = `{"specialist": ` + tt.specialist + `, "query": {"text": "login test failures with selector issues"}, "limit": 10, "explain": "all"}`
				}
				r := post(t, urls[audit], body)
				p := decodePack(t, r)
				if p.Status != h4r.StatusOK {
					t.Errorf("status %q, want ok (warnings %v)", p.Status, p.Explainability.Warnings)
				}

				var kept []string
				for _, res := range p.Results {
					kept = append(kept, res.ID)
				}
				slices.Sort(kept)
				if !slices.Equal(kept, tt.kept) {
					t.Errorf("results %v, want %v", kept, tt.kept)
				}
				explained := map[string]h4r.ItemExplanation{}
				for _, e := range p.Explainability.Items {
					explained[e.ID] = e
				}
				for id, rule := range tt.policy {
					e, ok := explained[id]
					switch {
					case !audit:
						if bytes.Contains(r.body, []byte(`"`+id+`"`)) {
							t.Errorf("%s, denied, is named in the pack of a caller that may not audit", id)
						}
					case !ok:
						t.Errorf("%s is not in explainability.items", id)
					case e.Reason != h4r.ReasonPolicy:
						t.Errorf("%s: reason %q, want policy", id, e.Reason)
					case !strings.Contains(e.Detail, rule):
						t.Errorf("%s: detail %q does not name the rule %q", id, e.Detail, rule)
					}
				}
				if got := p.Explainability.Slicing.TotalDroppedPolicy; got != len(tt.policy) {
					t.Errorf("totalDroppedPolicy %d, want %d", got, len(tt.policy))
				}
				for _, s := range append(slices.Clone(secrets), tt.unseen...) {
					if bytes.Contains(r.body, []byte(s)) {
						t.Errorf("the response holds %q", s)
					}
				}
			})
		}
	}
}

func TestContextPackRedactsPII(t *testing.T) {
	url := newStack(t).serve(t) + "/v1/context-pack"
	r := post(t, url, healerBody)
	p := decodePack(t, r)
	var pii *h4r.Result
	for i := range p.Results {
		if p.Results[i].ID == "mem-pii" {
			pii = &p.Results[i]
		}
	}
	if pii == nil {
		t.Fatalf("mem-pii is not among the results: %s", r.body)
	}
	if got := pii.Content["personalData"]; got != "[REDACTED]" {
		t.Errorf("content.personalData = %#v, want \"[REDACTED]\"", got)
	}
	if got := pii.Content["selector"]; got != "#login-button" {
		t.Errorf("content.selector = %#v: redaction touched a field it does not name", got)
	}
	// The item does not say its text is clean, so the text goes too.
	if !pii.Metadata.Redacted || !slices.Equal(pii.Metadata.RedactedFields, []string{"$.content.personalData", "$.text"}) || pii.Text != "[REDACTED]" {
		t.Errorf("metadata redacted=%v redactedFields=%v text %q, want true [$.content.personalData $.text] [REDACTED]", pii.Metadata.Redacted, pii.Metadata.RedactedFields, pii.Text)
	}
	if p.Explainability.Slicing.TotalRedacted != 1 {
		t.Errorf("totalRedacted %d, want 1", p.Explainability.Slicing.TotalRedacted)
	}
	for _, s := range secrets {
		if bytes.Contains(r.body, []byte(s)) {
			t.Errorf("the response holds %q:\n%s", s, r.body)
		}
	}
}

func TestContextPackResultsCarrySignals(t *testing.T) {
	url := newStack(t).serve(t) + "/v1/context-pack"
	r := post(t, url, healerBody)
	// Decode generically: a signal left out must show as a missing key, not
	// as a zero in a Go array.
	var raw struct {
		Results []struct {
			ID          string             `json:"id"`
			Score       *float64           `json:"score"`
			Signals     map[string]float64 `json:"signals"`
			Reason      string             `json:"reason"`
			Explanation string             `json:"explanation"`
		} `json:"results"`
	}
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Results) == 0 {
		t.Fatal("no results")
	}
	for _, res := range raw.Results {
		keys := slices.Sorted(maps.Keys(res.Signals))
		if want := slices.Sorted(slices.Values(signalKeys)); !slices.Equal(keys, want) {
			t.Errorf("%s: signals %v, want the eight keys %v", res.ID, keys, want)
		}
		for k, v := range res.Signals {
			if v < 0 || v > 1 {
				t.Errorf("%s: signal %s = %v, outside [0, 1]", res.ID, k, v)
			}
		}
		if res.Score == nil {
			t.Errorf("%s: no score", res.ID)
		}
		if res.Reason != h4r.ReasonKept {
			t.Errorf("%s: reason %q, want kept", res.ID, res.Reason)
		}
		if res.Score != nil && !strings.HasPrefix(res.Explanation, fmt.Sprintf("Score %.3f", *res.Score)) {
			t.Errorf("%s: explanation %q does not start with its score %.3f", res.ID, res.Explanation, *res.Score)
		}
	}
}

func TestContextPackRequestID(t *testing.T) {
	url := newStack(t).serve(t) + "/v1/context-pack"
	long := strings.Repeat("x", 129)
	tests := []struct {
		name string
		sent string // X-Request-Id the client sends; "" sends none
		want string // the id the answer must carry; "" means a generated one
	}{
		{name: "generated when absent"},
		{name: "client id echoed", sent: "client-req-42", want: "client-req-42"},
		{name: "too long replaced", sent: long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var header []string
			if tt.sent != "" {
				header = []string{"X-Request-Id", tt.sent}
			}
			r := post(t, url, healerBody, header...)
			p := decodePack(t, r)
			got := r.header.Get("X-Request-Id")
			if got == "" {
				t.Fatal("no X-Request-Id header")
			}
			if p.RequestID != got {
				t.Errorf("pack.request_id %q, header %q", p.RequestID, got)
			}
			switch {
			case tt.want != "" && got != tt.want:
				t.Errorf("X-Request-Id %q, want %q", got, tt.want)
			case tt.want == "" && (got == tt.sent || !strings.HasPrefix(got, "req-")):
				t.Errorf("X-Request-Id %q, want a generated req-… id", got)
			}
		})
	}
}

// TestContextPackErrors checks the error shape, code, status and field of
// bad context-pack requests; testdata/context_pack_errors.golden.json
// holds their messages.
func TestContextPackErrors(t *testing.T) {
	url := newStack(t).serve(t) + "/v1/context-pack"
	q := `"query": {"text": "login"}`
	tests := []struct {
		name  string
		body  string
		field string
	}{
		{"malformed JSON", `{"query": {"text": "login"`, "query"},
		{"syntax error", `{"query": {"text": "login"},}`, ""},
		{"empty body", ``, ""},
		{"not an object", `["login"]`, ""},
		{"trailing data", `{` + q + `} {}`, ""},
		{"unknown top-level field", `{` + q + `, "verbose": true}`, "verbose"},
		{"unknown query field", `{"query": {"text": "login", "lang": "en"}}`, "query.lang"},
		{"unknown query type", `{"query": {"type": "fuzzy", "text": "login"}}`, "query.type"},
		{"query type not a string", `{"query": {"type": 5, "text": "login"}}`, "query.type"},
		{"missing query text", `{"query": {"type": "hybrid"}}`, "query.text"},
		{"negative limit", `{` + q + `, "limit": -1}`, "limit"},
		{"limit over the maximum", `{` + q + `, "limit": 1001}`, "limit"},
		{"limit not a number", `{` + q + `, "limit": "ten"}`, "limit"},
		{"negative budget", `{` + q + `, "budget": {"maxTokens": -5}}`, "budget.maxTokens"},
		{"budget not a number", `{` + q + `, "budget": {"maxBytes": "1k"}}`, "budget.maxBytes"},
		{"unknown budget key", `{` + q + `, "budget": {"maxPages": 1}}`, "budget.maxPages"},
		{"min_score above 1", `{` + q + `, "min_score": 1.5}`, "min_score"},
		{"min_score below 0", `{` + q + `, "min_score": -0.1}`, "min_score"},
		{"unknown weight key", `{` + q + `, "weights": {"popularity": 0.5}}`, "weights.popularity"},
		{"negative weight", `{` + q + `, "weights": {"recency": -0.2}}`, "weights.recency"},
		{"all weights zero", `{` + q + `, "weights": {"relevance": 0, "recency": 0, "frequency": 0, "importance": 0, "causality": 0, "novelty": 0, "trust": 0, "sensitivity": 0}}`, "weights"},
		{"filter with an object value", `{"query": {"text": "login", "filters": {"status": {"$ne": "passed"}}}}`, "query.filters.status"},
		{"filter key with path syntax", `{"query": {"text": "login", "filters": {"a.b": "c"}}}`, "query.filters.a.b"},
		{"bad createdAfter", `{"query": {"text": "login", "filters": {"createdAfter": "yesterday"}}}`, "query.filters.createdAfter"},
		{"empty anchor", `{"query": {"type": "causal", "text": ""}, "anchors": ["mem-root", " "]}`, "anchors[1]"},
		{"max_hops over the limit", `{` + q + `, "max_hops": 11}`, "max_hops"},
		{"empty link type", `{"query": {"type": "causal", "text": ""}, "anchors": ["mem-root"], "link_types": ["caused_by", ""]}`, "link_types[1]"},
		{"link_types not a list", `{"query": {"type": "causal", "text": ""}, "anchors": ["mem-root"], "link_types": "caused_by"}`, "link_types"},
		{"tldr_sentences negative", `{` + q + `, "tldr_sentences": -1}`, "tldr_sentences"},
		{"as_of not a timestamp", `{` + q + `, "as_of": "last tuesday"}`, "as_of"},
		{"specialist with a bad securityLevel", `{"specialist": {"id": "x", "securityLevel": "secret"}, ` + q + `}`, "specialist.securityLevel"},
		{"specialist without an id", `{"specialist": {"securityLevel": "internal"}, ` + q + `}`, "specialist.id"},
		{"specialist with an unknown key", `{"specialist": {"id": "x", "clearance": 3}, ` + q + `}`, "specialist.clearance"},
		{"specialist not an object", `{"specialist": "playwright_healer", ` + q + `}`, "specialist"},
	}
	var golden []goldenError
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, url, tt.body)
			e := checkErrorShape(t, r)
			if e.Code != h4r.EINVALID {
				t.Errorf("code %q, want invalid_argument", e.Code)
			}
			if r.status != http.StatusBadRequest {
				t.Errorf("status %d, want 400", r.status)
			}
			if e.Field != tt.field {
				t.Errorf("field %q, want %q (message %q)", e.Field, tt.field, e.Message)
			}
			golden = append(golden, goldenError{Case: tt.name, Code: e.Code, Message: e.Message})
		})
	}
	if len(golden) == len(tests) { // not when -run picked some cases
		checkGolden(t, "testdata/context_pack_errors.golden.json", golden)
	}
}

func TestBodySizeLimit(t *testing.T) {
	const limit = 256
	url := newStack(t, server.WithMaxBodyBytes(limit)).serve(t)
	pad := func(body string) string { // pads a JSON object to limit+1 bytes
		return body[:len(body)-1] + strings.Repeat(" ", limit+1-len(body)) + "}"
	}
	small := `{"query": {"text": "login"}}`
	envelope := `{"meta": {"id": "m-1", "type": "ContextRequest"}, "payload": ` + small + `}`
	item := `{"id": "big-1", "text": "login"}`
	tests := []struct {
		name   string
		path   string
		body   string
		status int
	}{
		{"context-pack under the limit", "/v1/context-pack", small, http.StatusOK},
		{"context-pack over the limit", "/v1/context-pack", pad(small), http.StatusBadRequest},
		{"a2a under the limit", "/v1/a2a", envelope, http.StatusOK},
		{"a2a over the limit", "/v1/a2a", pad(envelope), http.StatusBadRequest},
		{"item under the limit", "/v1/items", item, http.StatusOK},
		{"item over the limit", "/v1/items", pad(item), http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.status == http.StatusBadRequest && len(tt.body) != limit+1 {
				t.Fatalf("fixture: body is %d bytes, want %d", len(tt.body), limit+1)
			}
			r := post(t, url+tt.path, tt.body)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if tt.status == http.StatusOK {
				return
			}
			var e *h4r.Error
			if tt.path == "/v1/a2a" {
				env := decodeEnvelope(t, r)
				if env.Meta.Type != h4r.TypeContextError {
					t.Fatalf("meta.type %q, want ContextError", env.Meta.Type)
				}
				e = envelopeError(t, env)
			} else {
				e = checkErrorShape(t, r)
			}
			if e.Code != h4r.EINVALID || server.HTTPStatus(e.Code) != r.status || e.Field != "" {
				t.Errorf("error %+v with status %d, want invalid_argument, 400, no field", e, r.status)
			}
			if !strings.Contains(e.Message, fmt.Sprint(limit)) {
				t.Errorf("message %q does not state the limit %d", e.Message, limit)
			}
		})
	}
	if r := do(t, http.MethodGet, url+"/v1/items/big-1", nil); r.status != http.StatusOK {
		t.Errorf("the item under the limit was not stored: %d %s", r.status, r.body)
	}
}

func TestRoutingErrors(t *testing.T) {
	url := newStack(t).serve(t)
	tests := []struct {
		name   string
		method string
		path   string
		code   string
	}{
		{"unknown route", http.MethodGet, "/v1/nothing-here", h4r.ENOTFOUND},
		{"unknown version", http.MethodPost, "/v2/context-pack", h4r.ENOTFOUND},
		{"GET on a POST route", http.MethodGet, "/v1/context-pack", h4r.EMETHOD},
		{"PUT on an item", http.MethodPut, "/v1/items/mem-root", h4r.EMETHOD},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, tt.method, url+tt.path, nil)
			if e := checkErrorShape(t, r); e.Code != tt.code {
				t.Errorf("code %q, want %q", e.Code, tt.code)
			}
			if r.header.Get("X-Request-Id") == "" {
				t.Error("an error answer without X-Request-Id")
			}
		})
	}
}

// TestContextPackGolden compares the healer's pack, timings zeroed, with
// testdata/context_pack.golden.json. The store and engine share a fixed
// clock and the store is fresh, so every score is reproducible.
func TestContextPackGolden(t *testing.T) {
	url := newStack(t).serve(t) + "/v1/context-pack"
	r := post(t, url, `{"specialist": `+healer+`,
		"query": {"type": "hybrid", "text": "login test failures with selector issues"},
		"limit": 10, "include_graph": true}`, "X-Request-Id", "golden-1")
	p := decodePack(t, r)
	p.QueryDurationMs = 0
	p.Explainability.Timings = h4r.Timings{}
	for name, s := range p.Sources {
		s.Ms = 0
		p.Sources[name] = s
	}
	checkGolden(t, "testdata/context_pack.golden.json", p)
}

// goldenError is one case of an error golden file.
type goldenError struct {
	Case    string `json:"case"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// checkGolden compares v, as indented JSON, with the golden file at path;
// -update rewrites the file.
func checkGolden(t *testing.T, path string, v any) {
	t.Helper()
	golden.JSON(t, path, v, *update)
}

// TestContextPackDeadline checks that WithRequestTimeout bounds the engine:
// with a deadline that has passed before any generator runs, the answer is
// still a 200 pack, degraded and saying why, and nothing undecided leaks.
func TestContextPackDeadline(t *testing.T) {
	url := newStack(t, server.WithRequestTimeout(time.Nanosecond)).serve(t) + "/v1/context-pack"
	r := post(t, url, healerBody)
	p := decodePack(t, r)
	if p.Status != h4r.StatusDegraded {
		t.Errorf("status %q, want degraded", p.Status)
	}
	if !slices.ContainsFunc(p.Explainability.Warnings, func(w string) bool { return strings.Contains(w, "deadline") }) {
		t.Errorf("warnings %q do not mention the deadline", p.Explainability.Warnings)
	}
	for _, s := range secrets {
		if bytes.Contains(r.body, []byte(s)) {
			t.Errorf("the response holds %q", s)
		}
	}
}

// TestJSONAnswersCarryTheirLength: a JSON answer is written whole, with
// its Content-Length, even one larger than net/http's buffer (which it
// would otherwise send in chunks): a pack, an A2A JSON-RPC answer, the
// OpenAPI document.
func TestJSONAnswersCarryTheirLength(t *testing.T) {
	base := newAuthStack(t).serve(t)
	// net/http sends an answer of more than 2 KB without a length in
	// chunks: the cases that test the length are larger.
	const chunked = 2 << 10
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		atLeast                  int // bytes: the case is only worth having when the body is this large
	}{
		{"a pack", http.MethodPost, "/v1/context-pack", `{"query": {"type": "hybrid", "text": "login test failures with selector issues"}, "limit": 10, "explain": "all"}`, http.StatusOK, chunked},
		{"an A2A JSON-RPC answer", http.MethodPost, "/v1/a2a/rpc", `{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {"kind": "message", "messageId": "m-1", "role": "user", "parts": [{"kind": "text", "text": "login selector test failures"}]}}}`, http.StatusOK, chunked},
		{"the OpenAPI document", http.MethodGet, "/openapi.json", "", http.StatusOK, chunked},
		{"an error", http.MethodPost, "/v1/context-pack", `{"query": {"type": "fuzzy", "text": "x"}}`, http.StatusBadRequest, 0},
		{"a health check", http.MethodGet, "/health/live", "", http.StatusOK, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			r := do(t, tc.method, base+tc.path, body, "Authorization", "Bearer "+healerKey)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if len(r.body) < tc.atLeast {
				t.Fatalf("a body of %d bytes, want at least %d for this case to test chunking", len(r.body), tc.atLeast)
			}
			if got, want := r.header.Get("Content-Length"), strconv.Itoa(len(r.body)); got != want {
				t.Errorf("Content-Length %q, want %q (the body's length)", got, want)
			}
			if !json.Valid(r.body) {
				t.Errorf("the body is not one JSON value: %.80q…", r.body)
			}
		})
	}
}
