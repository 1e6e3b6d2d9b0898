// Package memory implements the retrieval contract's memory tools — memory.write,
// memory.read, memory.link and memory.stats — over the item store.
//
// A memory is an item of kind "memory": its type, payload and scope in
// content; the scope fields (session_id, agent_id, repo, commit_sha) and
// its type (memory_type) in metadata, where reads filter on them; its tags
// as the item's tags; what it relates to (files, commits, context packs)
// as links to "file:PATH", "commit:SHA" and "context_pack:ID". Ranking,
// policy, budgets and graph hops then apply to memories as to any item.
//
// Every read passes the policy slicer with the caller's clearance (which
// comes from the API key, never from the request), and a read is a use:
// the delivered memories' access counts grow (the frequency signal).
package memory
