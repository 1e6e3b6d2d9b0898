// Package traceclient is the Go client of H4R's commit-trace API, shaped
// like the Context Graph Service document's client (its design):
// PublishTrace over NATS JetStream, Search, Prefetch and EscalationHint
// over HTTP, Subscribe over WebSocket. Context is an enhancement, never a
// requirement: when the client is disabled, or H4R is unreachable or
// failing, queries return empty results and no error. Only a request H4R
// refuses as invalid (a 4xx other than 404) is an error, because
// retrying it cannot help.
package traceclient
