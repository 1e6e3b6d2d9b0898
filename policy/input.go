package policy

import (
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/sources"
)

// Input returns the policy input for one decision, as DESIGN.md gives it:
//
//	{"specialist": {type, id, securityLevel, authorizedGroups},
//	 "item": {id, kind, text, content, metadata}}
//
// Metadata is the item's flat metadata object with the documented defaults
// filled in for importance, trust, sensitivity and novelty, and lists that
// are never null, so that a policy sees the values the ranker uses. Text is
// included beyond DESIGN.md's shape so that policies can inspect it (it is
// also a redaction target, "$.text"). A nil item gives an empty item object.
func Input(spec h4r.Specialist, item *sources.Item) map[string]any {
	return map[string]any{
		"specialist": specialistInput(spec),
		"item":       itemInput(item),
	}
}

func specialistInput(spec h4r.Specialist) map[string]any {
	return map[string]any{
		"type":             spec.Type,
		"id":               spec.ID,
		"securityLevel":    spec.SecurityLevel.String(),
		"authorizedGroups": stringsInput(spec.AuthorizedGroups),
	}
}

func itemInput(item *sources.Item) map[string]any {
	if item == nil {
		return map[string]any{}
	}
	content := item.Content
	if content == nil {
		content = map[string]any{}
	}
	return map[string]any{
		"id":       item.ID,
		"kind":     item.Kind,
		"text":     item.Text,
		"content":  content,
		"metadata": metadataInput(item.Metadata),
	}
}

// metadataInput flattens Metadata the way its MarshalJSON does, but with
// defaults filled. Well-known keys are written after Extra so that they win
// should Extra (built in Go rather than decoded) repeat one of them.
func metadataInput(m sources.Metadata) map[string]any {
	out := make(map[string]any, len(m.Extra)+17)
	for k, v := range m.Extra {
		out[k] = v
	}
	out["importance"] = m.ImportanceValue()
	out["trust"] = m.TrustValue()
	out["sensitivity"] = m.SensitivityValue()
	out["novelty"] = m.NoveltyValue()
	out["containsPII"] = m.ContainsPII
	out["piiFields"] = stringsInput(m.PIIFields)
	out["hasCredentials"] = m.HasCredentials
	out["restrictedToGroups"] = stringsInput(m.RestrictedToGroups)
	out["tags"] = stringsInput(m.Tags)
	out["source"] = m.Source
	out["version"] = m.Version
	out["accessCount"] = m.AccessCount
	out["byteSize"] = m.ByteSize
	out["tokens"] = m.Tokens
	putTime(out, "createdAt", m.CreatedAt)
	putTime(out, "updatedAt", m.UpdatedAt)
	putTime(out, "lastAccessedAt", m.LastAccessedAt)
	return out
}

// putTime sets key to t as RFC 3339 unless t is zero (absent).
func putTime(out map[string]any, key string, t time.Time) {
	if !t.IsZero() {
		out[key] = t.UTC().Format(time.RFC3339Nano)
	}
}

// stringsInput converts a string list to the []any OPA reads, never nil so
// that policies can count() it.
func stringsInput(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
