package conversation_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/conversation"
	"github.com/h4r/h4r/timeref"
)

func turn(id, session string) *h4r.Item {
	it := &h4r.Item{ID: id, Text: id}
	if session != "" {
		it.Metadata.Extra = map[string]any{conversation.SessionKey: session}
	}
	return it
}

// walker answers a walk with every turn of the anchors' sessions, as
// turn-order links would reach them, and records what it was asked.
type walker struct {
	turns map[string][]*h4r.Item // session → its turns
	asked []h4r.CandidateQuery
	err   error
}

func (w *walker) Generate(_ context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	w.asked = append(w.asked, q)
	if w.err != nil {
		return nil, w.err
	}
	var hits []h4r.Hit
	for _, a := range q.Anchors {
		for _, ts := range w.turns {
			for _, t := range ts {
				if t.ID == a {
					for _, u := range ts {
						hits = append(hits, h4r.Hit{Item: u, Distance: 1})
					}
				}
			}
		}
	}
	return hits, nil
}

func scores(hits []h4r.Hit) map[string]float64 {
	m := map[string]float64{}
	for _, h := range hits {
		m[h.Item.ID] = h.Score
	}
	return m
}

// Session a: four turns, three of which match (1, 0.5, 0.5): density
// 0.5. Session b: four turns, one matches (0.8): density 0.2. A document
// without a session matches 0.25.
func fixture() (*walker, [][]h4r.Hit) {
	a := []*h4r.Item{turn("a1", "a"), turn("a2", "a"), turn("a3", "a"), turn("a4", "a")}
	b := []*h4r.Item{turn("b1", "b"), turn("b2", "b"), turn("b3", "b"), turn("b4", "b")}
	doc := turn("doc", "")
	text := [][]h4r.Hit{{
		{Item: a[0], Score: 4}, {Item: b[0], Score: 3.2}, {Item: a[1], Score: 2}, {Item: a[2], Score: 2}, {Item: doc, Score: 1},
	}}
	return &walker{turns: map[string][]*h4r.Item{"a": a, "b": b}}, text
}

func TestSessionEvidence(t *testing.T) {
	all := func(items []*h4r.Item) []*h4r.Item { return items }
	tests := []struct {
		name      string
		walk      bool
		permitted func([]*h4r.Item) []*h4r.Item
		want      map[string]float64
	}{
		{"walked: density counts every turn, missing turns join", true, all, map[string]float64{
			"a1": 1, "a2": 0.5, "a3": 0.5, "a4": 0.5, // a weak hit and the missing turn rise to a's density
			"b1": 0.8, "b2": 0.2, "b3": 0.2, "b4": 0.2, // a lone strong hit keeps its own score, lifts little
			"doc": 0.25, // no session: its own score
		}},
		{"not walked: a session counts only its hits", false, all, map[string]float64{
			"a1": 1, "a2": 2.0 / 3, "a3": 2.0 / 3, "b1": 0.8, "doc": 0.25,
		}},
		{"hits the caller may not see are no evidence", true, func([]*h4r.Item) []*h4r.Item { return nil }, map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, text := fixture()
			var walk conversation.Walker
			if tt.walk {
				walk = w
			}
			hits, err := conversation.SessionEvidence(context.Background(), text, walk, tt.permitted, h4r.Filters{}, conversation.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := scores(hits)
			if len(got) != len(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			for id, want := range tt.want {
				if g, ok := got[id]; !ok || math.Abs(g-want) > 1e-9 {
					t.Errorf("%s scored %v (present %v), want %v", id, g, ok, want)
				}
			}
			for i := 1; i < len(hits); i++ {
				if hits[i].Score > hits[i-1].Score {
					t.Fatalf("hits not best first: %v", hits)
				}
			}
		})
	}
}

// A turn the caller may not see, a text hit or one the walk reaches,
// weighs as a turn that does not exist: it is not in the evidence, it
// counts in no session's density, it is no anchor, and its score moves no
// other hit's. a1 is the best hit of all and its session's anchor.
func TestSessionEvidenceHiddenTurn(t *testing.T) {
	all := func(items []*h4r.Item) []*h4r.Item { return items }
	notA1 := func(items []*h4r.Item) []*h4r.Item {
		var keep []*h4r.Item
		for _, it := range items {
			if it.ID != "a1" {
				keep = append(keep, it)
			}
		}
		return keep
	}
	w, text := fixture()
	hidden, err := conversation.SessionEvidence(context.Background(), text, w, notA1, h4r.Filters{}, conversation.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, text = fixture()
	text[0] = text[0][1:]
	w.turns["a"] = w.turns["a"][1:]
	absent, err := conversation.SessionEvidence(context.Background(), text, w, all, h4r.Filters{}, conversation.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, want := scores(hidden), scores(absent)
	if _, ok := want["a4"]; !ok || len(want) != 8 {
		t.Fatalf("without a1: %v, want session a walked from a2 (a4 joins) and b walked", want)
	}
	if len(got) != len(want) {
		t.Errorf("with a1 hidden: %v; as if it did not exist: %v", got, want)
	}
	for id, s := range want {
		if g, ok := got[id]; !ok || math.Abs(g-s) > 1e-9 {
			t.Errorf("%s scored %v (present %v) with a1 hidden, %v as if a1 did not exist", id, g, ok, s)
		}
	}
}

// The walk follows turn-order links from the best hit of each session,
// passes the request's filters, and a failed walk keeps the evidence of
// the hits and says why.
func TestSessionEvidenceWalk(t *testing.T) {
	w, text := fixture()
	filters := h4r.Filters{Metadata: map[string]any{"scope": "c1"}}
	if _, err := conversation.SessionEvidence(context.Background(), text, w, nil, filters, conversation.Options{}); err != nil {
		t.Fatal(err)
	}
	if len(w.asked) != 1 {
		t.Fatalf("%d walks, want 1", len(w.asked))
	}
	q := w.asked[0]
	if len(q.Anchors) != 2 || q.Anchors[0] != "a1" || q.Anchors[1] != "b1" || len(q.LinkTypes) != 1 || q.LinkTypes[0] != conversation.DefaultTurnLink || q.Filters.Metadata["scope"] != "c1" {
		t.Errorf("walk asked %+v, want anchors a1, b1 along follows links within scope c1", q)
	}
	w.err = &h4r.FallbackError{Primary: "neo4j", Fallback: "store CTE", Err: errors.New("late")}
	w.turns = map[string][]*h4r.Item{}
	if _, err := conversation.SessionEvidence(context.Background(), text, w, nil, filters, conversation.Options{}); err != nil {
		t.Errorf("a fallback's answer failed the evidence: %v", err)
	}
	w.err = errors.New("graph down")
	hits, err := conversation.SessionEvidence(context.Background(), text, w, nil, filters, conversation.Options{})
	if err == nil || len(hits) != 5 {
		t.Errorf("failed walk: %d hits, error %v; want the 5 text hits and an error", len(hits), err)
	}
}

func TestSessionEvidenceWithoutSessions(t *testing.T) {
	text := [][]h4r.Hit{{{Item: turn("d1", ""), Score: 2}, {Item: turn("d2", ""), Score: 1}}}
	w := &walker{}
	hits, err := conversation.SessionEvidence(context.Background(), text, w, nil, h4r.Filters{}, conversation.Options{})
	if err != nil || hits != nil || len(w.asked) != 0 {
		t.Errorf("sessionless hits gave %v, %v after %d walks; want nothing and no walk", hits, err, len(w.asked))
	}
}

func TestTimeEvidence(t *testing.T) {
	at := func(id string, t time.Time) *h4r.Item {
		it := turn(id, "s")
		it.Metadata.CreatedAt = t
		return it
	}
	day := func(d int) time.Time { return time.Date(2023, 6, d, 12, 0, 0, 0, time.UTC) }
	w := timeref.Window{From: day(10), To: day(17)}
	hits := conversation.TimeEvidence([]*h4r.Item{at("inside", day(12)), at("a day late", day(18)), at("a week early", day(3)), turn("undated", "s")}, w)
	got := scores(hits)
	want := map[string]float64{"inside": 1, "a day late": math.Exp(-2.0 / 7), "a week early": math.Exp(-2)}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v (undated left out)", got, want)
	}
	for id, v := range want {
		if math.Abs(got[id]-v) > 1e-9 {
			t.Errorf("%s scored %v, want %v", id, got[id], v)
		}
	}
	if hits[0].Item.ID != "inside" {
		t.Errorf("first %s, want inside", hits[0].Item.ID)
	}
	for name, items := range map[string][]*h4r.Item{
		"none inside":  {at("a day late", day(18)), at("a week early", day(3))},
		"all inside":   {at("inside", day(12)), at("also inside", day(16))},
		"none dated":   {turn("undated", "s")},
		"no candidate": nil,
	} {
		if hits := conversation.TimeEvidence(items, w); hits != nil {
			t.Errorf("%s: %v, want nothing: the window does not separate the candidates", name, scores(hits))
		}
	}
}
