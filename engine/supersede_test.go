package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
)

// openEmpty builds the production wiring over a fresh, empty store.
func openEmpty(tb testing.TB) *app.App {
	tb.Helper()
	a, err := app.Open(context.Background(), testConfig(tb), app.WithClock(fixedClock), app.WithLogger(discardLogger()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close() })
	return a
}

// updateCorpus: facts stated and later restated. berlin supersedes paris
// by a link; hr-move, which only the hr group may see, supersedes lyon;
// dog-new restates dog-old's subject; expired stopped holding before the
// clock.
func updateCorpus() []h4r.Item {
	day := func(d int) h4r.Metadata {
		return h4r.Metadata{CreatedAt: demoNow.AddDate(0, 0, -d)}
	}
	subject := func(m h4r.Metadata, s string) h4r.Metadata {
		m.Extra = map[string]any{h4r.SubjectKey: s}
		return m
	}
	hidden := day(1)
	hidden.RestrictedToGroups = []string{"hr"}
	expired := day(30)
	expired.ValidFrom, expired.ValidUntil = demoNow.AddDate(0, 0, -30), demoNow.AddDate(0, 0, -2)
	sup := func(id string) []h4r.Link { return []h4r.Link{{Type: h4r.LinkSupersedes, Target: id}} }
	return []h4r.Item{
		{ID: "paris", Kind: "note", Text: "I live in Paris at the moment, close to the river", Metadata: day(20)},
		{ID: "berlin", Kind: "note", Text: "I just moved, I live in Berlin now", Metadata: day(3), Links: sup("paris")},
		{ID: "lyon", Kind: "note", Text: "my office is in Lyon near the station", Metadata: day(20)},
		{ID: "hr-move", Kind: "note", Text: "the company moves its staff", Metadata: hidden, Links: sup("lyon")},
		{ID: "dog-old", Kind: "note", Text: "our dog is called Rex", Metadata: subject(day(20), "dog_name")},
		{ID: "dog-new", Kind: "note", Text: "we renamed the dog, she is called Bella now", Metadata: subject(day(2), "dog_name")},
		{ID: "expired", Kind: "note", Text: "the parking permit for the garage is valid", Metadata: expired},
		{ID: "permit", Kind: "note", Text: "a parking permit costs forty euros a month at the garage", Metadata: day(30)},
	}
}

// TestSupersededItems: a superseded item ranks under the item that
// supersedes it and is told superseded_by; a superseding item the caller
// may not see neither names nor demotes; superseded keep and exclude, and
// valid_at, do what they say.
func TestSupersededItems(t *testing.T) {
	a := openEmpty(t)
	if _, err := a.Store.Upsert(context.Background(), updateCorpus()); err != nil {
		t.Fatal(err)
	}
	relevanceOnly := map[string]float64{"relevance": 1}
	tests := []struct {
		name           string
		query          string
		superseded     string
		validAt        string
		wantFirst      string
		wantBy         map[string]string // result id → superseded_by ("" for none)
		wantProposed   string            // an id whose supersession is proposed
		wantAbsent     []string
		wantCites      map[string]string // newer → older it lists in supersedes
		wantExplainsBy string            // a phrase the older one's explanation holds
	}{
		{name: "linked update wins", query: "where do I live Paris Berlin river moved",
			wantFirst: "berlin", wantBy: map[string]string{"paris": "berlin", "berlin": ""},
			wantCites: map[string]string{"berlin": "paris"}, wantExplainsBy: "superseded by berlin"},
		{name: "a superseder the query did not find is named", query: "Paris moment close river",
			wantFirst: "paris", wantBy: map[string]string{"paris": "berlin"}, wantAbsent: []string{"berlin"}},
		{name: "keep ranks by relevance alone", query: "I live in Paris at the moment close to the river moved Berlin", superseded: h4r.SupersededKeep,
			wantFirst: "paris", wantBy: map[string]string{"paris": "berlin"}},
		{name: "a question about the earlier value keeps it", query: "where did I live before, in Paris close to the river",
			wantFirst: "paris", wantBy: map[string]string{"paris": "berlin"}},
		{name: "without the cue the same words demote it", query: "where do I live Paris Berlin river moved",
			wantFirst: "berlin", wantBy: map[string]string{"paris": "berlin"}},
		{name: "exclude leaves the old fact out", query: "where do I live Paris Berlin river moved", superseded: h4r.SupersededExclude,
			wantFirst: "berlin", wantAbsent: []string{"paris"}},
		{name: "hidden superseder names and demotes nothing", query: "office Lyon station company moves staff",
			wantFirst: "lyon", wantBy: map[string]string{"lyon": ""}, wantAbsent: []string{"hr-move"}},
		{name: "same subject is a proposal", query: "dog called Rex Bella renamed",
			wantFirst: "dog-new", wantBy: map[string]string{"dog-old": "dog-new"}, wantProposed: "dog-old", wantExplainsBy: "probably superseded by dog-new"},
		{name: "expired item is told not valid", query: "parking permit garage",
			wantFirst: "expired", wantExplainsBy: "not valid at"},
		{name: "valid_at leaves out what did not hold then", query: "parking permit garage", validAt: demoNow.Format(time.RFC3339),
			wantFirst: "permit", wantAbsent: []string{"expired"}},
		{name: "valid_at inside the interval keeps it", query: "the parking permit for the garage is valid", validAt: demoNow.AddDate(0, 0, -10).Format(time.RFC3339),
			wantFirst: "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := h4r.ContextRequest{Query: h4r.Query{Text: tt.query}, Weights: relevanceOnly, Superseded: tt.superseded, ValidAt: tt.validAt}
			p, err := a.Engine.ContextPack(context.Background(), healer(), &req)
			if err != nil {
				t.Fatal(err)
			}
			ids := resultIDs(p)
			if len(ids) == 0 || ids[0] != tt.wantFirst {
				t.Fatalf("results %v, want %s first", ids, tt.wantFirst)
			}
			byID := map[string]h4r.Result{}
			for _, r := range p.Results {
				byID[r.ID] = r
			}
			for id, want := range tt.wantBy {
				r, ok := byID[id]
				if !ok {
					t.Errorf("%s is not in the pack %v", id, ids)
					continue
				}
				if r.SupersededBy != want {
					t.Errorf("%s superseded_by %q, want %q", id, r.SupersededBy, want)
				}
				if e, _ := explained(p, id); e.SupersededBy != want {
					t.Errorf("%s explanation superseded_by %q, want %q", id, e.SupersededBy, want)
				}
				if r.SupersessionProposed != (id == tt.wantProposed) {
					t.Errorf("%s supersession_proposed %v, want %v", id, r.SupersessionProposed, id == tt.wantProposed)
				}
			}
			for _, id := range tt.wantAbsent {
				if _, ok := byID[id]; ok {
					t.Errorf("%s is in the pack %v, want it left out", id, ids)
				}
			}
			for newer, older := range tt.wantCites {
				if got := byID[newer].Supersedes; len(got) != 1 || got[0] != older {
					t.Errorf("%s supersedes %v, want [%s]", newer, got, older)
				}
			}
			if tt.wantExplainsBy != "" {
				found := false
				for _, r := range p.Results {
					found = found || strings.Contains(r.Explanation, tt.wantExplainsBy)
				}
				if !found {
					t.Errorf("no explanation says %q", tt.wantExplainsBy)
				}
			}
			if body := p.Explainability.Warnings; strings.Contains(strings.Join(body, " "), "hr-move") {
				t.Errorf("a warning names the hidden item: %v", body)
			}
		})
	}
}

// TestSupersedeBadRequest: superseded and valid_at are checked, naming
// the field.
func TestSupersedeBadRequest(t *testing.T) {
	for _, tt := range []struct {
		name, field string
		req         h4r.ContextRequest
	}{
		{"unknown superseded", "superseded", h4r.ContextRequest{Query: h4r.Query{Text: "x"}, Superseded: "hide"}},
		{"valid_at not a time", "valid_at", h4r.ContextRequest{Query: h4r.Query{Text: "x"}, ValidAt: "yesterday"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.req.Plan("")
			if e, ok := err.(*h4r.Error); !ok || e.Field != tt.field || e.Code != h4r.EINVALID {
				t.Errorf("Plan: %v, want invalid_argument on %s", err, tt.field)
			}
		})
	}
}
