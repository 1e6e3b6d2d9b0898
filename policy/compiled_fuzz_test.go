package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/h4r/h4r"
)

// jsonNumber is s as a json.Number if it is one, else s (a string).
func jsonNumber(s string) any {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return s
	}
	if n, ok := v.(json.Number); ok {
		return n
	}
	return s
}

// pickBits returns the elements of pool whose bit is set in bits.
func pickBits[T any](pool []T, bits uint8) []T {
	var out []T
	for i, v := range pool {
		if bits&(1<<i) != 0 {
			out = append(out, v)
		}
	}
	return out
}

// fuzzItem builds an item from fuzzed values: every metadata key the test
// policies read, extra keys (a number or a string: JSON decoding gives
// both), content and text. Scores may fall outside [0, 1].
func fuzzItem(trust, sens, imp, nov float64, bits uint8, groups, pii, tags uint8, kind uint8, text, extra string) *h4r.Item {
	m := h4r.Metadata{
		HasCredentials:     bits&1 != 0,
		ContainsPII:        bits&2 != 0,
		RestrictedToGroups: pickBits([]string{"qa", "ops", "dev", "QA"}, groups),
		PIIFields:          pickBits([]string{"$.text", "$.content.personalData", "name", "$.content.a[*].b"}, pii),
		Tags:               pickBits([]string{"draft", "Draft", "x", "e2e"}, tags),
		Version:            int(kind),
	}
	for _, s := range []struct {
		p   **float64
		v   float64
		bit uint8
	}{{&m.Trust, trust, 4}, {&m.Sensitivity, sens, 8}, {&m.Importance, imp, 16}, {&m.Novelty, nov, 32}} {
		if bits&s.bit != 0 { // else the default
			*s.p = &s.v
		}
	}
	it := &h4r.Item{
		ID:       "fuzz",
		Kind:     []string{"note", "fix", "test_failure", "incident", ""}[int(kind)%5],
		Text:     text,
		Content:  map[string]any{"personalData": map[string]any{"email": "a@b.c"}},
		Metadata: m,
	}
	if bits&64 != 0 {
		it.Metadata.Extra = map[string]any{"status": extra, "priority": jsonNumber(extra)}
		it.Content["severity"] = jsonNumber(extra)
	}
	if bits&128 != 0 {
		it.Content = nil
	}
	return it
}

// FuzzCompiledAgreesWithOPA: for random items and specialists, each test
// policy decides alike with compiled predicates and with OPA alone — the
// whole decision (allow, redact, redactedFields, reason) or the same error
// — one by one and in a batch.
func FuzzCompiledAgreesWithOPA(f *testing.F) {
	type pair struct {
		name          string
		compiled, opa *Engine
		// whole: every item is decided by the compiled predicate (the
		// policy cannot fail on any item), so none may fall back.
		whole bool
	}
	var pairs []pair
	for _, p := range compiledPolicies {
		c, o := enginePair(f, p.opts...)
		pairs = append(pairs, pair{p.name, c, o, p.name == "bundled" || p.name == "handled"})
	}
	f.Add(0.9, 0.2, 0.5, 0.5, uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(1), uint8(0), "login failed", "3")
	f.Add(0.29, 0.71, 0.1, 0.01, uint8(0xff), uint8(1), uint8(2), uint8(3), uint8(3), uint8(2), uint8(1), "api_key=1", "failed")
	f.Add(0.3, 0.7, 0.2, 0.05, uint8(0x3e), uint8(5), uint8(1), uint8(15), uint8(2), uint8(3), uint8(4), "", "high")
	f.Add(0.1+0.2, 0.7000000000000001, 2.0, -1.0, uint8(0x7f), uint8(8), uint8(6), uint8(9), uint8(1), uint8(9), uint8(3), "PASSWORD", "9")
	f.Fuzz(func(t *testing.T, trust, sens, imp, nov float64, bits, groups, pii, tags, authorized, level, kind uint8, text, extra string) {
		for _, x := range []float64{trust, sens, imp, nov} {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return // JSON has no such numbers; the store never holds them
			}
		}
		item := fuzzItem(trust, sens, imp, nov, bits, groups, pii, tags, kind, text, extra)
		twin := fuzzItem(sens, trust, nov, imp, bits^0x0f, tags, groups, pii, kind+1, extra, text)
		who := h4r.Specialist{Type: "specialist", ID: []string{"healer", "writer"}[level>>4&1], SecurityLevel: h4r.SecurityLevel(level % 6),
			AuthorizedGroups: pickBits([]string{"qa", "ops", "dev"}, authorized)}
		ctx := context.Background()
		for _, p := range pairs {
			got, gerr := p.compiled.Decide(ctx, who, item)
			want, werr := p.opa.Decide(ctx, who, item)
			if !reflect.DeepEqual(got, want) || errString(gerr) != errString(werr) {
				t.Fatalf("%s: compiled %+v (%v), OPA %+v (%v)\nitem %+v\nspecialist %+v", p.name, got, gerr, want, werr, item, who)
			}
			items := []*h4r.Item{item, twin, item}
			gotBatch := p.compiled.DecideBatch(ctx, who, items)
			wantBatch := p.opa.DecideBatch(ctx, who, items)
			for i := range items {
				if !reflect.DeepEqual(gotBatch[i].Decision, wantBatch[i].Decision) || errString(gotBatch[i].Err) != errString(wantBatch[i].Err) {
					t.Fatalf("%s: batch item %d: compiled %+v, OPA %+v\nitem %+v\nspecialist %+v", p.name, i, gotBatch[i], wantBatch[i], items[i], who)
				}
			}
			if st := p.compiled.CompiledStats(); p.whole && st.FellBack > 0 {
				t.Fatalf("%s: %d decisions fell back to OPA\nitem %+v\nspecialist %+v", p.name, st.FellBack, item, who)
			}
		}
	})
}
