package rag_test

import (
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/rag"
)

func TestQueryToolArgs(t *testing.T) {
	k := 0
	tests := []struct {
		name  string
		args  rag.QueryToolArgs
		field string // "" valid
	}{
		{"query and files", rag.QueryToolArgs{Query: "login flake", Files: []string{"a.go"}}, ""},
		{"no query", rag.QueryToolArgs{Files: []string{"a.go"}}, "query"},
		{"k zero", rag.QueryToolArgs{Query: "q", K: &k}, "k"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.args.Request("mcp-session", "agent")
			err := r.Validate()
			if tt.field == "" {
				if err != nil || r.SessionID != "mcp-session" || len(r.Files) != 1 || r.Files[0] != "a.go" {
					t.Fatalf("request %+v, err %v", r, err)
				}
				return
			}
			if e, ok := err.(*h4r.Error); !ok || e.Field != tt.field {
				t.Errorf("err %v, want one naming %q", err, tt.field)
			}
		})
	}
}
