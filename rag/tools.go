package rag

// QueryToolArgs are the retrieval contract's rag_query function-tool parameters, for
// an MCP tool (the session and agent come from the MCP session, not the
// model). The rag_feedback tool's parameters are FeedbackRequest as is.
type QueryToolArgs struct {
	Query string   `json:"query" jsonschema:"what to retrieve context for"`
	Files []string `json:"files,omitempty" jsonschema:"files the agent is working on"`
	// PreferGraph is accepted for the retrieval contract's schema; the engine
	// decides when to follow links (query type hybrid, anchors).
	PreferGraph *bool `json:"prefer_graph,omitempty" jsonschema:"accepted; the engine decides graph hops"`
	K           *int  `json:"k,omitempty" jsonschema:"results wanted (1-1000, default 10)"`
	Rerank      *bool `json:"rerank,omitempty" jsonschema:"accepted; the engine's ranking is the only ranking"`
}

// Request is the POST /query request the tool call stands for: files
// become git.changed_files, recorded with the pack.
func (a QueryToolArgs) Request(sessionID, agentID string) QueryRequest {
	r := QueryRequest{SessionID: sessionID, AgentID: agentID, Query: a.Query, K: a.K, Rerank: a.Rerank}
	if len(a.Files) > 0 {
		r.Git = &Git{ChangedFiles: a.Files}
	}
	return r
}
