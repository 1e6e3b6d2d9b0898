package mcptools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/h4r/h4r/mcptools"
	"github.com/h4r/h4r/trace"
)

// fullRegistry holds every tool h4r mcp and /mcp offer (cmd/h4r's
// mcpRegistry): the standard ones, rag_*, search_traces, precedents and
// context_bridge.
func fullRegistry(t *testing.T) *mcptools.Registry {
	t.Helper()
	a := openApp(t)
	r := openRegistry(t)
	mcptools.AddRAG(r, a.RAG(), time.Minute)
	mcptools.AddTraces(r, trace.NewService(a.Store, trace.WithSearch(a.Engine, a.Slicer)), a.Decisions)
	b, err := a.Bridge(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	mcptools.AddBridge(r, b)
	return r
}

// TestToolSchemasAreStrict: every tool's input and output schema, as
// tools/list sends it, is one the strictest MCP clients accept. The
// TypeScript SDK refuses the whole list when one property's schema is a
// boolean (a Go any field), so no host sees any tool; each schema must
// also use only JSON Schema keywords and resolve.
func TestToolSchemasAreStrict(t *testing.T) {
	cs := connect(t, fullRegistry(t), publicCaller())
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		for _, s := range []struct {
			which  string
			schema any
		}{{"input", tool.InputSchema}, {"output", tool.OutputSchema}} {
			if s.schema == nil {
				continue
			}
			b, err := json.Marshal(s.schema)
			if err != nil {
				t.Fatal(err)
			}
			var doc any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			if m, ok := doc.(map[string]any); !ok || m["type"] != "object" {
				t.Errorf("%s: %s schema %s: want an object schema of type object", tool.Name, s.which, b)
			}
			for _, problem := range strictProblems(doc, "", "") {
				t.Errorf("%s: %s schema: %s", tool.Name, s.which, problem)
			}
			var parsed jsonschema.Schema
			if err := json.Unmarshal(b, &parsed); err != nil {
				t.Errorf("%s: %s schema does not parse: %v", tool.Name, s.which, err)
				continue
			}
			if _, err := parsed.Resolve(nil); err != nil {
				t.Errorf("%s: %s schema does not resolve: %v", tool.Name, s.which, err)
			}
		}
	}
	for _, want := range []string{"context_pack", "memory_write", "memory_read", "memory_link", "memory_stats",
		"rag_query", "rag_feedback", "search_traces", "precedents", "context_bridge"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s (has %v)", want, names)
		}
	}
}

// The JSON Schema 2020-12 keywords whose values are schemas, by how they
// hold them; and every keyword a tool schema may use.
var (
	oneSchema = map[string]bool{"items": true, "additionalProperties": true, "not": true, "if": true, "then": true, "else": true,
		"contains": true, "propertyNames": true, "unevaluatedItems": true, "unevaluatedProperties": true, "additionalItems": true, "contentSchema": true}
	schemaList = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true}
	schemaMap  = map[string]bool{"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true}
	keywords   = map[string]bool{"$schema": true, "$id": true, "$ref": true, "$comment": true, "$anchor": true, "title": true, "description": true,
		"type": true, "enum": true, "const": true, "default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
		"required": true, "minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
		"minLength": true, "maxLength": true, "pattern": true, "format": true, "minItems": true, "maxItems": true, "uniqueItems": true,
		"minProperties": true, "maxProperties": true, "dependentRequired": true, "contentEncoding": true, "contentMediaType": true}
)

// strictProblems walks the schema s at path (reached through keyword)
// and says what a strict client would refuse: a boolean schema anywhere
// but additionalProperties: false (the usual "no other members"), a
// schema that is not an object, an unknown keyword.
func strictProblems(s any, path, keyword string) []string {
	if b, ok := s.(bool); ok {
		if keyword == "additionalProperties" && !b {
			return nil
		}
		return []string{fmt.Sprintf("%s is the boolean schema %v: want {} or a typed schema", path, b)}
	}
	m, ok := s.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s is %T, want a schema object", path, s)}
	}
	var out []string
	for k, v := range m {
		at := path + "/" + k
		switch {
		case oneSchema[k]:
			out = append(out, strictProblems(v, at, k)...)
		case schemaList[k]:
			list, ok := v.([]any)
			if !ok {
				out = append(out, at+" is not a list of schemas")
			}
			for i, c := range list {
				out = append(out, strictProblems(c, fmt.Sprintf("%s/%d", at, i), k)...)
			}
		case schemaMap[k]:
			members, ok := v.(map[string]any)
			if !ok {
				out = append(out, at+" is not an object of schemas")
			}
			for name, c := range members {
				out = append(out, strictProblems(c, at+"/"+name, k)...)
			}
		case !keywords[k]:
			out = append(out, fmt.Sprintf("%s: %q is no JSON Schema keyword", path, k))
		}
	}
	return out
}

type looseIn struct {
	Params map[string]any `json:"params"`
}

type looseOut struct {
	Result any `json:"result"`
}

// TestUpstreamSchemasAreStrict: an upstream server's tools whose schemas
// hold boolean schemas (a Go any, a map of any) are re-exposed without
// them, so that one upstream cannot make strict clients refuse H4R's
// whole tools/list.
func TestUpstreamSchemasAreStrict(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	mcp.AddTool(up, &mcp.Tool{Name: "loose", Description: "takes and gives anything"},
		func(_ context.Context, _ *mcp.CallToolRequest, in looseIn) (*mcp.CallToolResult, looseOut, error) {
			return nil, looseOut{Result: in.Params}, nil
		})
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := up.Connect(t.Context(), serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	session, err := mcp.NewClient(&mcp.Implementation{Name: "h4r", Version: "test"}, nil).Connect(t.Context(), clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = session.Close() })

	r := mcptools.NewRegistry("h4r", "test")
	if _, err := mcptools.AddUpstream(t.Context(), r, session, mcptools.UpstreamOptions{Prefix: "up_"}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, r, publicCaller())
	listed, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(listed.Tools) != 1 {
		t.Fatalf("tools/list: %v %+v", err, listed)
	}
	for which, schema := range map[string]any{"input": listed.Tools[0].InputSchema, "output": listed.Tools[0].OutputSchema} {
		b, _ := json.Marshal(schema)
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		for _, problem := range strictProblems(doc, "", "") {
			t.Errorf("up_loose: %s schema: %s", which, problem)
		}
	}
	text, isErr := call(t, cs, "up_loose", map[string]any{"params": map[string]any{"a": 1}})
	if isErr || !strings.Contains(text, `"result":{"a":1}`) {
		t.Errorf("up_loose answered %s (isError %v)", text, isErr)
	}
}
