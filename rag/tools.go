package rag

// QueryToolArgs are the retrieval contract's rag_query function-tool parameters, for
// an MCP tool (the session and agent come from the MCP session, not the
// model). The rag_feedback tool's parameters are FeedbackRequest as is.
type QueryToolArgs struct {
	Query       string   `json:"query" jsonschema:"what to retrieve context for"`
	Files       []string `json:"files,omitempty" jsonschema:"files the agent is working on"`
	PreferGraph *bool    `json:"prefer_graph,omitempty" jsonschema:"rank by causal hops from the top hits (the causal query type)"`
	K           *int     `json:"k,omitempty" jsonschema:"results wanted (1-1000, default 10)"`
	Rerank      *bool    `json:"rerank,omitempty" jsonschema:"accepted; the engine's ranking is the only ranking"`
}

// Request is the POST /query request the tool call stands for: files
// and prefer_graph as the request's own.
func (a QueryToolArgs) Request(sessionID, agentID string) QueryRequest {
	return QueryRequest{SessionID: sessionID, AgentID: agentID, Query: a.Query, K: a.K, Rerank: a.Rerank,
		Files: a.Files, PreferGraph: a.PreferGraph}
}
