package scs

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/demo"
	"github.com/h4r/h4r/policy"
)

// benchCandidates returns n fixture items (every policy outcome but the
// invalid path), with the sizes the store computes at ingest when stored.
func benchCandidates(b *testing.B, n int, stored bool) []*h4r.Item {
	var items []*h4r.Item
	for len(items) < n {
		for _, it := range fixtures(b) {
			if it.ID == "bad-path" {
				continue
			}
			it.ID = fmt.Sprintf("%s-%d", it.ID, len(items))
			if stored {
				it.Metadata.ByteSize, it.Metadata.Tokens = size(b, it)
			}
			items = append(items, it)
		}
	}
	return items[:n]
}

// customPolicy is a realistic team policy: the bundled rules plus rules
// that read the item's text and content (a secret pattern, a kind
// allowlist for public specialists, a tag) and a pack-level setting.
const customPolicy = `package cmo.context

import data.cmo.base

secret_pattern := ` + "`(?i)(api[_-]?key|password|BEGIN [A-Z ]*PRIVATE KEY)`" + `

public_kinds := {"test_failure", "fix", "note"}

deny contains d if some d in base.deny

deny contains "secret_in_text" if regex.match(secret_pattern, input.item.text)

deny contains "kind_not_public" if {
	input.specialist.securityLevel == "public"
	not input.item.kind in public_kinds
}

deny contains "draft" if "draft" in input.item.metadata.tags

default allow := false

allow if count(deny) == 0

default redact := false

redact if {
	allow
	count(redactedFields) > 0
}

default redactedFields := []

redactedFields := base.pii_fields if {
	allow
	input.item.metadata.containsPII == true
}

default reason := "allowed"

reason := concat(",", sort(deny)) if count(deny) > 0

reason := "pii" if redact

pack := {"maxTokens": 4000, "reason": "public specialists get small packs"} if input.specialist.securityLevel == "public"
`

// customBase is the bundled rules under another package, imported above.
func customBase(b *testing.B) string {
	src, err := os.ReadFile("../policy/rego/context.rego")
	if err != nil {
		b.Fatal(err)
	}
	return strings.Replace(string(src), "package cmo.context", "package cmo.base", 1)
}

// BenchmarkSlice compares the ways of deciding the candidates of a
// request: the per-item loop (one OPA evaluation per item, in order: the
// baseline), per-item on every core, one batch evaluation (candidates the
// policy sees alike decided once; on one core, or one batch per core), the
// engine's memo of decisions by input (warm), and the decision cache by
// item version in front of cold batches (warm; with and without the
// slicer's cache of redacted sizes). Candidates: the demo corpus (68 real
// items) and 100 items no two of which look alike to either policy.
// ns/item is the whole Slice (policy, redaction, budgets) per candidate;
// p50-ns/op and p95-ns/op are percentiles of single Slices.
func BenchmarkSlice(b *testing.B) {
	tok := counter(b)
	// Two engines per policy: one that remembers nothing, so that every
	// Slice decides cold, and one that remembers decisions by input. Both
	// evaluate with OPA (BenchmarkSliceCold measures compiled predicates).
	engines := func(opts ...policy.Option) (cold, memo *policy.Engine) {
		opts = append(opts, policy.WithCompiledPredicates(0))
		var err error
		if cold, err = policy.New(b.Context(), append(opts, policy.WithDecisionMemo(0))...); err != nil {
			b.Fatal(err)
		}
		if memo, err = policy.New(b.Context(), opts...); err != nil {
			b.Fatal(err)
		}
		return cold, memo
	}
	defaultCold, defaultMemo := engines()
	customCold, customMemo := engines(policy.WithModules(map[string]string{"custom.rego": customPolicy, "base.rego": customBase(b)}))
	policies := []struct {
		name       string
		cold, memo *policy.Engine
	}{{"default", defaultCold, defaultMemo}, {"custom", customCold, customMemo}}
	limits := Limits{MaxBytes: 122880, MaxTokens: 30000, MaxItems: 100}
	candidates := []struct {
		name  string
		items []*h4r.Item
	}{{"demo", demoCandidates(b)}, {"distinct", distinctCandidates(b, 100)}}
	procs := runtime.GOMAXPROCS(0)
	options := []struct {
		name         string
		memo, cached bool
		opts         []Option
	}{
		{"per_item_loop", false, false, []Option{WithPerItem(), WithConcurrency(1)}},
		{"per_item_parallel", false, false, []Option{WithPerItem(), WithConcurrency(procs)}},
		{"batch", false, false, []Option{WithConcurrency(1)}},
		{"batch_parallel", false, false, []Option{WithConcurrency(procs)}},
		{"memo_warm", true, false, []Option{WithConcurrency(1)}},
		{"cache_warm", false, true, []Option{WithConcurrency(procs)}},
		{"cache_warm_no_size_cache", false, true, []Option{WithConcurrency(procs), WithSizeCache(0)}},
	}
	for _, c := range candidates {
		items := c.items
		for _, p := range policies {
			for _, o := range options {
				b.Run(fmt.Sprintf("candidates=%s/policy=%s/option=%s", c.name, p.name, o.name), func(b *testing.B) {
					var d h4r.Decider = p.cold
					switch {
					case o.memo:
						d = p.memo
					case o.cached:
						d = policy.NewCache(0, time.Hour).Wrap(p.cold)
					}
					slicer := New(d, tok, o.opts...)
					slicer.Slice(b.Context(), internalQA, items, limits) // warms the caches
					var lat []time.Duration
					for b.Loop() {
						start := time.Now()
						slicer.Slice(b.Context(), internalQA, items, limits)
						lat = append(lat, time.Since(start))
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/item")
					slices.Sort(lat)
					b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns/op")
					b.ReportMetric(float64(lat[len(lat)*95/100].Nanoseconds()), "p95-ns/op")
				})
			}
		}
	}
}

// demoCandidates is the demo corpus (68 items of a test team's memory) as
// a store returns it: versions and stored sizes. The bundled policy sees 18
// distinct inputs among them.
func demoCandidates(b *testing.B) []*h4r.Item {
	all, err := demo.Items()
	if err != nil {
		b.Fatal(err)
	}
	items := make([]*h4r.Item, len(all))
	for i := range all {
		it := &all[i]
		it.Metadata.Version = 1
		it.Metadata.ByteSize, it.Metadata.Tokens = size(b, it)
		items[i] = it
	}
	return items
}

// distinctCandidates are n fixture items each with its own trust, so that
// no two look alike to any policy that reads trust: the worst case for
// deciding alike inputs once.
func distinctCandidates(b *testing.B, n int) []*h4r.Item {
	items := benchCandidates(b, n, true)
	for i, it := range items {
		it.Metadata.Version = i + 1 // as from a store: cacheable
		trust := 0.3 + float64(i)/float64(2*n)
		it.Metadata.Trust = &trust
	}
	return items
}
