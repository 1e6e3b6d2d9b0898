// Package trace makes the reasoning behind each commit into data, as the
// Context Graph Service design asks: the CommitTrace
// model with the document's JSON names, its mapping to items (kind
// commit_trace, one item of kind decision per decision, linked to its
// trace), ingestion with summaries, the JetStream consumer, outcomes from
// GitHub webhooks, and search through the engine and the policy slicer.
//
// Every trace is an ordinary item, so ranking, policy, budgets, hops and
// the mirrors apply to it like to any other; this package only maps the
// document's shapes onto items and back.
package trace
