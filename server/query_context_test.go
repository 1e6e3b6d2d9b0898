package server_test

import (
	"net/http"
	"testing"
)

// ingestedChunks are chunks as ingestion writes them: path, blob sha,
// line range and source type in metadata, the text in content.
const ingestedChunks = `{"items": [
 {"id": "chunk:repo:auth/token.go#0", "kind": "chunk", "text": "the refresh token walrus is renewed five minutes before expiry",
  "content": {"text": "the refresh token walrus is renewed five minutes before expiry", "path": "auth/token.go", "line_range": [1, 9]},
  "metadata": {"path": "auth/token.go", "sha": "9f3c0de1", "source_type": "git", "line_range": [1, 9]}},
 {"id": "chunk:repo:auth/session.go#0", "kind": "chunk", "text": "the session walrus keeps the refresh token",
  "content": {"text": "the session walrus keeps the refresh token", "path": "auth/session.go", "line_range": [3, 7]},
  "metadata": {"path": "auth/session.go", "sha": "77aa01b2", "source_type": "git", "line_range": [3, 7]}},
 {"id": "chunk:repo:docs/zoo.md#0", "kind": "chunk", "text": "a walrus at the zoo",
  "content": {"text": "a walrus at the zoo", "path": "docs/zoo.md", "line_range": [1, 1]},
  "metadata": {"path": "docs/zoo.md", "sha": "0c0c0c0c", "source_type": "fs", "line_range": [1, 1]}}
]}`

// TestQueryKeepsIngestProvenance: a chunk ingested from git carries its
// blob sha and its source type to the chunk and the citation.
func TestQueryKeepsIngestProvenance(t *testing.T) {
	s := newRAGStack(t, nil)
	if r := post(t, s.base+"/v1/items", ingestedChunks, bearer(adminKey)...); r.status != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.status, r.body)
	}
	out := decodeQuery(t, post(t, s.base+"/query", `{"session_id": "s", "agent_id": "a", "query": "renewed before expiry", "k": 1}`, bearer(publicKey)...))
	if len(out.ContextPack.Chunks) != 1 {
		t.Fatalf("chunks = %+v", out.ContextPack.Chunks)
	}
	ch := out.ContextPack.Chunks[0]
	if ch.SHA != "9f3c0de1" || ch.Source != "git" || ch.Path != "auth/token.go" || len(ch.LineRange) != 2 || ch.LineRange[1] != 9 {
		t.Errorf("chunk = %+v, want sha 9f3c0de1, source git", ch)
	}
	if len(out.Citations) != 1 || out.Citations[0].SHA != "9f3c0de1" {
		t.Errorf("citations = %+v", out.Citations)
	}
}

// TestQueryRanksTheWorkingContextUp: the chunk of a changed file (or of
// a file the agent names) comes first though the engine ranks it second.
func TestQueryRanksTheWorkingContextUp(t *testing.T) {
	s := newRAGStack(t, nil)
	if r := post(t, s.base+"/v1/items", ingestedChunks, bearer(adminKey)...); r.status != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.status, r.body)
	}
	tests := []struct {
		name, context, first string
	}{
		{"no context", ``, "chunk:repo:auth/session.go#0"},
		{"changed file", `, "working_dir": "/home/dev/repo", "git": {"sha": "abc", "branch": "main", "changed_files": ["auth/token.go"]}`, "chunk:repo:auth/token.go#0"},
		{"files, absolute", `, "files": ["/home/dev/repo/auth/token.go"]`, "chunk:repo:auth/token.go#0"},
		{"another file", `, "files": ["auth/other.go"]`, "chunk:repo:auth/session.go#0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := decodeQuery(t, post(t, s.base+"/query", `{"session_id": "s", "agent_id": "a", "query": "refresh walrus token", "k": 1`+tt.context+`}`, bearer(publicKey)...))
			if len(out.ContextPack.Chunks) != 1 || out.ContextPack.Chunks[0].ID != tt.first {
				t.Errorf("chunks = %+v, want %s first", out.ContextPack.Chunks, tt.first)
			}
		})
	}
	out := decodeQuery(t, post(t, s.base+"/query", `{"session_id": "s", "agent_id": "a", "query": "walrus token", "prefer_graph": true}`, bearer(publicKey)...))
	if out.Debug.Plan["query_type"] != "causal" {
		t.Errorf("prefer_graph: query_type %v, want causal", out.Debug.Plan["query_type"])
	}
}
