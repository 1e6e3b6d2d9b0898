// Package store is the folder of the storage technologies. It holds no
// code of its own: the item model and the Generator interface they
// implement live in the root package h4r. Each sub-folder is one
// technology:
//
//   - sqlite: the embedded store (FTS5, exact vectors, recursive-CTE hops);
//   - postgres: the production store (BM25 postings, JSONB filters);
//   - qdrant: vector search mirrored from a store;
//   - neo4j: causal hops mirrored from a store;
//   - storetest: the contract suite every store passes.
package store
