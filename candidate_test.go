package h4r_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/h4r/h4r"
)

func TestReadPresent(t *testing.T) {
	broken := errors.New("disk gone")
	get := func(_ context.Context, id string) (*h4r.Item, error) {
		switch id {
		case "gone":
			return nil, h4r.Errorf(h4r.ENOTFOUND, "id", "no item with id %q", id)
		case "broken":
			return nil, broken
		}
		return &h4r.Item{ID: id}, nil
	}
	present, absent, err := h4r.ReadPresent(context.Background(), get, []string{"a", "gone", "b"})
	if err != nil || len(present) != 2 || present[0].ID != "a" || present[1].ID != "b" || !slices.Equal(absent, []string{"gone"}) {
		t.Errorf("ReadPresent = %v, %v, %v; want a and b present, gone absent", present, absent, err)
	}
	if _, _, err := h4r.ReadPresent(context.Background(), get, []string{"a", "broken"}); !errors.Is(err, broken) {
		t.Errorf("a store error was %v, want it returned wrapped", err)
	}
}

func TestHitLimit(t *testing.T) {
	tests := []struct {
		name       string
		limit, def int
		want       int
		wantErr    bool
	}{
		{"zero takes the default", 0, 100, 100, false},
		{"positive is kept", 7, 100, 7, false},
		{"negative is refused", -1, 100, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := h4r.HitLimit(tt.limit, tt.def)
			if got != tt.want || (err != nil) != tt.wantErr || (err != nil && h4r.ErrorCode(err) != h4r.EINVALID) {
				t.Errorf("HitLimit(%d, %d) = %d, %v", tt.limit, tt.def, got, err)
			}
		})
	}
}

// mergeByDefinition is Merge grown hit by hit, as its doc defines it.
func mergeByDefinition(order []string, hits map[string][]h4r.Hit) []*h4r.Candidate {
	byID := map[string]*h4r.Candidate{}
	var out []*h4r.Candidate
	for _, gen := range order {
		for i, h := range hits[gen] {
			c, ok := byID[h.Item.ID]
			if !ok {
				c = &h4r.Candidate{Item: h.Item}
				byID[h.Item.ID] = c
				out = append(out, c)
			}
			c.Evidence = append(c.Evidence, h4r.Evidence{Generator: gen, Score: h.Score, Rank: i + 1, Distance: h.Distance})
		}
	}
	return out
}

// Merge keeps the first-seen order and every generator's evidence, also
// when a generator lists an id twice (more evidence than generators), and
// a candidate's evidence grows without touching another's.
func TestMergeEqualsDefinition(t *testing.T) {
	hit := func(id string, score float64) h4r.Hit {
		return h4r.Hit{Item: &h4r.Item{ID: id}, Score: score, Distance: len(id)}
	}
	tests := []struct {
		name  string
		order []string
		hits  map[string][]h4r.Hit
	}{
		{"no hits", []string{"fulltext", "vector"}, map[string][]h4r.Hit{}},
		{"one generator", []string{"fulltext"}, map[string][]h4r.Hit{"fulltext": {hit("a", 3), hit("b", 2)}}},
		{"overlapping generators", []string{"fulltext", "vector", "graph"}, map[string][]h4r.Hit{
			"fulltext": {hit("a", 3), hit("b", 2), hit("c", 1)},
			"vector":   {hit("c", 0.9), hit("d", 0.8), hit("a", 0.7)},
			"graph":    {hit("d", 1), hit("e", 1)},
		}},
		{"an id listed twice by one generator", []string{"fulltext", "vector"}, map[string][]h4r.Hit{
			"fulltext": {hit("a", 3), hit("a", 2), hit("a", 1)},
			"vector":   {hit("a", 0.5), hit("b", 0.4)},
		}},
		{"a generator out of the order is left out", []string{"vector"}, map[string][]h4r.Hit{
			"fulltext": {hit("a", 3)},
			"vector":   {hit("b", 0.4)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := h4r.Merge(tt.order, tt.hits), mergeByDefinition(tt.order, tt.hits)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Merge = %s, by definition %s", describeCandidates(got), describeCandidates(want))
			}
			// Growing one candidate's evidence leaves the others' alone.
			before := describeCandidates(got)
			for _, c := range got {
				c.Evidence = append(c.Evidence, h4r.Evidence{Generator: "later"})
			}
			for i, c := range got {
				n := len(c.Evidence)
				if n != len(want[i].Evidence)+1 || c.Evidence[n-1].Generator != "later" || !reflect.DeepEqual(c.Evidence[:n-1], want[i].Evidence) {
					t.Fatalf("after adding evidence to every candidate, %s holds %v (before: %s)", c.Item.ID, c.Evidence, before)
				}
			}
		})
	}
}

func describeCandidates(cs []*h4r.Candidate) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%s%v ", c.Item.ID, c.Evidence)
	}
	return b.String()
}
