// Package sqlite is H4R's embedded store: one SQLite file (pure Go, no cgo)
// that keeps memory items, their links and tags, and serves the full-text
// (exact BM25 top k) and causal-hop candidate generators. Full text
// searches an in-memory index (index/bm25, textindex.go) and hops walk
// the link graph breadth-first in memory (adjacency.go); both are built
// from the file and kept in step with it by generation counters, as the
// vectors are (vectors.go).
//
// The schema is created and upgraded by the numbered SQL files in
// migrations/, embedded in the binary. Writes go through one connection,
// because SQLite has one writer; reads use a separate pool, which WAL mode
// lets run beside the writer.
package sqlite
