// Package rag serves the retrieval contract of docs/api.md: POST /query builds
// a context pack through the engine (so ranking, policy and budgets apply
// as everywhere) and answers it in 004's shape — context_pack{id, tokens,
// chunks}, citations, debug — and stores each pack under a stable id, so
// that POST /feedback can name it. Feedback is kept as labels for the tuner
// (h4r bench tune --from-feedback), and a useful verdict counts as a use of
// the pack's items, which the frequency signal measures.
//
// The HTTP handlers are in package server; MCP tools (rag_query,
// rag_feedback) call Service directly with the caller's specialist.
package rag
