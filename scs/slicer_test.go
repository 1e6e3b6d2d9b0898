package scs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/policy"
	"github.com/h4r/h4r/tokens"
)

// cl100k loads the real tokenizer once for all tests (loading takes tens of
// milliseconds).
var cl100k = sync.OnceValues(func() (*tokens.Counter, error) { return tokens.New(tokens.CL100K) })

func counter(t testing.TB) *tokens.Counter {
	t.Helper()
	c, err := cl100k()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func defaultEngine(t testing.TB) *policy.Engine {
	t.Helper()
	e, err := policy.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// fixtures returns fresh copies of the items in testdata/items.json, by id.
func fixtures(t testing.TB) map[string]*h4r.Item {
	t.Helper()
	raw, err := os.ReadFile("testdata/items.json")
	if err != nil {
		t.Fatal(err)
	}
	var items []*h4r.Item
	if err := json.Unmarshal(raw, &items); err != nil {
		t.Fatal(err)
	}
	byID := map[string]*h4r.Item{}
	for _, it := range items {
		byID[it.ID] = it
	}
	return byID
}

func pick(t testing.TB, ids ...string) []*h4r.Item {
	t.Helper()
	all := fixtures(t)
	out := make([]*h4r.Item, len(ids))
	for i, id := range ids {
		if all[id] == nil {
			t.Fatalf("no fixture %q", id)
		}
		out[i] = all[id]
	}
	return out
}

// size measures an item as delivered unredacted, independently of the
// slicer: the JSON of h4r.Delivered and its cl100k token count.
func size(t testing.TB, it *h4r.Item) (bytes, toks int) {
	t.Helper()
	b, err := it.Delivered().Encode()
	if err != nil {
		t.Fatal(err)
	}
	return len(b), counter(t).Count(string(b))
}

var internalQA = h4r.Specialist{Type: "specialist", ID: "healer", SecurityLevel: h4r.Internal, AuthorizedGroups: []string{"qa"}}

const unlimited = 1 << 30

// checkStats asserts that the stats agree with the verdicts.
func checkStats(t *testing.T, out Outcome, n int, limits Limits) {
	t.Helper()
	s := out.Stats
	if len(out.Verdicts) != n || s.TotalCandidates != n {
		t.Errorf("%d verdicts, TotalCandidates %d, want %d", len(out.Verdicts), s.TotalCandidates, n)
	}
	if s.TotalKept+s.TotalDroppedBudget+s.TotalDroppedPolicy != s.TotalCandidates {
		t.Errorf("kept %d + budget %d + policy %d != candidates %d", s.TotalKept, s.TotalDroppedBudget, s.TotalDroppedPolicy, s.TotalCandidates)
	}
	var used h4r.BudgetUsage
	var kept, redacted, policyDrops int
	for _, v := range out.Verdicts {
		switch v.Reason {
		case h4r.ReasonKept:
			kept++
			used.Bytes += v.Bytes
			used.EstimatedTokens += v.Tokens
			used.Items++
			if v.Redacted {
				redacted++
			}
			if v.Delivered == nil {
				t.Errorf("kept verdict without a delivered item: %+v", v)
			}
		case h4r.ReasonPolicy:
			policyDrops++
		}
		if v.Reason != h4r.ReasonKept && v.Delivered != nil {
			t.Errorf("%s verdict carries a delivered item", v.Reason)
		}
	}
	if kept != s.TotalKept || redacted != s.TotalRedacted || policyDrops != s.TotalDroppedPolicy {
		t.Errorf("stats kept/redacted/policy = %d/%d/%d, verdicts say %d/%d/%d", s.TotalKept, s.TotalRedacted, s.TotalDroppedPolicy, kept, redacted, policyDrops)
	}
	if used != s.BudgetUsed {
		t.Errorf("BudgetUsed = %+v, kept verdicts sum to %+v", s.BudgetUsed, used)
	}
	if want := (h4r.BudgetUsage{Bytes: limits.MaxBytes, EstimatedTokens: limits.MaxTokens, Items: limits.MaxItems}); s.BudgetLimit != want {
		t.Errorf("BudgetLimit = %+v, want %+v", s.BudgetLimit, want)
	}
	if s.BudgetUsed.Bytes > limits.MaxBytes || s.BudgetUsed.EstimatedTokens > limits.MaxTokens || s.BudgetUsed.Items > limits.MaxItems {
		t.Errorf("BudgetUsed %+v exceeds the limits %+v", s.BudgetUsed, limits)
	}
}

func reasons(out Outcome) []string {
	r := make([]string, len(out.Verdicts))
	for i, v := range out.Verdicts {
		r[i] = v.Reason
	}
	return r
}

// giant returns plain-a with a text of n copies of word: n tokens or more,
// and at least n*len(word) bytes.
func giant(t testing.TB, word string, n int) *h4r.Item {
	it := pick(t, "plain-a")[0]
	it.ID = "giant"
	it.Text = strings.Repeat(word, n)
	return it
}

func TestSliceBudgets(t *testing.T) {
	a, b, tiny := pick(t, "plain-a")[0], pick(t, "plain-b")[0], pick(t, "tiny")[0]
	aBytes, aTokens := size(t, a)
	bBytes, bTokens := size(t, b)
	tinyBytes, tinyTokens := size(t, tiny)
	if tinyBytes >= bBytes || tinyTokens >= bTokens {
		t.Fatalf("fixture tiny (%d bytes, %d tokens) must be smaller than plain-b (%d, %d)", tinyBytes, tinyTokens, bBytes, bTokens)
	}
	// Bytes-heavy (few tokens per byte) and token-heavy (many tokens per
	// byte) giants.
	byteGiant := giant(t, " ", 4000)
	tokenGiant := giant(t, "0 ", 300)

	cases := []struct {
		name    string
		items   []*h4r.Item
		limits  Limits
		want    []string
		details []string // substrings, "" for none
	}{
		{
			name:   "everything fits",
			items:  []*h4r.Item{a, b, tiny},
			limits: Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 10},
			want:   []string{h4r.ReasonKept, h4r.ReasonKept, h4r.ReasonKept},
		},
		{
			name:   "exact fit on bytes and tokens",
			items:  []*h4r.Item{a, b},
			limits: Limits{MaxBytes: aBytes + bBytes, MaxTokens: aTokens + bTokens, MaxItems: 2},
			want:   []string{h4r.ReasonKept, h4r.ReasonKept},
		},
		{
			name:   "byte budget stops the walk, a smaller later item too",
			items:  []*h4r.Item{a, b, tiny},
			limits: Limits{MaxBytes: aBytes + bBytes - 1, MaxTokens: unlimited, MaxItems: 10},
			want:   []string{h4r.ReasonKept, h4r.ReasonBudgetBytes, h4r.ReasonBudgetBytes},
			details: []string{"", fmt.Sprintf("needs %d bytes, %d of %d left", bBytes, bBytes-1, aBytes+bBytes-1),
				`byte budget ran out at item "plain-b"`},
		},
		{
			name:   "token budget stops the walk",
			items:  []*h4r.Item{a, b, tiny},
			limits: Limits{MaxBytes: unlimited, MaxTokens: aTokens + bTokens - 1, MaxItems: 10},
			want:   []string{h4r.ReasonKept, h4r.ReasonBudgetTokens, h4r.ReasonBudgetTokens},
			details: []string{"", fmt.Sprintf("needs %d tokens, %d of %d left", bTokens, bTokens-1, aTokens+bTokens-1),
				`token budget ran out at item "plain-b"`},
		},
		{
			name:    "item budget",
			items:   []*h4r.Item{a, b, tiny},
			limits:  Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 2},
			want:    []string{h4r.ReasonKept, h4r.ReasonKept, h4r.ReasonBudgetItems},
			details: []string{"", "", "item budget of 2 reached"},
		},
		{
			name:    "item budget of one",
			items:   []*h4r.Item{tiny, a, b},
			limits:  Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 1},
			want:    []string{h4r.ReasonKept, h4r.ReasonBudgetItems, h4r.ReasonBudgetItems},
			details: []string{"", "item budget of 1 reached", "item budget of 1 reached"},
		},
		{
			name:    "an item larger than the whole byte budget is skipped",
			items:   []*h4r.Item{byteGiant, a, b},
			limits:  Limits{MaxBytes: aBytes + bBytes, MaxTokens: unlimited, MaxItems: 10},
			want:    []string{h4r.ReasonBudgetBytes, h4r.ReasonKept, h4r.ReasonKept},
			details: []string{fmt.Sprintf("more than the whole budget of %d", aBytes+bBytes), "", ""},
		},
		{
			name:    "an item with more tokens than the whole budget is skipped",
			items:   []*h4r.Item{a, tokenGiant, b},
			limits:  Limits{MaxBytes: unlimited, MaxTokens: aTokens + bTokens, MaxItems: 10},
			want:    []string{h4r.ReasonKept, h4r.ReasonBudgetTokens, h4r.ReasonKept},
			details: []string{"", fmt.Sprintf("more than the whole budget of %d", aTokens+bTokens), ""},
		},
		{
			name:    "policy drops use no budget and do not stop the walk",
			items:   pick(t, "plain-a", "creds", "low-trust", "plain-b"),
			limits:  Limits{MaxBytes: aBytes + bBytes, MaxTokens: aTokens + bTokens, MaxItems: 2},
			want:    []string{h4r.ReasonKept, h4r.ReasonPolicy, h4r.ReasonPolicy, h4r.ReasonKept},
			details: []string{"", "policy: credentials", "policy: low_trust", ""},
		},
		{
			name:    "policy is still decided after the budget ran out",
			items:   pick(t, "plain-a", "plain-b", "creds", "tiny"),
			limits:  Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 1},
			want:    []string{h4r.ReasonKept, h4r.ReasonBudgetItems, h4r.ReasonPolicy, h4r.ReasonBudgetItems},
			details: []string{"", "item budget of 1 reached", "policy: credentials", "item budget of 1 reached"},
		},
		{
			name:    "zero limits deliver nothing",
			items:   []*h4r.Item{a, tiny},
			limits:  Limits{MaxBytes: 0, MaxTokens: unlimited, MaxItems: 10},
			want:    []string{h4r.ReasonBudgetBytes, h4r.ReasonBudgetBytes},
			details: []string{"more than the whole budget of 0", "more than the whole budget of 0"},
		},
	}
	slicer := New(defaultEngine(t), counter(t))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := slicer.Slice(t.Context(), internalQA, tc.items, tc.limits)
			checkStats(t, out, len(tc.items), tc.limits)
			if got := reasons(out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("reasons = %v, want %v", got, tc.want)
			}
			for i, want := range tc.details {
				if got := out.Verdicts[i].Detail; !strings.Contains(got, want) || (want == "" && got != "") {
					t.Errorf("item %d detail = %q, want %q", i, got, want)
				}
			}
			for i, v := range out.Verdicts {
				if v.Reason != h4r.ReasonKept {
					continue
				}
				wantBytes, wantTokens := size(t, tc.items[i])
				if v.Bytes != wantBytes || v.Tokens != wantTokens {
					t.Errorf("item %d measured %d bytes %d tokens, want %d and %d", i, v.Bytes, v.Tokens, wantBytes, wantTokens)
				}
			}
		})
	}
}

func TestSliceUsesStoredSizesOnlyWhenUnredacted(t *testing.T) {
	items := pick(t, "plain-a", "pii")
	// Sizes the store would have computed at ingest, deliberately unlike
	// the real ones so that the test can tell which were used.
	for _, it := range items {
		it.Metadata.ByteSize, it.Metadata.Tokens = 11, 7
	}
	out := New(defaultEngine(t), counter(t)).Slice(t.Context(), internalQA, items, Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 10})
	if v := out.Verdicts[0]; v.Bytes != 11 || v.Tokens != 7 {
		t.Errorf("unredacted item measured %d bytes %d tokens, want the stored 11 and 7", v.Bytes, v.Tokens)
	}
	v := out.Verdicts[1]
	if !v.Redacted {
		t.Fatalf("pii item not redacted: %+v", v)
	}
	encoded, err := v.Delivered.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if v.Bytes != len(encoded) || v.Tokens != counter(t).Count(string(encoded)) {
		t.Errorf("redacted item measured %d bytes %d tokens, want its delivered form's %d and %d", v.Bytes, v.Tokens, len(encoded), counter(t).Count(string(encoded)))
	}
}

func TestSliceRedactsPII(t *testing.T) {
	items := pick(t, "pii")
	out := New(defaultEngine(t), counter(t), WithRedactionMarker("<hidden>")).
		Slice(t.Context(), internalQA, items, Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 10})
	checkStats(t, out, 1, Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 10})
	v := out.Verdicts[0]
	if v.Reason != h4r.ReasonKept || !v.Redacted {
		t.Fatalf("verdict = %+v, want kept and redacted", v)
	}
	// The bundled policy adds $.text: the item does not say its text is clean.
	wantApplied := []string{"$.content.personalData.email", "$.content.users[*].email", "$.content.list[0]", "$.content['key with spaces']", "$.text"}
	if !reflect.DeepEqual(v.RedactedFields, wantApplied) {
		t.Errorf("RedactedFields = %q, want %q (the missing path left out)", v.RedactedFields, wantApplied)
	}
	if v.Delivered.Text != "<hidden>" {
		t.Errorf("delivered text = %q, want it redacted", v.Delivered.Text)
	}
	want := decodeContent(t, `{
		"personalData": {"email": "<hidden>", "phone": "+44 20 7946 0000", "country": "UK"},
		"users": [{"email": "<hidden>", "role": "admin"}, {"email": "<hidden>", "role": "dev"}, {"role": "bot"}],
		"list": ["<hidden>", "public-value"],
		"key with spaces": "<hidden>",
		"steps": 4}`)
	if !reflect.DeepEqual(v.Delivered.Content, want) {
		t.Errorf("delivered content = %v, want %v", v.Delivered.Content, want)
	}
	encoded, _ := v.Delivered.Encode()
	for _, secret := range []string{"ada@example.com", "grace@example.com", "alan@example.com", "secret-token-value", "hidden value"} {
		if strings.Contains(string(encoded), secret) {
			t.Errorf("delivered item still contains %q: %s", secret, encoded)
		}
	}
}

func TestSliceInvalidRedactionPathIsAPolicyDrop(t *testing.T) {
	cases := []struct {
		name   string
		limits Limits
	}{
		{"within budget", Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 10}},
		{"after the budget ran out", Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			items := pick(t, "tiny", "bad-path")
			out := New(defaultEngine(t), counter(t)).Slice(t.Context(), internalQA, items, tc.limits)
			checkStats(t, out, 2, tc.limits)
			v := out.Verdicts[1]
			if v.Reason != h4r.ReasonPolicy || !strings.Contains(v.Detail, "$.metadata.owner") || v.Delivered != nil {
				t.Errorf("verdict = %+v, want a policy drop naming $.metadata.owner", v)
			}
			if !containsWarning(out, "invalid path for 1 items") {
				t.Errorf("warnings %q do not report the invalid path", out.Warnings)
			}
		})
	}
}

// failingPolicy is a real OPA policy whose evaluation fails for every item
// (to_number("…") of a non-numeric kind is a built-in error).
func failingPolicy(t testing.TB) *policy.Engine {
	t.Helper()
	e, err := policy.New(context.Background(), policy.WithModules(map[string]string{"failing.rego": `package cmo.context

allow if to_number(input.item.text) > 0
`}))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// erroringDecider fails at protocol level, standing in for an unreachable
// policy service.
type erroringDecider struct{}

func (erroringDecider) Decide(context.Context, h4r.Specialist, *h4r.Item) (h4r.Decision, error) {
	return h4r.Decision{}, errors.New("policy service unreachable")
}

func TestSliceFailsClosed(t *testing.T) {
	limits := Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 10}
	ids := []string{"plain-a", "pii", "creds", "low-trust"}
	failing := failingPolicy(t)

	t.Run("without fallback nothing passes", func(t *testing.T) {
		out := New(failing, counter(t)).Slice(t.Context(), internalQA, pick(t, ids...), limits)
		checkStats(t, out, len(ids), limits)
		for i, v := range out.Verdicts {
			if v.Reason != h4r.ReasonPolicy || v.Detail != "policy error: no decision could be made (the policy failed to evaluate)" || v.Fallback {
				t.Errorf("item %s verdict = %+v, want a policy error drop", ids[i], v)
			}
			// The error names the policy's file and line: the logs get it,
			// the pack does not.
			if v.Err == nil || !strings.Contains(v.Err.Error(), "failing.rego:3") {
				t.Errorf("item %s error = %v, want the policy's file and line", ids[i], v.Err)
			}
		}
		if out.Stats.FallbackUsed || out.Stats.PolicyRevision != failing.Revision() {
			t.Errorf("stats = %+v, want no fallback and revision %s", out.Stats, failing.Revision())
		}
		if !containsWarning(out, "no policy decision could be made for 4 items (the policy failed to evaluate)") || containsWarning(out, "failing.rego") {
			t.Errorf("warnings = %q", out.Warnings)
		}
		if out.Failed != 4 || out.Err == nil || !strings.Contains(out.Err.Error(), "failing.rego:3") {
			t.Errorf("failed %d, error %v; want 4 and the first policy error", out.Failed, out.Err)
		}
	})

	t.Run("fallback decides with the local rules", func(t *testing.T) {
		out := New(failing, counter(t), WithFallback(policy.LocalRules{})).Slice(t.Context(), internalQA, pick(t, ids...), limits)
		checkStats(t, out, len(ids), limits)
		want := []struct{ reason, detail string }{
			{h4r.ReasonKept, ""}, {h4r.ReasonKept, ""}, {h4r.ReasonPolicy, "policy: credentials"}, {h4r.ReasonPolicy, "policy: low_trust"},
		}
		for i, v := range out.Verdicts {
			if v.Reason != want[i].reason || v.Detail != want[i].detail || !v.Fallback {
				t.Errorf("item %s verdict = %+v, want %+v decided by the fallback", ids[i], v, want[i])
			}
		}
		pii := out.Verdicts[1]
		encoded, _ := pii.Delivered.Encode()
		if !pii.Redacted || strings.Contains(string(encoded), "ada@example.com") {
			t.Errorf("fallback delivered PII unredacted: %s", encoded)
		}
		if !out.Stats.FallbackUsed || !containsWarning(out, "policy evaluation failed for 4 items; local fallback rules decided") {
			t.Errorf("stats %+v, warnings %q: want the fallback reported", out.Stats, out.Warnings)
		}
	})

	t.Run("failing fallback still fails closed", func(t *testing.T) {
		out := New(failing, counter(t), WithFallback(erroringDecider{})).Slice(t.Context(), internalQA, pick(t, ids...), limits)
		checkStats(t, out, len(ids), limits)
		for i, v := range out.Verdicts {
			if v.Reason != h4r.ReasonPolicy || v.Err == nil || !strings.Contains(v.Err.Error(), "to_number") || !strings.Contains(v.Err.Error(), "unreachable") {
				t.Errorf("item %s verdict = %+v, want a policy drop naming both errors", ids[i], v)
			}
			if v.Fallback {
				t.Errorf("item %s marked as decided by the fallback, which failed", ids[i])
			}
		}
		if out.Stats.FallbackUsed || containsWarning(out, "fallback rules decided") {
			t.Errorf("stats %+v, warnings %q: the failed fallback decided nothing", out.Stats, out.Warnings)
		}
		if !containsWarning(out, "no policy decision could be made for 4 items") {
			t.Errorf("warnings = %q", out.Warnings)
		}
	})

	t.Run("a cancelled request fails closed without the fallback", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		out := New(defaultEngine(t), counter(t), WithFallback(policy.LocalRules{})).Slice(ctx, internalQA, pick(t, ids...), limits)
		checkStats(t, out, len(ids), limits)
		for i, v := range out.Verdicts {
			if v.Reason != h4r.ReasonPolicy || !strings.Contains(v.Detail, "the request was cancelled") || !errors.Is(v.Err, context.Canceled) || v.Fallback {
				t.Errorf("item %s verdict = %+v, want a policy drop for the cancelled context", ids[i], v)
			}
		}
		if out.Stats.FallbackUsed {
			t.Error("FallbackUsed for a cancelled request")
		}
	})

	t.Run("nil items are dropped", func(t *testing.T) {
		out := New(defaultEngine(t), counter(t)).Slice(t.Context(), internalQA, []*h4r.Item{nil, pick(t, "tiny")[0]}, limits)
		checkStats(t, out, 2, limits)
		if got := reasons(out); !reflect.DeepEqual(got, []string{h4r.ReasonPolicy, h4r.ReasonKept}) {
			t.Errorf("reasons = %v", got)
		}
	})
}

func containsWarning(out Outcome, s string) bool {
	for _, w := range out.Warnings {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}

func TestSliceLeavesInputItemsUnchanged(t *testing.T) {
	items := pick(t, "pii", "plain-a", "creds", "bad-path")
	before, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	out := New(defaultEngine(t), counter(t)).Slice(t.Context(), internalQA, items, Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 10})
	after, _ := json.Marshal(items)
	if string(before) != string(after) {
		t.Fatalf("Slice changed the input items:\nbefore %s\nafter  %s", before, after)
	}
	// Changing the delivered copy must not reach the item either.
	out.Verdicts[0].Delivered.Content["personalData"].(map[string]any)["phone"] = "changed"
	if items[0].Content["personalData"].(map[string]any)["phone"] == "changed" {
		t.Fatal("redacted delivered content shares maps with the input item")
	}
}

// TestSliceConcurrencyIsInvisible: deciding in parallel gives the same
// outcome as deciding in order.
func TestSliceConcurrencyIsInvisible(t *testing.T) {
	var items []*h4r.Item
	for i := range 12 {
		for _, it := range fixtures(t) {
			it.ID = fmt.Sprintf("%s-%d", it.ID, i)
			items = append(items, it)
		}
	}
	limits := Limits{MaxBytes: 4000, MaxTokens: 900, MaxItems: 30}
	engine := defaultEngine(t)
	inOrder := New(engine, counter(t), WithConcurrency(1), WithPerItem()).Slice(t.Context(), internalQA, items, limits)
	for name, opts := range map[string][]Option{
		"per item, parallel": {WithConcurrency(4), WithPerItem()},
		"one batch":          {WithConcurrency(1)},
		"a batch per worker": {WithConcurrency(4)},
	} {
		got := New(engine, counter(t), opts...).Slice(t.Context(), internalQA, items, limits)
		checkStats(t, got, len(items), limits)
		if !reflect.DeepEqual(inOrder, got) {
			t.Errorf("%s: outcome differs:\n in order %+v\n got      %+v", name, inOrder.Stats, got.Stats)
		}
	}
}

// TestSliceFromTheCacheIsInvisible: a batch answered wholly or partly
// from the decision cache (decideAll's CacheAnswerer step, before any
// worker starts) gives the outcome of deciding every item.
func TestSliceFromTheCacheIsInvisible(t *testing.T) {
	var items []*h4r.Item
	for i := range 12 {
		for _, it := range fixtures(t) {
			it.ID = fmt.Sprintf("%s-%d", it.ID, i)
			it.Metadata.Version = 1 // cacheable
			items = append(items, it)
		}
	}
	limits := Limits{MaxBytes: 4000, MaxTokens: 900, MaxItems: 30}
	engine := defaultEngine(t)
	want := New(engine, counter(t), WithConcurrency(4)).Slice(t.Context(), internalQA, items, limits)
	for _, tc := range []struct {
		name     string
		warm     func([]*h4r.Item) []*h4r.Item // decided before the slice
		wantHits uint64
	}{
		{"cold", func([]*h4r.Item) []*h4r.Item { return nil }, 0},
		{"every other item warm", func(all []*h4r.Item) []*h4r.Item {
			var some []*h4r.Item
			for i := 0; i < len(all); i += 2 {
				some = append(some, all[i])
			}
			return some
		}, uint64(len(items)+1) / 2},
		{"warm", func(all []*h4r.Item) []*h4r.Item { return all }, uint64(len(items))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := policy.NewCache(1000, time.Hour)
			cached := cache.Wrap(engine)
			if warm := tc.warm(items); len(warm) > 0 {
				cached.DecideBatch(t.Context(), internalQA, warm)
			}
			before := cache.Stats().Hits
			batches := &countingBatches{Cached: cached}
			got := New(batches, counter(t), WithConcurrency(4)).Slice(t.Context(), internalQA, items, limits)
			if hits := cache.Stats().Hits - before; hits != tc.wantHits {
				t.Errorf("the cache answered %d items, want %d", hits, tc.wantHits)
			}
			// Only what the cache could not answer is sent on as batches.
			if sent := batches.items.Load(); sent != int64(len(items))-int64(tc.wantHits) {
				t.Errorf("%d items sent on as batches, want the %d the cache did not answer", sent, int64(len(items))-int64(tc.wantHits))
			}
			if !reflect.DeepEqual(want, got) {
				t.Errorf("outcome differs:\n decided  %+v\n got      %+v", want.Stats, got.Stats)
			}
		})
	}
}

// countingBatches counts the items a cached decider is asked about in
// batches, past its cache step.
type countingBatches struct {
	*policy.Cached
	items atomic.Int64
}

func (c *countingBatches) DecideBatch(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []h4r.DecisionResult {
	c.items.Add(int64(len(items)))
	return c.Cached.DecideBatch(ctx, spec, items)
}

func TestLimitsValidate(t *testing.T) {
	cases := []struct {
		name      string
		limits    Limits
		wantField string
	}{
		{"all positive", Limits{1, 1, 1}, ""},
		{"zero bytes", Limits{0, 1, 1}, "budget.maxBytes"},
		{"negative tokens", Limits{1, -1, 1}, "budget.maxTokens"},
		{"zero items", Limits{1, 1, 0}, "budget.maxItems"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.limits.Validate()
			var herr *h4r.Error
			switch {
			case tc.wantField == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tc.wantField != "" && (!errors.As(err, &herr) || herr.Field != tc.wantField):
				t.Errorf("Validate = %v, want an error on %s", err, tc.wantField)
			}
		})
	}
}

// TestPermitted: Permitted says of each item what Slice's policy decision
// says (allowed, whatever the budget), and fails closed when no decision
// can be made, with or without a fallback that fails too.
func TestPermitted(t *testing.T) {
	ids := []string{"plain-a", "pii", "creds", "low-trust", "tiny"}
	tests := []struct {
		name   string
		slicer *Slicer
		want   []bool
	}{
		{"bundled policy", New(defaultEngine(t), counter(t)), []bool{true, true, false, false, true}},
		{"failing policy", New(failingPolicy(t), counter(t)), []bool{false, false, false, false, false}},
		{"failing policy, local fallback", New(failingPolicy(t), counter(t), WithFallback(policy.LocalRules{})), []bool{true, true, false, false, true}},
		{"failing policy, failing fallback", New(failingPolicy(t), counter(t), WithFallback(erroringDecider{})), []bool{false, false, false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.slicer.Permitted(t.Context(), internalQA, pick(t, ids...))
			if !slices.Equal(got, tt.want) {
				t.Errorf("Permitted = %v, want %v", got, tt.want)
			}
			// The same as Slice's verdicts with a budget of one item.
			out := tt.slicer.Slice(t.Context(), internalQA, pick(t, ids...), Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 1})
			for i, v := range out.Verdicts {
				if (v.Reason != h4r.ReasonPolicy) != got[i] {
					t.Errorf("%s: Permitted %v, Slice %s", ids[i], got[i], v.Reason)
				}
			}
		})
	}
	if got := New(defaultEngine(t), counter(t)).Permitted(t.Context(), internalQA, nil); len(got) != 0 {
		t.Errorf("Permitted(nil) = %v", got)
	}
}
