package main

// The canary harness: every kind of data H4R stores is seeded with three
// canaries (restricted, redacted, deleted), each a random marker word in
// the protected text; then every surface (each HTTP route, MCP tool and
// resource, A2A method, WebSocket push, CLI read, and the packs answered
// late while an index loads) is called with every key class, and any
// marker byte in a status line, header, body, push or error is a failure
// naming the surface, the key, the canary and a snippet.
// Surfaces are table entries (canarySurfaces), so a fixed leak turns its
// entry green without touching the others.
//
// The canaries, by kind (seed): items, decision traces and trajectories
// have all three classes; commit traces (over HTTP and over NATS) and
// memories carry no PII metadata, so no redacted one; ingestion chunks
// have a restricted folder, three withheld files (a credentials file, one
// read through a symlink inside the root, one behind a symlink leaving
// it) and a deleted file; the stored pack and the A2A task of the vault
// key hold a restricted one in the request. Besides marker bytes, an
// answer about a hidden id that differs from the answer about an id that
// never existed is a finding (an existence oracle).

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/internal/natstest"
	"github.com/h4r/h4r/internal/pgtest"
)

// topic is in every canary's text and in the decoys', so that an ordinary
// query finds them all; the marker queries are an adversary's probes.
const (
	topic       = "quartz rollback canary pipeline"
	canaryRepo  = "acme/canary"
	canaryArea  = "pkg/canary"
	canaryEpic  = "cnry-epic"
	canaryScope = `{"session_id": "cnry-session", "agent_id": "cnry-agent", "repo": "acme/canary"}`
)

// harness is one run: a store, one or two replicas, the canaries and what
// the probes found.
type harness struct {
	t        *testing.T
	writer   *canaryServer   // seeds and deletes
	replicas []*canaryServer // probed; the writer first
	det      *detector
	vars     map[string]string
	nats     bool
	queries  []string // what the probes ask; their exact echoes are not leaks

	itemIDs    []string // every item id a canary was written to, deleted ones too
	traceSHAs  []string // commit traces with canaries
	decisions  []string // decision trace ids with canaries
	memories   []string // memory ids with canaries
	packID     string   // the stored pack of the vault key
	taskID     string   // the vault key's A2A task
	jobIDs     []string // the seeder's ingestion jobs
	deleteIDs  []string // deleted after seeding
	deletedYet bool
	hidden     map[string]canary // ids no probe key may see (restricted, or deleted), by the canary they hold
	// sessionTurns are the canary session's turns in order; markedIDs the
	// ids that hold a marker themselves (canary_retrieval_test.go).
	sessionTurns []string
	markedIDs    []string
	subs         []*pushLog
	// tenants: the canaries are another tenant's (seedTenant) than the
	// probe keys' (probeTenant), so that none of them may reach a probe,
	// whatever its class (canary_tenants_test.go).
	tenants bool
}

// seed writes every canary through the writer; deletions come later
// (deleteCanaries), after the warm-up probes have filled every cache.
func (h *harness) seed() {
	t, w := h.t, h.writer.base
	mark := func(kind, class, what string) string {
		m := newMarker(class)
		h.det.add(canary{kind: kind, class: class, marker: m, what: what})
		return m
	}
	// Decoys every key may see, so that answers are not empty.
	mustCall(t, w, keySeeder, "POST", "/v1/items", `{"items": [
	 {"id": "cnry-decoy-1", "kind": "note", "text": "The `+topic+` decoy: open to every key.", "metadata": {"trust": 0.9, "importance": 0.8}},
	 {"id": "cnry-decoy-2", "kind": "trajectory", "text": "Plan the `+topic+` decoy trajectory.", "content": {"description": "Plan the `+topic+` decoy trajectory", "domain": "canary", "tool_sequence": ["think"], "success_score": 0.9, "quality_score": 0.9}, "metadata": {"trust": 0.9}}]}`, http.StatusOK)

	// Items: restricted (sensitive and group-restricted), redacted (PII in
	// text and content), deleted.
	r, p, d := mark("item", classRestricted, "item text"), mark("item", classRedacted, "item text and content.personalData"), mark("item", classDeleted, "item text")
	mustCall(t, w, keySeeder, "POST", "/v1/items", fmt.Sprintf(`{"items": [
	 {"id": "cnry-item-r", "kind": "note", "text": "The %[1]s restricted note %[2]s.", "content": {"detail": "%[2]s"},
	  "metadata": {"trust": 0.9, "importance": 0.9, "sensitivity": 0.95, "restrictedToGroups": ["vault"], "tags": ["%[5]s"]},
	  "links": [{"type": "relates_to", "target": "cnry-decoy-1"}]},
	 {"id": "cnry-item-p", "kind": "note", "text": "The %[1]s note of %[3]s at jane@example.com.", "content": {"personalData": {"email": "%[3]s@example.com"}, "selector": "#quartz"},
	  "metadata": {"trust": 0.9, "importance": 0.9, "containsPII": true, "piiFields": ["$.content.personalData"], "tags": ["%[5]s"]}},
	 {"id": "cnry-item-d", "kind": "note", "text": "The %[1]s note %[4]s, deleted.", "content": {"detail": "%[4]s"},
	  "metadata": {"trust": 0.9, "importance": 0.9, "tags": ["%[5]s"]}, "links": [{"type": "relates_to", "target": "cnry-decoy-1"}]}]}`,
		topic, r, p, d, canaryArea), http.StatusOK)
	h.itemIDs = append(h.itemIDs, "cnry-item-r", "cnry-item-p", "cnry-item-d")
	h.hide("cnry-item-r", r)
	h.hide("cnry-item-d", d)
	h.deleteIDs = append(h.deleteIDs, "cnry-item-d")

	// Trajectories for the bridge: restricted and redacted written as items
	// of kind trajectory (the route takes no policy metadata), deleted
	// through the bridge's own route.
	r, p, d = mark("trajectory", classRestricted, "trajectory description"), mark("trajectory", classRedacted, "trajectory description"), mark("trajectory", classDeleted, "trajectory description")
	traj := func(id, marker, meta string) string {
		return fmt.Sprintf(`{"id": %q, "kind": "trajectory", "text": "Plan the %s trajectory %s", "content": {"session_id": "s", "description": "Plan the %s trajectory %s", "domain": "canary", "tool_sequence": ["think"], "success_score": 0.9, "quality_score": 0.9}, "metadata": %s}`,
			id, topic, marker, topic, marker, meta)
	}
	mustCall(t, w, keySeeder, "POST", "/v1/items", `{"items": [`+
		traj("cnry-traj-r", r, `{"trust": 0.9, "sensitivity": 0.95, "restrictedToGroups": ["vault"]}`)+`, `+
		traj("cnry-traj-p", p, `{"trust": 0.9, "containsPII": true}`)+`]}`, http.StatusOK)
	mustCall(t, w, keySeeder, "POST", "/v1/bridge/trajectories", fmt.Sprintf(`{"trajectory_id": "cnry-traj-d", "session_id": "s", "description": "Plan the %s trajectory %s", "domain": "canary", "tool_sequence": ["think"], "success_score": 0.9, "quality_score": 0.9}`, topic, d), http.StatusOK)
	h.itemIDs = append(h.itemIDs, "cnry-traj-r", "cnry-traj-p", "cnry-traj-d")
	h.hide("cnry-traj-r", r)
	h.hide("cnry-traj-d", d)
	h.deleteIDs = append(h.deleteIDs, "cnry-traj-d")

	// Decision traces: restricted, redacted (containsPII without fields:
	// text and content), deleted. One batch each, so that the ambient hub
	// weighs each on its own.
	r, p, d = mark("decision", classRestricted, "decision rationale"), mark("decision", classRedacted, "decision rationale"), mark("decision", classDeleted, "decision rationale")
	for _, dt := range []struct{ id, marker, meta string }{
		{"cnry-dt-r", r, `{"restrictedToGroups": ["vault"], "sensitivity": 0.95, "tags": ["` + canaryArea + `"]}`},
		{"cnry-dt-p", p, `{"containsPII": true, "tags": ["` + canaryArea + `"]}`},
		{"cnry-dt-d", d, `{"tags": ["` + canaryArea + `"]}`},
	} {
		mustCall(t, w, keySeeder, "POST", "/v1/decision-traces", fmt.Sprintf(`{"decision_traces": [{"id": %q, "decision_type": "file_assignment", "epic_id": %q, "agent_name": "coordinator", "project_key": %q,
		  "decision": {"files": ["%s/quartz.go"], "note": "%s"}, "rationale": "%s rollback split %s",
		  "alternatives": [{"option": "feature-based", "rejected_because": "%s"}], "precedent_cited": [{"epic_id": "cnry-prec", "reason": "%s"}],
		  "timestamp": "2026-11-20T12:00:00Z", "metadata": %s}]}`, dt.id, canaryEpic, canaryRepo, canaryArea, dt.marker, topic, dt.marker, dt.marker, dt.marker, dt.meta), http.StatusOK)
		h.decisions = append(h.decisions, dt.id)
		if dt.marker != p {
			h.hide(dt.id, dt.marker)
		}
		h.itemIDs = append(h.itemIDs, dt.id)
	}
	h.deleteIDs = append(h.deleteIDs, "cnry-dt-d")

	// Commit traces over HTTP: restricted to a group, deleted. A trace
	// carries no PII metadata: no redacted canary.
	r, d = mark("trace-http", classRestricted, "trace summary and decision"), mark("trace-http", classDeleted, "trace summary and decision")
	for i, tc := range []struct{ marker, groups string }{{r, `["vault"]`}, {d, `[]`}} {
		sha := fmt.Sprintf("c0ffee%034d", i+1)
		mustCall(t, w, keySeeder, "POST", "/v1/traces", commitTrace(sha, tc.marker, tc.groups), http.StatusOK)
		h.traceSHAs = append(h.traceSHAs, sha)
		h.itemIDs = append(h.itemIDs, canaryRepo+"@"+sha)
		h.hide(sha, tc.marker)
		h.hide(canaryRepo+"@"+sha, tc.marker)
		if i == 1 {
			h.deleteIDs = append(h.deleteIDs, canaryRepo+"@"+sha, canaryRepo+"@"+sha+":decision:0")
		}
	}

	// Commit traces over NATS, when the test NATS server is there.
	if h.nats {
		nc := natstest.Connect(t)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		r, d = mark("trace-nats", classRestricted, "trace summary and decision"), mark("trace-nats", classDeleted, "trace summary and decision")
		for i, tc := range []struct{ marker, groups string }{{r, `["vault"]`}, {d, `[]`}} {
			sha := fmt.Sprintf("beef%036d", i+1)
			if _, err := js.Publish(context.Background(), h.traceSubject(), []byte(commitTrace(sha, tc.marker, tc.groups))); err != nil {
				t.Fatal(err)
			}
			h.traceSHAs = append(h.traceSHAs, sha)
			h.itemIDs = append(h.itemIDs, canaryRepo+"@"+sha)
			h.hide(sha, tc.marker)
			h.hide(canaryRepo+"@"+sha, tc.marker)
			if i == 1 {
				h.deleteIDs = append(h.deleteIDs, canaryRepo+"@"+sha, canaryRepo+"@"+sha+":decision:0")
			}
			eventually(t, "the NATS trace "+sha, func() bool {
				return call(w, keySeeder, "GET", "/v1/items/"+url.PathEscape(canaryRepo+"@"+sha), nil).status == http.StatusOK
			})
		}
	}

	// Memories: restricted, deleted (memories carry no PII metadata).
	r, d = mark("memory", classRestricted, "memory payload"), mark("memory", classDeleted, "memory payload")
	for _, m := range []struct{ marker, extra string }{{r, `, "restricted_to_groups": ["vault"], "sensitivity": 0.95`}, {d, ``}} {
		body := mustCall(t, w, keySeeder, "POST", "/v1/memory/write", `{"scope": `+canaryScope+`, "type": "lesson", "payload": {"note": "`+topic+` lesson `+m.marker+`"}, "tags": ["`+canaryArea+`"]`+m.extra+`}`, http.StatusOK)
		var out struct {
			MemoryID string `json:"memory_id"`
		}
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		h.memories = append(h.memories, out.MemoryID)
		h.hide(out.MemoryID, m.marker)
		h.itemIDs = append(h.itemIDs, out.MemoryID)
	}
	h.deleteIDs = append(h.deleteIDs, h.memories[1])

	// Chunks from ingestion: a restricted folder; a credentials file and a
	// symlink leaving the root (withheld from everyone: redacted class); a
	// file whose chunks are deleted.
	h.seedChunks(mark)

	h.seedRetrieval(mark)

	// A stored pack (POST /query) and an A2A task of the vault key, whose
	// request holds a marker and whose answer holds the restricted item.
	r = mark("stored-pack", classRestricted, "the vault key's /query text")
	body := mustCall(t, w, keyVault, "POST", "/query", `{"session_id": "cnry-vault-session", "agent_id": "vault-agent", "query": "`+topic+` `+r+`"}`, http.StatusOK)
	var q struct {
		ContextPack struct {
			ID string `json:"id"`
		} `json:"context_pack"`
	}
	if err := json.Unmarshal(body, &q); err != nil || q.ContextPack.ID == "" {
		t.Fatalf("the stored pack's id: %v in %.300s", err, body)
	}
	h.packID = q.ContextPack.ID
	h.hide(h.packID, r)
	r = mark("a2a-task", classRestricted, "the vault key's message/send text")
	body = mustCall(t, w, keyVault, "POST", "/v1/a2a/rpc", a2aSend("message/send", topic+" restricted note "+r), http.StatusOK)
	var task struct {
		Result struct {
			ID string `json:"id"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &task); err != nil || task.Result.ID == "" {
		t.Fatalf("the vault key's task id: %v in %.300s", err, body)
	}
	h.taskID = task.Result.ID
	h.hide(h.taskID, r)
}

// seedChunks ingests three folders under the ingest root.
func (h *harness) seedChunks(mark func(kind, class, what string) string) {
	t := h.t
	root := h.vars["H4R_INGEST_ROOTS"]
	write := func(rel, text string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := mark("chunk", classRestricted, "a file of a folder ingested restricted to vault")
	write("vault/notes.md", "# Vault\n\nThe "+topic+" vault runbook "+r+".\n")
	secret, link := mark("chunk", classRedacted, "a .env credentials file"), mark("chunk", classRedacted, "a file outside the root, behind a symlink")
	viaLink := mark("chunk", classRedacted, "a credentials file read through a symlink inside the root")
	d := mark("chunk", classDeleted, "a file whose chunks were deleted")
	write("open/readme.md", "# Open\n\nThe "+topic+" open readme.\n")
	write("open/.env", "QUARTZ_TOKEN="+secret+"\n")
	write("open/gone.md", "# Gone\n\nThe "+topic+" deleted page "+d+".\n")
	outside := filepath.Join(filepath.Dir(root), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.md"), []byte("# Outside\n\nThe "+topic+" outside secret "+link+".\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(root, "open", "linked.md")); err != nil {
		t.Fatal(err)
	}
	write("open/deploy.pem", "-----BEGIN PRIVATE KEY-----\n"+viaLink+"\n-----END PRIVATE KEY-----\n")
	if err := os.Symlink("deploy.pem", filepath.Join(root, "open", "deploy-notes.md")); err != nil {
		t.Fatal(err)
	}
	for i, body := range []string{
		`{"sources": [{"type": "fs", "path": "` + filepath.Join(root, "vault") + `", "metadata": {"sensitivity": 0.95, "restrictedToGroups": ["vault"]}}]}`,
		`{"sources": [{"type": "fs", "path": "` + filepath.Join(root, "open") + `"}]}`,
	} {
		out := mustCall(t, h.writer.base, keySeeder, "POST", "/ingest", body, http.StatusAccepted)
		var j struct {
			JobID string `json:"job_id"`
		}
		if err := json.Unmarshal(out, &j); err != nil || j.JobID == "" {
			t.Fatalf("ingest answered %s", out)
		}
		h.jobIDs = append(h.jobIDs, j.JobID)
		h.hide(j.JobID, []string{r, d}[i])
		eventually(t, "ingestion job "+j.JobID, func() bool {
			b := call(h.writer.base, keySeeder, "GET", "/v1/jobs/"+j.JobID, nil).body
			return bytes.Contains(b, []byte(`"succeeded"`)) || bytes.Contains(b, []byte(`"failed"`))
		})
	}
	// The chunks of gone.md, found by the seeder (cleared for all).
	for _, id := range h.resultIDs(keySeeder, d) {
		h.deleteIDs = append(h.deleteIDs, id)
		h.itemIDs = append(h.itemIDs, id)
		h.hide(id, d)
	}
	for _, id := range h.resultIDs(keySeeder, r) {
		h.itemIDs = append(h.itemIDs, id)
		h.hide(id, r)
	}
}

// hide records that id holds the canary of marker and is not visible to
// any probe key: every answer about it must be that of an id that never
// existed.
func (h *harness) hide(id, marker string) {
	if h.hidden == nil {
		h.hidden = map[string]canary{}
	}
	for _, c := range h.det.canaries {
		if c.marker == marker {
			h.hidden[id] = c
			return
		}
	}
	h.t.Fatalf("hide %s: no canary has marker %s", id, marker)
}

// resultIDs are the ids of a keyword pack for text, as k.
func (h *harness) resultIDs(k keyClass, text string) []string {
	b := mustCall(h.t, h.writer.base, k, "POST", "/v1/context-pack", `{"query": {"type": "keyword", "text": "`+text+`"}, "limit": 20}`, http.StatusOK)
	var p struct {
		Results []struct {
			ID string `json:"id"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		h.t.Fatal(err)
	}
	var ids []string
	for _, r := range p.Results {
		ids = append(ids, r.ID)
	}
	return ids
}

// controls prove the seeding worked: the cleared keys see each canary
// that a probe must not, so a silent probe is not an empty store.
func (h *harness) controls() {
	t := h.t
	for _, c := range h.det.canaries {
		if c.kind == "stored-pack" || c.kind == "a2a-task" || (c.kind == "chunk" && c.class == classRedacted) {
			continue // never delivered to anyone: nothing to check positively
		}
		found := false
		for _, id := range append(slices.Clone(h.itemIDs), h.markedIDs...) {
			b := call(h.writer.base, keySeeder, "GET", "/v1/items/"+url.PathEscape(id), nil).body
			if bytes.Contains(b, []byte(c.marker)) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("control: canary %s/%s (%s) is in no seeded item: the harness would prove nothing for it", c.kind, c.class, c.what)
		}
	}
	b := call(h.writer.base, keyVault, "POST", "/v1/context-pack", `{"query": {"type": "keyword", "text": "`+topic+` restricted note"}, "limit": 30}`).body
	if !bytes.Contains(b, []byte("cnry-item-r")) {
		t.Errorf("control: the vault key does not get the restricted item, so its absence elsewhere proves nothing: %.400s", b)
	}
	h.retrievalControls()
}

// deleteCanaries deletes the deleted class through the writer.
func (h *harness) deleteCanaries() {
	for _, id := range h.deleteIDs {
		r := call(h.writer.base, keySeeder, "DELETE", "/v1/items/"+url.PathEscape(id), nil)
		if r.status != http.StatusNoContent && r.status != http.StatusNotFound {
			h.t.Fatalf("deleting %s: %d %s", id, r.status, r.body)
		}
	}
	// Control on the writer; the other replicas are the probes' to judge.
	for _, id := range h.deleteIDs {
		if r := call(h.writer.base, keySeeder, "GET", "/v1/items/"+url.PathEscape(id), nil); r.status != http.StatusNotFound {
			h.t.Fatalf("control: %s still read after its delete: %d", id, r.status)
		}
	}
	for _, s := range h.subs {
		s.cut()
	}
	h.deletedYet = true
}

// commitTrace is a commit trace on the canary repo with marker in its
// summary and its decision.
func commitTrace(sha, marker, groups string) string {
	return fmt.Sprintf(`{"sha": %q, "repo": %q, "branch": "main", "author": "dev@acme.example", "timestamp": "2026-11-20T14:03:00Z",
	 "files": [{"path": "%s/quartz.go", "status": "M"}], "areas": [%q], "stats": {"files": 1, "insertions": 3, "deletions": 1},
	 "decisions": [{"timestamp": "2026-11-20T13:40:00Z", "context": "%s decision %s", "options": [{"description": "roll back %s"}, {"description": "hold"}],
	   "selected": 0, "reasoning": "because %s", "category": "architecture", "risk": "medium", "reversible": true, "confidence": 0.9, "area": %q}],
	 "tool_calls": [], "errors": [], "model_calls": [], "mode": "classic", "iterations": 1, "escalations": [], "duration": 1000000000, "tokens_used": 10,
	 "summary": "%s summary %s", "status": "pending", "restricted_to_groups": %s}`,
		sha, canaryRepo, canaryArea, canaryArea, topic, marker, marker, marker, canaryArea, topic, marker, groups)
}

// a2aSend is a JSON-RPC message/send (or message/stream) with one text part.
func a2aSend(method, text string) string {
	return fmt.Sprintf(`{"jsonrpc": "2.0", "id": 1, "method": %q, "params": {"message": {"kind": "message", "messageId": "m-%d", "role": "user", "parts": [{"kind": "text", "text": %q}]}}}`,
		method, time.Now().UnixNano(), text)
}

// probe is one surface called by one key on one replica.
type probe struct {
	h       *harness
	srv     *canaryServer
	replica string
	k       keyClass
	surface string
	allow   func(canary) bool // canaries this surface may show this key
	early   bool              // what it scans was sent before the delete
}

// scan hands b to the detector, less the exact echoes of the probes' own
// queries (the caller's own words coming back are not a leak; a marker
// alone, out of the query, is).
func (p *probe) scan(where string, b []byte) {
	// Longest first: the marker query starts with the topic query.
	qs := slices.Clone(p.h.queries)
	slices.SortFunc(qs, func(a, b string) int { return len(b) - len(a) })
	for _, q := range qs {
		b = bytes.ReplaceAll(b, []byte(q), nil)
		if qb, err := json.Marshal(q); err == nil {
			b = bytes.ReplaceAll(b, qb[1:len(qb)-1], nil)
		}
		b = bytes.ReplaceAll(b, []byte(template.HTMLEscapeString(q)), nil) // the console's form shows it back
	}
	allow := p.allow
	switch {
	case p.h.tenants:
		allow = nil // another tenant's data, whatever its class
	case !p.h.deletedYet || p.early:
		// Before the delete the deleted class is ordinary data.
		allow = func(c canary) bool { return c.class == classDeleted || (p.allow != nil && p.allow(c)) }
	}
	if !p.h.tenants && auditor(p.k) {
		// An auditor's pack explains every verdict, a denied item's id
		// included: an id that holds a marker is no leak to it.
		surfaceAllow := allow
		allow = func(c canary) bool { return c.markedID || (surfaceAllow != nil && surfaceAllow(c)) }
	}
	p.h.det.scan(p.surface, p.k.name+"@"+p.replica, where, b, allow)
}

// http calls a route as the probe's key and scans the answer.
func (p *probe) http(method, path string, body any, header ...string) httpResult {
	r := call(p.srv.base, p.k, method, path, body, header...)
	p.scan(method+" "+path, r.asBytes())
	return r
}

// probeDebug reads every profile of the profiling listener, in the forms
// go tool pprof and a person read: text where the profile has one, the
// CPU profile unpacked, the execution trace as it comes. The listener
// takes no key (it listens on loopback only), so whoever reaches it is
// the caller without a key, and the other keys' probes would repeat it.
// Labels set with pprof.Do are written into the profiles, so an item's id
// or words in a label would show here.
func probeDebug(p *probe) {
	if p.k.name != keyNone.name {
		return
	}
	get := func(path string) []byte {
		r := call(p.srv.debug, keyClass{}, "GET", path, nil)
		if r.err != nil || r.status != http.StatusOK {
			p.h.t.Errorf("GET %s on the profiling listener: %d %v", path, r.status, r.err)
		}
		return r.asBytes()
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=2",
		"/debug/pprof/heap?debug=1", "/debug/pprof/allocs?debug=1", "/debug/pprof/threadcreate?debug=1",
		"/debug/pprof/block?debug=1", "/debug/pprof/mutex?debug=1", "/debug/pprof/trace?seconds=0.2"} {
		p.scan("GET "+path, get(path))
	}
	r := call(p.srv.debug, keyClass{}, "GET", "/debug/pprof/profile?seconds=1", nil)
	zr, err := gzip.NewReader(bytes.NewReader(r.body))
	if err != nil {
		p.h.t.Errorf("the CPU profile is not gzip (%d %v): %v", r.status, r.err, err)
		return
	}
	profile, err := io.ReadAll(zr)
	if err != nil {
		p.h.t.Errorf("unpacking the CPU profile: %v", err)
	}
	p.scan("GET /debug/pprof/profile", append(r.asBytes(), profile...))
}

// neverWas is an id shaped as id is that no item ever had.
func neverWas(id string) string {
	if strings.HasSuffix(id, "0000") {
		return id[:len(id)-4] + "1111"
	}
	return id[:max(0, len(id)-4)] + "0000"
}

// sameAsMissing asks about a hidden id and about one that never existed
// (send builds each request) and records a finding when the answers tell
// them apart: status, error code, message or field, with each id written
// out. That a hidden item exists, or a deleted one did, is itself a leak.
func (p *probe) sameAsMissing(where, hiddenID string, send func(id string) httpResult) {
	c, ok := p.h.hidden[hiddenID]
	if !ok {
		p.h.t.Fatalf("sameAsMissing: %s is not a hidden id", hiddenID)
	}
	if !p.h.tenants && ((c.class == classDeleted && !p.h.deletedYet) || slices.Contains(p.k.routes, "admin")) {
		// An admin key reads every item raw (GET /v1/items/{id}) and every
		// job: existence is no secret to it. What it is shown still is, so
		// the hidden id is asked about all the same. Another tenant's ids
		// are a secret to every key, an admin's too, before a delete and
		// after.
		send(hiddenID)
		return
	}
	missing := neverWas(hiddenID)
	hs, ms := answerSig(send(hiddenID), hiddenID), answerSig(send(missing), missing)
	if hs != ms {
		p.h.det.record(finding{surface: p.surface, key: p.k.name + "@" + p.replica, where: "existence oracle " + where, c: c,
			snippet: "hidden id " + hiddenID + " → " + hs + " | never-existing id " + missing + " → " + ms})
	}
}

// namesHidden records a finding for each hidden id of ids that b names:
// an answer that cites a hidden item by an id without a marker (a commit
// SHA) counts it all the same. A deleted item may be named before its
// delete, as any of its data may, but for another tenant.
func (p *probe) namesHidden(where string, b []byte, ids []string) {
	for _, id := range ids {
		c, ok := p.h.hidden[id]
		if !ok || !bytes.Contains(b, []byte(id)) || (!p.h.tenants && c.class == classDeleted && (!p.h.deletedYet || p.early)) {
			continue
		}
		p.h.det.record(finding{surface: p.surface, key: p.k.name + "@" + p.replica, where: where + " names hidden id " + id, c: c, snippet: string(b)})
	}
}

// existence runs sameAsMissing for each of ids that is hidden.
func (p *probe) existence(where string, ids []string, send func(id string) httpResult) {
	for _, id := range ids {
		if _, ok := p.h.hidden[id]; ok {
			p.sameAsMissing(where, id, send)
		}
	}
}

// answerSig is what an answer says beyond ids: its status and its error
// (the error shape, or a JSON-RPC error), "result" for a JSON-RPC success.
func answerSig(r httpResult, id string) string {
	if r.err != nil {
		return "transport: " + strings.ReplaceAll(r.err.Error(), id, "<id>")
	}
	sig := fmt.Sprint(r.status)
	var m map[string]any
	if json.Unmarshal(r.body, &m) == nil {
		switch e := m["error"].(type) {
		case map[string]any:
			sig += fmt.Sprintf(" error %v %q %v", e["code"], e["message"], e["field"])
		case nil:
			if _, ok := m["result"]; ok {
				sig += " result"
			}
		default:
			sig += fmt.Sprintf(" error %v", e)
		}
	}
	return strings.ReplaceAll(sig, id, "<id>")
}

// surface is one table entry: the routes, MCP tools or A2A methods it
// covers and the probe that calls them.
type surface struct {
	name   string
	routes []string // as the echo router holds them
	run    func(p *probe)
}

// noItemData lists the routes no probe calls, each with why no item data
// can come back from it. A route neither here nor in a surface fails the
// registry check.
var noItemData = map[string]string{
	"POST /v1/items":                  "write: answers the caller's own ids; called by the seeding",
	"DELETE /v1/items/:id":            "write: answers 204 without a body; called by the seeding",
	"POST /v1/traces":                 "write: answers the trace's own ids; called by the seeding",
	"POST /v1/decision-traces":        "write: answers the caller's own ids; called by the seeding",
	"POST /v1/memory/write":           "write: answers the new memory id; called by the seeding",
	"POST /v1/bridge/trajectories":    "write: answers the caller's own ids; called by the seeding",
	"POST /ingest":                    "write: answers a job id and state; called by the seeding (the job itself is probed at GET /v1/jobs/:id)",
	"POST /v1/reindex":                "admin: starts a re-embedding job and answers its id; rebuilding the index under the probes would only slow them",
	"POST /admin/backfill-signatures": "admin: starts a job that rewrites trajectories' concepts and answers its id, no item data (the job is probed at GET /v1/jobs/:id)",
}

// canarySurfaces is the table: one entry per surface.
func canarySurfaces() []surface {
	// Packs are asked with explain "all": every candidate's explanation
	// is then in the answer, the widest a pack can be.
	pack := func(p *probe, path string, wrap func(string) string) {
		for _, q := range p.h.queries {
			for _, typ := range []string{"keyword", "hybrid"} {
				p.http("POST", path, wrap(`{"query": {"type": "`+typ+`", "text": "`+q+`"}, "limit": 50, "explain": "all"}`))
			}
		}
		anchors, _ := json.Marshal(p.h.itemIDs)
		p.http("POST", path, wrap(`{"query": {"type": "causal", "text": "`+topic+`"}, "anchors": `+string(anchors)+`, "limit": 50, "explain": "all"}`))
		// Pseudo-relevance feedback, and what becomes of superseded facts
		// (canary_retrieval_test.go).
		for _, q := range p.h.queries {
			p.http("POST", path, wrap(`{"query": {"type": "keyword", "text": "`+q+`", "expand": true}, "limit": 50, "explain": "all"}`))
		}
		for _, extra := range []string{`"superseded": "exclude", "valid_at": "2026-11-05T00:00:00Z"`, `"superseded": "keep"`, `"superseded": "demote"`} {
			p.http("POST", path, wrap(`{"query": {"type": "hybrid", "text": "`+topic+` fact session turn", "expand": true}, `+extra+`, "limit": 50, "explain": "all"}`))
		}
	}
	return []surface{
		{"context-pack", []string{"POST /v1/context-pack"}, func(p *probe) {
			pack(p, "/v1/context-pack", func(s string) string { return s })
		}},
		{"a2a-envelope", []string{"POST /v1/a2a"}, func(p *probe) {
			pack(p, "/v1/a2a", func(s string) string {
				return `{"meta": {"id": "cnry-m", "type": "ContextRequest"}, "payload": ` + s + `}`
			})
		}},
		{"items-get", []string{"GET /v1/items/:id"}, func(p *probe) {
			if p.k.name == keyAdmin.name {
				// GET /v1/items/{id} is the admin's raw read, before policy.
				p.allow = func(c canary) bool { return c.class != classDeleted }
			}
			for _, id := range p.h.itemIDs {
				p.http("GET", "/v1/items/"+url.PathEscape(id), nil)
			}
			if p.h.tenants {
				// Another tenant's id is the miss of an id nobody holds,
				// even for the probe tenant's admin.
				p.existence("GET /v1/items/:id", p.h.itemIDs, func(id string) httpResult {
					return p.http("GET", "/v1/items/"+url.PathEscape(id), nil)
				})
			}
		}},
		{"health", []string{"GET /health/live", "GET /health/ready"}, func(p *probe) {
			p.http("GET", "/health/live", nil)
			p.http("GET", "/health/ready", nil)
		}},
		{"openapi", []string{"GET /openapi.json"}, func(p *probe) { p.http("GET", "/openapi.json", nil) }},
		{"metrics", []string{"GET /metrics"}, func(p *probe) { p.http("GET", "/metrics", nil) }},
		{"debug-pprof", nil, probeDebug},
		{"policy", []string{"GET /v1/policy"}, func(p *probe) { p.http("GET", "/v1/policy", nil) }},
		{"trace-search", []string{"POST /v1/search"}, func(p *probe) {
			for _, q := range p.h.queries {
				p.http("POST", "/v1/search", `{"query": "`+q+`", "include_decisions": true, "limit": 100}`)
			}
		}},
		{"trace-get", []string{"GET /v1/trace/:owner/:name/:sha", "GET /v1/trace/:sha"}, func(p *probe) {
			p.existence("GET /v1/trace/:owner/:name/:sha", p.h.traceSHAs, func(sha string) httpResult {
				return p.http("GET", "/v1/trace/"+canaryRepo+"/"+sha, nil)
			})
			p.existence("GET /v1/trace/:sha", p.h.traceSHAs, func(sha string) httpResult {
				return p.http("GET", "/v1/trace/"+sha, nil)
			})
		}},
		{"trace-stats", []string{"GET /v1/stats"}, func(p *probe) { p.http("GET", "/v1/stats", nil) }},
		{"webhook", []string{"POST /webhook/github"}, func(p *probe) {
			p.http("POST", "/webhook/github", `{"action": "closed", "pull_request": {"merged": true, "merge_commit_sha": "`+p.h.traceSHAs[0]+`"}, "repository": {"full_name": "`+canaryRepo+`"}}`,
				"X-GitHub-Event", "pull_request", "X-GitHub-Delivery", "cnry-delivery", "X-Hub-Signature-256", "sha256=00")
		}},
		{"decision-traces", []string{"GET /v1/decision-traces", "GET /v1/decision-traces/:id"}, func(p *probe) {
			for _, q := range []string{
				"preset=decisions_by_epic&epic=" + canaryEpic,
				"preset=decision_traces_by_precedent&epic=cnry-prec",
				"preset=file_assignment_history&file=" + url.QueryEscape(canaryArea+"/quartz.go"),
				"preset=review_decisions_rejected",
				"preset=review_decisions",
				"preset=decisions_by_pattern&pattern=cnry-pattern",
			} {
				p.http("GET", "/v1/decision-traces?"+q, nil)
			}
			for _, id := range p.h.decisions {
				p.http("GET", "/v1/decision-traces/"+id, nil)
			}
			p.existence("GET /v1/decision-traces/:id", p.h.decisions, func(id string) httpResult {
				return p.http("GET", "/v1/decision-traces/"+id, nil)
			})
		}},
		{"events", []string{"POST /v1/events"}, func(p *probe) {
			for _, id := range p.h.decisions {
				p.http("POST", "/v1/events", `{"type": "outcome", "epic_id": "`+canaryEpic+`", "decision_id": "`+id+`", "success": true}`)
			}
		}},
		{"links", []string{"POST /v1/items/:id/links", "DELETE /v1/items/:id/links"}, func(p *probe) {
			body := `{"links": [{"type": "relates_to", "target": "cnry-decoy-1"}]}`
			for _, id := range p.h.itemIDs {
				p.http("POST", "/v1/items/"+url.PathEscape(id)+"/links", body)
				p.http("DELETE", "/v1/items/"+url.PathEscape(id)+"/links", body)
				back := `{"links": [{"type": "relates_to", "target": "` + id + `"}]}`
				p.http("POST", "/v1/items/cnry-decoy-2/links", back)
				p.http("DELETE", "/v1/items/cnry-decoy-2/links", back)
			}
			p.existence("POST /v1/items/:id/links", p.h.itemIDs, func(id string) httpResult {
				return p.http("POST", "/v1/items/"+url.PathEscape(id)+"/links", body)
			})
		}},
		{"prefetch", []string{"POST /v1/prefetch"}, func(p *probe) {
			for _, q := range p.h.queries {
				p.http("POST", "/v1/prefetch", `{"repo": "`+canaryRepo+`", "areas": ["`+canaryArea+`"], "recent_files": ["`+canaryArea+`/quartz.go"], "task_description": "`+q+`", "limit": 50}`)
			}
		}},
		{"escalation", []string{"POST /v1/escalation"}, func(p *probe) {
			for _, q := range p.h.queries {
				p.http("POST", "/v1/escalation", `{"repo": "`+canaryRepo+`", "area": "`+canaryArea+`", "current_tier": 1, "iterations": 3, "errors": ["`+q+`"], "task_type": "bug_fix"}`)
			}
			// Without errors or a task type every trace of the repo and area
			// is a similar case, named by its SHA, which holds no marker.
			r := p.http("POST", "/v1/escalation", `{"repo": "`+canaryRepo+`", "area": "`+canaryArea+`", "current_tier": 1, "iterations": 3}`)
			p.namesHidden("POST /v1/escalation", r.body, p.h.traceSHAs)
		}},
		{"memory", []string{"POST /v1/memory/read", "POST /v1/memory/stats", "POST /v1/memory/link"}, func(p *probe) {
			p.http("POST", "/v1/memory/read", `{"scope": `+canaryScope+`, "limit": 100}`)
			for _, q := range p.h.queries {
				p.http("POST", "/v1/memory/read", `{"scope": `+canaryScope+`, "filter": {"text": "`+q+`"}, "limit": 100}`)
			}
			p.http("POST", "/v1/memory/stats", `{"scope": `+canaryScope+`}`)
			p.existence("POST /v1/memory/link", p.h.memories, func(id string) httpResult {
				return p.http("POST", "/v1/memory/link", `{"memory_id": "`+id+`", "related": {"file_path": "`+canaryArea+`/quartz.go"}, "relation": "touches"}`)
			})
			p.http("POST", "/v1/memory/link", `{"memory_id": "`+p.h.memories[0]+`", "related": {"context_pack_id": "`+p.h.packID+`"}, "relation": "cites"}`)
		}},
		{"rag", []string{"POST /query", "POST /feedback"}, func(p *probe) {
			for _, q := range p.h.queries {
				p.http("POST", "/query", `{"session_id": "cnry-probe", "agent_id": "probe", "query": "`+q+`", "k": 50}`)
			}
			p.existence("POST /feedback", []string{p.h.packID}, func(id string) httpResult {
				return p.http("POST", "/feedback", `{"context_pack_id": "`+id+`", "verdict": "wrong", "notes": "probe"}`)
			})
		}},
		{"bridge", []string{"POST /v1/bridge"}, func(p *probe) {
			for _, q := range p.h.queries {
				p.http("POST", "/v1/bridge", `{"tool": "think", "params": {"problem": "Plan the `+q+` trajectory", "domain": "canary"}}`)
			}
		}},
		{"jobs", []string{"GET /v1/jobs/:id", "DELETE /v1/jobs/:id/schedule"}, func(p *probe) {
			p.existence("GET /v1/jobs/:id", p.h.jobIDs, func(id string) httpResult {
				return p.http("GET", "/v1/jobs/"+id, nil)
			})
			// The seeded jobs have no schedule: the owner hears so, any
			// other key gets the answer of an unknown job.
			for _, id := range p.h.jobIDs {
				p.http("DELETE", "/v1/jobs/"+id+"/schedule", nil)
			}
		}},
		{"a2a-rpc", []string{"GET /.well-known/agent-card.json", "POST /v1/a2a/rpc"}, probeA2ARPC},
		{"mcp", []string{"POST /mcp", "GET /mcp", "DELETE /mcp"}, probeMCP},
		{"console", []string{"GET /ui", "GET /ui/login", "POST /ui/login", "POST /ui/logout", "GET /ui/pack", "POST /ui/pack",
			"GET /ui/dryrun", "POST /ui/dryrun", "GET /ui/static/:name", "GET /ui/items", "GET /ui/traces", "GET /ui/packs",
			"POST /ui/packs/feedback", "GET /ui/jobs", "GET /ui/jobs/:id", "GET /ui/bench", "GET /ui/bench/:name"}, probeConsole},
		// Packs answered late while an index loads (canary_degraded_test.go);
		// their routes are the pack surfaces'.
		{"degraded", nil, probeDegraded},
		// The WebSocket lives across the seeding: harness.subscribe opens it
		// before, scanPushes reads it after the delete.
		{"subscribe", []string{"GET /v1/subscribe"}, nil},
	}
}

// consoleCSRF is the CSRF field of a console page.
var consoleCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// probeConsole uses the web console as a browser would: it signs in with
// the probe's key (the key in a form, then a session cookie), builds the
// probes' packs in the playground, runs the dry-run against a public
// specialist with no groups, and signs out; every page is scanned.
func probeConsole(p *probe) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		p.h.t.Fatal(err)
	}
	cl := &http.Client{Jar: jar, Timeout: patience, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, path string, form url.Values) string {
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequest(method, p.srv.base+path, body)
		if err != nil {
			p.h.t.Fatal(err)
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		var r httpResult
		res, err := cl.Do(req)
		if err != nil {
			r.err = err
		} else {
			r.status, r.header = res.StatusCode, res.Header
			r.body, r.err = io.ReadAll(res.Body)
			res.Body.Close()
		}
		p.scan(method+" "+path, r.asBytes())
		return string(r.body)
	}
	token := func(page string) string {
		if m := consoleCSRF.FindStringSubmatch(page); m != nil {
			return m[1]
		}
		return ""
	}
	send("GET", "/ui", nil)
	send("GET", "/ui/static/console.css", nil)
	send("GET", "/ui/static/console.js", nil)
	login := send("GET", "/ui/login", nil)
	if p.k.key != "" {
		send("POST", "/ui/login", url.Values{"csrf": {token(login)}, "key": {p.k.key}})
	}
	csrf := token(send("GET", "/ui/pack", nil))
	for _, q := range p.h.queries {
		for _, typ := range []string{"keyword", "hybrid"} {
			send("POST", "/ui/pack", url.Values{"csrf": {csrf}, "text": {q}, "type": {typ}, "limit": {"50"}})
		}
	}
	send("GET", "/ui/dryrun", nil)
	for _, q := range p.h.queries {
		send("POST", "/ui/dryrun", url.Values{"csrf": {csrf}, "text": {q}, "type": {"hybrid"}, "limit": {"50"}, "b_level": {"public"}, "b_groups": {""}})
	}
	// The browsers, every page of each, and a verdict on the vault key's
	// pack (its own, or for another key the answer of an unknown pack).
	for _, path := range []string{"/ui/items", "/ui/items?kind=memory", "/ui/traces", "/ui/packs", "/ui/jobs"} {
		next := path
		for range 100 {
			page := send("GET", next, nil)
			m := consoleNext.FindStringSubmatch(page)
			if m == nil {
				break
			}
			next = html.UnescapeString(m[1])
		}
	}
	for _, id := range p.h.jobIDs {
		send("GET", "/ui/jobs/"+id, nil)
	}
	send("POST", "/ui/packs/feedback", url.Values{"csrf": {csrf}, "pack": {p.h.packID}, "verdict": {"wrong"}, "notes": {"probe"}})
	bench := send("GET", "/ui/bench", nil)
	if m := consoleChart.FindStringSubmatch(bench); m != nil {
		send("GET", m[1], nil)
	}
	if m := consoleReport.FindStringSubmatch(bench); m != nil {
		send("GET", html.UnescapeString(m[1]), nil)
	}
	send("POST", "/ui/logout", url.Values{"csrf": {csrf}})
}

// The links of a browser's next page, of a benchmark chart and of a report.
var (
	consoleNext   = regexp.MustCompile(`<a href="([^"]+)" rel="next"`)
	consoleChart  = regexp.MustCompile(`<img src="(/ui/bench/[^"]+)"`)
	consoleReport = regexp.MustCompile(`<a href="(/ui/bench\?report=[^"]+)"`)
)

// probeA2ARPC calls every A2A method: the card, message/send and
// message/stream, and tasks/get, tasks/cancel and tasks/list on the
// vault key's task and the probe's own.
func probeA2ARPC(p *probe) {
	p.http("GET", "/.well-known/agent-card.json", nil)
	var own string
	for _, q := range p.h.queries {
		r := p.http("POST", "/v1/a2a/rpc", a2aSend("message/send", q))
		var task struct {
			Result struct {
				ID string `json:"id"`
			} `json:"result"`
		}
		if json.Unmarshal(r.body, &task) == nil && task.Result.ID != "" {
			own = task.Result.ID
		}
		p.http("POST", "/v1/a2a/rpc", a2aSend("message/stream", q), "Accept", "text/event-stream")
	}
	for _, m := range a2aTaskMethods {
		send := func(id string) httpResult {
			params, _ := json.Marshal(map[string]string{m.idParam: id})
			return p.http("POST", "/v1/a2a/rpc", `{"jsonrpc": "2.0", "id": 2, "method": "`+m.method+`", "params": `+string(params)+`}`, "Accept", "application/json, text/event-stream")
		}
		p.existence(m.method, []string{p.h.taskID}, send)
		if own != "" {
			send(own)
		}
	}
	for _, method := range []string{"tasks/list", "agent/getAuthenticatedExtendedCard"} {
		p.http("POST", "/v1/a2a/rpc", `{"jsonrpc": "2.0", "id": 4, "method": "`+method+`", "params": {}}`)
	}
}

// a2aTaskMethods are the A2A methods (protocol 0.3) that name a task,
// called on the vault key's task and on the probe's own.
var a2aTaskMethods = []struct{ method, idParam string }{
	{"tasks/get", "id"},
	{"tasks/cancel", "id"},
	{"tasks/resubscribe", "id"},
	{"tasks/pushNotificationConfig/get", "id"},
	{"tasks/pushNotificationConfig/list", "id"},
	{"tasks/pushNotificationConfig/delete", "id"},
}

// mcpProbes are the arguments each MCP tool is called with; a tool the
// server lists that is not here fails the registry check.
func mcpProbes(h *harness) map[string][]map[string]any {
	scope := map[string]any{}
	_ = json.Unmarshal([]byte(canaryScope), &scope)
	out := map[string][]map[string]any{}
	for _, q := range h.queries {
		out["context_pack"] = append(out["context_pack"], map[string]any{"query": map[string]any{"type": "hybrid", "text": q}, "limit": 50, "compact": false, "explain": "all"})
		out["context_pack"] = append(out["context_pack"], map[string]any{"query": map[string]any{"type": "keyword", "text": q, "expand": true}, "superseded": "exclude", "limit": 50, "compact": false, "explain": "all"})
		out["memory_read"] = append(out["memory_read"], map[string]any{"scope": scope, "filter": map[string]any{"text": q}, "limit": 100})
		out["rag_query"] = append(out["rag_query"], map[string]any{"session_id": "cnry-mcp", "agent_id": "probe", "query": q, "k": 50})
		out["search_traces"] = append(out["search_traces"], map[string]any{"query": q, "include_decisions": true, "limit": 100})
		out["context_bridge"] = append(out["context_bridge"], map[string]any{"tool": "think", "params": map[string]any{"problem": "Plan the " + q + " trajectory", "domain": "canary"}})
	}
	anchors := slices.Clone(h.itemIDs)
	out["context_pack"] = append(out["context_pack"], map[string]any{"query": map[string]any{"type": "causal", "text": topic}, "anchors": anchors, "compact": false, "explain": "all"})
	out["memory_read"] = append(out["memory_read"], map[string]any{"scope": scope, "limit": 100})
	out["memory_stats"] = []map[string]any{{"scope": scope}}
	out["memory_write"] = []map[string]any{{"scope": map[string]any{"session_id": "cnry-probe", "agent_id": "probe"}, "type": "lesson", "payload": map[string]any{"note": "probe"}}}
	for _, id := range h.memories {
		out["memory_link"] = append(out["memory_link"], map[string]any{"memory_id": id, "related": map[string]any{"file_path": canaryArea + "/quartz.go"}, "relation": "touches"})
	}
	out["rag_feedback"] = []map[string]any{{"context_pack_id": h.packID, "verdict": "wrong", "notes": "probe"}}
	out["precedents"] = append(out["precedents"],
		map[string]any{"preset": "decisions_by_epic", "epic": canaryEpic},
		map[string]any{"preset": "decision_traces_by_precedent", "epic": "cnry-prec"},
		map[string]any{"preset": "file_assignment_history", "file": canaryArea + "/quartz.go"},
		map[string]any{"preset": "review_decisions_rejected"},
		map[string]any{"preset": "review_decisions"})
	return out
}

// mcpKeyTransport adds the probe's key and records every answer's
// headers and status for the scan.
type mcpKeyTransport struct{ p *probe }

func (m mcpKeyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if m.p.k.key != "" {
		r.Header.Set("Authorization", "Bearer "+m.p.k.key)
	}
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		var b bytes.Buffer
		fmt.Fprintf(&b, "%d\n", res.StatusCode)
		_ = res.Header.Write(&b)
		m.p.scan(r.Method+" /mcp (headers)", b.Bytes())
	}
	return res, err
}

// probeMCP lists and calls every tool and reads every resource over
// /mcp; a tool or resource the harness does not know fails the test.
func probeMCP(p *probe) {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	transport := &mcp.StreamableClientTransport{Endpoint: p.srv.base + "/mcp", HTTPClient: &http.Client{Transport: mcpKeyTransport{p}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "canary", Version: "1"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		p.scan("connect", []byte(err.Error()))
		return
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		p.scan("tools/list", []byte(err.Error()))
		return
	}
	args := mcpProbes(p.h)
	if p.k.name == keyAdmin.name {
		// The admin key may call every tool: one the harness probes that
		// the server no longer lists is a stale entry.
		for name := range args {
			if !slices.ContainsFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == name }) {
				p.h.t.Errorf("mcpProbes has tool %s, which the server does not list to an admin key", name)
			}
		}
	}
	for _, tool := range tools.Tools {
		calls, ok := args[tool.Name]
		if !ok {
			p.h.t.Errorf("MCP tool %s is listed by the server but has no probe in mcpProbes: add one", tool.Name)
			continue
		}
		for _, a := range calls {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool.Name, Arguments: a})
			where := "tools/call " + tool.Name
			if err != nil {
				p.scan(where, []byte(err.Error()))
				continue
			}
			b, _ := json.Marshal(res)
			p.scan(where, b)
		}
	}
	resources, err := cs.ListResources(ctx, nil)
	if err != nil {
		p.scan("resources/list", []byte(err.Error()))
		return
	}
	for _, r := range resources.Resources {
		if !slices.Contains(mcpResources, r.URI) {
			p.h.t.Errorf("MCP resource %s is listed by the server but not probed: add it to mcpResources", r.URI)
		}
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: r.URI})
		where := "resources/read " + r.URI
		if err != nil {
			p.scan(where, []byte(err.Error()))
			continue
		}
		b, _ := json.Marshal(res)
		p.scan(where, b)
	}
}

// mcpResources are the resources the harness reads (it reads every one
// listed; this list makes a new one a conscious addition).
var mcpResources = []string{"h4r://policy", "h4r://stats"}

// pushLog is one WebSocket subscription's pushes, split at the delete.
type pushLog struct {
	k       keyClass
	replica string
	session string
	mu      sync.Mutex
	msgs    [][]byte
	before  int // pushes received before the delete
	conn    *websocket.Conn
}

func (l *pushLog) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.before = len(l.msgs)
}

// subscribe opens a subscription per key and replica in session and
// sends the canary repo's context with task. Before the seeding, every
// canary decision and trace is weighed for a push as it is ingested;
// after the delete, a fresh session gets what an update finds.
func (h *harness) subscribe(session, task string) {
	for i, s := range h.replicas {
		for _, k := range probeKeys {
			l := &pushLog{k: k, replica: replicaName(i), session: session}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			hdr := http.Header{}
			if k.key != "" {
				hdr.Set("Authorization", "Bearer "+k.key)
			}
			c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.base, "http")+"/v1/subscribe?session_id=cnry-"+session+"-"+k.name, &websocket.DialOptions{HTTPHeader: hdr})
			cancel()
			if err != nil {
				// Refused (no key): the refusal is an answer to scan too.
				b := []byte(err.Error())
				if res != nil {
					b = append(b, httpResult{status: res.StatusCode, header: res.Header}.asBytes()...)
				}
				(&probe{h: h, replica: l.replica, k: k, surface: "subscribe"}).scan("GET /v1/subscribe (refused)", b)
				continue
			}
			l.conn = c
			h.t.Cleanup(func() { c.CloseNow() })
			go func() {
				for {
					_, b, err := c.Read(context.Background())
					if err != nil {
						return
					}
					l.mu.Lock()
					l.msgs = append(l.msgs, b)
					l.mu.Unlock()
				}
			}()
			h.update(l, task)
			h.subs = append(h.subs, l)
		}
	}
}

// update sends the canary repo's context with task as the current task.
func (h *harness) update(l *pushLog, task string) {
	msg := `{"type": "context_update", "repo": "` + canaryRepo + `", "areas": ["` + canaryArea + `"], "current_task": "` + task + `", "recent_decisions": ["file_assignment"]}`
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = l.conn.Write(ctx, websocket.MessageText, []byte(msg))
}

// scanPushes sends each subscription its context again, after the
// delete, with the markers as the task (each update pushes the next
// precedent not yet pushed, so a few rounds), waits for the pushes and
// scans them all.
func (h *harness) scanPushes() {
	markers := h.queries[len(h.queries)-1]
	h.subscribe("late", markers)
	for range 4 {
		for _, l := range h.subs {
			h.update(l, markers)
		}
		time.Sleep(300 * time.Millisecond)
	}
	time.Sleep(time.Second)
	for _, l := range h.subs {
		l.mu.Lock()
		msgs, before := slices.Clone(l.msgs), l.before
		l.mu.Unlock()
		for i, m := range msgs {
			p := &probe{h: h, replica: l.replica, k: l.k, surface: "subscribe", early: i < before}
			p.scan(fmt.Sprintf("%s session push %d", l.session, i), m)
		}
	}
}

func replicaName(i int) string { return string(rune('A' + i)) }

// probeCLI runs h4r pack and h4r query against the store as each key
// class's principal would be named on the command line.
func (h *harness) probeCLI() {
	for _, k := range probeKeys[1:] {
		vars := map[string]string{"H4R_LOG_LEVEL": "error", "H4R_DATA_DIR": h.vars["H4R_DATA_DIR"], "DATABASE_URL": h.vars["DATABASE_URL"], "H4R_WRITE_TIMEOUT_MS": "120000"}
		if h.tenants {
			vars["H4R_TENANTS_FILE"], vars["H4R_TENANT"] = h.vars["H4R_TENANTS_FILE"], probeTenant
		}
		spec := []string{"--specialist", "cnry_" + k.name, "--level", k.level, "--groups", strings.Join(k.groups, ",")}
		p := &probe{h: h, replica: "cli", k: k, surface: "cli"}
		for _, q := range h.queries {
			var out, errb bytes.Buffer
			err := cmdPack(context.Background(), append(slices.Clone(spec), "--json", "--type", "keyword", "--limit", "50", q), &out, &errb, env(vars))
			p.scan("h4r pack", append(append(out.Bytes(), errb.Bytes()...), errString(err)...))
		}
		var out, errb bytes.Buffer
		err := cmdQuery(context.Background(), append(slices.Clone(spec), "--json", "--preset", "decisions_by_epic", "--epic", canaryEpic), &out, &errb, env(vars))
		p.scan("h4r query", append(append(out.Bytes(), errb.Bytes()...), errString(err)...))
	}
}

func errString(err error) []byte {
	if err == nil {
		return nil
	}
	return []byte(err.Error())
}

// writingSurfaces change what they probe, so they run once, after the
// delete, not in the warm-up: no cache is filled by them.
var writingSurfaces = map[string]bool{"links": true, "events": true}

// probeAll runs every surface with every key on every replica.
func (h *harness) probeAll(surfaces []surface) {
	for i, s := range h.replicas {
		for _, sf := range surfaces {
			if sf.run == nil || (!h.deletedYet && writingSurfaces[sf.name]) {
				continue
			}
			for _, k := range probeKeys {
				sf.run(&probe{h: h, srv: s, replica: replicaName(i), k: k, surface: sf.name})
			}
		}
	}
}

// canaryVars are the server's variables over a store (DATABASE_URL "" is
// SQLite in dataDir).
func canaryVars(t *testing.T, dataDir, databaseURL string) map[string]string {
	root := filepath.Join(t.TempDir(), "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"H4R_DATA_DIR": dataDir, "H4R_API_KEYS_FILE": writeKeysFile(t, t.TempDir()), "H4R_LOG_LEVEL": "error",
		"H4R_GENERATOR_TIMEOUT_MS": "60000", "H4R_REQUEST_TIMEOUT_MS": "60000", "H4R_WRITE_TIMEOUT_MS": "120000",
		"H4R_RATE_LIMIT_PER_MINUTE": "1000000", "H4R_INGEST_ROOTS": root,
		"H4R_BRIDGE_ENABLED": "true", "H4R_BRIDGE_MIN_SIMILARITY": "0.01",
		"H4R_AMBIENT_DEBOUNCE_MS": "0", "H4R_AMBIENT_RELEVANCE": "0.01",
		"H4R_GITHUB_WEBHOOK_SECRET": "cnry-webhook-secret",
	}
	if databaseURL != "" {
		vars["DATABASE_URL"] = databaseURL
	}
	return vars
}

// runHarness seeds, warms every surface (the deleted class still
// allowed), deletes, probes again, and returns what was found.
func runHarness(t *testing.T, vars map[string]string, replicas int, surfaces []surface, wrap func(*app.App, http.Handler) http.Handler) *harness {
	h := &harness{t: t, det: newDetector(), vars: vars, tenants: vars["H4R_TENANTS_FILE"] != ""}
	if os.Getenv(natstest.Var) != "" {
		stream, prefix := natstest.Names(t)
		vars["NATS_URL"], vars["H4R_TRACE_STREAM"], vars["H4R_TRACE_SUBJECT"] = natstest.URL(t), stream, prefix+".trace.commit"
		vars["H4R_LANDED_SUBJECT"] = prefix + ".event.landed"
		h.nats = true
		t.Cleanup(func() {
			if js, err := jetstream.New(natstest.Connect(t)); err == nil {
				_ = js.DeleteStream(context.Background(), stream)
			}
		})
	}
	for range replicas {
		h.replicas = append(h.replicas, startCanaryServer(t, vars, wrap))
	}
	h.writer = h.replicas[0]
	checkRouteRegistry(t, h.writer.routes, surfaces)
	h.subscribe("early", topic)
	h.seed()
	if h.tenants {
		h.seedProbeTenant()
	}
	var markers []string
	for _, c := range h.det.canaries {
		markers = append(markers, c.marker)
	}
	// The topic finds every canary; the markers alone are an adversary's
	// guesses, whose words an answer must not confirm (a match reason
	// naming a hidden item's word is the leak).
	h.queries = []string{topic, topic + " " + strings.Join(markers, " "), strings.Join(markers, " ")}
	h.controls()
	h.probeAll(surfaces) // warm: fills every cache before the delete
	h.deleteCanaries()
	h.probeAll(surfaces)
	h.scanPushes()
	return h
}

// checkRouteRegistry fails on a route the router serves that no surface
// covers and noItemData does not list, and on a stale entry.
func checkRouteRegistry(t errorer, served []string, surfaces []surface) {
	t.Helper()
	covered := map[string]string{}
	for _, s := range surfaces {
		for _, r := range s.routes {
			covered[r] = s.name
		}
	}
	for _, r := range served {
		_, probed := covered[r]
		_, listed := noItemData[r]
		switch {
		case probed && listed:
			t.Errorf("route %s is both probed (%s) and listed in noItemData", r, covered[r])
		case !probed && !listed:
			t.Errorf("route %s is neither probed by a canary surface nor listed in noItemData with a reason", r)
		}
	}
	for r := range covered {
		if !slices.Contains(served, r) {
			t.Errorf("surface %s names route %s, which the router does not serve", covered[r], r)
		}
	}
	for r := range noItemData {
		if !slices.Contains(served, r) {
			t.Errorf("noItemData lists route %s, which the router does not serve", r)
		}
	}
}

// report fails t with every finding, one line each, grouped by surface.
func report(t *testing.T, h *harness) {
	t.Helper()
	fs := h.det.all()
	slices.SortFunc(fs, func(a, b finding) int {
		return strings.Compare(a.surface+a.key+a.c.kind+a.c.class, b.surface+b.key+b.c.kind+b.c.class)
	})
	for _, f := range fs {
		t.Error(f.String())
	}
	var counts []string
	for s, n := range h.det.scanned {
		counts = append(counts, fmt.Sprintf("%s=%d", s, n))
	}
	slices.Sort(counts)
	t.Logf("%d canaries, %d findings; answers scanned per surface: %s", len(h.det.canaries), len(fs), strings.Join(counts, " "))
}

// TestCanaryNoLeakSQLite: the harness on the embedded store, one replica,
// with the CLI reads.
func TestCanaryNoLeakSQLite(t *testing.T) {
	h := runHarness(t, canaryVars(t, t.TempDir(), ""), 1, canarySurfaces(), nil)
	h.probeCLI()
	report(t, h)
}

// TestCanaryNoLeakVectorFeedback: the harness with vectors on (the
// hashing embedder, which needs no learning over the small canary corpus)
// and both kinds of feedback on by default: the full-text query expanded
// with its top hits' words and the query vector moved toward its top hits'
// vectors, each of which must read only what the caller may.
func TestCanaryNoLeakVectorFeedback(t *testing.T) {
	vars := canaryVars(t, t.TempDir(), "")
	vars["H4R_EMBEDDER"], vars["H4R_VECTOR_FEEDBACK_DOCS"], vars["H4R_QUERY_EXPANSION"] = "hash", "5", "true"
	h := runHarness(t, vars, 1, canarySurfaces(), nil)
	report(t, h)
	// The run proves something only if packs had vector candidates.
	p, err := h.writer.app.Engine.ContextPack(t.Context(), h4r.Specialist{ID: "cnry-check", SecurityLevel: h4r.Restricted},
		&h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryHybrid, Text: topic}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Sources[h4r.GenVector]; st.Candidates == 0 {
		t.Fatalf("a hybrid pack over the canaries had no vector candidates (sources %+v): feedback on vectors was never exercised", p.Sources)
	}
}

// TestCanaryNoLeakSelectiveItemCache: the harness on an embedded store
// larger than its item cache (H4R_ITEM_CACHE_MB=1 over decoys written
// before the server opens the file), so the cache keeps selectively from
// the start: the canaries the warm probes read again and again are kept
// at their second miss, and must not outlive their delete or their
// policy. The run proves something only if the cache was selective and
// answered reads.
func TestCanaryNoLeakSelectiveItemCache(t *testing.T) {
	skipUnderRace(t)
	vars := canaryVars(t, t.TempDir(), "")
	vars["H4R_ITEM_CACHE_MB"] = "1"
	writeDecoys(t, vars, 800)
	h := runHarness(t, vars, 1, canarySurfaces(), nil)
	report(t, h)
	checkSelectiveCaches(t, h)
}

// checkSelectiveCaches fails unless every replica's item cache kept
// selectively and answered reads: a canary variant over selective caches
// proves nothing otherwise.
func checkSelectiveCaches(t *testing.T, h *harness) {
	t.Helper()
	for i, r := range h.replicas {
		st, ok := r.app.ItemCacheStats()
		if !ok || !st.Selective {
			t.Fatalf("replica %d: the item cache was not selective (%+v, reported %v): the store fitted its budget", i, st, ok)
		}
		if st.Hits == 0 {
			t.Fatalf("replica %d: the selective item cache answered no read (%+v): nothing was served from it", i, st)
		}
		t.Logf("replica %d item cache: %+v", i, st)
	}
}

// decoyVocabulary holds the words of writeDecoys' texts.
const decoyVocabulary = "harbour lantern meadow orchard pebble saffron thistle willow amber basalt cobalt dune"

// skipUnderRace skips a canary variant under the race detector
// (race_on_test.go); .ci/run runs the variants that call it without -race.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("the selective item cache canary variants run without -race (.ci/run)")
	}
}

// writeDecoys writes n items to the store vars configure, before any
// server opens it: texts of about 900 bytes that share no word with the
// canaries' topic or markers.
func writeDecoys(t *testing.T, vars map[string]string, n int) {
	t.Helper()
	cfg, err := app.LoadConfig(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(t.Context(), cfg, app.WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	words := strings.Fields(decoyVocabulary)
	items := make([]h4r.Item, n)
	for i := range items {
		var b strings.Builder
		for j := 0; b.Len() < 900; j++ {
			fmt.Fprintf(&b, "%s%d ", words[(i+j)%len(words)], j)
		}
		items[i] = h4r.Item{ID: fmt.Sprintf("decoy-%05d", i), Kind: "note", Text: b.String()}
	}
	if _, err := a.Store.Upsert(t.Context(), items); err != nil {
		t.Fatalf("writing the decoys: %v", err)
	}
}

// TestCanaryNoLeakPostgresTwoReplicas: two servers over one Postgres;
// seeding and deletes through A, every probe on A and on B.
func TestCanaryNoLeakPostgresTwoReplicas(t *testing.T) {
	url := pgtest.Schema(t, "h4r_canary")
	h := runHarness(t, canaryVars(t, t.TempDir(), url), 2, canarySurfaces(), nil)
	h.probeCLI()
	report(t, h)
}

// TestCanaryNoLeakPostgresSelectiveItemCache: two servers over one
// Postgres whose item caches are selective before the harness begins.
// The Postgres cache is not warmed: it turns selective at its first
// eviction, so each replica reads decoys through it (packs on the decoys'
// words) until they overflow H4R_ITEM_CACHE_MB=1. The canaries then come
// and go through caches that keep only what reads come back to, and no
// surface of either replica may leak one. The run proves something only
// if both caches were selective and answered reads. It does not catch a
// cache that serves entries whatever their stamp (it passed with one: a
// deleted canary has no row for a search to stamp, so the cache is never
// asked for it); store/postgres TestItemCacheServesWhatTheTablesHold is
// the test of that.
func TestCanaryNoLeakPostgresSelectiveItemCache(t *testing.T) {
	skipUnderRace(t)
	url := pgtest.Schema(t, "h4r_canary_sel")
	vars := canaryVars(t, t.TempDir(), url)
	vars["H4R_ITEM_CACHE_MB"] = "1"
	writeDecoys(t, vars, 800)
	h := runHarness(t, vars, 2, canarySurfaces(), readDecoys(t))
	report(t, h)
	checkSelectiveCaches(t, h)
}

// readDecoys returns a handler wrapper that, before its replica serves,
// reads the decoys writeDecoys wrote through the app's packs: decoy i
// begins with its word i mod 12 followed by 0, so the twelve queries
// "<word>0" find every decoy between them.
func readDecoys(t *testing.T) func(*app.App, http.Handler) http.Handler {
	return func(a *app.App, next http.Handler) http.Handler {
		spec := h4r.Specialist{ID: "decoy-reader", SecurityLevel: h4r.Restricted}
		for _, w := range strings.Fields(decoyVocabulary) {
			q := h4r.Query{Type: h4r.QueryKeyword, Text: w + "0"}
			if _, err := a.Engine.ContextPack(t.Context(), spec, &h4r.ContextRequest{Query: q, Limit: 5}); err != nil {
				t.Fatalf("reading the decoys: %v", err)
			}
		}
		return next
	}
}

// plantedPath prefixes the self-test's fake routes, registered only by
// the test's handler wrapper: each answers any caller from the raw store,
// as a surface that skipped the slicer would.
const plantedPath = "/cnry-planted/"

// plantLeak serves plantedPath/{body,header,exists}/{id}: body is the raw
// item, from a cache that outlives the delete; header is its text in a
// header; exists is 200 for a stored item and 404 for another.
func plantLeak(a *app.App, next http.Handler) http.Handler {
	var cache sync.Map
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, plantedPath)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		how, id, _ := strings.Cut(rest, "/")
		if c, ok := cache.Load(id); ok && how == "body" {
			_, _ = w.Write(c.([]byte))
			return
		}
		it, err := a.Store.Get(r.Context(), id)
		if err != nil || it == nil {
			http.NotFound(w, r)
			return
		}
		switch how {
		case "body":
			b, _ := json.Marshal(it)
			cache.Store(id, b)
			_, _ = w.Write(b)
		case "header":
			w.Header().Set("X-Item", it.Text)
			_, _ = w.Write([]byte("{}"))
		default:
			_, _ = w.Write([]byte("{}"))
		}
	})
}

// TestCanaryDetectsAPlantedLeak: the harness fails on planted leaks, each
// with the surface, key class, canary and marker named: a raw item in a
// body (restricted, redacted, and deleted from a stale cache), an item's
// text in a header, and an existence oracle (the store read after the
// delete: only the restricted item tells); and it finds nothing on the
// health probes, which carry no item data.
func TestCanaryDetectsAPlantedLeak(t *testing.T) {
	ids := []string{"cnry-item-r", "cnry-item-p", "cnry-item-d"}
	plants := []struct {
		surface surface
		want    []string // class, for every key class but those in skip
		skip    string   // a key class the plant is not checked for
	}{
		{surface{"planted-body", nil, func(p *probe) {
			for _, id := range ids {
				p.http("GET", plantedPath+"body/"+id, nil)
			}
		}}, []string{classRestricted, classRedacted, classDeleted}, ""},
		{surface{"planted-header", nil, func(p *probe) {
			for _, id := range ids {
				p.http("GET", plantedPath+"header/"+id, nil)
			}
		}}, []string{classRestricted, classRedacted}, ""},
		{surface{"planted-exists", nil, func(p *probe) {
			p.existence("GET "+plantedPath+"exists/{id}", ids, func(id string) httpResult {
				return p.http("GET", plantedPath+"exists/"+id, nil)
			})
		}}, []string{classRestricted}, keyAdmin.name},
	}
	health := canarySurfaces()[3]
	if health.name != "health" {
		t.Fatalf("canarySurfaces()[3] is %s, want health", health.name)
	}
	surfaces := []surface{health}
	for _, pl := range plants {
		surfaces = append(surfaces, pl.surface)
	}
	vars := canaryVars(t, t.TempDir(), "")
	h := &harness{t: t, det: newDetector(), vars: vars, tenants: vars["H4R_TENANTS_FILE"] != ""}
	h.replicas = []*canaryServer{startCanaryServer(t, vars, plantLeak)}
	h.writer = h.replicas[0]
	h.seed()
	h.queries = []string{topic}
	h.probeAll(surfaces) // warm: the body plant caches the item to be deleted
	h.deleteCanaries()
	h.probeAll(surfaces)
	got := map[string]bool{}
	for _, f := range h.det.all() {
		if f.surface == health.name {
			t.Errorf("a finding on a surface without a leak: %s", f)
			continue
		}
		if f.c.kind != "item" || f.snippet == "" || !strings.Contains(f.String(), f.c.marker) {
			t.Errorf("a finding that does not name its item canary, marker and snippet: %s", f)
		}
		got[f.surface+"/"+strings.TrimSuffix(f.key, "@A")+"/"+f.c.class] = true
	}
	for _, pl := range plants {
		for _, k := range probeKeys {
			for _, class := range pl.want {
				if k.name != pl.skip && !got[pl.surface.name+"/"+k.name+"/"+class] {
					t.Errorf("%s: the %s item's leak to key %s was not detected", pl.surface.name, class, k.name)
				}
			}
		}
	}
	if t.Failed() {
		t.Logf("findings: %v", got)
	}
}

// TestCanaryRouteRegistryCheck: the registry check fails on a served route
// no surface names, and on a surface naming a route not served.
func TestCanaryRouteRegistryCheck(t *testing.T) {
	tests := []struct {
		name     string
		served   []string
		surfaces []surface
		want     string
	}{
		{"an unlisted route", []string{"GET /v1/new"}, nil, "neither probed"},
		{"a stale surface route", nil, []surface{{"old", []string{"GET /v1/old"}, nil}}, "does not serve"},
		{"a route both probed and listed", []string{"POST /v1/items"}, []surface{{"x", []string{"POST /v1/items"}, nil}}, "both probed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordingT{}
			checkRouteRegistry(rec, append(tt.served, keysOf(noItemData)...), tt.surfaces)
			if !strings.Contains(strings.Join(rec.errs, "\n"), tt.want) {
				t.Errorf("errors %q, want one saying %q", rec.errs, tt.want)
			}
		})
	}
}

// errorer is the part of testing.T the registry check uses.
type errorer interface {
	Helper()
	Errorf(format string, args ...any)
}

type recordingT struct{ errs []string }

func (r *recordingT) Helper() {}
func (r *recordingT) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
