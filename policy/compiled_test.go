package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/h4r/h4r"
)

// compiledPolicies are the policies the compiled predicates are tested on:
// the bundled one and the team policies in testdata/compiled.
var compiledPolicies = []struct {
	name string
	opts []Option
	// compiles: the compiler handles the residual for every specialist.
	compiles bool
}{
	{"bundled", nil, true},
	{"handled", []Option{WithPolicyDir("testdata/compiled/handled")}, true},
	{"fallback", []Option{WithPolicyDir("testdata/compiled/fallback")}, false},
	{"runtime", []Option{WithPolicyDir("testdata/compiled/runtime")}, true},
}

// enginePair returns the policy with compiled predicates and the same
// policy decided by OPA only; neither remembers decisions.
func enginePair(t testing.TB, opts ...Option) (compiled, opa *Engine) {
	t.Helper()
	ctx := context.Background()
	compiled, err := New(ctx, append(opts, WithDecisionMemo(0))...)
	if err != nil {
		t.Fatal(err)
	}
	opa, err = New(ctx, append(opts, WithDecisionMemo(0), WithCompiledPredicates(0))...)
	if err != nil {
		t.Fatal(err)
	}
	return compiled, opa
}

// decideCompiledOnly decides with the compiled predicate and reports
// whether it did (rather than falling back).
func decideCompiledOnly(t *testing.T, e *Engine, who h4r.Specialist, item *h4r.Item) (h4r.Decision, bool) {
	t.Helper()
	before := e.CompiledStats().Decided
	d, err := e.Decide(t.Context(), who, item)
	if err != nil {
		t.Fatalf("compiled engine: %v", err)
	}
	return d, e.CompiledStats().Decided == before+1
}

// TestCompiledBundledCases: every case of the bundled policy's table is
// decided by its compiled predicate, as expected and as OPA decides it.
func TestCompiledBundledCases(t *testing.T) {
	compiled, opa := enginePair(t)
	for _, tc := range decisionCases {
		t.Run(tc.name, func(t *testing.T) {
			item := memory(tc.meta)
			got, byPredicate := decideCompiledOnly(t, compiled, tc.spec, item)
			if !byPredicate {
				t.Fatal("decided by OPA, want the compiled predicate")
			}
			want, err := opa.Decide(t.Context(), tc.spec, item)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(got, want) {
				t.Errorf("compiled %+v, OPA %+v, want %+v", got, want, tc.want)
			}
		})
	}
}

// TestCompiledHandledPolicy: a team policy (helper rules in another
// package, a regex over the text, a kind allowlist, extra metadata and
// content keys, comprehensions, sprintf) is decided by its compiled
// predicate as OPA decides it.
func TestCompiledHandledPolicy(t *testing.T) {
	compiled, opa := enginePair(t, WithPolicyDir("testdata/compiled/handled"))
	item := func(edit func(*h4r.Item)) *h4r.Item {
		it := memory(h4r.Metadata{Trust: ptr(0.8), Importance: ptr(0.5), Novelty: ptr(0.5)})
		if edit != nil {
			edit(it)
		}
		return it
	}
	pii := func(fields ...string) func(*h4r.Item) {
		return func(it *h4r.Item) { it.Metadata.ContainsPII, it.Metadata.PIIFields = true, fields }
	}
	cases := []struct {
		name string
		who  h4r.Specialist
		item *h4r.Item
		want h4r.Decision
	}{
		{"plain item allowed", spec(h4r.Internal), item(nil), allowed()},
		{"restricted groups: shared group allowed", spec(h4r.Internal, "ops", "qa"), item(func(it *h4r.Item) { it.Metadata.RestrictedToGroups = []string{"qa"} }), allowed()},
		{"restricted groups: no shared group denied", spec(h4r.Restricted, "dev"), item(func(it *h4r.Item) { it.Metadata.RestrictedToGroups = []string{"qa", "ops"} }), denied("group_restricted")},
		{"credentials denied even to restricted", spec(h4r.Restricted), item(func(it *h4r.Item) { it.Metadata.HasCredentials = true }), denied("credentials")},
		{"secret in the text denied", spec(h4r.Restricted), item(func(it *h4r.Item) { it.Text = "the API_KEY is here" }), denied("secret_in_text")},
		{"pii redaction: fields sorted, non-paths dropped", spec(h4r.Internal), item(pii("$.text", "name", "$.content.personalData")),
			h4r.Decision{Allow: true, Redact: true, RedactedFields: []string{"$.content.personalData", "$.text"}, Reason: "pii:2"}},
		{"pii redaction: no field that is a path, nothing redacted", spec(h4r.Internal), item(pii("name")), allowed()},
		{"sensitivity 0.7 is not above the threshold", spec(h4r.Public), item(func(it *h4r.Item) { it.Metadata.Sensitivity = ptr(0.7) }), allowed()},
		{"sensitivity above 0.7 denied to internal", spec(h4r.Internal), item(func(it *h4r.Item) { it.Metadata.Sensitivity = ptr(0.7000000000000001) }), denied("sensitivity")},
		{"sensitivity above 0.7 allowed to confidential", spec(h4r.Confidential), item(func(it *h4r.Item) { it.Metadata.Sensitivity = ptr(0.95) }), allowed()},
		{"trust 0.1+0.2 is not below 0.3", spec(h4r.Internal), item(func(it *h4r.Item) { it.Metadata.Trust = ptr(0.1 + 0.2) }), allowed()},
		{"trust 0.29 denied", spec(h4r.Internal), item(func(it *h4r.Item) { it.Metadata.Trust = ptr(0.29) }), denied("low_trust")},
		{"trust missing takes the default", spec(h4r.Internal), item(func(it *h4r.Item) { it.Metadata.Trust = nil }), allowed()},
		{"kind outside the public allowlist denied to public", spec(h4r.Public), item(func(it *h4r.Item) { it.Kind = "incident" }), denied("kind_not_public")},
		{"kind outside the public allowlist allowed to internal", spec(h4r.Internal), item(func(it *h4r.Item) { it.Kind = "incident" }), allowed()},
		{"draft tag in any case denied", spec(h4r.Internal), item(func(it *h4r.Item) { it.Metadata.Tags = []string{"e2e", "DRAFT"} }), denied("draft")},
		{"extra metadata key: failed status denied to public", spec(h4r.Public), item(func(it *h4r.Item) { it.Metadata.Extra = map[string]any{"status": "failed"} }), denied("failed_for_public")},
		{"content key: severity 9 denied", spec(h4r.Internal), item(func(it *h4r.Item) { it.Content["severity"] = 9.0 }), denied("severe")},
		{"content key: a string severity is above any number", spec(h4r.Internal), item(func(it *h4r.Item) { it.Content["severity"] = "low" }), denied("severe")},
		{"stale: low novelty and importance", spec(h4r.Internal), item(func(it *h4r.Item) { it.Metadata.Novelty, it.Metadata.Importance = ptr(0.01), ptr(0.1) }), denied("stale")},
		{"every denial named, sorted", spec(h4r.Public, "dev"), item(func(it *h4r.Item) {
			it.Kind, it.Text, it.Metadata.Trust, it.Metadata.HasCredentials = "secret", "password: x", ptr(0.1), true
			it.Metadata.RestrictedToGroups, it.Metadata.Sensitivity = []string{"qa"}, ptr(0.9)
		}), denied("credentials,group_restricted,kind_not_public,low_trust,secret_in_text,sensitivity")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, byPredicate := decideCompiledOnly(t, compiled, tc.who, tc.item)
			if !byPredicate {
				t.Fatal("decided by OPA, want the compiled predicate")
			}
			want, err := opa.Decide(t.Context(), tc.who, tc.item)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(got, want) {
				t.Errorf("compiled %+v, OPA %+v, want %+v", got, want, tc.want)
			}
		})
	}
}

// TestCompiledFor: which policies and settings get compiled predicates.
func TestCompiledFor(t *testing.T) {
	levels := []h4r.SecurityLevel{h4r.Public, h4r.Internal, h4r.Confidential, h4r.Restricted, h4r.SecurityLevel(9)}
	for _, p := range compiledPolicies {
		t.Run(p.name, func(t *testing.T) {
			e, err := New(t.Context(), p.opts...)
			if err != nil {
				t.Fatal(err)
			}
			for _, level := range levels {
				err := e.CompiledFor(t.Context(), spec(level, "qa"))
				if (err == nil) != p.compiles {
					t.Errorf("%s: CompiledFor = %v, want compiled %v", level, err, p.compiles)
				}
			}
		})
	}
	refused := []struct {
		name    string
		opts    []Option
		wantErr string
	}{
		{"turned off", []Option{WithCompiledPredicates(0)}, "off"},
		{"non-deterministic built-in", []Option{WithModules(map[string]string{"p.rego": "package cmo.context\n\nallow if time.now_ns() > 0\n"})}, "off"},
		{"with", []Option{WithModules(map[string]string{"p.rego": "package cmo.context\n\nallow if ok with input.specialist.id as \"x\"\n\nok if input.specialist.id == \"x\"\n"})}, "off"},
		{"every in the residual", []Option{WithPolicyDir("testdata/compiled/fallback")}, "every"},
		{"function of the item", []Option{WithModules(map[string]string{"p.rego": "package cmo.context\n\nallow if f(input.item.kind)\n\nf(x) if x == \"note\"\n\nf(x) if x == \"fix\"\n"})}, ""},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			compiled, opa := enginePair(t, tc.opts...)
			err := compiled.CompiledFor(t.Context(), spec(h4r.Internal))
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("CompiledFor = %v, want an error saying %q", err, tc.wantErr)
			}
			// Compiled or not, the decisions are OPA's.
			for _, kind := range []string{"note", "fix", "incident"} {
				it := memory(h4r.Metadata{})
				it.Kind = kind
				got, gerr := compiled.Decide(t.Context(), spec(h4r.Internal), it)
				want, werr := opa.Decide(t.Context(), spec(h4r.Internal), it)
				if !reflect.DeepEqual(got, want) || errString(gerr) != errString(werr) {
					t.Errorf("%s: %+v (%v), OPA %+v (%v)", kind, got, gerr, want, werr)
				}
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestCompiledRuntimeFallback: items the compiled predicate cannot decide
// (a built-in error, conflicting rule values, a decision of another type
// than the fast path reads) are decided by OPA, with OPA's decision or
// error; the others by the predicate.
func TestCompiledRuntimeFallback(t *testing.T) {
	compiled, opa := enginePair(t, WithPolicyDir("testdata/compiled/runtime"))
	item := func(kind string, meta h4r.Metadata) *h4r.Item {
		it := memory(meta)
		it.Kind = kind
		return it
	}
	cases := []struct {
		name         string
		item         *h4r.Item
		wantCompiled bool
		wantErr      bool
	}{
		{"number priority: compiled", item("fix", h4r.Metadata{Extra: map[string]any{"priority": "3"}}), true, false},
		{"no priority: compiled", item("note", h4r.Metadata{}), true, false},
		{"priority that is no number: OPA's error", item("fix", h4r.Metadata{Extra: map[string]any{"priority": "high"}}), false, true},
		{"two reasons: OPA's conflict error", item("note", h4r.Metadata{Tags: []string{"x"}}), false, true},
		{"redacted fields as a set: OPA's list", item("fix", h4r.Metadata{ContainsPII: true, PIIFields: []string{"$.text", "$.content.a"}}), false, false},
		{"a score that is not finite: OPA decides", item("fix", h4r.Metadata{Trust: ptr(math.Inf(1))}), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := compiled.CompiledStats()
			got, gerr := compiled.Decide(t.Context(), spec(h4r.Internal), tc.item)
			after := compiled.CompiledStats()
			want, werr := opa.Decide(t.Context(), spec(h4r.Internal), tc.item)
			if !reflect.DeepEqual(got, want) || errString(gerr) != errString(werr) {
				t.Errorf("compiled %+v (%v), OPA %+v (%v)", got, gerr, want, werr)
			}
			if (werr != nil) != tc.wantErr {
				t.Errorf("OPA error %v, want an error: %v", werr, tc.wantErr)
			}
			if byPredicate := after.Decided == before.Decided+1; byPredicate != tc.wantCompiled {
				t.Errorf("decided by the predicate: %v, want %v (stats %+v -> %+v)", byPredicate, tc.wantCompiled, before, after)
			}
		})
	}
	// In one batch, with a nil item: the same results, item by item.
	items := []*h4r.Item{cases[0].item, cases[2].item, nil, cases[3].item, cases[4].item, cases[1].item}
	got := compiled.DecideBatch(t.Context(), spec(h4r.Internal), items)
	want := opa.DecideBatch(t.Context(), spec(h4r.Internal), items)
	for i := range items {
		if !reflect.DeepEqual(got[i].Decision, want[i].Decision) || errString(got[i].Err) != errString(want[i].Err) {
			t.Errorf("batch item %d: %+v, OPA %+v", i, got[i], want[i])
		}
	}
}

// TestCompiledPredicatesShared: a predicate is per specialist as the
// policy sees it, so specialists that differ only in what the policy does
// not read share one.
func TestCompiledPredicatesShared(t *testing.T) {
	readsID := WithModules(map[string]string{"p.rego": "package cmo.context\n\ndefault allow := false\n\nallow if input.specialist.id == \"healer\"\n"})
	cases := []struct {
		name string
		opts []Option
		want int
	}{
		{"bundled policy does not read the id: one predicate", nil, 1},
		{"a policy reading the id: one per id", []Option{readsID}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(t.Context(), tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"healer", "writer"} {
				who := spec(h4r.Internal, "qa")
				who.ID = id
				if _, err := e.Decide(t.Context(), who, memory(h4r.Metadata{})); err != nil {
					t.Fatal(err)
				}
			}
			if got := e.CompiledStats().Predicates; got != tc.want {
				t.Errorf("%d predicates, want %d", got, tc.want)
			}
		})
	}
}

// TestMetaTermMatchesInput: metaTerm gives, key by key, what the full
// evaluation's input holds (metadataInput converted whole), absent keys
// included.
func TestMetaTermMatchesInput(t *testing.T) {
	at := time.Date(2026, 11, 3, 10, 4, 5, 6000, time.FixedZone("x", 3600))
	cases := []struct {
		name string
		meta h4r.Metadata
	}{
		{"defaults", h4r.Metadata{}},
		{"every field", h4r.Metadata{
			CreatedAt: at, UpdatedAt: at.Add(time.Hour), LastAccessedAt: at.Add(2 * time.Hour),
			Importance: ptr(0.1), Trust: ptr(0.1 + 0.2), Sensitivity: ptr(1e-7), Novelty: ptr(1),
			ContainsPII: true, PIIFields: []string{"$.text"}, HasCredentials: true, RestrictedToGroups: []string{"qa", "ops"},
			Tags: []string{"a"}, Source: "git", Version: 7, AccessCount: 1 << 40, ByteSize: 12, Tokens: 3,
		}},
		{"extra keys, some named like well-known ones", h4r.Metadata{
			CreatedAt: at,
			Extra: map[string]any{"status": "failed", "trust": 0.0, "updatedAt": "from extra", "createdAt": "hidden",
				"n": 3, "nested": map[string]any{"a": []any{1.5, "x", nil, true}}, "list": []string{"p"}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			whole, err := ast.InterfaceToValue(metadataInput(tc.meta))
			if err != nil {
				t.Fatal(err)
			}
			obj := whole.(ast.Object)
			keys := []string{"absent", "createdAt", "updatedAt", "lastAccessedAt"}
			for _, k := range obj.Keys() {
				keys = append(keys, string(k.Value.(ast.String)))
			}
			for k := range tc.meta.Extra {
				keys = append(keys, k)
			}
			for _, k := range keys {
				want := obj.Get(ast.StringTerm(k))
				got, ok, err := metaTerm(&tc.meta, k)
				switch {
				case err != nil:
					t.Errorf("%s: %v", k, err)
				case ok != (want != nil):
					t.Errorf("%s: present %v, want %v", k, ok, want != nil)
				case ok && !got.Equal(want):
					t.Errorf("%s: %v, want %v", k, got, want)
				}
			}
		})
	}
}

// FuzzCompareNumbers: compareNumbers orders numbers as ast.NumberCompare
// does, for floats written by Go, integers and other spellings.
func FuzzCompareNumbers(f *testing.F) {
	f.Add(0.7, 0.7000000000000001, "0.70", "7e-1")
	f.Add(0.1+0.2, 0.3, "1", "1.0")
	f.Add(math.Copysign(0, -1), 0.0, "-0", "0.0")
	f.Add(1e21, 1e-7, "100000000000000000000000", "0.30000000000000004")
	f.Fuzz(func(t *testing.T, a, b float64, s1, s2 string) {
		var nums []ast.Number
		for _, x := range []float64{a, b, math.Nextafter(a, math.Inf(1))} {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				nums = append(nums, ast.Number(strconv.FormatFloat(x, 'g', -1, 64)), ast.Number(strconv.FormatFloat(x, 'f', -1, 64)))
			}
		}
		for _, s := range []string{s1, s2} {
			if n, ok := jsonNumber(s).(json.Number); ok {
				if v, err := ast.InterfaceToValue(n); err == nil {
					nums = append(nums, v.(ast.Number))
				}
			}
		}
		for _, x := range nums {
			for _, y := range nums {
				if got, want := compareNumbers(x, y), ast.NumberCompare(x, y); got != want {
					t.Fatalf("compareNumbers(%s, %s) = %d, NumberCompare %d", x, y, got, want)
				}
			}
		}
	})
}

// TestLiveEngineOptions: a Live policy passes its engine options to every
// engine it loads, so the server can turn compiled predicates off.
func TestLiveEngineOptions(t *testing.T) {
	cases := []struct {
		name     string
		opts     []LiveOption
		compiled bool
	}{
		{"default: compiled", nil, true},
		{"turned off", []LiveOption{WithEngineOptions(WithCompiledPredicates(0))}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLive(t.Context(), "", tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := l.Engine().CompiledFor(t.Context(), spec(h4r.Internal)); (err == nil) != tc.compiled {
				t.Errorf("CompiledFor = %v, want compiled %v", err, tc.compiled)
			}
		})
	}
}

// TestCompiledConcurrent: one engine decides for several specialists from
// several goroutines at once (predicates made on first use, evaluation
// states pooled) as OPA does; run with -race.
func TestCompiledConcurrent(t *testing.T) {
	compiled, opa := enginePair(t, WithPolicyDir("testdata/compiled/handled"))
	items := benchItems(40)
	whos := []h4r.Specialist{spec(h4r.Public, "qa"), spec(h4r.Internal, "ops"), spec(h4r.Restricted, "qa", "ops")}
	want := make([][]h4r.DecisionResult, len(whos))
	for i, who := range whos {
		want[i] = opa.DecideBatch(t.Context(), who, items)
	}
	errs := make(chan error, 8*len(whos))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range whos {
				i := (i + g) % len(whos)
				got := compiled.DecideBatch(context.Background(), whos[i], items)
				for j := range got {
					if !reflect.DeepEqual(got[j], want[i][j]) {
						errs <- fmt.Errorf("goroutine %d, specialist %d, item %d: %+v, OPA %+v", g, i, j, got[j], want[i][j])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := compiled.CompiledStats(); st.Predicates != len(whos) || st.FellBack > 0 {
		t.Errorf("stats %+v, want %d predicates and no fallback", st, len(whos))
	}
}
