package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/h4r/h4r"
)

// Job states.
const (
	StateQueued    = "queued"
	StateRunning   = "running"
	StateSucceeded = "succeeded"
	StateFailed    = "failed"
	// StateScheduled is a scheduled job between runs: its last run ended
	// (Schedule.LastState) and the next is due at Schedule.NextRunAt.
	StateScheduled = "scheduled"
)

// Schedule is a job that runs again, every Every after the end of its
// last run. It is stored with the job, so a restart keeps it.
type Schedule struct {
	Every     string     `json:"every"`             // a Go duration: "24h", "90m"
	Stopped   bool       `json:"stopped,omitempty"` // by Unschedule: no run follows
	NextRunAt *time.Time `json:"next_run_at,omitempty"`
	Runs      int        `json:"runs"`
	LastState string     `json:"last_state,omitempty"` // succeeded or failed
}

// Bounds of a schedule's interval.
const (
	MinEvery = time.Minute
	MaxEvery = 366 * 24 * time.Hour
)

// ParseEvery reads a schedule's interval: a Go duration from MinEvery to
// MaxEvery. field names the request field in errors.
func ParseEvery(field, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, h4r.Errorf(h4r.EINVALID, field, "schedule is a Go duration such as \"24h\" or \"90m\", got %q", s)
	}
	if d < MinEvery || d > MaxEvery {
		return 0, h4r.Errorf(h4r.EINVALID, field, "schedule must be from %s to %s, got %s", MinEvery, MaxEvery, d)
	}
	return d, nil
}

// Job is one background job as stored and as GET /v1/jobs/{id} shows it.
type Job struct {
	ID   string `json:"job_id"`
	Kind string `json:"kind"`
	// Owner is the API key that started the job (its key id), "" when no
	// key did (no keys configured, the CLI). GET /v1/jobs/{id} shows a job
	// to its owner and to admin keys only.
	Owner      string          `json:"owner,omitempty"`
	State      string          `json:"state"`
	Request    json.RawMessage `json:"request,omitempty"`
	Progress   Progress        `json:"progress"`
	Error      string          `json:"error,omitempty"`
	Attempts   int             `json:"attempts"`
	Schedule   *Schedule       `json:"schedule,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
}

// MaxReportedErrors bounds the file errors and skips a job's progress
// lists; the counts go on.
const MaxReportedErrors = 200

// Progress is what a job has done so far.
type Progress struct {
	FilesSeen      int         `json:"files_seen"`
	FilesChanged   int         `json:"files_changed"`
	FilesUnchanged int         `json:"files_unchanged"`
	FilesDeleted   int         `json:"files_deleted"`
	ChunksWritten  int         `json:"chunks_written"`
	ChunksDeleted  int         `json:"chunks_deleted"`
	FilesTotal     int         `json:"files_total,omitempty"` // once the sources are listed
	Skipped        int         `json:"skipped"`
	ItemsDone      int         `json:"items_done,omitempty"` // reindex
	ItemsTotal     int         `json:"items_total,omitempty"`
	Errors         []FileIssue `json:"errors"`
	Skips          []FileIssue `json:"skips,omitempty"`
	Message        string      `json:"message,omitempty"`
}

// FileIssue names a file and what went wrong with it, or why it was skipped.
type FileIssue struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// AddError records a file error (the count always; the entry up to
// MaxReportedErrors).
func (p *Progress) AddError(path, msg string) {
	if len(p.Errors) < MaxReportedErrors {
		p.Errors = append(p.Errors, FileIssue{path, msg})
	}
}

// AddSkip records a skipped file.
func (p *Progress) AddSkip(path, msg string) {
	p.Skipped++
	if len(p.Skips) < MaxReportedErrors {
		p.Skips = append(p.Skips, FileIssue{path, msg})
	}
}

// Store persists jobs (SQLStore).
type Store interface {
	CreateJob(ctx context.Context, j Job) error
	UpdateJob(ctx context.Context, j Job) error
	GetJob(ctx context.Context, id string) (Job, error)
	UnfinishedJobs(ctx context.Context) ([]Job, error)
	// RecentJobs are the jobs updated last, newest first.
	RecentJobs(ctx context.Context, limit int) ([]Job, error)
}

// Func does a job's work, reporting progress through report (which
// persists it, at most every ProgressInterval). It must be safe to run
// again after an interruption when its kind is registered resumable.
type Func func(ctx context.Context, request json.RawMessage, report func(Progress)) (Progress, error)

type kind struct {
	fn        Func
	resumable bool
}

// ProgressInterval is how often a running job's progress is written.
const ProgressInterval = 250 * time.Millisecond

// Runner starts jobs in the background and keeps their records.
type Runner struct {
	store Store
	log   *slog.Logger
	now   func() time.Time
	kinds map[string]kind

	mu      sync.Mutex
	secrets map[string]any  // of scheduled jobs, for their next runs in this process; never stored
	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup // runs
	timers  sync.WaitGroup // scheduled jobs waiting for their next run
	closed  bool           // set by Close: no timer is armed after it
}

// Option configures a Runner.
type Option func(*Runner)

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(r *Runner) { r.log = l } }

// WithClock sets the clock of the job records.
func WithClock(now func() time.Time) Option { return func(r *Runner) { r.now = now } }

// NewRunner returns a Runner keeping its records in store.
func NewRunner(store Store, opts ...Option) *Runner {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{store: store, log: slog.Default(), now: time.Now, kinds: map[string]kind{}, ctx: ctx, cancel: cancel}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Register sets the work of a kind of job. A resumable kind is run again
// by Resume after a restart; any other is marked failed.
func (r *Runner) Register(name string, fn Func, resumable bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kinds[name] = kind{fn, resumable}
}

// secretKey carries a job's secrets in its context.
type secretKey struct{}

// Secret returns the secret Start was given for the running job (nil
// after a restart: secrets are never stored).
func Secret(ctx context.Context) any { return ctx.Value(secretKey{}) }

// Start records a job of the kind, owned by owner (a key id, or ""), and
// runs it in the background. It returns the record as stored (state
// queued). secret, when not nil, is
// handed to the job through its context (Secret) and never stored: a
// source's credentials.
func (r *Runner) Start(ctx context.Context, kindName, owner string, request, secret any) (Job, error) {
	return r.StartScheduled(ctx, kindName, owner, request, secret, 0)
}

// StartScheduled is Start for a job that runs again every interval after
// each run ends (none when every is 0). Between runs the job is in state
// scheduled; Resume re-arms it after a restart. Its secret serves the
// runs of this process only.
func (r *Runner) StartScheduled(ctx context.Context, kindName, owner string, request, secret any, every time.Duration) (Job, error) {
	r.mu.Lock()
	k, ok := r.kinds[kindName]
	r.mu.Unlock()
	if !ok {
		return Job{}, fmt.Errorf("starting a job: no kind %q registered", kindName)
	}
	body, err := json.Marshal(request)
	if err != nil {
		return Job{}, fmt.Errorf("starting a %s job: encoding its request: %w", kindName, err)
	}
	now := r.now().UTC()
	j := Job{ID: newID(), Kind: kindName, Owner: owner, State: StateQueued, Request: body, CreatedAt: now, UpdatedAt: now, Progress: Progress{Errors: []FileIssue{}}}
	if every > 0 {
		j.Schedule = &Schedule{Every: every.String()}
	}
	if err := r.store.CreateJob(ctx, j); err != nil {
		return Job{}, fmt.Errorf("recording a %s job: %w", kindName, err)
	}
	if every > 0 && secret != nil {
		r.mu.Lock()
		if r.secrets == nil {
			r.secrets = map[string]any{}
		}
		r.secrets[j.ID] = secret
		r.mu.Unlock()
	}
	r.run(j, k, secret)
	return j, nil
}

// Get returns a job's record, or an *h4r.Error not_found.
func (r *Runner) Get(ctx context.Context, id string) (Job, error) { return r.store.GetJob(ctx, id) }

// Recent returns the jobs updated last, newest first, at most limit.
func (r *Runner) Recent(ctx context.Context, limit int) ([]Job, error) {
	return r.store.RecentJobs(ctx, limit)
}

// VisibleTo reports whether a viewer (a key id) may see the job: its
// owner or an admin. A server without keys treats every caller as admin.
func (j Job) VisibleTo(viewer string, admin bool) bool {
	return admin || j.Owner == viewer
}

// Wait blocks until every run started so far has ended (tests, the CLI);
// it does not wait for the next run of a scheduled job.
func (r *Runner) Wait() { r.wg.Wait() }

// Resume handles the jobs a previous process left queued or running: a
// resumable kind runs again (its attempts go up), any other is marked
// failed. It returns how many were resumed and failed.
func (r *Runner) Resume(ctx context.Context) (resumed, failed int, err error) {
	js, err := r.store.UnfinishedJobs(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("listing interrupted jobs: %w", err)
	}
	for _, j := range js {
		r.mu.Lock()
		k, ok := r.kinds[j.Kind]
		r.mu.Unlock()
		if j.State == StateScheduled {
			if !ok {
				r.log.WarnContext(ctx, "a scheduled job of a kind this process does not run stays idle", "job", j.ID, "kind", j.Kind)
				continue
			}
			r.arm(j)
			resumed++
			continue
		}
		if ok && k.resumable {
			r.log.InfoContext(ctx, "resuming a job interrupted by a restart", "job", j.ID, "kind", j.Kind)
			r.run(j, k, nil)
			resumed++
			continue
		}
		now := r.now().UTC()
		j.State, j.Error, j.UpdatedAt, j.FinishedAt = StateFailed, "interrupted by a restart before it finished; its work may be partly applied: start it again", now, &now
		if err := r.store.UpdateJob(ctx, j); err != nil {
			return resumed, failed, fmt.Errorf("marking interrupted job %s failed: %w", j.ID, err)
		}
		failed++
	}
	return resumed, failed, nil
}

// Unschedule stops job id's schedule: no run follows (a run under way
// ends as usual), and a job waiting for its next run takes the state of
// its last run. A job without a schedule is invalid_argument.
func (r *Runner) Unschedule(ctx context.Context, id string) (Job, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, err := r.store.GetJob(ctx, id)
	if err != nil {
		return Job{}, err
	}
	if j.Schedule == nil {
		return Job{}, h4r.Errorf(h4r.EINVALID, "id", "job %q has no schedule", id)
	}
	j.Schedule.Stopped, j.Schedule.NextRunAt = true, nil
	if j.State == StateScheduled {
		j.State = j.Schedule.LastState
	}
	j.UpdatedAt = r.now().UTC()
	if err := r.store.UpdateJob(ctx, j); err != nil {
		return Job{}, fmt.Errorf("stopping the schedule of job %s: %w", id, err)
	}
	delete(r.secrets, id)
	return j, nil
}

// arm runs scheduled job j again when its next run is due (at once when
// that is past), unless the runner closes first.
func (r *Runner) arm(j Job) {
	wait := time.Duration(0)
	if j.Schedule.NextRunAt != nil {
		wait = j.Schedule.NextRunAt.Sub(r.now())
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.timers.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.timers.Done()
		t := time.NewTimer(max(wait, 0))
		defer t.Stop()
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		k, ok := r.kinds[j.Kind]
		secret := r.secrets[j.ID]
		r.mu.Unlock()
		if !ok {
			return
		}
		cur, err := r.store.GetJob(r.ctx, j.ID)
		if err != nil || cur.State != StateScheduled {
			return // gone, or changed by another hand
		}
		r.run(cur, k, secret)
	}()
}

// Close stops the running jobs and waits for them. Their records stay
// running, for Resume at the next start.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.timers.Wait()
	r.wg.Wait()
}

func (r *Runner) run(j Job, k kind, secret any) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ctx := r.ctx
		if secret != nil {
			ctx = context.WithValue(ctx, secretKey{}, secret)
		}
		j.State, j.Attempts, j.UpdatedAt = StateRunning, j.Attempts+1, r.now().UTC()
		if err := r.store.UpdateJob(ctx, j); err != nil {
			r.log.ErrorContext(ctx, "recording a job's start", "job", j.ID, "error", err)
		}
		var mu sync.Mutex
		last := time.Time{}
		report := func(p Progress) {
			mu.Lock()
			defer mu.Unlock()
			if time.Since(last) < ProgressInterval {
				return
			}
			last = time.Now()
			j.Progress, j.UpdatedAt = p, r.now().UTC()
			if err := r.store.UpdateJob(ctx, j); err != nil && ctx.Err() == nil {
				r.log.WarnContext(ctx, "recording a job's progress", "job", j.ID, "error", err)
			}
		}
		p, err := k.fn(ctx, j.Request, report)
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			// Shutting down: leave it running for Resume.
			r.log.Info("job interrupted by shutdown; it is resumed or marked failed at the next start", "job", j.ID)
			return
		}
		now := r.now().UTC()
		if p.Errors == nil {
			p.Errors = []FileIssue{}
		}
		j.Progress, j.UpdatedAt, j.FinishedAt = p, now, &now
		j.State, j.Error = StateSucceeded, ""
		if err != nil {
			j.State, j.Error = StateFailed, err.Error()
			var herr *h4r.Error
			if errors.As(err, &herr) {
				j.Error = herr.Error()
			}
		}
		// The job's own context may be over; the record must still be written.
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if j.Schedule == nil {
			if err := r.store.UpdateJob(wctx, j); err != nil {
				r.log.Error("recording a job's end", "job", j.ID, "error", err)
			}
			return
		}
		// Unschedule may have stopped it while it ran: the stored record
		// says so. r.mu orders the two.
		r.mu.Lock()
		if cur, err := r.store.GetJob(wctx, j.ID); err == nil && cur.Schedule != nil && cur.Schedule.Stopped {
			j.Schedule = cur.Schedule
		}
		every, perr := time.ParseDuration(j.Schedule.Every)
		rearm := perr == nil && every > 0 && !j.Schedule.Stopped
		if rearm {
			next := now.Add(every)
			j.Schedule.Runs++
			j.Schedule.LastState, j.Schedule.NextRunAt, j.State = j.State, &next, StateScheduled
		}
		err = r.store.UpdateJob(wctx, j)
		r.mu.Unlock()
		if err != nil {
			r.log.Error("recording a job's end", "job", j.ID, "error", err)
			return
		}
		if rearm {
			r.arm(j)
		}
	}()
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "job_" + hex.EncodeToString(b[:])
}
