package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/linkgraph"
)

// adjacency is the link graph in memory, for hops (linkgraph: every item
// and link target gets a compact node number, and each node lists the
// links that leave it, in the item's order with their strengths, so that
// hits get their links from here, and those that enter it). A walk is a
// breadth-first search that visits each node once, where the recursive
// query it replaces re-expanded every path (hundreds of milliseconds on a
// citation graph).
// The file stays the truth, as for vectors (vectors.go): the graph is
// (re)loaded whenever graph_generation differs from the generation it was
// loaded at, and this process's own writes update it in place. Its zero
// value is an empty, unloaded graph.
type adjacency struct {
	mu     sync.RWMutex
	loaded bool
	gen    int64
	g      *linkgraph.Graph // nil until loaded
}

// putItems applies an upsert to the graph: the items exist, and their links
// are the ones given. An id repeated in the batch takes its last links, as
// the store does. The caller holds mu.
func (a *adjacency) putItems(items []encodedItem) {
	present := make(map[string]bool, len(items))
	links := make(map[string][]linkgraph.Link, len(items))
	for i := range items {
		it := &items[i].item
		present[it.ID] = true
		ls := make([]linkgraph.Link, len(it.Links))
		for j, l := range it.Links {
			ls[j] = linkgraph.Link{Target: l.Target, Type: l.Type, Strength: l.Strength}
		}
		links[it.ID] = ls
	}
	a.g.Replace(present, links)
}

// removeItem applies a delete: the node stays, as a link target others may
// hold, but is no item and holds no links. The caller holds mu.
func (a *adjacency) removeItem(id string) {
	a.g.Replace(map[string]bool{id: false}, nil)
}

// applied updates the graph after a committed write that moved the graph
// generation from before to after. When the graph was not current at
// before (another process wrote), it is left stale and the next walk
// reloads it.
func (a *adjacency) applied(before, after int64, change func(*adjacency)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.loaded || a.gen != before {
		return
	}
	change(a)
	a.gen = after
}

func readGraphGeneration(ctx context.Context, tx *sql.Tx) (int64, error) {
	return readCounterSQL(ctx, tx, graphCounter)
}

// load reads the items and links as of tx's snapshot, at generation gen.
// The caller holds mu.
func (a *adjacency) load(ctx context.Context, tx *sql.Tx, gen int64) error {
	a.loaded, a.gen, a.g = false, 0, nil
	var n int // sizes the tables up front rather than growing them
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM items`).Scan(&n); err != nil {
		return fmt.Errorf("counting items: %w", err)
	}
	g := linkgraph.New(n)
	err := eachRow(ctx, tx, `SELECT id FROM items`, func(rows *sql.Rows) error {
		var id sql.RawBytes
		if err := rows.Scan(&id); err != nil {
			return err
		}
		g.AddItemBytes(id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("loading item ids: %w", err)
	}
	// In key order, which is the table's: each item's links in its order.
	err = eachRow(ctx, tx, `SELECT source, target, type, strength FROM links ORDER BY source, position`, func(rows *sql.Rows) error {
		var source, target, typ sql.RawBytes
		var strength float64
		if err := rows.Scan(&source, &target, &typ, &strength); err != nil {
			return err
		}
		g.AppendBytes(source, target, typ, strength)
		return nil
	})
	if err != nil {
		return fmt.Errorf("loading links: %w", err)
	}
	a.loaded, a.gen, a.g = true, gen, g
	return nil
}

func eachRow(ctx context.Context, tx *sql.Tx, query string, fn func(*sql.Rows) error) (err error) {
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rows.Close()) }()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// ensureGraph (re)loads the graph unless it is current as of tx's
// snapshot, or newer (generations only grow; a walk may see a write that
// committed after its snapshot was taken), and returns the snapshot's
// generation.
func (s *Store) ensureGraph(ctx context.Context, tx *sql.Tx) (int64, error) {
	gen, err := s.readCounter(ctx, tx, graphCounter)
	if err != nil {
		return 0, err
	}
	a := &s.adj
	a.mu.RLock()
	current := a.loaded && a.gen >= gen
	a.mu.RUnlock()
	if current {
		return gen, nil
	}
	// A write of this process may have committed and not yet updated the
	// graph: wait for it (writes hold writeMu until then) rather than
	// reload. Loading under writeMu also keeps this process's writes from
	// going stale while it runs.
	s.vectors.writeMu.Lock()
	defer s.vectors.writeMu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.loaded && a.gen >= gen {
		return gen, nil // updated, or loaded by another walk, meanwhile
	}
	return gen, a.load(ctx, tx, gen)
}

// fillLinks sets the links of items from memory and reports true when the
// graph in memory is the one of generation gen (a snapshot's); otherwise a
// write has moved it on, and it reports false: the caller reads the links
// of its snapshot instead.
func (a *adjacency) fillLinks(gen int64, items []*h4r.Item) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if !a.loaded || a.gen != gen {
		return false
	}
	for _, it := range items {
		it.Links, _ = a.g.Links(it.ID)
	}
	return true
}

// WarmGraph loads the link graph into memory, so that the first hop query
// does not pay for it (BenchmarkGraphLoad). A server calls it at start.
func (s *Store) WarmGraph(ctx context.Context) error {
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		_, err := s.ensureGraph(ctx, tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("loading the link graph: %w", err)
	}
	return nil
}

// walk searches breadth-first in the graph in memory (linkgraph.Walk),
// which must be loaded; it holds mu for reading.
func (a *adjacency) walk(w linkgraph.Walk) []linkgraph.Reach {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.g.Walk(w)
}

// walkBeyond is walk less the anchors (linkgraph.Graph.WalkBeyond).
func (a *adjacency) walkBeyond(w linkgraph.Walk) ([]linkgraph.Reach, int) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.g.WalkBeyond(w)
}
