package trace

import (
	"fmt"
	"math"
	"strings"

	"github.com/h4r/h4r"
)

// Limits on one trace, beyond the item limits the store checks.
const (
	MaxAreas     = h4r.MaxTags
	MaxDecisions = 200
	MaxRepoBytes = 255
)

// Normalize fills the defaults the document gives (mode classic, status
// pending) and lower-cases the SHA, so that the same commit always maps
// to the same item.
func (t *CommitTrace) Normalize() {
	t.SHA = strings.ToLower(strings.TrimSpace(t.SHA))
	t.Repo = strings.TrimSpace(t.Repo)
	if t.Mode == "" {
		t.Mode = ModeClassic
	}
	if t.Status == "" {
		t.Status = StatusPending
	}
}

// Validate checks a normalized trace and names the offending field as a
// JSON path of the trace ("decisions[2].selected").
func (t *CommitTrace) Validate() error {
	if err := ValidSHA(t.SHA, "sha"); err != nil {
		return err
	}
	if err := ValidRepo(t.Repo, "repo"); err != nil {
		return err
	}
	if t.Timestamp.IsZero() {
		return h4r.Errorf(h4r.EINVALID, "timestamp", "timestamp is required (RFC 3339, the commit's time)")
	}
	switch t.Mode {
	case ModeClassic, ModeRLM:
	default:
		return h4r.Errorf(h4r.EINVALID, "mode", "unknown mode %q (want classic or rlm)", t.Mode)
	}
	if err := validStatus(t.Status, "status"); err != nil {
		return err
	}
	if len(t.Areas) > MaxAreas {
		return h4r.Errorf(h4r.EINVALID, "areas", "at most %d areas, got %d", MaxAreas, len(t.Areas))
	}
	for i, a := range t.Areas {
		if strings.TrimSpace(a) == "" {
			return h4r.Errorf(h4r.EINVALID, fmt.Sprintf("areas[%d]", i), "an area must not be empty")
		}
	}
	if len(t.RestrictedToGroups) > h4r.MaxGroups {
		return h4r.Errorf(h4r.EINVALID, "restricted_to_groups", "at most %d groups, got %d", h4r.MaxGroups, len(t.RestrictedToGroups))
	}
	if len(t.Summary) > h4r.MaxTextBytes {
		return h4r.Errorf(h4r.EINVALID, "summary", "summary is %d bytes, the limit is %d", len(t.Summary), h4r.MaxTextBytes)
	}
	if t.Iterations < 0 {
		return h4r.Errorf(h4r.EINVALID, "iterations", "iterations must be >= 0, got %d", t.Iterations)
	}
	if t.TokensUsed < 0 {
		return h4r.Errorf(h4r.EINVALID, "tokens_used", "tokens_used must be >= 0, got %d", t.TokensUsed)
	}
	if len(t.Decisions) > MaxDecisions {
		return h4r.Errorf(h4r.EINVALID, "decisions", "at most %d decisions, got %d", MaxDecisions, len(t.Decisions))
	}
	for i := range t.Decisions {
		if err := t.Decisions[i].validate(fmt.Sprintf("decisions[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

func (d *Decision) validate(at string) error {
	if strings.TrimSpace(d.Context) == "" {
		return h4r.Errorf(h4r.EINVALID, at+".context", "a decision's context (what it was about) is required")
	}
	if len(d.Options) > 0 && (d.Selected < 0 || d.Selected >= len(d.Options)) {
		return h4r.Errorf(h4r.EINVALID, at+".selected", "selected is %d but there are %d options (want 0 to %d)", d.Selected, len(d.Options), len(d.Options)-1)
	}
	if math.IsNaN(d.Confidence) || d.Confidence < 0 || d.Confidence > 1 {
		return h4r.Errorf(h4r.EINVALID, at+".confidence", "confidence must be in [0, 1], got %v", d.Confidence)
	}
	switch d.Category {
	case "", CategoryArchitecture, CategoryImplementation, CategoryTooling, CategoryRecovery, CategoryEscalation:
	default:
		return h4r.Errorf(h4r.EINVALID, at+".category", "unknown category %q (want architecture, implementation, tooling, recovery or escalation)", d.Category)
	}
	switch d.Risk {
	case "", RiskLow, RiskMedium, RiskHigh:
	default:
		return h4r.Errorf(h4r.EINVALID, at+".risk", "unknown risk %q (want low, medium or high)", d.Risk)
	}
	return nil
}

func validStatus(s TraceStatus, field string) error {
	switch s {
	case StatusPending, StatusLanded, StatusReverted:
		return nil
	}
	return h4r.Errorf(h4r.EINVALID, field, "unknown status %q (want pending, landed or reverted)", s)
}

// ValidSHA checks a commit SHA: 7 to 40 lower-case hexadecimal digits
// (an abbreviated or full SHA-1; SHA-256 repositories use 64).
func ValidSHA(sha, field string) error {
	if sha == "" {
		return h4r.Errorf(h4r.EINVALID, field, "the commit SHA is required")
	}
	if len(sha) < 7 || len(sha) > 64 {
		return h4r.Errorf(h4r.EINVALID, field, "a commit SHA is 7 to 64 hexadecimal digits, got %d characters", len(sha))
	}
	for _, c := range sha {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return h4r.Errorf(h4r.EINVALID, field, "a commit SHA is hexadecimal digits, got %q", sha)
		}
	}
	return nil
}

// ValidRepo checks a repository name in the document's org/repo form,
// the characters GitHub allows in owner and repository names.
func ValidRepo(repo, field string) error {
	if repo == "" {
		return h4r.Errorf(h4r.EINVALID, field, "the repository (org/repo) is required")
	}
	if len(repo) > MaxRepoBytes {
		return h4r.Errorf(h4r.EINVALID, field, "the repository name is %d bytes, the limit is %d", len(repo), MaxRepoBytes)
	}
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return h4r.Errorf(h4r.EINVALID, field, "a repository is org/repo, got %q", repo)
	}
	for _, c := range repo {
		if !(c == '/' || c == '-' || c == '_' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return h4r.Errorf(h4r.EINVALID, field, "a repository name holds letters, digits, '-', '_' and '.', got %q", repo)
		}
	}
	return nil
}
