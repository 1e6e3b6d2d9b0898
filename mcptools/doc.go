// Package mcptools serves H4R to agents as Model Context Protocol tools,
// with the official Go SDK (github.com/modelcontextprotocol/go-sdk), over
// stdio (h4r mcp) and streamable HTTP (/mcp on the API server).
//
// A Registry holds the tools and resources. Standard adds H4R's own:
// context_pack and the retrieval contract's memory_write, memory_read, memory_link
// and memory_stats, and the resources h4r://policy and h4r://stats. Other
// features add theirs with AddTool (rag_query, rag_feedback,
// search_traces, precedents) before a server is built from the registry.
//
// Every tool call is answered for a Caller: over HTTP the API key's
// principal (the same bearer keys as the REST routes), over stdio a
// configured principal (H4R_MCP_API_KEY), never anything the arguments
// say. A tool declares the route class it needs (read or ingest), checked
// as the REST routes are. Arguments that fail a tool's JSON schema, and
// every error of the tool itself, are tool results with isError set whose
// text is H4R's error shape {"error": {"code", "message", "field"}}: never
// a protocol error. A resource is listed only to callers whose key may read
// it; protocol errors carry JSON-RPC codes.
//
// Tool schemas hold no boolean schemas (schemaFor): the TypeScript SDK's
// client, and so most hosts, refuses a whole tools/list over one. The
// conformance suite in conformance/mcp checks the server with the
// official TypeScript SDK and the Inspector CLI.
package mcptools
