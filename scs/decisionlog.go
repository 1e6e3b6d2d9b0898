package scs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/h4r/h4r"
)

// DecisionLogger receives every decision that drops or redacts an item.
type DecisionLogger interface {
	LogDecision(ctx context.Context, r DecisionRecord)
}

// DecisionRecord is one line of the decision log. It names the item and
// the paths redacted, never the redacted values.
type DecisionRecord struct {
	Time           time.Time `json:"time"`
	RequestID      string    `json:"requestId,omitempty"`
	Specialist     string    `json:"specialist"`
	SecurityLevel  string    `json:"securityLevel"`
	ItemID         string    `json:"itemId"`
	ItemVersion    int       `json:"itemVersion"`
	Decision       string    `json:"decision"` // "drop" or "redact"
	Reason         string    `json:"reason"`
	RedactedFields []string  `json:"redactedFields,omitempty"`
	PolicyRevision string    `json:"policyRevision"`
	Fallback       bool      `json:"fallback,omitempty"`
}

// Decisions in the log.
const (
	DecisionDrop   = "drop"
	DecisionRedact = "redact"
)

// JSONLog writes decision records as JSON lines to a writer. It is safe for
// concurrent use; a failed write is reported to onError once per failure
// (the slicer does not stop delivering because its audit sink failed, but
// the failure must not go unseen).
type JSONLog struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	onError func(error)
}

// NewJSONLog returns a decision log over w. onError may be nil.
func NewJSONLog(w io.Writer, onError func(error)) *JSONLog {
	if onError == nil {
		onError = func(error) {}
	}
	return &JSONLog{w: w, now: time.Now, onError: onError}
}

// LogDecision writes r as one JSON line, stamping its time and request id
// when unset.
func (l *JSONLog) LogDecision(ctx context.Context, r DecisionRecord) {
	if r.Time.IsZero() {
		r.Time = l.now().UTC()
	}
	if r.RequestID == "" {
		r.RequestID = h4r.RequestID(ctx)
	}
	line, err := json.Marshal(r)
	if err != nil {
		l.onError(fmt.Errorf("encoding a decision record: %w", err))
		return
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(line); err != nil {
		l.onError(fmt.Errorf("writing the decision log: %w", err))
	}
}

// logDecisions writes the drop and redact decisions of one Slice.
// A redact decision is logged even when the budget then left the item out.
func (s *Slicer) logDecisions(ctx context.Context, spec h4r.Specialist, items []*h4r.Item, decisions []decided, out Outcome) {
	if s.log == nil {
		return
	}
	for i, v := range out.Verdicts {
		var decision, reason string
		switch {
		case v.Reason == h4r.ReasonPolicy && decisions[i].err != nil:
			// The whole error, with the policy's file and line: the log is
			// the one place it goes.
			decision, reason = DecisionDrop, "policy error: "+decisions[i].err.Error()
		case v.Reason == h4r.ReasonPolicy:
			decision, reason = DecisionDrop, strings.TrimPrefix(v.Detail, "policy: ")
		case decisions[i].err == nil && decisions[i].decision.Allow && (decisions[i].decision.Redact || len(decisions[i].decision.RedactedFields) > 0):
			decision, reason = DecisionRedact, decisions[i].decision.Reason
		default:
			continue
		}
		r := DecisionRecord{
			Specialist: spec.ID, SecurityLevel: spec.SecurityLevel.String(),
			Decision: decision, Reason: reason,
			PolicyRevision: out.Stats.PolicyRevision, Fallback: v.Fallback,
		}
		if decision == DecisionRedact {
			r.RedactedFields = decisions[i].decision.RedactedFields
		}
		if it := items[i]; it != nil {
			r.ItemID, r.ItemVersion = it.ID, it.Metadata.Version
		}
		s.log.LogDecision(ctx, r)
	}
}
