package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/server"
)

// envelopeOut is an answer envelope, decoded strictly.
type envelopeOut struct {
	Meta struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		ReplyTo   string `json:"reply_to"`
		Timestamp string `json:"timestamp"`
	} `json:"meta"`
	Payload json.RawMessage `json:"payload"`
}

// decodeEnvelope decodes an A2A answer, failing unless it is exactly the
// envelope shape with the X-Request-Id header as meta.id and an RFC 3339
// timestamp.
func decodeEnvelope(t testing.TB, r response) envelopeOut {
	t.Helper()
	var env envelopeOut
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("status %d: not an envelope (%v): %s", r.status, err, r.body)
	}
	if env.Meta.ID == "" || env.Meta.ID != r.header.Get("X-Request-Id") {
		t.Errorf("meta.id %q, X-Request-Id %q: want the same non-empty id", env.Meta.ID, r.header.Get("X-Request-Id"))
	}
	if _, err := time.Parse(time.RFC3339Nano, env.Meta.Timestamp); err != nil {
		t.Errorf("meta.timestamp: %v", err)
	}
	return env
}

// envelopeError returns the error of a ContextError envelope, failing unless
// its payload is exactly {code, message, field?}.
func envelopeError(t testing.TB, env envelopeOut) *h4r.Error {
	t.Helper()
	var e h4r.Error
	dec := json.NewDecoder(bytes.NewReader(env.Payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("ContextError payload is not {code, message, field}: %v: %s", err, env.Payload)
	}
	if !codes[e.Code] || e.Message == "" {
		t.Errorf("ContextError payload %+v: want a known code and a message", e)
	}
	return &e
}

func TestA2ASeedEnvelope(t *testing.T) {
	url := newStack(t).serve(t) + "/v1/a2a"
	r := do(t, http.MethodPost, url, readFile(t, "testdata/a2a_request.json"))
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	env := decodeEnvelope(t, r)
	if env.Meta.Type != h4r.TypeContextResult {
		t.Errorf("meta.type %q, want ContextResult", env.Meta.Type)
	}
	if env.Meta.ReplyTo != "msg-123" {
		t.Errorf("meta.reply_to %q, want msg-123", env.Meta.ReplyTo)
	}
	var p h4r.Pack
	if err := json.Unmarshal(env.Payload, &p); err != nil {
		t.Fatalf("payload is not a pack: %v", err)
	}
	if p.RequestID != env.Meta.ID {
		t.Errorf("payload.request_id %q, meta.id %q", p.RequestID, env.Meta.ID)
	}
	// meta.from is internal without groups, and the filters keep only
	// failed e2e items: of the matching ones policy leaves mem-pii (found
	// by full text and vectors) and mem-checkout (by vectors: the semantic
	// query is answered by the built-in embedder).
	var ids []string
	for _, res := range p.Results {
		ids = append(ids, res.ID)
		if res.Signals == nil {
			t.Errorf("%s: include_scores is true but the result has no signals", res.ID)
		}
	}
	if !slices.Equal(ids, []string{"mem-pii", "mem-checkout"}) {
		t.Errorf("results %v, want [mem-pii mem-checkout]", ids)
	}
	if p.AgentSlice.SpecialistID != "playwright_healer" || p.AgentSlice.SecurityLevel != "internal" {
		t.Errorf("agentSlice names %s/%s, want meta.from playwright_healer/internal", p.AgentSlice.SpecialistID, p.AgentSlice.SecurityLevel)
	}
	for _, e := range p.Explainability.Items {
		if e.ID == "mem-root" || e.ID == "mem-fix" {
			t.Errorf("%s was a candidate although the filters ask for status failed", e.ID)
		}
	}
	for _, s := range secrets {
		if bytes.Contains(r.body, []byte(s)) {
			t.Errorf("the envelope holds %q", s)
		}
	}
}

func TestA2AIncludeScoresFalse(t *testing.T) {
	url := newStack(t).serve(t) + "/v1/a2a"
	r := post(t, url, `{"meta": {"id": "msg-9", "type": "ContextRequest"},
		"payload": {"query": {"text": "login selector"}, "include_scores": false}}`)
	env := decodeEnvelope(t, r)
	var p h4r.Pack
	if err := json.Unmarshal(env.Payload, &p); err != nil || len(p.Results) == 0 {
		t.Fatalf("want a pack with results (err %v): %s", err, r.body)
	}
	for _, res := range p.Results {
		if res.Signals != nil {
			t.Errorf("%s carries signals although include_scores is false", res.ID)
		}
	}
}

// generatedID in a test's replyTo stands for the id the server generates
// for an envelope without meta.id.
const generatedID = "(generated)"

func TestA2AErrors(t *testing.T) {
	url := newStack(t).serve(t) + "/v1/a2a"
	const meta = `"meta": {"id": "msg-1", "type": "ContextRequest"}`
	const payload = `"payload": {"query": {"text": "login"}}`
	tests := []struct {
		name    string
		body    string
		field   string
		replyTo string // the request's meta.id, when it could be read
	}{
		{"bad JSON", `{"meta": {"id": "msg-1"`, "meta", ""},
		{"not an object", `"ContextRequest"`, "", ""},
		{"empty body", ``, "", ""},
		{"wrong meta.type", `{"meta": {"id": "msg-1", "type": "ContextResult"}, ` + payload + `}`, "meta.type", "msg-1"},
		{"missing meta.type", `{"meta": {"id": "msg-1"}, ` + payload + `}`, "meta.type", "msg-1"},
		{"missing meta.id and a bad payload", `{"meta": {"type": "ContextRequest"}, "payload": {"query": {}}}`, "payload.query.text", generatedID},
		{"blank meta.id", `{"meta": {"id": "  ", "type": "ContextRequest"}, ` + payload + `}`, "meta.id", "  "},
		{"meta.id not a string", `{"meta": {"id": 7, "type": "ContextRequest"}, ` + payload + `}`, "meta.id", ""},
		{"missing meta", `{` + payload + `}`, "meta.type", generatedID},
		{"missing payload", `{` + meta + `}`, "payload", "msg-1"},
		{"null payload", `{` + meta + `, "payload": null}`, "payload", "msg-1"},
		{"payload not an object", `{` + meta + `, "payload": "login"}`, "payload", "msg-1"},
		{"unknown top-level field", `{` + meta + `, ` + payload + `, "priority": 1}`, "priority", "msg-1"},
		{"unknown meta field", `{"meta": {"id": "msg-1", "type": "ContextRequest", "priority": 1}, ` + payload + `}`, "meta.priority", "msg-1"},
		{"unknown payload field", `{` + meta + `, "payload": {"query": {"text": "login"}, "verbose": true}}`, "payload.verbose", "msg-1"},
		{"payload.specialist present", `{` + meta + `, "payload": {"specialist": {"id": "root", "securityLevel": "restricted"}, "query": {"text": "login"}}}`, "payload.specialist", "msg-1"},
		{"payload.Specialist in another case", `{` + meta + `, "payload": {"Specialist": {"id": "root", "securityLevel": "restricted"}, "query": {"text": "login"}}}`, "payload.specialist", "msg-1"},
		{"payload.specialist with a bad level", `{` + meta + `, "payload": {"specialist": {"id": "root", "securityLevel": "god"}, "query": {"text": "login"}}}`, "payload.specialist", "msg-1"},
		{"bad securityLevel in meta.from", `{"meta": {"id": "msg-1", "type": "ContextRequest", "from": {"id": "playwright_healer", "securityLevel": "top-secret"}}, ` + payload + `}`, "meta.from.securityLevel", "msg-1"},
		{"securityLevel not a string", `{"meta": {"id": "msg-1", "type": "ContextRequest", "from": {"id": "playwright_healer", "securityLevel": 3}}, ` + payload + `}`, "meta.from.securityLevel", "msg-1"},
		{"meta.from without id", `{"meta": {"id": "msg-1", "type": "ContextRequest", "from": {"securityLevel": "internal"}}, ` + payload + `}`, "meta.from.id", "msg-1"},
		{"unknown meta.from field", `{"meta": {"id": "msg-1", "type": "ContextRequest", "from": {"id": "x", "role": "admin"}}, ` + payload + `}`, "meta.from.role", "msg-1"},
		{"unknown query type", `{` + meta + `, "payload": {"query": {"type": "fuzzy", "text": "login"}}}`, "payload.query.type", "msg-1"},
		{"missing query text", `{` + meta + `, "payload": {"query": {}}}`, "payload.query.text", "msg-1"},
		{"negative limit", `{` + meta + `, "payload": {"query": {"text": "login"}, "limit": -3}}`, "payload.limit", "msg-1"},
		{"limit not a number", `{` + meta + `, "payload": {"query": {"text": "login"}, "limit": "3"}}`, "payload.limit", "msg-1"},
		{"unknown weight key", `{` + meta + `, "payload": {"query": {"text": "login"}, "weights": {"luck": 1}}}`, "payload.weights.luck", "msg-1"},
		{"negative budget", `{` + meta + `, "payload": {"query": {"text": "login"}, "budget": {"maxItems": -1}}}`, "payload.budget.maxItems", "msg-1"},
		{"min_score outside [0,1]", `{` + meta + `, "payload": {"query": {"text": "login"}, "min_score": 2}}`, "payload.min_score", "msg-1"},
		{"filter with an object value", `{` + meta + `, "payload": {"query": {"text": "login", "filters": {"status": {"in": ["failed"]}}}}}`, "payload.query.filters.status", "msg-1"},
		{"unknown query field", `{` + meta + `, "payload": {"query": {"text": "login", "lang": "en"}}}`, "payload.query.lang", "msg-1"},
	}
	var golden []goldenError
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, url, tt.body)
			if r.status != http.StatusBadRequest {
				t.Errorf("status %d, want 400", r.status)
			}
			env := decodeEnvelope(t, r)
			if env.Meta.Type != h4r.TypeContextError {
				t.Fatalf("meta.type %q, want ContextError: %s", env.Meta.Type, r.body)
			}
			if tt.replyTo == generatedID {
				if !strings.HasPrefix(env.Meta.ReplyTo, "msg-") || len(env.Meta.ReplyTo) < 10 {
					t.Errorf("meta.reply_to %q, want the id generated for a message without one", env.Meta.ReplyTo)
				}
			} else if env.Meta.ReplyTo != tt.replyTo {
				t.Errorf("meta.reply_to %q, want %q", env.Meta.ReplyTo, tt.replyTo)
			}
			e := envelopeError(t, env)
			if e.Code != h4r.EINVALID || server.HTTPStatus(e.Code) != r.status {
				t.Errorf("code %q with status %d, want invalid_argument with its status", e.Code, r.status)
			}
			if e.Field != tt.field {
				t.Errorf("field %q, want %q (message %q)", e.Field, tt.field, e.Message)
			}
			golden = append(golden, goldenError{Case: tt.name, Code: e.Code, Message: e.Message})
		})
	}
	if len(golden) == len(tests) {
		checkGolden(t, "testdata/a2a_errors.golden.json", golden)
	}
}
