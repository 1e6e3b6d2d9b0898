package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/h4r/h4r"
)

// adjacency is the link graph in memory, for hops: every item and link
// target gets a compact node number, and each node lists the links that
// leave it (in the item's order, with their strengths, so that hits get
// their links from here) and those that enter it. A walk is then a
// breadth-first search that visits each node once, where the recursive
// query it replaces re-expanded every path (hundreds of milliseconds on a
// citation graph).
// The file stays the truth, as for vectors (vectors.go): the graph is
// (re)loaded whenever graph_generation differs from the generation it was
// loaded at, and this process's own writes update it in place. Its zero
// value is an empty, unloaded graph.
type adjacency struct {
	mu      sync.RWMutex
	loaded  bool
	gen     int64
	node    map[string]uint32 // node number by id
	name    []string          // id by node number
	present []bool            // the node is an item; a walk passes only through items
	out     [][]outEdge       // links held by the node, in order
	in      [][]halfEdge      // links to the node
	typeOf  map[string]uint32 // link type number by type
	types   []string          // type by link type number
}

// halfEdge is one end of a link as seen from the other: the node at the far
// end and the link's type.
type halfEdge struct{ node, typ uint32 }

// outEdge is a link as its source holds it.
type outEdge struct {
	halfEdge
	strength float64
}

// reset empties the graph; the caller holds mu.
func (a *adjacency) reset() {
	a.loaded, a.gen = false, 0
	a.node, a.typeOf = map[string]uint32{}, map[string]uint32{}
	a.name, a.present, a.out, a.in, a.types = nil, nil, nil, nil, nil
}

// intern returns id's node, adding it (as no item) when it is new.
func (a *adjacency) intern(id string) uint32 {
	if n, ok := a.node[id]; ok {
		return n
	}
	n := uint32(len(a.name))
	a.node[id] = n
	a.name = append(a.name, id)
	a.present = append(a.present, false)
	a.out = append(a.out, nil)
	a.in = append(a.in, nil)
	return n
}

func (a *adjacency) internType(typ string) uint32 {
	if t, ok := a.typeOf[typ]; ok {
		return t
	}
	t := uint32(len(a.types))
	a.typeOf[typ] = t
	a.types = append(a.types, typ)
	return t
}

func (a *adjacency) link(source uint32, l h4r.Link) {
	a.addLink(source, a.intern(l.Target), a.internType(l.Type), l.Strength)
}

func (a *adjacency) addLink(source, target, typ uint32, strength float64) {
	a.out[source] = append(a.out[source], outEdge{halfEdge{target, typ}, strength})
	a.in[target] = append(a.in[target], halfEdge{source, typ})
}

// internBytes is intern for a scanned column: the id is copied only when
// it is new (a map lookup by string(b) does not copy).
func (a *adjacency) internBytes(b []byte) uint32 {
	if n, ok := a.node[string(b)]; ok {
		return n
	}
	return a.intern(string(b))
}

func (a *adjacency) internTypeBytes(b []byte) uint32 {
	if t, ok := a.typeOf[string(b)]; ok {
		return t
	}
	return a.internType(string(b))
}

// unlink removes the links the nodes holders hold, from both ends. Each
// target's list is filtered once, so that rewriting many items that link
// to one hub costs one pass over the hub's links, not one per item.
func (a *adjacency) unlink(holders map[uint32]bool) {
	targets := map[uint32]bool{}
	for n := range holders {
		for _, e := range a.out[n] {
			targets[e.node] = true
		}
		a.out[n] = nil
	}
	for t := range targets {
		a.in[t] = slices.DeleteFunc(a.in[t], func(e halfEdge) bool { return holders[e.node] })
	}
}

// putItems applies an upsert to the graph: the items exist, and their links
// are the ones given. An id repeated in the batch takes its last links, as
// the store does. The caller holds mu.
func (a *adjacency) putItems(items []encodedItem) {
	last := make(map[string]int, len(items))
	for i := range items {
		last[items[i].item.ID] = i
	}
	holders := make(map[uint32]bool, len(last))
	for id := range last {
		holders[a.intern(id)] = true
	}
	a.unlink(holders)
	for id, i := range last {
		n := a.node[id]
		a.present[n] = true
		for _, l := range items[i].item.Links {
			a.link(n, l)
		}
	}
}

// removeItem applies a delete: the node stays, as a link target others may
// hold, but is no item and holds no links. The caller holds mu.
func (a *adjacency) removeItem(id string) {
	n, ok := a.node[id]
	if !ok {
		return
	}
	a.present[n] = false
	a.unlink(map[uint32]bool{n: true})
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
	var g int64
	if err := tx.QueryRowContext(ctx, `SELECT generation FROM graph_generation WHERE id = 1`).Scan(&g); err != nil {
		return 0, fmt.Errorf("reading the graph generation: %w", err)
	}
	return g, nil
}

// load reads the items and links as of tx's snapshot, at generation gen.
// The caller holds mu.
func (a *adjacency) load(ctx context.Context, tx *sql.Tx, gen int64) error {
	a.reset()
	var n int // sizes the tables up front rather than growing them
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM items`).Scan(&n); err != nil {
		return fmt.Errorf("counting items: %w", err)
	}
	a.node = make(map[string]uint32, n)
	a.name, a.present = make([]string, 0, n), make([]bool, 0, n)
	a.out, a.in = make([][]outEdge, 0, n), make([][]halfEdge, 0, n)
	err := eachRow(ctx, tx, `SELECT id FROM items`, func(rows *sql.Rows) error {
		var id sql.RawBytes
		if err := rows.Scan(&id); err != nil {
			return err
		}
		a.present[a.internBytes(id)] = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("loading item ids: %w", err)
	}
	// In key order, which is the table's: each item's links in its order,
	// and an item's links one after another, so its node is looked up once.
	var last []byte
	var from uint32
	err = eachRow(ctx, tx, `SELECT source, target, type, strength FROM links ORDER BY source, position`, func(rows *sql.Rows) error {
		var source, target, typ sql.RawBytes
		var strength float64
		if err := rows.Scan(&source, &target, &typ, &strength); err != nil {
			return err
		}
		if last == nil || string(source) != string(last) {
			from, last = a.internBytes(source), append(last[:0], source...)
		}
		a.addLink(from, a.internBytes(target), a.internTypeBytes(typ), strength)
		return nil
	})
	if err != nil {
		a.reset()
		return fmt.Errorf("loading links: %w", err)
	}
	a.loaded, a.gen = true, gen
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
	gen, err := readGraphGeneration(ctx, tx)
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
		n, ok := a.node[it.ID]
		if !ok || len(a.out[n]) == 0 {
			continue
		}
		it.Links = make([]h4r.Link, 0, len(a.out[n]))
		for _, e := range a.out[n] {
			it.Links = append(it.Links, h4r.Link{Type: a.types[e.typ], Target: a.name[e.node], Strength: e.strength})
		}
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

// reach is an item a walk reached, at its smallest distance.
type reach struct {
	id       string
	distance int
}

// walk is one breadth-first search.
type walk struct {
	anchors  []string
	maxHops  int
	directed bool
	types    []string // follow only links of these types; all when empty
	targets  []string // report only these items; all when empty
	// enough stops the search after the first level at which this many
	// items were reached (0: never); the hits are then complete, since
	// later levels sort after them.
	enough int
}

// walk searches breadth-first from the anchors that are items, through
// items only, each node once, and returns what it reached ordered by
// distance, then id. It holds mu for reading.
func (a *adjacency) walk(w walk) []reach {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var allowed []bool // by link type number; nil: every type
	if len(w.types) > 0 {
		allowed = make([]bool, len(a.typeOf))
		for _, t := range w.types {
			if k, ok := a.typeOf[t]; ok {
				allowed[k] = true
			}
		}
	}
	var wanted map[uint32]bool // targets not reached yet; nil: report all
	if len(w.targets) > 0 {
		wanted = map[uint32]bool{}
		for _, id := range w.targets {
			if n, ok := a.node[id]; ok && a.present[n] {
				wanted[n] = true
			}
		}
		if len(wanted) == 0 {
			return nil
		}
	}
	seen := make([]uint64, (len(a.name)+63)/64)
	visit := func(n uint32) bool {
		if seen[n/64]&(1<<(n%64)) != 0 || !a.present[n] {
			return false
		}
		seen[n/64] |= 1 << (n % 64)
		return true
	}
	var out []reach
	level := func(nodes []uint32, d int) {
		start := len(out)
		for _, n := range nodes {
			if wanted == nil || wanted[n] {
				out = append(out, reach{a.name[n], d})
				delete(wanted, n)
			}
		}
		slices.SortFunc(out[start:], func(x, y reach) int { return cmp.Compare(x.id, y.id) })
	}
	var frontier []uint32
	for _, id := range w.anchors {
		if n, ok := a.node[id]; ok && visit(n) {
			frontier = append(frontier, n)
		}
	}
	level(frontier, 0)
	var next []uint32
	for d := 1; d <= w.maxHops && len(frontier) > 0; d++ {
		if (wanted != nil && len(wanted) == 0) || (w.enough > 0 && len(out) >= w.enough) {
			break
		}
		next = next[:0]
		for _, n := range frontier {
			for _, e := range a.out[n] {
				if (allowed == nil || allowed[e.typ]) && visit(e.node) {
					next = append(next, e.node)
				}
			}
			if w.directed {
				continue
			}
			for _, e := range a.in[n] {
				if (allowed == nil || allowed[e.typ]) && visit(e.node) {
					next = append(next, e.node)
				}
			}
		}
		level(next, d)
		frontier, next = next, frontier
	}
	return out
}
