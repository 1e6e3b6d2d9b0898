package trace

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/h4r/h4r"
)

// Item kinds this package writes.
const (
	KindTrace    = "commit_trace"
	KindDecision = "decision"
	// KindDelivery records a GitHub delivery id already applied (webhook
	// dedupe shared by replicas). Its trust is 0, so the default policy
	// never delivers it to anyone.
	KindDelivery = "github_delivery"
)

// LinkPartOf links a decision item to its trace item.
const LinkPartOf = "part_of"

// Trust of a trace and its decisions by status: a precedent that held
// ranks above one still pending, and a reverted one below both. Reverted
// stays at 0.3, the default policy's low_trust threshold, so that a failed
// precedent is still found (it is a lesson) but never outranks one that
// landed.
const (
	TrustPending  = 0.5
	TrustLanded   = 0.8
	TrustReverted = 0.3
)

// TrustOf returns the trust of a trace of status s.
func TrustOf(s TraceStatus) float64 {
	switch s {
	case StatusLanded:
		return TrustLanded
	case StatusReverted:
		return TrustReverted
	}
	return TrustPending
}

// ItemID is the id of the item of a trace: {repo}@{sha}.
func ItemID(repo, sha string) string { return repo + "@" + strings.ToLower(sha) }

// DecisionItemID is the id of the item of a trace's i-th decision.
func DecisionItemID(traceItemID string, i int) string {
	return traceItemID + ":decision:" + strconv.Itoa(i)
}

// traceUUID is the document's UUID id of a trace that arrives without one,
// derived from its item id so that every replica derives the same.
func traceUUID(itemID string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("h4r:"+KindTrace+":"+itemID)).String()
}

// Items maps a normalized, validated trace to its item and one item per
// decision. It fills the trace's id, the decisions' ids and trace_id when
// missing, deterministically.
func Items(t *CommitTrace) ([]h4r.Item, error) {
	id := ItemID(t.Repo, t.SHA)
	if t.ID == "" {
		t.ID = traceUUID(id)
	}
	for i := range t.Decisions {
		d := &t.Decisions[i]
		if d.ID == "" {
			d.ID = uuid.NewSHA1(uuid.NameSpaceURL, []byte("h4r:"+KindDecision+":"+DecisionItemID(id, i))).String()
		}
		d.TraceID = t.ID
	}
	content, err := toMap(t)
	if err != nil {
		return nil, fmt.Errorf("encoding trace %s: %w", id, err)
	}
	trust := TrustOf(t.Status)
	meta := func(created time.Time, extra map[string]any) h4r.Metadata {
		m := h4r.Metadata{
			CreatedAt:          created,
			Trust:              &trust,
			Tags:               append([]string(nil), t.Areas...),
			RestrictedToGroups: append([]string(nil), t.RestrictedToGroups...),
			Source:             "trace",
			Extra: map[string]any{
				"repo": t.Repo, "sha": t.SHA, "branch": t.Branch, "author": t.Author,
				"mode": string(t.Mode), "status": string(t.Status),
			},
		}
		for k, v := range extra {
			m.Extra[k] = v
		}
		return m
	}
	items := []h4r.Item{{
		ID:       id,
		Kind:     KindTrace,
		Text:     t.Summary,
		Content:  content,
		Metadata: meta(t.Timestamp, map[string]any{"decisions": len(t.Decisions)}),
	}}
	for i, d := range t.Decisions {
		dc, err := toMap(d)
		if err != nil {
			return nil, fmt.Errorf("encoding decision %d of %s: %w", i, id, err)
		}
		created := d.Timestamp
		if created.IsZero() {
			created = t.Timestamp
		}
		extra := map[string]any{"trace_id": t.ID, "trace_item": id, "category": string(d.Category), "risk": string(d.Risk)}
		if d.Area != "" {
			extra["area"] = d.Area
		}
		items = append(items, h4r.Item{
			ID:       DecisionItemID(id, i),
			Kind:     KindDecision,
			Text:     decisionText(d),
			Content:  dc,
			Metadata: meta(created, extra),
			Links:    []h4r.Link{{Type: LinkPartOf, Target: id, Strength: 1}},
		})
	}
	return items, nil
}

// decisionText is what search indexes of a decision: what it was about,
// what was chosen and why.
func decisionText(d Decision) string {
	parts := []string{d.Context}
	if d.Selected >= 0 && d.Selected < len(d.Options) {
		parts = append(parts, "Chose: "+d.Options[d.Selected].Description)
	}
	if d.Reasoning != "" {
		parts = append(parts, d.Reasoning)
	}
	return strings.Join(parts, ". ")
}

// FromItem decodes the trace an item of kind commit_trace holds.
func FromItem(it *h4r.Item) (*CommitTrace, error) {
	if it.Kind != KindTrace {
		return nil, fmt.Errorf("item %s is of kind %q, not %s", it.ID, it.Kind, KindTrace)
	}
	b, err := json.Marshal(it.Content)
	if err != nil {
		return nil, fmt.Errorf("encoding the content of %s: %w", it.ID, err)
	}
	var t CommitTrace
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("decoding the trace in %s: %w", it.ID, err)
	}
	return &t, nil
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}
