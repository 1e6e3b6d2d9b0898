// Package engine runs the request path of H4R: candidate generators
// (concurrently, each under its own deadline) → the eight-signal ranker →
// the policy slicer → the pack builder. It owns no data; stores, the policy
// engine and the token counter are given to it, so one Engine serves any
// number of concurrent requests and any number of replicas can run over one
// store.
//
// A generator that fails or runs out of time does not fail the request: its
// error becomes a warning and the pack's status becomes "degraded".
package engine
