package policy

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/h4r/h4r"
)

// metaTerm is input.item.metadata[key] as metadataInput and
// ast.InterfaceToValue build it, for one key, without building the whole
// object: compiled predicates read a handful of keys per item. Well-known
// keys win over Extra, except the times, which are absent when zero (so an
// Extra key of that name shows). TestMetaTermMatchesInput holds the two
// together.
func metaTerm(m *h4r.Metadata, key string) (*ast.Term, bool, error) {
	switch key {
	case "importance":
		return floatTerm(m.ImportanceValue()), true, nil
	case "trust":
		return floatTerm(m.TrustValue()), true, nil
	case "sensitivity":
		return floatTerm(m.SensitivityValue()), true, nil
	case "novelty":
		return floatTerm(m.NoveltyValue()), true, nil
	case "containsPII":
		return ast.InternedTerm(m.ContainsPII), true, nil
	case "piiFields":
		return stringsTerm(m.PIIFields), true, nil
	case "textClean":
		return ast.InternedTerm(m.TextClean), true, nil
	case "hasCredentials":
		return ast.InternedTerm(m.HasCredentials), true, nil
	case "restrictedToGroups":
		return stringsTerm(m.RestrictedToGroups), true, nil
	case "tags":
		return stringsTerm(m.Tags), true, nil
	case "source":
		return ast.StringTerm(m.Source), true, nil
	case "version":
		return ast.InternedTerm(m.Version), true, nil
	case "accessCount":
		return ast.InternedTerm(m.AccessCount), true, nil
	case "byteSize":
		return ast.InternedTerm(m.ByteSize), true, nil
	case "tokens":
		return ast.InternedTerm(m.Tokens), true, nil
	case "createdAt", "updatedAt", "lastAccessedAt", "validFrom", "validUntil":
		t := m.CreatedAt
		switch key {
		case "updatedAt":
			t = m.UpdatedAt
		case "lastAccessedAt":
			t = m.LastAccessedAt
		case "validFrom":
			t = m.ValidFrom
		case "validUntil":
			t = m.ValidUntil
		}
		if !t.IsZero() {
			return ast.StringTerm(t.UTC().Format(time.RFC3339Nano)), true, nil
		}
	}
	raw, ok := m.Extra[key]
	if !ok {
		return nil, false, nil
	}
	v, err := ast.InterfaceToValue(raw)
	if err != nil {
		return nil, false, err
	}
	return ast.NewTerm(v), true, nil
}

// floatTerm is ast.InterfaceToValue of a float64.
func floatTerm(f float64) *ast.Term {
	return ast.NewTerm(ast.Number(strconv.FormatFloat(f, 'g', -1, 64)))
}

func stringsTerm(s []string) *ast.Term {
	elems := make([]*ast.Term, len(s))
	for i, v := range s {
		elems[i] = ast.StringTerm(v)
	}
	return ast.ArrayTerm(elems...)
}

// plainJSON reports whether ast.InterfaceToValue converts v without error
// and to a value OPA compares sanely: JSON types, finite numbers. Anything
// else sends the item to full evaluation, which then fails (or not) exactly
// as it always did.
func plainJSON(v any) bool {
	switch x := v.(type) {
	case nil, bool, string, int, int64, uint64, []string, map[string]string:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case json.Number:
		_, err := ast.InterfaceToValue(x)
		return err == nil
	case []any:
		for _, e := range x {
			if !plainJSON(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range x {
			if !plainJSON(e) {
				return false
			}
		}
		return true
	}
	return false
}

// plainInput reports whether everything of the item the full evaluation
// converts (the keys the policy reads) is plainJSON, so that the full
// evaluation cannot fail on building its input where a compiled predicate,
// which converts only what the residual reads, would not. Well-known
// metadata is always plain but for non-finite scores.
func (n itemNeeds) plainInput(item *h4r.Item) bool {
	need := func(k string) bool { return n.all || n.keys[k] }
	if need("content") && !plainJSON(item.Content) {
		return false
	}
	if !need("metadata") {
		return true
	}
	m := &item.Metadata
	for _, f := range [...]*float64{m.Importance, m.Trust, m.Sensitivity, m.Novelty} {
		if f != nil && (math.IsNaN(*f) || math.IsInf(*f, 0)) {
			return false
		}
	}
	for k, v := range m.Extra { // Extra values shadowed by well-known keys too: erring on OPA's side
		if (n.all || n.metaAll || n.meta[k]) && !plainJSON(v) {
			return false
		}
	}
	return true
}

// specialistNeeds is what of input.specialist a policy reads: all of it, or
// the listed keys. Two specialists that agree on those get the same
// residual policy, so compiled predicates are shared between them.
type specialistNeeds struct {
	all  bool
	keys map[string]bool
}

// analyseSpecialist finds every reference to input.specialist. As for the
// item (analyseInput), anything but input.specialist.K with K a constant
// (input or input.specialist passed whole, indexed with a variable) needs
// every field.
func analyseSpecialist(modules []*ast.Module) specialistNeeds {
	needs := specialistNeeds{keys: map[string]bool{}}
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
			switch {
			case len(v) < 2:
				needs.all = true
			case !ast.StringTerm("specialist").Equal(v[1]):
				if _, ok := v[1].Value.(ast.String); !ok {
					needs.all = true // input[x]
				}
			case len(v) < 3:
				needs.all = true
			default:
				if k, ok := v[2].Value.(ast.String); ok {
					needs.keys[string(k)] = true
				} else {
					needs.all = true
				}
			}
			for _, t := range v[1:] {
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

// key identifies the specialist as the policy sees it: the fields it
// reads, each named and length-prefixed, so no two views share a key.
func (n specialistNeeds) key(spec h4r.Specialist) string {
	fields := specialistInput(spec)
	var b strings.Builder
	for _, name := range []string{"type", "id", "securityLevel", "authorizedGroups"} {
		if !n.all && !n.keys[name] {
			continue
		}
		b.WriteString(name)
		b.WriteByte('=')
		switch v := fields[name].(type) {
		case string:
			b.WriteString(strconv.Itoa(len(v)))
			b.WriteByte(':')
			b.WriteString(v)
		case []any:
			b.WriteString(strconv.Itoa(len(v)))
			b.WriteByte('[')
			for _, g := range v {
				s := g.(string)
				b.WriteString(strconv.Itoa(len(s)))
				b.WriteByte(':')
				b.WriteString(s)
			}
		}
		b.WriteByte(';')
	}
	return b.String()
}
