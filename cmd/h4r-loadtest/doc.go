// Command h4r-loadtest measures a running h4r server over HTTP on loopback:
// it optionally fills the store with synthetic items, then sends context
// packs from one client and from many, and reports latency percentiles,
// errors, degraded packs and the server's peak resident memory.
//
//	h4r serve --data-dir /tmp/h4r-load &     # no keys: loopback only, no rate limit
//	h4r-loadtest --addr 127.0.0.1:8080 --items 100000 --clients 100
//
// With --ingest-share, that share of the concurrent phase's requests are
// ingests (POST /v1/items of --ingest-batch new items) instead of packs, and
// packs and ingests are reported apart: the share of packs that came back
// ok (not degraded, not an error), their percentiles, and the ingests'
// statuses and percentiles. A client answered 429 or 503 with Retry-After
// waits that long before its next request, as agents should.
//
//	h4r-loadtest --clients 100 --ingest-share 0.2
//
// With --type bridge it loads trajectories (POST /v1/bridge/trajectories)
// and sends tool calls to the context bridge (POST /v1/bridge), each with
// a problem never asked before, so that the bridge's cache never answers;
// the server must run with H4R_BRIDGE_ENABLED=true. A call is ok when its
// context_bridge is there and not degraded.
//
//	H4R_BRIDGE_ENABLED=true h4r serve --data-dir /tmp/h4r-bridge &
//	h4r-loadtest --type bridge --items 10000 --clients 100
//
// When /metrics is readable (a server without keys, or --key allowed it),
// the concurrent phase is also reported as the server saw it: the share
// of its calls the route's own request-duration histogram puts within 5,
// 25 and 50 ms. That time runs from the handler's first middleware to the
// answer; the client's percentiles add the wait for the connection to be
// read and the client's own process, which on one machine share the cores.
//
// Every phase is bounded by a request count and a duration, and the
// program refuses a non-loopback address: it is a tool for one machine.
package main
