// Package decision records decision traces (docs/decisions.md: why a
// decision was made, which alternatives were rejected, which precedent it
// cited) and the events that are their outcomes, as items of kind
// decision_trace and event, and answers the precedent queries over them:
// decisions citing a precedent, applying a pattern, the file-assignment
// history of a file with outcomes, and one decision with its links and
// outcome. Every answer passes the policy slicer.
//
// It also computes prefetch precedents and escalation hints from commit
// traces, items of kind commit_trace.
package decision
