package policy

import (
	"context"
	"slices"
	"strings"

	"github.com/h4r/h4r"
)

// Thresholds of the default rules, shared by LocalRules and (as literals)
// rego/context.rego.
const (
	// SensitivityLimit: items above it need a confidential or restricted
	// specialist.
	SensitivityLimit = 0.7
	// TrustFloor: items below it are denied.
	TrustFloor = 0.3
)

// The redaction paths of the whole text and the whole content.
const (
	PathText    = "$." + h4r.RootText
	PathContent = "$." + h4r.RootContent
)

// Rule names, as they appear in Decision.Reason.
const (
	RuleSensitivity     = "sensitivity"
	RuleCredentials     = "credentials"
	RuleLowTrust        = "low_trust"
	RuleGroupRestricted = "group_restricted"
	ReasonPII           = "pii"
	ReasonAllowed       = "allowed"
)

// LocalRules is the default policy's five rules in Go: the fallback for when
// Rego evaluation fails. It gives the same decisions as the bundled Rego
// (TestLocalRulesAgreeWithRego holds them together).
type LocalRules struct{}

// Revision names the fallback in slicing stats.
func (LocalRules) Revision() string { return "local" }

// Decide applies the five rules. Every denying rule is named in Reason,
// sorted and comma-separated, as the Rego policy does.
func (LocalRules) Decide(_ context.Context, spec h4r.Specialist, item *h4r.Item) (h4r.Decision, error) {
	if item == nil {
		return h4r.Decision{}, h4r.Errorf(h4r.EINVALID, "item", "no item to decide on")
	}
	m := item.Metadata
	var deny []string
	cleared := spec.SecurityLevel == h4r.Confidential || spec.SecurityLevel == h4r.Restricted
	if m.SensitivityValue() > SensitivityLimit && !cleared {
		deny = append(deny, RuleSensitivity)
	}
	if m.HasCredentials {
		deny = append(deny, RuleCredentials)
	}
	if m.TrustValue() < TrustFloor {
		deny = append(deny, RuleLowTrust)
	}
	if len(m.RestrictedToGroups) > 0 && !sharesGroup(m.RestrictedToGroups, spec.AuthorizedGroups) {
		deny = append(deny, RuleGroupRestricted)
	}
	if len(deny) > 0 {
		slices.Sort(deny)
		return h4r.Decision{Allow: false, RedactedFields: []string{}, Reason: strings.Join(deny, ",")}, nil
	}
	if m.ContainsPII {
		return h4r.Decision{Allow: true, Redact: true, RedactedFields: piiRedactions(m), Reason: ReasonPII}, nil
	}
	return h4r.Decision{Allow: true, RedactedFields: []string{}, Reason: ReasonAllowed}, nil
}

// piiRedactions is what rule 2 redacts of an item with containsPII: its
// piiFields, or the whole content when it names none, and its text unless
// it says its text is clean (textClean).
func piiRedactions(m h4r.Metadata) []string {
	fields := slices.Clone(m.PIIFields)
	if len(fields) == 0 {
		fields = []string{PathContent}
	}
	if !m.TextClean && !slices.Contains(fields, PathText) {
		fields = append(fields, PathText)
	}
	return fields
}

func sharesGroup(restricted, authorized []string) bool {
	for _, g := range restricted {
		if slices.Contains(authorized, g) {
			return true
		}
	}
	return false
}
