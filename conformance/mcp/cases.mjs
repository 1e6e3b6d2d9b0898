// Every H4R tool, called once with good arguments and once with bad ones.
// A good call must succeed (the SDK's client also validates its
// structuredContent against the tool's output schema); a bad one must be
// a tool result with isError whose text is H4R's error shape
// {"error": {"code", "message", "field"}} naming `field`.
//
// good may be a function of what earlier calls returned (state), so that
// memory_link links the memory memory_write wrote.
export const tools = [
  {
    name: "context_pack",
    good: () => ({ query: { text: "login selector" } }),
    bad: { query: { text: 3 } },
    field: "query.text",
  },
  {
    name: "memory_write",
    good: () => ({
      scope: { session_id: "conformance", agent_id: "conformance" },
      type: "fix",
      payload: { summary: "the login selector is #sign-in" },
      tags: ["login"],
    }),
    bad: { type: "fix", payload: {} },
    field: "scope",
    keep: (out, state) => (state.memoryId = out.memory_id),
  },
  {
    name: "memory_read",
    good: () => ({ scope: { session_id: "conformance" } }),
    bad: { scope: {}, limit: "ten" },
    field: "limit",
  },
  {
    name: "memory_link",
    good: (state) => ({ memory_id: state.memoryId, related: { file_path: "web/login.ts" }, relation: "references" }),
    bad: { memory_id: "m", relation: "references", related: { file_path: "a", commit_sha: "b" } },
    field: "related",
  },
  {
    name: "memory_stats",
    good: () => ({ scope: { agent_id: "conformance" } }),
    bad: { scope: { branch: "main" } },
    field: "scope.branch",
  },
  {
    name: "rag_query",
    good: () => ({ query: "login selector" }),
    bad: { query: "login", k: "ten" },
    field: "k",
    keep: (out, state) => (state.packId = out.context_pack.id),
  },
  {
    name: "rag_feedback",
    good: (state) => ({ context_pack_id: state.packId, verdict: "useful" }),
    bad: { context_pack_id: 7, verdict: "useful" },
    field: "context_pack_id",
  },
  {
    name: "search_traces",
    good: () => ({ query: "rate limiting", filters: { since: "2026-01-01T00:00:00Z" } }),
    bad: { query: "rate limiting", filters: { since: "2026-01-01" } },
    field: "filters.since",
  },
  {
    name: "precedents",
    good: () => ({ preset: "decisions_by_epic", epic: "mj100" }),
    bad: { preset: "decision_traces_by_precedent" },
    field: "epic",
  },
  {
    name: "context_bridge",
    good: () => ({ tool: "think", params: { content: "how to optimize database queries" } }),
    bad: { tool: "think" },
    field: "params",
  },
];

export const resources = ["h4r://policy", "h4r://stats"];
