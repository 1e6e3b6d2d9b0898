package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func TestNewRejectsBadPolicies(t *testing.T) {
	cases := []struct {
		name      string
		opts      []Option
		wantField string
		wantMsg   string
	}{
		{
			name:      "syntax error names file and line",
			opts:      []Option{WithModules(map[string]string{"bad.rego": "package cmo.context\n\nallow if )\n\nreason := \"x\"\n"})},
			wantField: "bad.rego",
			wantMsg:   "bad.rego:3:10: rego_parse_error",
		},
		{
			name:      "unsafe variable names file and line",
			opts:      []Option{WithModules(map[string]string{"unsafe.rego": "package cmo.context\n\ndefault allow := false\n\nallow if x > 1\n"})},
			wantField: "unsafe.rego",
			wantMsg:   "unsafe.rego:5:10: rego_unsafe_var_error",
		},
		{
			name:      "Rego v0 syntax is refused",
			opts:      []Option{WithModules(map[string]string{"v0.rego": "package cmo.context\n\nallow { true }\n"})},
			wantField: "v0.rego",
			wantMsg:   "v0.rego:3",
		},
		{
			name:      "no package cmo.context",
			opts:      []Option{WithModules(map[string]string{"other.rego": "package cmo.other\n\nallow := true\n"})},
			wantField: "policy",
			wantMsg:   "declares no package cmo.context",
		},
		{
			name:      "no allow rule",
			opts:      []Option{WithModules(map[string]string{"noallow.rego": "package cmo.context\n\nreason := \"x\"\n"})},
			wantField: "policy",
			wantMsg:   "no allow rule",
		},
		{
			name:      "empty policy directory",
			opts:      []Option{WithPolicyDir(t.TempDir())},
			wantField: "policyDir",
			wantMsg:   "holds no .rego files",
		},
		{
			name:      "missing policy directory",
			opts:      []Option{WithPolicyDir(filepath.Join(t.TempDir(), "absent"))},
			wantField: "policyDir",
			wantMsg:   "reading policy directory",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			engine, err := New(t.Context(), tc.opts...)
			if err == nil {
				t.Fatalf("New succeeded (revision %s), want an error", engine.Revision())
			}
			var herr *h4r.Error
			if !errors.As(err, &herr) || herr.Code != h4r.EINVALID {
				t.Fatalf("error %v is not an invalid_argument *h4r.Error", err)
			}
			if herr.Field != tc.wantField && !strings.HasPrefix(herr.Field, tc.wantField+":") {
				t.Errorf("field = %q, want %q", herr.Field, tc.wantField)
			}
			if !strings.Contains(herr.Message, tc.wantMsg) {
				t.Errorf("message %q does not contain %q", herr.Message, tc.wantMsg)
			}
		})
	}
}

// TestDecideFailsClosed: every decision that cannot be made is an error,
// never a zero-value or default allow.
func TestDecideFailsClosed(t *testing.T) {
	cases := []struct {
		name    string
		policy  string
		wantErr string
	}{
		{"conflicting values at eval time", "reason := \"a\"\nreason := \"b\" if input.item.kind == \"note\"\nallow := true", "conflict"},
		{"built-in error", "allow if to_number(input.item.kind) > 0", "to_number"},
		{"allow undefined", "allow if input.item.kind == \"never\"", "decision.allow is missing"},
		{"allow not a boolean", "allow := \"yes\"", "decision.allow is a string"},
		{"redact not a boolean", "allow := true\nredact := 1", "decision.redact is"},
		{"redactedFields not a list", "allow := true\nredactedFields := \"$.text\"", "decision.redactedFields is a string"},
		{"redactedFields entry not a string", "allow := true\nredactedFields := [\"$.text\", 3]", "decision.redactedFields[1]"},
		{"reason not a string", "allow := true\nreason := [\"x\"]", "decision.reason is"},
	}
	item := memory(h4r.Metadata{})
	item.Kind = "note"
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			engine, err := New(t.Context(), WithModules(map[string]string{"p.rego": "package cmo.context\n\n" + tc.policy + "\n"}))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			d, err := engine.Decide(t.Context(), spec(h4r.Restricted), item)
			if err == nil {
				t.Fatalf("Decide = %+v, want an error", d)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), `"mem-001"`) {
				t.Errorf("error %q does not name the item", err)
			}
			if d.Allow {
				t.Errorf("failed decision has Allow = true")
			}
		})
	}
}

func TestDecideRejectsNilItem(t *testing.T) {
	engine, err := New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for name, decide := range map[string]func() (h4r.Decision, error){
		"rego":  func() (h4r.Decision, error) { return engine.Decide(t.Context(), spec(h4r.Public), nil) },
		"local": func() (h4r.Decision, error) { return LocalRules{}.Decide(t.Context(), spec(h4r.Public), nil) },
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decide()
			if h4r.ErrorCode(err) != h4r.EINVALID {
				t.Fatalf("error = %v, want invalid_argument", err)
			}
		})
	}
}

func TestDecideHonoursCancelledContext(t *testing.T) {
	engine, err := New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if d, err := engine.Decide(ctx, spec(h4r.Public), memory(h4r.Metadata{})); err == nil {
		t.Fatalf("Decide with a cancelled context = %+v, want an error", d)
	}
}

func TestWithPolicyDir(t *testing.T) {
	const dir = "testdata/policydir"
	engine, err := New(t.Context(), WithPolicyDir(dir))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if engine.Source() != dir {
		t.Errorf("Source() = %q, want %q", engine.Source(), dir)
	}
	cases := []struct {
		name string
		kind string
		want h4r.Decision
	}{
		{"user rule allows a note", "note", h4r.Decision{Allow: true, RedactedFields: []string{}, Reason: "note"}},
		{"user rule denies the rest", "test_failure", h4r.Decision{Allow: false, RedactedFields: []string{}, Reason: "not a note"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			item := memory(h4r.Metadata{HasCredentials: true}) // the bundled rules are not loaded
			item.Kind = tc.kind
			got, err := engine.Decide(t.Context(), spec(h4r.Public), item)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRevision(t *testing.T) {
	revisionOf := func(t *testing.T, opts ...Option) string {
		t.Helper()
		engine, err := New(t.Context(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return engine.Revision()
	}
	bundled := revisionOf(t)
	if !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(bundled) {
		t.Fatalf("bundled revision %q is not 12 hex digits", bundled)
	}
	if again := revisionOf(t); again != bundled {
		t.Errorf("bundled revision changed between loads: %s then %s", bundled, again)
	}
	userDir := revisionOf(t, WithPolicyDir("testdata/policydir"))
	if userDir == bundled {
		t.Errorf("user policy has the bundled revision %s", bundled)
	}

	// The same files elsewhere have the same revision; an edit changes it.
	moved := t.TempDir()
	for _, rel := range []string{"context.rego", "extra/helpers.rego"} {
		src, err := os.ReadFile(filepath.Join("testdata/policydir", rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(moved, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(moved, rel), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := revisionOf(t, WithPolicyDir(moved)); got != userDir {
		t.Errorf("moved policy revision = %s, want %s", got, userDir)
	}
	f, err := os.OpenFile(filepath.Join(moved, "extra/helpers.rego"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\nmore := 1\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := revisionOf(t, WithPolicyDir(moved)); got == userDir {
		t.Errorf("edited policy kept revision %s", got)
	}
}

// TestInputGolden pins the policy input's shape; run with -update after an
// intended change.
func TestInputGolden(t *testing.T) {
	created := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		spec h4r.Specialist
		item *h4r.Item
	}{
		{"full", spec(h4r.Internal, "qa"), &h4r.Item{
			ID: "mem-001", Kind: "test_failure", Text: "login failed",
			Content: map[string]any{"selector": "#login-button", "personalData": map[string]any{"email": "a@b.c"}},
			Metadata: h4r.Metadata{
				CreatedAt: created, Importance: ptr(0.7), Trust: ptr(0.9), Sensitivity: ptr(0.2), Novelty: ptr(0.1),
				ContainsPII: true, PIIFields: []string{"$.content.personalData"}, RestrictedToGroups: []string{"qa"},
				Tags: []string{"selector"}, Source: "playwright", Version: 2, AccessCount: 3, ByteSize: 210, Tokens: 55,
				Extra: map[string]any{"test_type": "e2e", "status": "failed"},
			},
		}},
		{"defaults", h4r.Anonymous(), &h4r.Item{ID: "mem-002", Text: "bare"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.MarshalIndent(Input(tc.spec, tc.item), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "input_"+tc.name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create it): %v", err)
			}
			if !bytes.Equal(bytes.TrimSpace(want), got) {
				t.Errorf("Input differs from %s:\n got: %s\nwant: %s", golden, got, want)
			}
		})
	}
}

func TestInputFillsMetadataDefaults(t *testing.T) {
	meta := Input(h4r.Anonymous(), &h4r.Item{ID: "x", Text: "t"})["item"].(map[string]any)["metadata"].(map[string]any)
	want := map[string]any{
		"importance": h4r.DefaultImportance, "trust": h4r.DefaultTrust,
		"sensitivity": h4r.DefaultSensitivity, "novelty": h4r.DefaultNovelty,
		"piiFields": []any{}, "restrictedToGroups": []any{}, "containsPII": false, "hasCredentials": false,
	}
	for key, w := range want {
		if got := meta[key]; !reflect.DeepEqual(got, w) {
			t.Errorf("metadata.%s = %#v, want %#v", key, got, w)
		}
	}
}

// TestDecideConcurrent runs the decision table from several goroutines on
// one Engine (meaningful under -race).
func TestDecideConcurrent(t *testing.T) {
	engine, err := New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(decisionCases))
	for range 4 {
		wg.Go(func() {
			for _, tc := range decisionCases {
				got, err := engine.Decide(t.Context(), tc.spec, memory(tc.meta))
				if err != nil {
					errs <- err
					continue
				}
				if !reflect.DeepEqual(got, tc.want) {
					errs <- errors.New(tc.name + ": wrong decision under concurrency")
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// FuzzDecodeDecision: whatever a user policy's package document holds,
// reading it never panics, and a decision only comes back when allow was a
// boolean.
func FuzzDecodeDecision(f *testing.F) {
	f.Add(`{"allow": true, "redact": true, "redactedFields": ["$.text"], "reason": "pii"}`)
	f.Add(`{"allow": false, "reason": "credentials", "helper": {"x": 1}}`)
	f.Add(`{"allow": "yes"}`)
	f.Add(`{"redactedFields": [1, 2]}`)
	f.Add(`[true]`)
	f.Fuzz(func(t *testing.T, doc string) {
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		d, err := decodeDecision(v)
		if err != nil {
			return
		}
		m := v.(map[string]any)
		if allow, ok := m["allow"].(bool); !ok || allow != d.Allow {
			t.Fatalf("decoded %+v from %s", d, doc)
		}
		if d.RedactedFields == nil {
			t.Fatalf("RedactedFields is nil, want a list")
		}
	})
}
