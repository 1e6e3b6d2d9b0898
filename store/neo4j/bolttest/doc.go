// Package bolttest is a Bolt 5 server for tests: Neo4j cannot be installed
// where H4R's tests run, so the real Neo4j Go driver talks, over a real TCP
// connection on loopback, to this server instead. It speaks the handshake
// (Bolt 5.1 to 5.4), HELLO and LOGON with basic auth, ROUTE (so neo4j://
// URLs work), BEGIN, RUN, PULL, DISCARD, COMMIT, ROLLBACK, RESET, TELEMETRY
// and GOODBYE, with PackStream encoding of the values it uses, and the
// protocol's failure rule: after a FAILURE every message is IGNORED until
// RESET.
//
// Statements are answered by a Handler. Graph is the handler for package
// store/neo4j: an in-memory graph that knows exactly that package's
// statements, applies writes at commit, and can be told to fail or to hold
// statements (a Neo4j that does not answer in time).
package bolttest
