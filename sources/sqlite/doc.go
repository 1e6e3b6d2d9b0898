// Package sqlite is H4R's embedded store: one SQLite file (pure Go, no cgo)
// that keeps memory items, their links and tags, and serves the full-text
// (FTS5, bm25) and causal-hop candidate generators. Hops walk the link
// graph breadth-first in memory (adjacency.go), kept in step with the file
// by a generation counter as the vectors are (vectors.go).
//
// The schema is created and upgraded by the numbered SQL files in
// migrations/, embedded in the binary. Writes go through one connection,
// because SQLite has one writer; reads use a separate pool, which WAL mode
// lets run beside the writer.
package sqlite
