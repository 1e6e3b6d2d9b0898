package decision

import (
	"context"
	"strings"

	"github.com/h4r/h4r"
)

// Presets: the `swarm query --preset` names of the decision-trace format,
// shared by the HTTP route and the CLI.
const (
	PresetByPrecedent     = "decision_traces_by_precedent"
	PresetByPattern       = "decisions_by_pattern"
	PresetFileHistory     = "file_assignment_history"
	PresetReviews         = "review_decisions"
	PresetReviewsRejected = "review_decisions_rejected"
	PresetByEpic          = "decisions_by_epic"
)

// Presets lists the presets, in the order help shows them.
func Presets() []string {
	return []string{PresetByPrecedent, PresetByPattern, PresetFileHistory, PresetReviews, PresetReviewsRejected, PresetByEpic}
}

// PresetQuery is one preset with its parameters.
type PresetQuery struct {
	Preset   string
	Epic     string // decision_traces_by_precedent, decisions_by_epic
	Decision string // decision_traces_by_precedent, instead of Epic
	Pattern  string // decisions_by_pattern
	File     string // file_assignment_history
	Status   string // review_decisions: approved, needs_changes (empty: all)
	Limit    int
}

// Preset answers q; a missing parameter is invalid_argument naming it.
func (s *Service) Preset(ctx context.Context, spec h4r.Specialist, q PresetQuery) (*Answer, error) {
	need := func(name, v string) error {
		if strings.TrimSpace(v) == "" {
			return h4r.Errorf(h4r.EINVALID, name, "preset %s needs %s", q.Preset, name)
		}
		return nil
	}
	switch q.Preset {
	case PresetByPrecedent:
		id := q.Epic
		if id == "" {
			id = q.Decision
		}
		if err := need("epic", id); err != nil {
			return nil, err
		}
		return s.Citing(ctx, spec, id, q.Limit)
	case PresetByPattern:
		if err := need("pattern", q.Pattern); err != nil {
			return nil, err
		}
		return s.ApplyingPattern(ctx, spec, q.Pattern, q.Limit)
	case PresetFileHistory:
		if err := need("file", q.File); err != nil {
			return nil, err
		}
		return s.FileHistory(ctx, spec, q.File, q.Limit)
	case PresetReviews:
		if q.Status != "" && q.Status != "approved" && q.Status != "needs_changes" {
			return nil, h4r.Errorf(h4r.EINVALID, "status", "status is approved or needs_changes, got %q", q.Status)
		}
		return s.Reviews(ctx, spec, q.Status, q.Limit)
	case PresetReviewsRejected:
		return s.ReviewsRejected(ctx, spec, q.Limit)
	case PresetByEpic:
		if err := need("epic", q.Epic); err != nil {
			return nil, err
		}
		return s.ByEpic(ctx, spec, q.Epic, q.Limit)
	case "":
		return nil, h4r.Errorf(h4r.EINVALID, "preset", "preset is required (one of %s)", strings.Join(Presets(), ", "))
	}
	return nil, h4r.Errorf(h4r.EINVALID, "preset", "unknown preset %q (want one of %s)", q.Preset, strings.Join(Presets(), ", "))
}
