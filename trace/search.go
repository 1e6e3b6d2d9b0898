package trace

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/scs"
)

// Runner runs a planned context request (engine.Engine): candidates, the
// eight-signal ranker and the policy slicer.
type Runner interface {
	Run(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan) (*h4r.Pack, error)
}

// Slicer applies policy to items read by id (scs.Slicer).
type Slicer interface {
	Slice(ctx context.Context, spec h4r.Specialist, items []*h4r.Item, limits scs.Limits) scs.Outcome
}

// Search limits (the document's).
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 100
)

// SearchRequest is the document's POST /v1/search body.
type SearchRequest struct {
	Query            string        `json:"query"`
	Filters          SearchFilters `json:"filters"`
	Limit            int           `json:"limit"`
	IncludeDecisions bool          `json:"include_decisions"`
	MinScore         float64       `json:"min_score"`
}

// SearchFilters narrow a search; every one is optional.
type SearchFilters struct {
	Repo   string     `json:"repo,omitempty"`
	Areas  []string   `json:"areas,omitempty"` // any of them
	Status string     `json:"status,omitempty"`
	Mode   string     `json:"mode,omitempty"`
	Since  *time.Time `json:"since,omitempty"`
	Author string     `json:"author,omitempty"`
}

// SearchResponse is the document's answer. Traces and decisions are maps:
// they are the items' content as policy delivered it, redactions
// included, which the document's types could not always hold.
type SearchResponse struct {
	Results     []SearchResult `json:"results"`
	Total       int            `json:"total"`
	QueryTimeMs int64          `json:"query_time_ms"`
}

// SearchResult is one trace found.
type SearchResult struct {
	Trace            map[string]any    `json:"trace"`
	Score            float64           `json:"score"`
	MatchedDecisions []MatchedDecision `json:"matched_decisions,omitempty"`
}

// MatchedDecision is one of a trace's decisions that matched the query.
type MatchedDecision struct {
	Decision  map[string]any `json:"decision"`
	Relevance float64        `json:"relevance"`
}

// validate checks a request and fills its default limit.
func (r *SearchRequest) validate() error {
	if strings.TrimSpace(r.Query) == "" {
		return h4r.Errorf(h4r.EINVALID, "query", "query is required")
	}
	if len(r.Query) > h4r.MaxQueryTextBytes {
		return h4r.Errorf(h4r.EINVALID, "query", "query is %d bytes, the limit is %d", len(r.Query), h4r.MaxQueryTextBytes)
	}
	switch {
	case r.Limit == 0:
		r.Limit = DefaultSearchLimit
	case r.Limit < 0 || r.Limit > MaxSearchLimit:
		return h4r.Errorf(h4r.EINVALID, "limit", "limit must be between 1 and %d, got %d", MaxSearchLimit, r.Limit)
	}
	if r.MinScore < 0 || r.MinScore > 1 || r.MinScore != r.MinScore {
		return h4r.Errorf(h4r.EINVALID, "min_score", "min_score must be in [0, 1], got %v", r.MinScore)
	}
	f := r.Filters
	if f.Repo != "" {
		if err := ValidRepo(f.Repo, "filters.repo"); err != nil {
			return err
		}
	}
	if f.Status != "" {
		if err := validStatus(TraceStatus(f.Status), "filters.status"); err != nil {
			return err
		}
	}
	switch ExecutionMode(f.Mode) {
	case "", ModeClassic, ModeRLM:
	default:
		return h4r.Errorf(h4r.EINVALID, "filters.mode", "unknown mode %q (want classic or rlm)", f.Mode)
	}
	if len(f.Areas) > h4r.MaxFilterValues {
		return h4r.Errorf(h4r.EINVALID, "filters.areas", "at most %d areas, got %d", h4r.MaxFilterValues, len(f.Areas))
	}
	for i, a := range f.Areas {
		if strings.TrimSpace(a) == "" {
			return h4r.Errorf(h4r.EINVALID, fmt.Sprintf("filters.areas[%d]", i), "an area must not be empty")
		}
	}
	if len(f.Author) > 1024 {
		return h4r.Errorf(h4r.EINVALID, "filters.author", "author is %d bytes, the limit is 1024", len(f.Author))
	}
	return nil
}

// plan turns a search into one engine request: kind, metadata and tag
// filters the generators apply, so that no other item is ever a candidate.
// Areas are any-of, the stores' anyTags filter. (Filtering areas after
// ranking lost matches: the text generators return a fixed number of hits,
// engine.DefaultCandidateLimit, whatever the request's limit, and at 10k
// traces those were all in other areas.)
func (r *SearchRequest) plan() (*h4r.Plan, error) {
	kinds := []any{KindTrace}
	if r.IncludeDecisions {
		kinds = append(kinds, KindDecision)
	}
	filters := map[string]any{"kind": kinds}
	for key, v := range map[string]string{"repo": r.Filters.Repo, "status": r.Filters.Status, "mode": r.Filters.Mode, "author": r.Filters.Author} {
		if v != "" {
			filters[key] = v
		}
	}
	if r.Filters.Since != nil {
		filters["createdAfter"] = r.Filters.Since.UTC().Format(time.RFC3339Nano)
	}
	if len(r.Filters.Areas) > 0 {
		areas := make([]any, len(r.Filters.Areas))
		for i, a := range r.Filters.Areas {
			areas[i] = a
		}
		filters["anyTags"] = areas
	}
	// Every match the caller may see is asked for, whatever the limit:
	// total counts them all, and the answer is cut to limit afterwards.
	req := h4r.ContextRequest{
		Query:    h4r.Query{Type: h4r.QueryHybrid, Text: r.Query, Filters: filters},
		Limit:    h4r.MaxLimit,
		MinScore: r.MinScore,
	}
	plan, err := req.Plan("")
	if err != nil {
		// The request was validated above; an error here is a filter value
		// the engine refuses (a NUL, a too long value): name it as ours.
		if e, ok := err.(*h4r.Error); ok {
			e.Field = strings.Replace(strings.TrimPrefix(e.Field, "query."), "anyTags", "areas", 1)
			return nil, e
		}
		return nil, err
	}
	return plan, nil
}

// Search finds traces like the query, ranked by the engine, every result
// through the policy slicer for spec.
func (s *Service) Search(ctx context.Context, spec h4r.Specialist, req SearchRequest) (_ *SearchResponse, err error) {
	start := s.now()
	ctx, span := s.tracer.Start(ctx, "trace.search")
	defer func() { endSpan(span, err) }()
	if s.runner == nil {
		return nil, h4r.Errorf(h4r.EUNAVAILABLE, "", "search is not configured")
	}
	if err := req.validate(); err != nil {
		return nil, err
	}
	plan, err := req.plan()
	if err != nil {
		return nil, err
	}
	pack, err := s.run(ctx, spec, plan)
	if err != nil {
		return nil, err
	}
	found := pack.Results
	byTrace := map[string]*SearchResult{}
	var order []string
	decisions := map[string][]MatchedDecision{}
	for _, r := range found {
		switch r.Kind {
		case KindTrace:
			if _, ok := byTrace[r.ID]; !ok {
				byTrace[r.ID] = &SearchResult{Trace: r.Content, Score: r.Score}
				order = append(order, r.ID)
			}
		case KindDecision:
			parent, _, ok := strings.Cut(r.ID, ":decision:")
			if ok {
				decisions[parent] = append(decisions[parent], MatchedDecision{Decision: r.Content, Relevance: r.Score})
			}
		}
	}
	// Traces found only through their decisions: read them, through the
	// slicer like everything else.
	var missing []string
	for parent := range decisions {
		if _, ok := byTrace[parent]; !ok {
			missing = append(missing, parent)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		delivered, err := s.readDelivered(ctx, spec, missing)
		if err != nil {
			return nil, err
		}
		for _, d := range delivered {
			best := slices.MaxFunc(decisions[d.ID], func(a, b MatchedDecision) int { return cmp.Compare(a.Relevance, b.Relevance) })
			byTrace[d.ID] = &SearchResult{Trace: d.Content, Score: best.Relevance}
			order = append(order, d.ID)
		}
	}
	results := make([]SearchResult, 0, len(order))
	for _, id := range order {
		res := byTrace[id]
		if !anyArea(res.Trace, req.Filters.Areas) {
			continue
		}
		if req.IncludeDecisions {
			res.MatchedDecisions = decisions[id]
		}
		results = append(results, *res)
	}
	slices.SortStableFunc(results, func(a, b SearchResult) int { return cmp.Compare(b.Score, a.Score) })
	total := len(results)
	if len(results) > req.Limit {
		results = results[:req.Limit]
	}
	elapsed := s.now().Sub(start)
	s.metrics.ObserveSearch("search", elapsed)
	span.SetAttributes(attribute.Int("h4r.search.results", len(results)))
	return &SearchResponse{Results: results, Total: total, QueryTimeMs: elapsed.Milliseconds()}, nil
}

func (s *Service) run(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan) (_ *h4r.Pack, err error) {
	ctx, span := s.tracer.Start(ctx, "engine.run")
	defer func() { endSpan(span, err) }()
	p, err := s.runner.Run(ctx, spec, plan)
	if err != nil {
		return nil, fmt.Errorf("searching traces: %w", err)
	}
	return p, nil
}

// anyArea reports whether a delivered trace has one of areas (or areas is
// empty).
func anyArea(trace map[string]any, areas []string) bool {
	if len(areas) == 0 {
		return true
	}
	have, _ := trace["areas"].([]any)
	for _, a := range have {
		if s, ok := a.(string); ok && slices.Contains(areas, s) {
			return true
		}
	}
	return false
}

// readLimits let every item read by id through on size: a trace read is
// one item, and the item limits already bound its size. The policy's own
// pack settings may still narrow them.
var readLimits = scs.Limits{MaxBytes: 1 << 30, MaxTokens: 1 << 30, MaxItems: 1 << 20}

// readDelivered reads items by id and returns those policy lets spec see,
// as delivered (redacted), in the order of ids. Ids with no item are left
// out, like denied ones, so that the caller cannot tell them apart.
func (s *Service) readDelivered(ctx context.Context, spec h4r.Specialist, ids []string) ([]h4r.Delivered, error) {
	items := make([]*h4r.Item, 0, len(ids))
	for _, id := range ids {
		it, err := s.store.Get(ctx, id)
		if h4r.ErrorCode(err) == h4r.ENOTFOUND {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading trace %s: %w", id, err)
		}
		items = append(items, it)
	}
	return s.deliver(ctx, spec, items)
}

func (s *Service) deliver(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) ([]h4r.Delivered, error) {
	if len(items) == 0 {
		return nil, nil
	}
	if s.slicer == nil {
		return nil, h4r.Errorf(h4r.EUNAVAILABLE, "", "trace reads are not configured")
	}
	out := s.slicer.Slice(ctx, spec, items, readLimits)
	var kept []h4r.Delivered
	for _, v := range out.Verdicts {
		if v.Reason == h4r.ReasonKept && v.Delivered != nil {
			kept = append(kept, *v.Delivered)
		}
	}
	if len(kept) == 0 && out.Failed > 0 {
		return nil, h4r.Errorf(h4r.EUNAVAILABLE, "", "the policy could not decide whether the trace may be read; retry")
	}
	return kept, nil
}

// Get returns the trace of (repo, sha) as policy delivers it to spec. A
// trace spec may not see is not_found, like one that does not exist. As
// in git, sha may be the start of a commit's SHA (7 digits or more) when
// exactly one trace spec may see in repo starts with it; when several do,
// the answer is invalid_argument naming sha and listing them.
func (s *Service) Get(ctx context.Context, spec h4r.Specialist, repo, sha string) (map[string]any, error) {
	sha = strings.ToLower(sha)
	if err := ValidRepo(repo, "repo"); err != nil {
		return nil, err
	}
	if err := ValidSHA(sha, "sha"); err != nil {
		return nil, err
	}
	id := ItemID(repo, sha)
	kept, err := s.readDelivered(ctx, spec, []string{id})
	if err != nil {
		return nil, err
	}
	if len(kept) == 0 && len(sha) < maxSHADigits {
		if kept, err = s.startingWith(ctx, spec, repo, sha); err != nil {
			return nil, err
		}
		if len(kept) > 1 {
			return nil, ambiguous(sha, " in "+repo, kept)
		}
	}
	if len(kept) == 0 || kept[0].Kind != KindTrace {
		return nil, h4r.Errorf(h4r.ENOTFOUND, "sha", "trace not found: no trace of commit %s in %s", sha, repo)
	}
	return kept[0].Content, nil
}

// maxSHADigits is the length of a SHA-256 commit id: a shorter sha may
// be the start of a longer one.
const maxSHADigits = 64

// startingWith returns the traces, as policy delivers them to spec, of
// the commits whose SHA starts with prefix, in repo ("": any). Only
// traces spec may see count, so that an ambiguity never tells of a trace
// policy hides. It reads every trace, as GetBySHA does.
func (s *Service) startingWith(ctx context.Context, spec h4r.Specialist, repo, prefix string) ([]h4r.Delivered, error) {
	var items []*h4r.Item
	err := s.store.Each(ctx, func(it *h4r.Item) error {
		itemRepo, itemSHA, _ := strings.Cut(it.ID, "@")
		if it.Kind == KindTrace && strings.HasPrefix(itemSHA, prefix) && (repo == "" || itemRepo == repo) {
			items = append(items, it)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("looking for the traces of commits starting with %s: %w", prefix, err)
	}
	kept, err := s.deliver(ctx, spec, items)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(kept, func(d h4r.Delivered) bool { return d.Kind != KindTrace }), nil
}

// ambiguous is the error of a short sha that several traced commits
// start with (where: " in org/repo", or "").
func ambiguous(sha, where string, kept []h4r.Delivered) error {
	const shown = 5
	ids := make([]string, 0, len(kept))
	for _, d := range kept {
		ids = append(ids, d.ID)
	}
	slices.Sort(ids)
	list := strings.Join(ids[:min(len(ids), shown)], ", ")
	if len(ids) > shown {
		list += fmt.Sprintf(" and %d more", len(ids)-shown)
	}
	return h4r.Errorf(h4r.EINVALID, "sha", "the short SHA %s is ambiguous: %d traced commits%s start with it (%s): send more digits", sha, len(ids), where, list)
}

// GetBySHA returns the trace of sha (or of the one commit spec may see
// whose SHA starts with it, as Get) when exactly one repository spec may
// see has it. It reads every trace (there is no index by sha alone), so it
// is for people and tools, not for hot paths: those name the repository.
func (s *Service) GetBySHA(ctx context.Context, spec h4r.Specialist, sha string) (map[string]any, error) {
	sha = strings.ToLower(sha)
	if err := ValidSHA(sha, "sha"); err != nil {
		return nil, err
	}
	kept, err := s.startingWith(ctx, spec, "", sha)
	if err != nil {
		return nil, err
	}
	// The commit named in full wins over longer ones it starts; the same
	// commit in several repositories is asked of one below.
	commits := map[string][]h4r.Delivered{}
	for _, d := range kept {
		_, full, _ := strings.Cut(d.ID, "@")
		commits[full] = append(commits[full], d)
	}
	if exact, ok := commits[sha]; ok {
		kept = exact
	} else if len(commits) > 1 {
		return nil, ambiguous(sha, "", kept)
	}
	switch len(kept) {
	case 0:
		return nil, h4r.Errorf(h4r.ENOTFOUND, "sha", "trace not found: no trace of commit %s", sha)
	case 1:
		return kept[0].Content, nil
	}
	repos := make([]string, len(kept))
	for i, d := range kept {
		repos[i], _, _ = strings.Cut(d.ID, "@")
	}
	slices.Sort(repos)
	return nil, h4r.Errorf(h4r.EINVALID, "sha", "commit %s is traced in %d repositories (%s): ask GET /v1/trace/{owner}/{name}/%s", sha, len(repos), strings.Join(repos, ", "), sha)
}
