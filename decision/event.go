package decision

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/h4r/h4r"
)

// Event is one of the "current events" of docs/decisions.md (what happened:
// subtask_outcome, worker_spawned, …). An event naming a decision_id is
// that decision's outcome: its item links to the decision (outcome_of).
type Event struct {
	ID         string          `json:"id,omitempty"`
	Type       string          `json:"type"`
	EpicID     string          `json:"epic_id,omitempty"`
	BeadID     string          `json:"bead_id,omitempty"`
	DecisionID string          `json:"decision_id,omitempty"`
	Success    *bool           `json:"success,omitempty"`
	DurationMS *int64          `json:"duration_ms,omitempty"`
	ErrorCount *int            `json:"error_count,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	Timestamp  Time            `json:"timestamp"`
	Metadata   *h4r.Metadata   `json:"metadata,omitempty"`
}

// PrepareEvent validates e and fills its id (ev-…) and timestamp.
func PrepareEvent(e Event, field string, now time.Time) (Event, error) {
	at := func(name string) string {
		if field == "" {
			return name
		}
		return field + "." + name
	}
	if e.ID == "" {
		e.ID = NewID("ev")
	}
	if e.Timestamp.IsZero() {
		e.Timestamp = Time{now.UTC()}
	}
	switch {
	case strings.TrimSpace(e.Type) == "":
		return e, h4r.Errorf(h4r.EINVALID, at("type"), "event type is required (subtask_outcome, worker_spawned, …)")
	case len(e.Type) > maxNameBytes:
		return e, h4r.Errorf(h4r.EINVALID, at("type"), "event type is longer than %d bytes", maxNameBytes)
	case len(e.DecisionID) > h4r.MaxIDBytes:
		return e, h4r.Errorf(h4r.EINVALID, at("decision_id"), "decision_id is longer than %d bytes", h4r.MaxIDBytes)
	}
	it, err := e.Item()
	if err != nil {
		return e, err
	}
	return e, it.Validate(field)
}

// Item maps the event to its item: kind event, the event as content, its
// type, epic and bead as metadata, and an outcome_of link to its decision.
func (e Event) Item() (h4r.Item, error) {
	content, err := toMap(e)
	if err != nil {
		return h4r.Item{}, err
	}
	delete(content, "metadata")
	var md h4r.Metadata
	if e.Metadata != nil {
		md = *e.Metadata
	}
	md.CreatedAt = e.Timestamp.Time
	if md.Extra == nil {
		md.Extra = map[string]any{}
	}
	md.Extra["event_type"] = e.Type
	for k, v := range map[string]string{"epic_id": e.EpicID, "bead_id": e.BeadID, "decision_id": e.DecisionID} {
		if v != "" {
			md.Extra[k] = v
		}
	}
	text := fmt.Sprintf("%s event", strings.ReplaceAll(e.Type, "_", " "))
	if e.EpicID != "" {
		text += " in epic " + e.EpicID
	}
	if e.Success != nil {
		text += fmt.Sprintf(", success %v", *e.Success)
	}
	var links []h4r.Link
	if e.DecisionID != "" {
		links = append(links, h4r.Link{Type: h4r.LinkOutcomeOf, Target: e.DecisionID, TargetType: h4r.TargetDecision, Strength: 1})
	}
	return h4r.Item{ID: e.ID, Kind: KindEvent, Text: text, Content: content, Metadata: md, Links: links}, nil
}
