package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/pgtest"
	"github.com/h4r/h4r/jobs"
	"github.com/h4r/h4r/server"
	"github.com/h4r/h4r/store/postgres"
	"github.com/h4r/h4r/trace"
)

// fakeJobs starts no work: it records the reindex asked of it.
type fakeJobs struct {
	server.Jobs
	graph, embeddings bool
}

func (f *fakeJobs) StartReindex(_ context.Context, _ string, graph, embeddings bool) (jobs.Job, error) {
	f.graph, f.embeddings = graph, embeddings
	return jobs.Job{ID: "job-1", State: "queued"}, nil
}

// TestReindexTakesTheDocumentsBody: POST /v1/reindex with a repository and
// regenerate_embeddings answers the job and the traces it covers.
func TestReindexTakesTheDocumentsBody(t *testing.T) {
	jb := &fakeJobs{}
	s := newTraceStack(t, webhookSecret, server.WithJobs(jb))
	for i, repo := range []string{"org/repo", "org/repo", "org/other"} {
		body := traceFixture(t, func(m map[string]any) { m["repo"] = repo; m["sha"] = fmt.Sprintf("%040x", i+1) })
		if r := post(t, s.base+"/v1/traces", string(body), bearer(ingestKey)...); r.status != http.StatusOK {
			t.Fatalf("ingest: %d %s", r.status, r.body)
		}
	}
	tests := []struct {
		name       string
		body       string
		status     int
		queued     int
		embeddings bool
	}{
		{"the document's body", `{"repo": "org/repo", "regenerate_embeddings": true}`, http.StatusAccepted, 2, true},
		{"every repository", `{"regenerate_embeddings": true}`, http.StatusAccepted, 3, true},
		{"no body", ``, http.StatusAccepted, 3, true},
		{"nothing to do", `{"regenerate_embeddings": false}`, http.StatusBadRequest, 0, false},
		{"bad repository", `{"repo": "no-slash"}`, http.StatusBadRequest, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, s.base+"/v1/reindex", tc.body, bearer(adminKey)...)
			if r.status != tc.status {
				t.Fatalf("%d %s, want %d", r.status, r.body, tc.status)
			}
			if tc.status != http.StatusAccepted {
				return
			}
			var out struct {
				JobID        string `json:"job_id"`
				TracesQueued *int   `json:"traces_queued"`
			}
			if err := json.Unmarshal(r.body, &out); err != nil || out.JobID != "job-1" || out.TracesQueued == nil || *out.TracesQueued != tc.queued {
				t.Fatalf("answer %s, want job_id job-1 and traces_queued %d", r.body, tc.queued)
			}
			if jb.embeddings != tc.embeddings {
				t.Errorf("embeddings %v, want %v", jb.embeddings, tc.embeddings)
			}
		})
	}
}

// TestStatsSizeIsTheSchemas: postgres_size_mb is the size of the store's
// own schema, so that it neither counts another schema of the same
// database (another tenant's) nor stays put as the store grows.
func TestStatsSizeIsTheSchemas(t *testing.T) {
	ctx := context.Background()
	open := func(schema string) *postgres.Store {
		st, err := postgres.Open(ctx, pgtest.Schema(t, schema), postgres.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	size := func(st *postgres.Store) int64 {
		n, err := st.DatabaseSize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	st := open("stats")
	svc := trace.NewService(st, trace.WithClock(clock), trace.WithLogger(quiet))
	tr, err := trace.Decode(readFile(t, "../trace/testdata/trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Ingest(ctx, tr); err != nil {
		t.Fatal(err)
	}
	before := size(st)

	other := open("stats_other")
	items := make([]h4r.Item, 2000)
	for i := range items {
		items[i] = h4r.Item{ID: fmt.Sprintf("other-%d", i), Kind: "note",
			Text: fmt.Sprintf("item %d of another schema, with words enough to take some pages %s", i, strings.Repeat("lorem ipsum ", 20))}
	}
	if _, err := other.Upsert(ctx, items); err != nil {
		t.Fatal(err)
	}
	if got := size(st); got != before {
		t.Errorf("the store's size went from %d to %d bytes when another schema of its database grew", before, got)
	}
	if grown := size(other); grown <= before {
		t.Errorf("the other schema, with 2,000 items, is %d bytes; the store with one trace %d", grown, before)
	}

	stats, err := svc.Stats(ctx, nil, st.DatabaseSize)
	if err != nil {
		t.Fatal(err)
	}
	if mb := float64(before) / (1 << 20); stats.Storage.PostgresSizeMB < mb-0.5 || stats.Storage.PostgresSizeMB > mb+0.5 {
		t.Errorf("postgres_size_mb %v, want the schema's %d bytes (%.1f MiB)", stats.Storage.PostgresSizeMB, before, mb)
	}
}

// TestReadyNamesTheStore: the readiness answer says ready and names the
// Postgres store postgres.
func TestReadyNamesTheStore(t *testing.T) {
	s := newStack(t, server.WithStoreCheckName("postgres"))
	r := do(t, http.MethodGet, s.serve(t)+"/health/ready", nil)
	var ready struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.Unmarshal(r.body, &ready); err != nil || r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if ready.Status != "ready" || ready.Checks["postgres"] != "ok" {
		t.Errorf("ready %s, want status ready and checks.postgres ok", r.body)
	}
}
