// Package sources holds the memory item model, its validation and defaults,
// and the candidate generator interface. Stores (sources/sqlite, and later
// Postgres) keep items and implement the generators: full-text search, and
// causal hops from anchor items over links.
package sources
