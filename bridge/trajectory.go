package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// KindTrajectory is the item kind of a past trajectory.
const KindTrajectory = "trajectory"

// Trajectory is a past session's reasoning as the bridge matches it. As
// an item: kind "trajectory", its fields in content, domain and session in
// metadata, and its text the description followed by its concepts, so
// that the full-text index finds it by a rephrased problem too.
type Trajectory struct {
	ID           string   `json:"trajectory_id"`
	SessionID    string   `json:"session_id"`
	Description  string   `json:"description"`
	Domain       string   `json:"domain,omitempty"`
	ToolSequence []string `json:"tool_sequence,omitempty"`
	SuccessScore float64  `json:"success_score"`
	QualityScore float64  `json:"quality_score"`
}

// DecodeTrajectories decodes a POST /v1/bridge/trajectories body: one
// trajectory or {"trajectories": [...]}; errors name the field.
func DecodeTrajectories(body []byte) ([]Trajectory, error) {
	var probe map[string]json.RawMessage
	if json.Unmarshal(body, &probe) == nil {
		if _, isBatch := probe["trajectories"]; isBatch {
			var batch struct {
				Trajectories []Trajectory `json:"trajectories"`
			}
			if err := jsonstrict.Decode(body, &batch, ""); err != nil {
				return nil, err
			}
			return batch.Trajectories, validateAll(batch.Trajectories, "trajectories")
		}
	}
	var one Trajectory
	if err := jsonstrict.Decode(body, &one, ""); err != nil {
		return nil, err
	}
	return []Trajectory{one}, validateAll([]Trajectory{one}, "")
}

func validateAll(ts []Trajectory, field string) error {
	if field != "" && len(ts) == 0 {
		return h4r.Errorf(h4r.EINVALID, field, "at least one trajectory is required")
	}
	for i, t := range ts {
		at := func(name string) string {
			if field == "" {
				return name
			}
			return fmt.Sprintf("%s[%d].%s", field, i, name)
		}
		switch {
		case strings.TrimSpace(t.ID) == "":
			return h4r.Errorf(h4r.EINVALID, at("trajectory_id"), "trajectory_id is required")
		case strings.TrimSpace(t.Description) == "":
			return h4r.Errorf(h4r.EINVALID, at("description"), "description is required")
		case t.SuccessScore < 0 || t.SuccessScore > 1:
			return h4r.Errorf(h4r.EINVALID, at("success_score"), "success_score must be in [0, 1], got %v", t.SuccessScore)
		case t.QualityScore < 0 || t.QualityScore > 1:
			return h4r.Errorf(h4r.EINVALID, at("quality_score"), "quality_score must be in [0, 1], got %v", t.QualityScore)
		}
	}
	return nil
}

// Item returns the trajectory as an item of kind trajectory. Policy
// metadata (restrictedToGroups, sensitivity…) is set by the caller on the
// returned item like on any other.
func (t Trajectory) Item() h4r.Item {
	concepts := TechExtractor{}.Extract(t.Description)
	tools := make([]any, len(t.ToolSequence))
	for i, s := range t.ToolSequence {
		tools[i] = s
	}
	return h4r.Item{
		ID:   t.ID,
		Kind: KindTrajectory,
		Text: t.Description + conceptsLine + strings.Join(concepts, " "),
		Content: map[string]any{
			"session_id": t.SessionID, "description": t.Description, "domain": t.Domain,
			"tool_sequence": tools, "success_score": t.SuccessScore, "quality_score": t.QualityScore,
		},
		Metadata: h4r.Metadata{Extra: map[string]any{"domain": strings.ToLower(t.Domain), "session_id": t.SessionID}},
	}
}

// Packer builds a pack (engine.Engine).
type Packer interface {
	Run(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan) (*h4r.Pack, error)
}

// EngineSource reads candidates through the engine: a keyword pack of
// kind trajectory for the call's words and concepts, built for the
// caller's specialist, so the policy slicer decides what is a candidate. A
// pack that could not read the store (a generator error) is a storage
// failure.
type EngineSource struct{ Packer Packer }

// Candidates implements Source.
func (s EngineSource) Candidates(ctx context.Context, spec h4r.Specialist, sig *Signature, limit int) ([]Candidate, error) {
	text := strings.Join(sig.KeyConcepts, " ")
	if len(text) > h4r.MaxQueryTextBytes {
		text = text[:strings.LastIndexByte(text[:h4r.MaxQueryTextBytes], ' ')+1]
	}
	zero, no := 0, false
	req := h4r.ContextRequest{
		Query: h4r.Query{Type: h4r.QueryKeyword, Text: text, Filters: map[string]any{"kind": KindTrajectory}},
		Limit: limit, TLDRSentences: &zero, IncludeGraph: &no, IncludeScores: &no,
		Budget: &h4r.Budget{MaxItems: limit},
	}
	plan, err := req.Plan("")
	if err != nil {
		return nil, fmt.Errorf("planning the trajectory read: %w", err)
	}
	p, err := s.Packer.Run(ctx, spec, plan)
	if err != nil {
		return nil, fmt.Errorf("reading trajectories: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for name, st := range p.Sources {
		if st.Error != "" {
			return nil, fmt.Errorf("reading trajectories: generator %s: %s", name, st.Error)
		}
	}
	out := make([]Candidate, 0, len(p.Results))
	for _, r := range p.Results {
		c := candidateOf(r.ID, r.Text, r.Content)
		c.Version = r.Metadata.Version
		out = append(out, c)
	}
	return out, nil
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func num(m map[string]any, k string) float64 { f, _ := m[k].(float64); return f }

// conceptsLine starts the concepts Trajectory.Item appends to the text.
const conceptsLine = "\nconcepts: "

// Resign returns a trajectory item with its signature as Trajectory.Item
// makes it now: the description (content.description, else the text
// before any concepts line) followed by its concepts by the current
// extractor. Everything else, policy metadata included, is kept. changed
// reports whether the text differs from the item's; an item of another
// kind, or without a description, is returned unchanged.
func Resign(it h4r.Item) (out h4r.Item, changed bool) {
	if it.Kind != KindTrajectory {
		return it, false
	}
	desc, _ := it.Content["description"].(string)
	if strings.TrimSpace(desc) == "" {
		desc, _, _ = strings.Cut(it.Text, conceptsLine)
	}
	if strings.TrimSpace(desc) == "" {
		return it, false
	}
	text := desc + conceptsLine + strings.Join(TechExtractor{}.Extract(desc), " ")
	if text == it.Text {
		return it, false
	}
	it.Text = text
	return it, true
}
