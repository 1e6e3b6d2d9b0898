package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMergeSectionRefusesRedefinition checks that a feature file cannot
// silently replace a path or schema another file defines.
func TestMergeSectionRefusesRedefinition(t *testing.T) {
	tests := []struct {
		name    string
		base    string
		part    string
		wantErr string
		wantLen int
	}{
		{"new path added", `{"paths":{"/a":{}}}`, `{"paths":{"/b":{}}}`, "", 2},
		{"same path refused", `{"paths":{"/a":{}}}`, `{"paths":{"/a":{}}}`, `redefines paths "/a"`, 0},
		{"empty part", `{"paths":{"/a":{}}}`, `{}`, "", 1},
		{"base without paths", `{}`, `{"paths":{"/b":{}}}`, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var base, part map[string]any
			if err := json.Unmarshal([]byte(tt.base), &base); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.part), &part); err != nil {
				t.Fatal(err)
			}
			err := mergeSection(base, part, "x.json", "paths")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := len(base["paths"].(map[string]any)); got != tt.wantLen {
				t.Errorf("%d paths, want %d", got, tt.wantLen)
			}
		})
	}
}

// TestOpenAPIDocumentMerges checks the embedded files merge into one
// document that keeps core.json's frame.
func TestOpenAPIDocumentMerges(t *testing.T) {
	b, err := openAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") || doc.Paths["/v1/context-pack"] == nil {
		t.Errorf("merged document lost core.json's frame: openapi %q, %d paths", doc.OpenAPI, len(doc.Paths))
	}
}
