package conversation

import (
	"context"
	"errors"
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
	DefaultAnchors = 10
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
//
// A turn's own score is its text score over the best one (the best of its
// generators'). A session's score is its density: the sum of its turns'
// own scores over its number of turns, the share of it that is about the
// question. A text hit scores the greater of its own score and its
// session's; an item without a session its own score; and the turns of
// the best sessions that no text generator found join the candidates with
// their session's score. So a strong hit keeps its place, a weak hit in a
// session about the question rises, and one matching turn in a long
// session about something else lifts no other turn of it.
//
// The sessions are walked (by walk, along turn-order links, within
// Options.Reach of their best hit) to count their turns and find the
// missing ones; walk may be nil. filters are the request's: the turns
// found pass them too. Without any session among the text hits it returns
// nothing.
//
// permitted (nil: every item) keeps the items the caller may see. The
// evidence is built from those alone, the text hits and the turns a walk
// reaches alike: a hidden turn is no anchor (a walk from it would reveal
// its neighbours), counts in no session's length, lends no score to its
// session and is not the best hit others are scored against, so that the
// evidence is what it would be if the hidden turns did not exist.
func SessionEvidence(ctx context.Context, text [][]h4r.Hit, walk Walker, permitted func([]*h4r.Item) []*h4r.Item, filters h4r.Filters, o Options) ([]h4r.Hit, error) {
	o = o.withDefaults()
	if !anySession(text) {
		return nil, nil
	}
	if permitted != nil {
		text = visibleHits(text, permitted)
	}
	own := map[string]float64{}
	var order []*h4r.Item
	for _, hits := range text {
		top := 0.0
		for _, h := range hits {
			if finite(h.Score) {
				top = max(top, h.Score)
			}
		}
		for _, h := range hits {
			if h.Item == nil {
				continue
			}
			n := 0.0
			if finite(h.Score) && h.Score > 0 && top > 0 {
				n = h.Score / top
			}
			if prev, seen := own[h.Item.ID]; !seen {
				own[h.Item.ID] = n
				order = append(order, h.Item)
			} else if n > prev {
				own[h.Item.ID] = n
			}
		}
	}
	type session struct {
		sum, best float64
		matched   int
		turns     int // counted by the walk; 0: not walked
		top       *h4r.Item
	}
	sessions := map[string]*session{}
	var names []string
	for _, it := range order {
		name := Session(it)
		if name == "" {
			continue
		}
		s := sessions[name]
		if s == nil {
			s = &session{}
			sessions[name] = s
			names = append(names, name)
		}
		s.sum += own[it.ID]
		s.matched++
		if s.top == nil || own[it.ID] > s.best {
			s.best, s.top = own[it.ID], it
		}
	}
	if len(sessions) == 0 {
		return nil, nil
	}
	var expanded []*h4r.Item
	var walkErr error
	if walk != nil {
		expanded, walkErr = walkSessions(ctx, walk, permitted, filters, o, names, func(name string) *h4r.Item {
			return sessions[name].top
		}, func(name string) float64 { return sessions[name].sum }, func(it *h4r.Item) {
			if s := sessions[Session(it)]; s != nil {
				s.turns++
			}
		}, own)
	}
	// A session not walked counts as long as the walked ones are on
	// average, and at least as long as its matching turns.
	walked, walkedTurns := 0, 0
	for _, s := range sessions {
		if s.turns > 0 {
			walked++
			walkedTurns += s.turns
		}
	}
	density := func(name string) float64 {
		s := sessions[name]
		n := s.turns
		if n == 0 {
			n = s.matched
			if walked > 0 {
				n = max(n, walkedTurns/walked)
			}
		}
		return s.sum / float64(max(n, 1))
	}
	out := make([]h4r.Hit, 0, len(order)+len(expanded))
	for _, it := range order {
		score := own[it.ID]
		if name := Session(it); name != "" {
			score = max(score, density(name))
		}
		out = append(out, h4r.Hit{Item: it, Score: score})
	}
	for _, it := range expanded {
		out = append(out, h4r.Hit{Item: it, Score: density(Session(it))})
	}
	return sortHits(out), walkErr
}

// walkSessions walks from the best hit of each of the o.Anchors sessions
// with the highest sum (visible hits: SessionEvidence keeps no other),
// calling count for every turn of a walked session it reaches that
// permitted keeps (the hits included), and returns those that are not
// text hits.
func walkSessions(ctx context.Context, walk Walker, permitted func([]*h4r.Item) []*h4r.Item, filters h4r.Filters, o Options,
	names []string, top func(string) *h4r.Item, sum func(string) float64, count func(*h4r.Item), own map[string]float64) ([]*h4r.Item, error) {
	ranked := slices.Clone(names)
	slices.SortStableFunc(ranked, func(a, b string) int { return cmpDesc(sum(a), sum(b)) })
	var anchors []*h4r.Item
	for _, name := range ranked[:min(o.Anchors, len(ranked))] {
		anchors = append(anchors, top(name))
	}
	if len(anchors) == 0 {
		return nil, nil
	}
	ids := make([]string, len(anchors))
	walked := map[string]bool{}
	for i, a := range anchors {
		ids[i] = a.ID
		walked[Session(a)] = true
	}
	reached, err := walk.Generate(ctx, h4r.CandidateQuery{
		Anchors: ids, MaxHops: o.Reach, LinkTypes: o.TurnLinks, Filters: filters,
		Limit: len(anchors) * (2*o.Reach + 1),
	})
	var fallback *h4r.FallbackError
	if err != nil && !errors.As(err, &fallback) { // a fallback's hits are whole; the graph's own run warns of it
		return nil, fmt.Errorf("reaching the turns around %d hits: %w", len(ids), err)
	}
	var turns []*h4r.Item
	seen := map[string]bool{}
	for _, h := range reached {
		if h.Item == nil || seen[h.Item.ID] || !walked[Session(h.Item)] {
			continue // a repeat, or another session's turn
		}
		seen[h.Item.ID] = true
		turns = append(turns, h.Item)
	}
	if permitted != nil {
		turns = permitted(turns)
	}
	var out []*h4r.Item
	for _, it := range turns {
		count(it)
		if _, hit := own[it.ID]; !hit {
			out = append(out, it)
		}
	}
	return out, nil
}

// anySession reports whether some hit belongs to a session.
func anySession(text [][]h4r.Hit) bool {
	for _, hits := range text {
		for _, h := range hits {
			if Session(h.Item) != "" {
				return true
			}
		}
	}
	return false
}

// visibleHits returns text without the hits whose items permitted does
// not keep, asking it once about every item.
func visibleHits(text [][]h4r.Hit, permitted func([]*h4r.Item) []*h4r.Item) [][]h4r.Hit {
	var items []*h4r.Item
	asked := map[string]bool{}
	for _, hits := range text {
		for _, h := range hits {
			if h.Item != nil && !asked[h.Item.ID] {
				asked[h.Item.ID] = true
				items = append(items, h.Item)
			}
		}
	}
	ok := make(map[string]bool, len(items))
	for _, it := range permitted(items) {
		ok[it.ID] = true
	}
	out := make([][]h4r.Hit, len(text))
	for i, hits := range text {
		for _, h := range hits {
			if h.Item != nil && ok[h.Item.ID] {
				out[i] = append(out[i], h)
			}
		}
	}
	return out
}

// TimeEvidence scores the candidates by the window the question names:
// 1 inside, exp(−2·distance/length) outside, where length is the
// window's (at least a day). Undated candidates get nothing. It returns
// nothing unless the window separates the candidates, some inside and
// some not: a time that no candidate or every candidate matches says
// nothing about which is meant (a question about "libraries today" over
// a corpus loaded in one go), and as a source of its own it would only
// dilute the text evidence.
func TimeEvidence(items []*h4r.Item, w timeref.Window) []h4r.Hit {
	length := max(w.To.Sub(w.From), 24*time.Hour)
	var out []h4r.Hit
	inside := 0
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
		default:
			inside++
		}
		out = append(out, h4r.Hit{Item: it, Score: math.Exp(-2 * float64(off) / float64(length))})
	}
	if inside == 0 || inside == len(out) {
		return nil
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
