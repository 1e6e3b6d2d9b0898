package decision

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/words"
	"github.com/h4r/h4r/scs"
)

// KindCommitTrace is the kind of commit traces, written by
// the trace ingest: id {repo}@{sha}, text the summary, content the trace
// with the document's field names, metadata repo/branch/author/mode/status,
// areas as tags, createdAt the trace's timestamp.
const KindCommitTrace = "commit_trace"

// Limits of prefetch.
const (
	DefaultPrefetchLimit = 20
	MaxPrefetchLimit     = 100
	// candidatesPerQuery bounds what prefetch and escalation read per
	// area and of the repo's newest traces (findWithAreas).
	candidatesPerQuery = 500
)

// PrefetchRequest is POST /v1/prefetch's body.
type PrefetchRequest struct {
	Repo            string   `json:"repo"`
	Branch          string   `json:"branch,omitempty"`
	Areas           []string `json:"areas,omitempty"`
	RecentFiles     []string `json:"recent_files,omitempty"`
	TaskDescription string   `json:"task_description,omitempty"`
	Limit           int      `json:"limit,omitempty"`
}

// Precedent is one relevant trace.
type Precedent struct {
	Trace       Wire    `json:"trace"`
	Relevance   float64 `json:"relevance"`
	MatchReason string  `json:"match_reason"`
}

// PrefetchResult is POST /v1/prefetch's answer.
type PrefetchResult struct {
	Precedents  []Precedent `json:"precedents"`
	Summary     string      `json:"summary"`
	Suggestions []string    `json:"suggestions"`
}

// Situation is what relevance is measured against: a prefetch request, or
// a WebSocket context_update.
type Situation struct {
	Repo   string
	Branch string // the session's branch: traces made on it are relevant
	Areas  []string
	Files  []string
	Text   string // task description, current task, recent decisions
}

// scored is a trace the caller may see, with its relevance measured on
// the trace as cleared for it.
type scored struct {
	item      scs.Cleared
	relevance float64
	reason    string
}

// Relevance scores a commit trace, as the slicer cleared it for the
// caller, against a situation, in [0, 1]: three tenths whether the trace
// was made on the situation's branch, half the share of the situation's
// areas the trace touched, three tenths the share of its files, two
// tenths the overlap of words between the situation's text and
// the trace's summary and decisions. When the situation names no files (or
// no text), the other parts take its weight. It returns a sentence saying
// why. It reads only the redacted trace: a word of a redacted value can
// neither match nor be named.
func Relevance(s Situation, cleared scs.Cleared) (float64, string) {
	trace := cleared.Item()
	if trace == nil {
		return 0, "no trace"
	}
	areas := traceAreas(trace)
	files := traceFiles(trace)
	type part struct {
		weight, value float64
		why           string
	}
	var parts []part
	if s.Branch != "" {
		b, _ := trace.Content["branch"].(string)
		v, why := 0.0, ""
		if b == s.Branch {
			v, why = 1, "same branch "+b
		}
		parts = append(parts, part{0.3, v, why})
	}
	if len(s.Areas) > 0 {
		shared := intersect(s.Areas, areas)
		why := ""
		if len(shared) > 0 {
			why = "same area " + strings.Join(shared, ", ")
		}
		parts = append(parts, part{0.5, float64(len(shared)) / float64(len(s.Areas)), why})
	}
	if len(s.Files) > 0 {
		shared := intersect(s.Files, files)
		why := ""
		if len(shared) > 0 {
			why = "touched " + strings.Join(shared, ", ")
		}
		parts = append(parts, part{0.3, float64(len(shared)) / float64(len(s.Files)), why})
	}
	if strings.TrimSpace(s.Text) != "" {
		words := wordSet(s.Text)
		shared := overlap(words, wordSet(traceText(trace)))
		why := ""
		if len(shared) > 0 {
			why = "similar work: " + strings.Join(shared[:min(len(shared), 4)], ", ")
		}
		v := 0.0
		if len(words) > 0 {
			v = min(1, float64(len(shared))/float64(min(len(words), 6)))
		}
		parts = append(parts, part{0.2, v, why})
	}
	var total, weights float64
	var whys []string
	for _, p := range parts {
		total += p.weight * p.value
		weights += p.weight
		if p.why != "" {
			whys = append(whys, p.why)
		}
	}
	if weights == 0 {
		return 0, "no areas, files or task to compare"
	}
	reason := strings.Join(whys, "; ")
	if reason == "" {
		reason = "same repository"
	}
	return total / weights, reason
}

// Prefetch answers POST /v1/prefetch: the repo's commit traces most
// relevant to the areas, files and task, that the caller may see, with a
// summary and suggestions (affordance rules over the traces).
func (s *Service) Prefetch(ctx context.Context, spec h4r.Specialist, req PrefetchRequest) (*PrefetchResult, error) {
	switch {
	case strings.TrimSpace(req.Repo) == "":
		return nil, h4r.Errorf(h4r.EINVALID, "repo", "repo is required (org/repo)")
	case req.Limit < 0 || req.Limit > MaxPrefetchLimit:
		return nil, h4r.Errorf(h4r.EINVALID, "limit", "limit must be between 0 and %d, got %d", MaxPrefetchLimit, req.Limit)
	case len(req.Areas) > 64:
		return nil, h4r.Errorf(h4r.EINVALID, "areas", "at most 64 areas, got %d", len(req.Areas))
	case len(req.Branch) > 255:
		return nil, h4r.Errorf(h4r.EINVALID, "branch", "branch is %d bytes, the limit is 255", len(req.Branch))
	case len(req.RecentFiles) > 256:
		return nil, h4r.Errorf(h4r.EINVALID, "recent_files", "at most 256 recent files, got %d", len(req.RecentFiles))
	}
	limit := req.Limit
	if limit == 0 {
		limit = DefaultPrefetchLimit
	}
	sit := Situation{Repo: req.Repo, Branch: req.Branch, Areas: req.Areas, Files: req.RecentFiles, Text: req.TaskDescription}
	ranked, err := s.rankTraces(ctx, spec, sit)
	if err != nil {
		return nil, err
	}
	res := &PrefetchResult{Precedents: []Precedent{}, Suggestions: suggestions(ranked, s.now())}
	for _, c := range ranked {
		if len(res.Precedents) == limit {
			break
		}
		if c.relevance == 0 {
			continue
		}
		res.Precedents = append(res.Precedents, Precedent{Trace: c.wire, Relevance: round3(c.relevance), MatchReason: c.reason})
	}
	res.Summary = summarize(res.Precedents)
	return res, nil
}

// visibleTrace is a ranked trace the caller may see, as delivered.
type visibleTrace struct {
	scored
	wire Wire
}

// rankTraces finds the repo's commit traces in the situation's areas (and
// the newest of the repo), and ranks them (rank).
func (s *Service) rankTraces(ctx context.Context, spec h4r.Specialist, sit Situation) ([]visibleTrace, error) {
	cands, err := s.commitTraces(ctx, sit.Repo, sit.Branch, sit.Areas)
	if err != nil {
		return nil, err
	}
	decisions, err := s.decisionsFor(ctx, sit.Repo, sit.Areas)
	if err != nil {
		return nil, err
	}
	return s.rank(ctx, spec, sit, append(cands, decisions...)), nil
}

// rank scores candidate traces against the situation as the slicer clears
// them for spec, and returns those it delivers within the budget, most
// relevant first (ties: newest, then id). Relevance is measured on the
// redacted traces only: first to order the walk the budget takes, then
// again on what Slice delivered, in case the policy changed in between.
func (s *Service) rank(ctx context.Context, spec h4r.Specialist, sit Situation, cands []*h4r.Item) []visibleTrace {
	byID := make(map[string]*h4r.Item, len(cands))
	for _, it := range cands {
		byID[it.ID] = it
	}
	cleared := s.slicer.Clear(ctx, spec, cands)
	list := make([]scored, 0, len(cleared))
	for _, c := range cleared {
		list = append(list, score(sit, c))
	}
	sortScored(list)
	items := make([]*h4r.Item, len(list))
	for i, sc := range list {
		items[i] = byID[sc.item.ID()]
	}
	out := s.slicer.Slice(ctx, spec, items, s.limits)
	vis := make([]visibleTrace, 0, len(list))
	for _, v := range out.Verdicts {
		if c, kept := v.Cleared(); kept {
			vis = append(vis, visibleTrace{scored: score(sit, c), wire: FromCleared(c, nil)})
		}
	}
	slices.SortStableFunc(vis, func(a, b visibleTrace) int { return compareScored(a.scored, b.scored) })
	return vis
}

func score(sit Situation, c scs.Cleared) scored {
	r, why := Relevance(sit, c)
	return scored{item: c, relevance: r, reason: why}
}

func sortScored(list []scored) { slices.SortStableFunc(list, compareScored) }

// compareScored orders by relevance, then newest, then id.
func compareScored(a, b scored) int {
	ai, bi := a.item.Item(), b.item.Item()
	switch {
	case a.relevance != b.relevance:
		if a.relevance > b.relevance {
			return -1
		}
		return 1
	case !ai.Metadata.CreatedAt.Equal(bi.Metadata.CreatedAt):
		if ai.Metadata.CreatedAt.After(bi.Metadata.CreatedAt) {
			return -1
		}
		return 1
	}
	return strings.Compare(ai.ID, bi.ID)
}

// commitTraces reads the repo's newest commit traces on branch (when
// given), those tagged with any of areas, and its newest, without
// duplicates.
func (s *Service) commitTraces(ctx context.Context, repo, branch string, areas []string) ([]*h4r.Item, error) {
	base := h4r.Filters{Kinds: []string{KindCommitTrace}, Metadata: map[string]any{"repo": repo}}
	out, err := findWithAreas(ctx, s.store, h4r.ItemQuery{Filters: base, Limit: candidatesPerQuery}, base, areas, candidatesPerQuery)
	if err != nil {
		return nil, fmt.Errorf("finding commit traces of %s: %w", repo, err)
	}
	if branch == "" {
		return out, nil
	}
	onBranch, err := s.store.Find(ctx, h4r.ItemQuery{Filters: h4r.Filters{Kinds: []string{KindCommitTrace}, Metadata: map[string]any{"repo": repo, "branch": branch}}, Limit: candidatesPerQuery})
	if err != nil {
		return nil, fmt.Errorf("finding commit traces of %s on %s: %w", repo, branch, err)
	}
	seen := make(map[string]bool, len(out))
	for _, it := range out {
		seen[it.ID] = true
	}
	for _, it := range onBranch {
		if !seen[it.ID] {
			out = append(out, it)
		}
	}
	return out, nil
}

// decisionsFor reads the decision traces of the project (project_key
// repo) and those tagged with any of areas, without duplicates: a
// decision taken in an area is a precedent for work there.
func (s *Service) decisionsFor(ctx context.Context, repo string, areas []string) ([]*h4r.Item, error) {
	kinds := []string{KindTrace}
	first := h4r.ItemQuery{Filters: h4r.Filters{Kinds: kinds, Metadata: map[string]any{"project_key": repo}}, Limit: candidatesPerQuery}
	out, err := findWithAreas(ctx, s.store, first, h4r.Filters{Kinds: kinds}, areas, candidatesPerQuery)
	if err != nil {
		return nil, fmt.Errorf("finding decision traces for %s: %w", repo, err)
	}
	return out, nil
}

// finder lists items by filter, newest first (h4r.ItemQuery).
type finder interface {
	Find(ctx context.Context, q h4r.ItemQuery) ([]*h4r.Item, error)
}

// findWithAreas returns what first finds, then for each of areas in turn
// the newest limit items base passes that are tagged with it, each item
// once, at its first place: what one query per area answered, in one
// query for all the areas (base with anyTags) when it can. Find lists
// newest first (createdAt, then id), so an area's newest limit are the
// first limit of its items in the all-areas list whenever that list holds
// limit of them or every item of any area (it came back short); only an
// area it cannot answer so is asked alone.
func findWithAreas(ctx context.Context, store finder, first h4r.ItemQuery, base h4r.Filters, areas []string, limit int) ([]*h4r.Item, error) {
	found, err := store.Find(ctx, first)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []*h4r.Item
	add := func(items []*h4r.Item) {
		for _, it := range items {
			if !seen[it.ID] {
				seen[it.ID] = true
				out = append(out, it)
			}
		}
	}
	add(found)
	if len(areas) == 0 {
		return out, nil
	}
	var all []*h4r.Item
	complete := false
	// An area that is not valid UTF-8 reaches the store's filter changed
	// (JSON-encoded); comparing it with the items' tags here would not be
	// what the store compares. Such requests ask area by area.
	if !slices.ContainsFunc(areas, func(a string) bool { return !utf8.ValidString(a) }) && base.Tags == nil && base.AnyTags == nil {
		anyOf := base
		anyOf.AnyTags = slices.Clone(areas)
		ask := min(limit*len(areas), h4r.MaxFindLimit)
		if all, err = store.Find(ctx, h4r.ItemQuery{Filters: anyOf, Limit: ask}); err != nil {
			return nil, err
		}
		complete = len(all) < ask
	}
	for _, a := range areas {
		var mine []*h4r.Item
		for _, it := range all {
			if slices.Contains(it.Metadata.Tags, a) {
				mine = append(mine, it)
				if len(mine) == limit {
					break
				}
			}
		}
		if len(mine) < limit && !complete {
			f := base
			f.Tags = []string{a}
			if mine, err = store.Find(ctx, h4r.ItemQuery{Filters: f, Limit: limit}); err != nil {
				return nil, err
			}
		}
		add(mine)
	}
	return out, nil
}

// suggestions are affordance rules over the visible traces: an area
// reverted at least twice in the last 30 days, and an area where most
// traces escalated.
func suggestions(traces []visibleTrace, now time.Time) []string {
	reverted := map[string]int{}
	escalated, total := map[string]int{}, map[string]int{}
	for _, t := range traces {
		if t.relevance == 0 {
			continue
		}
		it := t.item.Item()
		recent := now.Sub(it.Metadata.CreatedAt) <= 30*24*time.Hour
		status, _ := it.Content["status"].(string)
		esc, _ := it.Content["escalations"].([]any)
		for _, a := range traceAreas(it) {
			total[a]++
			if status == "reverted" && recent {
				reverted[a]++
			}
			if len(esc) > 0 {
				escalated[a]++
			}
		}
	}
	var out []string
	for _, a := range slices.Sorted(mapsKeys(reverted)) {
		if n := reverted[a]; n >= 2 {
			out = append(out, fmt.Sprintf("%s was reverted %d times in the last 30 days: check why before changing it again", a, n))
		}
	}
	for _, a := range slices.Sorted(mapsKeys(total)) {
		if n := total[a]; n >= 3 && escalated[a]*2 > n {
			out = append(out, fmt.Sprintf("%d of %d similar traces in %s escalated to a higher tier", escalated[a], n, a))
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

func mapsKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// summarize is the TL;DR: how many traces, and the summaries of the top
// three with their ids.
func summarize(ps []Precedent) string {
	if len(ps) == 0 {
		return "No relevant traces found for these areas and files."
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Found %d relevant traces.", len(ps))
	for _, p := range ps[:min(3, len(ps))] {
		if sum, _ := p.Trace["summary"].(string); sum != "" {
			fmt.Fprintf(&sb, " %s [%v].", strings.TrimRight(sum, ". "), p.Trace["id"])
		}
	}
	return sb.String()
}

func round3(f float64) float64 { return float64(int(f*1000+0.5)) / 1000 }

// traceAreas are the trace's areas: content.areas, else its tags.
func traceAreas(it *h4r.Item) []string {
	if a := stringList(it.Content["areas"]); len(a) > 0 {
		return a
	}
	return it.Metadata.Tags
}

// traceFiles are the paths of content.files, and the files a decision
// trace links to.
func traceFiles(it *h4r.Item) []string {
	var out []string
	for _, l := range it.Links {
		if l.TargetType == h4r.TargetFile {
			out = append(out, l.Target)
		}
	}
	files, _ := it.Content["files"].([]any)
	for _, f := range files {
		if m, ok := f.(map[string]any); ok {
			if p, ok := m["path"].(string); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

// traceText is the summary and the decisions' context and reasoning.
func traceText(it *h4r.Item) string {
	parts := []string{it.Text}
	decisions, _ := it.Content["decisions"].([]any)
	for _, d := range decisions {
		if m, ok := d.(map[string]any); ok {
			for _, k := range []string{"context", "reasoning"} {
				if s, ok := m[k].(string); ok {
					parts = append(parts, s)
				}
			}
		}
	}
	return strings.Join(parts, " ")
}

func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// stopWords are left out of word overlap.
func stopWord(w string) bool {
	switch w {
	case "the", "and", "for", "with", "from", "add", "into", "this", "that":
		return true
	}
	return false
}

// wordSet is the lower-case words of s of three letters or more, without
// stop words, in first-seen order.
func wordSet(s string) []string {
	var out []string
	for _, w := range words.Lower(s) {
		if len(w) >= 3 && !stopWord(w) && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

func overlap(a, b []string) []string {
	var out []string
	for _, w := range a {
		if slices.Contains(b, w) {
			out = append(out, w)
		}
	}
	return out
}
