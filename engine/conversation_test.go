package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/conversation"
)

// convItems are two sessions of one conversation, four turns each, a week
// apart and chained by follows links, and two documents without a session.
// Session s1 is about the garden: three of its turns say so; its third
// turn ("she picked tulips") shares no word with the question. Session s2
// mentions the garden once.
func convItems() []h4r.Item {
	day := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	texts := map[string][]string{
		"s1": {"user: we planted the garden beds with my daughter", "assistant: the garden beds sound lovely", "user: she picked tulips", "assistant: the garden will bloom soon"},
		"s2": {"user: the car needs new tyres", "assistant: tyres wear out", "user: the neighbour's garden is messy", "assistant: messy neighbours happen"},
	}
	var items []h4r.Item
	prev := ""
	for s, session := range []string{"s1", "s2"} {
		for i, text := range texts[session] {
			id := fmt.Sprintf("%s-t%d", session, i+1)
			it := h4r.Item{ID: id, Kind: "turn", Text: text}
			it.Metadata.CreatedAt = day.AddDate(0, 0, 7*s).Add(time.Duration(i) * time.Minute)
			it.Metadata.Extra = map[string]any{conversation.SessionKey: session, "scope": "c1"}
			if prev != "" {
				it.Links = []h4r.Link{{Type: "follows", Target: prev, Strength: 1}}
			}
			items = append(items, it)
			prev = id
		}
	}
	for i, text := range []string{"garden tools for small garden beds", "a guide to garden soil"} {
		items = append(items, h4r.Item{ID: fmt.Sprintf("doc%d", i+1), Kind: "document", Text: text})
	}
	return items
}

func openConv(t *testing.T, on bool) *app.App {
	t.Helper()
	cfg := testConfig(t)
	cfg.Conversation = on
	a, err := app.Open(context.Background(), cfg, app.WithClock(fixedClock), app.WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if _, err := a.Store.Upsert(context.Background(), convItems()); err != nil {
		t.Fatal(err)
	}
	return a
}

func relevanceByID(p *h4r.Pack) map[string]float64 {
	m := map[string]float64{}
	for _, it := range p.Explainability.Items {
		m[it.ID] = it.Signals[h4r.Relevance]
	}
	return m
}

func rankOf(p *h4r.Pack, id string) int {
	if ex, ok := explained(p, id); ok {
		return ex.Rank
	}
	return 0
}

// TestConversationEvidence: a turn of the session about the question joins
// the candidates though it shares no word with it, and ranks above the
// other session's turn that mentions the question's word once; a question
// naming a time favours the turns made then; and candidates without a
// session rank exactly as without conversation evidence.
func TestConversationEvidence(t *testing.T) {
	on, off := openConv(t, true), openConv(t, false)
	scoped := map[string]any{"scope": "c1"}
	t.Run("session turns join and rise", func(t *testing.T) {
		req := h4r.ContextRequest{Query: h4r.Query{Text: "what did we do in the garden beds", Filters: scoped}, Limit: 50}
		withConv := auditPack(t, on.Engine, healer(), req)
		without := auditPack(t, off.Engine, healer(), req)
		if _, ok := withConv.Sources[conversation.GenSession]; !ok {
			t.Fatalf("sources %v, want %s among them", withConv.Sources, conversation.GenSession)
		}
		if rankOf(without, "s1-t3") != 0 {
			t.Fatalf("s1-t3 was a text candidate without conversation evidence: the fixture no longer tests a missing turn")
		}
		r3, rOther := rankOf(withConv, "s1-t3"), rankOf(withConv, "s2-t3")
		if r3 == 0 || rOther == 0 || r3 > rOther {
			t.Errorf("s1-t3 ranked %d, s2-t3 %d: want the garden session's silent turn found and above the other session's passing mention", r3, rOther)
		}
	})
	t.Run("a named time favours its turns", func(t *testing.T) {
		asOf := time.Date(2026, 5, 15, 12, 0, 0, 0, time.UTC).Format(time.RFC3339) // s1 two weeks before, s2 one
		req := h4r.ContextRequest{Query: h4r.Query{Text: "what about the garden two weeks ago", Filters: scoped}, Limit: 50, AsOf: asOf}
		p := auditPack(t, on.Engine, healer(), req)
		if _, ok := p.Sources[conversation.GenTime]; !ok {
			t.Fatalf("sources %v, want %s among them", p.Sources, conversation.GenTime)
		}
		if a, b := rankOf(p, "s1-t1"), rankOf(p, "s2-t3"); a == 0 || b == 0 || a > b {
			t.Errorf("s1-t1 (two weeks before) ranked %d, s2-t3 (one week) %d", a, b)
		}
		req.AsOf = time.Date(2026, 5, 22, 12, 0, 0, 0, time.UTC).Format(time.RFC3339) // now s2 is two weeks before
		p = auditPack(t, on.Engine, healer(), req)
		if a, b := rankOf(p, "s1-t1"), rankOf(p, "s2-t3"); a == 0 || b == 0 || b > a {
			t.Errorf("as of a week later: s2-t3 ranked %d, s1-t1 %d; want s2's turn first", b, a)
		}
	})
	t.Run("sessionless candidates rank as without", func(t *testing.T) {
		req := h4r.ContextRequest{Query: h4r.Query{Text: "garden soil tools", Filters: map[string]any{"kind": "document"}}, Limit: 50}
		withConv, without := auditPack(t, on.Engine, healer(), req), auditPack(t, off.Engine, healer(), req)
		if len(withConv.Sources) != len(without.Sources) {
			t.Errorf("sources %v with conversation evidence, %v without", withConv.Sources, without.Sources)
		}
		a, b := relevanceByID(withConv), relevanceByID(without)
		if len(a) == 0 || len(a) != len(b) {
			t.Fatalf("candidates %v with, %v without", a, b)
		}
		for id, v := range b {
			if a[id] != v {
				t.Errorf("%s: relevance %v with conversation evidence, %v without", id, a[id], v)
			}
		}
		ids := func(p *h4r.Pack) []string {
			var out []string
			for _, it := range p.Explainability.Items {
				out = append(out, it.ID)
			}
			return out
		}
		if !slices.Equal(ids(withConv), ids(without)) {
			t.Errorf("order %v with conversation evidence, %v without", ids(withConv), ids(without))
		}
	})
}
