package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/linkgraph"
)

// Each replica may hold the link graph in memory (linkgraph), so that a
// hop query walks it without a query per level. The database stays the
// truth: migration 0007 keeps a generation that every write of items or
// links raises, and a log of the items each generation changed. A replica
// loads the graph in the background (WarmGraph), then follows every
// replica's writes by reading the log past the generation it holds. A walk
// in memory is used only when it is proven current: the statement that
// reads its hits is followed, in the same round trip, by one reading the
// generation, and when that differs from the memory's the walk is thrown
// away and the frontier walk (frontier.go) answers in one snapshot. A hop
// therefore never follows a link, nor returns an item, that its snapshot
// does not hold, however late the memory is.

// Graph memory defaults.
const (
	// defaultGraphPoll is how often a replica reads the graph writes of
	// the others; a walk that finds the memory behind asks for a read at
	// once, and is answered by frontier queries meanwhile.
	defaultGraphPoll = 500 * time.Millisecond
	// graphChangesKept is how long the log of graph changes is kept; a
	// replica further behind (stopped, or failing to poll) reloads.
	graphChangesKept = 10 * time.Minute
	graphPruneEvery  = time.Minute
	graphLoadRetry   = 2 * time.Second
)

// WithGraphPollInterval sets how often the store reads other replicas'
// graph writes into its in-memory link graph (default 500 ms).
func WithGraphPollInterval(d time.Duration) Option {
	return func(o *options) { o.graphPoll = d }
}

// graphMemory is the replica's in-memory link graph.
type graphMemory struct {
	mu     sync.RWMutex
	g      *linkgraph.Graph
	gen    int64 // the generation g is current at
	loaded bool

	catchMu sync.Mutex    // one load or catch-up at a time, so changes apply in order
	nudge   chan struct{} // asks WarmGraph's loop to catch up now; Open makes it
}

// nudgeGraph asks the loop of WarmGraph, when one runs, to read the graph
// writes now rather than at the next poll.
func (s *Store) nudgeGraph() {
	select {
	case s.graph.nudge <- struct{}{}:
	default:
	}
}

// WarmGraph loads the link graph into memory, then follows the graph
// writes of every replica (polling, or at once when asked) until ctx ends;
// it returns nil then. A failed load is retried. Until it is loaded, and
// whenever it is behind, hops are answered by frontier queries. A server
// calls it in the background at start (app/graphwarm.go).
func (s *Store) WarmGraph(ctx context.Context) error {
	if !s.loadUntilDone(ctx, "the link graph", graphLoadRetry, s.loadGraph) {
		return nil
	}
	poll := time.NewTicker(s.graphPoll)
	defer poll.Stop()
	prune := time.NewTicker(graphPruneEvery)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-prune.C:
			if err := s.pruneGraphChanges(ctx, graphChangesKept); err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "pruning the log of graph changes failed; retrying later", "error", err)
			}
			if err := s.pruneItemChanges(ctx, itemChangesKept); err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "pruning the log of item changes failed; retrying later", "error", err)
			}
			continue
		case <-poll.C:
		case <-s.graph.nudge:
		}
		if err := s.catchUpGraph(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "reading other replicas' graph writes failed; hops use frontier queries until the next poll", "error", err)
		}
	}
}

// GraphReady reports whether the link graph is loaded in memory; hops
// are answered either way.
func (s *Store) GraphReady(context.Context) error {
	s.graph.mu.RLock()
	defer s.graph.mu.RUnlock()
	if !s.graph.loaded {
		return h4r.Errorf(h4r.EUNAVAILABLE, "", "the link graph is still loading")
	}
	return nil
}

// graphSnapshot runs fn in a read-only repeatable-read transaction.
func (s *Store) graphSnapshot(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.read(ctx, func(ctx context.Context) error {
		tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }() // a read has nothing to commit
		return fn(tx)
	})
}

func readGraphState(ctx context.Context, tx pgx.Tx) (gen, pruned int64, err error) {
	if err := tx.QueryRow(ctx, `SELECT gen, pruned FROM graph_state`).Scan(&gen, &pruned); err != nil {
		return 0, 0, fmt.Errorf("reading the graph generation: %w", err)
	}
	return gen, pruned, nil
}

// loadGraph reads every item id and link, and the generation they are
// current at, in one snapshot, and replaces the graph in memory.
func (s *Store) loadGraph(ctx context.Context) error {
	s.graph.catchMu.Lock()
	defer s.graph.catchMu.Unlock()
	return s.loadGraphLocked(ctx)
}

func (s *Store) loadGraphLocked(ctx context.Context) error {
	var g *linkgraph.Graph
	var gen int64
	err := s.graphSnapshot(ctx, func(tx pgx.Tx) error {
		var err error
		if gen, _, err = readGraphState(ctx, tx); err != nil {
			return err
		}
		var n int64
		if err := tx.QueryRow(ctx, corpusStatsSQL).Scan(&n, new(int64)); err != nil {
			return fmt.Errorf("counting items: %w", err)
		}
		g = linkgraph.New(int(n))
		rows, err := tx.Query(ctx, `SELECT id FROM items`)
		if err != nil {
			return fmt.Errorf("loading item ids: %w", err)
		}
		var id string
		if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { g.AddItem(id); return nil }); err != nil {
			return fmt.Errorf("loading item ids: %w", err)
		}
		rows, err = tx.Query(ctx, `SELECT source, target, type, strength FROM links ORDER BY source, position`)
		if err != nil {
			return fmt.Errorf("loading links: %w", err)
		}
		var source string
		var l linkgraph.Link
		if _, err := pgx.ForEachRow(rows, []any{&source, &l.Target, &l.Type, &l.Strength}, func() error { g.Append(source, l); return nil }); err != nil {
			return fmt.Errorf("loading links: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("loading the link graph: %w", err)
	}
	m := &s.graph
	m.mu.Lock()
	defer m.mu.Unlock()
	m.g, m.gen, m.loaded = g, gen, true
	return nil
}

// catchUpGraph applies the graph writes committed since the generation the
// memory holds, by any replica: it reads which items changed, and their
// presence and links, in one snapshot, and moves the memory to that
// snapshot's generation. A replica further behind than the log reloads.
func (s *Store) catchUpGraph(ctx context.Context) error {
	m := &s.graph
	m.catchMu.Lock()
	defer m.catchMu.Unlock()
	m.mu.RLock()
	mark, loaded := m.gen, m.loaded
	m.mu.RUnlock()
	if !loaded {
		return nil
	}
	var gen int64
	reload := false
	present := map[string]bool{}
	links := map[string][]linkgraph.Link{}
	err := s.graphSnapshot(ctx, func(tx pgx.Tx) error {
		clear(present)
		clear(links)
		var pruned int64
		var err error
		if gen, pruned, err = readGraphState(ctx, tx); err != nil {
			return err
		}
		if gen == mark {
			return nil
		}
		if pruned > mark {
			reload = true
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT DISTINCT item_id FROM graph_changes WHERE gen > $1`, mark)
		if err != nil {
			return fmt.Errorf("reading the items changed: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("reading the items changed: %w", err)
		}
		for _, id := range ids {
			present[id] = false
		}
		rows, err = tx.Query(ctx, `SELECT id FROM items WHERE id = ANY($1)`, ids)
		if err != nil {
			return fmt.Errorf("reading which changed items exist: %w", err)
		}
		var id string
		if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { present[id] = true; return nil }); err != nil {
			return fmt.Errorf("reading which changed items exist: %w", err)
		}
		rows, err = tx.Query(ctx, `SELECT source, target, type, strength FROM links WHERE source = ANY($1) ORDER BY source, position`, ids)
		if err != nil {
			return fmt.Errorf("reading the links of changed items: %w", err)
		}
		var l linkgraph.Link
		_, err = pgx.ForEachRow(rows, []any{&id, &l.Target, &l.Type, &l.Strength}, func() error {
			links[id] = append(links[id], l)
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading the links of changed items: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading graph writes after generation %d: %w", mark, err)
	}
	if reload {
		return s.loadGraphLocked(ctx)
	}
	if gen == mark {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.g.Replace(present, links)
	m.gen = gen
	return nil
}

// pruneGraphChanges deletes the log of graph changes older than keep, up
// to a generation, and records that generation as pruned: a replica that
// has not applied it reloads rather than miss a change.
func (s *Store) pruneGraphChanges(ctx context.Context, keep time.Duration) error {
	err := s.writeTxWithin(ctx, 0, func(ctx context.Context, tx pgx.Tx) error {
		// The graph_state lock first, as writers take it, so that no
		// change at or below the bound commits meanwhile.
		var upto int64
		err := tx.QueryRow(ctx, `UPDATE graph_state SET pruned = greatest(pruned,
				coalesce((SELECT max(gen) FROM graph_changes WHERE at < now() - make_interval(secs => $1)), 0))
			RETURNING pruned`, keep.Seconds()).Scan(&upto)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM graph_changes WHERE gen <= $1`, upto)
		return err
	})
	if err != nil {
		return fmt.Errorf("pruning the log of graph changes: %w", err)
	}
	return nil
}
