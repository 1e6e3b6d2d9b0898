package policy

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/h4r/h4r"
)

// TestDecideBatchAgreesWithDecide runs the whole decision table through one
// batch and checks every decision against the one-by-one answer.
func TestDecideBatchAgreesWithDecide(t *testing.T) {
	engine, err := New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, level := range []h4r.SecurityLevel{h4r.Public, h4r.Internal, h4r.Confidential, h4r.Restricted} {
		t.Run(level.String(), func(t *testing.T) {
			who := spec(level, "qa")
			var items []*h4r.Item
			for i, tc := range decisionCases {
				it := memory(tc.meta)
				it.ID = tc.name + string(rune('a'+i%26))
				items = append(items, it)
			}
			got := engine.DecideBatch(t.Context(), who, items)
			if len(got) != len(items) {
				t.Fatalf("%d results for %d items", len(got), len(items))
			}
			for i, it := range items {
				want, err := engine.Decide(t.Context(), who, it)
				if err != nil {
					t.Fatal(err)
				}
				if got[i].Err != nil || !reflect.DeepEqual(got[i].Decision, want) {
					t.Errorf("item %q: batch %+v (err %v), one by one %+v", it.ID, got[i].Decision, got[i].Err, want)
				}
			}
		})
	}
}

// TestDecideBatchIsolatesFailures: one item whose rules conflict fails the
// batch evaluation; only that item may end without a decision.
func TestDecideBatchIsolatesFailures(t *testing.T) {
	engine, err := New(t.Context(), WithModules(map[string]string{"p.rego": `package cmo.context

default allow := true

reason := "a"

reason := "b" if input.item.kind == "conflict"
`}))
	if err != nil {
		t.Fatal(err)
	}
	ok1, bad, ok2 := memory(h4r.Metadata{}), memory(h4r.Metadata{}), memory(h4r.Metadata{})
	ok1.ID, bad.ID, ok2.ID = "ok-1", "bad", "ok-2"
	bad.Kind = "conflict"
	got := engine.DecideBatch(t.Context(), spec(h4r.Public), []*h4r.Item{ok1, bad, nil, ok2})
	for i, wantErr := range []bool{false, true, true, false} {
		if (got[i].Err != nil) != wantErr {
			t.Errorf("result %d: err = %v, want error %v", i, got[i].Err, wantErr)
		}
		if got[i].Err != nil && got[i].Decision.Allow {
			t.Errorf("result %d failed but allows", i)
		}
	}
	if !got[0].Decision.Allow || !got[3].Decision.Allow {
		t.Errorf("good items not allowed: %+v", got)
	}
}

func TestDecideBatchCancelled(t *testing.T) {
	engine, err := New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(t.Context())
	stop()
	for _, r := range engine.DecideBatch(cctx, spec(h4r.Public), benchItems(3)) {
		if r.Err == nil || r.Decision.Allow {
			t.Fatalf("cancelled batch gave %+v", r)
		}
	}
}

// TestAnalyseInput pins which item keys each way of reading input needs.
func TestAnalyseInput(t *testing.T) {
	cases := []struct {
		name        string
		body        string
		wantAll     bool
		wantKeys    []string
		wantMeta    []string
		wantMetaAll bool
	}{
		{"metadata only", "allow if input.item.metadata.trust > 0.5", false, []string{"metadata"}, nil, false},
		{"metadata keys by name", "allow if { input.item.metadata.trust > 0.5; input.item.metadata.sensitivity < 1 }", false, []string{"metadata"}, []string{"trust", "sensitivity"}, false},
		{"metadata whole", "m := input.item.metadata\n\nallow if m.trust > 0.5", false, []string{"metadata"}, nil, true},
		{"metadata with a variable key", "allow if { some k; input.item.metadata[k] == 1 }", false, []string{"metadata"}, nil, true},
		{"specialist only", `allow if input.specialist.securityLevel == "public"`, false, nil, nil, false},
		{"content and kind", "allow if input.item.content.x == input.item.kind", false, []string{"content", "kind"}, nil, false},
		{"bare input", `allow if object.get(input, ["item", "text"], "") == ""`, true, nil, nil, false},
		{"whole item", "allow if count(input.item) > 0", true, nil, nil, false},
		{"variable key", "allow if { some k; input.item[k] == 1 }", true, nil, nil, false},
		{"import alias", "import input.item.text as txt\n\nallow if txt == \"x\"", false, []string{"text"}, nil, false},
		{"nested ref in specialist path", "allow if input.specialist[input.item.kind]", false, []string{"kind"}, nil, false},
		{"with input target counts as a read (conservative)", "allow if input.item.id == \"a\"\n\nx if allow with input as {}", true, nil, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := "package cmo.context\n\n" + tc.body + "\n"
			engine, err := New(t.Context(), WithModules(map[string]string{"p.rego": src}))
			if err != nil {
				t.Fatal(err)
			}
			n := engine.needs
			if n.all != tc.wantAll {
				t.Fatalf("all = %v, want %v (keys %v)", n.all, tc.wantAll, n.keys)
			}
			if tc.wantMeta != nil || tc.wantMetaAll {
				var got []string
				for k := range n.meta {
					got = append(got, k)
				}
				if n.metaAll != tc.wantMetaAll || (!tc.wantMetaAll && !sameSet(got, tc.wantMeta)) {
					t.Errorf("metadata keys %v (whole %v), want %v (whole %v)", got, n.metaAll, tc.wantMeta, tc.wantMetaAll)
				}
			}
			if !tc.wantAll {
				var got []string
				for k := range n.keys {
					got = append(got, k)
				}
				if !sameSet(got, tc.wantKeys) {
					t.Errorf("keys = %v, want %v", got, tc.wantKeys)
				}
			}
		})
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]bool{}
	for _, s := range a {
		m[s] = true
	}
	for _, s := range b {
		if !m[s] {
			return false
		}
	}
	return true
}

// TestPrunedInputDecidesAlike: a policy that reads content, text and kind
// sees them (pruning must never hide what a rule reads), in both paths.
func TestPrunedInputDecidesAlike(t *testing.T) {
	engine, err := New(t.Context(), WithModules(map[string]string{"p.rego": `package cmo.context

default allow := false

allow if {
	input.item.content.test == "login-spec-001"
	contains(input.item.text, "#login-button")
	input.item.kind == "test_failure"
}
`}))
	if err != nil {
		t.Fatal(err)
	}
	it := memory(h4r.Metadata{})
	d, err := engine.Decide(t.Context(), spec(h4r.Public), it)
	if err != nil || !d.Allow {
		t.Fatalf("Decide = %+v, %v; want allowed", d, err)
	}
	r := engine.DecideBatch(t.Context(), spec(h4r.Public), []*h4r.Item{it})
	if r[0].Err != nil || !r[0].Decision.Allow {
		t.Fatalf("DecideBatch = %+v; want allowed", r[0])
	}
}

func TestPackSettings(t *testing.T) {
	cases := []struct {
		name    string
		rule    string
		level   h4r.SecurityLevel
		want    h4r.PackSettings
		wantErr string
	}{
		{"no pack rule", "", h4r.Public, h4r.PackSettings{}, ""},
		{"rule applies", `pack := {"maxTokens": 2000, "reason": "small"} if input.specialist.securityLevel == "public"`, h4r.Public, h4r.PackSettings{MaxTokens: 2000, Reason: "small"}, ""},
		{"rule undefined for this specialist", `pack := {"maxTokens": 2000} if input.specialist.securityLevel == "public"`, h4r.Restricted, h4r.PackSettings{}, ""},
		{"all limits", `pack := {"maxBytes": 1000, "maxTokens": 200, "maxItems": 3}`, h4r.Public, h4r.PackSettings{MaxBytes: 1000, MaxTokens: 200, MaxItems: 3}, ""},
		{"unknown key ignored", `pack := {"maxToken": 2000, "allow": true, "maxItems": 4}`, h4r.Public, h4r.PackSettings{MaxItems: 4}, ""},
		{"zero limit", `pack := {"maxItems": 0}`, h4r.Public, h4r.PackSettings{}, "pack.maxItems is"},
		{"fractional limit", `pack := {"maxItems": 2.5}`, h4r.Public, h4r.PackSettings{}, "want a positive integer"},
		{"string limit", `pack := {"maxBytes": "10"}`, h4r.Public, h4r.PackSettings{}, "want a positive integer"},
		{"not an object", `pack := [1]`, h4r.Public, h4r.PackSettings{}, "want an object"},
		{"item is not in the pack input", `pack := {"maxItems": 1} if input.item.kind == "x"`, h4r.Public, h4r.PackSettings{}, ""},
		{"built-in error", `pack := {"maxItems": to_number(input.specialist.id)}`, h4r.Public, h4r.PackSettings{}, "to_number"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			engine, err := New(t.Context(), WithModules(map[string]string{"p.rego": "package cmo.context\n\nallow := true\n\n" + tc.rule + "\n"}))
			if err != nil {
				t.Fatal(err)
			}
			got, err := engine.PackSettings(t.Context(), spec(tc.level))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("PackSettings = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// writeBundle writes files as an OPA bundle (.tar.gz) and returns its path.
func writeBundle(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	path := filepath.Join(dir, "policy.tar.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for name, src := range files {
		if err := tw.WriteHeader(&tar.Header{Name: "/" + name, Mode: 0o644, Size: int64(len(src)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(src)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []interface{ Close() error }{tw, gz, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestBundle(t *testing.T) {
	path := writeBundle(t, t.TempDir(), map[string]string{
		"cmo/context.rego":      "package cmo.context\n\ndefault allow := false\n\nallow if input.item.kind in data.cmo.kinds\n",
		"cmo/context_test.rego": "package cmo.context_test\n\ntest_x if true\n",
		"data.json":             `{"cmo": {"kinds": ["note"]}}`,
	})
	engine, err := New(t.Context(), WithPolicyDir(path))
	if err != nil {
		t.Fatal(err)
	}
	if engine.Source() != path || len(engine.Files()) != 1 {
		t.Errorf("Source = %q, files %v; want %q and one module (tests skipped)", engine.Source(), engine.Files(), path)
	}
	for kind, want := range map[string]bool{"note": true, "test_failure": false} {
		it := memory(h4r.Metadata{})
		it.Kind = kind
		d, err := engine.Decide(t.Context(), spec(h4r.Public), it)
		if err != nil || d.Allow != want {
			t.Errorf("kind %s: %+v, %v; want allow %v (data.json from the bundle)", kind, d, err, want)
		}
	}
	files, _, err := Load(path, true)
	if err != nil || len(files) != 2 {
		t.Errorf("Load with tests = %v, %v; want 2 files", files, err)
	}
}

func TestBundleErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name      string
		path      string
		wantField string
		wantMsg   string
	}{
		{"syntax error in a bundled module", writeBundle(t, t.TempDir(), map[string]string{"p.rego": "package cmo.context\n\nallow if )\n"}), "policy.tar.gz/p.rego:3:10", "policy.tar.gz/p.rego:3:10: rego_parse_error"},
		{"not a gzip file", func() string {
			p := filepath.Join(dir, "junk.tar.gz")
			os.WriteFile(p, []byte("not gzip"), 0o644)
			return p
		}(), "policyDir", "reading policy bundle"},
		{"missing bundle", filepath.Join(dir, "absent.tar.gz"), "policyDir", "reading policy bundle"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(t.Context(), WithPolicyDir(tc.path))
			var herr *h4r.Error
			if !errors.As(err, &herr) {
				t.Fatalf("error %v is not an *h4r.Error", err)
			}
			if !strings.HasSuffix(herr.Field, tc.wantField) || !strings.Contains(herr.Message, tc.wantMsg) || herr.Code != h4r.EINVALID {
				t.Errorf("error field %q message %q; want field ending %q, message with %q", herr.Field, herr.Message, tc.wantField, tc.wantMsg)
			}
		})
	}
}

// FuzzDecodePackSettings: whatever a policy returns as pack settings is an
// error or positive limits, never a panic or a limit that could widen.
func FuzzDecodePackSettings(f *testing.F) {
	for _, s := range []string{`{"maxTokens": 10}`, `{"maxItems": 0}`, `{"reason": 3}`, `[]`, `{"maxBytes": 1e30}`, `{"maxBytes": -1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		v, err := ast.ParseTerm(src)
		if err != nil {
			return
		}
		doc, err := ast.JSON(v.Value)
		if err != nil {
			return
		}
		ps, _, err := decodePackSettings(doc)
		if err != nil {
			return
		}
		if ps.MaxBytes < 0 || ps.MaxTokens < 0 || ps.MaxItems < 0 {
			t.Fatalf("negative limit from %s: %+v", src, ps)
		}
	})
}

// TestDistinctInputs: items the policy sees alike are evaluated once, and
// only when the policy is deterministic; what it reads decides "alike".
func TestDistinctInputs(t *testing.T) {
	item := func(id string, trust float64, content string) *h4r.Item {
		it := memory(h4r.Metadata{Trust: ptr(trust), Version: len(id), AccessCount: int64(len(id) * 3)})
		it.ID, it.Content = id, map[string]any{"note": content}
		return it
	}
	items := []*h4r.Item{item("a", 0.9, "x"), item("bb", 0.9, "y"), item("ccc", 0.1, "x"), item("dddd", 0.9, "x")}
	cases := []struct {
		name      string
		policy    string
		wantTerms int
		wantSlot  []int
	}{
		{"reads trust only: two distinct inputs", "allow if input.item.metadata.trust > 0.5", 2, []int{0, 0, 1, 0}},
		{"reads content too", "allow if { input.item.metadata.trust > 0.5; input.item.content.note == \"x\" }", 3, []int{0, 1, 2, 0}},
		{"reads the id: all distinct", "allow if input.item.id != \"\"", 4, []int{0, 1, 2, 3}},
		{"reads all metadata (version differs)", "allow if count(input.item.metadata) > 0", 4, []int{0, 1, 2, 3}},
		{"non-deterministic: never merged", "allow if { input.item.metadata.trust > 0.5; time.now_ns() > 0 }", 4, []int{0, 1, 2, 3}},
		{"reads nothing of the item: one input", "allow if true", 1, []int{0, 0, 0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			engine, err := New(t.Context(), WithModules(map[string]string{"p.rego": "package cmo.context\n\ndefault allow := false\n\n" + tc.policy + "\n"}))
			if err != nil {
				t.Fatal(err)
			}
			terms, _, slot, err := engine.distinctInputs(items)
			if err != nil {
				t.Fatal(err)
			}
			if len(terms) != tc.wantTerms || !reflect.DeepEqual(slot, tc.wantSlot) {
				t.Errorf("%d inputs, slots %v; want %d and %v", len(terms), slot, tc.wantTerms, tc.wantSlot)
			}
			batch := engine.DecideBatch(t.Context(), spec(h4r.Public), items)
			for i, it := range items {
				want, err := engine.Decide(t.Context(), spec(h4r.Public), it)
				if err != nil || batch[i].Err != nil || !reflect.DeepEqual(batch[i].Decision, want) {
					t.Errorf("item %s: batch %+v (%v), alone %+v (%v)", it.ID, batch[i].Decision, batch[i].Err, want, err)
				}
			}
		})
	}
}

// TestDecisionMemo: decisions are remembered by specialist and input as
// the policy sees it — never across specialists, never for a policy with
// non-deterministic built-ins, never for failures.
func TestDecisionMemo(t *testing.T) {
	// The memo is OPA's path: compiled predicates decide without it.
	engine, err := New(t.Context(), WithCompiledPredicates(0))
	if err != nil {
		t.Fatal(err)
	}
	secret := memory(h4r.Metadata{Sensitivity: ptr(0.9), RestrictedToGroups: []string{"qa"}})
	cleared, public := spec(h4r.Restricted, "qa"), spec(h4r.Public, "qa")
	steps := []struct {
		name      string
		who       h4r.Specialist
		wantAllow bool
		wantMemo  int
	}{
		{"cleared specialist allowed", cleared, true, 1},
		{"public specialist with the same groups denied, not answered from the memo", public, false, 2},
		{"cleared again: remembered", cleared, true, 2},
		{"public again: remembered", public, false, 2},
	}
	for _, st := range steps {
		twin := memory(secret.Metadata)
		twin.ID = "another id, same metadata"
		r := engine.DecideBatch(t.Context(), st.who, []*h4r.Item{secret, twin})
		for i := range r {
			if r[i].Err != nil || r[i].Decision.Allow != st.wantAllow {
				t.Fatalf("%s: item %d %+v, want allow %v", st.name, i, r[i], st.wantAllow)
			}
		}
		if got := engine.decisions.Len(); got != st.wantMemo {
			t.Errorf("%s: %d decisions remembered, want %d", st.name, got, st.wantMemo)
		}
	}

	nondet, err := New(t.Context(), WithModules(map[string]string{"p.rego": "package cmo.context\n\nallow if time.now_ns() > 0\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if nondet.decisions != nil || nondet.memo {
		t.Error("a policy calling time.now_ns remembers decisions")
	}

	failing, err := New(t.Context(), WithModules(map[string]string{"p.rego": "package cmo.context\n\nallow := \"yes\"\n"}))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r := failing.DecideBatch(t.Context(), public, []*h4r.Item{secret}); r[0].Err == nil || r[0].Decision.Allow {
			t.Fatalf("failing policy: %+v", r[0])
		}
	}
	if failing.decisions.Len() != 0 {
		t.Error("a failed decision was remembered")
	}
}
