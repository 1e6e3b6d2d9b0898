package server

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateReference = flag.Bool("update-reference", false, "rewrite docs/api-reference.md from the OpenAPI description")

// apiReference renders the OpenAPI description as a Markdown reference:
// one section per route, with its operation id, summary, whether it needs
// a key, its parameters, its body's schema and its answers.
func apiReference(doc map[string]any) string {
	var b strings.Builder
	b.WriteString("# API reference\n\n")
	b.WriteString("Generated from the OpenAPI description the server serves at `GET /openapi.json` (`server/openapi/`);\n")
	b.WriteString("`go test ./server -run TestAPIReferenceCurrent -args -update-reference` rewrites it, and the test fails\n")
	b.WriteString("when it is not current. The guides ([api.md](api.md), [commit-traces.md](commit-traces.md), …) explain\n")
	b.WriteString("what each route is for; this page lists them all.\n\n")
	paths, _ := doc["paths"].(map[string]any)
	names := make([]string, 0, len(paths))
	for p := range paths {
		names = append(names, p)
	}
	slices.Sort(names)
	b.WriteString("| method | path | operation | summary |\n|---|---|---|---|\n")
	type op struct {
		method, path string
		body         map[string]any
	}
	var ops []op
	for _, p := range names {
		item, _ := paths[p].(map[string]any)
		for _, m := range []string{"get", "post", "put", "patch", "delete"} {
			o, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			ops = append(ops, op{strings.ToUpper(m), p, o})
			fmt.Fprintf(&b, "| %s | `%s` | [`%s`](#%s) | %s |\n", strings.ToUpper(m), p, o["operationId"],
				strings.ToLower(fmt.Sprint(o["operationId"])), cell(fmt.Sprint(o["summary"])))
		}
	}
	for _, o := range ops {
		fmt.Fprintf(&b, "\n## %s\n\n`%s %s`: %s\n\n", o.body["operationId"], o.method, o.path, o.body["summary"])
		if sec, ok := o.body["security"].([]any); ok && len(sec) == 0 {
			b.WriteString("- Key: none needed.\n")
		} else {
			b.WriteString("- Key: `Authorization: Bearer KEY` when the server has keys.\n")
		}
		if params, ok := o.body["parameters"].([]any); ok {
			for _, raw := range params {
				pm, _ := raw.(map[string]any)
				if ref, ok := pm["$ref"].(string); ok {
					fmt.Fprintf(&b, "- Parameter: `%s`\n", strings.TrimPrefix(ref, "#/components/parameters/"))
					continue
				}
				fmt.Fprintf(&b, "- Parameter `%s` (%s): %s\n", pm["name"], pm["in"], oneLine(fmt.Sprint(pm["description"])))
			}
		}
		if rb, ok := o.body["requestBody"].(map[string]any); ok {
			fmt.Fprintf(&b, "- Body: %s\n", schemaName(rb))
		}
		resps, _ := o.body["responses"].(map[string]any)
		codes := make([]string, 0, len(resps))
		for c := range resps {
			codes = append(codes, c)
		}
		slices.Sort(codes)
		for _, c := range codes {
			r, _ := resps[c].(map[string]any)
			if ref, ok := r["$ref"].(string); ok {
				fmt.Fprintf(&b, "- %s: %s\n", c, strings.TrimPrefix(ref, "#/components/responses/"))
				continue
			}
			desc := oneLine(fmt.Sprint(r["description"]))
			if s := schemaName(r); s != "" {
				desc += " (" + s + ")"
			}
			fmt.Fprintf(&b, "- %s: %s\n", c, desc)
		}
	}
	return b.String()
}

// schemaName names the JSON schema of a body or an answer: its component,
// or its type.
func schemaName(v map[string]any) string {
	content, _ := v["content"].(map[string]any)
	for _, mt := range []string{"application/json", "text/event-stream", "text/plain"} {
		c, ok := content[mt].(map[string]any)
		if !ok {
			continue
		}
		s, _ := c["schema"].(map[string]any)
		if ref, ok := s["$ref"].(string); ok {
			return "`" + strings.TrimPrefix(ref, "#/components/schemas/") + "`, " + mt
		}
		if t, ok := s["type"]; ok {
			return fmt.Sprintf("%v, %s", t, mt)
		}
		return mt
	}
	return ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
func cell(s string) string    { return strings.ReplaceAll(oneLine(s), "|", "\\|") }

// TestAPIReferenceCurrent keeps docs/api-reference.md equal to what the
// OpenAPI description generates.
func TestAPIReferenceCurrent(t *testing.T) {
	raw, err := openAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	want := apiReference(doc)
	path := filepath.Join("..", "docs", "api-reference.md")
	if *updateReference {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v (go test ./server -run TestAPIReferenceCurrent -args -update-reference writes it)", path, err)
	}
	if string(got) != want {
		t.Errorf("%s is not what the OpenAPI description generates: go test ./server -run TestAPIReferenceCurrent -args -update-reference", path)
	}
}
