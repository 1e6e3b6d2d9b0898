package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// walkGraph answers a supersedes walk with hits at distances 0 and 1 and
// counts which of its methods were asked.
type walkGraph struct{ generated, beyond int }

func (*walkGraph) Name() string { return h4r.GenGraph }

func (g *walkGraph) Generate(_ context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	g.generated++
	var hits []h4r.Hit
	for _, id := range q.Anchors {
		hits = append(hits, h4r.Hit{Item: &h4r.Item{ID: id}})
	}
	return append(hits, h4r.Hit{Item: &h4r.Item{ID: "newer"}, Distance: 1}), nil
}

// beyondGraph leaves the anchors out, as store/sqlite's graph does.
type beyondGraph struct{ walkGraph }

func (g *beyondGraph) GenerateBeyondAnchors(_ context.Context, _ h4r.CandidateQuery) ([]h4r.Hit, error) {
	g.beyond++
	return []h4r.Hit{{Item: &h4r.Item{ID: "newer"}, Distance: 1}}, nil
}

// TestSupersedingItemsLeavesTheAnchorsOut: the supersedes walk asks a
// graph that can leave the anchors out to do so, and any other graph for
// all its hits; both give the items one link away.
func TestSupersedingItemsLeavesTheAnchorsOut(t *testing.T) {
	cands := []*h4r.Candidate{{Item: &h4r.Item{ID: "a"}}, {Item: &h4r.Item{ID: "b"}}}
	ids := func(items []*h4r.Item) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.ID)
		}
		return out
	}
	plain, beyond := &walkGraph{}, &beyondGraph{}
	for _, tt := range []struct {
		name  string
		graph h4r.Generator
		calls func() (generated, beyond int)
		want  [2]int
	}{
		{"any graph", plain, func() (int, int) { return plain.generated, plain.beyond }, [2]int{1, 0}},
		{"a graph that leaves the anchors out", beyond, func() (int, int) { return beyond.generated, beyond.beyond }, [2]int{0, 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &Engine{graph: tt.graph}
			got, err := e.supersedingItems(t.Context(), cands)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), []string{"newer"}) {
				t.Errorf("superseding items %v, want [newer]", ids(got))
			}
			if g, b := tt.calls(); [2]int{g, b} != tt.want {
				t.Errorf("Generate asked %d times, GenerateBeyondAnchors %d, want %v", g, b, tt.want)
			}
		})
	}
}

// FuzzProposeBySubject holds proposeBySubject to what supersession
// promises whatever the candidates and what the caller may see: no panic;
// a proposal only for a candidate no writer's link supersedes, naming a
// visible candidate of the same kind, groups and subject, created later,
// and the newest visible one of them.
func FuzzProposeBySubject(f *testing.F) {
	f.Add([]byte{0x11, 0x02, 0x33, 0x14, 0x05, 0x26})
	f.Add([]byte{0x10, 0x10, 0x10}) // one subject, nothing visible
	f.Fuzz(func(t *testing.T, spec []byte) {
		if len(spec) > 64 {
			spec = spec[:64]
		}
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		subjects := []string{"", "boat", "car", "  "}
		var cands []*h4r.Candidate
		visible := map[string]bool{}
		found := map[string][]superseder{}
		for i, b := range spec {
			it := &h4r.Item{ID: fmt.Sprintf("c%02d", i), Kind: []string{"note", "fact"}[b>>7&1]}
			it.Metadata.CreatedAt = base.Add(time.Duration(b&0x0f) * time.Hour)
			if s := subjects[b>>4&3]; s != "" {
				it.Metadata.Extra = map[string]any{h4r.SubjectKey: s}
			}
			if b>>6&1 == 1 {
				it.Metadata.RestrictedToGroups = []string{"hr"}
			}
			visible[it.ID] = b&0x10 == 0 || b&0x01 == 1
			if i%5 == 4 && len(cands) > 0 { // a writer's link already supersedes it
				found[it.ID] = []superseder{{item: cands[0].Item}}
			}
			cands = append(cands, &h4r.Candidate{Item: it})
		}
		linked := map[string]bool{}
		for id := range found {
			linked[id] = true
		}
		proposeBySubject(cands, found, visible)
		byID := map[string]*h4r.Item{}
		for _, c := range cands {
			byID[c.Item.ID] = c.Item
		}
		for id, list := range found {
			for _, s := range list {
				if !s.proposed {
					continue
				}
				old, n := byID[id], s.item
				switch {
				case linked[id]:
					t.Errorf("%s has a writer's link and a proposal (%s)", id, n.ID)
				case !visible[n.ID]:
					t.Errorf("%s is proposed to supersede %s, and the caller may not see it", n.ID, id)
				case subjectKey(n) == "" || subjectKey(n) != subjectKey(old):
					t.Errorf("%s is proposed for %s with another subject (%q, %q)", n.ID, id, subjectKey(n), subjectKey(old))
				case !n.Metadata.CreatedAt.After(old.Metadata.CreatedAt):
					t.Errorf("%s is proposed for %s and is not newer", n.ID, id)
				}
				for _, c := range cands {
					if visible[c.Item.ID] && subjectKey(c.Item) == subjectKey(n) && newerThan(c.Item, n) {
						t.Errorf("%s is proposed for %s, and %s of the same subject is newer", n.ID, id, c.Item.ID)
					}
				}
			}
		}
	})
}
