// Package server exposes H4R over HTTP with echo v5: context packs
// (POST /v1/context-pack), agent-to-agent envelopes (POST /v1/a2a), item
// ingest and lookup (/v1/items), health probes and the OpenAPI description.
//
// Handlers are thin: they decode strictly (unknown fields are errors that name
// the field), resolve the specialist, call the engine or the store, and
// encode. Every error leaves through one handler that writes DESIGN.md's
// error shape with the status from h4r.HTTPStatus.
package server
