package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// memoryItem is one item of a memory.read answer.
type memoryItem struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	Payload   map[string]any `json:"payload"`
	CreatedAt time.Time      `json:"created_at"`
}

func writeMemory(t *testing.T, base, key, body string) string {
	t.Helper()
	r := post(t, base+"/v1/memory/write", body, bearer(key)...)
	if r.status != http.StatusOK {
		t.Fatalf("memory.write: %d %s", r.status, r.body)
	}
	var out struct {
		MemoryID string `json:"memory_id"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil || !strings.HasPrefix(out.MemoryID, "memory-") {
		t.Fatalf("memory.write answered %s (%v), want {memory_id}", r.body, err)
	}
	return out.MemoryID
}

func readMemories(t *testing.T, base, key, body string) ([]memoryItem, response) {
	t.Helper()
	r := post(t, base+"/v1/memory/read", body, bearer(key)...)
	if r.status != http.StatusOK {
		t.Fatalf("memory.read: %d %s", r.status, r.body)
	}
	var out struct {
		Items []memoryItem `json:"items"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	return out.Items, r
}

func memoryIDs(items []memoryItem) []string {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	slices.Sort(ids)
	return ids
}

// TestMemoryToolsOverHTTP writes memories in one agent's session with an
// admin key, some of them kept from low clearances, and reads them back
// with other keys: each key sees only what its principal may, whatever
// scope it asks for, in memory.read and memory.stats alike.
func TestMemoryToolsOverHTTP(t *testing.T) {
	st := newAuthStack(t)
	base := st.serve(t)
	const scope = `"scope": {"session_id": "s-ops", "agent_id": "agent-ops", "repo": "h4r", "files": ["server/a2a.go"]}`
	open := writeMemory(t, base, adminKey, `{`+scope+`, "type": "fix", "payload": {"summary": "login selector is #sign-in now"}, "tags": ["login"]}`)
	opsOnly := writeMemory(t, base, adminKey, `{`+scope+`, "type": "decision", "payload": {"summary": "rotate the ops-only-runbook-zq credentials"}, "restricted_to_groups": ["ops"]}`)
	sensitive := writeMemory(t, base, adminKey, `{`+scope+`, "type": "decision", "payload": {"summary": "the sensitive-zx incident"}, "sensitivity": 0.9}`)
	other := writeMemory(t, base, adminKey, `{"scope": {"session_id": "s-other", "agent_id": "agent-ops"}, "type": "fix", "payload": {"summary": "elsewhere"}}`)

	read := `{"scope": {"session_id": "s-ops", "agent_id": "agent-ops"}}`
	tests := []struct {
		name      string
		key       string
		want      []string
		wantStats map[string]int
	}{
		{"public key in another agent's session", publicKey, []string{open}, map[string]int{"fix": 1}},
		{"restricted key in the ops group", restrictedKey, []string{open, opsOnly, sensitive}, map[string]int{"fix": 1, "decision": 2}},
		{"internal key outside ops", healerKey, []string{open}, map[string]int{"fix": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, r := readMemories(t, base, tt.key, read)
			want := slices.Sorted(slices.Values(tt.want))
			if got := memoryIDs(items); !slices.Equal(got, want) {
				t.Errorf("memory.read = %v, want %v", got, want)
			}
			for _, it := range items {
				if it.ID == open && (it.Type != "fix" || it.Payload["summary"] != "login selector is #sign-in now" || it.CreatedAt.IsZero()) {
					t.Errorf("memory %s read as %+v, want its type, payload and created_at", it.ID, it)
				}
			}
			if !slices.Contains(tt.want, opsOnly) && strings.Contains(string(r.body), "ops-only-runbook-zq") {
				t.Errorf("the answer holds the ops-only memory: %s", r.body)
			}
			if !slices.Contains(tt.want, sensitive) && strings.Contains(string(r.body), "sensitive-zx") {
				t.Errorf("the answer holds the sensitive memory: %s", r.body)
			}
			sr := post(t, base+"/v1/memory/stats", `{"scope": {"session_id": "s-ops"}}`, bearer(tt.key)...)
			var stats struct {
				Counts      map[string]int `json:"counts"`
				Total       int            `json:"total"`
				LastWriteAt *time.Time     `json:"last_write_at"`
			}
			if err := json.Unmarshal(sr.body, &stats); err != nil || sr.status != http.StatusOK {
				t.Fatalf("memory.stats: %d %s", sr.status, sr.body)
			}
			if !mapsEqual(stats.Counts, tt.wantStats) || stats.Total != len(tt.want) || stats.LastWriteAt == nil {
				t.Errorf("memory.stats = %s, want counts %v", sr.body, tt.wantStats)
			}
		})
	}

	t.Run("filters", func(t *testing.T) {
		for _, f := range []struct {
			name, body string
			want       []string
		}{
			{"type", `{"scope": {"agent_id": "agent-ops"}, "filter": {"type": "fix"}}`, []string{open, other}},
			{"tags", `{"scope": {}, "filter": {"tags": ["login"]}}`, []string{open}},
			{"text", `{"scope": {"agent_id": "agent-ops"}, "filter": {"text": "selector"}}`, []string{open}},
			{"repo", `{"scope": {"repo": "h4r"}, "filter": {"type": "decision"}}`, []string{opsOnly, sensitive}},
		} {
			t.Run(f.name, func(t *testing.T) {
				items, _ := readMemories(t, base, restrictedKey, f.body)
				if got, want := memoryIDs(items), slices.Sorted(slices.Values(f.want)); !slices.Equal(got, want) {
					t.Errorf("memory.read = %v, want %v", got, want)
				}
			})
		}
	})

	t.Run("link", func(t *testing.T) {
		body := `{"memory_id": "` + open + `", "related": {"commit_sha": "abc123"}, "relation": "introduced_in"}`
		if r := post(t, base+"/v1/memory/link", body, bearer(publicKey)...); r.status != http.StatusForbidden {
			t.Errorf("a read-only key linked: %d %s", r.status, r.body)
		}
		if r := post(t, base+"/v1/memory/link", body, bearer(adminKey)...); r.status != http.StatusOK {
			t.Fatalf("memory.link: %d %s", r.status, r.body)
		}
		it, err := st.store.Get(t.Context(), open)
		if err != nil {
			t.Fatal(err)
		}
		has := func(typ, target string) bool {
			return slices.ContainsFunc(it.Links, func(l h4r.Link) bool { return l.Type == typ && l.Target == target })
		}
		if !has("introduced_in", "commit:abc123") || !has("about_file", "file:server/a2a.go") {
			t.Errorf("links %+v, want the written file and the linked commit", it.Links)
		}
		// The ingest key (public, no groups) may not see the ops-only
		// memory: to it, the memory does not exist.
		hidden := `{"memory_id": "` + opsOnly + `", "related": {"file_path": "x.go"}, "relation": "references"}`
		r := post(t, base+"/v1/memory/link", hidden, bearer(ingestKey)...)
		if e := checkErrorShape(t, r); r.status != http.StatusNotFound || e.Field != "memory_id" {
			t.Errorf("linking a memory the key may not see: %d %s, want 404 naming memory_id", r.status, r.body)
		}
	})
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestMemoryBadInput: every bad body is a 400 naming the field, and
// nothing is written.
func TestMemoryBadInput(t *testing.T) {
	base := newAuthStack(t).serve(t)
	tests := []struct {
		name, path, body, field string
	}{
		{"write without scope.session_id", "write", `{"scope": {"agent_id": "a"}, "type": "fix", "payload": {}}`, "scope.session_id"},
		{"write without agent_id", "write", `{"scope": {"session_id": "s"}, "type": "fix", "payload": {}}`, "scope.agent_id"},
		{"write without type", "write", `{"scope": {"session_id": "s", "agent_id": "a"}, "payload": {}}`, "type"},
		{"write without payload", "write", `{"scope": {"session_id": "s", "agent_id": "a"}, "type": "fix"}`, "payload"},
		{"write with a payload that is no object", "write", `{"scope": {"session_id": "s", "agent_id": "a"}, "type": "fix", "payload": "text"}`, "payload"},
		{"write with an unknown field", "write", `{"scope": {"session_id": "s", "agent_id": "a"}, "type": "fix", "payload": {}, "ttl": 3}`, "ttl"},
		{"write with an unknown scope field", "write", `{"scope": {"session_id": "s", "agent_id": "a", "branch": "x"}, "type": "fix", "payload": {}}`, "scope.branch"},
		{"write with a sensitivity over 1", "write", `{"scope": {"session_id": "s", "agent_id": "a"}, "type": "fix", "payload": {}, "sensitivity": 2}`, "sensitivity"},
		{"write with a NUL in the session", "write", `{"scope": {"session_id": "s\u0000", "agent_id": "a"}, "type": "fix", "payload": {}}`, "scope.session_id"},
		{"read with a limit over 100", "read", `{"scope": {}, "limit": 101}`, "limit"},
		{"read with a tags string", "read", `{"scope": {}, "filter": {"tags": "login"}}`, "filter.tags"},
		{"link with two targets", "link", `{"memory_id": "m", "related": {"file_path": "a", "commit_sha": "b"}, "relation": "r"}`, "related"},
		{"link without relation", "link", `{"memory_id": "m", "related": {"file_path": "a"}}`, "relation"},
		{"stats with a scope that is no object", "stats", `{"scope": "s"}`, "scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, base+"/v1/memory/"+tt.path, tt.body, bearer(adminKey)...)
			e := checkErrorShape(t, r)
			if r.status != http.StatusBadRequest || e.Field != tt.field {
				t.Errorf("%d %s, want 400 naming %q", r.status, r.body, tt.field)
			}
		})
	}
	items, _ := readMemories(t, base, adminKey, `{"scope": {}}`)
	if len(items) != 0 {
		t.Errorf("bad writes left %d memories", len(items))
	}
}

// TestMemoryReadIsAUse: a memory read is an explicit use of what it
// returns, which the frequency signal counts.
func TestMemoryReadIsAUse(t *testing.T) {
	st := newAuthStack(t)
	base := st.serve(t)
	id := writeMemory(t, base, adminKey, `{"scope": {"session_id": "s", "agent_id": "a"}, "type": "fix", "payload": {"summary": "x"}}`)
	for range 2 {
		readMemories(t, base, adminKey, `{"scope": {"session_id": "s"}}`)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		it, err := st.store.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if it.Metadata.AccessCount == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("accessCount = %d after two reads, want 2", it.Metadata.AccessCount)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
