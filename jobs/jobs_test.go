package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/pgtest"
	"github.com/h4r/h4r/jobs"
)

// stores opens a SQLite store and, when a test database is configured, a
// Postgres one.
func stores(t *testing.T) map[string]func(t *testing.T) *jobs.SQLStore {
	t.Helper()
	out := map[string]func(t *testing.T) *jobs.SQLStore{
		"sqlite": func(t *testing.T) *jobs.SQLStore {
			dir := t.TempDir()
			s, err := jobs.OpenSQLite(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
	if os.Getenv("H4R_TEST_DATABASE_URL") != "" || os.Getenv("CI") != "" {
		out["postgres"] = func(t *testing.T) *jobs.SQLStore {
			dsn := pgtest.Schema(t, "jobs")
			s, err := jobs.OpenPostgres(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}
	return out
}

func waitFor(t *testing.T, r *jobs.Runner, id string, state string) jobs.Job {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, err := r.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == state {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s, want %s", id, j.State, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestJobLifecycleAndRestart(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := open(t)
			r := jobs.NewRunner(store)
			r.Register("count", func(ctx context.Context, req json.RawMessage, report func(jobs.Progress)) (jobs.Progress, error) {
				var n int
				if err := json.Unmarshal(req, &n); err != nil {
					return jobs.Progress{}, err
				}
				p := jobs.Progress{FilesSeen: n}
				p.AddError("bad.pdf", "not a PDF")
				return p, nil
			}, true)
			r.Register("fail", func(ctx context.Context, req json.RawMessage, report func(jobs.Progress)) (jobs.Progress, error) {
				return jobs.Progress{}, errors.New("the source is gone")
			}, false)
			block := make(chan struct{})
			r.Register("block", func(ctx context.Context, req json.RawMessage, report func(jobs.Progress)) (jobs.Progress, error) {
				close(block)
				<-ctx.Done()
				return jobs.Progress{}, ctx.Err()
			}, false)
			gotSecret := make(chan any, 1)
			r.Register("resumable", func(ctx context.Context, req json.RawMessage, report func(jobs.Progress)) (jobs.Progress, error) {
				gotSecret <- jobs.Secret(ctx)
				<-ctx.Done()
				return jobs.Progress{}, ctx.Err()
			}, true)

			j, err := r.Start(ctx, "count", "", 7, nil)
			if err != nil {
				t.Fatal(err)
			}
			done := waitFor(t, r, j.ID, jobs.StateSucceeded)
			if done.Progress.FilesSeen != 7 || len(done.Progress.Errors) != 1 || done.Progress.Errors[0].Path != "bad.pdf" || done.FinishedAt == nil {
				t.Errorf("finished job = %+v", done)
			}
			f, err := r.Start(ctx, "fail", "", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := waitFor(t, r, f.ID, jobs.StateFailed); got.Error != "the source is gone" {
				t.Errorf("failed job error = %q", got.Error)
			}
			b, err := r.Start(ctx, "block", "", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := r.Start(ctx, "resumable", "key-1", nil, "token-1")
			if err != nil {
				t.Fatal(err)
			}
			<-block
			if s := <-gotSecret; s != "token-1" {
				t.Errorf("the job got secret %v, want token-1", s)
			}
			waitFor(t, r, rs.ID, jobs.StateRunning)
			if j, _ := r.Get(ctx, rs.ID); strings.Contains(string(j.Request), "token-1") {
				t.Error("the secret was stored with the job")
			}
			r.Close() // the process stops with two jobs running

			// The next process: the resumable job runs again, the other is failed.
			r2 := jobs.NewRunner(store)
			ran := make(chan struct{}, 1)
			r2.Register("resumable", func(ctx context.Context, req json.RawMessage, report func(jobs.Progress)) (jobs.Progress, error) {
				if jobs.Secret(ctx) != nil {
					t.Error("a resumed job has a secret: secrets are not stored")
				}
				ran <- struct{}{}
				return jobs.Progress{Message: "resumed"}, nil
			}, true)
			r2.Register("block", nil, false)
			resumed, failed, err := r2.Resume(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if resumed != 1 || failed != 1 {
				t.Errorf("resumed %d, failed %d; want 1 and 1", resumed, failed)
			}
			<-ran
			if got := waitFor(t, r2, rs.ID, jobs.StateSucceeded); got.Attempts != 2 || got.Progress.Message != "resumed" || got.Owner != "key-1" {
				t.Errorf("resumed job = %+v", got)
			}
			if got := waitFor(t, r2, b.ID, jobs.StateFailed); got.Error == "" {
				t.Error("the interrupted job was failed without saying why")
			}
			r2.Close()
			var herr *h4r.Error
			if _, err := r2.Get(ctx, "job_nope"); !errors.As(err, &herr) || herr.Code != h4r.ENOTFOUND {
				t.Errorf("unknown job: %v, want not_found", err)
			}
		})
	}
}

// TestJobVisibleTo: a job is visible to its owner and to admins only; an
// ownerless job (the CLI's) to admins only once keys are on.
func TestJobVisibleTo(t *testing.T) {
	for _, tc := range []struct {
		name, owner, viewer string
		admin, want         bool
	}{
		{"owner", "k1", "k1", false, true},
		{"another key", "k1", "k2", false, false},
		{"admin", "k1", "k2", true, true},
		{"ownerless job, a key", "", "k2", false, false},
		{"ownerless job, admin", "", "k2", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (jobs.Job{Owner: tc.owner}).VisibleTo(tc.viewer, tc.admin); got != tc.want {
				t.Errorf("VisibleTo(%q, %v) of a job of %q = %v", tc.viewer, tc.admin, tc.owner, got)
			}
		})
	}
}

func TestFileIndex(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t)
			if err := s.PutFile(ctx, "src", jobs.FileState{Path: "a.go", SHA: "1", Size: 3, MTime: 4, Chunks: 2}); err != nil {
				t.Fatal(err)
			}
			if err := s.PutFile(ctx, "src", jobs.FileState{Path: "a.go", SHA: "2", Size: 5, MTime: 6, Chunks: 1}); err != nil {
				t.Fatal(err)
			}
			if err := s.PutFile(ctx, "other", jobs.FileState{Path: "b.go", SHA: "9"}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Files(ctx, "src")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got["a.go"] != (jobs.FileState{Path: "a.go", SHA: "2", Size: 5, MTime: 6, Chunks: 1}) {
				t.Errorf("files = %+v", got)
			}
			if err := s.DeleteFile(ctx, "src", "a.go"); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Files(ctx, "src"); len(got) != 0 {
				t.Errorf("after delete: %+v", got)
			}
		})
	}
}

// TestScheduledJobRunsAgainAcrossARestart: a scheduled job is stored
// with its schedule, waits in state scheduled after each run, and a new
// runner over the same store runs it again once it is due.
func TestScheduledJobRunsAgainAcrossARestart(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := open(t)
			runs := 0
			count := func(ctx context.Context, req json.RawMessage, report func(jobs.Progress)) (jobs.Progress, error) {
				runs++
				return jobs.Progress{FilesSeen: runs}, nil
			}
			r1 := jobs.NewRunner(store)
			r1.Register("count", count, true)
			j, err := r1.StartScheduled(ctx, "count", "", 1, nil, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			got := waitFor(t, r1, j.ID, jobs.StateScheduled)
			if got.Schedule == nil || got.Schedule.Every != "1h0m0s" || got.Schedule.Runs != 1 || got.Schedule.LastState != jobs.StateSucceeded ||
				got.Schedule.NextRunAt == nil || got.Schedule.NextRunAt.Sub(*got.FinishedAt) != time.Hour {
				t.Fatalf("after the first run: %+v %+v", got, got.Schedule)
			}
			r1.Close()
			// Two hours later, in a new process: the run is due.
			later := func() time.Time { return time.Now().Add(2 * time.Hour) }
			r2 := jobs.NewRunner(store, jobs.WithClock(later))
			r2.Register("count", count, true)
			defer r2.Close()
			if resumed, failed, err := r2.Resume(ctx); err != nil || resumed != 1 || failed != 0 {
				t.Fatalf("Resume: %d resumed, %d failed, %v", resumed, failed, err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				got, err = r2.Get(ctx, j.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Schedule.Runs == 2 && got.State == jobs.StateScheduled {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the due run did not happen: %+v %+v", got, got.Schedule)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if got.Progress.FilesSeen != 2 || got.Attempts != 2 {
				t.Errorf("second run: progress %+v, attempts %d", got.Progress, got.Attempts)
			}
		})
	}
}

func TestParseEvery(t *testing.T) {
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"a day", "24h", true},
		{"ninety minutes", "90m", true},
		{"too often", "30s", false},
		{"not a duration", "daily", false},
		{"a cron line", "0 3 * * *", false},
		{"over a year", "9000h", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := jobs.ParseEvery("opts.schedule", tt.in)
			if (err == nil) != tt.ok {
				t.Errorf("ParseEvery(%q) = %v", tt.in, err)
			}
			if err != nil && h4r.ErrorCode(err) != h4r.EINVALID {
				t.Errorf("code %s", h4r.ErrorCode(err))
			}
		})
	}
}

// TestUnscheduleStopsTheNextRun: a stopped schedule runs no more, and
// the job takes its last run's state; a job without one is refused.
func TestUnscheduleStopsTheNextRun(t *testing.T) {
	ctx := context.Background()
	store := stores(t)["sqlite"](t)
	r := jobs.NewRunner(store)
	defer r.Close()
	r.Register("noop", func(ctx context.Context, req json.RawMessage, report func(jobs.Progress)) (jobs.Progress, error) {
		return jobs.Progress{}, nil
	}, true)
	j, err := r.StartScheduled(ctx, "noop", "", 1, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, j.ID, jobs.StateScheduled)
	got, err := r.Unschedule(ctx, j.ID)
	if err != nil || got.State != jobs.StateSucceeded || !got.Schedule.Stopped || got.Schedule.NextRunAt != nil {
		t.Fatalf("Unschedule: %+v %+v, %v", got, got.Schedule, err)
	}
	// A restart does not re-arm it.
	if resumed, _, err := jobs.NewRunner(store).Resume(ctx); err != nil || resumed != 0 {
		t.Errorf("Resume after the stop: %d resumed, %v", resumed, err)
	}
	plain, err := r.Start(ctx, "noop", "", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, plain.ID, jobs.StateSucceeded)
	if _, err := r.Unschedule(ctx, plain.ID); h4r.ErrorCode(err) != h4r.EINVALID {
		t.Errorf("unscheduling a job without a schedule: %v", err)
	}
}

func TestRecentJobsNewestFirst(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
			for i, id := range []string{"j1", "j2", "j3"} {
				if err := s.CreateJob(context.Background(), jobs.Job{ID: id, Kind: "ingest", State: "done", Owner: "k" + id, UpdatedAt: at.Add(time.Duration(i) * time.Minute)}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := jobs.NewRunner(s).Recent(context.Background(), 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0].ID != "j3" || got[1].ID != "j2" || got[0].Owner != "kj3" {
				t.Errorf("Recent(2) = %+v, want j3 and j2", got)
			}
		})
	}
}
