package bolttest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/h4r/h4r/store/neo4j/internal/cypher"
)

// Graph is an in-memory property graph that answers the statements of
// package store/neo4j (internal/cypher) and no others: an unknown text is
// a syntax error, so a changed statement cannot pass against a fake that
// reads it differently. Writes of a transaction are applied at commit and
// dropped at rollback; one write transaction runs at a time, as Neo4j's
// locks would serialise conflicting writers.
type Graph struct {
	mu        sync.Mutex // guards committed, held, faults, runs
	committed *graphData
	writer    sync.Mutex // held by a write transaction from its first write to its end
	held      chan struct{}
	faults    []*Failure // failures for the next statements, in order
	failAll   *Failure
	runs      []Run
}

// Run is one statement the graph was asked, kept for assertions.
type Run struct {
	Query  string
	Params map[string]any
}

// NewGraph returns an empty graph.
func NewGraph() *Graph { return &Graph{committed: newGraphData()} }

type graphData struct {
	nodes       map[string]*node
	constraints map[string]bool
}

type node struct {
	id, kind string
	present  bool
	out      []rel
}

type rel struct {
	typ, target         string
	position            int64
	strength            float64
	targetType, context string
}

func newGraphData() *graphData {
	return &graphData{nodes: map[string]*node{}, constraints: map[string]bool{}}
}

func (g *graphData) clone() *graphData {
	c := &graphData{nodes: make(map[string]*node, len(g.nodes)), constraints: maps.Clone(g.constraints)}
	for id, n := range g.nodes {
		cp := *n
		cp.out = slices.Clone(n.out)
		c.nodes[id] = &cp
	}
	return c
}

// FailNext makes the next statements fail with these failures, one each.
func (g *Graph) FailNext(f ...*Failure) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults = append(g.faults, f...)
}

// FailAll makes every statement fail with f until it is called with nil.
func (g *Graph) FailAll(f *Failure) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failAll = f
}

// Hold makes statements wait until the returned function is called (or
// the server closes): a Neo4j that does not answer in time. Call the
// function before the server closes, e.g. with t.Cleanup after Start.
func (g *Graph) Hold() (release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch := make(chan struct{})
	g.held = ch
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			if g.held == ch {
				g.held = nil
			}
			g.mu.Unlock()
			close(ch)
		})
	}
}

// Runs returns the statements run so far.
func (g *Graph) Runs() []Run {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.runs)
}

// Node describes one node, for assertions.
type Node struct {
	ID, Kind string
	Present  bool
	Links    []Link // relationships leaving the node, in creation order
}

// Link describes one relationship.
type Link struct {
	Type, Target        string
	Position            int64
	Strength            float64
	TargetType, Context string
}

// Nodes returns the committed nodes by id.
func (g *Graph) Nodes() map[string]Node {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]Node, len(g.committed.nodes))
	for id, n := range g.committed.nodes {
		nd := Node{ID: id, Kind: n.kind, Present: n.present}
		for _, r := range n.out {
			nd.Links = append(nd.Links, Link{Type: r.typ, Target: r.target, Position: r.position, Strength: r.strength, TargetType: r.targetType, Context: r.context})
		}
		out[id] = nd
	}
	return out
}

// Constraints returns the names of the constraints created.
func (g *Graph) Constraints() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Sorted(maps.Keys(g.committed.constraints))
}

// Begin starts a transaction.
func (g *Graph) Begin(ctx context.Context, mode, database string) (Tx, error) {
	return &graphTx{g: g, write: mode != "r"}, nil
}

type graphTx struct {
	g      *Graph
	write  bool
	staged *graphData // the transaction's copy, from its first write
}

func (t *graphTx) Run(ctx context.Context, query string, params map[string]any) (Result, error) {
	g := t.g
	g.mu.Lock()
	g.runs = append(g.runs, Run{Query: query, Params: params})
	held := g.held
	var fault *Failure
	if len(g.faults) > 0 {
		fault, g.faults = g.faults[0], g.faults[1:]
	} else if g.failAll != nil {
		fault = g.failAll
	}
	g.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return Result{}, &Failure{Code: "Neo.TransientError.General.DatabaseUnavailable", Message: "server closing"}
		}
	}
	if fault != nil {
		return Result{}, fault
	}
	st, err := statementOf(query)
	if err != nil {
		return Result{}, err
	}
	if st.writes {
		if !t.write {
			return Result{}, &Failure{Code: "Neo.ClientError.Statement.AccessMode",
				Message: "Writing in read access mode not allowed."}
		}
		if t.staged == nil {
			g.writer.Lock()
			g.mu.Lock()
			t.staged = g.committed.clone()
			g.mu.Unlock()
		}
		return st.run(t.staged, params)
	}
	if t.staged != nil {
		return st.run(t.staged, params)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return st.run(g.committed, params)
}

func (t *graphTx) Commit() error {
	if t.staged != nil {
		t.g.mu.Lock()
		t.g.committed = t.staged
		t.g.mu.Unlock()
		t.staged = nil
		t.g.writer.Unlock()
	}
	return nil
}

func (t *graphTx) Rollback() {
	if t.staged != nil {
		t.staged = nil
		t.g.writer.Unlock()
	}
}

// statement is one known statement: whether it writes, and what it does.
type statement struct {
	writes bool
	run    func(g *graphData, p map[string]any) (Result, error)
}

func statementOf(query string) (statement, error) {
	switch query {
	case cypher.Constraint:
		return statement{true, func(g *graphData, p map[string]any) (Result, error) {
			g.constraints["h4r_item_id"] = true
			return Result{}, nil
		}}, nil
	case cypher.DropLinks:
		return statement{true, eachID(func(g *graphData, id string) {
			n := g.nodes[id]
			if n == nil {
				return
			}
			former := n.out
			n.out = nil
			for _, r := range former {
				g.dropOrphan(r.target)
			}
		})}, nil
	case cypher.MarkDeleted:
		return statement{true, eachID(func(g *graphData, id string) {
			if n := g.nodes[id]; n != nil {
				n.present = false
			}
		})}, nil
	case cypher.DropOrphans:
		return statement{true, eachID((*graphData).dropOrphan)}, nil
	case cypher.MergeItems:
		return statement{true, mergeItems}, nil
	case cypher.CreateLinks:
		return statement{true, createLinks}, nil
	case cypher.ClearBatch:
		return statement{true, clearBatch}, nil
	case cypher.CountPresent:
		return statement{false, func(g *graphData, p map[string]any) (Result, error) {
			n := int64(0)
			for _, nd := range g.nodes {
				if nd.present {
					n++
				}
			}
			return Result{Keys: []string{"items"}, Rows: [][]any{{n}}}, nil
		}}, nil
	}
	if k, directed, ok := cypher.ParseHops(query); ok {
		return statement{false, func(g *graphData, p map[string]any) (Result, error) { return hops(g, p, k, directed) }}, nil
	}
	return statement{}, &Failure{Code: "Neo.ClientError.Statement.SyntaxError",
		Message: fmt.Sprintf("bolttest: unknown statement %q", query)}
}

// dropOrphan deletes the node id if the store does not hold it and no
// relationship touches it.
func (g *graphData) dropOrphan(id string) {
	if n := g.nodes[id]; n != nil && !n.present && len(n.out) == 0 && !g.linkedTo(id) {
		delete(g.nodes, id)
	}
}

func (g *graphData) linkedTo(id string) bool {
	for _, n := range g.nodes {
		for _, r := range n.out {
			if r.target == id {
				return true
			}
		}
	}
	return false
}

func typeError(format string, args ...any) *Failure {
	return &Failure{Code: "Neo.ClientError.Statement.TypeError", Message: fmt.Sprintf(format, args...)}
}

// Parameter readers: a parameter of the wrong type is a TypeError, as
// Neo4j reports it, so that a statement given a wrong shape fails here too.
func listParam(p map[string]any, name string) ([]any, error) {
	v, ok := p[name]
	if !ok {
		return nil, &Failure{Code: "Neo.ClientError.Statement.ParameterMissing", Message: "Expected parameter(s): " + name}
	}
	l, ok := v.([]any)
	if !ok {
		return nil, typeError("$%s must be a list, got %T", name, v)
	}
	return l, nil
}

func stringOf(v any, what string) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", typeError("%s must be a string, got %T", what, v)
	}
	return s, nil
}

func mapOf(v any, what string, keys ...string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, typeError("%s must be a map, got %T", what, v)
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return nil, typeError("%s has no key %q", what, k)
		}
	}
	return m, nil
}

func eachID(fn func(g *graphData, id string)) func(*graphData, map[string]any) (Result, error) {
	return func(g *graphData, p map[string]any) (Result, error) {
		ids, err := listParam(p, "ids")
		if err != nil {
			return Result{}, err
		}
		for _, v := range ids {
			id, err := stringOf(v, "an id")
			if err != nil {
				return Result{}, err
			}
			fn(g, id)
		}
		return Result{}, nil
	}
}

func mergeItems(g *graphData, p map[string]any) (Result, error) {
	items, err := listParam(p, "items")
	if err != nil {
		return Result{}, err
	}
	for _, v := range items {
		m, err := mapOf(v, "an item", "id", "kind")
		if err != nil {
			return Result{}, err
		}
		id, err := stringOf(m["id"], "item.id")
		if err != nil {
			return Result{}, err
		}
		kind, err := stringOf(m["kind"], "item.kind")
		if err != nil {
			return Result{}, err
		}
		n := g.nodes[id]
		if n == nil {
			n = &node{id: id}
			g.nodes[id] = n
		}
		n.present, n.kind = true, kind
	}
	return Result{}, nil
}

func createLinks(g *graphData, p map[string]any) (Result, error) {
	links, err := listParam(p, "links")
	if err != nil {
		return Result{}, err
	}
	for _, v := range links {
		m, err := mapOf(v, "a link", "source", "target", "type", "position", "strength", "targetType", "context")
		if err != nil {
			return Result{}, err
		}
		var r rel
		source, err := stringOf(m["source"], "link.source")
		if err != nil {
			return Result{}, err
		}
		if r.target, err = stringOf(m["target"], "link.target"); err != nil {
			return Result{}, err
		}
		if r.typ, err = stringOf(m["type"], "link.type"); err != nil {
			return Result{}, err
		}
		if r.typ == "" {
			return Result{}, &Failure{Code: "Neo.ClientError.Statement.SyntaxError", Message: "a relationship type must not be empty"}
		}
		var ok bool
		if r.position, ok = m["position"].(int64); !ok {
			return Result{}, typeError("link.position must be an integer, got %T", m["position"])
		}
		if r.strength, ok = m["strength"].(float64); !ok {
			return Result{}, typeError("link.strength must be a float, got %T", m["strength"])
		}
		if r.targetType, err = stringOf(m["targetType"], "link.targetType"); err != nil {
			return Result{}, err
		}
		if r.context, err = stringOf(m["context"], "link.context"); err != nil {
			return Result{}, err
		}
		s := g.nodes[source]
		if s == nil {
			continue // MATCH found no row
		}
		if g.nodes[r.target] == nil {
			g.nodes[r.target] = &node{id: r.target}
		}
		s.out = append(s.out, r)
	}
	return Result{}, nil
}

func clearBatch(g *graphData, p map[string]any) (Result, error) {
	batch, ok := p["batch"].(int64)
	if !ok || batch < 0 {
		return Result{}, typeError("$batch must be a non-negative integer, got %v", p["batch"])
	}
	deleted := int64(0)
	for _, id := range slices.Sorted(maps.Keys(g.nodes)) {
		if deleted == batch {
			break
		}
		delete(g.nodes, id)
		deleted++
		for _, n := range g.nodes { // DETACH: relationships into it go too
			n.out = slices.DeleteFunc(n.out, func(r rel) bool { return r.target == id })
		}
	}
	return Result{Keys: []string{"deleted"}, Rows: [][]any{{deleted}}}, nil
}

// hops answers cypher.Hops(k, directed), $targets keeping rows, not
// paths. The minimum length over the
// bounded paths (trails, in Cypher) whose nodes are all present and whose
// relationships all have an allowed type is the breadth-first distance
// under the same restrictions, because a shortest walk never repeats a
// relationship; so a breadth-first search gives exactly what Neo4j returns.
func hops(g *graphData, p map[string]any, k int, directed bool) (Result, error) {
	anchors, err := listParam(p, "anchors")
	if err != nil {
		return Result{}, err
	}
	var types map[string]bool
	switch v := p["types"].(type) {
	case nil:
		if _, ok := p["types"]; !ok {
			return Result{}, &Failure{Code: "Neo.ClientError.Statement.ParameterMissing", Message: "Expected parameter(s): types"}
		}
	case []any:
		types = map[string]bool{}
		for _, t := range v {
			s, err := stringOf(t, "a type")
			if err != nil {
				return Result{}, err
			}
			types[s] = true
		}
	default:
		return Result{}, typeError("$types must be a list or null, got %T", v)
	}
	var targets map[string]bool
	switch v := p["targets"].(type) {
	case nil:
		if _, ok := p["targets"]; !ok {
			return Result{}, &Failure{Code: "Neo.ClientError.Statement.ParameterMissing", Message: "Expected parameter(s): targets"}
		}
	case []any:
		targets = map[string]bool{}
		for _, t := range v {
			s, err := stringOf(t, "a target")
			if err != nil {
				return Result{}, err
			}
			targets[s] = true
		}
	default:
		return Result{}, typeError("$targets must be a list or null, got %T", v)
	}
	limit, ok := p["limit"].(int64)
	if !ok || limit < 0 {
		return Result{}, typeError("$limit must be a non-negative integer, got %v", p["limit"])
	}
	allowed := func(r rel) bool { return types == nil || types[r.typ] }
	// Neighbours over allowed relationships, both ways unless directed.
	next := map[string][]string{}
	for _, n := range g.nodes {
		for _, r := range n.out {
			if !allowed(r) {
				continue
			}
			next[n.id] = append(next[n.id], r.target)
			if !directed {
				next[r.target] = append(next[r.target], n.id)
			}
		}
	}
	dist := map[string]int64{}
	var frontier []string
	for _, a := range anchors {
		id, err := stringOf(a, "an anchor")
		if err != nil {
			return Result{}, err
		}
		if n := g.nodes[id]; n != nil && n.present {
			if _, seen := dist[id]; !seen {
				dist[id] = 0
				frontier = append(frontier, id)
			}
		}
	}
	for d := int64(1); d <= int64(k) && len(frontier) > 0; d++ {
		var grown []string
		for _, id := range frontier {
			for _, nb := range next[id] {
				if n := g.nodes[nb]; n == nil || !n.present {
					continue
				}
				if _, seen := dist[nb]; !seen {
					dist[nb] = d
					grown = append(grown, nb)
				}
			}
		}
		frontier = grown
	}
	rows := make([][]any, 0, len(dist))
	for id, d := range dist {
		if targets == nil || targets[id] {
			rows = append(rows, []any{id, d})
		}
	}
	slices.SortFunc(rows, func(a, b []any) int {
		if c := cmp.Compare(a[1].(int64), b[1].(int64)); c != 0 {
			return c
		}
		return cmp.Compare(a[0].(string), b[0].(string))
	})
	if int64(len(rows)) > limit {
		rows = rows[:limit]
	}
	return Result{Keys: []string{"id", "distance"}, Rows: rows}, nil
}
