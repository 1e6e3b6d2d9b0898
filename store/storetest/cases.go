package storetest

import "github.com/h4r/h4r"

// Edge is a link From → To in a hop case. The link is held by From, which
// must be one of the case's Nodes; To may be an id that is not ingested.
type Edge struct {
	From, To string
}

// TypedEdge is a link From → To of a type other than caused_by.
type TypedEdge struct {
	From, To, Type string
}

// HopCase is a graph, a walk over it and the distances it must find.
type HopCase struct {
	Name       string
	Nodes      []string          // the items ingested; each has text "node <id>"
	Kinds      map[string]string // item kind by id; "event" when absent
	Edges      []Edge            // ingested as caused_by links
	TypedEdges []TypedEdge       // ingested after Edges, with their types
	Anchors    []string
	MaxHops    int // 0: h4r.DefaultMaxHops (3)
	Directed   bool
	LinkTypes  []string // h4r.CandidateQuery.LinkTypes
	Targets    []string // h4r.CandidateQuery.Targets
	Filters    h4r.Filters
	Limit      int
	Want       map[string]int // every item reached, with its minimum distance
}

// HopCases returns the graphs every hop generator must walk correctly. A
// fresh slice each call, so callers may change it.
func HopCases() []HopCase {
	chain := []string{"a", "b", "c", "d", "e"}
	chainEdges := []Edge{{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "e"}}
	diamond := []Edge{{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}, {"d", "e"}}
	ring := []string{"n0", "n1", "n2", "n3", "n4", "n5"}
	ringEdges := []Edge{{"n0", "n1"}, {"n1", "n2"}, {"n2", "n3"}, {"n3", "n4"}, {"n4", "n5"}, {"n5", "n0"}}
	cases := []HopCase{
		{Name: "chain from the head stops at the default 3 hops", Nodes: chain, Edges: chainEdges,
			Anchors: []string{"a"}, Want: map[string]int{"a": 0, "b": 1, "c": 2, "d": 3}},
		{Name: "chain from the middle goes both ways", Nodes: chain, Edges: chainEdges,
			Anchors: []string{"c"}, Want: map[string]int{"a": 2, "b": 1, "c": 0, "d": 1, "e": 2}},
		{Name: "chain directed follows the arrows only", Nodes: chain, Edges: chainEdges,
			Anchors: []string{"c"}, Directed: true, Want: map[string]int{"c": 0, "d": 1, "e": 2}},
		{Name: "chain directed from the tail reaches nothing", Nodes: chain, Edges: chainEdges,
			Anchors: []string{"e"}, Directed: true, Want: map[string]int{"e": 0}},
		{Name: "chain with max hops 1", Nodes: chain, Edges: chainEdges,
			Anchors: []string{"c"}, MaxHops: 1, Want: map[string]int{"b": 1, "c": 0, "d": 1}},
		{Name: "chain with max hops 10 reaches the end", Nodes: chain, Edges: chainEdges,
			Anchors: []string{"a"}, MaxHops: 10, Want: map[string]int{"a": 0, "b": 1, "c": 2, "d": 3, "e": 4}},
		{Name: "two anchors take the nearer one", Nodes: chain, Edges: chainEdges,
			Anchors: []string{"a", "e"}, Want: map[string]int{"a": 0, "b": 1, "c": 2, "d": 1, "e": 0}},
		{Name: "anchor listed twice counts once", Nodes: chain, Edges: chainEdges,
			Anchors: []string{"b", "b"}, MaxHops: 1, Want: map[string]int{"a": 1, "b": 0, "c": 1}},
		{Name: "diamond joins at the minimum distance", Nodes: chain, Edges: diamond,
			Anchors: []string{"a"}, Want: map[string]int{"a": 0, "b": 1, "c": 1, "d": 2, "e": 3}},
		{Name: "diamond with a shortcut", Nodes: chain, Edges: append(diamond, Edge{"a", "d"}),
			Anchors: []string{"a"}, Want: map[string]int{"a": 0, "b": 1, "c": 1, "d": 1, "e": 2}},
		{Name: "diamond from the sink, undirected", Nodes: chain, Edges: diamond,
			Anchors: []string{"e"}, Want: map[string]int{"a": 3, "b": 2, "c": 2, "d": 1, "e": 0}},
		{Name: "cycle ends", Nodes: []string{"a", "b", "c"}, Edges: []Edge{{"a", "b"}, {"b", "c"}, {"c", "a"}},
			Anchors: []string{"a"}, MaxHops: 10, Want: map[string]int{"a": 0, "b": 1, "c": 1}},
		{Name: "cycle directed goes round once", Nodes: []string{"a", "b", "c"}, Edges: []Edge{{"a", "b"}, {"b", "c"}, {"c", "a"}},
			Anchors: []string{"a"}, MaxHops: 10, Directed: true, Want: map[string]int{"a": 0, "b": 1, "c": 2}},
		{Name: "two-node cycle", Nodes: []string{"a", "b"}, Edges: []Edge{{"a", "b"}, {"b", "a"}},
			Anchors: []string{"b"}, Directed: true, Want: map[string]int{"a": 1, "b": 0}},
		{Name: "ring of six meets at the far side", Nodes: ring, Edges: ringEdges,
			Anchors: []string{"n0"}, Want: map[string]int{"n0": 0, "n1": 1, "n5": 1, "n2": 2, "n4": 2, "n3": 3}},
		{Name: "ring of six with max hops 2", Nodes: ring, Edges: ringEdges,
			Anchors: []string{"n0"}, MaxHops: 2, Want: map[string]int{"n0": 0, "n1": 1, "n5": 1, "n2": 2, "n4": 2}},
		{Name: "disconnected part is not reached", Nodes: []string{"a", "b", "x", "y"}, Edges: []Edge{{"a", "b"}, {"x", "y"}},
			Anchors: []string{"a"}, MaxHops: 10, Want: map[string]int{"a": 0, "b": 1}},
		{Name: "self link keeps the anchor at 0", Nodes: []string{"a", "b"}, Edges: []Edge{{"a", "a"}, {"a", "b"}},
			Anchors: []string{"a"}, Want: map[string]int{"a": 0, "b": 1}},
		{Name: "self link on a reached item", Nodes: []string{"a", "b", "c"}, Edges: []Edge{{"a", "b"}, {"b", "b"}, {"b", "c"}},
			Anchors: []string{"a"}, Directed: true, Want: map[string]int{"a": 0, "b": 1, "c": 2}},
		{Name: "parallel links count once", Nodes: []string{"a", "b"}, Edges: []Edge{{"a", "b"}, {"a", "b"}, {"b", "a"}},
			Anchors: []string{"a"}, Want: map[string]int{"a": 0, "b": 1}},
		{Name: "anchor without links", Nodes: []string{"a", "b"},
			Anchors: []string{"a"}, Want: map[string]int{"a": 0}},
		{Name: "anchor that is no item is skipped", Nodes: []string{"a", "b"}, Edges: []Edge{{"a", "b"}},
			Anchors: []string{"ghost", "a"}, MaxHops: 1, Want: map[string]int{"a": 0, "b": 1}},
		{Name: "only unknown anchors", Nodes: []string{"a", "b"}, Edges: []Edge{{"a", "b"}},
			Anchors: []string{"ghost"}, Want: map[string]int{}},
		{Name: "link to an item not ingested leads nowhere", Nodes: []string{"a", "b"}, Edges: []Edge{{"a", "ghost"}, {"b", "ghost"}},
			Anchors: []string{"a"}, MaxHops: 10, Want: map[string]int{"a": 0}},
		{Name: "filter drops an item but not the path through it",
			Nodes: []string{"a", "b", "c"}, Kinds: map[string]string{"b": "fix"}, Edges: []Edge{{"a", "b"}, {"b", "c"}},
			Anchors: []string{"a"}, Filters: h4r.Filters{Kinds: []string{"event"}}, Want: map[string]int{"a": 0, "c": 2}},
		{Name: "filter can drop the anchor", Nodes: []string{"a", "b"}, Kinds: map[string]string{"a": "fix"}, Edges: []Edge{{"a", "b"}},
			Anchors: []string{"a"}, Filters: h4r.Filters{Kinds: []string{"event"}}, Want: map[string]int{"b": 1}},
		{Name: "limit keeps the nearest, then by id", Nodes: []string{"a", "b", "c", "d", "e"},
			Edges:   []Edge{{"a", "d"}, {"a", "c"}, {"a", "b"}, {"d", "e"}},
			Anchors: []string{"a"}, Limit: 3, Want: map[string]int{"a": 0, "b": 1, "c": 1}},
	}
	return append(cases, targetCases()...)
}

// targetCases walk with h4r.CandidateQuery.Targets and LinkTypes.
func targetCases() []HopCase {
	chain := []string{"a", "b", "c", "d", "e"}
	chainEdges := []Edge{{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "e"}}
	// star: a holds links to six items, the last of which links on to z.
	star := []string{"a", "b1", "b2", "b3", "b4", "b5", "b6", "z"}
	starEdges := []Edge{{"a", "b1"}, {"a", "b2"}, {"a", "b3"}, {"a", "b4"}, {"a", "b5"}, {"a", "b6"}, {"b6", "z"}}
	// typed: a caused_by b, a fixes c, c caused_by d, a fixes d.
	typed := []string{"a", "b", "c", "d"}
	typedEdges := []Edge{{"a", "b"}, {"c", "d"}}
	fixes := []TypedEdge{{"a", "c", "fixes"}, {"a", "d", "fixes"}}
	return []HopCase{
		{Name: "targets keep only the items asked for", Nodes: chain, Edges: chainEdges,
			Anchors: []string{"c"}, Targets: []string{"a", "d", "e"}, Want: map[string]int{"a": 2, "d": 1, "e": 2}},
		{Name: "target that is an anchor is at 0", Nodes: chain, Edges: chainEdges,
			Anchors: []string{"a"}, Targets: []string{"c", "a"}, Want: map[string]int{"a": 0, "c": 2}},
		{Name: "target beyond max hops is left out", Nodes: chain, Edges: chainEdges,
			Anchors: []string{"a"}, MaxHops: 2, Targets: []string{"b", "e"}, Want: map[string]int{"b": 1}},
		{Name: "target that is no item is left out", Nodes: chain, Edges: append(chainEdges, Edge{"a", "ghost"}),
			Anchors: []string{"a"}, Targets: []string{"ghost", "b"}, Want: map[string]int{"b": 1}},
		{Name: "target listed twice comes once", Nodes: chain, Edges: chainEdges,
			Anchors: []string{"a"}, Targets: []string{"c", "c"}, Want: map[string]int{"c": 2}},
		{Name: "target directed against the arrows is not reached", Nodes: chain, Edges: chainEdges,
			Anchors: []string{"c"}, Directed: true, Targets: []string{"a", "e"}, Want: map[string]int{"e": 2}},
		{Name: "target behind more nearer items than the limit", Nodes: star, Edges: starEdges,
			Anchors: []string{"a"}, Targets: []string{"z"}, Want: map[string]int{"z": 2}},
		{Name: "targets with a limit keep the nearest", Nodes: star, Edges: starEdges,
			Anchors: []string{"a"}, Targets: []string{"z", "b2", "b1"}, Limit: 2, Want: map[string]int{"b1": 1, "b2": 1}},
		{Name: "targets no item reaches", Nodes: []string{"a", "b", "x"}, Edges: []Edge{{"a", "b"}},
			Anchors: []string{"a"}, Targets: []string{"x"}, Want: map[string]int{}},
		{Name: "target filtered out, the path through it counts",
			Nodes: []string{"a", "b", "c"}, Kinds: map[string]string{"b": "fix"}, Edges: []Edge{{"a", "b"}, {"b", "c"}},
			Anchors: []string{"a"}, Targets: []string{"b", "c"}, Filters: h4r.Filters{Kinds: []string{"event"}}, Want: map[string]int{"c": 2}},
		{Name: "link types follow only the types named", Nodes: typed, Edges: typedEdges, TypedEdges: fixes,
			Anchors: []string{"a"}, LinkTypes: []string{"caused_by"}, Want: map[string]int{"a": 0, "b": 1}},
		{Name: "link types against the arrows", Nodes: typed, Edges: typedEdges, TypedEdges: fixes,
			Anchors: []string{"d"}, LinkTypes: []string{"caused_by"}, Want: map[string]int{"c": 1, "d": 0}},
		{Name: "link types give the distance over allowed links", Nodes: typed, Edges: typedEdges, TypedEdges: fixes,
			Anchors: []string{"a"}, LinkTypes: []string{"fixes"}, Want: map[string]int{"a": 0, "c": 1, "d": 1}},
		{Name: "several link types", Nodes: typed, Edges: typedEdges, TypedEdges: fixes,
			Anchors: []string{"b"}, LinkTypes: []string{"fixes", "caused_by"}, Want: map[string]int{"a": 1, "b": 0, "c": 2, "d": 2}},
		{Name: "unknown link type follows nothing", Nodes: typed, Edges: typedEdges, TypedEdges: fixes,
			Anchors: []string{"a"}, LinkTypes: []string{"no_such_type"}, Want: map[string]int{"a": 0}},
		{Name: "link types directed", Nodes: typed, Edges: typedEdges, TypedEdges: fixes,
			Anchors: []string{"c"}, Directed: true, LinkTypes: []string{"fixes", "caused_by"}, Want: map[string]int{"c": 0, "d": 1}},
		{Name: "link types with targets", Nodes: typed, Edges: typedEdges, TypedEdges: fixes,
			Anchors: []string{"b"}, LinkTypes: []string{"caused_by"}, Targets: []string{"a", "d"}, Want: map[string]int{"a": 1}},
	}
}

// NastyQuery is query text that must not break full-text search.
type NastyQuery struct {
	Name string
	Text string
	// FindsLogin says that the text holds the word "login", so the item
	// whose text is LoginText must be among the hits.
	FindsLogin bool
}

// LoginText is the text of the item NastyQuery.FindsLogin refers to.
const LoginText = "login button selector timed out on the checkout page"

// NastyQueries returns query texts full of search syntax (FTS5's, and the
// SQL and tsquery kinds): none may make a search fail. A fresh slice each
// call.
func NastyQueries() []NastyQuery {
	return []NastyQuery{
		{"empty", "", false},
		{"only spaces", "   \t\n ", false},
		{"lone double quote", `"`, false},
		{"two double quotes", `""`, false},
		{"unbalanced quote before", `"login`, true},
		{"unbalanced quote after", `login"`, true},
		{"quote injection", `login" OR "x`, true},
		{"column filter", `text:login`, true},
		{"unknown column filter", `title:login`, true},
		{"column set", `{text id}: login`, true},
		{"parenthesis open", `(login`, true},
		{"parenthesis close", `login)`, true},
		{"prefix star", `login*`, true},
		{"lone star", `*`, false},
		{"minus", `-login`, true},
		{"caret", `^login`, true},
		{"plus", `+login`, true},
		{"NEAR group", `NEAR(login button, 2)`, true},
		{"NEAR slash", `login NEAR/2 button`, true},
		{"bare AND", `AND`, false},
		{"bare OR", `OR`, false},
		{"bare NOT", `NOT`, false},
		{"trailing AND", `login AND`, true},
		{"leading NOT", `NOT login`, true},
		{"doubled OR", `login OR OR button`, true},
		{"lowercase operators", `and or not near login`, true},
		{"colons", `a:b:c::login`, true},
		{"brackets", `[login]`, true},
		{"apostrophe", `login's`, true},
		{"sql injection", `'; DROP TABLE items; -- login`, true},
		{"tsquery syntax", `login & !button | sel:*`, true},
		{"percent and underscore", `%login_`, true},
		{"backslashes", `\login\`, true},
		{"nul byte", "login\x00button", true},
		{"invalid utf-8", "login \xff\xfe", true},
		{"smart quotes", "“login” ‘button’", true},
		{"emoji", "🔥 login 🚀", true},
		{"combining mark alone", "\u0301", false},
		{"cjk", "登录 按钮 login", true},
		{"only punctuation", `!@#$%^&*()_+-=[]{};':",./<>?`, false},
		{"many words", repeatWords(300), true},
	}
}

// repeatWords returns "login" followed by n made-up words.
func repeatWords(n int) string {
	b := append(make([]byte, 0, n*4+8), "login "...)
	for i := range n {
		b = append(b, 'w')
		b = append(b, byte('a'+i%26), byte('a'+(i/26)%26))
		b = append(b, ' ')
	}
	return string(b)
}
