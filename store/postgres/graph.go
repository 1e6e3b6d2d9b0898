package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/linkgraph"
)

const defaultGraphLimit = 500

// graph is the causal-hop generator: a breadth-first walk over links from
// the anchors, in the graph in memory when it is current (memgraph.go),
// else one query per hop (frontier.go), then one for the items.
type graph struct {
	s   *Store
	via walkPath
}

// walkPath says where a graph generator walks; tests and benchmarks pin
// one.
type walkPath int

const (
	viaEither   walkPath = iota // memory when current, else the database
	viaMemory                   // memory only: errGraphBehind when it is not current
	viaDatabase                 // frontier queries only
)

// errGraphBehind is a memory-only walk's answer when the graph in memory
// is not loaded or not current.
var errGraphBehind = errors.New("the link graph in memory is not current")

func (graph) Name() string { return h4r.GenGraph }

// Generate returns the items within q.MaxHops links of q.Anchors (default
// h4r.DefaultMaxHops), each once with its smallest distance; anchors
// that exist come back at distance 0. Links are followed both ways unless
// q.Directed, and only links of q.LinkTypes when it is not empty. A walk
// passes only through items that exist: a link to an item not yet
// ingested, or deleted, leads nowhere. Filters (and q.Targets) apply to
// what is returned, not to the walk, so a path through a filtered-out item
// still counts. Hits are ordered by distance, then id.
func (g graph) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	limit, maxHops, err := h4r.HopBounds(q, defaultGraphLimit, 0)
	if err != nil {
		return nil, err
	}
	// The reached ids and distances are $1 and $2 of the final query; the
	// filters' arguments follow.
	p := &params{}
	p.add(nil)
	p.add(nil)
	where, err := whereFilters(q.Filters, p)
	if err != nil {
		return nil, err
	}
	if len(q.Anchors) == 0 {
		return nil, nil
	}
	limitParam := p.add(limit)
	cached := g.s.items.Enabled()
	var query string
	if cached {
		// The hits' stamps; their items come through the cache
		// (readHitsCached).
		query = `WITH hit AS (
			SELECT r.id, r.distance FROM unnest($1::text[], $2::int[]) AS r (id, distance) JOIN items i ON i.id = r.id
			WHERE true` + where + ` ORDER BY r.distance, r.id LIMIT ` + limitParam + `)
		SELECT ` + stampColumns + `, h.distance FROM hit h JOIN items i ON i.id = h.id ORDER BY h.distance, i.id`
	} else {
		query = reachedHitsSQL(where, limitParam) + hitLinks + `
		ORDER BY h.distance, i.id`
	}
	w := linkgraph.Walk{Anchors: q.Anchors, MaxHops: maxHops, Directed: q.Directed, Types: q.LinkTypes, Targets: q.Targets}
	if where == "" {
		w.Enough = limit
	}
	if g.via != viaDatabase {
		hits, current, err := g.fromMemory(ctx, w, where, limitParam, slices.Clone(p.args))
		switch {
		case err != nil:
			return nil, fmt.Errorf("walking links from %d anchors in memory: %w", len(q.Anchors), err)
		case current:
			return hits, nil
		case g.via == viaMemory:
			return nil, errGraphBehind
		}
	}
	var hits []h4r.Hit
	err = g.s.read(ctx, func(ctx context.Context) error {
		conn, err := g.s.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		// Released inside the walk's snapshot (a failure midway), the
		// connection is closed by the pool rather than reused.
		defer conn.Release()
		reached, err := walkFrontier(ctx, conn.Conn(), w)
		if err != nil {
			return err
		}
		if len(reached) == 0 {
			hits = nil
			_, err := conn.Exec(ctx, `ROLLBACK`)
			return err
		}
		ids, dists := make([]string, len(reached)), make([]int32, len(reached))
		for i, r := range reached {
			ids[i], dists[i] = r.ID, int32(r.Distance)
		}
		p.args[0], p.args[1] = ids, dists
		if cached {
			hits, err = g.s.readHitsCached(ctx, conn.Conn(), query, p.args)
		} else {
			hits, err = readHits(ctx, conn.Conn(), query, p.args)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("walking links from %d anchors: %w", len(q.Anchors), err)
	}
	return hits, nil
}

// reachedHitsSQL selects the hits among the items reached, $1 with their
// distances $2, that pass the filters where, at most limit (a parameter),
// with hitColumns, up to the join of their links.
func reachedHitsSQL(where, limit string) string {
	return `WITH hit AS (
			SELECT r.id, r.distance FROM unnest($1::text[], $2::int[]) AS r (id, distance) JOIN items i ON i.id = r.id
			WHERE true` + where + ` ORDER BY r.distance, r.id LIMIT ` + limit + `)
		` + hitColumns + `
		FROM hit h JOIN items i ON i.id = h.id`
}

// hitColumns select a hit: its item's fields, no links as JSON (decoding
// them is most of what reading a hundred CISI hits with their 5,000 links
// costs), the distance, and the links as three arrays (hitLinks).
const hitColumns = `SELECT ` + itemFields + `, NULL::json, h.distance, lk.targets, lk.types, lk.strengths`

// hitLinks joins the links of item i as arrays in their order.
const hitLinks = `
		LEFT JOIN LATERAL (SELECT array_agg(l.target ORDER BY l.position) AS targets,
				array_agg(l.type ORDER BY l.position) AS types, array_agg(l.strength ORDER BY l.position) AS strengths
			FROM links l WHERE l.source = i.id) lk ON true`

// fromMemory walks the link graph in memory, when it is loaded, and reads
// the hits among the items reached that pass the filters where (with args,
// whose first two it sets to the items reached and their distances), at
// most limit (a parameter). In the same round trip a second statement,
// whose snapshot is no older than the first's, reads the graph
// generation: when it is the one the memory held at the walk, the walk
// was the snapshot's, and the hits take their links from memory (current
// reports true). Otherwise the memory is behind, the hits are thrown away,
// and the caller walks in the database; the memory is asked to catch up.
// Only the first w.Enough reached are sent when it is set (no filters: the
// hits are the first limit reached). Items decoded before at the row's version are
// not sent again (hitcache.go).
func (g graph) fromMemory(ctx context.Context, w linkgraph.Walk, where, limit string, args []any) (hits []h4r.Hit, current bool, err error) {
	m := &g.s.graph
	m.mu.RLock()
	if !m.loaded {
		m.mu.RUnlock()
		return nil, false, nil
	}
	reached := m.g.Walk(w)
	walked := m.gen
	m.mu.RUnlock()
	if first := w.Enough; first > 0 && len(reached) > first {
		// Unfiltered, the hits are the first reached: every item reached
		// is one in the snapshot the generation check proves is the walk's.
		reached = reached[:first]
	}
	var query string
	var held map[string]*h4r.Item
	if len(reached) > 0 {
		ids, dists := make([]string, len(reached)), make([]int32, len(reached))
		for i, r := range reached {
			ids[i], dists[i] = r.ID, int32(r.Distance)
		}
		var versions []int32
		versions, held = g.s.hits.versions(ids)
		args[0], args[1] = ids, dists
		args = append(args, versions)
		query = memoryHitsSQL(where, limit, fmt.Sprintf("$%d", len(args)))
	}
	var gen int64
	var decoded []*h4r.Item
	err = g.s.read(ctx, func(ctx context.Context) error {
		b := &pgx.Batch{}
		if len(reached) > 0 {
			b.Queue(query, args...)
		}
		b.Queue(`SELECT gen FROM graph_state`)
		br := g.s.pool.SendBatch(ctx, b)
		hits, decoded = nil, nil
		var err error
		if len(reached) > 0 {
			hits, decoded, err = scanMemoryHits(br, held)
		}
		if err == nil {
			err = br.QueryRow().Scan(&gen)
		}
		return errors.Join(err, br.Close())
	})
	if err != nil {
		return nil, false, err
	}
	g.s.hits.keep(decoded)
	if gen != walked {
		g.s.nudgeGraph()
		return nil, false, nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.gen != walked { // moved on meanwhile: its links may be newer than the hits
		return nil, false, nil
	}
	for _, h := range hits {
		h.Item.Links, _ = m.g.Links(h.Item.ID)
	}
	return hits, true, nil
}

// memoryHitsSQL selects the hits among the items reached, $1 with their
// distances $2, that pass the filters where, at most limit, as
// scanMemoryHits reads them: the text, content and metadata of an item
// whose version is the one held for it (versions, a parameter; 0 for none)
// are not sent.
func memoryHitsSQL(where, limit, versions string) string {
	return `WITH hit AS (
			SELECT r.id, r.distance, r.held FROM unnest($1::text[], $2::int[], ` + versions + `::int[]) AS r (id, distance, held)
			JOIN items i ON i.id = r.id
			WHERE true` + where + ` ORDER BY r.distance, r.id LIMIT ` + limit + `)
		SELECT i.id, i.kind, i.version = h.held,
			CASE WHEN i.version = h.held THEN NULL ELSE i.text END,
			CASE WHEN i.version = h.held THEN NULL ELSE i.content END,
			CASE WHEN i.version = h.held THEN NULL ELSE i.metadata END,
			i.updated_at, i.version, i.access_count, i.last_accessed_at, i.byte_size, i.tokens, h.distance
		FROM hit h JOIN items i ON i.id = h.id
		ORDER BY h.distance, i.id`
}

// scanMemoryHits reads the rows of memoryHitsSQL, the next result of br:
// the hits, without links, and the items it decoded (for the cache).
func scanMemoryHits(br pgx.BatchResults, held map[string]*h4r.Item) ([]h4r.Hit, []*h4r.Item, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, nil, fmt.Errorf("querying hits: %w", err)
	}
	defer rows.Close()
	var hits []h4r.Hit
	var decoded []*h4r.Item
	for rows.Next() {
		var (
			id, kind                            string
			same                                bool
			text                                *string
			content, metadata                   []byte
			updatedAt                           time.Time
			lastAccessedAt                      *time.Time
			version, byteSize, tokens, distance int32
			accessCount                         int64
		)
		if err := rows.Scan(&id, &kind, &same, &text, &content, &metadata, &updatedAt, &version,
			&accessCount, &lastAccessedAt, &byteSize, &tokens, &distance); err != nil {
			return nil, nil, fmt.Errorf("reading a hit row: %w", err)
		}
		var it h4r.Item
		if same {
			base := held[id]
			if base == nil {
				return nil, nil, fmt.Errorf("hit %q came back as held at version %d, and none is", id, version)
			}
			it = *base // shallow: the decoded parts are shared, read-only
		} else {
			it.ID, it.Kind = id, kind
			if text != nil {
				it.Text = *text
			}
			if content != nil {
				if err := json.Unmarshal(content, &it.Content); err != nil {
					return nil, nil, fmt.Errorf("decoding the content of item %q: %w", id, err)
				}
			}
			if err := json.Unmarshal(metadata, &it.Metadata); err != nil {
				return nil, nil, fmt.Errorf("decoding the metadata of item %q: %w", id, err)
			}
		}
		meta := &it.Metadata
		meta.Version, meta.AccessCount, meta.ByteSize, meta.Tokens = int(version), accessCount, int(byteSize), int(tokens)
		meta.UpdatedAt = updatedAt.UTC()
		meta.LastAccessedAt = time.Time{}
		if lastAccessedAt != nil {
			meta.LastAccessedAt = lastAccessedAt.UTC()
		}
		if !same {
			kept := it
			decoded = append(decoded, &kept)
		}
		hits = append(hits, h4r.Hit{Item: &it, Distance: int(distance)})
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("reading hit rows: %w", err)
	}
	return hits, decoded, nil
}

// queryHits runs a query selecting hitColumns.
func queryHits(ctx context.Context, q querier, query string, args []any) ([]h4r.Hit, error) {
	type linkArrays struct {
		distance       int32
		targets, types []string
		strengths      []float64
	}
	var rows []*linkArrays
	items, err := queryItemsOn(ctx, q, query, args, func() []any {
		r := &linkArrays{}
		rows = append(rows, r)
		return []any{&r.distance, &r.targets, &r.types, &r.strengths}
	})
	if err != nil {
		return nil, err
	}
	hits := make([]h4r.Hit, len(items))
	for i, it := range items {
		r := rows[i]
		if len(r.types) != len(r.targets) || len(r.strengths) != len(r.targets) {
			return nil, fmt.Errorf("links of item %q: %d targets, %d types, %d strengths", it.ID, len(r.targets), len(r.types), len(r.strengths))
		}
		if len(r.targets) > 0 {
			it.Links = make([]h4r.Link, len(r.targets))
			for j := range r.targets {
				it.Links[j] = h4r.Link{Type: r.types[j], Target: r.targets[j], Strength: r.strengths[j]}
			}
		}
		hits[i] = h4r.Hit{Item: it, Distance: int(r.distance)}
	}
	return hits, nil
}

// readHitsCached runs query, selecting stampColumns and the distance, in
// the walk's snapshot on conn and ends the snapshot, in one round trip,
// then reads the hits' items through the cache (readThrough: the ones it
// lacks at their stamps, on conn after the snapshot, so never older than
// it). The items are whole, links as stored (readHits reads only their
// types, targets and strengths).
func (s *Store) readHitsCached(ctx context.Context, conn *pgx.Conn, query string, args []any) ([]h4r.Hit, error) {
	b := &pgx.Batch{}
	b.Queue(query, args...)
	b.Queue(`ROLLBACK`) // a read has nothing to commit
	br := conn.SendBatch(ctx, b)
	var (
		sc       stampScanner
		distance int32
		stamps   []stamped
		dists    []int32
	)
	rows, err := br.Query()
	if err == nil {
		_, err = pgx.ForEachRow(rows, append(sc.dest(), &distance), func() error {
			stamps = append(stamps, sc.value())
			dists = append(dists, distance)
			return nil
		})
	}
	if err == nil {
		_, err = br.Exec()
	}
	if err := errors.Join(err, br.Close()); err != nil {
		return nil, fmt.Errorf("reading hits: %w", err)
	}
	items, err := s.readThrough(ctx, conn, stamps)
	if err != nil {
		return nil, err
	}
	hits := make([]h4r.Hit, 0, len(stamps))
	for i, r := range stamps {
		if it := items[r.id]; it != nil { // absent: deleted since the snapshot
			hits = append(hits, h4r.Hit{Item: it, Distance: int(dists[i])})
		}
	}
	return hits, nil
}
