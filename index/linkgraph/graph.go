package linkgraph

import (
	"cmp"
	"math"
	"slices"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/idtable"
	"github.com/h4r/h4r/internal/names"
)

// Link is a link as its holder holds it.
type Link struct {
	Target, Type string
	Strength     float64
}

// Graph is the link graph. It does no locking: its owner guards it. The
// zero value is not usable; New makes one.
type Graph struct {
	node    idtable.Table[uint32] // node number by id, through name
	name    names.List            // id by node number, in one array of bytes (no object per id)
	nameOf  func(uint32) string   // name's lookup, for node, made once
	present []bool                // the node is an item; a walk passes only through items
	out     edgeLists[outEdge]    // links held by the node, in order
	in      edgeLists[halfEdge]   // links to the node
	typeOf  map[string]uint32     // link type number by type
	types   []string              // type by link type number
}

// edgeLists holds each node's edges of one direction, every list a run
// of one array of edges. In a large graph many nodes hold none (an item
// without links, a link target that holds none), so a node keeps a
// number, 0 for none and otherwise 1 + the index of its run, where a slice
// header per node would take six times the memory
// (bench/results/2026-11-29/memory-1m-rows.md). The edges hold no
// pointers, so the array is one object the collector does not scan, where
// a slice per list was an object per list to find and mark at every
// collection (868,000 at a million items).
type edgeLists[E any] struct {
	at    []uint32 // by node
	runs  []run
	edges []E
	free  []uint32 // numbers of runs emptied, taken again before runs grows
	live  int      // edges the runs hold; the rest of edges is room
}

// run is one list's place in edges: n edges from start, with room for size.
type run struct{ start, n, size uint32 }

// compactMin is the room, in edges, below which a list never compacts:
// copying a small array to save a few edges costs more than it saves.
const compactMin = 1 << 10

// addNode adds a node holding no edges.
func (l *edgeLists[E]) addNode() { l.at = append(l.at, 0) }

// of returns node n's edges; the slice is the graph's own, valid until
// the next change.
func (l *edgeLists[E]) of(n uint32) []E {
	if k := l.at[n]; k != 0 {
		r := l.runs[k-1]
		return l.edges[r.start : r.start+r.n : r.start+r.n]
	}
	return nil
}

// add appends e to node n's edges.
func (l *edgeLists[E]) add(n uint32, e E) {
	k := l.at[n]
	if k == 0 {
		k = l.newRun()
		l.at[n] = k
	}
	r := &l.runs[k-1]
	if r.n == r.size {
		l.grow(r)
	}
	l.edges[r.start+r.n] = e
	r.n++
	l.live++
	l.maybeCompact()
}

// grow makes room in r for one more edge. The run at the end of edges
// grows in place by one, so that lists filled one after another (a load,
// each item's links in turn) leave no room behind; any other moves to the
// end with room for twice its edges, so that a list that keeps growing
// among others (a much-linked target's links) moves a logarithmic number
// of times.
func (l *edgeLists[E]) grow(r *run) {
	if int(r.start+r.size) == len(l.edges) {
		var zero E
		l.edges = append(l.edges, zero)
		r.size++
		return
	}
	l.move(r, l.edges[r.start:r.start+r.n], max(2*r.n, 1))
}

// move puts es at the end of edges as r's edges, with room for size.
func (l *edgeLists[E]) move(r *run, es []E, size uint32) {
	start := len(l.edges)
	if uint64(start)+uint64(size) > math.MaxUint32 {
		panic("linkgraph: more than 2^32 edges in one direction")
	}
	l.edges = slices.Grow(l.edges, int(size))[:start+int(size)]
	copy(l.edges[start:], es)
	r.start, r.n, r.size = uint32(start), uint32(len(es)), size
}

// set makes es node n's edges; none frees its run. es may be node n's own
// edges, shortened in place (as slices.DeleteFunc leaves them).
func (l *edgeLists[E]) set(n uint32, es []E) {
	k := l.at[n]
	switch {
	case len(es) == 0 && k != 0:
		l.live -= int(l.runs[k-1].n)
		l.runs[k-1] = run{}
		l.free = append(l.free, k)
		l.at[n] = 0
	case len(es) > 0:
		if k == 0 {
			k = l.newRun()
			l.at[n] = k
		}
		r := &l.runs[k-1]
		l.live += len(es) - int(r.n)
		if len(es) <= int(r.size) {
			copy(l.edges[r.start:], es) // es may overlap the run: copy moves
			r.n = uint32(len(es))
		} else {
			l.move(r, es, uint32(len(es)))
		}
	}
	l.maybeCompact()
}

// newRun returns the number of an empty run, a freed one if any.
func (l *edgeLists[E]) newRun() uint32 {
	if last := len(l.free) - 1; last >= 0 {
		k := l.free[last]
		l.free = l.free[:last]
		return k
	}
	l.runs = append(l.runs, run{})
	return uint32(len(l.runs))
}

// maybeCompact copies the runs into a new array without room once the
// room (left by runs that moved, emptied or shrank) outgrows the edges,
// so that the array stays within about twice what the lists hold.
func (l *edgeLists[E]) maybeCompact() {
	room := len(l.edges) - l.live
	if room < compactMin || room <= l.live {
		return
	}
	edges := make([]E, 0, l.live)
	for k := range l.runs {
		r := &l.runs[k]
		start := len(edges)
		edges = append(edges, l.edges[r.start:r.start+r.n]...)
		r.start, r.size = uint32(start), r.n
	}
	l.edges = edges
}

// halfEdge is one end of a link as seen from the other: the node at the far
// end and the link's type.
type halfEdge struct{ node, typ uint32 }

// outEdge is a link as its source holds it.
type outEdge struct {
	halfEdge
	strength float64
}

// New returns an empty graph sized for about n items.
func New(n int) *Graph {
	g := &Graph{
		typeOf:  map[string]uint32{},
		present: make([]bool, 0, n),
		out:     edgeLists[outEdge]{at: make([]uint32, 0, n)}, in: edgeLists[halfEdge]{at: make([]uint32, 0, n)},
	}
	g.name.Grow(n)
	g.nameOf = g.name.At
	g.node.Grow(n, g.nameOf)
	return g
}

// lookup returns id's node, if it has one.
func (g *Graph) lookup(id string) (uint32, bool) { return g.node.Get(id, g.nameOf) }

// intern returns id's node, adding it (as no item) when it is new.
func (g *Graph) intern(id string) uint32 {
	if n, ok := g.lookup(id); ok {
		return n
	}
	return g.added(g.name.Append(id))
}

// added makes name n, just appended, a node (as no item).
func (g *Graph) added(n uint32) uint32 {
	g.node.Add(g.name.At(n), n, g.nameOf)
	g.present = append(g.present, false)
	g.out.addNode()
	g.in.addNode()
	return n
}

func (g *Graph) internType(typ string) uint32 {
	if t, ok := g.typeOf[typ]; ok {
		return t
	}
	t := uint32(len(g.types))
	g.typeOf[typ] = t
	g.types = append(g.types, typ)
	return t
}

// AddItem records that id is an item (loading: its links follow with
// Append).
func (g *Graph) AddItem(id string) { g.present[g.intern(id)] = true }

// internBytes is intern for a scanned column: the id is copied only when
// it is new.
func (g *Graph) internBytes(b []byte) uint32 {
	if n, ok := g.node.GetBytes(b, g.nameOf); ok {
		return n
	}
	return g.added(g.name.AppendBytes(b))
}

// AddItemBytes is AddItem for a scanned column, which it does not keep.
func (g *Graph) AddItemBytes(id []byte) { g.present[g.internBytes(id)] = true }

// AppendBytes is Append for scanned columns, which it does not keep: an
// id or type already known is not copied.
func (g *Graph) AppendBytes(source, target, typ []byte, strength float64) {
	t, ok := g.typeOf[string(typ)]
	if !ok {
		t = g.internType(string(typ))
	}
	from, to := g.internBytes(source), g.internBytes(target)
	g.out.add(from, outEdge{halfEdge{to, t}, strength})
	g.in.add(to, halfEdge{from, t})
}

// Append adds a link source holds after those it holds already (loading,
// in each item's order).
func (g *Graph) Append(source string, l Link) {
	from, to, typ := g.intern(source), g.intern(l.Target), g.internType(l.Type)
	g.out.add(from, outEdge{halfEdge{to, typ}, l.Strength})
	g.in.add(to, halfEdge{from, typ})
}

// Replace applies writes: each id of present is an item or not, and
// holds exactly the links of links (none when absent there). Each link
// target's list is filtered once, so that rewriting many items that link
// to one hub costs one pass over the hub's links, not one per item.
func (g *Graph) Replace(present map[string]bool, links map[string][]Link) {
	holders := make(map[uint32]bool, len(present))
	for id := range present {
		holders[g.intern(id)] = true
	}
	targets := map[uint32]bool{}
	for n := range holders {
		for _, e := range g.out.of(n) {
			targets[e.node] = true
		}
		g.out.set(n, nil)
	}
	for t := range targets {
		g.in.set(t, slices.DeleteFunc(g.in.of(t), func(e halfEdge) bool { return holders[e.node] }))
	}
	for id, ok := range present {
		n, _ := g.lookup(id) // interned above
		g.present[n] = ok
		if !ok {
			continue
		}
		for _, l := range links[id] {
			g.Append(id, l)
		}
	}
}

// Links returns the links id holds, in order (Type, Target, Strength),
// and whether id is an item.
func (g *Graph) Links(id string) ([]h4r.Link, bool) {
	n, ok := g.lookup(id)
	if !ok || !g.present[n] {
		return nil, false
	}
	held := g.out.of(n)
	if len(held) == 0 {
		return nil, true
	}
	out := make([]h4r.Link, len(held))
	for i, e := range held {
		out[i] = h4r.Link{Type: g.types[e.typ], Target: g.name.At(e.node), Strength: e.strength}
	}
	return out, true
}

// Reach is an item a walk reached, at its smallest distance.
type Reach struct {
	ID       string
	Distance int
}

// Walk is one breadth-first search.
type Walk struct {
	Anchors  []string
	MaxHops  int
	Directed bool
	Types    []string // follow only links of these types; all when empty
	Targets  []string // report only these items; all when empty
	// Enough stops the search after the first level at which this many
	// items were reached (0: never); the hits are then complete, since
	// later levels sort after them.
	Enough int
}

// Done reports whether a walk may stop before its next level: it has
// targets and left of them are still to reach is 0, or it reached Enough
// items. Both walkers ask it (this one and Postgres's frontier walk).
func (w Walk) Done(left, reached int) bool {
	return (len(w.Targets) > 0 && left == 0) || (w.Enough > 0 && reached >= w.Enough)
}

// Walk searches breadth-first from the anchors that are items, through
// items only, each node once, and returns what it reached ordered by
// distance, then id.
func (g *Graph) Walk(w Walk) []Reach {
	out, _ := g.walk(w, false)
	return out
}

// WalkBeyond is Walk less the anchors: it returns what Walk returns past
// distance 0, and how many anchors Walk returns at distance 0, which
// count towards Enough all the same but are neither listed nor ordered.
// When w.Types names no type a link of the graph has (the walk for
// superseding items in a store where none was ever superseded), nothing
// lies beyond the anchors: it returns nothing, and 0, without looking the
// anchors up.
func (g *Graph) WalkBeyond(w Walk) (reached []Reach, anchors int) {
	return g.walk(w, true)
}

func (g *Graph) walk(w Walk, beyond bool) ([]Reach, int) {
	var allowed []bool // by link type number; nil: every type
	if len(w.Types) > 0 {
		allowed = make([]bool, len(g.typeOf))
		for _, t := range w.Types {
			if k, ok := g.typeOf[t]; ok {
				allowed[k] = true
			}
		}
	}
	if beyond && allowed != nil && !slices.Contains(allowed, true) {
		return nil, 0
	}
	var wanted map[uint32]bool // targets not reached yet; nil: report all
	if len(w.Targets) > 0 {
		wanted = map[uint32]bool{}
		for _, id := range w.Targets {
			if n, ok := g.lookup(id); ok && g.present[n] {
				wanted[n] = true
			}
		}
		if len(wanted) == 0 {
			return nil, 0
		}
	}
	seen := make([]uint64, (g.name.Len()+63)/64)
	visit := func(n uint32) bool {
		if seen[n/64]&(1<<(n%64)) != 0 || !g.present[n] {
			return false
		}
		seen[n/64] |= 1 << (n % 64)
		return true
	}
	var out []Reach
	anchors := 0 // reported at distance 0, when beyond
	level := func(nodes []uint32, d int) {
		start := len(out)
		for _, n := range nodes {
			switch {
			case wanted != nil && !wanted[n]:
			case beyond && d == 0:
				anchors++
				delete(wanted, n)
			default:
				out = append(out, Reach{g.name.At(n), d})
				delete(wanted, n)
			}
		}
		slices.SortFunc(out[start:], func(x, y Reach) int { return cmp.Compare(x.ID, y.ID) })
	}
	var frontier []uint32
	for _, id := range w.Anchors {
		if n, ok := g.lookup(id); ok && visit(n) {
			frontier = append(frontier, n)
		}
	}
	level(frontier, 0)
	var next []uint32
	for d := 1; d <= w.MaxHops && len(frontier) > 0; d++ {
		if w.Done(len(wanted), anchors+len(out)) {
			break
		}
		next = next[:0]
		for _, n := range frontier {
			for _, e := range g.out.of(n) {
				if (allowed == nil || allowed[e.typ]) && visit(e.node) {
					next = append(next, e.node)
				}
			}
			if w.Directed {
				continue
			}
			for _, e := range g.in.of(n) {
				if (allowed == nil || allowed[e.typ]) && visit(e.node) {
					next = append(next, e.node)
				}
			}
		}
		level(next, d)
		frontier, next = next, frontier
	}
	return out, anchors
}
