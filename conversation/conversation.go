package conversation

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/timeref"
)

// Evidence source names, as they appear in a pack's sources and in fusion
// weights.
const (
	GenSession = "session"
	GenTime    = "time"
)

// SessionKey is the metadata key naming the session an item belongs to.
const SessionKey = "session"

// Defaults of Options fields left at zero.
const (
	DefaultAnchors = 5
	DefaultReach   = h4r.MaxHopsLimit
	// DefaultTurnLink is the link type of turn order.
	DefaultTurnLink = "follows"
)

// Options configure the session evidence.
type Options struct {
	// Anchors: the sessions of this many top text hits are expanded with
	// their turns (default DefaultAnchors).
	Anchors int
	// Reach: turns this many links away from a hit, at most, are reached
	// (default DefaultReach).
	Reach int
	// TurnLinks are the link types of turn order (default follows).
	TurnLinks []string
}

func (o Options) withDefaults() Options {
	if o.Anchors <= 0 {
		o.Anchors = DefaultAnchors
	}
	if o.Reach <= 0 {
		o.Reach = DefaultReach
	}
	if len(o.TurnLinks) == 0 {
		o.TurnLinks = []string{DefaultTurnLink}
	}
	return o
}

// Session returns the session an item belongs to ("" when none).
func Session(it *h4r.Item) string {
	if it == nil {
		return ""
	}
	switch v := it.Metadata.Extra[SessionKey].(type) {
	case string:
		return v
	case float64:
		return fmt.Sprint(v)
	}
	return ""
}

// Walker reaches the items linked to anchors (the graph generator).
type Walker interface {
	Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error)
}

// SessionEvidence returns the session evidence of a request whose text
// generators answered text (one list of hits per generator, best first).
// walk may be nil (no expansion); permitted keeps the anchors the caller
// may see, since a walk from an item the caller may not see would reveal
// its neighbours. filters are the request's: expansions pass them too.
// Without any session among the text hits it returns nothing.
func SessionEvidence(ctx context.Context, text [][]h4r.Hit, walk Walker, permitted func([]*h4r.Item) []*h4r.Item, filters h4r.Filters, o Options) ([]h4r.Hit, error) {
	o = o.withDefaults()
	// Each text hit's best min-max normalised score across generators.
	own := map[string]float64{}
	var order []*h4r.Item
	for _, hits := range text {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, h := range hits {
			if finite(h.Score) {
				lo, hi = min(lo, h.Score), max(hi, h.Score)
			}
		}
		for _, h := range hits {
			if h.Item == nil {
				continue
			}
			n := 0.0
			switch {
			case !finite(h.Score):
			case hi == lo:
				n = 1
			default:
				n = (h.Score - lo) / (hi - lo)
			}
			if prev, seen := own[h.Item.ID]; !seen {
				own[h.Item.ID] = n
				order = append(order, h.Item)
			} else if n > prev {
				own[h.Item.ID] = n
			}
		}
	}
	best := map[string]float64{} // session → its best text score
	for _, it := range order {
		if s := Session(it); s != "" {
			best[s] = max(best[s], own[it.ID])
		}
	}
	if len(best) == 0 {
		return nil, nil
	}
	out := make([]h4r.Hit, 0, len(order))
	for _, it := range order {
		score := own[it.ID]
		if s := Session(it); s != "" {
			score = best[s]
		}
		out = append(out, h4r.Hit{Item: it, Score: score})
	}
	if walk == nil {
		return sortHits(out), nil
	}
	// The top hits in session, by their own score, anchor the walk.
	var anchors []*h4r.Item
	ranked := slices.Clone(order)
	slices.SortStableFunc(ranked, func(a, b *h4r.Item) int { return cmpDesc(own[a.ID], own[b.ID]) })
	for _, it := range ranked {
		if len(anchors) == o.Anchors {
			break
		}
		if Session(it) != "" {
			anchors = append(anchors, it)
		}
	}
	if permitted != nil {
		anchors = permitted(anchors)
	}
	if len(anchors) == 0 {
		return sortHits(out), nil
	}
	ids := make([]string, len(anchors))
	for i, a := range anchors {
		ids[i] = a.ID
	}
	reached, err := walk.Generate(ctx, h4r.CandidateQuery{
		Anchors: ids, MaxHops: o.Reach, LinkTypes: o.TurnLinks, Filters: filters,
		Limit: len(anchors) * (2*o.Reach + 1),
	})
	if err != nil {
		return sortHits(out), fmt.Errorf("reaching the turns around %d hits: %w", len(ids), err)
	}
	expanded := map[string]bool{}
	for _, a := range anchors {
		expanded[Session(a)] = true
	}
	for _, h := range reached {
		if h.Item == nil {
			continue
		}
		s := Session(h.Item)
		if _, seen := own[h.Item.ID]; seen || !expanded[s] {
			continue // already scored, or another session's turn
		}
		own[h.Item.ID] = 0
		out = append(out, h4r.Hit{Item: h.Item, Score: best[s]})
	}
	return sortHits(out), nil
}

// TimeEvidence scores the candidates by the window the question names:
// 1 inside, exp(−distance/length) outside, where length is the window's
// (at least a day). Undated candidates get nothing. With no dated
// candidate it returns nothing.
func TimeEvidence(items []*h4r.Item, w timeref.Window) []h4r.Hit {
	length := max(w.To.Sub(w.From), 24*time.Hour)
	var out []h4r.Hit
	for _, it := range items {
		at := it.Metadata.CreatedAt
		if at.IsZero() {
			continue
		}
		var off time.Duration
		switch {
		case at.Before(w.From):
			off = w.From.Sub(at)
		case !at.Before(w.To):
			off = at.Sub(w.To)
		}
		out = append(out, h4r.Hit{Item: it, Score: math.Exp(-float64(off) / float64(length))})
	}
	return sortHits(out)
}

// sortHits orders hits best first (stable, so that equal scores keep the
// order of the text generators).
func sortHits(hits []h4r.Hit) []h4r.Hit {
	slices.SortStableFunc(hits, func(a, b h4r.Hit) int { return cmpDesc(a.Score, b.Score) })
	return hits
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
