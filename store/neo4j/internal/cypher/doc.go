// Package cypher holds the statements H4R sends to Neo4j. They live apart
// from the client so that the test server (store/neo4j/bolttest) answers
// exactly these texts and nothing else: a statement changed in one place
// and not the other fails the tests instead of passing against a fake that
// understands a different query.
//
// Every value a statement uses is a parameter. The one exception is the
// depth bound of the hop query: Cypher does not accept a parameter in a
// variable-length pattern, so Hops formats it from an int the caller has
// checked to be within range. No text from a request ever reaches a
// statement.
package cypher
