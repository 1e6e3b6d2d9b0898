// Package qdranttest is an in-process Qdrant for tests: the Collections and
// Points gRPC services, implemented from the go-client's own generated
// code, served over a real loopback TCP connection so that the real client
// talks to it. It implements what H4R uses, with Qdrant's documented
// semantics for the filters H4R sends. It is not Qdrant: no real Qdrant
// server runs in this project's tests.
package qdranttest
