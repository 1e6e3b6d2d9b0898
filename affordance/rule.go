package affordance

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/jsonstrict"
	"github.com/h4r/h4r/internal/words"
)

// Rule describes one affordance and when to suggest it.
type Rule struct {
	Type        string `json:"type"`
	Description string `json:"description"`
	// Match says which evidence items count toward the rule.
	Match Match `json:"match"`
	// MinMatches is how many items must match for the rule to fire; 0 means 1.
	MinMatches int `json:"minMatches,omitempty"`
	// Confidence of the suggestion, from the number of matching items.
	Confidence Confidence `json:"confidence"`
	// Params are collected from the content of the matching items.
	Params []Param `json:"params,omitempty"`
	// WhenBestRelevanceBelow, when positive, makes this a pack-level rule:
	// it fires when no evidence item has relevance at or above it (or there
	// is no evidence at all), and Match and MinMatches are not used.
	WhenBestRelevanceBelow float64 `json:"whenBestRelevanceBelow,omitempty"`
}

// Match lists criteria; an item matches if any one of them does. An empty
// Match matches nothing.
type Match struct {
	Kinds []string `json:"kinds,omitempty"` // the item's kind is one of these
	Tags  []string `json:"tags,omitempty"`  // the item has one of these tags (case-insensitive)
	// Keywords are words or phrases found case-insensitively as whole
	// words in the item's text: "data loss" matches "Data-loss in prod"
	// but "flaky" does not match "flakyness".
	Keywords []string `json:"keywords,omitempty"`
	// MetadataEquals holds metadata keys and the value (compared as text,
	// case-insensitively) that matches: {"status": "failed"}.
	MetadataEquals map[string]string `json:"metadataEquals,omitempty"`
}

// Confidence of a rule that matched n items: Base + PerMatch × n, capped at
// Max (Max 0 means no cap below 1).
type Confidence struct {
	Base     float64 `json:"base"`
	PerMatch float64 `json:"perMatch,omitempty"`
	Max      float64 `json:"max,omitempty"`
}

// Param collects the values of one content key of the matching items into
// the affordance parameter Name, as a list of distinct strings.
type Param struct {
	Name       string `json:"name"`
	ContentKey string `json:"contentKey"`
}

// Rule types of the default rules.
const (
	TypeRetryWithHealing   = "retry_with_healing"
	TypeSuggestFix         = "suggest_fix"
	TypeRerunTests         = "rerun_tests"
	TypeRequestMoreContext = "request_more_context"
	TypeEscalateToHuman    = "escalate_to_human"
)

// DefaultRules returns the item contract's affordance table as rules. Each call
// returns a fresh slice, so a caller may append to it.
func DefaultRules() []Rule {
	return []Rule{
		{
			Type:        TypeRetryWithHealing,
			Description: "Several tests failed: retry them with self-healing enabled",
			Match:       Match{Kinds: []string{"test_failure"}, MetadataEquals: map[string]string{"status": "failed"}},
			MinMatches:  2,
			Confidence:  Confidence{Base: 0.5, PerMatch: 0.1, Max: 0.95},
			Params:      []Param{{Name: "affectedTests", ContentKey: "test"}},
		},
		{
			Type:        TypeSuggestFix,
			Description: "Selector issues found: apply a fix to the affected selectors",
			Match:       Match{Kinds: []string{"selector_change"}, Tags: []string{"selector"}, Keywords: []string{"selector"}},
			Confidence:  Confidence{Base: 0.85, Max: 0.85},
			Params:      []Param{{Name: "selectors", ContentKey: "selector"}},
		},
		{
			Type:        TypeRerunTests,
			Description: "Flaky behaviour found: rerun the affected tests before acting",
			Match:       Match{Kinds: []string{"flaky_test"}, Tags: []string{"flaky"}, Keywords: []string{"flaky", "intermittent", "intermittently"}},
			Confidence:  Confidence{Base: 0.75, Max: 0.75},
			Params:      []Param{{Name: "tests", ContentKey: "test"}},
		},
		{
			Type:                   TypeRequestMoreContext,
			Description:            "The evidence matches the query poorly: ask for more context or rephrase the query",
			Confidence:             Confidence{Base: 0.6, Max: 0.6},
			WhenBestRelevanceBelow: 0.3,
		},
		{
			Type:        TypeEscalateToHuman,
			Description: "Critical keywords in the evidence: escalate to a human",
			Match: Match{Keywords: []string{
				"critical", "outage", "incident", "data loss", "breach", "security", "production down", "sev1",
			}},
			Confidence: Confidence{Base: 0.95, Max: 0.95},
		},
	}
}

// typePattern is what an affordance type looks like: agents switch on it.
var typePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// Validate checks a rule. field prefixes the offending field in errors
// ("rules[2]" gives "rules[2].confidence.base").
func (r Rule) Validate(field string) error {
	at := func(name string) string { return field + "." + name }
	if !typePattern.MatchString(r.Type) {
		return h4r.Errorf(h4r.EINVALID, at("type"), "type must match %s, got %q", typePattern, r.Type)
	}
	if r.MinMatches < 0 {
		return h4r.Errorf(h4r.EINVALID, at("minMatches"), "minMatches must be >= 0, got %d", r.MinMatches)
	}
	for name, v := range map[string]float64{
		"confidence.base": r.Confidence.Base, "confidence.perMatch": r.Confidence.PerMatch,
		"confidence.max": r.Confidence.Max, "whenBestRelevanceBelow": r.WhenBestRelevanceBelow,
	} {
		if math.IsNaN(v) || v < 0 || v > 1 {
			return h4r.Errorf(h4r.EINVALID, at(name), "%s must be in [0, 1], got %v", name, v)
		}
	}
	if r.WhenBestRelevanceBelow == 0 && r.Match.empty() {
		return h4r.Errorf(h4r.EINVALID, at("match"), "the rule matches nothing: give kinds, tags, keywords, metadataEquals or whenBestRelevanceBelow")
	}
	for i, kw := range r.Match.Keywords {
		if len(words.Lower(kw)) == 0 {
			return h4r.Errorf(h4r.EINVALID, fmt.Sprintf("%s[%d]", at("match.keywords"), i), "a keyword needs at least one letter or digit, got %q", kw)
		}
	}
	for i, p := range r.Params {
		pf := fmt.Sprintf("%s[%d]", at("params"), i)
		if strings.TrimSpace(p.Name) == "" {
			return h4r.Errorf(h4r.EINVALID, pf+".name", "parameter name is required")
		}
		if strings.TrimSpace(p.ContentKey) == "" {
			return h4r.Errorf(h4r.EINVALID, pf+".contentKey", "content key is required")
		}
	}
	return nil
}

func (m Match) empty() bool {
	return len(m.Kinds) == 0 && len(m.Tags) == 0 && len(m.Keywords) == 0 && len(m.MetadataEquals) == 0
}

// ParseRules reads a JSON array of rules, rejecting unknown fields, and
// validates each. Errors are invalid_argument naming the offending field
// ("rules[1].confidence.max").
func ParseRules(data []byte) ([]Rule, error) {
	var rules []Rule
	if err := jsonstrict.Decode(data, &rules, "rules"); err != nil {
		return nil, err
	}
	for i, r := range rules {
		if err := r.Validate(fmt.Sprintf("rules[%d]", i)); err != nil {
			return nil, err
		}
	}
	return rules, nil
}
