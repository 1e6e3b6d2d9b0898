package scs

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/policy"
	"github.com/h4r/h4r/policy/opatest"
)

func engineOf(t *testing.T, src string) *policy.Engine {
	t.Helper()
	e, err := policy.New(t.Context(), policy.WithModules(map[string]string{"p.rego": src}))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestSlicePackSettings: pack-level settings narrow the budget (never
// widen it), and settings that cannot be read fail closed.
func TestSlicePackSettings(t *testing.T) {
	ids := []string{"plain-a", "plain-b", "tiny", "pii"}
	limits := Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 3}
	cases := []struct {
		name         string
		pack         string
		fallback     bool
		wantKept     int
		wantItems    int
		wantWarning  string
		wantFallback bool
	}{
		{"narrows the item budget", `pack := {"maxItems": 2, "reason": "small packs"}`, false, 2, 2, "the policy narrowed budget.maxItems from 3 to 2 (small packs)", false},
		{"never widens", `pack := {"maxItems": 50}`, false, 3, 3, "", false},
		{"undefined sets nothing", `pack := {"maxItems": 1} if input.specialist.securityLevel == "public"`, false, 3, 3, "", false},
		{"unreadable settings fail closed", `pack := {"maxItems": "two"}`, false, 0, 3, "the policy's pack settings could not be read; nothing was delivered", false},
		{"with the fallback the request's budget stands", `pack := {"maxItems": "two"}`, true, 3, 3, "the request's budget stands", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			engine := engineOf(t, "package cmo.context\n\nallow := true\n\n"+tc.pack+"\n")
			var opts []Option
			if tc.fallback {
				opts = append(opts, WithFallback(policy.LocalRules{}))
			}
			out := New(engine, counter(t), opts...).Slice(t.Context(), internalQA, pick(t, ids...), limits)
			if out.Stats.TotalKept != tc.wantKept || out.Stats.BudgetLimit.Items != tc.wantItems {
				t.Errorf("kept %d with item limit %d, want %d and %d", out.Stats.TotalKept, out.Stats.BudgetLimit.Items, tc.wantKept, tc.wantItems)
			}
			if tc.wantWarning != "" && !containsWarning(out, tc.wantWarning) {
				t.Errorf("warnings %q lack %q", out.Warnings, tc.wantWarning)
			}
			if tc.wantWarning == "" && len(out.Warnings) > 0 {
				t.Errorf("unexpected warnings %q", out.Warnings)
			}
			if out.Stats.FallbackUsed != tc.wantFallback {
				t.Errorf("FallbackUsed = %v, want %v", out.Stats.FallbackUsed, tc.wantFallback)
			}
			if tc.wantKept == 0 {
				for _, v := range out.Verdicts {
					if v.Reason != h4r.ReasonPolicy || v.Delivered != nil {
						t.Errorf("verdict %+v, want a policy drop", v)
					}
				}
			}
		})
	}
}

// switching hands out one policy on the first Snapshot and another on
// every later one, as a reload between two requests would.
type switching struct {
	first, later policy.Decider
	n            int
}

func (s *switching) Decide(ctx context.Context, spec h4r.Specialist, item *h4r.Item) (h4r.Decision, error) {
	return s.later.Decide(ctx, spec, item)
}

func (s *switching) Snapshot() h4r.Decider {
	s.n++
	if s.n == 1 {
		return s.first
	}
	return s.later
}

// TestSliceDecidesARequestWithOneSnapshot: every item of a request is
// decided by the policy snapshot taken when the request started.
func TestSliceDecidesARequestWithOneSnapshot(t *testing.T) {
	denyAll := engineOf(t, "package cmo.context\n\nallow := false\n\nreason := \"old\"\n")
	allowAll := engineOf(t, "package cmo.context\n\nallow := true\n")
	sw := &switching{first: denyAll, later: allowAll}
	slicer := New(sw, counter(t), WithPerItem())
	limits := Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 10}
	first := slicer.Slice(t.Context(), internalQA, pick(t, "plain-a", "plain-b", "tiny"), limits)
	if first.Stats.TotalKept != 0 || first.Stats.PolicyRevision != denyAll.Revision() {
		t.Errorf("first request: %+v, want every item decided by the first policy", first.Stats)
	}
	second := slicer.Slice(t.Context(), internalQA, pick(t, "plain-a", "plain-b", "tiny"), limits)
	if second.Stats.TotalKept != 3 || second.Stats.PolicyRevision != allowAll.Revision() {
		t.Errorf("second request: %+v, want the new policy", second.Stats)
	}
}

// TestDecisionLog: drops and redactions are logged as JSON lines with the
// request id and the revision; kept plain items are not; redacted values
// never appear.
func TestDecisionLog(t *testing.T) {
	var buf bytes.Buffer
	engine := defaultEngine(t)
	slicer := New(engine, counter(t), WithDecisionLog(NewJSONLog(&buf, nil)))
	ctx := h4r.WithRequestID(t.Context(), "req-42")
	items := pick(t, "plain-a", "pii", "creds", "low-trust", "bad-path")
	items[1].Metadata.Version = 3
	slicer.Slice(ctx, internalQA, items, Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 10})

	var got []DecisionRecord
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var r DecisionRecord
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, r)
	}
	want := []struct{ id, decision, reason string }{
		{"pii", DecisionRedact, "pii"},
		{"creds", DecisionDrop, "credentials"},
		{"low-trust", DecisionDrop, "low_trust"},
		{"bad-path", DecisionDrop, "policy error: "},
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(got), len(want), buf.String())
	}
	for i, w := range want {
		r := got[i]
		if r.ItemID != w.id || r.Decision != w.decision || !strings.HasPrefix(r.Reason, w.reason) {
			t.Errorf("record %d = %+v, want %+v", i, r, w)
		}
		if r.RequestID != "req-42" || r.PolicyRevision != engine.Revision() || r.Specialist != internalQA.ID || r.Time.IsZero() {
			t.Errorf("record %d lacks request id, revision, specialist or time: %+v", i, r)
		}
	}
	if got[0].ItemVersion != 3 || len(got[0].RedactedFields) == 0 {
		t.Errorf("redact record = %+v, want version 3 and the paths", got[0])
	}
	for _, secret := range []string{"ada@example.com", "grace@example.com", "secret-token-value", "hidden value", "AKIA-not-a-real-key"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("decision log contains the value %q", secret)
		}
	}
}

// TestSliceWithRemoteOPA: a real OPA server decides, then is stopped mid-run;
// without the fallback the items are dropped and the pack says OPA was
// unreachable, with it the local rules decide and the pack says so.
func TestSliceWithRemoteOPA(t *testing.T) {
	src, err := policyFile()
	if err != nil {
		t.Fatal(err)
	}
	opa := opatest.Start(t, map[string]string{"context.rego": src})
	remote, err := policy.NewRemote(opa.URL, policy.WithTimeout(patient))
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"plain-a", "pii", "creds", "low-trust"}
	limits := Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 10}
	embedded := New(defaultEngine(t), counter(t)).Slice(t.Context(), internalQA, pick(t, ids...), limits)
	strict := New(remote, counter(t))
	withFallback := New(remote, counter(t), WithFallback(policy.LocalRules{}))

	running := strict.Slice(t.Context(), internalQA, pick(t, ids...), limits)
	if got, want := reasons(running), reasons(embedded); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("remote reasons %v, embedded %v", got, want)
	}
	if running.Stats.PolicyRevision != policy.RemoteRevision {
		t.Errorf("revision = %q", running.Stats.PolicyRevision)
	}

	opa.Stop()
	down := strict.Slice(t.Context(), internalQA, pick(t, ids...), limits)
	for i, v := range down.Verdicts {
		if v.Reason != h4r.ReasonPolicy || v.Delivered != nil {
			t.Errorf("item %s with OPA down: %+v, want dropped", ids[i], v)
		}
	}
	if !containsWarning(down, "no policy decision could be made for 4 items") || !containsWarning(down, "OPA unreachable") {
		t.Errorf("warnings %q do not say OPA was unreachable", down.Warnings)
	}
	fell := withFallback.Slice(t.Context(), internalQA, pick(t, ids...), limits)
	if got, want := reasons(fell), reasons(embedded); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("fallback reasons %v, want %v", got, want)
	}
	if !fell.Stats.FallbackUsed || !containsWarning(fell, "local fallback rules decided") {
		t.Errorf("stats %+v warnings %q: want the fallback reported", fell.Stats, fell.Warnings)
	}
	if v := fell.Verdicts[1]; !v.Redacted {
		t.Errorf("fallback delivered PII unredacted: %+v", v)
	}
}

// patient is the remote deadline of tests: the outcome must not depend on
// machine load.
const patient = 10 * time.Second

func policyFile() (string, error) {
	b, err := os.ReadFile("../policy/rego/context.rego")
	return string(b), err
}

// countingCounter counts how often tokens are counted.
type countingCounter struct {
	TokenCounter
	calls int
}

func (c *countingCounter) Count(s string) int { c.calls++; return c.TokenCounter.Count(s) }

// TestSizeCache: a redacted item from a store is measured once per version;
// items without a version every time; the sizes are the same either way.
func TestSizeCache(t *testing.T) {
	limits := Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 10}
	cases := []struct {
		name      string
		opts      []Option
		versions  []int
		wantCalls int
	}{
		{"same version measured once", nil, []int{1, 1, 1}, 1},
		{"a new version is measured again", nil, []int{1, 2, 2}, 2},
		{"no version, no caching", nil, []int{0, 0, 0}, 3},
		{"cache turned off", []Option{WithSizeCache(0)}, []int{1, 1, 1}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cc := &countingCounter{TokenCounter: counter(t)}
			slicer := New(defaultEngine(t), cc, tc.opts...)
			var first Verdict
			for i, v := range tc.versions {
				item := pick(t, "pii")[0]
				item.Metadata.Version = v
				out := slicer.Slice(t.Context(), internalQA, []*h4r.Item{item}, limits)
				got := out.Verdicts[0]
				if !got.Redacted || got.Tokens == 0 {
					t.Fatalf("verdict %+v, want a redacted, measured item", got)
				}
				if i == 0 {
					first = got
				} else if got.Bytes != first.Bytes || got.Tokens != first.Tokens {
					t.Errorf("sizes %d/%d, first %d/%d", got.Bytes, got.Tokens, first.Bytes, first.Tokens)
				}
			}
			if cc.calls != tc.wantCalls {
				t.Errorf("counted tokens %d times, want %d", cc.calls, tc.wantCalls)
			}
		})
	}
}
