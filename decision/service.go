package decision

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/scs"
)

// Store is what the service needs of an item store (store/sqlite,
// store/postgres, or the app's mirrored store).
type Store interface {
	Upsert(ctx context.Context, items []h4r.Item) ([]string, error)
	Get(ctx context.Context, id string) (*h4r.Item, error)
	Find(ctx context.Context, q h4r.ItemQuery) ([]*h4r.Item, error)
}

// Slicer applies policy and budgets (scs.Slicer): every answer passes it,
// and is built from the items as it cleared them (scs.Cleared), never
// from the stored ones.
type Slicer interface {
	Slice(ctx context.Context, spec h4r.Specialist, items []*h4r.Item, limits scs.Limits) scs.Outcome
	Clear(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []scs.Cleared
}

// Service records decision traces and events and answers the
// precedent queries, through the policy slicer.
type Service struct {
	store  Store
	slicer Slicer
	limits scs.Limits
	now    func() time.Time
}

// Option configures a Service.
type Option func(*Service)

// WithBudget sets the budget an answer is sliced with (default 1 MiB,
// 256k tokens, 1000 items).
func WithBudget(l scs.Limits) Option { return func(s *Service) { s.limits = l } }

// WithClock sets the clock that stamps traces and events given without a
// timestamp.
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// New returns a service over a store and a slicer.
func New(store Store, slicer Slicer, opts ...Option) *Service {
	s := &Service{store: store, slicer: slicer, now: time.Now,
		limits: scs.Limits{MaxBytes: 1 << 20, MaxTokens: 256 << 10, MaxItems: 1000}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// RecordTraces validates traces (fields named under field[i], or without
// a prefix when single), checks that every decision they link to exists
// (in the store or earlier in the same batch) and writes them in one
// batch. It returns the ids, generated where absent.
func (s *Service) RecordTraces(ctx context.Context, traces []Trace, batchField string, single bool) ([]string, error) {
	now := s.now()
	items := make([]h4r.Item, len(traces))
	inBatch := map[string]bool{}
	for i, t := range traces {
		field := fmt.Sprintf("%s[%d]", batchField, i)
		if single {
			field = ""
		}
		p, err := Prepare(t, field, now)
		if err != nil {
			return nil, err
		}
		if items[i], err = p.Item(); err != nil {
			return nil, err
		}
		if err := s.checkDecisionLinks(ctx, p, field, inBatch); err != nil {
			return nil, err
		}
		if id := string(p.Trace.OutcomeEventID); id != "" {
			if err := s.mustExist(ctx, id, KindEvent, at(field, "outcome_event_id"), "outcome event"); err != nil {
				return nil, err
			}
		}
		inBatch[items[i].ID] = true
	}
	return s.store.Upsert(ctx, items)
}

func at(field, name string) string {
	if field == "" {
		return name
	}
	return field + "." + name
}

// checkDecisionLinks refuses a link to a decision that does not exist.
func (s *Service) checkDecisionLinks(ctx context.Context, p *Prepared, field string, inBatch map[string]bool) error {
	for i, pc := range p.Precedents {
		if pc.DecisionID == "" || inBatch[pc.DecisionID] {
			continue
		}
		if err := s.mustExist(ctx, pc.DecisionID, KindTrace, fmt.Sprintf("%s[%d].decision_id", at(field, "precedent_cited"), i), "decision"); err != nil {
			return err
		}
	}
	for i, l := range p.Trace.Links {
		if l.TargetType != h4r.TargetDecision || inBatch[l.Target] {
			continue
		}
		if err := s.mustExist(ctx, l.Target, KindTrace, fmt.Sprintf("%s[%d].target", at(field, "links"), i), "decision"); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) mustExist(ctx context.Context, id, kind, field, what string) error {
	it, err := s.store.Get(ctx, id)
	switch {
	case h4r.ErrorCode(err) == h4r.ENOTFOUND:
		return h4r.Errorf(h4r.EINVALID, field, "no %s with id %q: record it first", what, id)
	case err != nil:
		return fmt.Errorf("checking %s %q: %w", what, id, err)
	case it.Kind != kind:
		return h4r.Errorf(h4r.EINVALID, field, "%q is a %s item, not a %s", id, it.Kind, what)
	}
	return nil
}

// RecordEvents validates events, checks that the decision each names
// exists, and writes them in one batch.
func (s *Service) RecordEvents(ctx context.Context, events []Event, batchField string, single bool) ([]string, error) {
	now := s.now()
	items := make([]h4r.Item, len(events))
	for i, e := range events {
		field := fmt.Sprintf("%s[%d]", batchField, i)
		if single {
			field = ""
		}
		e, err := PrepareEvent(e, field, now)
		if err != nil {
			return nil, err
		}
		if e.DecisionID != "" {
			if err := s.mustExist(ctx, e.DecisionID, KindTrace, at(field, "decision_id"), "decision"); err != nil {
				return nil, err
			}
		}
		if items[i], err = e.Item(); err != nil {
			return nil, err
		}
	}
	return s.store.Upsert(ctx, items)
}

// Answer is the answer of a precedent query: the decision traces the
// caller may see, newest first, each with its outcome when asked, and how
// many policy withheld (never which).
type Answer struct {
	DecisionTraces []Wire `json:"decision_traces"`
	Withheld       int    `json:"withheld"`
	// Pattern is set by decisions_by_pattern: how many decisions the
	// caller may see apply the pattern ("used in N decisions").
	Pattern *PatternUse `json:"pattern,omitempty"`
}

// PatternUse counts the decisions that apply a pattern.
type PatternUse struct {
	ID          string `json:"id"`
	UsedIn      int    `json:"used_in_decisions"`
	CountCapped bool   `json:"count_capped,omitempty"` // more than the store was asked for: UsedIn is a lower bound
}

// Citing answers "decisions that cited epic (or decision) id as
// precedent" (findDecisionsByCitedPrecedent).
func (s *Service) Citing(ctx context.Context, spec h4r.Specialist, id string, limit int) (*Answer, error) {
	return s.query(ctx, spec, h4r.ItemQuery{Filters: h4r.Filters{Kinds: []string{KindTrace}}, Limit: limit,
		Linked: &h4r.LinkMatch{Target: id, Types: []string{h4r.LinkCitesPrecedent}}}, false)
}

// ApplyingPattern answers "decisions that applied pattern id"
// (findDecisionsByPattern): applies_pattern links to it, whatever the
// target type (a memory, a pattern).
// The answer counts the decisions applying it that the caller may see
// (policy's withheld ones are in Withheld, never in the count).
func (s *Service) ApplyingPattern(ctx context.Context, spec h4r.Specialist, id string, limit int) (*Answer, error) {
	q := h4r.ItemQuery{Filters: h4r.Filters{Kinds: []string{KindTrace}}, Limit: limit,
		Linked: &h4r.LinkMatch{Target: id, Types: []string{h4r.LinkAppliesPattern}}}
	ans, err := s.query(ctx, spec, q, false)
	if err != nil {
		return nil, err
	}
	use := &PatternUse{ID: id, UsedIn: len(ans.DecisionTraces)}
	if len(ans.DecisionTraces) == limit {
		q.Limit = h4r.MaxFindLimit
		all, err := s.store.Find(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("counting the decisions applying pattern %q: %w", id, err)
		}
		use.UsedIn = len(s.slicer.Clear(ctx, spec, all))
		use.CountCapped = len(all) == h4r.MaxFindLimit
	}
	ans.Pattern = use
	return ans, nil
}

// FileHistory answers "file assignment decisions for a file, with their
// outcomes" (findFileAssignmentHistory).
func (s *Service) FileHistory(ctx context.Context, spec h4r.Specialist, file string, limit int) (*Answer, error) {
	return s.query(ctx, spec, h4r.ItemQuery{
		Filters: h4r.Filters{Kinds: []string{KindTrace}, Metadata: map[string]any{"decision_type": TypeFileAssignment}}, Limit: limit,
		Linked: &h4r.LinkMatch{Target: file, TargetType: h4r.TargetFile}}, true)
}

// Reviews answers "review decisions", newest first, each with its
// outcome; status (approved, needs_changes) narrows them when given.
func (s *Service) Reviews(ctx context.Context, spec h4r.Specialist, status string, limit int) (*Answer, error) {
	md := map[string]any{"decision_type": TypeReviewApproval}
	if status != "" {
		md["decision_status"] = status
	}
	return s.query(ctx, spec, h4r.ItemQuery{Filters: h4r.Filters{Kinds: []string{KindTrace}, Metadata: md}, Limit: limit}, true)
}

// ReviewsRejected answers "review decisions that asked for changes"
// (decision.status needs_changes), newest first.
func (s *Service) ReviewsRejected(ctx context.Context, spec h4r.Specialist, limit int) (*Answer, error) {
	return s.query(ctx, spec, h4r.ItemQuery{Filters: h4r.Filters{Kinds: []string{KindTrace},
		Metadata: map[string]any{"decision_type": TypeReviewApproval, "decision_status": "needs_changes"}}, Limit: limit}, true)
}

// ByEpic answers "the decisions of epic id", newest first.
func (s *Service) ByEpic(ctx context.Context, spec h4r.Specialist, epic string, limit int) (*Answer, error) {
	return s.query(ctx, spec, h4r.ItemQuery{Filters: h4r.Filters{Kinds: []string{KindTrace},
		Metadata: map[string]any{"epic_id": epic}}, Limit: limit}, true)
}

// query finds, slices and, when withOutcome, attaches outcomes. Policy
// may withhold some of what the store finds, so the query asks for more
// (doubling, up to h4r.MaxFindLimit) until limit visible decisions are
// found or the store has no more.
func (s *Service) query(ctx context.Context, spec h4r.Specialist, q h4r.ItemQuery, withOutcome bool) (*Answer, error) {
	limit, err := q.FindLimit()
	if err != nil {
		return nil, err
	}
	var items []*h4r.Item
	var out scs.Outcome
	for ask := limit; ; ask = min(ask*2, h4r.MaxFindLimit) {
		q.Limit = ask
		if items, err = s.store.Find(ctx, q); err != nil {
			return nil, err
		}
		out = s.slicer.Slice(ctx, spec, items, s.limits)
		kept := 0
		for _, v := range out.Verdicts {
			if v.Reason == h4r.ReasonKept {
				kept++
			}
		}
		if kept >= limit || len(items) < ask || ask == h4r.MaxFindLimit {
			break
		}
	}
	ans := &Answer{DecisionTraces: []Wire{}}
	for _, v := range out.Verdicts {
		c, kept := v.Cleared()
		if !kept {
			if v.Reason == h4r.ReasonPolicy {
				ans.Withheld++
			}
			continue
		}
		if len(ans.DecisionTraces) == limit {
			break
		}
		w := FromCleared(c, s.visibleLinks(ctx, spec, c.Item().Links))
		if withOutcome {
			o, err := s.outcome(ctx, spec, c)
			if err != nil {
				return nil, err
			}
			w["outcome"] = o
		}
		ans.DecisionTraces = append(ans.DecisionTraces, w)
	}
	return ans, nil
}

// visibleLinks drops links to items the caller may not see: a link's
// target id would otherwise tell of an item policy withholds. Links to
// entities that are no items (files, epics) stay.
func (s *Service) visibleLinks(ctx context.Context, spec h4r.Specialist, links []h4r.Link) []h4r.Link {
	var targets []*h4r.Item
	var at []int
	for i, l := range links {
		if it, err := s.store.Get(ctx, l.Target); err == nil {
			targets = append(targets, it)
			at = append(at, i)
		}
	}
	if len(targets) == 0 {
		return links
	}
	visible := map[string]bool{}
	for _, c := range s.slicer.Clear(ctx, spec, targets) {
		visible[c.ID()] = true
	}
	hidden := map[int]bool{}
	for j, it := range targets {
		if !visible[it.ID] {
			hidden[at[j]] = true
		}
	}
	out := make([]h4r.Link, 0, len(links))
	for i, l := range links {
		if !hidden[i] {
			out = append(out, l)
		}
	}
	return out
}

// VisibleLinks is links without those to items spec may not see.
func (s *Service) VisibleLinks(ctx context.Context, spec h4r.Specialist, links []h4r.Link) []h4r.Link {
	return s.visibleLinks(ctx, spec, links)
}

// Visible returns item id as spec may see it; one it may not see is
// not_found, with the answer of one that does not exist.
func (s *Service) Visible(ctx context.Context, spec h4r.Specialist, id string) (scs.Cleared, error) {
	notFound := h4r.Errorf(h4r.ENOTFOUND, "id", "no item with id %q", id)
	it, err := s.store.Get(ctx, id)
	switch {
	case h4r.ErrorCode(err) == h4r.ENOTFOUND:
		return scs.Cleared{}, notFound
	case err != nil:
		return scs.Cleared{}, fmt.Errorf("reading item %q: %w", id, err)
	}
	cleared := s.slicer.Clear(ctx, spec, []*h4r.Item{it})
	if len(cleared) == 0 {
		return scs.Cleared{}, notFound
	}
	return cleared[0], nil
}

// outcome is the decision's outcome event as the caller may see it: the
// one outcome_event_id names (unless redacted), else the newest event
// linked outcome_of to it; nil when there is none or policy withholds it.
func (s *Service) outcome(ctx context.Context, spec h4r.Specialist, trace scs.Cleared) (Wire, error) {
	var ev *h4r.Item
	if id, _ := trace.Item().Content["outcome_event_id"].(string); id != "" {
		it, err := s.store.Get(ctx, id)
		if err != nil && h4r.ErrorCode(err) != h4r.ENOTFOUND {
			return nil, err
		}
		ev = it
	}
	if ev == nil {
		found, err := s.store.Find(ctx, h4r.ItemQuery{Filters: h4r.Filters{Kinds: []string{KindEvent}}, Limit: 1,
			Linked: &h4r.LinkMatch{Target: trace.ID(), Types: []string{h4r.LinkOutcomeOf}}})
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, nil
		}
		ev = found[0]
	}
	out := s.slicer.Slice(ctx, spec, []*h4r.Item{ev}, s.limits)
	if c, kept := out.Verdicts[0].Cleared(); kept {
		return FromCleared(c, nil), nil
	}
	return nil, nil
}

// EntityLink is a link as getDecisionTraceWithContext answers it.
type EntityLink struct {
	EntityType string  `json:"entityType"`
	EntityID   string  `json:"entityId"`
	LinkType   string  `json:"linkType"`
	Context    *string `json:"context"`
	Strength   float64 `json:"strength"`
}

// WithContext is one decision with its links and outcome.
type WithContext struct {
	Trace   Wire         `json:"trace"`
	Links   []EntityLink `json:"links"`
	Outcome Wire         `json:"outcome"`
}

// Get answers "one decision with its links and outcome"
// (getDecisionTraceWithContext). A decision the caller may not see is
// not_found, with the very answer of one that does not exist.
func (s *Service) Get(ctx context.Context, spec h4r.Specialist, id string) (*WithContext, error) {
	notFound := h4r.Errorf(h4r.ENOTFOUND, "id", "no decision trace with id %q", id)
	it, err := s.store.Get(ctx, id)
	switch {
	case h4r.ErrorCode(err) == h4r.ENOTFOUND:
		return nil, notFound
	case err != nil:
		return nil, fmt.Errorf("reading decision trace %q: %w", id, err)
	case it.Kind != KindTrace:
		return nil, notFound
	}
	out := s.slicer.Slice(ctx, spec, []*h4r.Item{it}, s.limits)
	c, kept := out.Verdicts[0].Cleared()
	if !kept {
		return nil, notFound
	}
	links := s.visibleLinks(ctx, spec, c.Item().Links)
	wc := &WithContext{Trace: FromCleared(c, nil), Links: []EntityLink{}}
	for _, l := range links {
		el := EntityLink{EntityType: l.TargetType, EntityID: l.Target, LinkType: l.Type, Strength: l.Strength}
		if el.EntityType == "" {
			el.EntityType = "item"
		}
		if l.Context != "" {
			el.Context = &l.Context
		}
		wc.Links = append(wc.Links, el)
	}
	if wc.Outcome, err = s.outcome(ctx, spec, c); err != nil {
		return nil, err
	}
	return wc, nil
}

// decisionStatus is decision.status when the decision is an object with a
// string status (review_approval: approved, needs_changes).
func decisionStatus(decision json.RawMessage) string {
	var d struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(decision, &d) // not an object: no status
	return d.Status
}
