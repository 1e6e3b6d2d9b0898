// Package qdrant keeps item vectors in a Qdrant collection, through the
// official gRPC client (github.com/qdrant/go-client), and finds candidates
// by them. The store (SQLite or Postgres) stays the source of truth: the
// collection is a mirror that Mirror keeps in step with it at ingest,
// retrying what failed, and that h4r reindex rebuilds from the store.
//
// Index bootstraps the collection (one unnamed vector, cosine distance, the
// embedder's dimension; an existing collection of another dimension or
// distance is refused), upserts and deletes points, and searches with a
// payload filter equivalent to the request's filters. Points are keyed by a
// UUID derived from the item id (Qdrant ids are integers or UUIDs); the
// payload holds the item id, the embedding model, kind, tags, createdAt (as
// Unix seconds) and the item's flat metadata. Hits are read back from the
// store, so results carry the item's current version, and the filters are
// checked again there: exactly, and for the store-maintained keys
// (accessCount, version, byteSize, tokens) that the payload cannot keep
// current.
//
// No real Qdrant server runs in this project's tests: they run the real
// client against an in-process gRPC server implementing the Collections and
// Points services from the client's own generated code.
package qdrant
