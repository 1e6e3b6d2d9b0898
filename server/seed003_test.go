package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/h4r/h4r"
)

// The two files testdata/seed003_*.json are the context-pack contract's request and
// response examples, copied as they are written there (the response with
// its "{...}" and "[...]" placeholders).

// TestSeed003RequestVerbatim sends the context-pack contract's request example as it is
// written (no meta.id) and checks that the answer holds every field of the
// document's response example, with the example's JSON type: a client
// written against the document finds what it reads.
func TestSeed003RequestVerbatim(t *testing.T) {
	url := newStack(t).serve(t) + "/v1/a2a"
	r := do(t, http.MethodPost, url, readFile(t, "testdata/seed003_request.json"))
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	env := decodeEnvelope(t, r)
	if env.Meta.Type != h4r.TypeContextResult {
		t.Fatalf("meta.type %q, want ContextResult", env.Meta.Type)
	}
	if !strings.HasPrefix(env.Meta.ReplyTo, "msg-") || env.Meta.ReplyTo == env.Meta.ID {
		t.Errorf("meta.reply_to %q: want the id generated for the request (which has none), not the reply's id %q", env.Meta.ReplyTo, env.Meta.ID)
	}

	example := seedExample(t, readFile(t, "testdata/seed003_response.json"))
	var got any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	var p h4r.Pack
	if err := json.Unmarshal(env.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Results) == 0 || len(p.SourceNames) == 0 {
		t.Fatalf("precondition: the example's request must find results (it found %d, sources %v), or the shape of a result is not checked", len(p.Results), p.SourceNames)
	}
	for _, problem := range sameShape("", example, got) {
		t.Error(problem)
	}
	// The values, not only the types: sources names the generators asked,
	// tldr.summary is the TL;DR, a result's metadata.source is one of them.
	if p.Explainability.TLDR.Summary == "" || p.Explainability.TLDR.Summary != p.Explainability.TLDR.Text {
		t.Errorf("tldr.summary %q, want the TL;DR text %q", p.Explainability.TLDR.Summary, p.Explainability.TLDR.Text)
	}
	for name := range p.Sources {
		if !strings.Contains(strings.Join(p.SourceNames, ","), name) {
			t.Errorf("sources %v does not name generator %q of sourceStats", p.SourceNames, name)
		}
	}
	for _, res := range p.Results {
		for gen := range strings.SplitSeq(res.Metadata.Source, "+") {
			if _, ok := p.Sources[gen]; !ok {
				t.Errorf("%s: metadata.source %q names a generator not in sources %v", res.ID, res.Metadata.Source, p.SourceNames)
			}
		}
	}
}

// TestSeed003ResponseExampleDecodes checks the test's reading of the
// response example: every field the document names is there, so that
// sameShape checks them all.
func TestSeed003ResponseExampleDecodes(t *testing.T) {
	example := seedExample(t, readFile(t, "testdata/seed003_response.json"))
	for _, path := range []string{
		"meta.type", "meta.reply_to", "payload.results[].id", "payload.results[].content", "payload.results[].score",
		"payload.results[].metadata.source", "payload.results[].metadata.redacted", "payload.results[].metadata.byteSize",
		"payload.total_count", "payload.query_duration_ms", "payload.sources[]",
		"payload.explainability.tldr.summary", "payload.explainability.tldr.citations[]", "payload.explainability.affordances",
		"payload.explainability.causalGraph", "payload.explainability.slicing.totalRedacted",
		"payload.explainability.slicing.totalDroppedBudget", "payload.explainability.slicing.budgetUsed.estimatedTokens",
		"payload.explainability.timings.retrievalMs", "payload.explainability.timings.summarizationMs",
		"payload.explainability.warnings",
	} {
		if !hasPath(example, path) {
			t.Errorf("the example has no %s", path)
		}
	}
}

// seedExample reads a document example: its placeholders "{...}" and
// "[...]" stand for an object and a list of any content.
func seedExample(t *testing.T, doc []byte) any {
	t.Helper()
	doc = bytes.ReplaceAll(doc, []byte("{...}"), []byte("{}"))
	doc = bytes.ReplaceAll(doc, []byte("[...]"), []byte("[]"))
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("the example is not JSON once its placeholders are replaced: %v", err)
	}
	return v
}

// sameShape lists where got lacks a field of want or holds it with another
// JSON type. A list in want checks each element of got's list against its
// first element; null in want admits null or an object (the context-pack contract's
// causalGraph is null unless asked for).
func sameShape(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %s", pathOr(path), jsonType(got))}
		}
		var problems []string
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: missing", join(path, k)))
				continue
			}
			problems = append(problems, sameShape(join(path, k), wv, gv)...)
		}
		return problems
	case []any:
		g, ok := got.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want a list, got %s", pathOr(path), jsonType(got))}
		}
		if len(w) == 0 {
			return nil
		}
		var problems []string
		for i, gv := range g {
			problems = append(problems, sameShape(fmt.Sprintf("%s[%d]", path, i), w[0], gv)...)
		}
		return problems
	case nil:
		if got != nil {
			if _, ok := got.(map[string]any); !ok {
				return []string{fmt.Sprintf("%s: want null or an object, got %s", pathOr(path), jsonType(got))}
			}
		}
		return nil
	default:
		if jsonType(want) != jsonType(got) {
			return []string{fmt.Sprintf("%s: want %s, got %s", pathOr(path), jsonType(want), jsonType(got))}
		}
		return nil
	}
}

// hasPath reports whether v holds the dotted path; "name[]" steps into
// the first element of a list.
func hasPath(v any, path string) bool {
	for step := range strings.SplitSeq(path, ".") {
		name, list := strings.CutSuffix(step, "[]")
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[name]; !ok {
			return false
		}
		if list {
			l, ok := v.([]any)
			if !ok || len(l) == 0 {
				return false
			}
			v = l[0]
		}
	}
	return true
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "list"
	default:
		return "object"
	}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func pathOr(path string) string {
	if path == "" {
		return "(the body)"
	}
	return path
}
