package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/server"
)

// TestScheduledIngestShowsItsSchedule: opts.schedule is taken, the job
// waits in state scheduled after its first run, and GET /v1/jobs/{id}
// shows the schedule; a schedule that is no interval is refused.
func TestScheduledIngestShowsItsSchedule(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	a, err := app.Open(ctx, cfg, app.WithClock(clock), app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	dir := t.TempDir()
	jb, err := app.OpenJobs(ctx, a, quiet, app.WithIngestRoots(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = jb.Close() })
	keys, err := auth.Load("testdata/keys.json")
	if err != nil {
		t.Fatal(err)
	}
	st := &stack{srv: server.New(a.Engine, a.Store, server.WithLogger(quiet), server.WithRequestTimeout(cfg.RequestTimeout),
		server.WithAuthenticator(keys), server.WithClock(clock), server.WithRateLimit(100000), server.WithJobs(jb)), store: a.Store}
	base := st.serve(t)
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# Notes\n\nThe walrus schedule.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := `{"sources": [{"type": "fs", "path": ` + strconv.Quote(dir) + `}], "opts": {"schedule": `
	if r := post(t, base+"/ingest", src+`"daily"}}`, bearer(ingestKey)...); r.status != http.StatusBadRequest {
		t.Errorf("schedule daily: %d %s", r.status, r.body)
	} else if e := checkErrorShape(t, r); e.Field != "opts.schedule" {
		t.Errorf("schedule daily: field %q", e.Field)
	}
	r := post(t, base+"/ingest", src+`"24h"}}`, bearer(ingestKey)...)
	if r.status != http.StatusAccepted {
		t.Fatalf("POST /ingest: %d %s", r.status, r.body)
	}
	var started struct {
		JobID string `json:"job_id"`
	}
	if err := json.Unmarshal(r.body, &started); err != nil {
		t.Fatal(err)
	}
	var job struct {
		State    string `json:"state"`
		Schedule *struct {
			Every     string `json:"every"`
			NextRunAt string `json:"next_run_at"`
			Runs      int    `json:"runs"`
			LastState string `json:"last_state"`
		} `json:"schedule"`
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := do(t, http.MethodGet, base+"/v1/jobs/"+started.JobID, nil, bearer(ingestKey)...)
		if err := json.Unmarshal(r.body, &job); err != nil || r.status != http.StatusOK {
			t.Fatalf("GET job: %d %s", r.status, r.body)
		}
		if job.State == "scheduled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job state %s: %s", job.State, r.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s := job.Schedule; s == nil || s.Every != "24h0m0s" || s.Runs != 1 || s.LastState != "succeeded" || s.NextRunAt == "" {
		t.Errorf("schedule = %+v", job.Schedule)
	}
	u := base + "/v1/jobs/" + started.JobID + "/schedule"
	if r := do(t, http.MethodDelete, u, nil, bearer(publicKey)...); r.status != http.StatusForbidden {
		t.Errorf("a read key stopped a schedule: %d %s", r.status, r.body)
	}
	r = do(t, http.MethodDelete, u, nil, bearer(ingestKey)...)
	job.Schedule = nil
	if err := json.Unmarshal(r.body, &job); err != nil || r.status != http.StatusOK || job.State != "succeeded" || job.Schedule == nil || job.Schedule.NextRunAt != "" {
		t.Errorf("DELETE schedule: %d %s", r.status, r.body)
	}
	if r := do(t, http.MethodDelete, u, nil, bearer(ingestKey)...); r.status != http.StatusOK {
		t.Errorf("stopping it again: %d %s", r.status, r.body)
	}
}
