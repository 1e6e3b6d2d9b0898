package server_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/server"
)

// FuzzDecodeItems checks that DecodeItems never panics, that every error
// is an invalid_argument *h4r.Error, and that on success it returns at
// least one item, each of which passes Validate and survives a round trip
// through the batch form.
func FuzzDecodeItems(f *testing.F) {
	for _, seed := range []string{
		`{"id": "mem-1", "text": "login failed"}`,
		`{"items": [{"id": "a", "text": "x"}, {"id": "b", "text": "y", "links": [{"type": "fixes", "target": "a"}]}]}`,
		`{"items": []}`,
		`{"items": [null]}`,
		`{"items": [{"id": "a", "text": "x"}], "extra": 1}`,
		`{"id": "x", "text": "y", "metadata": {"trust": 2}}`,
		`{"id": "x", "text": "y", "content": {"personalData": {"email": "a@b.c"}}, "metadata": {"containsPII": true, "piiFields": ["$.content.personalData"]}}`,
		`{"id": "x", "text": "y", "metadata": {"createdAt": "not a time"}}`,
		`[]`, `null`, `"items"`, `{`, ``, `{"items": {"items": []}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Add(readFile(f, "testdata/items.json"))
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := server.DecodeItems(body)
		if err != nil {
			var herr *h4r.Error
			if !errors.As(err, &herr) || herr.Code != h4r.EINVALID || herr.Message == "" {
				t.Fatalf("error %v (%T), want an invalid_argument *h4r.Error with a message", err, err)
			}
			if items != nil {
				t.Fatalf("items %v returned with an error", items)
			}
			return
		}
		if len(items) == 0 {
			t.Fatal("success without items")
		}
		for i := range items {
			if err := items[i].Validate(""); err != nil {
				t.Fatalf("item %d passed DecodeItems but not Validate: %v", i, err)
			}
		}
		again, err := json.Marshal(map[string][]h4r.Item{"items": items})
		if err != nil {
			t.Fatalf("decoded items do not encode: %v", err)
		}
		back, err := server.DecodeItems(again)
		if err != nil {
			t.Fatalf("decoded items do not decode again: %v\n%s", err, again)
		}
		if len(back) != len(items) {
			t.Fatalf("round trip gave %d items, want %d", len(back), len(items))
		}
		for i := range back {
			if back[i].ID != items[i].ID || back[i].Text != items[i].Text {
				t.Fatalf("item %d changed in the round trip: %q/%q, want %q/%q", i, back[i].ID, back[i].Text, items[i].ID, items[i].Text)
			}
		}
	})
}

// serveRecorded runs one request through the handler in-process.
func serveRecorded(h http.Handler, path string, body []byte) response {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// FuzzContextPackBody posts arbitrary bodies to the real context-pack
// handler: never a 5xx, and always either a pack (200) or the error shape.
func FuzzContextPackBody(f *testing.F) {
	for _, seed := range []string{
		healerBody,
		`{"query": {"text": "login"}}`,
		`{"query": {"type": "causal", "text": ""}, "anchors": ["mem-root"], "max_hops": 2, "directed": true}`,
		`{"query": {"type": "keyword", "text": "selector", "filters": {"kind": ["fix", "test_failure"], "tags": ["selector"], "createdAfter": "2026-11-01T00:00:00Z"}}}`,
		`{"query": {"text": "login"}, "weights": {"relevance": 1e308, "recency": 1e308}, "budget": {"maxBytes": 1, "maxTokens": 1, "maxItems": 1}}`,
		`{"query": {"text": "login"}, "min_score": 1, "tldr_sentences": 0, "include_graph": true, "include_scores": false}`,
		`{"query": {"text": "\"OR\" NEAR(a b) * ^x AND NOT"}}`,
		`{"query": {"text": "login"}, "weights": {"popularity": 1}}`,
		`{"specialist": {"id": "x", "securityLevel": "root"}, "query": {"text": "login"}}`,
		`{"query": {"text": "login"}, "limit": 1e3}`,
		`{"query":`, `null`, `[]`, ``,
	} {
		f.Add([]byte(seed))
	}
	s := newStack(f)
	h := s.srv.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		r := serveRecorded(h, "/v1/context-pack", body)
		if r.status >= 500 {
			t.Fatalf("status %d for %q: %s", r.status, body, r.body)
		}
		if r.status != http.StatusOK {
			checkErrorShape(t, r)
			return
		}
		var p h4r.Pack
		dec := json.NewDecoder(bytes.NewReader(r.body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("200 with a body that is not a pack: %v: %s", err, r.body)
		}
		if p.RequestID == "" || p.RequestID != r.header.Get("X-Request-Id") {
			t.Fatalf("request_id %q, header %q", p.RequestID, r.header.Get("X-Request-Id"))
		}
		if p.Results == nil || (p.Explainability.Items == nil && p.TotalCount > 0) {
			t.Fatalf("pack without results or explanations: %s", r.body)
		}
		for _, secret := range secrets {
			if bytes.Contains(r.body, []byte(secret)) && !bytes.Contains(body, []byte(secret)) {
				t.Fatalf("the pack holds %q: %s", secret, r.body)
			}
		}
	})
}

// FuzzA2AEnvelope posts arbitrary bodies to the real A2A handler: never a
// 5xx, and always an envelope, a ContextResult (200) replying to the
// request's meta.id or a ContextError whose payload is the error and whose
// status is the code's.
func FuzzA2AEnvelope(f *testing.F) {
	f.Add(readFile(f, "testdata/a2a_request.json"))
	for _, seed := range []string{
		`{"meta": {"id": "m", "type": "ContextRequest"}, "payload": {"query": {"text": "login"}}}`,
		`{"meta": {"id": "m", "type": "ContextRequest", "from": {"id": "ops", "securityLevel": "restricted", "authorizedGroups": ["ops"]}}, "payload": {"query": {"type": "causal", "text": ""}, "anchors": ["mem-pii"]}}`,
		`{"meta": {"id": "m", "type": "ContextResult"}, "payload": {}}`,
		`{"meta": {"id": "m", "type": "ContextRequest"}, "payload": {"specialist": {"id": "x"}, "query": {"text": "a"}}}`,
		`{"meta": {"id": "m", "type": "ContextRequest", "from": {"id": "x", "securityLevel": 1}}, "payload": null}`,
		`{"meta": {"id": "m", "type": "ContextRequest"}}`,
		`{"meta": {}, "payload": {}}`,
		`{"meta": null}`, `{"meta":`, `[]`, `0`, ``,
	} {
		f.Add([]byte(seed))
	}
	s := newStack(f)
	h := s.srv.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		r := serveRecorded(h, "/v1/a2a", body)
		if r.status >= 500 {
			t.Fatalf("status %d for %q: %s", r.status, body, r.body)
		}
		env := decodeEnvelope(t, r)
		switch env.Meta.Type {
		case h4r.TypeContextResult:
			if r.status != http.StatusOK {
				t.Fatalf("ContextResult with status %d", r.status)
			}
			var in struct {
				Meta struct {
					ID string `json:"id"`
				} `json:"meta"`
			}
			err := json.Unmarshal(body, &in)
			if err == nil && in.Meta.ID == "" && strings.HasPrefix(env.Meta.ReplyTo, "msg-") {
				in.Meta.ID = env.Meta.ReplyTo // generated for a message without one
			}
			if err != nil || in.Meta.ID == "" || env.Meta.ReplyTo != in.Meta.ID {
				t.Fatalf("reply_to %q for a request whose meta.id is %q (%v)", env.Meta.ReplyTo, in.Meta.ID, err)
			}
			var p h4r.Pack
			dec := json.NewDecoder(bytes.NewReader(env.Payload))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&p); err != nil {
				t.Fatalf("ContextResult payload is not a pack: %v: %s", err, env.Payload)
			}
		case h4r.TypeContextError:
			e := envelopeError(t, env)
			if server.HTTPStatus(e.Code) != r.status {
				t.Fatalf("code %s with status %d", e.Code, r.status)
			}
		default:
			t.Fatalf("meta.type %q: %s", env.Meta.Type, r.body)
		}
	})
}
