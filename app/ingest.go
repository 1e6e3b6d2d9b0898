package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/h4r/h4r/chunk"
	"github.com/h4r/h4r/ingest"
	"github.com/h4r/h4r/jobs"
	"github.com/h4r/h4r/tokens"
)

// Job kinds.
const (
	JobIngest  = "ingest"
	JobReindex = "reindex"
)

// ReindexRequest is a reindex job's stored request (POST /v1/reindex).
type ReindexRequest struct {
	Graph bool `json:"graph,omitempty"` // also rebuild the Neo4j graph
	// SkipEmbeddings leaves the vector index as it is (a request with
	// regenerate_embeddings false).
	SkipEmbeddings bool `json:"skip_embeddings,omitempty"`
}

// StartReindex starts a reindex job owned by owner (a key id, or "").
func (j *Jobs) StartReindex(ctx context.Context, owner string, graph, embeddings bool) (jobs.Job, error) {
	return j.Runner.Start(ctx, JobReindex, owner, ReindexRequest{Graph: graph, SkipEmbeddings: !embeddings}, nil)
}

// Get returns a job's record.
func (j *Jobs) Get(ctx context.Context, id string) (jobs.Job, error) { return j.Runner.Get(ctx, id) }

// Recent returns the jobs updated last, newest first (jobs.Runner.Recent).
func (j *Jobs) Recent(ctx context.Context, limit int) ([]jobs.Job, error) {
	return j.Runner.Recent(ctx, limit)
}

// Unschedule stops a scheduled job's schedule (jobs.Runner.Unschedule).
func (j *Jobs) Unschedule(ctx context.Context, id string) (jobs.Job, error) {
	return j.Runner.Unschedule(ctx, id)
}

// Jobs is the background job runner with the ingester: what POST /ingest,
// GET /v1/jobs/{id}, POST /v1/reindex and h4r ingest-source use.
type Jobs struct {
	Runner   *jobs.Runner
	Ingester *ingest.Ingester
	store    *jobs.SQLStore
}

// IngestOption configures OpenJobs.
type IngestOption func(*ingestOptions)

type ingestOptions struct {
	roots      []string
	contextual bool
}

// WithIngestRoots replaces H4R_INGEST_ROOTS (the CLI allows the path it
// is given).
func WithIngestRoots(roots ...string) IngestOption {
	return func(o *ingestOptions) { o.roots = roots }
}

// WithContextualPrefix sets whether chunk texts carry the contextual
// prefix (the retrieval benchmark turns it off to measure it).
func WithContextualPrefix(on bool) IngestOption {
	return func(o *ingestOptions) { o.contextual = on }
}

// OpenJobs opens the job store (Postgres with DATABASE_URL, else jobs.db
// in the data directory), builds the ingester over the app's store and
// registers the ingest and reindex jobs. It does not resume interrupted
// jobs: call Runner.Resume once the server is ready.
func OpenJobs(ctx context.Context, a *App, log *slog.Logger, opts ...IngestOption) (*Jobs, error) {
	o := ingestOptions{contextual: true}
	for _, s := range strings.Split(a.Config.IngestRoots, ",") {
		if s = strings.TrimSpace(s); s != "" {
			o.roots = append(o.roots, s)
		}
	}
	for _, opt := range opts {
		opt(&o)
	}
	var store *jobs.SQLStore
	var err error
	if a.Config.DatabaseURL != "" {
		store, err = jobs.OpenPostgres(ctx, a.Config.DatabaseURL)
	} else {
		store, err = jobs.OpenSQLite(ctx, a.Config.DataDir)
	}
	if err != nil {
		return nil, err
	}
	counter := a.tokens
	if counter == nil { // an App not made by Open
		if counter, err = tokens.New(a.Config.TokenEncoding); err != nil {
			return nil, errors.Join(err, store.Close())
		}
	}
	var patterns []string
	for _, p := range strings.Split(a.Config.IngestCredentialPatterns, ",") {
		if p = strings.TrimSpace(p); p != "" {
			patterns = append(patterns, p)
		}
	}
	maxBytes := a.Config.IngestMaxFileBytes
	if maxBytes <= 0 {
		maxBytes = ingest.DefaultMaxFileBytes
	}
	credMode := a.Config.IngestCredentials
	if credMode == "" {
		credMode = ingest.CredentialsFlag
	}
	in := ingest.New(a.Store, store,
		chunk.New(counter, chunk.WithMaxTokens(orDefault(a.Config.ChunkMaxTokens, chunk.DefaultMaxTokens)),
			chunk.WithOverlapTokens(orDefault(a.Config.ChunkOverlapTokens, chunk.DefaultOverlapTokens))),
		ingest.WithAllowedRoots(o.roots...), ingest.WithMaxFileBytes(maxBytes),
		ingest.WithCredentialPatterns(patterns...), ingest.WithCredentialMode(credMode),
		ingest.WithPrivateURLs(a.Config.IngestAllowPrivateURLs), ingest.WithContextualPrefix(o.contextual),
		ingest.WithLogger(log))
	j := &Jobs{Runner: jobs.NewRunner(store, jobs.WithLogger(log)), Ingester: in, store: store}
	j.Runner.Register(JobIngest, j.runIngest, true)
	j.Runner.Register(JobReindex, func(ctx context.Context, req json.RawMessage, report func(jobs.Progress)) (jobs.Progress, error) {
		return runReindex(ctx, a, req, report)
	}, true)
	j.Runner.Register(JobBackfillSignatures, func(ctx context.Context, _ json.RawMessage, report func(jobs.Progress)) (jobs.Progress, error) {
		return runBackfillSignatures(ctx, a, report)
	}, true)
	return j, nil
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// Close stops running jobs (they resume at the next start) and closes the
// job store.
func (j *Jobs) Close() error {
	j.Runner.Close()
	return j.store.Close()
}

// StartIngest validates a request and starts its job, owned by owner (a
// key id, or ""). The sources' credentials go to the job in memory only:
// the stored request names which sources had them (auth_withheld), so that
// a job resumed after a restart, when they are gone, fails those sources
// saying to submit the ingest again rather than fetching without them.
func (j *Jobs) StartIngest(ctx context.Context, owner string, req ingest.Request) (jobs.Job, error) {
	if err := req.Validate(); err != nil {
		return jobs.Job{}, err
	}
	auths := make([]*ingest.Auth, len(req.Sources))
	stored := storedIngest{Request: req}
	stored.Sources = append([]ingest.Source(nil), req.Sources...)
	for i := range stored.Sources {
		if a := stored.Sources[i].Auth; a != nil && *a != (ingest.Auth{}) {
			auths[i] = a
			stored.AuthWithheld = append(stored.AuthWithheld, i)
		}
		stored.Sources[i].Auth = nil
	}
	var every time.Duration
	if req.Opts.Schedule != "" {
		d, err := jobs.ParseEvery("opts.schedule", req.Opts.Schedule)
		if err != nil {
			return jobs.Job{}, err
		}
		every = d
	}
	return j.Runner.StartScheduled(ctx, JobIngest, owner, stored, auths, every)
}

// storedIngest is an ingest job's stored request: POST /ingest's body
// without credentials, and the indexes of the sources that had some.
type storedIngest struct {
	ingest.Request
	AuthWithheld []int `json:"auth_withheld,omitempty"`
}

// ErrAuthLost is a resumed job's error for a source whose credentials were
// given to the job that the restart interrupted: they are never stored.
const ErrAuthLost = "this source's credentials (auth) are kept in memory only, never stored, and the restart that interrupted the job lost them: submit the ingest again with its auth"

// runIngest ingests each source in turn. A source that cannot be read as a
// whole is an error entry naming it, and the job goes on with the next; the
// job fails only when no source could be read.
func (j *Jobs) runIngest(ctx context.Context, raw json.RawMessage, report func(jobs.Progress)) (jobs.Progress, error) {
	var req storedIngest
	if err := json.Unmarshal(raw, &req); err != nil {
		return jobs.Progress{}, fmt.Errorf("decoding the ingest request: %w", err)
	}
	auths, _ := jobs.Secret(ctx).([]*ingest.Auth)
	p := jobs.Progress{Errors: []jobs.FileIssue{}}
	failed := 0
	for i, src := range req.Sources {
		if i < len(auths) {
			src.Auth = auths[i]
		}
		if src.Auth == nil && slices.Contains(req.AuthWithheld, i) {
			failed++
			p.AddError(src.Type+":"+firstOf(src.Path, src.URI), ErrAuthLost)
			report(p)
			continue
		}
		if err := j.Ingester.Run(ctx, src, req.Opts, &p, report); err != nil {
			if ctx.Err() != nil {
				return p, ctx.Err()
			}
			failed++
			p.AddError(src.Type+":"+firstOf(src.Path, src.URI), err.Error())
		}
		report(p)
	}
	switch {
	case failed == len(req.Sources):
		return p, fmt.Errorf("no source could be read (see errors)")
	case p.FilesChanged == 0 && p.FilesDeleted == 0:
		p.Message = "nothing changed: no item written"
	default:
		p.Message = fmt.Sprintf("%d files re-chunked, %d deleted, %d unchanged", p.FilesChanged, p.FilesDeleted, p.FilesUnchanged)
	}
	return p, nil
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// runReindex rebuilds the vector index (and the graph when asked), as h4r
// reindex does.
func runReindex(ctx context.Context, a *App, raw json.RawMessage, report func(jobs.Progress)) (jobs.Progress, error) {
	var req ReindexRequest
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &req); err != nil {
			return jobs.Progress{}, fmt.Errorf("decoding the reindex request: %w", err)
		}
	}
	p := jobs.Progress{Errors: []jobs.FileIssue{}}
	total, err := a.Store.Count(ctx)
	if err != nil {
		return p, err
	}
	p.ItemsTotal = total
	if req.SkipEmbeddings {
		p.Message = "vector index left as it is"
	} else {
		n, err := RebuildVectors(ctx, a, func(done int) {
			p.ItemsDone = done
			report(p)
		})
		p.ItemsDone = n
		if err != nil {
			return p, fmt.Errorf("rebuilding the vector index (%d items done): %w", n, err)
		}
		p.Message = fmt.Sprintf("reindexed %d items", n)
	}
	if req.Graph {
		if err := RebuildGraph(ctx, a); err != nil {
			return p, err
		}
		p.Message += "; rebuilt the graph"
	}
	return p, nil
}
