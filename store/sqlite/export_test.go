package sqlite

import "github.com/h4r/h4r"

// CTEGraph is the graph generator as it was (graph_reference_test.go), for
// benchmarks in the external test package (they import bench, which
// imports this package).
func CTEGraph(s *Store) h4r.Generator { return cteGraph{s} }

// CheckFiltersAtOnce makes filtered full-text searches read the passing
// rows at once, instead of checking growing prefixes of the ranking first.
func CheckFiltersAtOnce(s *Store) { s.textFilterRounds = 0 }

// TestWriteTimeout is testWriteTimeout, for the stores the external test
// package opens (openAt): the contract's bulk writes (1,234 linked items in
// one Upsert) passed the default 5 s under -race in CI too.
const TestWriteTimeout = testWriteTimeout
