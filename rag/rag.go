package rag

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// DefaultRetention is how many packs are kept when no limit is set.
const DefaultRetention = 10000

// Store keeps delivered packs and feedback (store/sqlite.Store,
// store/postgres.Store).
type Store interface {
	SavePack(ctx context.Context, p h4r.StoredPack, keep int) error
	Pack(ctx context.Context, id string) (*h4r.StoredPack, error)
	AddFeedback(ctx context.Context, f h4r.Feedback) error
}

// Packer builds a pack (engine.Engine).
type Packer interface {
	Run(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan) (*h4r.Pack, error)
}

// AccessRecorder counts uses of items (the store): the frequency signal.
type AccessRecorder interface{ RecordAccess(ids []string) }

// Service answers queries and feedback. Create it with New.
type Service struct {
	store     Store
	packer    Packer
	access    AccessRecorder
	revision  func() string
	retention int
	now       func() time.Time
	log       *slog.Logger
}

// Option configures New.
type Option func(*Service)

// WithRetention sets how many packs are kept (the newest); n <= 0 keeps
// every pack.
func WithRetention(n int) Option { return func(s *Service) { s.retention = n } }

// WithPolicyRevision sets where the policy's revision, part of a pack's
// id, is read (app.Policy's Status().Revision).
func WithPolicyRevision(rev func() string) Option { return func(s *Service) { s.revision = rev } }

// WithAccessRecorder counts a useful verdict as a use of the pack's items.
func WithAccessRecorder(r AccessRecorder) Option { return func(s *Service) { s.access = r } }

// WithClock sets the clock that stamps packs and feedback.
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// New returns a Service that stores packs in store and builds them with
// packer (which may be nil when only Plan and Deliver are used, as the
// HTTP server does with its own admission control).
func New(store Store, packer Packer, opts ...Option) *Service {
	s := &Service{store: store, packer: packer, retention: DefaultRetention, now: time.Now, log: slog.Default(),
		revision: func() string { return "" }}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Git is the caller's repository state.
type Git struct {
	SHA          string   `json:"sha,omitempty"`
	Branch       string   `json:"branch,omitempty"`
	ChangedFiles []string `json:"changed_files,omitempty"`
}

// QueryRequest is the body of POST /query.
type QueryRequest struct {
	SessionID  string `json:"session_id"`
	AgentID    string `json:"agent_id"`
	Query      string `json:"query"`
	K          *int   `json:"k,omitempty"`
	Rerank     *bool  `json:"rerank,omitempty"`
	WorkingDir string `json:"working_dir,omitempty"`
	Git        *Git   `json:"git,omitempty"`
	// Files the agent is working on (the rag_query tool's files): ranked
	// up like git.changed_files.
	Files []string `json:"files,omitempty"`
	// PreferGraph asks for the causal query type: hops along cause links
	// from the top hits weigh more in the ranking.
	PreferGraph *bool `json:"prefer_graph,omitempty"`
}

// Limits on a query request.
const (
	maxSessionBytes = h4r.MaxIDBytes
	maxPathBytes    = 4096
	maxChangedFiles = 1000
)

// DecodeQuery decodes and validates a POST /query body; errors name the
// offending field.
func DecodeQuery(body []byte) (QueryRequest, error) {
	var r QueryRequest
	if err := jsonstrict.Decode(body, &r, ""); err != nil {
		return r, err
	}
	return r, r.Validate()
}

// Validate checks the request; errors name the offending field.
func (r *QueryRequest) Validate() error {
	switch {
	case strings.TrimSpace(r.SessionID) == "":
		return h4r.Errorf(h4r.EINVALID, "session_id", "session_id is required")
	case len(r.SessionID) > maxSessionBytes:
		return h4r.Errorf(h4r.EINVALID, "session_id", "session_id is longer than %d bytes", maxSessionBytes)
	case strings.TrimSpace(r.AgentID) == "":
		return h4r.Errorf(h4r.EINVALID, "agent_id", "agent_id is required")
	case len(r.AgentID) > maxSessionBytes:
		return h4r.Errorf(h4r.EINVALID, "agent_id", "agent_id is longer than %d bytes", maxSessionBytes)
	case strings.TrimSpace(r.Query) == "":
		return h4r.Errorf(h4r.EINVALID, "query", "query is required")
	case len(r.Query) > h4r.MaxQueryTextBytes:
		return h4r.Errorf(h4r.EINVALID, "query", "query is longer than %d bytes", h4r.MaxQueryTextBytes)
	case r.K != nil && (*r.K < 1 || *r.K > h4r.MaxLimit):
		return h4r.Errorf(h4r.EINVALID, "k", "k must be between 1 and %d, got %d", h4r.MaxLimit, *r.K)
	case len(r.WorkingDir) > maxPathBytes:
		return h4r.Errorf(h4r.EINVALID, "working_dir", "working_dir is longer than %d bytes", maxPathBytes)
	}
	if len(r.Files) > maxChangedFiles {
		return h4r.Errorf(h4r.EINVALID, "files", "at most %d files, got %d", maxChangedFiles, len(r.Files))
	}
	for i, f := range r.Files {
		if len(f) > maxPathBytes {
			return h4r.Errorf(h4r.EINVALID, fmt.Sprintf("files[%d]", i), "path is longer than %d bytes", maxPathBytes)
		}
	}
	if r.Git != nil {
		if len(r.Git.ChangedFiles) > maxChangedFiles {
			return h4r.Errorf(h4r.EINVALID, "git.changed_files", "at most %d changed files, got %d", maxChangedFiles, len(r.Git.ChangedFiles))
		}
		for i, f := range r.Git.ChangedFiles {
			if len(f) > maxPathBytes {
				return h4r.Errorf(h4r.EINVALID, fmt.Sprintf("git.changed_files[%d]", i), "path is longer than %d bytes", maxPathBytes)
			}
		}
	}
	return nil
}

// Plan turns a validated request into the engine's plan: the query text,
// the default query type (h4r.DefaultQueryType), or causal with
// prefer_graph, and k as the limit (default h4r.DefaultLimit). With a
// working context (files, changed files) the engine is asked for
// overFetch times k results, so that Boost can rank the context's chunks
// up from below the cut; Deliver cuts back to k.
func (r *QueryRequest) Plan() (*h4r.Plan, error) {
	req := h4r.ContextRequest{Query: h4r.Query{Text: r.Query}}
	k := h4r.DefaultLimit
	if r.K != nil {
		k = *r.K
	}
	req.Limit = k
	if len(r.contextFiles()) > 0 {
		req.Limit = min(h4r.MaxLimit, max(k*overFetch, k+overFetchMin))
	}
	if r.PreferGraph != nil && *r.PreferGraph {
		req.Query.Type = h4r.QueryCausal
	}
	plan, err := req.Plan("")
	if err != nil {
		if e, ok := err.(*h4r.Error); ok && e.Field == "query.text" {
			e.Field = "query"
		}
		return nil, err
	}
	return plan, nil
}

// Chunk is one delivered item in the retrieval contract's shape.
type Chunk struct {
	ID        string  `json:"id"`
	Text      string  `json:"text"`
	Score     float64 `json:"score"`
	Source    string  `json:"source"`
	Path      string  `json:"path"`
	SHA       string  `json:"sha"`
	LineRange []int   `json:"line_range"`
}

// ContextPack is the retrieval contract's context_pack.
type ContextPack struct {
	ID     string  `json:"id"`
	Tokens int     `json:"tokens"`
	Chunks []Chunk `json:"chunks"`
}

// Citation names where a chunk comes from: a path or a URL, the commit,
// the score, and the chunk's id.
type Citation struct {
	ChunkID string  `json:"chunk_id"`
	Path    string  `json:"path,omitempty"`
	URL     string  `json:"url,omitempty"`
	SHA     string  `json:"sha,omitempty"`
	Score   float64 `json:"score"`
}

// Debug says how the pack was made: the plan and the engine's timings.
type Debug struct {
	Plan    map[string]any `json:"plan"`
	Timings h4r.Timings    `json:"timings"`
}

// QueryResponse is the answer to POST /query.
type QueryResponse struct {
	ContextPack ContextPack `json:"context_pack"`
	Citations   []Citation  `json:"citations"`
	Debug       Debug       `json:"debug"`
}

// Query plans, builds and delivers a pack for spec (whose clearance comes
// from the caller's key, never from the request).
func (s *Service) Query(ctx context.Context, spec h4r.Specialist, r QueryRequest) (*QueryResponse, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	plan, err := r.Plan()
	if err != nil {
		return nil, err
	}
	if s.packer == nil {
		return nil, fmt.Errorf("rag: Query on a service without a packer")
	}
	p, err := s.packer.Run(ctx, spec, plan)
	if err != nil {
		return nil, fmt.Errorf("building the pack: %w", err)
	}
	return s.Deliver(ctx, spec, r, plan, p)
}

// Deliver stores pack p, built from plan for spec, and answers it in
// the retrieval contract's shape. Only the pack's results are stored and answered:
// what policy denied never leaves the engine.
func (s *Service) Deliver(ctx context.Context, spec h4r.Specialist, r QueryRequest, plan *h4r.Plan, p *h4r.Pack) (*QueryResponse, error) {
	reqJSON, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding the query request: %w", err)
	}
	now := s.now().UTC()
	rev := s.revision()
	resp := &QueryResponse{ContextPack: ContextPack{Chunks: make([]Chunk, 0, len(p.Results))}, Citations: []Citation{}}
	ids := make([]string, 0, len(p.Results))
	results, boosted := Boost(r, p.Results)
	if k := r.k(); len(results) > k {
		results = results[:k]
	}
	for _, res := range results {
		ids = append(ids, res.ID)
		ch := chunkOf(res)
		resp.ContextPack.Chunks = append(resp.ContextPack.Chunks, ch)
		resp.ContextPack.Tokens += res.Metadata.Tokens
		url := firstString(res.Content, "url")
		if res.Citation != nil && res.Citation.URL != "" {
			url = res.Citation.URL
		}
		if ch.Path != "" || url != "" {
			resp.Citations = append(resp.Citations, Citation{ChunkID: ch.ID, Path: ch.Path, URL: url, SHA: ch.SHA, Score: ch.Score})
		}
	}
	id := h4r.PackID(spec.ID, reqJSON, ids, rev, now)
	resp.ContextPack.ID = id
	resp.Debug = Debug{Plan: debugPlan(r, plan, p, rev, boosted), Timings: p.Explainability.Timings}
	stored := h4r.StoredPack{ID: id, PrincipalID: spec.ID, Query: r.Query, Request: reqJSON, ResultIDs: ids, PolicyRevision: rev, CreatedAt: now}
	if err := s.store.SavePack(ctx, stored, s.retention); err != nil {
		return nil, fmt.Errorf("storing the context pack: %w", err)
	}
	return resp, nil
}

// debugPlan is what the engine was asked and what it did with the
// request's fields it does not rank by.
func debugPlan(r QueryRequest, plan *h4r.Plan, p *h4r.Pack, rev string, boosted int) map[string]any {
	out := map[string]any{
		"query_type":      string(plan.Request.Query.Type),
		"k":               r.k(),
		"status":          p.Status,
		"policy_revision": rev,
		"candidates":      p.TotalCount,
		"kept":            p.Explainability.Slicing.TotalKept,
		"redacted":        p.Explainability.Slicing.TotalRedacted,
		// The engine's eight-signal ranking is the only ranking; there is
		// no separate reranker to switch on.
		"rerank": "engine ranking (no separate reranker)",
	}
	if len(p.Explainability.Warnings) > 0 {
		out["warnings"] = p.Explainability.Warnings
	}
	if plan.Request.Limit != r.k() {
		out["fetched"] = plan.Request.Limit
	}
	if r.WorkingDir != "" || r.Git != nil || len(r.Files) > 0 {
		out["context"] = map[string]any{"working_dir": r.WorkingDir, "git": r.Git, "files": r.Files,
			"boost": map[string]any{"file": FileBoost, "working_tree": TreeBoost, "boosted": boosted}}
	}
	return out
}

// chunkOf maps a result to a chunk. An ingested chunk's provenance is its
// citation (from the item's metadata, where ingestion writes path, sha,
// line_range and source_type); other items give path, sha and line_range
// in their content (path or file_path; sha or commit_sha; line_range
// [a, b] or start_line and end_line). source is the ingest source type
// (git, fs, url, doc), else content's source, else the item's kind.
func chunkOf(res h4r.Result) Chunk {
	c := res.Content
	ch := Chunk{ID: res.ID, Text: res.Text, Score: res.Score,
		Source: firstString(c, "source"), Path: firstString(c, "path", "file_path"), SHA: firstString(c, "sha", "commit_sha")}
	if cit := res.Citation; cit != nil {
		if cit.SourceType != "" {
			ch.Source = cit.SourceType
		}
		if cit.Path != "" {
			ch.Path = cit.Path
		}
		if cit.SHA != "" {
			ch.SHA = cit.SHA
		}
		if len(cit.LineRange) == 2 {
			ch.LineRange = cit.LineRange
		}
	}
	if ch.Source == "" {
		ch.Source = res.Kind
	}
	if ch.LineRange != nil {
		return ch
	}
	if lr, ok := c["line_range"].([]any); ok && len(lr) == 2 {
		a, aok := lr[0].(float64)
		b, bok := lr[1].(float64)
		if aok && bok {
			ch.LineRange = []int{int(a), int(b)}
		}
	} else if a, ok := c["start_line"].(float64); ok {
		if b, ok := c["end_line"].(float64); ok {
			ch.LineRange = []int{int(a), int(b)}
		}
	}
	return ch
}

func firstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if v := stringField(m, k); v != "" {
			return v
		}
	}
	return ""
}

func stringField(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// FeedbackRequest is the body of POST /feedback.
type FeedbackRequest struct {
	ContextPackID string `json:"context_pack_id"`
	Verdict       string `json:"verdict"`
	Notes         string `json:"notes,omitempty"`
}

// DecodeFeedback decodes and validates a POST /feedback body.
func DecodeFeedback(body []byte) (FeedbackRequest, error) {
	var r FeedbackRequest
	if err := jsonstrict.Decode(body, &r, ""); err != nil {
		return r, err
	}
	return r, r.Validate()
}

// Validate checks the request; errors name the offending field.
func (r *FeedbackRequest) Validate() error {
	switch {
	case strings.TrimSpace(r.ContextPackID) == "":
		return h4r.Errorf(h4r.EINVALID, "context_pack_id", "context_pack_id is required")
	case len(r.ContextPackID) > h4r.MaxIDBytes:
		return h4r.Errorf(h4r.EINVALID, "context_pack_id", "context_pack_id is longer than %d bytes", h4r.MaxIDBytes)
	case r.Verdict != h4r.VerdictUseful && r.Verdict != h4r.VerdictPartial && r.Verdict != h4r.VerdictWrong:
		return h4r.Errorf(h4r.EINVALID, "verdict", "verdict must be %q, %q or %q, got %q", h4r.VerdictUseful, h4r.VerdictPartial, h4r.VerdictWrong, r.Verdict)
	case len(r.Notes) > h4r.MaxFeedbackNotesBytes:
		return h4r.Errorf(h4r.EINVALID, "notes", "notes are longer than %d bytes", h4r.MaxFeedbackNotesBytes)
	}
	return nil
}

// Feedback records a verdict by spec on one of spec's own packs. A pack
// delivered to another principal is not found, as an unknown one is: a
// caller learns nothing about packs it was not given. A useful verdict
// counts as a use of each of the pack's items (the frequency signal).
func (s *Service) Feedback(ctx context.Context, spec h4r.Specialist, r FeedbackRequest) error {
	if err := r.Validate(); err != nil {
		return err
	}
	p, err := s.store.Pack(ctx, r.ContextPackID)
	if err != nil {
		return err
	}
	if p.PrincipalID != spec.ID {
		return h4r.Errorf(h4r.ENOTFOUND, "context_pack_id", "no context pack with id %q (unknown, or past the retention limit)", r.ContextPackID)
	}
	f := h4r.Feedback{PackID: p.ID, PrincipalID: spec.ID, Verdict: r.Verdict, Notes: r.Notes, Query: p.Query, ResultIDs: p.ResultIDs, CreatedAt: s.now().UTC()}
	if err := s.store.AddFeedback(ctx, f); err != nil {
		return fmt.Errorf("storing feedback: %w", err)
	}
	if r.Verdict == h4r.VerdictUseful && s.access != nil && len(p.ResultIDs) > 0 {
		s.access.RecordAccess(p.ResultIDs)
	}
	return nil
}
