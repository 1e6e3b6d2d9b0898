package h4r

import (
	"fmt"
	"time"
)

// LinkSupersedes marks the item holding the link as the newer statement
// of what its target (an item id) said: the target is out of date. It is
// set by writers (memory.write's supersedes, an ingest item's links);
// stores refuse one whose target does not exist and one that closes a
// cycle, and the ranker demotes the target (rank.SupersededFactor).
const LinkSupersedes = "supersedes"

// SubjectKey is the metadata key a writer names what an item is about
// with ("home_city", "dog_name"). Two items of the same kind, scope and
// subject restate one fact, so the engine proposes that the newer one
// supersedes the older (docs/concepts.md, superseded facts).
const SubjectKey = "subject"

// Supersedes returns the ids of the items it supersedes, in link order.
func (it *Item) Supersedes() []string {
	var out []string
	for _, l := range it.Links {
		if l.Type == LinkSupersedes && l.TargetType == TargetItem {
			out = append(out, l.Target)
		}
	}
	return out
}

// ValidAt reports whether the item's statement holds at t: validFrom (when
// given) is at or before t and validUntil (when given) after it. The
// interval is half-open, [validFrom, validUntil), so that consecutive
// intervals neither overlap nor leave gaps.
func (m Metadata) ValidAt(t time.Time) bool {
	return (m.ValidFrom.IsZero() || !t.Before(m.ValidFrom)) && (m.ValidUntil.IsZero() || t.Before(m.ValidUntil))
}

// SupersedesError is the error a store returns for a supersedes link it
// refuses: the link is items[i].links[position] of the batch, i being the
// last occurrence of source (the one written); cycle says whether the
// target exists but already supersedes source, directly or through
// others.
func SupersedesError(items []Item, source string, position int, target string, cycle bool) error {
	i := -1
	for k := range items {
		if items[k].ID == source {
			i = k
		}
	}
	field := fmt.Sprintf("items[%d].links[%d].target", i, position)
	if i < 0 {
		field = fmt.Sprintf("links[%d].target", position)
	}
	return SupersedesLinkError(field, source, target, cycle)
}

// SupersedesLinkError is the error for the supersedes link from source to
// target at field: a cycle, or a target that is no item.
func SupersedesLinkError(field, source, target string, cycle bool) error {
	if cycle {
		return Errorf(EINVALID, field, "%q supersedes %q, which already supersedes it (directly or through other items): supersedes links must not form a cycle", source, target)
	}
	return Errorf(EINVALID, field, "%q supersedes %q, but no item has that id: a supersedes link names an existing item", source, target)
}
