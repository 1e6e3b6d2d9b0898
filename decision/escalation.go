package decision

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/scs"
)

// EscalationRequest is POST /v1/escalation's body.
type EscalationRequest struct {
	Repo        string   `json:"repo"`
	Area        string   `json:"area"`
	CurrentTier int      `json:"current_tier"`
	Iterations  int      `json:"iterations"`
	Errors      []string `json:"errors,omitempty"`
	TaskType    string   `json:"task_type,omitempty"`
}

// Actions of a recommendation.
const (
	ActionEscalate = "escalate"
	ActionContinue = "continue"
	ActionAskUser  = "ask_user"
)

// Recommendation is what to do now.
type Recommendation struct {
	Action     string  `json:"action"`
	TargetTier int     `json:"target_tier"`
	Confidence float64 `json:"confidence"`
}

// SimilarCase is a past trace like this one and how it ended.
type SimilarCase struct {
	TraceID          string `json:"trace_id"`
	SHA              string `json:"sha"`
	Outcome          string `json:"outcome"`
	IterationsBefore int    `json:"iterations_before"`
	IterationsAfter  int    `json:"iterations_after"`
}

// Alternative is the other course and why it might do.
type AlternativeAction struct {
	Action    string `json:"action"`
	Reasoning string `json:"reasoning"`
}

// EscalationHint is POST /v1/escalation's answer.
type EscalationHint struct {
	Recommendation Recommendation     `json:"recommendation"`
	Reasoning      string             `json:"reasoning"`
	SimilarCases   []SimilarCase      `json:"similar_cases"`
	Alternative    *AlternativeAction `json:"alternative"`
}

// Outcomes of a similar case.
const (
	OutcomeResolvedAfterEscalation   = "resolved_after_escalation"
	OutcomeUnresolvedAfterEscalation = "unresolved_after_escalation"
	OutcomeResolvedWithoutEscalation = "resolved_without_escalation"
	OutcomeUnresolved                = "unresolved"
)

// minErrorSimilarity is how alike (word overlap) a trace's errors must be
// to the request's for the trace to count as similar, when errors are
// given.
const minErrorSimilarity = 0.3

// case_ is a similar trace, read.
type case_ struct {
	SimilarCase
	escalated  bool
	toTier     int
	resolved   bool
	similarity float64
}

// Escalation recommends whether to escalate from the current tier, from
// the recorded escalations and outcomes of similar commit traces (same
// repo and area; errors alike; the same task type when given) that the
// caller may see. A trace that escalated from the current tier and then
// landed resolved after escalation; one that did not escalate and landed
// resolved without it; reverted or pending ones did not resolve. With no
// such history it answers continue, with low confidence, and says why.
func (s *Service) Escalation(ctx context.Context, spec h4r.Specialist, req EscalationRequest) (*EscalationHint, error) {
	switch {
	case strings.TrimSpace(req.Repo) == "":
		return nil, h4r.Errorf(h4r.EINVALID, "repo", "repo is required (org/repo)")
	case strings.TrimSpace(req.Area) == "":
		return nil, h4r.Errorf(h4r.EINVALID, "area", "area is required (pkg/auth)")
	case req.CurrentTier < 0 || req.CurrentTier > 16:
		return nil, h4r.Errorf(h4r.EINVALID, "current_tier", "current_tier must be between 0 and 16, got %d", req.CurrentTier)
	case req.Iterations < 0:
		return nil, h4r.Errorf(h4r.EINVALID, "iterations", "iterations must be >= 0, got %d", req.Iterations)
	case len(req.Errors) > 64:
		return nil, h4r.Errorf(h4r.EINVALID, "errors", "at most 64 errors, got %d", len(req.Errors))
	}
	switch req.TaskType {
	case "", "bug_fix", "feature", "refactor":
	default:
		return nil, h4r.Errorf(h4r.EINVALID, "task_type", "unknown task_type %q (want bug_fix, feature or refactor)", req.TaskType)
	}
	cands, err := s.commitTraces(ctx, req.Repo, "", []string{req.Area})
	if err != nil {
		return nil, err
	}
	// Cases are read from the traces as cleared for the caller, the area
	// included: a redacted value neither counts nor shows.
	var cases []case_
	for _, c := range s.slicer.Clear(ctx, spec, cands) {
		if !slices.Contains(traceAreas(c.Item()), req.Area) {
			continue
		}
		if cs, ok := readCase(c, req); ok {
			cases = append(cases, cs)
		}
	}
	slices.SortStableFunc(cases, func(a, b case_) int {
		if a.similarity != b.similarity {
			if a.similarity > b.similarity {
				return -1
			}
			return 1
		}
		return strings.Compare(a.TraceID, b.TraceID)
	})
	return recommend(req, cases), nil
}

// readCase reads a trace, as cleared for the caller, as a case for req,
// when it is similar enough.
func readCase(cleared scs.Cleared, req EscalationRequest) (case_, bool) {
	it := cleared.Item()
	if req.TaskType != "" {
		tt, _ := it.Content["task_type"].(string)
		if mt, ok := it.Metadata.Extra["task_type"].(string); ok && tt == "" {
			tt = mt
		}
		if tt != "" && tt != req.TaskType {
			return case_{}, false
		}
	}
	sim := 1.0
	if len(req.Errors) > 0 {
		sim = errorSimilarity(req.Errors, traceErrors(it))
		if sim < minErrorSimilarity {
			return case_{}, false
		}
	}
	status, _ := it.Content["status"].(string)
	sha, _ := it.Content["sha"].(string)
	total := intOf(it.Content["iterations"])
	c := case_{SimilarCase: SimilarCase{TraceID: TraceID(it.Kind, it.Content, it.ID), SHA: sha}, similarity: sim, resolved: status == "landed"}
	esc, _ := it.Content["escalations"].([]any)
	for _, e := range esc {
		m, ok := e.(map[string]any)
		if !ok || intOf(m["from_tier"]) != req.CurrentTier {
			continue
		}
		c.escalated, c.toTier = true, intOf(m["to_tier"])
		c.IterationsBefore = intOf(m["iteration"])
		c.IterationsAfter = max(total-c.IterationsBefore, 0)
		break
	}
	switch {
	case c.escalated && c.resolved:
		c.Outcome = OutcomeResolvedAfterEscalation
	case c.escalated:
		c.Outcome = OutcomeUnresolvedAfterEscalation
	case c.resolved:
		c.Outcome, c.IterationsBefore = OutcomeResolvedWithoutEscalation, total
	default:
		c.Outcome, c.IterationsBefore = OutcomeUnresolved, total
	}
	return c, true
}

// recommend weighs the cases. Each course's success rate is shrunk
// towards one half by two pseudo-cases, so that one lucky case is not
// certainty; confidence is the chosen course's shrunk rate scaled by how
// much evidence there is (n/(n+3)).
func recommend(req EscalationRequest, cases []case_) *EscalationHint {
	h := &EscalationHint{SimilarCases: []SimilarCase{}}
	for _, c := range cases[:min(len(cases), 10)] {
		h.SimilarCases = append(h.SimilarCases, c.SimilarCase)
	}
	if len(cases) == 0 {
		h.Recommendation = Recommendation{Action: ActionContinue, TargetTier: req.CurrentTier, Confidence: 0.1}
		h.Reasoning = fmt.Sprintf("No recorded history of similar cases in %s at tier %d (same repo and area, similar errors): nothing to learn from, so keep going at the current tier and use your own judgement.", req.Area, req.CurrentTier)
		return h
	}
	var esc, escOK, stay, stayOK int
	var before float64
	tiers := map[int]int{}
	for _, c := range cases {
		if c.escalated {
			esc++
			tiers[c.toTier]++
			before += float64(c.IterationsBefore)
			if c.resolved {
				escOK++
			}
		} else {
			stay++
			if c.resolved {
				stayOK++
			}
		}
	}
	shrunk := func(ok, n int) float64 { return (float64(ok) + 1) / (float64(n) + 2) }
	rate := func(ok, n int) string {
		if n == 0 {
			return "no cases"
		}
		return fmt.Sprintf("%d%% of %d", (100*ok+n/2)/n, n)
	}
	evidence := func(n int) float64 { return float64(n) / float64(n+3) }
	target := req.CurrentTier + 1
	best := 0
	for t, n := range tiers {
		if n > best || n == best && t < target {
			target, best = t, n
		}
	}
	escRate, stayRate := shrunk(escOK, esc), shrunk(stayOK, stay)
	escText := fmt.Sprintf("%d similar cases in %s escalated from tier %d→%d", esc, req.Area, req.CurrentTier, target)
	if esc > 0 {
		escText += fmt.Sprintf(" after avg %.1f iterations; escalation resolved %s", before/float64(esc), rate(escOK, esc))
	}
	stayText := fmt.Sprintf("staying at tier %d resolved %s similar cases", req.CurrentTier, rate(stayOK, stay))
	switch {
	case esc > 0 && escRate > stayRate:
		h.Recommendation = Recommendation{Action: ActionEscalate, TargetTier: target, Confidence: round3(escRate * evidence(esc))}
		h.Reasoning = escText + "; " + stayText + "."
		h.Alternative = &AlternativeAction{Action: ActionContinue, Reasoning: stayText}
	case stayRate >= 0.5:
		h.Recommendation = Recommendation{Action: ActionContinue, TargetTier: req.CurrentTier, Confidence: round3(stayRate * evidence(stay))}
		h.Reasoning = stayText + "; " + escText + "."
		if esc > 0 {
			h.Alternative = &AlternativeAction{Action: ActionEscalate, Reasoning: escText}
		}
	default:
		h.Recommendation = Recommendation{Action: ActionAskUser, TargetTier: req.CurrentTier, Confidence: round3((1 - max(escRate, stayRate)) * evidence(len(cases)))}
		h.Reasoning = "Neither course has worked well in similar cases: " + stayText + "; " + escText + ". Ask the user."
		h.Alternative = &AlternativeAction{Action: ActionEscalate, Reasoning: escText}
	}
	return h
}

// traceErrors are the messages of content.errors.
func traceErrors(it *h4r.Item) []string {
	var out []string
	errs, _ := it.Content["errors"].([]any)
	for _, e := range errs {
		if m, ok := e.(map[string]any); ok {
			if s, ok := m["message"].(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// errorSimilarity is the mean, over the request's errors, of the best
// word overlap (Jaccard) with one of the trace's errors.
func errorSimilarity(asked, recorded []string) float64 {
	if len(asked) == 0 || len(recorded) == 0 {
		return 0
	}
	var sum float64
	for _, a := range asked {
		wa := wordSet(a)
		best := 0.0
		for _, r := range recorded {
			wr := wordSet(r)
			inter := len(overlap(wa, wr))
			union := len(wa) + len(wr) - inter
			if union > 0 {
				best = max(best, float64(inter)/float64(union))
			}
		}
		sum += best
	}
	return sum / float64(len(asked))
}

func intOf(v any) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case int:
		return x
	case int64:
		return int(x)
	}
	return 0
}
