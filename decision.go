package h4r

import (
	"context"
	"time"
)

// Decision is what the policy says about one item for one specialist.
// RedactedFields are JSONPaths ($.text, $.content.…) to replace with the
// redaction marker; Reason names the rules that decided.
type Decision struct {
	Allow          bool     `json:"allow"`
	Redact         bool     `json:"redact"`
	RedactedFields []string `json:"redactedFields"`
	Reason         string   `json:"reason"`
}

// DecisionResult is one item's outcome of a batch decision: a decision, or
// the error that kept it from being made (the caller fails closed).
type DecisionResult struct {
	Decision Decision
	Err      error
}

// PackSettings are the pack-level settings a policy may return besides its
// per-item decisions: the rule pack in package cmo.context, evaluated once
// per request with input {"specialist": {...}} (no item). Every field is
// optional; a limit can only narrow the request's budget, never raise it.
//
//	pack := {"maxTokens": 2000, "reason": "public specialists get small packs"} if {
//		input.specialist.securityLevel == "public"
//	}
type PackSettings struct {
	MaxBytes  int    `json:"maxBytes,omitempty"`
	MaxTokens int    `json:"maxTokens,omitempty"`
	MaxItems  int    `json:"maxItems,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// IsZero reports whether the settings set nothing.
func (p PackSettings) IsZero() bool { return p == PackSettings{} }

// Decider makes the policy decision for one item. Implementations (the
// embedded OPA engine, a remote OPA, the Go fallback rules) must be safe
// for concurrent use.
type Decider interface {
	Decide(ctx context.Context, spec Specialist, item *Item) (Decision, error)
}

// PolicyStatus says which policy decides and how its last reload went;
// GET /v1/policy and /health/ready show it.
type PolicyStatus struct {
	Mode        string            `json:"mode"`   // PolicyEmbedded or PolicyRemote
	Source      string            `json:"source"` // "bundled", a directory, a bundle file, or the remote URL
	Revision    string            `json:"revision"`
	LoadedAt    time.Time         `json:"loadedAt"`
	Watching    bool              `json:"watching"`
	Reloads     int               `json:"reloads"` // successful reloads since start
	LastError   string            `json:"lastError,omitempty"`
	LastErrorAt *time.Time        `json:"lastErrorAt,omitempty"`
	Cache       *PolicyCacheStats `json:"cache,omitempty"`
}

// Modes of PolicyStatus.
const (
	PolicyEmbedded = "embedded"
	PolicyRemote   = "remote"
)

// PolicyCacheStats are a decision cache's counters since it was made.
type PolicyCacheStats struct {
	Hits    uint64 `json:"hits"`
	Misses  uint64 `json:"misses"`
	Entries int    `json:"entries"` // held, expired ones included until their room is needed
}
