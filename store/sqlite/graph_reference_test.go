package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/storetest"
)

// cteHopsSQL is the recursive query hops were answered with before the
// walk in memory (adjacency.go), kept as the reference that walk must
// equal and the baseline of BenchmarkGraphCISI. walk holds (item, hops)
// pairs; UNION drops a pair seen before, so cycles end, and the hop bound
// ends the rest. Two additions since: link types (?4) and targets (?5), a
// condition each, null for none.
const cteHopsSQL = `WITH RECURSIVE walk (id, hops) AS (
		SELECT id, 0 FROM items WHERE id IN (SELECT value FROM json_each(?1))
		UNION
		SELECT l.target, w.hops + 1 FROM walk w
			JOIN links l ON l.source = w.id
			JOIN items n ON n.id = l.target
			WHERE w.hops < ?2 AND (?4 IS NULL OR l.type IN (SELECT value FROM json_each(?4)))
		UNION
		SELECT l.source, w.hops + 1 FROM walk w
			JOIN links l ON l.target = w.id
			WHERE w.hops < ?2 AND NOT ?3 AND (?4 IS NULL OR l.type IN (SELECT value FROM json_each(?4)))
	),
	reached (id, distance) AS (SELECT id, min(hops) FROM walk GROUP BY id)
	SELECT ` + itemColumns + `, r.distance
	FROM reached r JOIN items i ON i.id = r.id
	WHERE (?5 IS NULL OR r.id IN (SELECT value FROM json_each(?5)))`

// cteGraph is the graph generator as it was: one recursive query.
type cteGraph struct{ s *Store }

func (cteGraph) Name() string { return h4r.GenGraph }

func (g cteGraph) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	limit, maxHops, err := h4r.HopBounds(q, defaultGraphLimit, 0)
	if err != nil {
		return nil, err
	}
	where, filterArgs, err := whereFilters(q.Filters)
	if err != nil {
		return nil, err
	}
	if len(q.Anchors) == 0 {
		return nil, nil
	}
	anchors, err := jsonList(q.Anchors)
	if err != nil {
		return nil, err
	}
	var types, targets any // NULL: every type, every item
	if len(q.LinkTypes) > 0 {
		if types, err = jsonList(q.LinkTypes); err != nil {
			return nil, err
		}
	}
	if len(q.Targets) > 0 {
		if targets, err = jsonList(q.Targets); err != nil {
			return nil, err
		}
	}
	query := cteHopsSQL + where + ` ORDER BY r.distance, i.id LIMIT ?`
	args := append(append([]any{anchors, maxHops, q.Directed, types, targets}, filterArgs...), limit)
	var hits []h4r.Hit
	err = g.s.readTx(ctx, func(tx *sql.Tx) error {
		var distances []*int
		items, err := queryItems(ctx, tx, query, args, func() []any {
			distances = append(distances, new(int))
			return []any{distances[len(distances)-1]}
		})
		if err != nil {
			return err
		}
		hits = make([]h4r.Hit, len(items))
		for i, it := range items {
			hits[i] = h4r.Hit{Item: it, Distance: *distances[i]}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking links from %d anchors (CTE): %w", len(q.Anchors), err)
	}
	return hits, nil
}

// TestWalkEqualsCTE: the walk in memory answers as the recursive query
// did, on random graphs with cycles, self-links, links to items never
// ingested, rewrites and deletes, with filters, link types and targets.
func TestWalkEqualsCTE(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			s, _ := newTestStore(t)
			storetest.CompareHops(t, s, cteGraph{s}, seed, 40)
		})
	}
}

// The storetest hop table through the reference query too: the reference
// is right where the table says what is right.
func TestCTEAnswersTheHopTable(t *testing.T) {
	for _, tc := range storetest.HopCases() {
		t.Run(tc.Name, func(t *testing.T) {
			s, _ := newTestStore(t)
			if _, err := s.Upsert(t.Context(), tc.Items()); err != nil {
				t.Fatal(err)
			}
			hits, err := cteGraph{s}.Generate(t.Context(), tc.Query())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, h := range hits {
				got[h.Item.ID] = h.Distance
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.Want) {
				t.Errorf("distances %v, want %v", got, tc.Want)
			}
		})
	}
}

// beyondAnchors is a store whose graph generator answers with
// GenerateBeyondAnchors.
type beyondAnchors struct{ *Store }

func (b beyondAnchors) Graph() h4r.Generator { return beyondGenerator{graph{b.Store}} }

type beyondGenerator struct{ graph }

func (g beyondGenerator) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	return g.GenerateBeyondAnchors(ctx, q)
}

// anchorsLeftOut is Generate's hits less those at distance 0.
type anchorsLeftOut struct{ graph }

func (g anchorsLeftOut) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	hits, err := g.graph.Generate(ctx, q)
	var out []h4r.Hit
	for _, h := range hits {
		if h.Distance > 0 {
			out = append(out, h)
		}
	}
	return out, err
}

// TestGenerateBeyondAnchors: GenerateBeyondAnchors answers every random
// query (filters, limits the anchors count towards, link types, targets)
// with Generate's hits less the anchors, in order.
func TestGenerateBeyondAnchors(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			s, _ := newTestStore(t)
			storetest.CompareHops(t, beyondAnchors{s}, anchorsLeftOut{graph{s}}, seed, 20)
		})
	}
}
