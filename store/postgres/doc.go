// Package postgres is H4R's production store: memory items, their links and
// a BM25 full-text index in PostgreSQL (via pgx), shared by any number of
// `h4r serve` replicas. It meets the same contract as the embedded store
// (store/storetest) and serves the same generators: full-text candidates
// ranked by BM25, and causal hops from anchors (a breadth-first walk over
// the link graph each replica holds in memory when it is proven current,
// memgraph.go, else one query per hop, frontier.go).
//
// Full text does not use ts_rank, whose ordering is far from BM25 (nDCG@10
// 0.56 against 0.69 on scifact). Postgres only stems: the text is split
// into words in Go (as the SQLite store does) and to_tsvector('english')
// turns the words into lexemes (each store keeps the lexemes of the words
// and the ids of the terms it has met, so that a write asks Postgres only
// about new ones, lexicon.go). Each (term, item) pair is a row of the
// postings table with its BM25 impact precomputed; term statistics (df,
// the corpus size and total length) are kept in the ingest transaction,
// in shard rows each write claims for itself and searches sum, so that
// writers do not wait for each other (PERFORMANCE.md). A
// query reads, for each of its terms, the postings with the highest impact
// (at most the term cut, WithTermCut) from an index ordered by impact, and
// sums idf·impact per item. Terms with fewer postings than the cut are
// scored exactly; for commoner terms only their best postings count, which
// bounds the cost of a query by terms × cut instead of the number of
// matches.
//
// Searches read their hits through a cache of decoded items
// (itemcache.go): each query that finds hits reads only their stamps
// (version, access counts, size), and only hits the cache lacks at that
// stamp are read and decoded. Versions rise on every change of an item's
// content and are never reused, so another replica's write is a miss, not
// a stale hit (PERFORMANCE.md).
//
// The schema is created and upgraded by the numbered SQL files in
// migrations/, embedded in the binary, under a transaction-scoped advisory
// lock so that replicas starting together apply each migration once.
package postgres
