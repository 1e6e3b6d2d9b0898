package layering

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the module path; package paths below are relative to it, the
// root package being "".
const module = "github.com/h4r/h4r"

// layer is one layer of the module: the folders whose packages (and their
// sub-packages) belong to it.
type layer struct {
	name    string
	folders []string
	// sealed: no package imports this layer's packages.
	sealed bool
}

// layers lists the module's layers from the bottom up. A package may
// import packages of its own layer or of a layer below it, never one
// above. A folder claims its sub-folders too; the longest folder that
// matches a package decides its layer.
var layers = []layer{
	// The domain types and the service interfaces, and the JSON appender
	// the pack's encoder writes with: they import nothing of the module.
	{name: "domain", folders: []string{"", "internal/jsonappend"}},
	// Libraries of one concern each, which know no store and no request
	// path: text and time analysis, token counts, the ranker and the
	// slicer, policy, configuration, keys, metrics, tracing, jobs, the
	// demo corpus, the test helpers.
	{name: "library", folders: []string{
		"analysis", "auth", "chunk", "config", "conversation", "demo", "docs", "internal", "jobs",
		"metrics", "policy", "rank", "scs", "telemetry", "timeref", "tokens",
	}},
	// In-memory indexes that belong to no store.
	{name: "index", folders: []string{"index"}},
	// The embedders: they weigh terms with the BM25 index's statistics,
	// and the Qdrant fake embeds what it stores.
	{name: "embedding", folders: []string{"embed"}},
	// The stores, their shared SQL helpers, fakes and contract suite.
	{name: "store", folders: []string{"store"}},
	// The request path (generators → ranker → slicer → builder) and the
	// write path (sources → chunks → items).
	{name: "pipeline", folders: []string{"affordance", "engine", "ingest", "pack"}},
	// What H4R serves: the HTTP API and the MCP tools, the features behind
	// them, and app, which wires one service.
	{name: "service", folders: []string{
		"app", "bridge", "decision", "mcptools", "memory", "rag", "server", "trace", "traceclient",
	}},
	// Several services at once: tenants, and the benchmark harness.
	{name: "composition", folders: []string{"bench", "tenant"}},
	// The binaries.
	{name: "command", folders: []string{"cmd"}, sealed: true},
}

// layerOf returns the index in layers of the package at rel (a path
// relative to the module), or -1 if no layer claims it.
func layerOf(rel string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, f := range l.folders {
			if (rel == f || f != "" && strings.HasPrefix(rel, f+"/")) && len(f) > bestLen {
				best, bestLen = i, len(f)
			}
		}
	}
	return best
}

// violations returns one message for every import in graph (a package →
// the module packages it imports, both relative to the module) that the
// layers forbid, and for every package no layer claims.
func violations(graph map[string][]string) []string {
	name := func(rel string) string {
		if rel == "" {
			return "h4r"
		}
		return rel
	}
	var out []string
	for _, pkg := range sortedKeys(graph) {
		from := layerOf(pkg)
		if from < 0 {
			out = append(out, fmt.Sprintf("%s belongs to no layer: add its folder to the layers table", name(pkg)))
			continue
		}
		for _, imp := range graph[pkg] {
			to := layerOf(imp)
			switch {
			case to < 0:
				out = append(out, fmt.Sprintf("%s imports %s, which belongs to no layer: add its folder to the layers table", name(pkg), name(imp)))
			case layers[to].sealed:
				out = append(out, fmt.Sprintf("%s (layer %s) imports %s (layer %s): nothing imports a package of layer %s", name(pkg), layers[from].name, name(imp), layers[to].name, layers[to].name))
			case to > from:
				out = append(out, fmt.Sprintf("%s (layer %s) imports %s (layer %s), an upward import: a package imports only its own layer or a lower one (%s)", name(pkg), layers[from].name, name(imp), layers[to].name, order()))
			}
		}
	}
	return out
}

// cycles returns every import cycle of graph, each as the packages on it
// with the first repeated at the end.
func cycles(graph map[string][]string) [][]string {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var found [][]string
	var visit func(string)
	visit = func(p string) {
		state[p] = onPath
		path = append(path, p)
		for _, imp := range graph[p] {
			switch state[imp] {
			case onPath:
				start := slices.Index(path, imp)
				found = append(found, append(slices.Clone(path[start:]), imp))
			case unseen:
				visit(imp)
			}
		}
		path = path[:len(path)-1]
		state[p] = done
	}
	for _, p := range sortedKeys(graph) {
		if state[p] == unseen {
			visit(p)
		}
	}
	return found
}

// order names the layers from the bottom up.
func order() string {
	names := make([]string, len(layers))
	for i, l := range layers {
		names[i] = l.name
	}
	return strings.Join(names, " < ")
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// moduleGraph lists the module's packages with go list and returns each
// with the module packages it imports (not its tests'), both relative to
// the module. Any package go list cannot load (an import cycle among them)
// fails the test.
func moduleGraph(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Error,DepsErrors", module+"/...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("listing the module's packages with go list: %v\n%s", err, stderr.String())
	}
	type listErr struct{ Err string }
	rel := func(path string) (string, bool) {
		if path == module {
			return "", true
		}
		r, ok := strings.CutPrefix(path, module+"/")
		return r, ok
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Error      *listErr
			DepsErrors []*listErr
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list's output: %v", err)
		}
		if p.Error != nil {
			t.Errorf("go list cannot load %s: %s", p.ImportPath, p.Error.Err)
		}
		for _, e := range p.DepsErrors {
			t.Errorf("go list cannot load a dependency of %s: %s", p.ImportPath, e.Err)
		}
		from, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		imports := []string{}
		for _, imp := range p.Imports {
			if to, ok := rel(imp); ok {
				imports = append(imports, to)
			}
		}
		graph[from] = imports
	}
	if len(graph) < 2 {
		t.Fatalf("go list found %d packages of %s; the module is larger", len(graph), module)
	}
	return graph
}

// TestModuleLayering: the module's imports respect the layers, none goes
// round in a cycle, and every folder of the table holds a package.
func TestModuleLayering(t *testing.T) {
	graph := moduleGraph(t)
	for _, v := range violations(graph) {
		t.Error(v)
	}
	for _, c := range cycles(graph) {
		t.Errorf("import cycle: %s", strings.Join(c, " → "))
	}
	if _, ok := graph[""]; !ok {
		t.Error("go list did not list the root package h4r")
	}
	// A folder in the table that holds no package is a typo or a package
	// since removed: the table would drift from the module.
	for _, l := range layers {
		for _, f := range l.folders {
			if !slices.ContainsFunc(sortedKeys(graph), func(p string) bool { return p == f || f != "" && strings.HasPrefix(p, f+"/") }) {
				t.Errorf("layer %s names folder %q, which holds no package", l.name, f)
			}
		}
	}
}

// TestLayeringRule proves the rule fires on graphs with a planted bad
// edge, and stays quiet on the edges it allows.
func TestLayeringRule(t *testing.T) {
	tests := []struct {
		name  string
		graph map[string][]string
		want  []string // substrings of the violations, in order; none: allowed
	}{
		{"downward imports", map[string][]string{
			"engine": {"", "rank", "pack"}, "store/sqlite": {"", "index/bm25", "store/internal/sqlkit"}, "cmd/h4r": {"app", "tenant"},
		}, nil},
		{"same layer", map[string][]string{"server": {"rag", "trace"}}, nil},
		{"store imports the engine", map[string][]string{"store/sqlite": {"engine"}},
			[]string{"store/sqlite (layer store) imports engine (layer pipeline), an upward import"}},
		{"index imports a store", map[string][]string{"index/bm25": {"store/sqlite"}},
			[]string{"index/bm25 (layer index) imports store/sqlite (layer store), an upward import"}},
		{"root imports the module", map[string][]string{"": {"analysis"}},
			[]string{"h4r (layer domain) imports analysis (layer library), an upward import"}},
		{"library imports a service", map[string][]string{"scs": {"server"}},
			[]string{"scs (layer library) imports server (layer service)"}},
		{"sub-package of a store", map[string][]string{"store/neo4j/internal/cypher": {"app"}},
			[]string{"store/neo4j/internal/cypher (layer store) imports app (layer service)"}},
		{"service imports tenant", map[string][]string{"app": {"tenant"}},
			[]string{"app (layer service) imports tenant (layer composition)"}},
		{"a command imports a command", map[string][]string{"cmd/h4r-loadtest": {"cmd/h4r"}},
			[]string{"nothing imports a package of layer command"}},
		{"unlisted package", map[string][]string{"newthing": {""}},
			[]string{"newthing belongs to no layer"}},
		{"two bad edges", map[string][]string{"pack": {"server", "app"}},
			[]string{"pack (layer pipeline) imports server (layer service)", "pack (layer pipeline) imports app (layer service)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := violations(tt.graph)
			if len(got) != len(tt.want) {
				t.Fatalf("violations %q, want %d matching %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("violation %q, want it to contain %q", got[i], w)
				}
			}
		})
	}
}

// TestCycles: the cycle finder reports a planted cycle, within a layer as
// well (the layers allow those imports; Go does not).
func TestCycles(t *testing.T) {
	tests := []struct {
		name  string
		graph map[string][]string
		want  []string
	}{
		{"none", map[string][]string{"a": {"b"}, "b": {"c"}, "c": nil}, nil},
		{"two packages", map[string][]string{"rag": {"trace"}, "trace": {"rag"}}, []string{"rag → trace → rag"}},
		{"three packages", map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}}, []string{"a → b → c → a"}},
		{"self", map[string][]string{"a": {"a"}}, []string{"a → a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range cycles(tt.graph) {
				got = append(got, strings.Join(c, " → "))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("cycles %q, want %q", got, tt.want)
			}
		})
	}
}
