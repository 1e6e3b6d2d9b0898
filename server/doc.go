// Package server exposes H4R over HTTP with echo v5: context packs
// (POST /v1/context-pack), agent-to-agent envelopes (POST /v1/a2a), item
// ingest and lookup (/v1/items), health probes, Prometheus metrics
// (/metrics) and the OpenAPI description.
//
// With an Authenticator (WithAuthenticator, auth.Keys), every route but the
// health probes needs "Authorization: Bearer <key>"; the key's principal is
// the specialist, which a request may narrow (a lower level, fewer groups)
// but never raise (permission_denied naming the field). Context requests
// count against the key's rate limit (resource_exhausted with Retry-After).
// Every request gets an id (X-Request-Id, the envelope's meta.id, the pack's
// request_id, and "request_id" in every log record of the request).
//
// Handlers are thin: they decode strictly (unknown fields are errors that name
// the field), resolve the specialist, call the engine or the store, and
// encode. Every error leaves through one handler that writes the item contract's
// error shape with the status from HTTPStatus (status.go).
package server
