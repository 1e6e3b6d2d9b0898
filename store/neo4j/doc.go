// Package neo4j runs H4R's causal hops in Neo4j (NEO4J_URL) instead of the
// store's own walk.
//
// The store stays the source of truth. Client mirrors it as a graph: one
// node (:Item {id, kind, present}) per item, and per link target not
// ingested yet; one relationship per link, typed by the link's type, with
// its position and strength. Mirror keeps the graph in step: after each
// store write it reads the items' current state from the store and writes
// that, retries what failed, and rebuilds the whole graph from the store
// on demand (h4r reindex --graph).
//
// Generator answers hop queries from Neo4j: a bounded variable-length
// walk from the anchors, minimum distance per reached node, optional
// relationship-type filter and direction, and a result cap. Neo4j returns
// ids and distances; the items, and the filters, come from the store. A
// failed or late Neo4j is answered by the fallback (the store's walk), with
// a h4r.FallbackError the engine reports as a warning. Both walk by the
// same rules, which store/storetest.HopCases pins down: the package's
// tests run that table over the real driver against bolttest, a Bolt 5
// server in test code, and against a real Neo4j when NEO4J_URL is set.
//
// Every statement is parameterised (internal/cypher); the hop query's depth
// bound is the one formatted number, as Cypher takes no parameter there.
// Dynamic relationship types in CreateLinks need Neo4j 5.26 or later.
package neo4j
