package policy

import (
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"

	"time"

	"github.com/h4r/h4r"
)

// Input returns the policy input for one decision, as docs/concepts.md gives it:
//
//	{"specialist": {type, id, securityLevel, authorizedGroups},
//	 "item": {id, kind, text, content, metadata}}
//
// Metadata is the item's flat metadata object with the documented defaults
// filled in for importance, trust, sensitivity and novelty, and lists that
// are never null, so that a policy sees the values the ranker uses. Text is
// included beyond the item contract's shape so that policies can inspect it (it is
// also a redaction target, "$.text"). A nil item gives an empty item object.
func Input(spec h4r.Specialist, item *h4r.Item) map[string]any {
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

func itemInput(item *h4r.Item) map[string]any {
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
func metadataInput(m h4r.Metadata) map[string]any {
	out := make(map[string]any, len(m.Extra)+19)
	for k, v := range m.Extra {
		out[k] = v
	}
	out["importance"] = m.ImportanceValue()
	out["trust"] = m.TrustValue()
	out["sensitivity"] = m.SensitivityValue()
	out["novelty"] = m.NoveltyValue()
	out["containsPII"] = m.ContainsPII
	out["piiFields"] = stringsInput(m.PIIFields)
	out["textClean"] = m.TextClean
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
	putTime(out, "validFrom", m.ValidFrom)
	putTime(out, "validUntil", m.ValidUntil)
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

// itemNeeds is what of input.item a compiled policy reads: all of it, or
// only the listed keys. Leaving out what no rule reads (an item's content
// and text, typically) saves converting it to Rego values on every
// decision, most of the input's cost, and cannot change a decision.
type itemNeeds struct {
	all  bool
	keys map[string]bool
	// meta lists the metadata keys read as input.item.metadata.K; nil
	// when the metadata is read whole (or not at all: then keys lacks
	// "metadata").
	meta map[string]bool
	// metaAll: some rule reads input.item.metadata whole.
	metaAll bool
}

// analyseInput finds every reference to input in the (compiled) modules. A
// reference input.item.K with K a constant names a key; any other use of
// input or input.item (passed whole to a function, iterated, indexed with
// a variable) needs the whole item.
func analyseInput(modules []*ast.Module) itemNeeds {
	needs := itemNeeds{keys: map[string]bool{}, meta: map[string]bool{}}
	var vis *ast.GenericVisitor
	vis = ast.NewGenericVisitor(func(x any) bool {
		switch v := x.(type) {
		case ast.Var:
			if v.Equal(ast.InputRootDocument.Value) {
				needs.all = true
			}
		case ast.Ref:
			if !v[0].Equal(ast.InputRootDocument) {
				return false
			}
			needs.addRef(v)
			for _, t := range v[1:] { // refs nested in the path
				vis.Walk(t)
			}
			return true
		}
		return false
	})
	for _, m := range modules {
		vis.Walk(m)
	}
	return needs
}

func (n *itemNeeds) addRef(ref ast.Ref) {
	if len(ref) < 2 {
		n.all = true
		return
	}
	top, ok := ref[1].Value.(ast.String)
	switch {
	case !ok:
		n.all = true
	case top != "item":
		// input.specialist is always given whole; no other key exists.
	case len(ref) < 3:
		n.all = true
	default:
		key, ok := ref[2].Value.(ast.String)
		if !ok {
			n.all = true
			return
		}
		n.keys[string(key)] = true
		if key != "metadata" {
			return
		}
		if len(ref) < 4 {
			n.metaAll = true
			return
		}
		if mk, ok := ref[3].Value.(ast.String); ok {
			n.meta[string(mk)] = true
		} else {
			n.metaAll = true
		}
	}
}

// itemValue converts the item to the Rego value of input.item, with only
// the keys the policy reads.
func (n itemNeeds) itemValue(item *h4r.Item) (ast.Value, error) {
	need := func(k string) bool { return n.all || n.keys[k] }
	obj := ast.NewObjectWithCapacity(5)
	if need("id") {
		obj.Insert(ast.InternedTerm("id"), ast.StringTerm(item.ID))
	}
	if need("kind") {
		obj.Insert(ast.InternedTerm("kind"), ast.StringTerm(item.Kind))
	}
	if need("text") {
		obj.Insert(ast.InternedTerm("text"), ast.StringTerm(item.Text))
	}
	if need("content") {
		content := item.Content
		if content == nil {
			content = map[string]any{}
		}
		v, err := ast.InterfaceToValue(content)
		if err != nil {
			return nil, fmt.Errorf("building policy input for item %q: content: %w", item.ID, err)
		}
		obj.Insert(ast.InternedTerm("content"), ast.NewTerm(v))
	}
	if need("metadata") {
		meta := metadataInput(item.Metadata)
		if !n.all && !n.metaAll {
			for k := range meta {
				if !n.meta[k] {
					delete(meta, k)
				}
			}
		}
		v, err := ast.InterfaceToValue(meta)
		if err != nil {
			return nil, fmt.Errorf("building policy input for item %q: metadata: %w", item.ID, err)
		}
		obj.Insert(ast.InternedTerm("metadata"), ast.NewTerm(v))
	}
	return obj, nil
}

// specialistValue is input.specialist as a Rego value.
func specialistValue(spec h4r.Specialist) ast.Value {
	v, err := ast.InterfaceToValue(specialistInput(spec))
	if err != nil { // strings and lists of strings always convert
		panic(fmt.Sprintf("policy: converting the specialist: %v", err))
	}
	return v
}
