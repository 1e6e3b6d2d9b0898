package scs

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/policy"
)

// TestClear: Clear returns the allowed items only, in order, redacted as
// Slice delivers them, whatever the budget; an item whose decision cannot
// be made or whose redaction path is invalid is left out.
func TestClear(t *testing.T) {
	ids := []string{"plain-a", "pii", "creds", "bad-path", "low-trust", "tiny"}
	tests := []struct {
		name   string
		slicer *Slicer
		want   []string
	}{
		{"bundled policy", New(defaultEngine(t), counter(t)), []string{"plain-a", "pii", "tiny"}},
		{"failing policy", New(failingPolicy(t), counter(t)), nil},
		{"failing policy, local fallback", New(failingPolicy(t), counter(t), WithFallback(policy.LocalRules{})), []string{"plain-a", "pii", "tiny"}},
		{"failing policy, failing fallback", New(failingPolicy(t), counter(t), WithFallback(erroringDecider{})), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := pick(t, ids...)
			got := tt.slicer.Clear(t.Context(), internalQA, items)
			var gotIDs []string
			for _, c := range got {
				gotIDs = append(gotIDs, c.ID())
			}
			if !slices.Equal(gotIDs, tt.want) {
				t.Fatalf("Clear = %v, want %v", gotIDs, tt.want)
			}
			out := tt.slicer.Slice(t.Context(), internalQA, pick(t, ids...), Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 100})
			for _, c := range got {
				i := slices.Index(ids, c.ID())
				v, ok := out.Verdicts[i].Cleared()
				if !ok {
					t.Fatalf("%s: cleared, but Slice kept no cleared item: %+v", c.ID(), out.Verdicts[i])
				}
				if !reflect.DeepEqual(c.Delivery(), *out.Verdicts[i].Delivered) || !reflect.DeepEqual(v.Delivery(), c.Delivery()) {
					t.Errorf("%s: Clear delivers %+v, Slice %+v", c.ID(), c.Delivery(), *out.Verdicts[i].Delivered)
				}
				if c.PolicyRevision() != out.Stats.PolicyRevision || v.PolicyRevision() != out.Stats.PolicyRevision {
					t.Errorf("%s: revision %q, Slice's %q", c.ID(), c.PolicyRevision(), out.Stats.PolicyRevision)
				}
				if !slices.Equal(c.RedactedFields(), out.Verdicts[i].RedactedFields) || c.Redacted() != out.Verdicts[i].Redacted {
					t.Errorf("%s: redacted %v, Slice %v", c.ID(), c.RedactedFields(), out.Verdicts[i].RedactedFields)
				}
			}
		})
	}
}

// TestClearedIsTheRedactedCopy: a cleared item's text and content are the
// redacted ones, its metadata the item's, and the input item is unchanged.
func TestClearedIsTheRedactedCopy(t *testing.T) {
	items := pick(t, "pii")
	items[0].Metadata.Version = 7
	got := New(defaultEngine(t), counter(t)).Clear(t.Context(), internalQA, items)
	if len(got) != 1 {
		t.Fatalf("Clear = %d items, want the pii item", len(got))
	}
	c := got[0]
	if c.Item().Text != h4r.RedactionMarker || c.Item() == items[0] {
		t.Errorf("cleared text %q, want the marker on a copy", c.Item().Text)
	}
	if items[0].Text == h4r.RedactionMarker {
		t.Error("Clear redacted the input item")
	}
	if email := c.Item().Content["personalData"].(map[string]any)["email"]; email != h4r.RedactionMarker {
		t.Errorf("cleared email %v, want the marker", email)
	}
	if !c.Redacted() || !slices.Contains(c.RedactedFields(), "$.text") || c.Version() != 7 || !c.Item().Metadata.ContainsPII {
		t.Errorf("cleared %+v: want redacted with $.text, version 7, the item's metadata", c)
	}
	b, _ := c.Delivery().Encode()
	if strings.Contains(string(b), "ada@example.com") {
		t.Errorf("delivery holds the email: %s", b)
	}
	var zero Cleared
	if zero.ID() != "" || zero.Item() != nil || zero.Redacted() {
		t.Error("the zero Cleared holds an item")
	}
}

// TestClearedRedactsLinkContexts: a link's context is free text about the
// item (a decision trace's precedent reason), so a redacted item's cleared
// copy carries the marker in place of each context, from Clear and from a
// Slice verdict alike; the stored links are left as they were, and an item
// nothing of which is redacted keeps its contexts.
func TestClearedRedactsLinkContexts(t *testing.T) {
	const marker = "[withheld]"
	links := []h4r.Link{
		{Type: h4r.LinkCitesPrecedent, Target: "epic-7", TargetType: h4r.TargetEpic, Strength: 1, Context: "ada@example.com asked for it"},
		{Type: h4r.LinkAssignsFile, Target: "pkg/login.go", TargetType: h4r.TargetFile, Strength: 1},
	}
	tests := []struct {
		name string
		id   string
		want []string // the cleared contexts, in order
	}{
		{"redacted item", "pii", []string{marker, ""}},
		{"item with nothing redacted", "plain-a", []string{links[0].Context, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(defaultEngine(t), counter(t), WithRedactionMarker(marker))
			item := *pick(t, tt.id)[0]
			item.Links = slices.Clone(links)
			items := []*h4r.Item{&item}
			cleared := s.Clear(t.Context(), internalQA, items)
			if len(cleared) != 1 {
				t.Fatalf("Clear = %d items, want 1", len(cleared))
			}
			fromSlice, ok := s.Slice(t.Context(), internalQA, items, Limits{MaxBytes: unlimited, MaxTokens: unlimited, MaxItems: 10}).Verdicts[0].Cleared()
			if !ok {
				t.Fatal("Slice kept no cleared item")
			}
			for from, c := range map[string]Cleared{"Clear": cleared[0], "Slice": fromSlice} {
				var got []string
				for _, l := range c.Item().Links {
					got = append(got, l.Context)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("%s: link contexts %q, want %q", from, got, tt.want)
				}
				if l := c.Item().Links; len(l) != 2 || l[0].Target != "epic-7" || l[1].Target != "pkg/login.go" {
					t.Errorf("%s: links %+v, want the item's targets", from, l)
				}
			}
			if !reflect.DeepEqual(item.Links, links) {
				t.Errorf("the stored item's links became %+v", item.Links)
			}
		})
	}
}
