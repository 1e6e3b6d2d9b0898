package scs

import (
	"context"
	"slices"

	"github.com/h4r/h4r"
)

// Cleared is one item as the slicer cleared it for one specialist: allowed
// by the policy and redacted as it asked. It is the only form in which an
// item may leave H4R, and the only input of text derived from an item
// (suggestions, match reasons, summaries): whatever is computed from it
// cannot tell more than the redacted copy holds.
//
// Its fields are unexported so that only this package makes one: a raw
// item cannot be passed where a Cleared is wanted. The zero value holds no
// item.
//
// A link's context is free text written about the item, as its text is:
// when the policy redacts any value of an item, the contexts of its links
// are replaced by the marker too, since nothing tells whether they repeat
// what was redacted.
type Cleared struct {
	item     *h4r.Item // a copy: Text, Content and (when redacted) link contexts redacted, metadata the item's
	redacted []string
	revision string
	version  int
}

// newCleared makes the Cleared of item from its redacted delivery d. Metadata,
// links and the content maps are shared with item when not redacted: the
// copy is read-only, as the item is.
func newCleared(item *h4r.Item, d h4r.Delivered, redacted []string, revision, marker string) Cleared {
	cp := *item
	cp.Text, cp.Content = d.Text, d.Content
	if len(redacted) > 0 {
		cp.Links = redactLinkContexts(item.Links, marker)
	}
	return Cleared{item: &cp, redacted: redacted, revision: revision, version: item.Metadata.Version}
}

// redactLinkContexts returns links with every non-empty context replaced
// by marker, copied when one is (links is the stored item's).
func redactLinkContexts(links []h4r.Link, marker string) []h4r.Link {
	if !slices.ContainsFunc(links, func(l h4r.Link) bool { return l.Context != "" }) {
		return links
	}
	out := slices.Clone(links)
	for i := range out {
		if out[i].Context != "" {
			out[i].Context = marker
		}
	}
	return out
}

// ID is the item's id ("" for the zero value).
func (c Cleared) ID() string {
	if c.item == nil {
		return ""
	}
	return c.item.ID
}

// Item is the redacted copy: Text and Content as delivered, metadata as
// stored, links as stored but for their contexts when the item is redacted. It is read-only (its maps may be the stored item's);
// nil for the zero value.
func (c Cleared) Item() *h4r.Item { return c.item }

// Delivery is the item as an agent receives it: the form budgets measure.
func (c Cleared) Delivery() h4r.Delivered {
	if c.item == nil {
		return h4r.Delivered{}
	}
	return h4r.Delivered{ID: c.item.ID, Kind: c.item.Kind, Text: c.item.Text, Content: c.item.Content}
}

// Redacted says whether the policy replaced some value.
func (c Cleared) Redacted() bool { return len(c.redacted) > 0 }

// RedactedFields are the redaction paths that applied.
func (c Cleared) RedactedFields() []string { return slices.Clone(c.redacted) }

// PolicyRevision is the revision of the policy that decided ("" when the
// policy does not name one).
func (c Cleared) PolicyRevision() string { return c.revision }

// Version is the item version that was decided (0 for an item that was
// never stored).
func (c Cleared) Version() int { return c.version }

// Cleared returns the verdict's item as cleared, when it was kept.
func (v Verdict) Cleared() (Cleared, bool) {
	if v.Reason != h4r.ReasonKept || v.item == nil || v.Delivered == nil {
		return Cleared{}, false
	}
	return newCleared(v.item, *v.Delivered, v.RedactedFields, v.revision, v.marker), true
}

// Clear decides every item for spec, without budgets, and returns the
// allowed ones redacted, in the order given. It fails closed: an item
// whose decision cannot be made, or whose redaction cannot be applied, is
// left out, as a denied one. Nothing is logged: Clear answers questions
// about items (may this key see this memory, which cases count), Slice
// builds packs.
func (s *Slicer) Clear(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []Cleared {
	if len(items) == 0 {
		return nil
	}
	var snap Outcome
	decider := s.snapshot(&snap)
	var out []Cleared
	for i, d := range s.decideAll(ctx, decider, spec, items) {
		if d.err != nil || !d.decision.Allow {
			continue
		}
		delivered := items[i].Delivered()
		applied, err := Redact(&delivered, d.decision.RedactedFields, s.marker)
		if err != nil {
			continue
		}
		out = append(out, newCleared(items[i], delivered, applied, snap.Stats.PolicyRevision, s.marker))
	}
	return out
}
