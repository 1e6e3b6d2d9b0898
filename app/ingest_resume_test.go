package app_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	ingestion "github.com/h4r/h4r/ingest"
	"github.com/h4r/h4r/jobs"
)

// TestResumedIngestWithoutItsAuthFails: a url source's token is never
// stored, so a job interrupted by a restart and resumed fails that source
// with an error saying to submit the ingest again, and does not fetch the
// page without the token; the same request not interrupted succeeds with
// the token sent.
func TestResumedIngestWithoutItsAuthFails(t *testing.T) {
	ctx := context.Background()
	var unauthenticated atomic.Int32
	hold := make(chan struct{}) // closed: answer; open: hold the first request until the client gives up
	entered := make(chan struct{}, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer page-token" {
			unauthenticated.Add(1)
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		entered <- struct{}{}
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "The runbook: restart the slicer first.\n")
	}))
	defer srv.Close()

	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.IngestAllowPrivateURLs = true
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.Open(ctx, cfg, app.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	req := ingestion.Request{Sources: []ingestion.Source{{Type: ingestion.TypeURL, URI: srv.URL + "/runbook", Auth: &ingestion.Auth{Token: "page-token"}}}}

	jb, err := app.OpenJobs(ctx, a, log)
	if err != nil {
		t.Fatal(err)
	}
	j, err := jb.StartIngest(ctx, "", req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(j.Request), "page-token") || !strings.Contains(string(j.Request), `"auth_withheld":[0]`) {
		t.Errorf("stored request = %s", j.Request)
	}
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("the job did not fetch the page")
	}
	if err := jb.Close(); err != nil { // the restart: the job is left running, its token gone
		t.Fatal(err)
	}

	jb2, err := app.OpenJobs(ctx, a, log)
	if err != nil {
		t.Fatal(err)
	}
	defer jb2.Close()
	if resumed, _, err := jb2.Runner.Resume(ctx); err != nil || resumed != 1 {
		t.Fatalf("resume: %d %v", resumed, err)
	}
	jb2.Runner.Wait()
	got, err := jb2.Get(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != jobs.StateFailed || len(got.Progress.Errors) != 1 || got.Progress.Errors[0].Message != app.ErrAuthLost || got.Attempts != 2 {
		t.Errorf("resumed job = %+v", got)
	}
	if n := unauthenticated.Load(); n != 0 {
		t.Errorf("the resumed job fetched the page %d times without its token", n)
	}

	// Not interrupted, the same request succeeds with the token.
	close(hold)
	j, err = jb2.StartIngest(ctx, "", req)
	if err != nil {
		t.Fatal(err)
	}
	jb2.Runner.Wait()
	if got, _ := jb2.Get(ctx, j.ID); got.State != jobs.StateSucceeded || got.Progress.ChunksWritten != 1 {
		t.Errorf("uninterrupted job = %+v", got)
	}
}
