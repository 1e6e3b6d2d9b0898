// Package storetest is the contract every H4R store must meet, written once
// as a test suite: ingest and replace, batch atomicity, filters, full-text
// ranking, causal hops, access counting and concurrent writers. A store's
// own tests call Run with a function that opens an empty store; the SQLite
// store runs it today, and the Postgres (and Neo4j, for hops) ones will run
// the same cases. The cases are data (HopCases, NastyQueries) so that other
// tests, fuzzers and benchmarks can reuse them.
//
// Nothing here is specific to one backend. The suite assumes what the
// contracts say: tokens counted with cl100k_base, times compared at second
// precision, and the created-at range half-open ([CreatedAfter,
// CreatedBefore)).
package storetest
