package postgres

import "github.com/h4r/h4r"

// CTEGraph is the graph generator as it was, one recursive query,
// LevelsGraph the one-statement levels walk (graph_reference_test.go), and
// FrontierGraph the frontier walk alone, as the store answers without its
// graph in memory, for benchmarks in the external test package.
func CTEGraph(s *Store) h4r.Generator      { return oneQueryGraph{s: s} }
func LevelsGraph(s *Store) h4r.Generator   { return oneQueryGraph{s: s, levels: true} }
func FrontierGraph(s *Store) h4r.Generator { return graph{s: s, via: viaDatabase} }
