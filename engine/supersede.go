package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/words"
)

// supersedersPerCandidate bounds the items the supersedes walk returns
// beyond the candidates themselves.
const supersedersPerCandidate = 4

// superseder is a newer item that supersedes a candidate.
type superseder struct {
	item     *h4r.Item
	proposed bool
}

// supersede marks the candidates a newer item the caller may see
// supersedes (Candidate.SupersededBy), and drops the ones the request
// leaves out: with superseded exclude, the superseded; with valid_at, the
// items whose validity interval does not hold it. Superseders are the
// items holding a supersedes link to a candidate (among the candidates,
// and by a one-hop walk over supersedes links when a graph generator is
// configured), and, proposed, the newest candidate of the same kind,
// groups and subject (h4r.SubjectKey). The walk failing degrades nothing:
// the pack is ranked without the links it would have found, and says so.
//
// Only what the policy lets spec see takes part: a hidden superseder
// neither names nor demotes anything, a hidden candidate is no subject's
// newest (it would keep the visible one it hides from being proposed),
// and exclude and valid_at leave out only visible candidates (the policy
// drops the hidden ones, so that the pack's totals do not move with them).
// Each of those would tell the caller that a hidden item exists, and
// something of it.
func (e *Engine) supersede(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan, cands []*h4r.Candidate) ([]*h4r.Candidate, []string) {
	var warnings []string
	byID := make(map[string]*h4r.Candidate, len(cands))
	for _, c := range cands {
		byID[c.Item.ID] = c
	}
	// Each item is asked about once, and only when it matters: most
	// candidates neither supersede nor state a subject.
	decided := map[string]bool{}
	visible := func(items []*h4r.Item) map[string]bool {
		var ask []*h4r.Item
		for _, it := range items {
			if _, ok := decided[it.ID]; !ok {
				decided[it.ID] = false
				ask = append(ask, it)
			}
		}
		if len(ask) > 0 {
			for _, id := range e.permitted(ctx, spec, ask) {
				decided[id] = true
			}
		}
		return decided
	}
	found := map[string][]superseder{}
	add := func(newer *h4r.Item, proposed bool) {
		for _, old := range newer.Supersedes() {
			if _, ok := byID[old]; ok && old != newer.ID {
				found[old] = append(found[old], superseder{newer, proposed})
			}
		}
	}
	for _, c := range cands {
		add(c.Item, false)
	}
	if e.graph != nil && len(cands) > 0 {
		linked, err := e.supersedingItems(ctx, cands)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("superseding items could not be looked up (%v): superseded items are ranked as any other", err))
			e.log.WarnContext(ctx, "supersedes walk failed", "error", err)
		}
		for _, it := range linked {
			if _, ok := byID[it.ID]; !ok { // candidates were added above
				add(it, false)
			}
		}
	}
	var newer []*h4r.Item
	seen := map[string]bool{}
	for _, list := range found {
		for _, s := range list {
			if !seen[s.item.ID] {
				seen[s.item.ID] = true
				newer = append(newer, s.item)
			}
		}
	}
	for _, c := range cands {
		if subjectKey(c.Item) != "" && !seen[c.Item.ID] {
			seen[c.Item.ID] = true
			newer = append(newer, c.Item)
		}
	}
	seeing := visible(newer)
	proposeBySubject(cands, found, seeing)
	for id, list := range found {
		// A writer's link before a proposal, then the newest, then the id.
		slices.SortFunc(list, func(a, b superseder) int {
			if a.proposed != b.proposed {
				if a.proposed {
					return 1
				}
				return -1
			}
			return cmp.Or(b.item.Metadata.CreatedAt.Compare(a.item.Metadata.CreatedAt), strings.Compare(a.item.ID, b.item.ID))
		})
		for _, s := range list {
			if seeing[s.item.ID] {
				byID[id].SupersededBy, byID[id].SupersessionProposed = s.item.ID, s.proposed
				break
			}
		}
	}

	exclude := supersededMode(&plan.Request) == h4r.SupersededExclude
	if !exclude && plan.ValidAt.IsZero() {
		return cands, warnings
	}
	leaves := func(c *h4r.Candidate) (superseded, invalid bool) {
		if exclude && c.SupersededBy != "" {
			return true, false
		}
		return false, !plan.ValidAt.IsZero() && !c.Item.Metadata.ValidAt(plan.ValidAt)
	}
	var out []*h4r.Item
	for _, c := range cands {
		if s, i := leaves(c); s || i {
			out = append(out, c.Item)
		}
	}
	shown := visible(out)
	kept := cands[:0:0]
	var superseded, invalid int
	for _, c := range cands {
		s, i := leaves(c)
		switch {
		case !shown[c.Item.ID] || !(s || i):
			// A hidden candidate is left to the policy, which drops it
			// whatever the request asks: leaving it out here would move
			// the pack's totals by it.
			kept = append(kept, c)
		case s:
			superseded++
		default:
			invalid++
		}
	}
	return kept, append(warnings, leftOutWarnings(superseded, invalid, plan.ValidAt)...)
}

// leftOutWarnings say how many visible candidates supersede's exclude
// and valid_at left out.
func leftOutWarnings(superseded, invalid int, validAt time.Time) []string {
	var warnings []string
	if superseded > 0 {
		warnings = append(warnings, fmt.Sprintf("%d superseded candidates were left out (superseded: exclude)", superseded))
	}
	if invalid > 0 {
		warnings = append(warnings, fmt.Sprintf("%d candidates not valid at %s were left out (valid_at)", invalid, validAt.UTC().Format(time.RFC3339)))
	}
	return warnings
}

// beyondAnchors is a graph generator that can leave the anchors out of a
// walk's hits (store/sqlite): GenerateBeyondAnchors returns Generate's
// hits less those at distance 0, for the same query, without reading the
// anchors. The supersedes walk keeps only the hits one link away.
type beyondAnchors interface {
	GenerateBeyondAnchors(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error)
}

// supersedingItems returns the items one supersedes link away from the
// candidates, either way; the caller keeps those that link to a
// candidate.
func (e *Engine) supersedingItems(ctx context.Context, cands []*h4r.Candidate) ([]*h4r.Item, error) {
	ids := make([]string, len(cands))
	for i, c := range cands {
		ids[i] = c.Item.ID
	}
	gctx, cancel := context.WithTimeout(ctx, e.settings.GeneratorTimeout)
	defer cancel()
	q := h4r.CandidateQuery{
		Anchors: ids, MaxHops: 1, LinkTypes: []string{h4r.LinkSupersedes},
		Limit: len(ids) * (1 + supersedersPerCandidate),
	}
	generate := e.graph.Generate
	if b, ok := e.graph.(beyondAnchors); ok {
		generate = b.GenerateBeyondAnchors
	}
	hits, err := generate(gctx, q)
	var fallback *h4r.FallbackError
	if err != nil && !errors.As(err, &fallback) {
		return nil, err
	}
	var out []*h4r.Item
	for _, h := range hits {
		if h.Distance == 1 && h.Item != nil {
			out = append(out, h.Item)
		}
	}
	return out, nil
}

// subjectKey is what two items restating one fact share: kind, groups
// and subject ("" for an item that states no subject).
func subjectKey(it *h4r.Item) string {
	subject, _ := it.Metadata.Extra[h4r.SubjectKey].(string)
	if strings.TrimSpace(subject) == "" {
		return ""
	}
	return it.Kind + "\x00" + strings.Join(it.Metadata.RestrictedToGroups, "\x01") + "\x00" + subject
}

// proposeBySubject adds, for every candidate that states a subject, the
// newest visible candidate of the same kind, groups and subject as its
// proposed superseder, unless a writer's link supersedes it already.
func proposeBySubject(cands []*h4r.Candidate, found map[string][]superseder, visible map[string]bool) {
	newest := map[string]*h4r.Item{}
	for _, c := range cands {
		k := subjectKey(c.Item)
		if k == "" || !visible[c.Item.ID] {
			continue
		}
		if n, ok := newest[k]; !ok || newerThan(c.Item, n) {
			newest[k] = c.Item
		}
	}
	for _, c := range cands {
		k := subjectKey(c.Item)
		if k == "" || len(found[c.Item.ID]) > 0 {
			continue
		}
		// A subject whose candidates are all hidden has no newest.
		n, ok := newest[k]
		if !ok || n == c.Item {
			continue
		}
		if n.Metadata.CreatedAt.After(c.Item.Metadata.CreatedAt) {
			found[c.Item.ID] = append(found[c.Item.ID], superseder{n, true})
		}
	}
}

// newerThan orders items by createdAt, then id (the later id wins a tie,
// so that the choice does not depend on candidate order).
func newerThan(a, b *h4r.Item) bool {
	if c := a.Metadata.CreatedAt.Compare(b.Metadata.CreatedAt); c != 0 {
		return c > 0
	}
	return a.ID > b.ID
}

// earlierCues are the words by which a question asks what held before a
// change ("what did I drive before I sold it", "where did I use to
// live"): a superseded statement is then the answer, not noise.
func earlierCues() []string {
	return []string{"before", "previously", "formerly", "originally", "earlier", "used to", "old", "former", "prior"}
}

// supersededMode is what the request does with superseded items: what it
// says, else keep when its query asks about an earlier time, else demote.
func supersededMode(req *h4r.ContextRequest) string {
	if req.Superseded != "" {
		return req.Superseded
	}
	padded := " " + strings.Join(words.Lower(req.Query.Text), " ") + " "
	for _, cue := range earlierCues() {
		if strings.Contains(padded, " "+cue+" ") {
			return h4r.SupersededKeep
		}
	}
	return h4r.SupersededDemote
}
